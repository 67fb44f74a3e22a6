/* lib: the array library offload writes for itself, the array API 2024.12
 * namespace -- element-wise operators and functions (mod_ops), reductions
 * (mod_reduce), statistics and scans (mod_stats), matmul (mod_matmul) and the
 * rest of the main namespace's linear algebra (mod_linalg), the linalg and fft
 * extensions (mod_la, mod_fft: NumPy's LAPACK and pocketfft on CPU devices,
 * mod_vendor's libraries on CUDA devices), manipulation
 * (mod_manip), advanced indexing (mod_index), sorting and sets (mod_sort),
 * the namespace's own functions and creation (mod_namespace), and NumPy's
 * dispatch to all of them (mod_dispatch) -- each a Python kernel text that
 * mod_gen compiles through launch/ like a user's @offload.kernel, or a
 * composition of those. ndarray's number slots, comparisons, indexing,
 * assignment and strided copies are lib's: mod_lib.c hands them to core as
 * mod_lib_array_kernels. Callers: module/mod_module.c only. Stands on
 * launch/ and core/; within lib, mod_gen.c is the floor every room stands on. */
#ifndef MOD_LIB_H
#define MOD_LIB_H

#include "launch/mod_launch.h"

/* b as Python's True or False, borrowed: a bool argument of a library
 * kernel's launch (mod_library_launch's "O"). */
static inline PyObject *mod_lib_bool(bool b) { return b ? Py_True : Py_False; }

/* ---- mod_lib.c: the room's face ---- */

extern const mod_array_kernels mod_lib_array_kernels; /* for mod_array_init */
int mod_lib_add_functions(PyObject *module); /* offload.add ... offload.sum ... offload.matmul */

/* ---- mod_gen.c: kernels the module writes as text (mod_namespace's last) ----
 * source: Python text defining `def name(item, ...)`, with the globals np
 * (numpy), math and ol (offload). Compiled by the JIT as a user's kernel,
 * once per text; the Kernel is kept for the process. The library's kernels
 * are module/kernels/ (mod_library), where these are to go too. */
int mod_gen_init(void);
PyObject *mod_gen_kernel_borrowed(const char *name, const char *source);
/* Launches that kernel over Range(size[0..ndim-1]) with args; None or NULL. */
PyObject *mod_gen_launch(const char *name, const char *source, int ndim, const Py_ssize_t *size,
                         PyObject *const *args, Py_ssize_t nargs);
/* x as an offload array for offload.<fn>, or NULL with a TypeError that
 * says to call offload.asarray on host data (never copied behind the back). */
mod_array *mod_lib_array_arg(PyObject *x, const char *fn);

/* offload.<name>(*args, **kw), for rooms that compose the namespace's own
 * functions: args a new tuple and kw a new dict or NULL, both stolen (NULL
 * args, or an error already set: passed on, NULL). */
PyObject *mod_lib_call(const char *name, PyObject *args, PyObject *kw);

/* sub as offload.<name>: an attribute of module and a real submodule
 * (`import offload.<name>` finds it in sys.modules). 0 or -1. */
int mod_lib_add_submodule(PyObject *module, const char *name, PyObject *sub);

/* numpy.exceptions.AxisError(axis, nd) -- NumPy's own class (a ValueError
 * and an IndexError) and message, prefix (or NULL) starting it; returns -1. */
int mod_lib_axis_error(Py_ssize_t axis, int nd, const char *prefix);
/* The axis o names in an nd-dimensional array, in [0, nd): NumPy's
 * TypeError for a non-integer, mod_lib_axis_error out of range. */
int mod_lib_axis(PyObject *o, int nd, const char *prefix, int *out);

/* ---- mod_ops.c: element-wise operators and functions ---- */

/* ndarray's arithmetic slots and tp_richcompare (before PyType_Ready). */
void mod_ops_fill_slots(PyTypeObject *type);
int mod_ops_add_functions(PyObject *module);
/* A C-contiguous copy of a on its device, in dtype (NULL: a's). */
PyObject *mod_ops_copy(mod_array *a, PyObject *dtype);
/* dst[...] = src by kernel on dst's device: src an offload array there
 * (broadcast to dst's shape, cast by NumPy's same_kind rule, overlap
 * handled) or a Python/NumPy scalar. 0, or -1 with an exception. */
int mod_ops_copy_into(mod_array *dst, PyObject *src);

/* ---- mod_matmul.c: matmul and @ (a tiled kernel) ---- */

int mod_matmul_add_functions(PyObject *module); /* offload.matmul */
/* ndarray's nb_matrix_multiply: a @ b with an offload array on either side. */
PyObject *mod_matmul_operator(PyObject *a, PyObject *b);

/* ---- mod_reduce.c: sum prod min max mean argmin argmax any all count_nonzero ---- */

int mod_reduce_add_functions(PyObject *module); /* offload.<name>(a, axis=None, ...) */
extern PyMethodDef mod_reduce_methods[];        /* the ndarray methods of the same names */
/* offload.<name>(x, axis=axis, dtype=dtype, keepdims=keepdims) for the other
 * rooms (mod_stats: var is a mean and a sum); dtype may be NULL. */
PyObject *mod_reduce_named(const char *name, PyObject *x, PyObject *axis, PyObject *dtype,
                           bool keepdims);

/* ---- the array API's other rooms (issue 22): each adds its functions to
 * the offload namespace (and its methods or attributes to ndarray) ---- */

int mod_namespace_add_functions(PyObject *module); /* mod_namespace.c: info, dtypes, creation */
int mod_manip_add_functions(PyObject *module);     /* mod_manip.c: concat stack flip ... */
int mod_stats_add_functions(PyObject *module);     /* mod_stats.c: std var cumulative_* diff */
/* mod_stats.c: a[0..n) (int32 or int64, contiguous) becomes its exclusive
 * prefix sums, in place, by the scans' blocks form (made for GPUs). */
