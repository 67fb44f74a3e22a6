/* mod_kernel: @offload.kernel and @offload.device_func objects --
 * specialisation, compiling through the JIT, and launching (the arguments
 * themselves are mod_args.c's).
 *
 * A Kernel keeps its specialisations (variant, device, range rank, argument
 * types -> loaded program) in a small array, searched from the one used
 * last: the common loop that launches one kernel with the same kinds of
 * arguments finds it at the first compare, without building any key or
 * Python object. A variant is one parse of the function: a kernel with
 * compile-time parameters (mod_constexpr.c) has one per tuple of their
 * values and lengths of the tuples of arrays it is given, any other kernel
 * just one.
 *
 * A launch with bounds checks (@offload.kernel(boundscheck=True), or a
 * LoopContext's) uses a specialisation compiled with JIT_BOUNDSCHECK, gives it
 * a zeroed bounds record, waits for it and reads the record: the first index
 * out of range becomes an IndexError worded as NumPy's, with the place; a
 * zero range() step or a negative integer power known only at run time
 * (recorded there too, the first error winning) becomes the ValueError that
 * Python / NumPy raise, with the place.
 *
 * Threads: any number of Python threads may launch one kernel. Specialisations
 * are heap objects that never move (the array holds pointers), so a thread
 * keeps its spec while another adds one. A missing one is built once: the
 * first thread to need it publishes it as SPEC_BUILDING and builds it with the
 * GIL released (the JIT and the driver take up to a second); others wanting
 * the same key wait on the kernel's condition variable, also without the GIL,
 * and then use it. A build that fails leaves the spec SPEC_FAILED, and the
 * next thread to want it builds it again (and raises its own error). The JIT
 * types a parsed function in place (jit_infer), so compiles of one kernel are
 * serialised by jit_lock; compiles of different kernels run in parallel.
 * Lock order: the GIL is never taken while holding lock or jit_lock. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mod_launch.h"

#include <math.h>

static PyObject *CompileError; /* Exception: filename, lineno, colno */

typedef enum { SPEC_BUILDING, SPEC_READY, SPEC_FAILED } spec_state;

#define SPLIT_MOST 64 /* arguments a kernel with compile-time parameters or tuples takes */

/* One parse of the kernel's function, for one tuple of its compile-time
 * arguments. Variants are heap objects that never move and live as long as
 * their kernel. */
typedef struct {
    PyObject *values; /* owned: the compile-time arguments; NULL when the kernel has none */
    unsigned char lens[SPLIT_MOST]; /* mod_constexpr_split's: the tuples of arrays */
    jit_func *jf;                   /* owned; NULL until the first compile parses it */
} variant;

typedef struct {
    spec_state state; /* written with the GIL and the kernel's lock held */
    variant *var;
    ofl_device *dev;
    int range_ndim, nargs;
    bool nd;           /* compiled for an NdRange launch */
    bool bounds;       /* compiled with JIT_BOUNDSCHECK */
    ofl_program *prog; /* owned */
    /* prog is read and launched only with the GIL held throughout, and
     * replaced only with it held, so a launch never sees it released */
    jit_blob code; /* kept to rebuild after a CUDA context reset */
    char entry[160];
    char signature[512];
    char *bounds_sites; /* bounds: jit_artifact.bounds_sites (owned) */
    double compile_ms;  /* the JIT's (stats) */
    double build_ms;    /* the driver's build of the code (again after a context reset) */
    bool disk_hit;
    unsigned long long launches, memory_hits;
    /* device time of timed launches of programs released after a context
     * reset (the runtime keeps the current program's) */
    uint64_t old_device_ns, old_timed;
    jit_type types[]; /* [nargs] */
} spec;

typedef struct mod_kernel {
    PyObject_HEAD
    PyObject *pyfunc;
    mod_constexpr consts;        /* its compile-time parameters */
    variant **variants;          /* owned, each owned; only appended to (with the GIL); a kernel
                                    without compile-time parameters has the one, made with it */
    int nvariants, last_variant; /* the one found last: library kernels run in streaks */
    int boundscheck;             /* 1: every launch checks indices; 0: none does; -1: as the device
                                    says (default_boundscheck) */
    bool runs_to_end;            /* no cancel checks (mod_kernel_runs_to_end) */
    int max_threads, min_blocks; /* launch_bounds=: CUDA's __launch_bounds__; 0: not given */
    spec **specs;                /* owned, each owned; only appended to (with the GIL) */
    int nspecs, last;
    pthread_mutex_t lock; /* with built: waits for a spec another thread builds */
    pthread_cond_t built;
    pthread_mutex_t jit_lock; /* held around every use of jf by the JIT */
    long compiles, memory_hits, disk_hits;
    PyObject *weakreflist;
    struct mod_kernel *prev, *next; /* the registry of live kernels (kernel_table) */
} mod_kernel;

typedef struct {
    PyObject_HEAD
    PyObject *pyfunc;
} mod_devfunc;

static PyTypeObject KernelType, DevFuncType, LaunchType;

/* ---- errors ---- */

static void raise_jit(const jit_error *err) {
    if (!err->compile_error) {
        PyErr_SetString(mod_DeviceError, err->msg);
        return;
    }
    PyObject *e = PyObject_CallFunction(CompileError, "s", err->msg);
    if (!e) return;
    PyObject *fn = PyUnicode_FromString(err->filename), *ln = PyLong_FromLong(err->line),
             *cn = PyLong_FromLong(err->col);
    if (fn && ln && cn) {
        PyObject_SetAttrString(e, "filename", fn);
        PyObject_SetAttrString(e, "lineno", ln);
        PyObject_SetAttrString(e, "colno", cn);
    }
    Py_XDECREF(fn);
    Py_XDECREF(ln);
    Py_XDECREF(cn);
    PyErr_SetObject(CompileError, e);
    Py_DECREF(e);
}

/* ---- compiling ---- */

static int target_of(ofl_device *dev, jit_target *t, char *ident, size_t len) {
    const ofl_device_info *info = ofl_device_get_info(dev);
    ofl_binary_kind kind = ofl_device_binary_kind(dev);
    t->form = kind == OFL_BIN_SPIRV ? JIT_SPIRV : kind == OFL_BIN_SPIR12 ? JIT_SPIR12 : JIT_PTX;
    t->sm = info->cuda_cc_major * 10 + info->cuda_cc_minor;
    t->fp64 = info->has_fp64;
    t->atomic64 = info->has_atomic64;
    t->local_mem = info->local_mem_size;
    snprintf(ident, len, "%s|%s|%s", info->name, info->driver_version, info->version);
    t->device = ident;
    if (kind == OFL_BIN_NONE) {
        PyErr_Format(mod_DeviceError,
                     "%s (%s) takes neither SPIR-V nor SPIR 1.2 nor PTX, so offload "
                     "cannot compile kernels for it",
                     info->filter, info->name);
        return -1;
    }
    return 0;
}

/* ---- variants ---- */

static variant *variant_add(mod_kernel *k, PyObject *values, const unsigned char *lens) {
    variant **more = realloc(k->variants, sizeof *more * (size_t)(k->nvariants + 1));
    if (!more) return (variant *)PyErr_NoMemory();
    k->variants = more;
    variant *v = calloc(1, sizeof *v);
    if (!v) return (variant *)PyErr_NoMemory();
    v->values = Py_XNewRef(values);
    if (lens) memcpy(v->lens, lens, (size_t)k->consts.nparams);
    return k->variants[k->nvariants++] = v;
}

/* The variant for these compile-time arguments (a kernel's nvalues of
 * them, borrowed) and tuples of arrays, made when new; searched from the
 * one found last. */
static variant *variant_for(mod_kernel *k, PyObject *const *values, Py_ssize_t nvalues,
                            const unsigned char *lens) {
    for (int probe = 0; probe < k->nvariants; probe++) {
        int i = (k->last_variant + probe) % k->nvariants;
        variant *v = k->variants[i];
        Py_ssize_t j = 0;
        while (j < nvalues && mod_constexpr_same(PyTuple_GET_ITEM(v->values, j), values[j])) j++;
        if (j == nvalues && !memcmp(v->lens, lens, (size_t)k->consts.nparams)) {
            k->last_variant = i;
            return v;
        }
    }
    PyObject *t = nvalues ? PyTuple_New(nvalues) : NULL;
    for (Py_ssize_t j = 0; t && j < nvalues; j++) PyTuple_SET_ITEM(t, j, Py_NewRef(values[j]));
    variant *v = t || !nvalues ? variant_add(k, t, lens) : NULL;
    Py_XDECREF(t);
    return v;
}

