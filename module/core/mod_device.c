/* offload.Device and the device functions: get_devices, default_device,
 * set_default_device, lsplatform, _lsplatform_bundle.
 *
 * A Device is a thin handle on a runtime device, which lives until process
 * exit. There is one Device object per device (a cache), so Device("cpu") is
 * Device("opencl:cpu:0") when both name the same device; equality and hash go
 * by the underlying device as well, for subclasses or future changes. */
#include "mod_core.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static ofl_device *default_override; /* set_default_device(); NULL: the rule below */

/* ---- the runtime, called without the GIL (discovery can take a while) ---- */

static ofl_device *const *devices(size_t *n, const char **why_none) {
    ofl_device *const *list;
    Py_BEGIN_ALLOW_THREADS
    list = ofl_devices(n, why_none);
    Py_END_ALLOW_THREADS
    return list;
}

static int select_device(const char *filter, ofl_device **out) {
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = filter ? ofl_select(filter, out, &err) : ofl_default_device(out, &err);
    Py_END_ALLOW_THREADS
    if (rc) mod_raise(&err);
    return rc ? -1 : 0;
}

/* ---- the default device: one per process, or one per node-local rank ----
 *
 * set_default_device()'s choice; else $OFFLOAD_DEVICE (read at every use, by
 * the runtime); else, where a node-local rank is known, device (rank modulo
 * n) of the n devices of the preferred kind -- the GPUs if there are any,
 * else the CPU devices -- in get_devices() order; else the runtime's default
 * (the first GPU, else the first CPU device). So the ranks of `mpirun -n N`
 * or the workers of a Dask LocalCluster spread over a node's GPUs by
 * themselves. The rank and its device are looked for once, at the first use
 * of the default device in the process (default_device(), local_rank(), an
 * array made or unpickled without a device), and kept: a process keeps its
 * device, as it keeps a CUDA context. */

/* node-local rank from the launcher: Open MPI, MVAPICH2, MPICH's Hydra and
 * Intel MPI, Cray PALS, Slurm's srun -- in that order, so that an mpirun
 * inside a Slurm allocation is believed over the allocation */
static const char *const rank_vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"};

static struct {
    bool looked;
    long rank;          /* -1: none */
    const char *source; /* the variable, or "Dask worker name" */
    ofl_device *device; /* rank's device; NULL: none */
} ranked;

static bool env_set(const char *name) {
    const char *v = getenv(name);
    for (; v && *v; v++)
        if (!isspace((unsigned char)*v)) return true;
    return false; /* VAR= (empty) means unset, as shells write it */
}

static long rank_from_env(const char **source) {
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *v = getenv(rank_vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0) {
            *source = rank_vars[i];
            return r;
        }
    }
    return -1;
}

/* The name of the Dask worker this process runs, when it is an int
 * (LocalCluster numbers its workers 0..n-1). Only where `distributed` is
 * imported already: offload never imports Dask. get_worker() knows the worker
 * inside a task; elsewhere (data unpickled by the worker's event loop) the
 * one Worker of a worker process is taken. */
static long rank_from_dask(void) {
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    PyObject *dist = modules ? PyDict_GetItemString(modules, "distributed") : NULL;
    PyObject *wmod = modules ? PyDict_GetItemString(modules, "distributed.worker") : NULL;
    if (!dist || !wmod) return -1;
    PyObject *worker = PyObject_CallMethod(wmod, "get_worker", NULL);
    if (!worker) {
        PyErr_Clear();
        PyObject *cls = PyObject_GetAttrString(wmod, "Worker");
        PyObject *all = cls ? PyObject_GetAttrString(cls, "_instances") : NULL;
        PyObject *list = all ? PySequence_List(all) : NULL;
        if (list && PyList_GET_SIZE(list) == 1) worker = Py_NewRef(PyList_GET_ITEM(list, 0));
        Py_XDECREF(cls);
        Py_XDECREF(all);
        Py_XDECREF(list);
    }
    PyObject *name = worker ? PyObject_GetAttrString(worker, "name") : NULL;
    long r = name && PyLong_CheckExact(name) ? PyLong_AsLong(name) : -1;
    PyErr_Clear(); /* a worker we cannot read is no worker */
    Py_XDECREF(worker);
    Py_XDECREF(name);
    return r < 0 ? -1 : r;
}

/* Computed into locals and published last: the device listing and Dask's
 * lookup let the GIL go, and a second thread that comes meanwhile does the
 * same work to the same result rather than see half of it. */
