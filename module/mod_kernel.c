/* mod_kernel: @offload.kernel and @offload.device_func objects -- argument
 * types, specialisation, compiling through the JIT, and launching.
 *
 * A Kernel keeps its specialisations (device, range rank, argument types ->
 * loaded program) in a small array, searched from the one used last: the
 * common loop that launches one kernel with the same kinds of arguments finds
 * it at the first compare, without building any key or Python object.
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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jit.h"
#include "mod_kernel.h"

PyObject *mod_CompileError;

#define MAX_ARGS 64

typedef enum { SPEC_BUILDING, SPEC_READY, SPEC_FAILED } spec_state;

typedef struct {
    spec_state state;    /* written with the GIL and the kernel's lock held */
    ofl_device *dev;
    int range_ndim, nargs;
    bool nd;             /* compiled for an NdRange launch */
    bool bounds;         /* compiled with JIT_BOUNDSCHECK */
    jit_type types[MAX_ARGS];
    ofl_program *prog;   /* owned */
    /* prog is read and launched only with the GIL held throughout, and
     * replaced only with it held, so a launch never sees it released */
    jit_blob code;       /* kept to rebuild after a CUDA context reset */
    char entry[160];
    char signature[512];
    char *bounds_sites;  /* bounds: jit_artifact.bounds_sites (owned) */
    double compile_ms;   /* the JIT's (stats) */
    double build_ms;     /* the driver's build of the code (again after a context reset) */
    bool disk_hit;
    unsigned long long launches, memory_hits;
    /* device time of timed launches of programs released after a context
     * reset (the runtime keeps the current program's) */
    uint64_t old_device_ns, old_timed;
} spec;

typedef struct mod_kernel {
    PyObject_HEAD PyObject *pyfunc;
    jit_func *jf;        /* parsed at the first compile */
    int boundscheck;     /* 1: every launch checks indices; 0: none does; -1: as the device
                            says (mod_default_boundscheck) */
    spec **specs;        /* owned, each owned; only appended to (with the GIL) */
    int nspecs, last;
    pthread_mutex_t lock; /* with built: waits for a spec another thread builds */
    pthread_cond_t built;
    pthread_mutex_t jit_lock; /* held around every use of jf by the JIT */
    long compiles, memory_hits, disk_hits;
    PyObject *weakreflist;
    struct mod_kernel *prev, *next; /* the registry of live kernels (kernel_table) */
} mod_kernel;

typedef struct {
    PyObject_HEAD PyObject *pyfunc;
} mod_devfunc;

static PyTypeObject KernelType, DevFuncType, LaunchType;

/* ---- errors ---- */

static void raise_jit(const jit_error *err) {
    if (!err->compile_error) {
        PyErr_SetString(mod_DeviceError, err->msg);
        return;
    }
    PyObject *e = PyObject_CallFunction(mod_CompileError, "s", err->msg);
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
    PyErr_SetObject(mod_CompileError, e);
    Py_DECREF(e);
}

/* ---- argument types ---- */

static PyObject *dtype_objs[JIT_NDTYPES]; /* canonical numpy.dtype per jit dtype, borrowed */
static void init_types(void) {
    if (dtype_objs[0]) return;
    static const char kinds[JIT_NDTYPES] = {'b', 'i', 'i', 'i', 'i', 'u', 'u', 'u', 'u', 'f', 'f'};
    for (int d = 0; d < JIT_NDTYPES; d++)
        dtype_objs[d] = mod_dtype_find_borrowed(kinds[d], jit_dtype_size(d));
}

static int dtype_of(PyObject *dtype) {
    for (int d = 0; d < JIT_NDTYPES; d++)
        if (dtype_objs[d] == dtype) return d;
    PyObject *canon = mod_dtype_new(dtype); /* byte-swapped or an alias */
    if (!canon) { PyErr_Clear(); return -1; }
    int r = -1;
    for (int d = 0; d < JIT_NDTYPES; d++)
        if (dtype_objs[d] == canon) r = d;
    Py_DECREF(canon);
    return r;
}

static int numpy_scalar_type(PyObject *o, jit_type *t) {
    PyObject *dt = PyObject_GetAttrString(o, "dtype");
    int d = dt ? dtype_of(dt) : -1;
    Py_XDECREF(dt);
    PyErr_Clear();
    if (d < 0) return -1;
    *t = jit_scalar((jit_dtype)d);
    return 0;
}

/* The JIT type of argument i; host NumPy arrays are typed as the device copy
 * will be (C-contiguous). -1 with TypeError for anything else. */