/* A launch's arguments after the item: the compile-time ones and the
 * lengths of tuples of arrays pick the variant; the others, tuples spread,
 * stay in *args (rest: the caller's room for them). The one variant of a
 * kernel given neither: found without a look at anything but the tuples. */
static variant *split_args(mod_kernel *k, PyObject *const **args, Py_ssize_t *nargs,
                           PyObject *rest[MOD_SPREAD_MOST]) {
    bool tuples = false;
    for (Py_ssize_t i = 0; i < *nargs && !tuples; i++) tuples = PyTuple_Check((*args)[i]);
    if (!k->consts.names && !tuples) return k->variants[0];
    if (*nargs > SPLIT_MOST)
        return (variant *)PyErr_Format(PyExc_TypeError,
                                       "a kernel with compile-time parameters or tuples of "
                                       "arrays takes at most %d arguments",
                                       SPLIT_MOST);
    Py_ssize_t nvalues = k->consts.names ? PyTuple_GET_SIZE(k->consts.names) : 0, nrest;
    PyObject *values[SPLIT_MOST];
    unsigned char lens[SPLIT_MOST];
    if (mod_constexpr_split(&k->consts, k->pyfunc, *args, *nargs, rest, &nrest, values, lens) < 0)
        return NULL;
    *args = rest;
    *nargs = nrest;
    return variant_for(k, values, nvalues, lens);
}

/* Parsing runs Python (inspect, ast), which may switch threads: two threads
 * may both parse, and the first to finish keeps its tree. */
static int ensure_parsed(mod_kernel *k, variant *v) {
    if (v->jf) return 0;
    jit_error err;
    bool tuples = false;
    for (int i = 0; i < k->consts.nparams && i < SPLIT_MOST; i++) tuples |= v->lens[i] != 0;
    PyObject *consts = v->values ? mod_constexpr_dict(&k->consts, v->values) : NULL;
    PyObject *arrays = tuples ? mod_constexpr_arrays(&k->consts, v->lens) : NULL;
    if ((v->values && !consts) || (tuples && !arrays)) {
        Py_XDECREF(consts);
        return -1;
    }
    jit_func *jf = jit_func_parse(k->pyfunc, true, consts, arrays, &err);
    Py_XDECREF(consts);
    Py_XDECREF(arrays);
    if (!jf) {
        raise_jit(&err);
        return -1;
    }
    if (v->jf)
        jit_func_free(jf);
    else
        v->jf = jf;
    return 0;
}

/* jit_compile of a variant of k's function, with the GIL released and
 * jit_lock held (the JIT touches no Python object after parsing). */
static int compile_unlocked(mod_kernel *k, variant *v, const jit_type *types, int nargs,
                            int range_ndim, const jit_target *t, unsigned flags, jit_artifact *art,
                            jit_error *err) {
    if (jit_lib_load_for(types, nargs, err) < 0) return -1; /* complex arguments */
    int rc;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&k->jit_lock);
    rc = jit_compile(v->jf, types, nargs, range_ndim, t, flags, art, err);
    pthread_mutex_unlock(&k->jit_lock);
    Py_END_ALLOW_THREADS
    return rc;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Loads s->code on its device into *prog, with the GIL released. */
static int build_program(spec *s, ofl_program **prog) {
    ofl_error err;
    ofl_binary_kind kind = ofl_device_binary_kind(s->dev);
    int rc;
    double t0 = now_ms();
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_program_build(s->dev, kind, s->code.data, s->code.size, s->entry, prog, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        mod_raise(&err);
        return -1;
    }
    s->build_ms += now_ms() - t0;
    return 0;
}

/* Kernels take the cancel flag (JIT_CANCEL) unless OFFLOAD_CANCEL=0, which
 * exists to measure what the checks cost (bench/bench_safety.py): without
 * them an interrupt still returns control, but the kernel runs on. */
static bool cancel_checks(const mod_kernel *k) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("OFFLOAD_CANCEL");
        on = !(e && !strcmp(e, "0"));
    }
    return on && !k->runs_to_end;
}

/* Publishes a spec's new state to the threads waiting for it (a claim, to
 * SPEC_BUILDING, wakes nobody who minds). GIL held. */
static void spec_settle(mod_kernel *k, spec *s, spec_state state) {
    pthread_mutex_lock(&k->lock);
    s->state = state;
    pthread_cond_broadcast(&k->built);
    pthread_mutex_unlock(&k->lock);
}

/* Waits, with the GIL released, until another thread's build of s is over. */
static void spec_wait(mod_kernel *k, spec *s) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&k->lock);
    while (s->state == SPEC_BUILDING) pthread_cond_wait(&k->built, &k->lock);
    pthread_mutex_unlock(&k->lock);
    Py_END_ALLOW_THREADS
}

static bool spec_matches(const spec *s, variant *var, ofl_device *dev, int range_ndim, bool nd,
                         bool bounds, const jit_type *types, int nargs) {
    return s->var == var && s->dev == dev && s->range_ndim == range_ndim && s->nd == nd &&
           s->bounds == bounds && s->nargs == nargs &&
           !memcmp(s->types, types, sizeof *types * (size_t)nargs);
}

/* The spec for this key in any state, searched from the one used last; NULL
 * when there is none. */
static spec *spec_find(mod_kernel *k, variant *var, ofl_device *dev, int range_ndim, bool nd,
                       bool bounds, const jit_type *types, int nargs) {
    for (int probe = 0; probe < k->nspecs; probe++) {
        int i = (k->last + probe) % k->nspecs;
        if (spec_matches(k->specs[i], var, dev, range_ndim, nd, bounds, types, nargs)) {
            k->last = i;
            return k->specs[i];
        }
    }
    return NULL;
}

/* A new spec for this key, published as SPEC_BUILDING: from here on other
 * threads wait for its build. */
static spec *spec_add(mod_kernel *k, variant *var, ofl_device *dev, int range_ndim, bool nd,
                      bool bounds, const jit_type *types, int nargs) {
    spec **more = realloc(k->specs, sizeof *more * (size_t)(k->nspecs + 1));
    if (!more) return (spec *)PyErr_NoMemory();
    k->specs = more;
    spec *s = calloc(1, sizeof *s + sizeof *types * (size_t)nargs);
    if (!s) return (spec *)PyErr_NoMemory();
    s->state = SPEC_BUILDING;
    s->var = var;
    s->dev = dev;
    s->range_ndim = range_ndim;
    s->nd = nd;
    s->bounds = bounds;
    s->nargs = nargs;
    memcpy(s->types, types, sizeof *types * (size_t)nargs);
    k->last = k->nspecs;
    k->specs[k->nspecs++] = s;
    return s;
}

/* Compiles and loads s (SPEC_BUILDING, this thread's) for a's arguments,
 * then settles it: SPEC_READY, or SPEC_FAILED with an exception. */
static int spec_build(mod_kernel *k, spec *s, const mod_args *a) {
    jit_target t;
    char ident[700];
    jit_artifact art;
    jit_error err;
    /* every launched kernel can be cancelled (an interrupt during a wait) */
    unsigned flags = (s->nd ? JIT_NDRANGE : 0) | (s->bounds ? JIT_BOUNDSCHECK : 0) |
                     (cancel_checks(k) ? JIT_CANCEL : 0);
    ofl_program *prog = NULL;
    if (ensure_parsed(k, s->var) < 0) goto fail;
    if (mod_args_check_count(a, s->var->jf) < 0) goto fail;
    if (target_of(s->dev, &t, ident, sizeof ident) < 0) goto fail;
    t.max_threads = k->max_threads;
    t.min_blocks = k->min_blocks;
    if (compile_unlocked(k, s->var, s->types, s->nargs, s->range_ndim, &t, flags, &art, &err) < 0) {
        raise_jit(&err);
        goto fail;
    }
    s->code = art.code;
    art.code.data = NULL;
    snprintf(s->entry, sizeof s->entry, "%s", art.entry);
    s->disk_hit = art.disk_hit;
    s->bounds_sites = art.bounds_sites;
    art.bounds_sites = NULL;
    s->compile_ms = art.ms;
    jit_artifact_free(&art);
    jit_signature_str(s->types, s->nargs, s->range_ndim, s->nd, s->signature, sizeof s->signature);
    if (s->bounds) {
        size_t len = strlen(s->signature);
        snprintf(s->signature + len, sizeof s->signature - len, " with boundscheck");
    }
    if (s->var->values) { /* " [N=4, DT=float32]" */
        char consts[256];
        mod_constexpr_describe(&k->consts, s->var->values, consts, sizeof consts);
        size_t len = strlen(s->signature);
        snprintf(s->signature + len, sizeof s->signature - len, " [%s]", consts);
    }
    s->build_ms = 0;
    if (build_program(s, &prog) < 0) goto fail;
    s->prog = prog;
    if (s->disk_hit)
        k->disk_hits++;
    else
        k->compiles++;
    spec_settle(k, s, SPEC_READY);
    /* it runs right, but slower than it might: said once, at its build */
    if (ofl_program_vectorizer_off(prog))
        return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                "kernel '%s' (%s): the compiler of %s crashed vectorizing it, so "
                                "it was built with the vectorizer off; it runs, scalar",
                                jit_func_name(s->var->jf), s->signature,
                                ofl_device_get_info(s->dev)->filter);
    return 0;