static void find_rank(void) {
    if (ranked.looked) return;
    const char *source = NULL;
    long rank = rank_from_env(&source);
    if (rank < 0 && (rank = rank_from_dask()) >= 0) source = "Dask worker name";
    ofl_device *dev = NULL;
    if (rank >= 0) {
        size_t n, gpus = 0, cpus = 0;
        ofl_device *const *list = devices(&n, NULL);
        for (size_t i = 0; i < n; i++) {
            ofl_device_type t = ofl_device_get_info(list[i])->type;
            gpus += t == OFL_GPU, cpus += t == OFL_CPU;
        }
        ofl_device_type kind = gpus ? OFL_GPU : OFL_CPU;
        size_t count = gpus ? gpus : cpus, k = (size_t)rank % (count ? count : 1);
        for (size_t i = 0; i < n && count && !dev; i++)
            if (ofl_device_get_info(list[i])->type == kind && k-- == 0) dev = list[i];
    }
    ranked.rank = rank, ranked.source = source, ranked.device = dev;
    ranked.looked = true;
}

bool mod_device_cpu_lanes(ofl_device *dev) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    return in->type == OFL_CPU && !strstr(in->platform, "Portable Computing Language");
}

int mod_device_default(ofl_device **out) {
    if (default_override) {
        *out = default_override;
        return 0;
    }
    if (!env_set("OFFLOAD_DEVICE")) {
        find_rank();
        if (ranked.device) {
            *out = ranked.device;
            return 0;
        }
    }
    return select_device(NULL, out);
}

/* ---- the Device cache ---- */

static struct {
    ofl_device *dev;
    PyObject *obj; /* owned by the cache, for the process */
} cache[64];

PyObject *mod_device_new(ofl_device *dev) {
    size_t i;
    for (i = 0; i < sizeof cache / sizeof cache[0] && cache[i].dev; i++)
        if (cache[i].dev == dev) return Py_NewRef(cache[i].obj);
    mod_device *d = PyObject_New(mod_device, &mod_DeviceType);
    if (!d) return NULL;
    d->dev = dev;
    if (i < sizeof cache / sizeof cache[0]) { /* a full cache only costs identity */
        cache[i].dev = dev;
        cache[i].obj = Py_NewRef((PyObject *)d);
    }
    return (PyObject *)d;
}

int mod_device_resolve(PyObject *arg, ofl_device **out) {
    if (arg == NULL || arg == Py_None) return mod_device_default(out);
    if (mod_device_check(arg)) {
        *out = ((mod_device *)arg)->dev;
        return 0;
    }
    if (PyUnicode_Check(arg)) {
        const char *f = PyUnicode_AsUTF8(arg);
        return f ? select_device(f, out) : -1;
    }
    PyErr_Format(PyExc_TypeError,
                 "device must be a filter string such as 'gpu' or 'opencl:cpu:0', an "
                 "offload.Device, or None, not %.100s",
                 Py_TYPE(arg)->tp_name);
    return -1;
}

/* ---- attributes: one table serves the getters and lsplatform ---- */

/* X(id, attribute name, docstring), in the order lsplatform -vv shows them;
 * those after PLATFORM are conveniences it leaves out. */
#define DEVICE_ATTRS(X)                                                                            \
    X(NAME, "name", "device name")                                                                 \
    X(VENDOR, "vendor", "vendor name")                                                             \
    X(BACKEND, "backend", "'opencl' or 'cuda'")                                                    \
    X(DEVICE_TYPE, "device_type", "'gpu', 'cpu', 'accelerator' or 'custom'")                       \
    X(FILTER, "filter_string", "canonical filter string, e.g. 'cuda:gpu:0'")                       \
    X(DRIVER_VERSION, "driver_version", "driver version")                                          \
    X(VERSION, "version", "'OpenCL 3.0 ...' or 'CUDA 12.4'")                                       \
    X(MAX_COMPUTE_UNITS, "max_compute_units", "compute units (cores, SMs, EUs)")                   \
    X(MAX_WORK_GROUP_SIZE, "max_work_group_size", "largest work-group")                            \
    X(MAX_WORK_ITEM_SIZES, "max_work_item_sizes", "largest work-group per dimension (3-tuple)")    \
    X(GLOBAL_MEM_SIZE, "global_mem_size", "device memory in bytes")                                \
    X(LOCAL_MEM_SIZE, "local_mem_size", "local (shared) memory per work-group in bytes")           \
    X(MAX_MEM_ALLOC_SIZE, "max_mem_alloc_size", "largest single allocation in bytes")              \
    X(HAS_FP64, "has_fp64", "computes in float64")                                                 \
    X(HAS_FP16, "has_fp16", "computes in float16")                                                 \
    X(HAS_ATOMIC64, "has_atomic64", "has 64-bit atomics")                                          \
    X(IL_VERSION, "il_version", "SPIR-V versions accepted ('' when none)")                         \
    X(PCI_BUS_ID, "pci_bus_id", "PCI address 'dddd:bb:dd.f' ('' when unknown); orders the GPUs")   \
    X(PLATFORM, "platform", "OpenCL platform name, or 'CUDA'")                                     \
    X(IS_CPU, "is_cpu", "device_type == 'cpu'")                                                    \
    X(IS_GPU, "is_gpu", "device_type == 'gpu'")                                                    \
    X(IS_ACCELERATOR, "is_accelerator", "device_type == 'accelerator'")