int mod_lib_exclusive_scan(mod_array *a, Py_ssize_t n);
int mod_index_add_functions(PyObject *module); /* mod_index.c: take take_along_axis nonzero */
int mod_sort_add_functions(PyObject *module);  /* mod_sort.c: sort argsort searchsorted unique_* */
/* mod_linalg.c: matrix_transpose, tensordot, vecdot (the main namespace's) */
int mod_linalg_add_functions(PyObject *module);
/* mod_dispatch.c: ndarray's __array_ufunc__ and __array_function__, which
 * send NumPy's calls to module's functions of the same names. */
int mod_dispatch_init(PyObject *module);
/* mod_index.c: a[key] and a[key] = value where key holds arrays, lists or
 * booleans (NumPy's advanced indexing); ndarray's, through mod_lib_array_kernels. */
PyObject *mod_index_getitem(mod_array *a, PyObject *key);
int mod_index_setitem(mod_array *a, PyObject *key, PyObject *value);
/* mod_namespace.c: dst[...] = src by kernel (fills and assignments);
 * ndarray's, through mod_lib_array_kernels.assign. */
int mod_namespace_assign(mod_array *dst, PyObject *src);

/* ---- mod_la.c, mod_fft.c: offload.linalg and offload.fft (issue 23) ----
 * CPU devices whose memory the host addresses run LAPACK and pocketfft
 * (NumPy's) on their buffers; CUDA devices run mod_vendor's; any other
 * device gets a NotImplementedError naming it. */
int mod_la_add_module(PyObject *module);  /* offload.linalg, a submodule */
int mod_fft_add_module(PyObject *module); /* offload.fft, a submodule */
/* offload.linalg.LinAlgError (a numpy.linalg.LinAlgError), borrowed; set
 * by mod_la_add_module before any linalg call can run. */
extern PyObject *mod_la_error;
/* Which of those serves dev: MOD_LA_HOST (an OpenCL CPU device), MOD_LA_VENDOR
 * (a CUDA device), or MOD_LA_NONE with a NotImplementedError naming dev and
 * offload.<fn>. A test switch, OFFLOAD_LA_PATH=vendor, sends OpenCL CPU
 * devices down the vendor path too, with NumPy standing in for mod_vendor
 * (below), so that the compositions around its calls run where CI runs. */
enum { MOD_LA_NONE, MOD_LA_HOST, MOD_LA_VENDOR };
int mod_la_path(ofl_device *dev, const char *fn);
/* mod_vendor_fft on a CUDA device; NumPy's, with its contract, elsewhere. */
PyObject *mod_la_vendor_fft(mod_array *x, int rank, int kind, bool inverse, Py_ssize_t last_n);
/* <module>.<name>(*args, **kw) -- NumPy's ("numpy.linalg", "numpy.fft") --
 * on host copies of the offload arrays among args and kw's values (all on
 * dev, else ExecutionPlacementError), its array results (alone or in
 * tuples and named tuples, rebuilt as the same type) copied to dev. NumPy's
 * LinAlgError comes out as mod_la_error. kw may be NULL. */
PyObject *mod_la_host_call(ofl_device *dev, const char *module, const char *name, PyObject *args,
                           PyObject *kw);

/* ---- mod_vendor.c: cuBLAS, cuSOLVER, cuFFT on CUDA devices ----
 * Called for arrays on a CUDA device only. Inputs are C-contiguous stacks
 * of matrices (..., m, n) -- any number of leading batch dimensions, none
 * included -- of one dtype among float32, float64, complex64, complex128,
 * all on one device (the caller promotes, broadcasts and copies). Results
 * are new C-contiguous arrays on that device, or NULL with an exception:
 * mod_la_error for singular or not positive-definite input, a RuntimeError
 * naming the pip wheel (nvidia-cusolver-cu12, ...) where the library is
 * absent. Nothing here waits for the device except where a result's
 * validity must be read back (info codes). */
bool mod_vendor_blas_ready(ofl_device *dev); /* cuBLAS loaded for dev (loads at first call) */
/* c = a @ b: a (..., m, k), b (..., k, n) with equal batch shapes. */
PyObject *mod_vendor_matmul(mod_array *a, mod_array *b);
PyObject *mod_vendor_solve(mod_array *a, mod_array *b); /* a (..., n, n), b (..., n, k) */
PyObject *mod_vendor_inv(mod_array *a);
PyObject *mod_vendor_slogdet(mod_array *a); /* (sign, logabsdet), each of shape (...) */
PyObject *mod_vendor_cholesky(mod_array *a, bool upper);
PyObject *mod_vendor_eigh(mod_array *a, bool vectors); /* (w, v) or w; w real, ascending */
/* (U, S, Vh), or S when !uv; a (..., m, n), S real, descending */
PyObject *mod_vendor_svd(mod_array *a, bool full_matrices, bool uv);
PyObject *mod_vendor_qr(mod_array *a, bool complete); /* (Q, R) */
/* Unnormalised transforms over the last rank (1-3) dimensions of x, batched
 * over the others: C2C (x complex; inverse: the sign +1), R2C (x real; the
 * last dimension of the result n/2+1), C2R (x complex, last dimension
 * last_n/2+1; the result's last dimension last_n). */
enum { MOD_FFT_C2C, MOD_FFT_R2C, MOD_FFT_C2R };
PyObject *mod_vendor_fft(mod_array *x, int rank, int kind, bool inverse, Py_ssize_t last_n);

#endif
