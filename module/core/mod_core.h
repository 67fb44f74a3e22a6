/* core: what the rest of the offload module stands on -- the runtime-error
 * boundary, NumPy, dtypes, offload.Device, offload.ndarray (its memory,
 * layout, transfers and Python type), DLPack, pickling, and the functions
 * that make arrays. Callers: launch/, lib/ and module/mod_module.c. Core calls
 * only the runtime (offload/) and CPython: ndarray's operations that run
 * generated kernels are lib/'s, handed to mod_array_init (mod_array_kernels),
 * so core never names a room above it.
 *
 * Built twice from these sources: into the Jupyter kernel binary and as an
 * ordinary extension module. Single-phase init: one instance per process, so
 * the state is plain statics.
 *
 * Reference rule: a function returning PyObject * returns a new reference,
 * unless its name ends in _borrowed. Runtime errors (ofl_error) become Python
 * exceptions here and nowhere else: mod_raise() is the one place.
 *
 * NumPy is imported when `offload` is (about 60 ms, paid when the user imports
 * offload, not at kernel start): dtypes are numpy.dtype objects, the dtype
 * aliases are NumPy's scalar types, and host data goes through NumPy arrays.
 * Only NumPy's Python API is used, so no NumPy headers are needed to build. */
#ifndef MOD_CORE_H
#define MOD_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "ofl_runtime.h"

#define MOD_MAXDIMS 32 /* NumPy 1.x's limit; kernels use 1-3 */

/* ---- mod_errors.c: the module's exceptions, the runtime-error boundary ---- */

extern PyObject *mod_DeviceError;             /* RuntimeError */
extern PyObject *mod_ExecutionPlacementError; /* Exception */

/* Makes the exceptions (once per process) and adds them to module. */
int mod_errors_add(PyObject *module);
/* Lets a device wait see Python's signals (Ctrl-C): the runtime's interrupt
 * check, whose exception mod_raise then raises. */
void mod_errors_catch_interrupts(void);
/* Sets the Python exception matching err->code with the runtime's message;
 * returns NULL so callers can `return mod_raise(&err);`. */
PyObject *mod_raise(const ofl_error *err);

/* ---- mod_numpy.c: NumPy, and small CPython helpers ---- */

int mod_numpy_init(void);              /* imports NumPy; -1 with NumPy's ImportError */
PyObject *mod_numpy_borrowed(void);    /* the numpy module, imported at init */
bool mod_is_numpy_array(PyObject *o);  /* a numpy.ndarray (or subclass) */
bool mod_is_numpy_scalar(PyObject *o); /* a numpy.generic: np.float32(1), np.int64(2) */
/* numpy.<name>(*args, **kw) -- a short way to call NumPy's API; args NULL for none. */
PyObject *mod_np_call(const char *name, PyObject *args, PyObject *kw);
/* obj.name(*args, **kw); args NULL for none. */
PyObject *mod_call_method(PyObject *obj, const char *name, PyObject *args, PyObject *kw);
/* A pointer into a C-contiguous NumPy array (held by the caller). */
int mod_np_buffer(PyObject *arr, Py_buffer *view, bool writable);
/* Puts lines (a list of str, ends kept) into linecache under filename, where
 * the JIT, inspect and tracebacks read source that has no file: with mtime
 * None, so that checkcache never drops it (as the Jupyter kernel's cells). */
int mod_linecache_put(PyObject *filename, PyObject *lines);
/* A new tuple of nd integers (shapes, strides). */
PyObject *mod_int_tuple(int nd, const Py_ssize_t *v);
/* A PyMethodDef's function and flags for f(self, args, kwargs): the cast
 * every table of functions that take keywords needs. */
#define MOD_KWFUNC(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

/* Calls def's function (no arguments) from Python's atexit: the module's
 * process-wide caches go before the interpreter does, so what they hold
 * frees its device memory and programs like everything else. */
int mod_atexit(PyMethodDef *def);
/* Adds methods (up to the {NULL} entry) or attributes to a type that is
 * already ready: for the rooms that give ndarray methods of theirs. */
int mod_type_add_methods(PyTypeObject *type, PyMethodDef *defs);
int mod_type_add_getset(PyTypeObject *type, PyGetSetDef *defs);

/* ---- mod_dtype.c: the element types arrays support ---- */

int mod_dtype_init(void);                    /* at module init, after NumPy; -1 with an exception */
int mod_dtype_add_aliases(PyObject *module); /* offload.float32 = numpy.float32, ... */
/* The canonical (native byte order) numpy.dtype for spec (anything numpy.dtype()
 * accepts), or TypeError naming the supported dtypes. */