#define X_ENUM(id, name, doc) A_##id,
#define X_NAME(id, name, doc) name,
enum { DEVICE_ATTRS(X_ENUM) A_COUNT };
static const char *const attr_names[A_COUNT] = {DEVICE_ATTRS(X_NAME)};

/* lsplatform -v: the properties that tell devices apart at a glance */
static const int key_attrs[] = {
    A_VENDOR,          A_VERSION,  A_DRIVER_VERSION, A_MAX_COMPUTE_UNITS,
    A_GLOBAL_MEM_SIZE, A_HAS_FP64, A_HAS_FP16};

static const char *backend_name(ofl_backend b) { return b == OFL_CUDA ? "cuda" : "opencl"; }

static const char *type_name(ofl_device_type t) {
    switch (t) {
    case OFL_CPU: return "cpu";
    case OFL_GPU: return "gpu";
    case OFL_ACCELERATOR: return "accelerator";
    case OFL_CUSTOM: return "custom";
    }
    return "unknown";
}

static PyObject *attr_new(const ofl_device_info *in, int which) {
    switch (which) {
    case A_NAME: return PyUnicode_FromString(in->name);
    case A_VENDOR: return PyUnicode_FromString(in->vendor);
    case A_BACKEND: return PyUnicode_FromString(backend_name(in->backend));
    case A_DEVICE_TYPE: return PyUnicode_FromString(type_name(in->type));
    case A_FILTER: return PyUnicode_FromString(in->filter);
    case A_DRIVER_VERSION: return PyUnicode_FromString(in->driver_version);
    case A_VERSION: return PyUnicode_FromString(in->version);
    case A_MAX_COMPUTE_UNITS: return PyLong_FromUnsignedLong(in->max_compute_units);
    case A_MAX_WORK_GROUP_SIZE: return PyLong_FromSize_t(in->max_work_group_size);
    case A_MAX_WORK_ITEM_SIZES:
        return Py_BuildValue("(nnn)", (Py_ssize_t)in->max_work_item_sizes[0],
                             (Py_ssize_t)in->max_work_item_sizes[1],
                             (Py_ssize_t)in->max_work_item_sizes[2]);
    case A_GLOBAL_MEM_SIZE: return PyLong_FromUnsignedLongLong(in->global_mem_size);
    case A_LOCAL_MEM_SIZE: return PyLong_FromUnsignedLongLong(in->local_mem_size);
    case A_MAX_MEM_ALLOC_SIZE: return PyLong_FromUnsignedLongLong(in->max_mem_alloc_size);
    case A_HAS_FP64: return PyBool_FromLong(in->has_fp64);
    case A_HAS_FP16: return PyBool_FromLong(in->has_fp16);
    case A_HAS_ATOMIC64: return PyBool_FromLong(in->has_atomic64);
    case A_IL_VERSION: return PyUnicode_FromString(in->il_version);
    case A_PCI_BUS_ID: return PyUnicode_FromString(in->pci_bus_id);
    case A_PLATFORM: return PyUnicode_FromString(in->platform);
    case A_IS_CPU: return PyBool_FromLong(in->type == OFL_CPU);
    case A_IS_GPU: return PyBool_FromLong(in->type == OFL_GPU);
    case A_IS_ACCELERATOR: return PyBool_FromLong(in->type == OFL_ACCELERATOR);
    }
    Py_RETURN_NONE;
}

static void human_size(uint64_t v, char *out, size_t n) {
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1024 && u < 4) x /= 1024, u++;
    if (u == 0)
        snprintf(out, n, "%llu bytes", (unsigned long long)v);
    else
        snprintf(out, n, "%.4g %s", x, unit[u]);
}