static int arg_type(PyObject *o, int i, jit_type *t) {
    if (mod_array_check(o)) {
        mod_array *a = (mod_array *)o;
        int d = dtype_of(a->dtype);
        if (d < 0 || a->nd < 1 || a->nd > 3) {
            PyErr_Format(PyExc_TypeError, "argument %d: kernels take arrays of 1 to 3 dimensions of bool, "
                         "int8-64, uint8-64, float32 or float64, not a %d-D %s array", i + 1, a->nd,
                         mod_dtype_name(a->dtype));
            return -1;
        }
        *t = jit_array((jit_dtype)d, a->nd, mod_array_is_c_contiguous(a) ? JIT_LAYOUT_C : JIT_LAYOUT_ANY);
        return 0;
    }
    /* exact checks: numpy.float64 is a float subclass, but strongly typed */
    if (PyBool_Check(o)) { *t = jit_scalar(JIT_BOOL); return 0; }
    if (PyLong_CheckExact(o)) { *t = jit_weak_int(); return 0; }
    if (PyFloat_CheckExact(o)) { *t = jit_weak_float(); return 0; }
    if (mod_is_numpy_array(o)) {
        PyObject *dt = PyObject_GetAttrString(o, "dtype");
        int d = dt ? dtype_of(dt) : -1;
        Py_XDECREF(dt);
        PyObject *ndo = PyObject_GetAttrString(o, "ndim");
        int nd = ndo ? (int)PyLong_AsLong(ndo) : 0;
        Py_XDECREF(ndo);
        PyErr_Clear();
        if (d < 0 || nd < 1 || nd > 3) {
            PyErr_Format(PyExc_TypeError, "argument %d: kernels take arrays of 1 to 3 dimensions of bool, "
                         "int8-64, uint8-64, float32 or float64", i + 1);
            return -1;
        }
        *t = jit_array((jit_dtype)d, nd, JIT_LAYOUT_C);
        return 0;
    }
    if (mod_is_numpy_scalar(o) && numpy_scalar_type(o, t) == 0) return 0;
    PyErr_Format(PyExc_TypeError, "argument %d: a kernel takes offload or NumPy arrays and numbers, not %s",
                 i + 1, Py_TYPE(o)->tp_name);
    return -1;
}

/* The device the arrays live on (compute follows data), else the default. */
static int args_device(PyObject *const *args, Py_ssize_t n, ofl_device **dev) {
    *dev = NULL;
    int first = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!mod_array_check(args[i])) continue;
        ofl_device *d = mod_array_device((mod_array *)args[i]);
        if (!*dev) {
            *dev = d;
            first = (int)i;
        } else if (d != *dev) {
            PyErr_Format(mod_ExecutionPlacementError,
                         "kernel arguments live on two devices: argument %d on %s and argument %zd on %s; "
                         "move one with .to_device(...)", first + 1, ofl_device_get_info(*dev)->filter, i + 1,
                         ofl_device_get_info(d)->filter);
            return -1;
        }
    }
    return *dev ? 0 : mod_device_default(dev);
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
        PyErr_Format(mod_DeviceError, "%s (%s) takes neither SPIR-V nor SPIR 1.2 nor PTX, so offload "
                     "cannot compile kernels for it", info->filter, info->name);
        return -1;
    }
    return 0;
}

/* Parsing runs Python (inspect, ast), which may switch threads: two threads
 * may both parse, and the first to finish keeps its tree. */
static int ensure_parsed(mod_kernel *k) {
    if (k->jf) return 0;
    jit_error err;
    jit_func *jf = jit_func_parse(k->pyfunc, true, &err);
    if (!jf) {
        raise_jit(&err);
        return -1;
    }
    if (k->jf) jit_func_free(jf);
    else k->jf = jf;
    return 0;
}

/* jit_compile of k's function, with the GIL released and jit_lock held (the
 * JIT touches no Python object after parsing). */
static int compile_unlocked(mod_kernel *k, const jit_type *types, int nargs, int range_ndim, const jit_target *t,
                            unsigned flags, jit_artifact *art, jit_error *err) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&k->jit_lock);
    rc = jit_compile(k->jf, types, nargs, range_ndim, t, flags, art, err);
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
    Py_BEGIN_ALLOW_THREADS rc = ofl_program_build(s->dev, kind, s->code.data, s->code.size, s->entry, prog, &err);
    Py_END_ALLOW_THREADS if (rc != 0) {
        mod_raise(&err);
        return -1;
    }
    s->build_ms += now_ms() - t0;
    return 0;
}

/* Kernels take the cancel flag (JIT_CANCEL) unless OFFLOAD_CANCEL=0, which
 * exists to measure what the checks cost (bench/bench_safety.py): without
 * them an interrupt still returns control, but the kernel runs on. */
static bool cancel_checks(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("OFFLOAD_CANCEL");
        on = !(e && !strcmp(e, "0"));
    }
    return on;
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

static bool spec_matches(const spec *s, ofl_device *dev, int range_ndim, bool nd, bool bounds, const jit_type *types,
                         int nargs) {
    return s->dev == dev && s->range_ndim == range_ndim && s->nd == nd && s->bounds == bounds &&
           s->nargs == nargs && !memcmp(s->types, types, sizeof *types * (size_t)nargs);
}

/* The spec for this key in any state, searched from the one used last; NULL
 * when there is none. */
static spec *spec_find(mod_kernel *k, ofl_device *dev, int range_ndim, bool nd, bool bounds, const jit_type *types,
                       int nargs) {
    for (int probe = 0; probe < k->nspecs; probe++) {
        int i = (k->last + probe) % k->nspecs;
        if (spec_matches(k->specs[i], dev, range_ndim, nd, bounds, types, nargs)) {
            k->last = i;
            return k->specs[i];
        }
    }
    return NULL;
}

/* A new spec for this key, published as SPEC_BUILDING: from here on other
 * threads wait for its build. */
