/* module: the `offload` Python module -- devices, device arrays, and (later)
 * device kernels -- as a CPython extension over the runtime (offload/).
 *
 * Built twice from these sources: into the Jupyter kernel binary (which calls
 * PyImport_AppendInittab("offload", PyInit_offload)) and as an ordinary
 * extension module. Single-phase init: one instance per process, so the state
 * below is plain statics.
 *
 * Reference rule: a function returning PyObject * returns a new reference,
 * unless its name ends in _borrowed. Runtime errors (ofl_error) become Python
 * exceptions here and nowhere else: mod_raise() is the one place.
 *
 * NumPy is imported when `offload` is (about 60 ms, paid when the user imports
 * offload, not at kernel start): dtypes are numpy.dtype objects, the dtype
 * aliases are NumPy's scalar types, and host data goes through NumPy arrays.
 * Only NumPy's Python API is used, so no NumPy headers are needed to build. */
#ifndef MOD_MODULE_H
#define MOD_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "ofl_runtime.h"

#define MOD_MAXDIMS 32 /* NumPy 1.x's limit; kernels use 1-3 */

PyMODINIT_FUNC PyInit_offload(void);
/* For the Jupyter kernel: an interrupt came (from its SIGINT handler;
 * async-signal-safe) -- device waits end at their next poll, even when the
 * Python-level signal was taken on the way; and, at the end of a cell, one
 * that no wait took (it stopped the cell's Python between two device calls)
 * stops the work queued on the devices all the same. */
void mod_request_interrupt(void);
void mod_end_interrupt(void);

/* ---- mod_module.c: exceptions, NumPy, shared helpers ---- */

extern PyObject *mod_DeviceNotFoundError;     /* LookupError */
extern PyObject *mod_DeviceError;             /* RuntimeError */
extern PyObject *mod_ExecutionPlacementError; /* Exception */

/* Sets the Python exception matching err->code with the runtime's message;
 * returns NULL so callers can `return mod_raise(&err);`. */
PyObject *mod_raise(const ofl_error *err);
PyObject *mod_numpy_borrowed(void); /* the numpy module, imported at init */
bool mod_is_numpy_array(PyObject *o);  /* a numpy.ndarray (or subclass) */
bool mod_is_numpy_scalar(PyObject *o); /* a numpy.generic: np.float32(1), np.int64(2) */
/* Calls def's function (no arguments) from Python's atexit: the module's
 * process-wide caches go before the interpreter does, so what they hold
 * frees its device memory and programs like everything else. */
int mod_atexit(PyMethodDef *def);
/* numpy.<name>(*args, **kw) -- a short way to call NumPy's API. */
PyObject *mod_np_call(const char *name, PyObject *args, PyObject *kw);

/* ---- mod_dtype.c: the element types arrays support ---- */

int mod_dtype_init(void); /* at module init, after NumPy; -1 with an exception */
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
    PyObject_HEAD ofl_device *dev; /* lives until process exit */
} mod_device;

extern PyTypeObject mod_DeviceType;
#define mod_device_check(o) PyObject_TypeCheck(o, &mod_DeviceType)

/* The Device object for dev: one per device, cached for the process. */
PyObject *mod_device_new(ofl_device *dev);
/* Resolves a device argument: None (the default device), a filter string, or a
 * Device. 0, or -1 with an exception set. */
int mod_device_resolve(PyObject *arg, ofl_device **out);
int mod_device_default(ofl_device **out); /* set_default_device's, else the runtime's */
int mod_device_add_functions(PyObject *module);

/* ---- mod_array.c: offload.ndarray ---- */

typedef struct mod_alloc mod_alloc; /* device memory; views share one */

typedef struct {
    PyObject_HEAD mod_alloc *mem; /* owned */
    PyObject *dtype;              /* canonical numpy.dtype, owned */
    Py_ssize_t itemsize;
    int nd;
    Py_ssize_t offset;            /* bytes from the buffer's start to element [0,...,0] */
    Py_ssize_t shape[MOD_MAXDIMS];
    Py_ssize_t strides[MOD_MAXDIMS]; /* in bytes, as NumPy's; may be negative */
    PyObject *weakreflist;
} mod_array;

extern PyTypeObject mod_ArrayType;
#define mod_array_check(o) PyObject_TypeCheck(o, &mod_ArrayType)