/* The attribute as lsplatform shows it: sizes human-readable, bools yes/no. */
static void attr_text(const ofl_device_info *in, int which, char *out, size_t n) {
    switch (which) {
    case A_MAX_COMPUTE_UNITS: snprintf(out, n, "%u", in->max_compute_units); return;
    case A_MAX_WORK_GROUP_SIZE: snprintf(out, n, "%zu", in->max_work_group_size); return;
    case A_MAX_WORK_ITEM_SIZES:
        snprintf(out, n, "(%zu, %zu, %zu)", in->max_work_item_sizes[0], in->max_work_item_sizes[1],
                 in->max_work_item_sizes[2]);
        return;
    case A_GLOBAL_MEM_SIZE: human_size(in->global_mem_size, out, n); return;
    case A_LOCAL_MEM_SIZE: human_size(in->local_mem_size, out, n); return;
    case A_MAX_MEM_ALLOC_SIZE: human_size(in->max_mem_alloc_size, out, n); return;
    case A_HAS_FP64: snprintf(out, n, "%s", in->has_fp64 ? "yes" : "no"); return;
    case A_HAS_FP16: snprintf(out, n, "%s", in->has_fp16 ? "yes" : "no"); return;
    case A_HAS_ATOMIC64: snprintf(out, n, "%s", in->has_atomic64 ? "yes" : "no"); return;
    case A_IL_VERSION:
        snprintf(out, n, "%s", in->il_version[0] ? in->il_version : "(none)");
        return;
    }
    PyObject *v = attr_new(in, which); /* the string attributes */
    const char *s = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    snprintf(out, n, "%s", s ? s : "?");
    if (!s) PyErr_Clear();
    Py_XDECREF(v);
}

/* ---- the Device type ---- */

static PyObject *device_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"filter", NULL};
    PyObject *filter = Py_None;
    ofl_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Device", kwlist, &filter) ||
        mod_device_resolve(filter, &dev) < 0)
        return NULL;
    return mod_device_new(dev);
}

static PyObject *device_repr(mod_device *self) {
    return PyUnicode_FromFormat("Device(%s)", ofl_device_get_info(self->dev)->filter);
}

static Py_hash_t device_hash(mod_device *self) {
    Py_hash_t h = (Py_hash_t)((uintptr_t)self->dev >> 4);
    return h == -1 ? -2 : h;
}

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
    if (!mod_device_check(a) || !mod_device_check(b) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    bool same = ((mod_device *)a)->dev == ((mod_device *)b)->dev;
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static PyObject *device_get(mod_device *self, void *which) {
    return attr_new(ofl_device_get_info(self->dev), (int)(intptr_t)which);
}

/* Pickles as its filter string, so a worker process gets its own device. */
static PyObject *device_reduce(mod_device *self, PyObject *unused) {
    const char *filter = ofl_device_get_info(self->dev)->filter;
    return Py_BuildValue("(O(s))", (PyObject *)Py_TYPE(self), filter);
}

static PyMethodDef device_methods[] = {
    {"__reduce__", (PyCFunction)device_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

#define X_GETSET(id, name, doc) {name, (getter)device_get, NULL, doc, (void *)(intptr_t)A_##id},
static PyGetSetDef device_getset[] = {
    DEVICE_ATTRS(X_GETSET){NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject mod_DeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.Device",
    .tp_basicsize = sizeof(mod_device),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device(filter=None)\n\nA device chosen by a filter string 'backend:type:index' "
              "(every part optional; a comma list is tried in order: 'gpu,cpu'), a Device, or "
              "None for the default device.",
    .tp_new = device_tp_new,
    .tp_repr = (reprfunc)device_repr,
    .tp_hash = (hashfunc)device_hash,
    .tp_richcompare = device_richcompare,
    .tp_methods = device_methods,
    .tp_getset = device_getset,
};

/* ---- module functions ---- */

/* Matches a get_devices() argument: None or "all" is everything. */
static int parse_choice(PyObject *arg, const char *what, const char *const *names, int *out) {
    *out = 0;
    if (arg == Py_None) return 0;
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s must be a string or None, not %.100s", what,
                         Py_TYPE(arg)->tp_name);
        return -1;
    }
    if (strcasecmp(s, "all") == 0) return 0;
    for (int i = 0; names[i]; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = i + 1;
            return 0;
        }
    PyErr_Format(PyExc_ValueError, "unknown %s %R; expected one of %s or 'all'", what, arg,
                 what[0] == 'b' ? "'opencl', 'cuda'" : "'gpu', 'cpu', 'accelerator', 'custom'");
    return -1;
}

static PyObject *get_devices(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"backend", "device_type", NULL};
    static const char *const backends[] = {"opencl", "cuda", NULL};
    static const char *const types[] = {"cpu", "gpu", "accelerator", "custom", NULL};
    static const ofl_device_type type_of[] = {0, OFL_CPU, OFL_GPU, OFL_ACCELERATOR, OFL_CUSTOM};
    PyObject *b = Py_None, *t = Py_None;
    int bi, ti;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:get_devices", kwlist, &b, &t) ||
        parse_choice(b, "backend", backends, &bi) < 0 ||
        parse_choice(t, "device_type", types, &ti) < 0)
        return NULL;
    size_t n;
    const char *why;
    ofl_device *const *list = devices(&n, &why);
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < n; i++) {
        const ofl_device_info *in = ofl_device_get_info(list[i]);
        if ((bi && (int)in->backend != bi) || (ti && in->type != type_of[ti])) continue;
        PyObject *d = mod_device_new(list[i]);
        if (!d || PyList_Append(out, d) < 0) Py_CLEAR(out);
        Py_XDECREF(d);
    }
    return out;
}