static spec *spec_add(mod_kernel *k, ofl_device *dev, int range_ndim, bool nd, bool bounds, const jit_type *types,
                      int nargs) {
    spec **more = realloc(k->specs, sizeof *more * (size_t)(k->nspecs + 1));
    if (!more) return (spec *)PyErr_NoMemory();
    k->specs = more;
    spec *s = calloc(1, sizeof *s);
    if (!s) return (spec *)PyErr_NoMemory();
    s->state = SPEC_BUILDING;
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

/* Compiles and loads s (SPEC_BUILDING, this thread's), then settles it:
 * SPEC_READY, or SPEC_FAILED with an exception. */
static int spec_build(mod_kernel *k, spec *s) {
    jit_target t;
    char ident[700];
    jit_artifact art;
    jit_error err;
    /* every launched kernel can be cancelled (an interrupt during a wait) */
    unsigned flags = (s->nd ? JIT_NDRANGE : 0) | (s->bounds ? JIT_BOUNDSCHECK : 0) | (cancel_checks() ? JIT_CANCEL : 0);
    ofl_program *prog = NULL;
    if (ensure_parsed(k) < 0) goto fail;
    if (s->nargs + 1 != jit_func_nparams(k->jf)) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s after the item, got %d", jit_func_name(k->jf),
                     jit_func_nparams(k->jf) - 1, jit_func_nparams(k->jf) == 2 ? "" : "s", s->nargs);
        goto fail;
    }
    if (target_of(s->dev, &t, ident, sizeof ident) < 0) goto fail;
    if (compile_unlocked(k, s->types, s->nargs, s->range_ndim, &t, flags, &art, &err) < 0) {
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
    s->build_ms = 0;
    if (build_program(s, &prog) < 0) goto fail;
    s->prog = prog;
    if (s->disk_hit) k->disk_hits++;
    else k->compiles++;
    spec_settle(k, s, SPEC_READY);
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

/* The loaded program for this key: found, waited for, or built here. */
static spec *specialise(mod_kernel *k, ofl_device *dev, int range_ndim, bool nd, bool bounds, const jit_type *types,
                        int nargs) {
    for (;;) {
        spec *s = spec_find(k, dev, range_ndim, nd, bounds, types, nargs);
        if (!s) {
            if (!(s = spec_add(k, dev, range_ndim, nd, bounds, types, nargs))) return NULL;
            return spec_build(k, s) < 0 ? NULL : s;
        }
        switch (s->state) {
        case SPEC_BUILDING:
            spec_wait(k, s);
            continue; /* look again: the GIL was released, anything may have changed */
        case SPEC_FAILED: /* ours to build again; a failed reload kept its code */
            spec_settle(k, s, SPEC_BUILDING);
            if (s->code.data) return spec_reload(k, s) < 0 ? NULL : s;
            return spec_build(k, s) < 0 ? NULL : s;
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


typedef union {
    int64_t i64;
    double f64;
    float f32;
    int32_t i32;
    int16_t i16;
    int8_t i8;
} slot;

/* An NdRange's work-group against what the device and this kernel allow,
 * said in the user's dimensions (the runtime would say the hardware's). */
static int check_group(const spec *s, const mod_shape *r, const char *kernel) {
    const ofl_device_info *in = ofl_device_get_info(s->dev);
    size_t most = ofl_program_max_work_group_size(s->prog), items = 1;
    for (int d = 0; d < r->ndim; d++) {
        size_t limit = in->max_work_item_sizes[r->ndim - 1 - d];
        if (limit && (size_t)r->local[d] > limit) {
            PyErr_Format(PyExc_ValueError, "the local size %zd in dimension %d is more than %s (%s) allows "
                         "there: at most %zu", r->local[d], d, in->filter, in->name, limit);
            return -1;
        }
        items *= (size_t)r->local[d];
    }
    if (most && items > most) {
        PyObject *shape = mod_shape_repr(r);
        PyErr_Format(PyExc_ValueError, "%S has work-groups of %zu work-items, and kernel '%s' on %s (%s) "
                     "takes at most %zu per work-group", shape, items, kernel, in->filter,
                     in->name, most);
        Py_XDECREF(shape);
        return -1;
    }
    return 0;
}

/* The bounds record of a checked launch: JIT_BOUNDS_WORDS zeros on dev. */
static ofl_buffer *bounds_record_new(ofl_device *dev) {
    static const int64_t zero[JIT_BOUNDS_WORDS];
    ofl_buffer *buf = NULL;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = ofl_alloc(dev, sizeof zero, &buf, &err);
    if (rc == 0 && (rc = ofl_write(buf, 0, zero, sizeof zero, &err)) != 0) ofl_free(buf);
    Py_END_ALLOW_THREADS if (rc != 0) return mod_raise(&err), NULL;
    return buf;
}

/* Waits for the checked launch and reads its record: 1 with *words filled in
 * when the kernel recorded an error, 0 when it did not, -1 with an exception. */
static int bounds_record_read(ofl_buffer *buf, int64_t words[JIT_BOUNDS_WORDS]) {
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = ofl_read(buf, 0, words, sizeof(int64_t) * JIT_BOUNDS_WORDS, &err);
    Py_END_ALLOW_THREADS if (rc != 0) return mod_raise(&err), -1;
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
    snprintf(where, sizeof where, "%.*s", (int)strcspn(site, "\n"), site); /* PyErr_Format has no %.*s */
    switch (w[JIT_BOUNDS_KIND]) {
    case JIT_FAULT_ZERO_STEP:
        PyErr_Format(PyExc_ValueError, "range() arg 3 must not be zero (%s)", where[0] ? where : "?");
        return;
    case JIT_FAULT_NEG_POWER:
        PyErr_Format(PyExc_ValueError, "Integers to negative integer powers are not allowed (%s)",
                     where[0] ? where : "?");
        return;
    default:
        break;
    }
    if (w[JIT_BOUNDS_UNSIGNED]) snprintf(index, sizeof index, "%llu", (unsigned long long)w[JIT_BOUNDS_INDEX]);
    else snprintf(index, sizeof index, "%lld", (long long)w[JIT_BOUNDS_INDEX]);
    PyErr_Format(PyExc_IndexError, "index %s is out of bounds for axis %lld with size %lld (%s)", index,
                 (long long)w[JIT_BOUNDS_AXIS], (long long)w[JIT_BOUNDS_SIZE], where[0] ? where : "?");
}

/* Launches k over range with args; NumPy arrays go to the device and back.
 * want_event: an Event of the launch instead of None. bounds (or the
 * kernel's own boundscheck): with index checks, which wait for the launch. */
static PyObject *launch(mod_kernel *k, const mod_shape *range, PyObject *const *args, Py_ssize_t nargs,
                        bool want_event, bool bounds) {
    init_types();
    if (nargs > MAX_ARGS) return PyErr_Format(PyExc_TypeError, "a kernel takes at most %d arguments", MAX_ARGS);
    jit_type types[MAX_ARGS];
    PyObject *dev_args[MAX_ARGS]; /* borrowed, or owned device copies of NumPy arrays */
    bool copied[MAX_ARGS] = {0};
    PyObject *result = NULL;
    int ncopied = 0;
    ofl_device *dev;
    ofl_buffer *record = NULL;
    ofl_event *ev = NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (arg_type(args[i], (int)i, &types[i]) < 0) return NULL;
    if (args_device(args, nargs, &dev) < 0) return NULL;
    bounds = bounds || k->boundscheck > 0 || (k->boundscheck < 0 && mod_default_boundscheck(dev));
    for (Py_ssize_t i = 0; i < nargs; i++) {
        dev_args[i] = args[i];
        if (types[i].kind == JT_ARRAY && !mod_array_check(args[i])) {
            if (!(dev_args[i] = mod_array_from_host(args[i], dev))) goto out;
            copied[i] = true;
            ncopied++;
        }
    }
    /* before specialise: from there to ofl_launch the GIL stays held, so no
     * other thread can reload s->prog under this launch (mod_kernel threads) */
    if (bounds && !(record = bounds_record_new(dev))) goto out;
    spec *s = specialise(k, dev, range->ndim, range->nd, bounds, types, (int)nargs);
    if (!s) goto out;

    ofl_arg largs[MAX_ARGS * 8 + 4];
    int64_t ints[MAX_ARGS * 8 + 3];
    slot vals[MAX_ARGS];
    size_t na = 0, ni = 0;
    static const int64_t null_ptr = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        jit_type t = types[i];
        if (t.kind == JT_ARRAY) {
            mod_array *a = (mod_array *)dev_args[i];
            ofl_buffer *buf = mod_array_buffer(a);
            largs[na++] = buf ? (ofl_arg){.buffer = buf} : (ofl_arg){.value = &null_ptr, .size = sizeof null_ptr};
            ints[ni] = a->offset;
            largs[na++] = (ofl_arg){.value = &ints[ni++], .size = 8};
            for (int d = 0; d < a->nd; d++) {
                ints[ni] = a->shape[d];
                largs[na++] = (ofl_arg){.value = &ints[ni++], .size = 8};
            }
            for (int d = 0; d < a->nd; d++) {
                ints[ni] = a->strides[d];
                largs[na++] = (ofl_arg){.value = &ints[ni++], .size = 8};
            }
            continue;
        }
        slot *v = &vals[i];
        PyObject *o = args[i];
        size_t size = 8;
        if (t.kind == JT_WEAK_INT) {
            int overflow;
            v->i64 = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow) {
                PyErr_Format(PyExc_OverflowError, "argument %zd does not fit in 64 bits", i + 1);
                goto out;
            }
        } else if (t.kind == JT_WEAK_FLOAT) {
            double d = PyFloat_AsDouble(o);
            if (ofl_device_get_info(dev)->has_fp64) v->f64 = d;
            else v->f32 = (float)d, size = 4;
        } else {
            jit_dtype d = (jit_dtype)t.dtype;
            size = (size_t)jit_dtype_size(d);
            if (jit_dtype_is_float(d)) {
                double x = PyFloat_AsDouble(o);
                if (d == JIT_F32) v->f32 = (float)x;
                else v->f64 = x;
            } else {
                PyObject *l = PyNumber_Long(o);
                if (!l) goto out;
                unsigned long long u = d == JIT_U64 ? PyLong_AsUnsignedLongLong(l) : (unsigned long long)PyLong_AsLongLong(l);
                Py_DECREF(l);
                if (PyErr_Occurred()) goto out;
                memcpy(v, &u, sizeof u); /* little-endian: the low bytes are the narrow value */
            }
        }
        largs[na++] = (ofl_arg){.value = v, .size = size};
    }
    size_t global[3], local[3];
    for (int d = 0; d < range->ndim; d++) {
        ints[ni] = range->size[d];
        largs[na++] = (ofl_arg){.value = &ints[ni++], .size = 8};
        /* the last dimension is the fastest; an empty Range still launches one guarded work item
         * (an empty NdRange, with no guard, launches nothing) */
        global[range->ndim - 1 - d] = range->size[d] || range->nd ? (size_t)range->size[d] : 1;
        local[range->ndim - 1 - d] = (size_t)range->local[d];
    }
    if (range->nd && check_group(s, range, jit_func_name(k->jf)) < 0) goto out;
    if (bounds) largs[na++] = (ofl_arg){.buffer = record};
    ofl_error err;
    if (cancel_checks() && ofl_cancel_arg(dev, &largs[na++], &err) != 0) { /* JIT_CANCEL's flag, last */
        mod_raise(&err);
        goto out;
    }
    if (ofl_launch(s->prog, (unsigned)range->ndim, global, range->nd ? local : NULL, largs, na,
                   want_event ? &ev : NULL, &err) != 0) {
        mod_raise(&err);
        goto out;
    }
    s->launches++;
    int64_t words[JIT_BOUNDS_WORDS];
    int failed = record ? bounds_record_read(record, words) : 0;
    if (failed < 0) goto out;
    if (ncopied) { /* results back into the caller's NumPy arrays (this waits for the kernel) */
        for (Py_ssize_t i = 0; i < nargs; i++) {
            if (!copied[i]) continue;
            PyObject *host = mod_array_asnumpy((mod_array *)dev_args[i]);
            int rc = host ? PyObject_SetItem(args[i], Py_Ellipsis, host) : -1;
            Py_XDECREF(host);
            if (rc < 0) {
                /* read-only NumPy inputs cannot take results back: fine, they were inputs */
                if (!PyErr_ExceptionMatches(PyExc_ValueError)) goto out;
                PyErr_Clear();
            }
        }
        PySys_FormatStderr("offload: %d NumPy argument%s of %s copied to %s and back; offload.asarray(...) "
                           "keeps data on the device\n", ncopied, ncopied == 1 ? "" : "s",
                           jit_func_name(k->jf), ofl_device_get_info(dev)->filter);
    }
    if (failed) { /* after the copies back: what ran before the bad index is kept, as in Python */
        bounds_raise(s, words);
        goto out;
    }
    result = want_event ? mod_event_new(ev, s->entry + 4) : Py_NewRef(Py_None);
    ev = NULL; /* the Event's now */
out:
    if (ev) ofl_event_release(ev);
    if (record) {
        Py_BEGIN_ALLOW_THREADS ofl_free(record); /* it may wait for the queue */
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (copied[i]) Py_DECREF(dev_args[i]);
    return result;
}

/* ---- Kernel ---- */

/* k[Range] -- a Kernel and a Range waiting for arguments; called through
 * vectorcall so a launch builds no argument tuple. */
typedef struct {
    PyObject_HEAD vectorcallfunc vcall;
    mod_kernel *k; /* owned */
    mod_shape range;
} mod_launcher;

static PyObject *launcher_vcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    mod_launcher *l = (mod_launcher *)self;
    if (kwnames && PyTuple_GET_SIZE(kwnames)) return PyErr_Format(PyExc_TypeError, "kernel arguments are positional");
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
    if (registry_last) registry_last->next = k;
    else registry_first = k;
    registry_last = k;
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
    if (k->prev) k->prev->next = k->next;
    else registry_first = k->next;
    if (k->next) k->next->prev = k->prev;
    else registry_last = k->prev;
    /* no build is under way: a building thread holds a reference to k */
    for (int i = 0; i < k->nspecs; i++) {
        ofl_program_release(k->specs[i]->prog);
        jit_blob_free(&k->specs[i]->code);
        free(k->specs[i]->bounds_sites);
        free(k->specs[i]);
    }
    free(k->specs);
    jit_func_free(k->jf);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->built);
    pthread_mutex_destroy(&k->jit_lock);
    Py_XDECREF(k->pyfunc);
    Py_TYPE(k)->tp_free((PyObject *)k);
}

static PyObject *kernel_call(mod_kernel *k, PyObject *args, PyObject *kw) {
    PyObject *name = PyObject_GetAttrString(k->pyfunc, "__name__");
    PyErr_Format(PyExc_TypeError, "a kernel is launched over a Range: %S[offload.Range(n)](...) or "
                 "offload.call_kernel(%S, offload.Range(n), ...)", name, name);
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
    return PyUnicode_FromFormat("<offload.kernel %R, %d specialisation%s>", k->pyfunc, n, n == 1 ? "" : "s");
}

/* inspect_llvm / inspect_spirv / inspect_ptx (*args, range=None, sm=None,
 * boundscheck=None: the kernel's own setting) */
static PyObject *inspect(mod_kernel *k, PyObject *args, PyObject *kw, int what) {
    init_types();
    if (ensure_parsed(k) < 0) return NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs > MAX_ARGS) return PyErr_Format(PyExc_TypeError, "too many arguments");
    PyObject *range_o = kw ? PyDict_GetItemString(kw, "range") : NULL;
    PyObject *sm_o = kw ? PyDict_GetItemString(kw, "sm") : NULL;
    PyObject *bounds_o = kw ? PyDict_GetItemString(kw, "boundscheck") : NULL;
    int bounds = bounds_o && bounds_o != Py_None ? PyObject_IsTrue(bounds_o) : k->boundscheck > 0;
    if (bounds < 0) return NULL;
    mod_shape r = {.ndim = 1, .size = {1}};
    if (range_o && range_o != Py_None && mod_shape_of(range_o, &r) < 0) return NULL;
    jit_type types[MAX_ARGS];
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (arg_type(PyTuple_GET_ITEM(args, i), (int)i, &types[i]) < 0) return NULL;
    if (nargs + 1 != jit_func_nparams(k->jf))
        return PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s after the item, got %zd", jit_func_name(k->jf),
                            jit_func_nparams(k->jf) - 1, jit_func_nparams(k->jf) == 2 ? "" : "s", nargs);
    jit_target t = {.fp64 = true, .atomic64 = true, .device = ""};
    char ident[700];
    if (what == JIT_PTX) {
        t.form = JIT_PTX;
        t.sm = sm_o && sm_o != Py_None ? (int)PyLong_AsLong(sm_o) : 80;
        if (PyErr_Occurred()) return NULL;
    } else if (what == JIT_SPIRV) {
        t.form = JIT_SPIRV;
    } else {
        ofl_device *dev;
        if (args_device(&PyTuple_GET_ITEM(args, 0), nargs, &dev) < 0 || target_of(dev, &t, ident, sizeof ident) < 0)
            return NULL;
    }
    jit_artifact art;
    jit_error err;
    unsigned flags = JIT_NO_DISK | (what == 0 ? JIT_WANT_LLVM : what == JIT_SPIRV ? JIT_WANT_SPIRV : 0) |
                     (r.nd ? JIT_NDRANGE : 0) | (bounds ? JIT_BOUNDSCHECK : 0);
    if (compile_unlocked(k, types, (int)nargs, r.ndim, &t, flags, &art, &err) < 0) {
        raise_jit(&err);
        return NULL;
    }
    const char *text = what == 0 ? art.llvm_text : what == JIT_SPIRV ? art.spirv_text : (const char *)art.code.data;
    PyObject *res = text ? PyUnicode_FromString(text) : PyErr_Format(mod_DeviceError, "no text was produced");
    jit_artifact_free(&art);
    return res;
}