fail:
    jit_blob_free(&s->code);
    free(s->bounds_sites);
    s->bounds_sites = NULL;
    spec_settle(k, s, SPEC_FAILED);
    return -1;
}

/* s's program died with its CUDA context (a fault), or its reload failed:
 * loads its code again. s is this thread's (SPEC_BUILDING) meanwhile. */
static int spec_reload(mod_kernel *k, spec *s) {
    if (s->prog) {
        uint64_t ns, n; /* the runtime forgets the program's device time with it */
        ofl_program_device_time(s->prog, &ns, &n);
        s->old_device_ns += ns, s->old_timed += n;
        ofl_program_release(s->prog);
        s->prog = NULL;
    }
    ofl_program *prog = NULL;
    if (build_program(s, &prog) < 0) {
        spec_settle(k, s, SPEC_FAILED); /* the code is kept: the next launch tries again */
        return -1;
    }
    s->prog = prog;
    spec_settle(k, s, SPEC_READY);
    return 0;
}

/* The loaded program for a's arguments on a's device: found, waited for, or
 * built here. */
static spec *specialise(mod_kernel *k, variant *var, const mod_args *a, int range_ndim, bool nd,
                        bool bounds) {
    for (;;) {
        spec *s = spec_find(k, var, a->dev, range_ndim, nd, bounds, a->types, (int)a->n);
        if (!s) {
            if (!(s = spec_add(k, var, a->dev, range_ndim, nd, bounds, a->types, (int)a->n)))
                return NULL;
            return spec_build(k, s, a) < 0 ? NULL : s;
        }
        switch (s->state) {
        case SPEC_BUILDING:
            spec_wait(k, s);
            continue;     /* look again: the GIL was released, anything may have changed */
        case SPEC_FAILED: /* ours to build again; a failed reload kept its code */
            spec_settle(k, s, SPEC_BUILDING);
            if (s->code.data) return spec_reload(k, s) < 0 ? NULL : s;
            return spec_build(k, s, a) < 0 ? NULL : s;
        case SPEC_READY:
            k->memory_hits++;
            s->memory_hits++;
            if (ofl_program_is_stale(s->prog)) { /* its CUDA context was reset after a fault */
                spec_settle(k, s, SPEC_BUILDING);
                return spec_reload(k, s) < 0 ? NULL : s;
            }
            return s;
        }
    }
}

/* ---- launching ---- */

/* An NdRange's work-group against what the device and this kernel allow,
 * said in the user's dimensions (the runtime would say the hardware's). */
static int check_group(const spec *s, const mod_shape *r, const char *kernel) {
    const ofl_device_info *in = ofl_device_get_info(s->dev);
    size_t most = ofl_program_max_work_group_size(s->prog), items = 1;
    for (int d = 0; d < r->ndim; d++) {
        size_t limit = in->max_work_item_sizes[r->ndim - 1 - d];
        if (limit && (size_t)r->local[d] > limit) {
            PyErr_Format(PyExc_ValueError,
                         "the local size %zd in dimension %d is more than %s (%s) allows "
                         "there: at most %zu",
                         r->local[d], d, in->filter, in->name, limit);
            return -1;
        }
        items *= (size_t)r->local[d];
    }
    if (most && items > most) {
        PyObject *shape = mod_shape_repr(r);
        PyErr_Format(PyExc_ValueError,
                     "%S has work-groups of %zu work-items, and kernel '%s' on %s (%s) "
                     "takes at most %zu per work-group",
                     shape, items, kernel, in->filter, in->name, most);
        Py_XDECREF(shape);
        return -1;
    }
    return 0;
}

/* Records read back clean are still all zeros, so they are kept for the
 * next checked launch on their device: a new one costs an allocation and a
 * blocking write, 60-70 us of the 90 us that a checked launch and wait of a
 * small kernel took on Intel's CPU runtime. Only on devices in this process,
 * whose buffers never go stale (a GPU's context can be reset). The GIL
 * guards the list. */
#define KEPT_RECORDS 8
static ofl_buffer *kept_records[KEPT_RECORDS];

/* The bounds record of a checked launch: JIT_BOUNDS_WORDS zeros on dev. */
static ofl_buffer *bounds_record_take(ofl_device *dev) {
    for (int i = 0; i < KEPT_RECORDS; i++)
        if (kept_records[i] && ofl_buffer_device(kept_records[i]) == dev) {
            ofl_buffer *buf = kept_records[i];
            kept_records[i] = NULL;
            return buf;
        }
    static const int64_t zero[JIT_BOUNDS_WORDS];
    ofl_buffer *buf = NULL;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_alloc(dev, sizeof zero, &buf, &err);
    if (rc == 0 && (rc = ofl_write(buf, 0, zero, sizeof zero, &err)) != 0) ofl_free(buf);
    Py_END_ALLOW_THREADS
    if (rc != 0) return mod_raise(&err), NULL;
    return buf;
}

/* Gives back a record taken; clean: it was read back all zeros. */
static void bounds_record_give(ofl_buffer *buf, bool clean) {
    ofl_device *dev = ofl_buffer_device(buf);
    for (int i = 0; clean && ofl_device_in_process(dev) && i < KEPT_RECORDS; i++)
        if (!kept_records[i]) {
            kept_records[i] = buf;
            return;
        }
    Py_BEGIN_ALLOW_THREADS
    ofl_free(buf); /* it may wait for the queue */
    Py_END_ALLOW_THREADS
}

/* Waits for the checked launch and reads its record: 1 with *words filled in
 * when the kernel recorded an error, 0 when it did not, -1 with an exception. */
static int bounds_record_read(ofl_buffer *buf, int64_t words[JIT_BOUNDS_WORDS]) {
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_read(buf, 0, words, sizeof(int64_t) * JIT_BOUNDS_WORDS, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0) return mod_raise(&err), -1;
    return words[JIT_BOUNDS_FLAG] != 0;
}

/* The record as NumPy words it, and where: "index 10 is out of bounds for
 * axis 0 with size 10 (array 'a' at <cell 3>:4:9)"; a zero step or a negative
 * power is Python's / NumPy's ValueError: "range() arg 3 must not be zero (at
 * <cell 3>:5:26)". */
static void bounds_raise(const spec *s, const int64_t w[JIT_BOUNDS_WORDS]) {
    const char *site = s->bounds_sites ? s->bounds_sites : "";
    for (int64_t i = 0; i < w[JIT_BOUNDS_SITE] && *site; i++) site = strchr(site, '\n') + 1;
    char where[1200], index[32];
    snprintf(where, sizeof where, "%.*s", (int)strcspn(site, "\n"),
             site); /* PyErr_Format has no %.*s */
    switch (w[JIT_BOUNDS_KIND]) {
    case JIT_FAULT_ZERO_STEP:
        PyErr_Format(PyExc_ValueError, "range() arg 3 must not be zero (%s)",
                     where[0] ? where : "?");
        return;
    case JIT_FAULT_NEG_POWER:
        PyErr_Format(PyExc_ValueError, "Integers to negative integer powers are not allowed (%s)",
                     where[0] ? where : "?");
        return;
    default: break;
    }
    if (w[JIT_BOUNDS_UNSIGNED])
        snprintf(index, sizeof index, "%llu", (unsigned long long)w[JIT_BOUNDS_INDEX]);
    else
        snprintf(index, sizeof index, "%lld", (long long)w[JIT_BOUNDS_INDEX]);
    PyErr_Format(PyExc_IndexError, "index %s is out of bounds for axis %lld with size %lld (%s)",
                 index, (long long)w[JIT_BOUNDS_AXIS], (long long)w[JIT_BOUNDS_SIZE],
                 where[0] ? where : "?");
}

/* Whether kernels that do not say check indices on dev: OFFLOAD_BOUNDSCHECK
 * (0/1) checks every kernel's indices where the kernel does not say, or none;
 * unset, kernels check on devices in this process (a wild index there is a
 * segfault of the Jupyter kernel, not a device fault). */