static PyObject *default_device(PyObject *self, PyObject *unused) {
    ofl_device *dev;
    return mod_device_default(&dev) < 0 ? NULL : mod_device_new(dev);
}

static PyObject *local_rank(PyObject *self, PyObject *unused) {
    find_rank();
    return ranked.rank < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(ranked.rank);
}

static PyObject *set_default_device(PyObject *self, PyObject *arg) {
    ofl_device *dev = NULL;
    if (arg != Py_None && mod_device_resolve(arg, &dev) < 0) return NULL;
    default_override = dev; /* None: back to the rule above */
    Py_RETURN_NONE;
}

/* ---- lsplatform: text and HTML from one walk over the devices ---- */

typedef struct {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = b->oom ? -1 : vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p, b->cap = cap;
    }
}

static void sb_html(sbuf *b, const char *s) {
    for (; *s; s++) switch (*s) {
        case '&': sb_printf(b, "&amp;"); break;
        case '<': sb_printf(b, "&lt;"); break;
        case '>': sb_printf(b, "&gt;"); break;
        case '"': sb_printf(b, "&quot;"); break;
        default: sb_printf(b, "%c", *s);
        }
}

/* The attributes shown at a verbosity: none beyond the device line at 0. */
static size_t shown_attrs(int verbosity, const int **ids) {
    static int all[A_PLATFORM + 1];
    for (int i = 0; i <= A_PLATFORM; i++) all[i] = i;
    if (verbosity <= 0) return 0;
    if (verbosity == 1) {
        *ids = key_attrs;
        return sizeof key_attrs / sizeof key_attrs[0];
    }
    *ids = all;
    return A_PLATFORM + 1;
}

/* Why the default device is what it is, when a rank chose it: the listing
 * says so, since the same command shows another default in another rank. */
static bool rank_chose(ofl_device *def, char *out, size_t n) {
    if (!def || def != ranked.device || default_override || env_set("OFFLOAD_DEVICE")) return false;
    snprintf(out, n, "default device by local rank %ld (%s)", ranked.rank, ranked.source);
    return true;
}

static ofl_device *default_or_null(void) {
    ofl_device *dev = NULL;
    if (mod_device_default(&dev) < 0) /* a bad $OFFLOAD_DEVICE must not break a listing */
        PyErr_Clear();
    return dev;
}

/* The index of the first device on the same platform (and backend) as list[i]. */
static size_t first_of_platform(ofl_device *const *list, size_t i) {
    const ofl_device_info *in = ofl_device_get_info(list[i]);
    for (size_t j = 0; j < i; j++) {
        const ofl_device_info *dj = ofl_device_get_info(list[j]);
        if (dj->backend == in->backend && strcmp(dj->platform, in->platform) == 0) return j;
    }
    return i;
}

/* Where a CUDA device is listed: which vendor math library serves it (the
 * file it opened), or what to install -- CUDA devices' matmul, linalg and
 * fft (issue 23). html escapes the text. */
static void math_libraries(sbuf *b, ofl_device *const *list, size_t n, bool html) {
    bool cuda = false;
    for (size_t i = 0; i < n; i++) cuda |= ofl_device_get_info(list[i])->backend == OFL_CUDA;
    if (!cuda) return;
    static const char *const names[] = {
        [OFL_CUBLAS] = "cuBLAS", [OFL_CUSOLVER] = "cuSOLVER", [OFL_CUFFT] = "cuFFT"};
    sb_printf(b, html ? "<p><b>CUDA math libraries:</b><br>\n" : "\nCUDA math libraries:\n");
    for (int lib = OFL_CUBLAS; lib <= OFL_CUFFT; lib++) {
        const char *why = NULL, *path = NULL;
        if (ofl_math_available((ofl_math_lib)lib, &why)) path = ofl_math_path((ofl_math_lib)lib);
        sb_printf(b, html ? "%s: " : "  %-9s ", names[lib]);
        if (html)
            sb_html(b, path ? path : why), sb_printf(b, "<br>\n");
        else
            sb_printf(b, "%s\n", path ? path : why);
    }
    if (html) sb_printf(b, "</p>\n");
}