static PyObject *inspect_llvm(mod_kernel *k, PyObject *a, PyObject *kw) { return inspect(k, a, kw, 0); }
static PyObject *inspect_spirv(mod_kernel *k, PyObject *a, PyObject *kw) { return inspect(k, a, kw, JIT_SPIRV); }
static PyObject *inspect_ptx(mod_kernel *k, PyObject *a, PyObject *kw) { return inspect(k, a, kw, JIT_PTX); }

static PyObject *kernel_signatures(mod_kernel *k, void *c) {
    PyObject *l = PyList_New(ready_count(k));
    for (int i = 0, j = 0; l && i < k->nspecs; i++) {
        const spec *sp = k->specs[i];
        if (sp->state != SPEC_READY) continue;
        PyObject *s = PyUnicode_FromFormat("%s on %s", sp->signature, ofl_device_get_info(sp->dev)->filter);
        if (!s) Py_CLEAR(l);
        else PyList_SET_ITEM(l, j++, s);
    }
    return l;
}

static PyObject *kernel_stats(mod_kernel *k, void *c) {
    unsigned long long launches = 0;
    double ms = 0;
    for (int i = 0; i < k->nspecs; i++) {
        if (k->specs[i]->state != SPEC_READY) continue;
        launches += k->specs[i]->launches;
        ms += k->specs[i]->compile_ms;
    }
    return Py_BuildValue("{s:l,s:l,s:l,s:K,s:d}", "compiles", k->compiles, "memory_hits", k->memory_hits,
                         "disk_hits", k->disk_hits, "launches", launches, "compile_ms", ms);
}