static bool default_boundscheck(ofl_device *dev) {
    static int env = -2; /* read once: -1 unset, 0, 1 */
    if (env == -2) {
        const char *e = getenv("OFFLOAD_BOUNDSCHECK");
        env = !e || !*e ? -1 : (strcmp(e, "0") && strcmp(e, "no") && strcmp(e, "false")) ? 1 : 0;
    }
    return env >= 0 ? env == 1 : ofl_device_in_process(dev);
}

/* Launches k over range with args; NumPy arrays go to the device and back.
 * want_event: an Event of the launch instead of None. bounds (or the
 * kernel's own boundscheck): with index checks, which wait for the launch. */
static PyObject *launch(mod_kernel *k, const mod_shape *range, PyObject *const *args,
                        Py_ssize_t nargs, bool want_event, bool bounds) {
    PyObject *rest[MOD_SPREAD_MOST];
    variant *var = split_args(k, &args, &nargs, rest);
    mod_args a;
    if (!var || mod_args_init(&a, args, nargs) < 0) return NULL;
    PyObject *result = NULL;
    ofl_buffer *record = NULL;
    ofl_event *ev = NULL;
    int failed = -1; /* the record's state: unread */
    if (mod_args_place(&a) < 0) goto out;
    bounds = bounds || k->boundscheck > 0 || (k->boundscheck < 0 && default_boundscheck(a.dev));
    if (mod_args_upload(&a) < 0) goto out;
    /* before specialise: from there to ofl_launch the GIL stays held, so no
     * other thread can reload s->prog under this launch (mod_kernel threads) */
    if (bounds && !(record = bounds_record_take(a.dev))) goto out;
    spec *s = specialise(k, var, &a, range->ndim, range->nd, bounds);
    if (!s || mod_args_pack(&a, range, record, cancel_checks(k)) < 0) goto out;
    size_t global[3], local[3];
    for (int d = 0; d < range->ndim; d++) {
        /* the last dimension is the fastest; an empty Range still launches one guarded work item
         * (an empty NdRange, with no guard, launches nothing) */
        global[range->ndim - 1 - d] = range->size[d] || range->nd ? (size_t)range->size[d] : 1;
        local[range->ndim - 1 - d] = (size_t)range->local[d];
    }
    if (range->nd && check_group(s, range, jit_func_name(var->jf)) < 0) goto out;
    ofl_error err;
    if (ofl_launch(s->prog, (unsigned)range->ndim, global, range->nd ? local : NULL, a.packed,
                   a.npacked, want_event ? &ev : NULL, &err) != 0) {
        mod_raise(&err);
        goto out;
    }
    s->launches++;
    int64_t words[JIT_BOUNDS_WORDS];
    /* a kernel whose every check was proved away (jit_func_assume_in_range)
     * never writes its record: no wait for it */
    bool unchecked = record && s->bounds_sites && !s->bounds_sites[0];
    failed = record && !unchecked ? bounds_record_read(record, words) : 0;
    if (failed < 0 || mod_args_download(&a, jit_func_name(var->jf)) < 0) goto out;
    if (failed) { /* after the copies back: what ran before the bad index is kept, as in Python */
        bounds_raise(s, words);
        goto out;
    }
    result = want_event ? mod_event_new(ev, s->entry + 4) : Py_NewRef(Py_None);
    ev = NULL; /* the Event's now */
out:
    if (ev) ofl_event_release(ev);
    if (record) bounds_record_give(record, failed == 0);
    mod_args_clear(&a);
    return result;
}

/* ---- Kernel ---- */

/* k[Range] -- a Kernel and a Range waiting for arguments; called through
 * vectorcall so a launch builds no argument tuple. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vcall;
    mod_kernel *k; /* owned */
    mod_shape range;
} mod_launcher;

static PyObject *launcher_vcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) {
    mod_launcher *l = (mod_launcher *)self;
    if (kwnames && PyTuple_GET_SIZE(kwnames))
        return PyErr_Format(PyExc_TypeError, "kernel arguments are positional");
    return launch(l->k, &l->range, args, PyVectorcall_NARGS(nargsf), false, false);
}

static int launcher_traverse(mod_launcher *l, visitproc visit, void *arg) {
    Py_VISIT(l->k);
    return 0;
}

static void launcher_dealloc(mod_launcher *l) {
    PyObject_GC_UnTrack(l);
    Py_XDECREF(l->k);
    Py_TYPE(l)->tp_free((PyObject *)l);
}

static PyObject *launcher_repr(mod_launcher *l) {
    PyObject *r = mod_shape_repr(&l->range);
    PyObject *s = r ? PyUnicode_FromFormat("<launch of %R over %U>", l->k->pyfunc, r) : NULL;
    Py_XDECREF(r);
    return s;
}

static PyTypeObject LaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.KernelLaunch",
    .tp_basicsize = sizeof(mod_launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)launcher_traverse,
    .tp_doc = "kernel[Range(...)]: call it with the kernel's arguments to launch.",
    .tp_dealloc = (destructor)launcher_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(mod_launcher, vcall),
    .tp_repr = (reprfunc)launcher_repr,
};

static PyObject *kernel_getitem(mod_kernel *k, PyObject *key) {
    mod_launcher *l = (mod_launcher *)LaunchType.tp_alloc(&LaunchType, 0);
    if (!l) return NULL;
    l->vcall = launcher_vcall;
    l->k = (mod_kernel *)Py_NewRef(k);
    if (mod_shape_of(key, &l->range) < 0) {
        Py_DECREF(l);
        return NULL;
    }
    return (PyObject *)l;
}

/* Every live Kernel, oldest first, for offload.kernel_table(). Borrowed: a
 * kernel leaves when it is freed, and its rows with it -- its programs (and
 * their device memory) are gone then, and a cell run again would otherwise
 * list each kernel it defines once per run. Guarded by the GIL. */
static mod_kernel *registry_first, *registry_last;