static void text_listing(sbuf *b, int verbosity) {
    size_t n;
    const char *why;
    ofl_device *const *list = devices(&n, &why);
    if (n == 0) {
        sb_printf(b, "No devices: %s\n", why ? why : "none found");
        return;
    }
    ofl_device *def = default_or_null();
    int width = 0;
    for (size_t i = 0; i < n; i++) {
        int w = (int)strlen(ofl_device_get_info(list[i])->filter);
        width = w > width ? w : width;
    }
    const int *ids = NULL;
    size_t nattrs = shown_attrs(verbosity, &ids);
    for (size_t i = 0; i < n; i++) {
        const ofl_device_info *in = ofl_device_get_info(list[i]);
        if (verbosity == 0) { /* one line per device, in the runtime's order */
            sb_printf(b, "%-*s  %s  [%s]%s\n", width, in->filter, in->name, in->platform,
                      list[i] == def ? "  (default)" : "");
            continue;
        }
        /* grouped by platform, platforms in order of their first device */
        if (first_of_platform(list, i) != i) continue;
        sb_printf(b, "%sPlatform: %s (%s)\n", i ? "\n" : "", in->platform,
                  backend_name(in->backend));
        for (size_t j = i; j < n; j++) {
            const ofl_device_info *dj = ofl_device_get_info(list[j]);
            if (first_of_platform(list, j) != i) continue;
            sb_printf(b, "  %-*s  %s%s\n", width, dj->filter, dj->name,
                      list[j] == def ? "  (default)" : "");
            for (size_t k = 0; k < nattrs; k++) {
                char v[512];
                attr_text(dj, ids[k], v, sizeof v);
                sb_printf(b, "      %-20s %s\n", attr_names[ids[k]], v);
            }
        }
    }
    char note[160];
    if (rank_chose(def, note, sizeof note)) sb_printf(b, "%s%s\n", verbosity ? "\n" : "", note);
    /* what was found but cannot serve (a runtime missing a library, no CUDA driver) */
    if (verbosity >= 1 && why && *why) sb_printf(b, "\nNot listed: %s\n", why);
    if (verbosity >= 1) math_libraries(b, list, n, false);
}

/* Attribute names break at their underscores, so long headers need not widen
 * the table. */
static void sb_header(sbuf *b, const char *name) {
    for (; *name; name++) sb_printf(b, *name == '_' ? "_<wbr>" : "%c", *name);
}

/* Version strings run to 60 characters and more (PoCL's). As columns they
 * squeeze the others into one word per line; a row of their own under the
 * device keeps the table within a notebook's width. */
static bool is_long(int which) {
    return which == A_VERSION || which == A_DRIVER_VERSION || which == A_IL_VERSION;
}

static const char *cell_style(int which) {
    return which == A_NAME || which == A_VENDOR || which == A_PLATFORM ? "text-align:left"
                                                                       : "white-space:nowrap";
}

/* Rows of their own make JupyterLab's odd/even stripes meaningless: a line
 * above each device instead. */
#define ROW_PLAIN "<tr style=\"background:transparent\">"
#define ROW_RULED                                                                                  \
    "<tr style=\"background:transparent; border-top:1px solid var(--jp-border-color2, #ddd)\">"

/* Attributes down, devices across: every value in one column per device. */
static void html_turned(sbuf *b, ofl_device *const *list, size_t n, ofl_device *def, const int *ids,
                        size_t nattrs) {
    char v[512];
    sb_printf(b, "<thead><tr><th></th>");
    for (size_t i = 0; i < n; i++) {
        sb_printf(b, "<th style=\"text-align:left; white-space:nowrap\"><code>");
        sb_html(b, ofl_device_get_info(list[i])->filter);
        sb_printf(b, "</code>%s</th>", list[i] == def ? " (default)" : "");
    }
    sb_printf(b, "</tr></thead>\n<tbody>\n");
    for (size_t k = 0; k < nattrs; k++) {
        sb_printf(b, "<tr><th style=\"text-align:left; white-space:nowrap\">%s</th>",
                  attr_names[ids[k]]);
        for (size_t i = 0; i < n; i++) {
            attr_text(ofl_device_get_info(list[i]), ids[k], v, sizeof v);
            sb_printf(b, "<td style=\"text-align:left; overflow-wrap:anywhere\">");
            sb_html(b, v);
            sb_printf(b, "</td>");
        }
        sb_printf(b, "</tr>\n");
    }
    sb_printf(b, "</tbody>");
}

/* One row per device, grouped by platform as the text is, with the long
 * attributes in a line below the device's row. */