/* A new C-contiguous, uninitialised array. */
/* A new tuple of nd integers (shapes, strides). */
PyObject *mod_int_tuple(int nd, const Py_ssize_t *v);
PyObject *mod_array_new_empty(ofl_device *dev, PyObject *dtype, int nd, const Py_ssize_t *shape);
ofl_device *mod_array_device(const mod_array *a);
ofl_buffer *mod_array_buffer(const mod_array *a); /* NULL for an empty array */
bool mod_array_is_c_contiguous(const mod_array *a);
PyObject *mod_array_asnumpy(mod_array *a); /* waits for pending work on its device */
int mod_array_add_functions(PyObject *module);
int mod_array_init(void);
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

/* ---- mod_dlpack.c: DLPack export and import, __cuda_array_interface__ ---- */

PyObject *mod_dlpack_export(mod_array *a, PyObject *args, PyObject *kw); /* __dlpack__ */
PyObject *mod_dlpack_device(mod_array *a, PyObject *unused);             /* __dlpack_device__ */
PyObject *mod_cuda_array_interface(mod_array *a, void *closure);        /* the property */
/* from_dlpack(obj, device=device, copy=copy): obj has __dlpack__ or is a capsule. */
PyObject *mod_dlpack_import(PyObject *obj, PyObject *device, PyObject *copy);
/* 1 when obj exports DLPack from CUDA memory, 0 when not, -1 with an exception. */
int mod_dlpack_is_cuda(PyObject *obj);
int mod_dlpack_add_functions(PyObject *module);

/* ---- mod_kernel.c, mod_launch.c: device kernels ---- */

extern PyObject *mod_CompileError; /* Exception: filename, lineno, colno */
int mod_kernel_add_functions(PyObject *module);
int mod_launch_add_functions(PyObject *module);
int mod_loops_add_functions(PyObject *module); /* mod_loops.c: prange, jit, LoopContext */

/* ---- mod_gen.c: kernels the module writes (array operations) ----
 * source: Python text defining `def name(item, ...)`, with the globals np
 * (numpy), math and ol (offload). Compiled by the JIT as a user's kernel,
 * once per text; the Kernel is kept for the process. */
int mod_gen_init(void);
PyObject *mod_gen_kernel_borrowed(const char *name, const char *source);
/* Launches that kernel over Range(size[0..ndim-1]) with args; None or NULL. */
PyObject *mod_gen_launch(const char *name, const char *source, int ndim, const Py_ssize_t *size,
                         PyObject *const *args, Py_ssize_t nargs);

/* ---- mod_ops.c: element-wise operators and functions (JIT kernels) ---- */
void mod_ops_fill_slots(PyTypeObject *type, PyNumberMethods *nb); /* before PyType_Ready */
int mod_ops_add_functions(PyObject *module);
/* A C-contiguous copy of a on its device, in dtype (NULL: a's). */
PyObject *mod_ops_copy(mod_array *a, PyObject *dtype);

/* ---- mod_matmul.c: matmul and @ (a tiled JIT kernel) ---- */
int mod_matmul_add_functions(PyObject *module); /* offload.matmul */
/* ndarray's nb_matrix_multiply: a @ b with an offload array on either side. */
PyObject *mod_matmul_operator(PyObject *a, PyObject *b);

/* ---- mod_reduce.c: sum prod min max mean argmin argmax ----
 * Functions offload.<name>(a, axis=None, ...) and the ndarray methods of the
 * same names (in mod_array.c's table: self, args, kwargs as NumPy's). */
int mod_reduce_add_functions(PyObject *module);
PyObject *mod_reduce_method_sum(PyObject *x, PyObject *args, PyObject *kw);
PyObject *mod_reduce_method_prod(PyObject *x, PyObject *args, PyObject *kw);
PyObject *mod_reduce_method_min(PyObject *x, PyObject *args, PyObject *kw);
PyObject *mod_reduce_method_max(PyObject *x, PyObject *args, PyObject *kw);
PyObject *mod_reduce_method_mean(PyObject *x, PyObject *args, PyObject *kw);
PyObject *mod_reduce_method_argmin(PyObject *x, PyObject *args, PyObject *kw);
PyObject *mod_reduce_method_argmax(PyObject *x, PyObject *args, PyObject *kw);

#endif