static PyObject *kernel_new_for(PyObject *pyfunc) {
    if (!PyFunction_Check(pyfunc))
        return PyErr_Format(PyExc_TypeError, "offload.kernel decorates a Python function, not %s",
                            Py_TYPE(pyfunc)->tp_name);
    mod_kernel *k = (mod_kernel *)KernelType.tp_alloc(&KernelType, 0);
    if (!k) return NULL;
    k->pyfunc = Py_NewRef(pyfunc);
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->built, NULL);
    pthread_mutex_init(&k->jit_lock, NULL);
    k->prev = registry_last;
    if (registry_last)
        registry_last->next = k;
    else
        registry_first = k;
    registry_last = k;
    if (mod_constexpr_of(pyfunc, &k->consts) < 0 ||
        (!k->consts.names && !variant_add(k, NULL, NULL))) {
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

/* A kernel defined at module level is in a cycle: kernel -> function ->
 * __globals__ -> kernel. The collector must see the first edge to free it;
 * it breaks the cycle by clearing the dict, so pyfunc is never NULL here
 * (no tp_clear: these objects are immutable, like tuples). */
static int kernel_traverse(mod_kernel *k, visitproc visit, void *arg) {
    Py_VISIT(k->pyfunc);
    return 0;
}

static void kernel_dealloc(mod_kernel *k) {
    PyObject_GC_UnTrack(k);
    if (k->weakreflist) PyObject_ClearWeakRefs((PyObject *)k);
    if (k->prev)
        k->prev->next = k->next;
    else
        registry_first = k->next;
    if (k->next)
        k->next->prev = k->prev;
    else
        registry_last = k->prev;
    /* no build is under way: a building thread holds a reference to k */
    for (int i = 0; i < k->nspecs; i++) {
        ofl_program_release(k->specs[i]->prog);
        jit_blob_free(&k->specs[i]->code);
        free(k->specs[i]->bounds_sites);
        free(k->specs[i]);
    }
    free(k->specs);
    for (int i = 0; i < k->nvariants; i++) {
        Py_XDECREF(k->variants[i]->values);
        jit_func_free(k->variants[i]->jf);
        free(k->variants[i]);
    }
    free(k->variants);
    mod_constexpr_clear(&k->consts);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->built);
    pthread_mutex_destroy(&k->jit_lock);
    Py_XDECREF(k->pyfunc);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyObject *kernel_call(mod_kernel *k, PyObject *args, PyObject *kw) {
    PyObject *name = PyObject_GetAttrString(k->pyfunc, "__name__");
    PyErr_Format(PyExc_TypeError,
                 "a kernel is launched over a Range: %S[offload.Range(n)](...) or "
                 "offload.call_kernel(%S, offload.Range(n), ...)",
                 name, name);
    Py_XDECREF(name);
    return NULL;
}

/* The specs that are loaded (others are being built, or failed). GIL held. */
static int ready_count(const mod_kernel *k) {
    int n = 0;
    for (int i = 0; i < k->nspecs; i++) n += k->specs[i]->state == SPEC_READY;
    return n;
}

static PyObject *kernel_repr(mod_kernel *k) {
    int n = ready_count(k);
    return PyUnicode_FromFormat("<offload.kernel %R, %d specialisation%s>", k->pyfunc, n,
                                n == 1 ? "" : "s");
}

/* inspect_llvm / inspect_spirv / inspect_ptx (*args, range=None, sm=None,
 * boundscheck=None: the kernel's own setting) */
static PyObject *inspect(mod_kernel *k, PyObject *args, PyObject *kw, int what) {
    PyObject *const *given = &PyTuple_GET_ITEM(args, 0), *rest[MOD_SPREAD_MOST];
    Py_ssize_t ngiven = PyTuple_GET_SIZE(args);
    variant *var = split_args(k, &given, &ngiven, rest);
    if (!var || ensure_parsed(k, var) < 0) return NULL;
    PyObject *range_o = kw ? PyDict_GetItemString(kw, "range") : NULL;
    PyObject *sm_o = kw ? PyDict_GetItemString(kw, "sm") : NULL;
    PyObject *bounds_o = kw ? PyDict_GetItemString(kw, "boundscheck") : NULL;
    int bounds = bounds_o && bounds_o != Py_None ? PyObject_IsTrue(bounds_o) : k->boundscheck > 0;
    if (bounds < 0) return NULL;
    mod_shape r = {.ndim = 1, .size = {1}};
    if (range_o && range_o != Py_None && mod_shape_of(range_o, &r) < 0) return NULL;
    mod_args a;
    if (mod_args_init(&a, given, ngiven) < 0) return NULL;
    PyObject *res = NULL;
    jit_target t = {.fp64 = true,
                    .atomic64 = true,
                    .device = "",
                    .max_threads = k->max_threads,
                    .min_blocks = k->min_blocks};
    char ident[700];
    if (mod_args_check_count(&a, var->jf) < 0) goto out;
    if (what == JIT_PTX) {
        t.form = JIT_PTX;
        t.sm = sm_o && sm_o != Py_None ? (int)PyLong_AsLong(sm_o) : 80;
        if (PyErr_Occurred()) goto out;
    } else if (what == JIT_SPIRV) {
        t.form = JIT_SPIRV;
    } else if (mod_args_place(&a) < 0 || target_of(a.dev, &t, ident, sizeof ident) < 0) {
        goto out;
    }
    jit_artifact art;
    jit_error err;
    unsigned flags = JIT_NO_DISK |
                     (what == 0           ? JIT_WANT_LLVM
                      : what == JIT_SPIRV ? JIT_WANT_SPIRV
                                          : 0) |
                     (r.nd ? JIT_NDRANGE : 0) | (bounds ? JIT_BOUNDSCHECK : 0);
    if (compile_unlocked(k, var, a.types, (int)a.n, r.ndim, &t, flags, &art, &err) < 0) {
        raise_jit(&err);
        goto out;
    }
    const char *text = what == 0           ? art.llvm_text
                       : what == JIT_SPIRV ? art.spirv_text
                                           : (const char *)art.code.data;
    res = text ? PyUnicode_FromString(text) : PyErr_Format(mod_DeviceError, "no text was produced");
    jit_artifact_free(&art);
out:
    mod_args_clear(&a);
    return res;
}

static PyObject *inspect_llvm(mod_kernel *k, PyObject *a, PyObject *kw) {
    return inspect(k, a, kw, 0);
}
static PyObject *inspect_spirv(mod_kernel *k, PyObject *a, PyObject *kw) {
    return inspect(k, a, kw, JIT_SPIRV);
}
static PyObject *inspect_ptx(mod_kernel *k, PyObject *a, PyObject *kw) {
    return inspect(k, a, kw, JIT_PTX);
}

static PyObject *kernel_signatures(mod_kernel *k, void *c) {
    PyObject *l = PyList_New(ready_count(k));
    for (int i = 0, j = 0; l && i < k->nspecs; i++) {
        const spec *sp = k->specs[i];
        if (sp->state != SPEC_READY) continue;
        PyObject *s =
            PyUnicode_FromFormat("%s on %s", sp->signature, ofl_device_get_info(sp->dev)->filter);
        if (!s)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, j++, s);
    }
    return l;
}

void mod_kernel_get_stats(PyObject *kernel, mod_kernel_stats *out) {
    const mod_kernel *k = (const mod_kernel *)kernel;
    *out = (mod_kernel_stats){
        .compiles = k->compiles, .memory_hits = k->memory_hits, .disk_hits = k->disk_hits};
    for (int i = 0; i < k->nspecs; i++) {
        if (k->specs[i]->state != SPEC_READY) continue;
        out->launches += k->specs[i]->launches;
        out->compile_ms += k->specs[i]->compile_ms;
    }
}

static PyObject *kernel_stats(mod_kernel *k, void *c) {
    mod_kernel_stats st;
    mod_kernel_get_stats((PyObject *)k, &st);
    return Py_BuildValue("{s:l,s:l,s:l,s:K,s:d}", "compiles", st.compiles, "memory_hits",
                         st.memory_hits, "disk_hits", st.disk_hits, "launches", st.launches,
                         "compile_ms", st.compile_ms);
}

/* ---- offload.kernel_table() ---- */

/* "opencl:cpu:0 spirv", "opencl:cpu:0 spir1.2" (SPIR-V translated back for
 * PoCL), "cuda:gpu:0 ptx sm_90"; spec_row adds " vectorizer-off" where the
 * device's compiler crashed on the kernel and built it so. */
static void target_str(ofl_device *dev, char *out, size_t len) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    switch (ofl_device_binary_kind(dev)) {
    case OFL_BIN_SPIRV: snprintf(out, len, "%s spirv", in->filter); break;
    case OFL_BIN_SPIR12: snprintf(out, len, "%s spir1.2", in->filter); break;
    case OFL_BIN_PTX:
        snprintf(out, len, "%s ptx sm_%d%d", in->filter, in->cuda_cc_major, in->cuda_cc_minor);
        break;
    case OFL_BIN_NONE: snprintf(out, len, "%s", in->filter); break;
    }
}

static PyObject *spec_row(mod_kernel *k, const spec *s) {
    uint64_t ns, timed;
    ofl_program_device_time(s->prog, &ns, &timed);
    ns += s->old_device_ns, timed += s->old_timed;
    char target[160];
    target_str(s->dev, target, sizeof target);
    if (ofl_program_vectorizer_off(s->prog))
        snprintf(target + strlen(target), sizeof target - strlen(target), " vectorizer-off");
    PyObject *device_ms = timed ? PyFloat_FromDouble((double)ns * 1e-6) : Py_NewRef(Py_None);
    if (!device_ms) return NULL;
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:s,s:n,s:d,s:d,s:d,s:K,s:N,s:K,s:K,s:O}", "name", jit_func_name(s->var->jf),
        "signature", s->signature, "device", ofl_device_get_info(s->dev)->filter, "target", target,
        "code_size", (Py_ssize_t)s->code.size, "compile_ms", s->compile_ms + s->build_ms, "jit_ms",
        s->compile_ms, "build_ms", s->build_ms, "launches", s->launches, "device_ms", device_ms,
        "timed_launches", (unsigned long long)timed, "memory_hits", s->memory_hits, "disk_hit",
        s->disk_hit ? Py_True : Py_False);
}

static PyObject *kernel_table(PyObject *self, PyObject *unused) {
    ofl_error err;
    int rc;
    /* the device time of timed launches still queued goes to their programs */
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_timing_totals(NULL, NULL, &err);
    Py_END_ALLOW_THREADS
    if (rc) return mod_raise(&err);
    PyObject *rows = PyList_New(0);
    for (mod_kernel *k = registry_first; rows && k; k = k->next) {
        for (int i = 0; i < k->nspecs; i++) {
            if (k->specs[i]->state != SPEC_READY) continue;
            PyObject *row = spec_row(k, k->specs[i]);
            if (!row || PyList_Append(rows, row) < 0) Py_CLEAR(rows);
            Py_XDECREF(row);
            if (!rows) break;
        }
    }
    return rows;
}