static void html_rows(sbuf *b, ofl_device *const *list, size_t n, ofl_device *def, const int *ids,
                      size_t nattrs) {
    char v[512];
    bool grouped = nattrs > 0, detail = false;
    int ncols = grouped ? 2 : 3;
    sb_printf(b, "<thead><tr><th>device</th><th style=\"text-align:left\">name</th>");
    if (!grouped) sb_printf(b, "<th style=\"text-align:left\">platform</th>");
    for (size_t k = 0; k < nattrs; k++) {
        if (is_long(ids[k])) {
            detail = true;
            continue;
        }
        bool left = strcmp(cell_style(ids[k]), "text-align:left") == 0;
        sb_printf(b, "<th%s>", left ? " style=\"text-align:left\"" : "");
        sb_header(b, attr_names[ids[k]]);
        sb_printf(b, "</th>");
        ncols++;
    }
    sb_printf(b, "</tr></thead>\n<tbody>\n");
    for (size_t p = 0; p < n; p++) {
        if (grouped && first_of_platform(list, p) != p) continue;
        const ofl_device_info *pin = ofl_device_get_info(list[p]);
        if (grouped) {
            sb_printf(b,
                      ROW_PLAIN "<th colspan=\"%d\" style=\"text-align:left\">Platform: ", ncols);
            sb_html(b, pin->platform);
            sb_printf(b, " (%s)</th></tr>\n", backend_name(pin->backend));
        }
        for (size_t i = p; i < n; i++) {
            if (grouped ? first_of_platform(list, i) != p : i != p) continue;
            const ofl_device_info *in = ofl_device_get_info(list[i]);
            sb_printf(b, "%s<td style=\"white-space:nowrap\"><code>", grouped ? ROW_RULED : "<tr>");
            sb_html(b, in->filter);
            sb_printf(b, "</code>%s</td><td style=\"%s\">", list[i] == def ? " (default)" : "",
                      cell_style(A_NAME));
            sb_html(b, in->name);
            if (!grouped) {
                sb_printf(b, "</td><td style=\"%s\">", cell_style(A_PLATFORM));
                sb_html(b, in->platform);
            }
            sb_printf(b, "</td>");
            for (size_t k = 0; k < nattrs; k++) {
                if (is_long(ids[k])) continue;
                attr_text(in, ids[k], v, sizeof v);
                sb_printf(b, "<td style=\"%s\">", cell_style(ids[k]));
                sb_html(b, v);
                sb_printf(b, "</td>");
            }
            sb_printf(b, "</tr>\n");
            if (!detail) continue;
            /* the zero-width div: the line wraps to the columns' width instead of setting it */
            sb_printf(b,
                      ROW_PLAIN
                      "<td></td><td colspan=\"%d\" style=\"text-align:left; padding-top:0; "
                      "font-size:smaller\"><div style=\"width:0; min-width:100%%\">",
                      ncols - 1);
            const char *sep = "";
            for (size_t k = 0; k < nattrs; k++) {
                if (!is_long(ids[k])) continue;
                attr_text(in, ids[k], v, sizeof v);
                sb_printf(b, "%s%s: ", sep, attr_names[ids[k]]);
                sb_html(b, v);
                sep = " &middot; ";
            }
            sb_printf(b, "</div></td></tr>\n");
        }
    }
    sb_printf(b, "</tbody>");
}

/* One row per device; at verbosity 2 the table turns (attributes down, devices across). */
static void html_listing(sbuf *b, int verbosity) {
    size_t n;
    const char *why;
    ofl_device *const *list = devices(&n, &why);
    if (n == 0) {
        sb_printf(b, "<p><b>No devices:</b> ");
        sb_html(b, why ? why : "none found");
        sb_printf(b, "</p>");
        return;
    }
    ofl_device *def = default_or_null();
    const int *ids = NULL;
    size_t nattrs = shown_attrs(verbosity, &ids);
    sb_printf(b, "<table class=\"offload-lsplatform\">\n");
    (verbosity >= 2 ? html_turned : html_rows)(b, list, n, def, ids, nattrs);
    sb_printf(b, "</table>\n");
    char note[160];
    if (rank_chose(def, note, sizeof note)) sb_printf(b, "<p>%s</p>\n", note);
    if (verbosity >= 1 && why && *why) {
        sb_printf(b, "<p><b>Not listed:</b> ");
        sb_html(b, why);
        sb_printf(b, "</p>\n");
    }
    if (verbosity >= 1) math_libraries(b, list, n, true);
}

static PyObject *listing_str(void (*list)(sbuf *, int), int verbosity) {
    sbuf b = {0};
    list(&b, verbosity);
    PyObject *s = b.oom ? PyErr_NoMemory()
                        : PyUnicode_DecodeUTF8(b.p ? b.p : "", (Py_ssize_t)b.len, "replace");
    free(b.p);
    return s;
}

/* Printed through sys.stdout, so the Jupyter kernel's capture sees it. */
static PyObject *lsplatform(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"verbosity", NULL};
    int verbosity = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:lsplatform", kwlist, &verbosity)) return NULL;
    PyObject *s = listing_str(text_listing, verbosity);
    if (!s) return NULL;
    PyObject *out = PySys_GetObject("stdout"); /* borrowed */
    int rc = out && out != Py_None ? PyFile_WriteObject(s, out, Py_PRINT_RAW) : 0;
    Py_DECREF(s);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* The same listing as one display bundle, so a notebook shows it once: the
 * HTML table, with the text for consoles and for nbconvert to text. */