/* ---- offload.kernel_table() ---- */

/* "opencl:cpu:0 spirv", "opencl:cpu:0 spir1.2" (SPIR-V translated back for
 * PoCL), "cuda:gpu:0 ptx sm_90". */
static void target_str(ofl_device *dev, char *out, size_t len) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    switch (ofl_device_binary_kind(dev)) {
    case OFL_BIN_SPIRV: snprintf(out, len, "%s spirv", in->filter); break;
    case OFL_BIN_SPIR12: snprintf(out, len, "%s spir1.2", in->filter); break;
    case OFL_BIN_PTX: snprintf(out, len, "%s ptx sm_%d%d", in->filter, in->cuda_cc_major, in->cuda_cc_minor); break;
    case OFL_BIN_NONE: snprintf(out, len, "%s", in->filter); break;
    }
}

static PyObject *spec_row(mod_kernel *k, const spec *s) {
    uint64_t ns, timed;
    ofl_program_device_time(s->prog, &ns, &timed);
    ns += s->old_device_ns, timed += s->old_timed;
    char target[128];
    target_str(s->dev, target, sizeof target);
    PyObject *device_ms = timed ? PyFloat_FromDouble((double)ns * 1e-6) : Py_NewRef(Py_None);
    if (!device_ms) return NULL;
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:n,s:d,s:d,s:d,s:K,s:N,s:K,s:K,s:O}",
                         "name", jit_func_name(k->jf), "signature", s->signature,
                         "device", ofl_device_get_info(s->dev)->filter, "target", target,
                         "code_size", (Py_ssize_t)s->code.size, "compile_ms", s->compile_ms + s->build_ms,
                         "jit_ms", s->compile_ms, "build_ms", s->build_ms, "launches", s->launches,
                         "device_ms", device_ms, "timed_launches", (unsigned long long)timed,
                         "memory_hits", s->memory_hits, "disk_hit", s->disk_hit ? Py_True : Py_False);
}