static PyObject *kernel_py_func(mod_kernel *k, void *c) { return Py_NewRef(k->pyfunc); }
static PyObject *kernel_boundscheck(mod_kernel *k, void *c) {
    return PyBool_FromLong(k->boundscheck > 0);
}
static PyObject *kernel_name(mod_kernel *k, void *c) {
    return PyObject_GetAttrString(k->pyfunc, "__name__");
}
static PyObject *kernel_doc(mod_kernel *k, void *c) {
    return PyObject_GetAttrString(k->pyfunc, "__doc__");
}

static PyMethodDef kernel_methods[] = {
    {"inspect_llvm", MOD_KWFUNC(inspect_llvm),
     "inspect_llvm(*args, range=None, boundscheck=None)\n\nThe optimised LLVM IR for these "
     "arguments on their "
     "device (boundscheck: with index checks; None: as the kernel launches)."},
    {"inspect_spirv", MOD_KWFUNC(inspect_spirv),
     "inspect_spirv(*args, range=None, boundscheck=None)\n\nThe SPIR-V disassembly for these "
     "arguments."},
    {"inspect_ptx", MOD_KWFUNC(inspect_ptx),
     "inspect_ptx(*args, range=None, sm=80, boundscheck=None)\n\nThe PTX for these arguments (no "
     "GPU needed)."},
    {0},
};

static PyGetSetDef kernel_getset[] = {
    {"signatures", (getter)kernel_signatures, NULL, "the compiled specialisations", NULL},
    {"stats", (getter)kernel_stats, NULL, "compiles, memory_hits, disk_hits, launches, compile_ms",
     NULL},
    {"py_func", (getter)kernel_py_func, NULL, "the Python function", NULL},
    {"__wrapped__", (getter)kernel_py_func, NULL, "the Python function", NULL},
    {"boundscheck", (getter)kernel_boundscheck, NULL, "whether its launches check every index",
     NULL},
    {"__name__", (getter)kernel_name, NULL, NULL, NULL},
    {"__doc__", (getter)kernel_doc, NULL, NULL, NULL},
    {0},
};

static PyMappingMethods kernel_mapping = {.mp_subscript = (binaryfunc)kernel_getitem};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.Kernel",
    .tp_basicsize = sizeof(mod_kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_doc =
        "A device kernel made by @offload.kernel; launch with kernel[offload.Range(n)](*args).",
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_call = (ternaryfunc)kernel_call,
    .tp_repr = (reprfunc)kernel_repr,
    .tp_as_mapping = &kernel_mapping,
    .tp_methods = kernel_methods,
    .tp_getset = kernel_getset,
    .tp_weaklistoffset = offsetof(mod_kernel, weakreflist),
};

/* ---- DeviceFunc: callable from Python too (it is plain Python) ---- */

static PyObject *devfunc_pyfunc(PyObject *o) { return ((mod_devfunc *)o)->pyfunc; }

static PyObject *devfunc_call(mod_devfunc *d, PyObject *args, PyObject *kw) {
    return PyObject_Call(d->pyfunc, args, kw);
}
static int devfunc_traverse(mod_devfunc *d, visitproc visit, void *arg) {
    Py_VISIT(d->pyfunc);
    return 0;
}

static void devfunc_dealloc(mod_devfunc *d) {
    PyObject_GC_UnTrack(d);
    Py_XDECREF(d->pyfunc);
    Py_TYPE(d)->tp_free((PyObject *)d);
}
static PyObject *devfunc_repr(mod_devfunc *d) {
    return PyUnicode_FromFormat("<offload.device_func %R>", d->pyfunc);
}
static PyGetSetDef devfunc_getset[] = {
    {"py_func", (getter)kernel_py_func, NULL, "the Python function", NULL},
    {"__wrapped__", (getter)kernel_py_func, NULL, "the Python function", NULL},
    {"__name__", (getter)kernel_name, NULL, NULL, NULL},
    {0},
};

static PyTypeObject DevFuncType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.DeviceFunction",
    .tp_basicsize = sizeof(mod_devfunc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)devfunc_traverse,
    .tp_doc =
        "A function kernels can call (made by @offload.device_func); inlined where it is called.",
    .tp_dealloc = (destructor)devfunc_dealloc,
    .tp_call = (ternaryfunc)devfunc_call,
    .tp_repr = (reprfunc)devfunc_repr,
    .tp_getset = devfunc_getset,
};

/* ---- module functions ---- */

/* A kernel of pyfunc: bounds 1 when its launches check indices, 0 when they
 * never do, -1 as the device says; its launch bounds (0: none). */
static PyObject *kernel_made(PyObject *pyfunc, int bounds, int max_threads, int min_blocks) {
    PyObject *k = kernel_new_for(pyfunc);
    if (k) {
        ((mod_kernel *)k)->boundscheck = bounds;
        ((mod_kernel *)k)->max_threads = max_threads;
        ((mod_kernel *)k)->min_blocks = min_blocks;
    }
    return k;
}

/* self: (boundscheck as kernel_made's bounds, max_threads, min_blocks) */
static PyObject *kernel_with(PyObject *self, PyObject *pyfunc) {
    int v[3];
    for (int i = 0; i < 3; i++) v[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(self, i));
    return kernel_made(pyfunc, v[0], v[1], v[2]);
}

/* launch_bounds= as numba-cuda takes it: max_threads or (max_threads,
 * min_blocks); 0 on success. */
static int parse_launch_bounds(PyObject *o, int *max_threads, int *min_blocks) {
    PyObject *items = PyTuple_Check(o) ? Py_NewRef(o) : PyTuple_Pack(1, o);
    if (!items) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    long v[2] = {0, 0};
    int rc = n == 1 || n == 2 ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(items, i);
        if (!PyLong_Check(x) || PyBool_Check(x))
            rc = -1;
        else if ((v[i] = PyLong_AsLong(x)) == -1 && PyErr_Occurred())
            rc = -2;
    }
    Py_DECREF(items);
    if (rc == -1)
        PyErr_Format(PyExc_TypeError,
                     "launch_bounds= takes max_threads or (max_threads, min_blocks), not %R", o);
    else if (rc == 0 && (v[0] < 1 || v[0] > 1024 || (n == 2 && (v[1] < 1 || v[1] > 64))))
        PyErr_Format(PyExc_ValueError,
                     "launch_bounds=%R: max_threads must be 1..1024 and min_blocks 1..64", o);
    else if (rc == 0) {
        *max_threads = (int)v[0];
        *min_blocks = (int)v[1];
        return 0;
    }
    return -1;
}

static PyMethodDef kernel_with_def = {"kernel", kernel_with, METH_O,
                                      "Make a device kernel of the function."};

/* @offload.kernel, @offload.kernel(boundscheck=True, launch_bounds=(256, 4)),
 * offload.kernel(f, boundscheck=True) */
static PyObject *kernel_decorator(PyObject *self, PyObject *const *args, Py_ssize_t n,
                                  PyObject *kwnames) {
    int bounds = -1; /* not said: as the device says */
    int max_threads = 0, min_blocks = 0;
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (!PyUnicode_CompareWithASCIIString(name, "launch_bounds")) {
            if (args[n + i] != Py_None &&
                parse_launch_bounds(args[n + i], &max_threads, &min_blocks) < 0)
                return NULL;
        } else if (PyUnicode_CompareWithASCIIString(name, "boundscheck")) {
            return PyErr_Format(
                PyExc_TypeError,
                "offload.kernel() takes boundscheck= and launch_bounds=, not %R=", name);
        } else if ((bounds = PyObject_IsTrue(args[n + i])) < 0) {
            return NULL;
        }
    }
    if (n > 1)
        return PyErr_Format(PyExc_TypeError,
                            "use @offload.kernel or @offload.kernel(boundscheck=True) above a def");
    if (n == 1) return kernel_made(args[0], bounds, max_threads, min_blocks);
    PyObject *how = Py_BuildValue("(iii)", bounds, max_threads, min_blocks);
    PyObject *r = how ? PyCFunction_New(&kernel_with_def, how) : NULL;
    Py_XDECREF(how);
    return r;
}

static PyObject *device_func(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 1 || !PyFunction_Check(args[0]))
        return PyErr_Format(PyExc_TypeError, "use @offload.device_func above a def");
    mod_devfunc *d = (mod_devfunc *)DevFuncType.tp_alloc(&DevFuncType, 0);
    if (d) d->pyfunc = Py_NewRef(args[0]);
    return (PyObject *)d;
}