PyObject *mod_dtype_new(PyObject *spec);
PyObject *mod_dtype_from_array(PyObject *arr); /* mod_dtype_new(arr.dtype) */
/* The canonical dtype matching kind ('b' 'i' 'u' 'f') and itemsize, or NULL. */
PyObject *mod_dtype_find_borrowed(char kind, Py_ssize_t itemsize);
/* A canonical dtype's short name ("float32") and itemsize. */
const char *mod_dtype_name(PyObject *dtype);
Py_ssize_t mod_dtype_itemsize(PyObject *dtype);

/* ---- mod_device.c: offload.Device ---- */

typedef struct {
    PyObject_HEAD
    ofl_device *dev; /* lives until process exit */
} mod_device;

extern PyTypeObject mod_DeviceType;
#define mod_device_check(o) PyObject_TypeCheck(o, &mod_DeviceType)

/* The Device object for dev: one per device, cached for the process. */
PyObject *mod_device_new(ofl_device *dev);
/* Resolves a device argument: None (the default device), a filter string, or a
 * Device. 0, or -1 with an exception set. */
int mod_device_resolve(PyObject *arg, ofl_device **out);
int mod_device_default(ofl_device **out); /* set_default_device's, else the runtime's */
/* Whether dev is a CPU device whose compiler makes vector code across the
 * work-items of a group, never within one work-item (Intel's CPU runtime;
 * measured, see mod_reduce.c's CPU form), so that kernels for it give
 * neighbouring work-items neighbouring elements. PoCL vectorises within. */
bool mod_device_cpu_lanes(ofl_device *dev);
int mod_device_add_functions(PyObject *module);

/* ---- mod_array.c: offload.ndarray ---- */

typedef struct mod_alloc mod_alloc; /* device memory; views share one */

typedef struct {
    PyObject_HEAD
    mod_alloc *mem;  /* owned */
    PyObject *dtype; /* canonical numpy.dtype, owned */
    Py_ssize_t itemsize;
    int nd;
    Py_ssize_t offset; /* bytes from the buffer's start to element [0,...,0] */
    Py_ssize_t shape[MOD_MAXDIMS];
    Py_ssize_t strides[MOD_MAXDIMS]; /* in bytes, as NumPy's; may be negative */
    PyObject *weakreflist;
} mod_array;

extern PyTypeObject mod_ArrayType;
#define mod_array_check(o) PyObject_TypeCheck(o, &mod_ArrayType)

/* ndarray's operations that run generated kernels: lib/ provides them and
 * mod_module.c hands them over, so core never names lib/. */
typedef struct {
    /* Fills the type's number slots (arithmetic, @) and tp_richcompare; called
     * before PyType_Ready, which makes their wrappers (__add__, ...). */
    void (*fill_slots)(PyTypeObject *type);
    PyMethodDef *methods; /* more methods (the reductions), up to a {NULL} entry */
    /* A C-contiguous copy of a on its device, in dtype (NULL: a's). */
    PyObject *(*copy)(mod_array *a, PyObject *dtype);
    /* a[key] and a[key] = value for keys basic indexing does not take
     * (arrays, lists, booleans in them: NumPy's advanced indexing). */
    PyObject *(*getitem)(mod_array *a, PyObject *key);
    int (*setitem)(mod_array *a, PyObject *key, PyObject *value);
    /* dst[...] = src: src an offload array on dst's device (broadcast to
     * dst's shape and cast, as NumPy assigns) or a NumPy scalar of dst's
     * dtype (a fill). */
    int (*assign)(mod_array *dst, PyObject *src);
} mod_array_kernels;

/* Readies ndarray with k's operations (k lives for the process). */
int mod_array_init(const mod_array_kernels *k);

/* A new C-contiguous, uninitialised array. */
PyObject *mod_array_new_empty(ofl_device *dev, PyObject *dtype, int nd, const Py_ssize_t *shape);
/* The same from Python arguments, as ndarray(shape, dtype=None, device=None)
 * takes them: dtype None is the device's default float. */