static PyObject *kernel_table(PyObject *self, PyObject *unused) {
    ofl_error err;
    int rc;
    /* the device time of timed launches still queued goes to their programs */
    Py_BEGIN_ALLOW_THREADS rc = ofl_timing_totals(NULL, NULL, &err);
    Py_END_ALLOW_THREADS if (rc) return mod_raise(&err);
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
static PyObject *kernel_boundscheck(mod_kernel *k, void *c) { return PyBool_FromLong(k->boundscheck > 0); }
static PyObject *kernel_name(mod_kernel *k, void *c) { return PyObject_GetAttrString(k->pyfunc, "__name__"); }
static PyObject *kernel_doc(mod_kernel *k, void *c) { return PyObject_GetAttrString(k->pyfunc, "__doc__"); }

static PyMethodDef kernel_methods[] = {
    {"inspect_llvm", (PyCFunction)(void (*)(void))inspect_llvm, METH_VARARGS | METH_KEYWORDS,
     "inspect_llvm(*args, range=None, boundscheck=None)\n\nThe optimised LLVM IR for these arguments on their "
     "device (boundscheck: with index checks; None: as the kernel launches)."},
    {"inspect_spirv", (PyCFunction)(void (*)(void))inspect_spirv, METH_VARARGS | METH_KEYWORDS,
     "inspect_spirv(*args, range=None, boundscheck=None)\n\nThe SPIR-V disassembly for these arguments."},
    {"inspect_ptx", (PyCFunction)(void (*)(void))inspect_ptx, METH_VARARGS | METH_KEYWORDS,
     "inspect_ptx(*args, range=None, sm=80, boundscheck=None)\n\nThe PTX for these arguments (no GPU needed)."},
    {0},
};

static PyGetSetDef kernel_getset[] = {
    {"signatures", (getter)kernel_signatures, NULL, "the compiled specialisations", NULL},
    {"stats", (getter)kernel_stats, NULL, "compiles, memory_hits, disk_hits, launches, compile_ms", NULL},
    {"py_func", (getter)kernel_py_func, NULL, "the Python function", NULL},
    {"__wrapped__", (getter)kernel_py_func, NULL, "the Python function", NULL},
    {"boundscheck", (getter)kernel_boundscheck, NULL, "whether its launches check every index", NULL},
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
    .tp_doc = "A device kernel made by @offload.kernel; launch with kernel[offload.Range(n)](*args).",
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

static PyObject *devfunc_call(mod_devfunc *d, PyObject *args, PyObject *kw) { return PyObject_Call(d->pyfunc, args, kw); }
static int devfunc_traverse(mod_devfunc *d, visitproc visit, void *arg) {
    Py_VISIT(d->pyfunc);
    return 0;
}

static void devfunc_dealloc(mod_devfunc *d) {
    PyObject_GC_UnTrack(d);
    Py_XDECREF(d->pyfunc);
    Py_TYPE(d)->tp_free((PyObject *)d);
}
static PyObject *devfunc_repr(mod_devfunc *d) { return PyUnicode_FromFormat("<offload.device_func %R>", d->pyfunc); }
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
    .tp_doc = "A function kernels can call (made by @offload.device_func); inlined where it is called.",
    .tp_dealloc = (destructor)devfunc_dealloc,
    .tp_call = (ternaryfunc)devfunc_call,
    .tp_repr = (reprfunc)devfunc_repr,
    .tp_getset = devfunc_getset,
};

/* ---- module functions ---- */

/* self: Py_True for a kernel whose launches check indices, Py_False for one
 * whose launches never do, None: as the device says. */
static PyObject *kernel_with(PyObject *self, PyObject *pyfunc) {
    PyObject *k = kernel_new_for(pyfunc);
    if (k) ((mod_kernel *)k)->boundscheck = self == Py_True ? 1 : self == Py_False ? 0 : -1;
    return k;
}

static PyMethodDef kernel_with_def = {"kernel", kernel_with, METH_O, "Make a device kernel of the function."};

/* @offload.kernel, @offload.kernel(boundscheck=True), offload.kernel(f, boundscheck=True) */
static PyObject *kernel_decorator(PyObject *self, PyObject *const *args, Py_ssize_t n, PyObject *kwnames) {
    int bounds = -1; /* not said: as the device says */
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(name, "boundscheck"))
            return PyErr_Format(PyExc_TypeError, "offload.kernel() takes boundscheck=, not %R=", name);
        if ((bounds = PyObject_IsTrue(args[n + i])) < 0) return NULL;
    }
    if (n > 1) return PyErr_Format(PyExc_TypeError, "use @offload.kernel or @offload.kernel(boundscheck=True) above a def");
    PyObject *flag = bounds < 0 ? Py_None : bounds ? Py_True : Py_False;
    return n == 1 ? kernel_with(flag, args[0]) : PyCFunction_New(&kernel_with_def, flag);
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
        return PyErr_Format(PyExc_TypeError, "call_kernel%s(kernel, range, *args) takes an @offload.kernel "
                            "and an offload.Range", async ? "_async" : "");
    mod_shape r;
    if (mod_shape_of(args[1], &r) < 0) return NULL;
    return launch((mod_kernel *)args[0], &r, args + 2, n - 2, async, false);
}