static PyObject *lsplatform_bundle(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"verbosity", NULL};
    int verbosity = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:_lsplatform_bundle", kwlist, &verbosity))
        return NULL;
    PyObject *text = listing_str(text_listing, verbosity);
    PyObject *html = text ? listing_str(html_listing, verbosity) : NULL;
    PyObject *bundle =
        html ? Py_BuildValue("{s:O,s:O}", "text/plain", text, "text/html", html) : NULL;
    Py_XDECREF(text);
    Py_XDECREF(html);
    return bundle;
}

static PyMethodDef device_functions[] = {
    {"get_devices", MOD_KWFUNC(get_devices),
     "get_devices(backend=None, device_type=None) -> list of Device\n\nEvery device, GPUs first; "
     "backend 'opencl' or 'cuda', device_type 'gpu', 'cpu', 'accelerator' or 'custom' narrow it."},
    {"default_device", default_device, METH_NOARGS,
     "default_device() -> Device\n\nset_default_device()'s choice, else $OFFLOAD_DEVICE, else "
     "(where local_rank() is not None) device local_rank() modulo n of the n GPUs, or of the n "
     "CPU devices when there is no GPU, else the first GPU, else the first CPU device."},
    {"local_rank", local_rank, METH_NOARGS,
     "local_rank() -> int or None\n\nThis process's rank on its node, as the default device "
     "uses it: from the launcher ($OMPI_COMM_WORLD_LOCAL_RANK, $MV2_COMM_WORLD_LOCAL_RANK, "
     "$MPI_LOCALRANKID, $PMI_LOCAL_RANK, $SLURM_LOCALID, first found) or, in a Dask worker, "
     "the worker's name when it is an int; None when neither. Looked for once, at the first "
     "use of the default device."},
    {"set_default_device", set_default_device, METH_O,
     "set_default_device(f)\n\nMake f (a filter string or Device) the default device; None "
     "restores the automatic choice."},
    {"lsplatform", MOD_KWFUNC(lsplatform),
     "lsplatform(verbosity=0)\n\nPrint the platforms and devices: 0 one line per device, 1 with "
     "key properties, 2 with every attribute."},
    {"_lsplatform_bundle", MOD_KWFUNC(lsplatform_bundle),
     "_lsplatform_bundle(verbosity=0) -> dict\n\nlsplatform as text/plain and text/html (for "
     "%lsplatform)."},
    {NULL, NULL, 0, NULL},
};

/* Appends str(obj) to the ':'-list in buf unless it is there already. */
static void add_prefix(char *buf, size_t len, PyObject *obj) {
    const char *s = obj && PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (!s || !*s || strchr(s, ':')) return;
    size_t used = strlen(buf), n = strlen(s);
    for (const char *p = buf; (p = strstr(p, s)) != NULL; p += n)
        if ((p == buf || p[-1] == ':') && (p[n] == ':' || p[n] == '\0')) return;
    if (used + n + 2 <= len) snprintf(buf + used, len - used, "%s%s", used ? ":" : "", s);
}

/* Tells the runtime where pip puts a wheel's data files (intel-opencl-rt's
 * libraries) for this Python: its scheme's data path (/usr/local on Debian's
 * python3), its prefixes and the user base. Nothing found is not an error. */
static void set_runtime_prefixes(void) {
    char buf[4096] = "";
    PyObject *sysconfig = PyImport_ImportModule("sysconfig");
    PyObject *data = sysconfig ? PyObject_CallMethod(sysconfig, "get_path", "s", "data") : NULL;
    add_prefix(buf, sizeof buf, data);
    Py_XDECREF(data);
    Py_XDECREF(sysconfig);
    PyErr_Clear();
    add_prefix(buf, sizeof buf, PySys_GetObject("prefix")); /* borrowed */
    add_prefix(buf, sizeof buf, PySys_GetObject("base_prefix"));
    PyObject *modules = PySys_GetObject("modules");
    PyObject *site_mod = modules ? PyDict_GetItemString(modules, "site") : NULL; /* borrowed */
    PyObject *user = site_mod ? PyObject_GetAttrString(site_mod, "USER_BASE") : NULL;
    add_prefix(buf, sizeof buf, user);
    Py_XDECREF(user);
    PyErr_Clear();
    ofl_set_runtime_prefixes(buf);
}

int mod_device_add_functions(PyObject *module) {
    set_runtime_prefixes();
    return PyModule_AddFunctions(module, device_functions);
}