static PyObject *call_kernel_(PyObject *const *args, Py_ssize_t n, bool async) {
    if (n < 2 || !PyObject_TypeCheck(args[0], &KernelType))
        return PyErr_Format(PyExc_TypeError,
                            "call_kernel%s(kernel, range, *args) takes an @offload.kernel "
                            "and an offload.Range",
                            async ? "_async" : "");
    mod_shape r;
    if (mod_shape_of(args[1], &r) < 0) return NULL;
    return launch((mod_kernel *)args[0], &r, args + 2, n - 2, async, false);
}

static PyObject *call_kernel(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    return call_kernel_(args, n, false);
}
static PyObject *call_kernel_async(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    return call_kernel_(args, n, true);
}

/* The kernel language's own calls: the JIT compiles them; on the host they
 * only say so. */
static PyObject *kernel_only(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    return PyErr_Format(PyExc_TypeError,
                        "offload.%s works only inside an @offload.kernel launched over an "
                        "offload.NdRange",
                        PyUnicode_AsUTF8(self));
}

/* offload.fma(x, y, z) outside kernels: C's fma on Python floats, so that a
 * kernel's function gives the same result called as plain Python. */
static PyObject *host_fma(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    (void)self;
    if (n != 3)
        return PyErr_Format(PyExc_TypeError, "fma(x, y, z) takes 3 arguments (%zd given)", n);
    double v[3];
    for (int i = 0; i < 3; i++)
        if ((v[i] = PyFloat_AsDouble(args[i])) == -1.0 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(fma(v[0], v[1], v[2]));
}

/* ---- pickling: Dask and multiprocessing ship kernels to other processes ----
 *
 * A kernel of an importable module -- the module's attribute of that name is
 * this very object -- pickles by reference, as pickle does functions: the
 * other process imports it. Any other kernel (in __main__, a notebook cell, a
 * closure) pickles by value: its Python function, which cloudpickle (Dask's
 * pickler) pickles by value there, and the source lines the JIT reads; the
 * other process puts those into linecache when its own has nothing under that
 * file name (a notebook cell exists only in the Jupyter kernel that ran it)
 * and names the function's code after that file again. Specialisations are not shipped: each
 * process compiles its own (the disk cache serves processes of one machine). */

static PyObject *pickle_fn(const char *name) {
    PyObject *m = PyImport_ImportModule("offload");
    PyObject *f = m ? PyObject_GetAttrString(m, name) : NULL;
    Py_XDECREF(m);
    return f;
}

/* 1 when module.qualname is self (module not __main__), 0 when not, -1 with an exception */
static int importable(PyObject *self, PyObject *module, PyObject *qualname) {
    if (!PyUnicode_Check(module) || !PyUnicode_Check(qualname) ||
        !PyUnicode_CompareWithASCIIString(module, "__main__"))
        return 0;
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    PyObject *o = modules ? PyDict_GetItemWithError(modules, module) : NULL;
    PyObject *dot = o ? PyUnicode_FromString(".") : NULL;
    PyObject *parts = dot ? PyUnicode_Split(qualname, dot, -1) : NULL;
    Py_XDECREF(dot);
    Py_XINCREF(o);
    for (Py_ssize_t i = 0; parts && o && i < PyList_GET_SIZE(parts); i++) {
        PyObject *next = PyObject_GetAttr(o, PyList_GET_ITEM(parts, i));
        Py_SETREF(o, next);
    }
    if (!o) PyErr_Clear(); /* not found there: by value */
    Py_XDECREF(parts);
    int same = o == self;
    Py_XDECREF(o);
    return PyErr_Occurred() ? -1 : same;
}

static PyObject *reduce_function(PyObject *self, PyObject *pyfunc, const char *kind, int bounds,
                                 int max_threads, int min_blocks) {
    PyObject *module = PyObject_GetAttrString(pyfunc, "__module__");
    PyObject *qualname = module ? PyObject_GetAttrString(pyfunc, "__qualname__") : NULL;
    int by_ref = qualname ? importable(self, module, qualname) : -1;
    PyObject *r = NULL;
    if (by_ref == 1) {
        PyObject *f = pickle_fn("_import_kernel");
        r = f ? Py_BuildValue("(N(OO))", f, module, qualname) : NULL;
    } else if (by_ref == 0) {
        PyObject *code = PyObject_GetAttrString(pyfunc, "__code__");
        PyObject *file = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
        PyObject *globals = file ? PyObject_GetAttrString(pyfunc, "__globals__") : NULL;
        PyObject *linecache = globals ? PyImport_ImportModule("linecache") : NULL;
        PyObject *lines =
            linecache ? PyObject_CallMethod(linecache, "getlines", "OO", file, globals) : NULL;
        PyObject *f = lines ? pickle_fn("_rebuild_kernel") : NULL;
        r = f ? Py_BuildValue("(N(sOiOO(ii)))", f, kind, pyfunc, bounds, file, lines, max_threads,
                              min_blocks)
              : NULL;
        Py_XDECREF(code);
        Py_XDECREF(file);
        Py_XDECREF(globals);
        Py_XDECREF(linecache);
        Py_XDECREF(lines);
    }
    Py_XDECREF(module);
    Py_XDECREF(qualname);
    return r;
}

static PyObject *kernel_reduce(mod_kernel *k, PyObject *unused) {
    return reduce_function((PyObject *)k, k->pyfunc, "kernel", k->boundscheck, k->max_threads,
                           k->min_blocks);
}
static PyObject *devfunc_reduce(mod_devfunc *d, PyObject *unused) {
    return reduce_function((PyObject *)d, d->pyfunc, "device_func", -1, 0, 0);
}

/* _import_kernel(module, qualname): what pickle does for a function */
static PyObject *import_kernel(PyObject *self, PyObject *args) {
    PyObject *module, *qualname;
    if (!PyArg_ParseTuple(args, "UU:_import_kernel", &module, &qualname)) return NULL;
    PyObject *o = PyImport_Import(module);
    PyObject *dot = PyUnicode_FromString(".");
    PyObject *parts = o && dot ? PyUnicode_Split(qualname, dot, -1) : NULL;
    for (Py_ssize_t i = 0; parts && o && i < PyList_GET_SIZE(parts); i++)
        Py_SETREF(o, PyObject_GetAttr(o, PyList_GET_ITEM(parts, i)));
    Py_XDECREF(dot);
    Py_XDECREF(parts);
    return o;
}

/* _rebuild_kernel(kind, pyfunc, boundscheck, filename, lines, (max_threads, min_blocks)) */
static PyObject *rebuild_kernel(PyObject *self, PyObject *args) {
    const char *kind;
    PyObject *pyfunc, *file, *lines;
    int bounds, max_threads = 0, min_blocks = 0;
    if (!PyArg_ParseTuple(args, "sOiOO!|(ii):_rebuild_kernel", &kind, &pyfunc, &bounds, &file,
                          &PyList_Type, &lines, &max_threads, &min_blocks))
        return NULL;
    PyObject *linecache = PyImport_ImportModule("linecache");
    PyObject *cache = linecache ? PyObject_GetAttrString(linecache, "cache") : NULL;
    int have = cache && PyUnicode_Check(file) ? PySequence_Contains(cache, file) : -1;
    if (have == 0 && PyList_GET_SIZE(lines) > 0 && mod_linecache_put(file, lines) < 0) have = -1;
    Py_XDECREF(linecache);
    Py_XDECREF(cache);
    if (have < 0 && PyErr_Occurred()) return NULL;
    /* cloudpickle 3.1 names every code it rebuilds "<dynamic-code>": point it
     * at the file whose lines the JIT is to read (and tracebacks show) */
    PyObject *code = PyObject_GetAttrString(pyfunc, "__code__");
    PyObject *now = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
    int same = now ? PyObject_RichCompareBool(now, file, Py_EQ) : -1;
    if (same == 0) {
        PyObject *kw = Py_BuildValue("{sO}", "co_filename", file);
        PyObject *meth = kw ? PyObject_GetAttrString(code, "replace") : NULL;
        PyObject *empty = meth ? PyTuple_New(0) : NULL;
        PyObject *fixed = empty ? PyObject_Call(meth, empty, kw) : NULL;
        same = fixed ? PyObject_SetAttrString(pyfunc, "__code__", fixed) : -1;
        Py_XDECREF(kw);
        Py_XDECREF(meth);
        Py_XDECREF(empty);
        Py_XDECREF(fixed);
    }
    Py_XDECREF(code);
    Py_XDECREF(now);
    if (same < 0) return NULL;
    if (!strcmp(kind, "device_func")) return device_func(NULL, &pyfunc, 1);
    return kernel_made(pyfunc, bounds, max_threads, min_blocks);
}

static PyMethodDef kernel_pickle_methods[] = {
    {"__reduce__", (PyCFunction)kernel_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyMethodDef devfunc_pickle_methods[] = {
    {"__reduce__", (PyCFunction)devfunc_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef functions[] = {
    {"fma", (PyCFunction)(void (*)(void))host_fma, METH_FASTCALL,
     "fma(x, y, z) -> float\n\nx * y + z rounded once (C's fma). In a kernel, the device's fused "
     "multiply-add instruction in the arguments' float type: Python's x * y + z rounds twice, and "
     "offload never fuses it behind your back."},
    {"kernel", (PyCFunction)(void (*)(void))kernel_decorator, METH_FASTCALL | METH_KEYWORDS,
     "@offload.kernel\ndef k(item, *args): ...\n\nMake a device kernel; launch it with "
     "k[offload.Range(n)](*args).\n"
     "@offload.kernel(boundscheck=True) checks every array index of every launch, as numba's "
     "boundscheck: the "
     "first index out of range raises IndexError naming the index, axis, size, array and place "
     "(each launch "
     "then waits for the kernel; without it there is no check and no cost).\n"
     "@offload.kernel(launch_bounds=(256, 4)): as CUDA's __launch_bounds__ and numba-cuda's "
     "launch_bounds, at most 256 work-items a group, and registers few enough for 4 groups an SM "
     "(max_threads alone: only the first). On CUDA devices; elsewhere it changes nothing."},
    {"device_func", (PyCFunction)(void (*)(void))device_func, METH_FASTCALL,
     "@offload.device_func\ndef f(...): ...\n\nA function kernels can call; it may return a "
     "value."},
    {"call_kernel", (PyCFunction)(void (*)(void))call_kernel, METH_FASTCALL,
     "call_kernel(kernel, range, *args)\n\nQueue a launch (returns once queued)."},
    {"call_kernel_async", (PyCFunction)(void (*)(void))call_kernel_async, METH_FASTCALL,
     "call_kernel_async(kernel, range, *args) -> Event\n\nQueue a launch; the Event waits and "
     "times it."},
    {"_import_kernel", import_kernel, METH_VARARGS,
     "_import_kernel(module, qualname): a pickled kernel, by reference"},
    {"_rebuild_kernel", rebuild_kernel, METH_VARARGS,
     "_rebuild_kernel(kind, pyfunc, boundscheck, filename, lines, (max_threads, min_blocks)): "
     "a pickled kernel, by value"},
    {"kernel_table", kernel_table, METH_NOARGS,
     "kernel_table() -> list of dict\n\n"
     "Every kernel compiled in this process and still alive (a kernel that is garbage-collected "
     "leaves "
     "with its programs), one dict per specialisation, oldest first:\n"
     "  name, signature (argument types and range), device (filter string), target (device and "
     "code form: "
     "'opencl:cpu:0 spirv', 'opencl:cpu:0 spir1.2', 'cuda:gpu:0 ptx sm_90'; ' vectorizer-off' "
     "after it where the device's compiler crashed on it and built it so),\n"
     "  code_size (bytes of the code the device loaded), compile_ms (jit_ms + build_ms: the JIT's "
     "and the "
     "driver's), launches, memory_hits (launches that found this specialisation compiled),\n"
     "  disk_hit (its code came from the disk cache), device_ms and timed_launches (the device "
     "time summed "
     "over the launches made while device timing was on -- %time, %timeit, an open "
     "offload.DeviceTimer; "
     "device_ms is None when none was).\n"
     "Waits for timed launches still queued."},
    {0},
};

static PyMethodDef kernel_only_functions[] = {
    {"group_barrier", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "group_barrier(group)\n\nIn a kernel: wait until every work-item of the work-group "
     "(item.get_group()) "
     "is here; their writes to local and global memory before it are then seen by all."},
    {"local_array", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "local_array(shape, dtype)\n\nIn a kernel launched over an NdRange: an array shared by the "
     "work-group; "
     "shape is a constant int or tuple of 1-3 of them."},
    {"private_array", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "private_array(shape, dtype)\n\nIn a kernel: an array of one work-item's own; shape is a "
     "constant."},
    {"AtomicRef", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "AtomicRef(array, index)\n\nIn a kernel: the element array[index] (index a tuple for 2-D and "
     "3-D "
     "arrays) for atomic fetch_add, fetch_sub, fetch_min, fetch_max, fetch_and, fetch_or, "
     "fetch_xor, "
     "exchange (each returns the old value), load, store and compare_exchange(expected, desired) "
     "(returns "
     "the value found; stored desired iff it equals expected). int32, uint32, int64, uint64, "
     "float32, "
     "float64 arrays, global or local."},
};

int mod_kernel_add_functions(PyObject *module) {
    if (PyType_Ready(&KernelType) < 0 || PyType_Ready(&DevFuncType) < 0 ||
        PyType_Ready(&LaunchType) < 0 ||
        mod_type_add_methods(&KernelType, kernel_pickle_methods) < 0 ||
        mod_type_add_methods(&DevFuncType, devfunc_pickle_methods) < 0)
        return -1;
    jit_set_devfunc_type(&DevFuncType, devfunc_pyfunc);
    jit_set_offload_module(module);
    CompileError = PyErr_NewExceptionWithDoc("offload.CompileError",
                                             "A kernel uses Python the JIT cannot compile: "
                                             "filename, lineno and colno say where; the message "
                                             "shows the line with a caret and what to use instead.",
                                             PyExc_Exception, NULL);
    if (!CompileError || PyModule_AddObjectRef(module, "CompileError", CompileError) < 0 ||
        PyModule_AddObjectRef(module, "Kernel", (PyObject *)&KernelType) < 0 ||
        PyModule_AddObjectRef(module, "DeviceFunction", (PyObject *)&DevFuncType) < 0)
        return -1;
    for (size_t i = 0; i < sizeof kernel_only_functions / sizeof *kernel_only_functions; i++) {
        PyMethodDef *m = &kernel_only_functions[i];
        PyObject *name = PyUnicode_FromString(m->ml_name),
                 *modname = PyModule_GetNameObject(module);
        PyObject *fn = name && modname ? PyCFunction_NewEx(m, name, modname) : NULL;
        Py_XDECREF(name); /* the function holds both: name is its self, for the message */
        Py_XDECREF(modname);
        if (!fn || PyModule_AddObject(module, m->ml_name, fn) < 0) {
            Py_XDECREF(fn);
            return -1;
        }
    }
    return PyModule_AddFunctions(module, functions);
}

/* ---- for prange loops (mod_loops.c) ---- */

PyObject *mod_kernel_from_parsed(PyObject *pyfunc, jit_func *jf) {
    PyObject *k = kernel_new_for(pyfunc);
    if (!k) {
        jit_func_free(jf);
        return NULL;
    }
    ((mod_kernel *)k)->variants[0]->jf = jf;
    ((mod_kernel *)k)->boundscheck = -1;
    return k;
}

bool mod_kernel_check(PyObject *o) { return PyObject_TypeCheck(o, &KernelType); }

void mod_kernel_trusted(PyObject *kernel) { ((mod_kernel *)kernel)->boundscheck = 0; }

void mod_kernel_runs_to_end(PyObject *kernel) { ((mod_kernel *)kernel)->runs_to_end = true; }

void mod_kernel_launch_bounds(PyObject *kernel, int max_threads, int min_blocks) {
    ((mod_kernel *)kernel)->max_threads = max_threads;
    ((mod_kernel *)kernel)->min_blocks = min_blocks;
}

PyObject *mod_kernel_launch(PyObject *kernel, const mod_shape *range, PyObject *const *args,
                            Py_ssize_t nargs, bool want_event) {
    return launch((mod_kernel *)kernel, range, args, nargs, want_event, false);
}

PyObject *mod_kernel_launch_checked(PyObject *kernel, const mod_shape *range, PyObject *const *args,
                                    Py_ssize_t nargs, bool want_event, bool boundscheck) {
    return launch((mod_kernel *)kernel, range, args, nargs, want_event, boundscheck);
}

int mod_kernel_var_type(PyObject *kernel, const jit_type *args, int nargs, int range_ndim, bool nd,
                        const char *var, jit_type *out, jit_error *err) {
    mod_kernel *k = (mod_kernel *)kernel;
    int rc;
    Py_BEGIN_ALLOW_THREADS /* jit_var_type types jf in place, as a compile does */
    pthread_mutex_lock(&k->jit_lock);
    rc = jit_var_type(k->variants[0]->jf, args, nargs, range_ndim, nd, var, out, err);
    pthread_mutex_unlock(&k->jit_lock);
    Py_END_ALLOW_THREADS
    return rc;
}

void mod_raise_jit(const jit_error *err) { raise_jit(err); }