static PyObject *call_kernel(PyObject *self, PyObject *const *args, Py_ssize_t n) { return call_kernel_(args, n, false); }
static PyObject *call_kernel_async(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    return call_kernel_(args, n, true);
}

/* The kernel language's own calls: the JIT compiles them; on the host they
 * only say so. */
static PyObject *kernel_only(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    return PyErr_Format(PyExc_TypeError, "offload.%s works only inside an @offload.kernel launched over an "
                        "offload.NdRange", PyUnicode_AsUTF8(self));
}

static PyMethodDef functions[] = {
    {"kernel", (PyCFunction)(void (*)(void))kernel_decorator, METH_FASTCALL | METH_KEYWORDS,
     "@offload.kernel\ndef k(item, *args): ...\n\nMake a device kernel; launch it with k[offload.Range(n)](*args).\n"
     "@offload.kernel(boundscheck=True) checks every array index of every launch, as numba's boundscheck: the "
     "first index out of range raises IndexError naming the index, axis, size, array and place (each launch "
     "then waits for the kernel; without it there is no check and no cost)."},
    {"device_func", (PyCFunction)(void (*)(void))device_func, METH_FASTCALL,
     "@offload.device_func\ndef f(...): ...\n\nA function kernels can call; it may return a value."},
    {"call_kernel", (PyCFunction)(void (*)(void))call_kernel, METH_FASTCALL,
     "call_kernel(kernel, range, *args)\n\nQueue a launch (returns once queued)."},
    {"call_kernel_async", (PyCFunction)(void (*)(void))call_kernel_async, METH_FASTCALL,
     "call_kernel_async(kernel, range, *args) -> Event\n\nQueue a launch; the Event waits and times it."},
    {"kernel_table", kernel_table, METH_NOARGS,
     "kernel_table() -> list of dict\n\n"
     "Every kernel compiled in this process and still alive (a kernel that is garbage-collected leaves "
     "with its programs), one dict per specialisation, oldest first:\n"
     "  name, signature (argument types and range), device (filter string), target (device and code form: "
     "'opencl:cpu:0 spirv', 'opencl:cpu:0 spir1.2', 'cuda:gpu:0 ptx sm_90'),\n"
     "  code_size (bytes of the code the device loaded), compile_ms (jit_ms + build_ms: the JIT's and the "
     "driver's), launches, memory_hits (launches that found this specialisation compiled),\n"
     "  disk_hit (its code came from the disk cache), device_ms and timed_launches (the device time summed "
     "over the launches made while device timing was on -- %time, %timeit, an open offload.DeviceTimer; "
     "device_ms is None when none was).\n"
     "Waits for timed launches still queued."},
    {0},
};