PyObject *mod_array_create(PyObject *shape, PyObject *dtype, PyObject *device);
ofl_device *mod_array_device(const mod_array *a);
ofl_buffer *mod_array_buffer(const mod_array *a); /* NULL for an empty array */
bool mod_array_is_c_contiguous(const mod_array *a);
PyObject *mod_array_asnumpy(mod_array *a); /* waits for pending work on its device */
/* Arrays a[0..n) of one CPU device (whose memory is the host's) as NumPy
 * arrays over their own memory, mapped after pending work: host code
 * (NumPy's BLAS) reads them, and where write[i] writes, in place. The views
 * do not keep the mappings: the caller drops them, then unmaps each map
 * (which makes the writes the device's). 0, or -1 with an exception (on
 * other devices too) and nothing to release. */
#define MOD_MAP_MAX 8
typedef struct {
    ofl_buffer *buf;
    void *p; /* NULL: nothing mapped */
} mod_host_map;
int mod_arrays_map_host(mod_array **a, const bool *write, int n, PyObject **views,
                        mod_host_map *maps);
int mod_array_unmap_host(mod_host_map *map); /* 0, or -1 with an exception */
/* An array over foreign memory: takes buf (from ofl_buffer_wrap; freed even on
 * failure) and a reference to owner, which keeps the memory alive and is
 * released after the last view dies and the device's queue has drained. */
PyObject *mod_array_wrap(ofl_buffer *buf, PyObject *owner, PyObject *dtype, int nd,
                         const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t offset);
/* Another view of a's memory with this layout (no checks: the caller keeps
 * it inside a's span; strides may be 0 to broadcast). */
PyObject *mod_array_view(mod_array *a, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
                         Py_ssize_t offset);
/* A new device array holding a copy of host (anything numpy.asarray takes). */
PyObject *mod_array_from_host(PyObject *host, ofl_device *dev);
/* host on dev for a launch: on a CPU device a writable C-contiguous NumPy
 * array becomes a device array over its own memory (*in_place), anything else
 * a copy (mod_array_from_host); NULL with an exception. mod_array_sync_host
 * waits for the device's work and makes such memory hold what kernels wrote;
 * mod_array_is_in_place tells such an array. */
PyObject *mod_array_for_device(PyObject *host, ofl_device *dev, bool *in_place);
int mod_array_sync_host(mod_array *a);
bool mod_array_is_in_place(mod_array *a);
/* A C-contiguous NumPy array of a supported dtype holding obj (converted to
 * dtype when given; else NumPy's choice, refused when arrays cannot hold it). */
PyObject *mod_host_array(PyObject *obj, PyObject *dtype);
/* A C-contiguous copy of a on dev (its own device or another). */
PyObject *mod_array_copy_to(mod_array *a, ofl_device *dev);
/* a as dtype on dev: converted on a's device, then moved. */
PyObject *mod_array_cast_to(mod_array *a, PyObject *dtype, ofl_device *dev);
/* Writes elem (itemsize bytes) into every element of a C-contiguous array. */
int mod_array_fill(mod_array *a, const void *elem);
/* v[...] = value: a scalar, array-like or offload array, broadcast and cast
 * as NumPy does, by kernel (kernels->assign). */
int mod_array_assign(mod_array *v, PyObject *value);
/* Shape from one argument (an int or a sequence of ints). */
int mod_parse_shape(PyObject *obj, int *nd, Py_ssize_t *shape);
/* copy=: -1 None (copy only if needed), 0 False (never), 1 True (always); -2 error */
int mod_parse_copy(PyObject *copy);
PyObject *mod_copy_needed_error(const char *what); /* copy=False refused: ValueError, NULL */

/* ---- mod_dlpack.c: DLPack export and import, __cuda_array_interface__ ---- */

/* Gives ndarray __dlpack__, __dlpack_device__ and __cuda_array_interface__
 * (after mod_array_init); adds from_dlpack to module. */
int mod_dlpack_init(PyObject *module);
/* from_dlpack(obj, device=device, copy=copy): obj has __dlpack__ or is a capsule. */
PyObject *mod_dlpack_import(PyObject *obj, PyObject *device, PyObject *copy);
/* 1 when obj exports DLPack from CUDA memory, 0 when not, -1 with an exception. */
int mod_dlpack_is_cuda(PyObject *obj);

/* ---- mod_pickle.c: pickling, pickle_device, copy, sizeof, Dask's token ---- */

/* Gives ndarray __reduce_ex__, __copy__, __deepcopy__, __sizeof__ and
 * __dask_tokenize__ (after mod_array_init); adds pickle_device and
 * _unpickle_array to module. */
int mod_pickle_init(PyObject *module);

/* ---- mod_create.c: asarray, empty, zeros, ones, full, arange, *_like, asnumpy ---- */

int mod_create_add_functions(PyObject *module);

#endif