static PyMethodDef kernel_only_functions[] = {
    {"group_barrier", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "group_barrier(group)\n\nIn a kernel: wait until every work-item of the work-group (item.get_group()) "
     "is here; their writes to local and global memory before it are then seen by all."},
    {"local_array", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "local_array(shape, dtype)\n\nIn a kernel launched over an NdRange: an array shared by the work-group; "
     "shape is a constant int or tuple of 1-3 of them."},
    {"private_array", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "private_array(shape, dtype)\n\nIn a kernel: an array of one work-item's own; shape is a constant."},
    {"AtomicRef", (PyCFunction)(void (*)(void))kernel_only, METH_FASTCALL,
     "AtomicRef(array, index)\n\nIn a kernel: the element array[index] (index a tuple for 2-D and 3-D "
     "arrays) for atomic fetch_add, fetch_sub, fetch_min, fetch_max, fetch_and, fetch_or, fetch_xor, "
     "exchange (each returns the old value), load, store and compare_exchange(expected, desired) (returns "
     "the value found; stored desired iff it equals expected). int32, uint32, int64, uint64, float32, "
     "float64 arrays, global or local."},
};

int mod_kernel_add_functions(PyObject *module) {
    if (PyType_Ready(&KernelType) < 0 || PyType_Ready(&DevFuncType) < 0 || PyType_Ready(&LaunchType) < 0)
        return -1;
    jit_set_devfunc_type(&DevFuncType, devfunc_pyfunc);
    jit_set_offload_module(module);
    mod_CompileError = PyErr_NewExceptionWithDoc(
        "offload.CompileError",
        "A kernel uses Python the JIT cannot compile: filename, lineno and colno say where; the message "
        "shows the line with a caret and what to use instead.", PyExc_Exception, NULL);
    if (!mod_CompileError || PyModule_AddObjectRef(module, "CompileError", mod_CompileError) < 0 ||
        PyModule_AddObjectRef(module, "Kernel", (PyObject *)&KernelType) < 0 ||
        PyModule_AddObjectRef(module, "DeviceFunction", (PyObject *)&DevFuncType) < 0)
        return -1;
    for (size_t i = 0; i < sizeof kernel_only_functions / sizeof *kernel_only_functions; i++) {
        PyMethodDef *m = &kernel_only_functions[i];
        PyObject *name = PyUnicode_FromString(m->ml_name), *modname = PyModule_GetNameObject(module);
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
    ((mod_kernel *)k)->jf = jf;
    ((mod_kernel *)k)->boundscheck = -1;
    return k;
}

void mod_kernel_trusted(PyObject *kernel) { ((mod_kernel *)kernel)->boundscheck = 0; }

/* OFFLOAD_BOUNDSCHECK=1 checks every kernel's indices where the kernel does
 * not say, =0 none; unset, kernels check on devices in this process (a wild
 * index there is a segfault of the Jupyter kernel, not a device fault). */
bool mod_default_boundscheck(ofl_device *dev) {
    static int env = -2; /* read once: -1 unset, 0, 1 */
    if (env == -2) {
        const char *e = getenv("OFFLOAD_BOUNDSCHECK");
        env = !e || !*e ? -1 : (strcmp(e, "0") && strcmp(e, "no") && strcmp(e, "false")) ? 1 : 0;
    }
    return env >= 0 ? env == 1 : ofl_device_in_process(dev);
}

PyObject *mod_kernel_launch(PyObject *kernel, const mod_shape *range, PyObject *const *args, Py_ssize_t nargs,
                            bool want_event) {
    return launch((mod_kernel *)kernel, range, args, nargs, want_event, false);
}

PyObject *mod_kernel_launch_checked(PyObject *kernel, const mod_shape *range, PyObject *const *args,
                                    Py_ssize_t nargs, bool want_event, bool boundscheck) {
    return launch((mod_kernel *)kernel, range, args, nargs, want_event, boundscheck);
}

jit_func *mod_kernel_parsed(PyObject *kernel) { return ((mod_kernel *)kernel)->jf; }

int mod_kernel_var_type(PyObject *kernel, const jit_type *args, int nargs, int range_ndim, const char *var,
                        jit_type *out, jit_error *err) {
    mod_kernel *k = (mod_kernel *)kernel;
    int rc;
    Py_BEGIN_ALLOW_THREADS /* jit_var_type types jf in place, as a compile does */
    pthread_mutex_lock(&k->jit_lock);
    rc = jit_var_type(k->jf, args, nargs, range_ndim, var, out, err);
    pthread_mutex_unlock(&k->jit_lock);
    Py_END_ALLOW_THREADS
    return rc;
}

int mod_kernel_arg_type(PyObject *o, int i, jit_type *t) {
    init_types();
    return arg_type(o, i, t);
}

void mod_raise_jit(const jit_error *err) { raise_jit(err); }
