/* linalg: matmul and @ (mod_matmul.c: vendor BLAS on CUDA devices, else
 * module/kernels/matmul.py's tiled and CPU kernels), the main namespace's
 * other linear algebra (mod_linalg.c: matrix_transpose, tensordot, vecdot),
 * and the linalg and fft extensions (mod_la.c, mod_fft.c) with the vendor
 * libraries under them (mod_vendor.c). Callers: mod_lib.c. Stands on
 * reduce/, elementwise/ and kit/. */
#ifndef MOD_LINALG_H
#define MOD_LINALG_H

#include "lib/kit/mod_kit.h"

int mod_matmul_add_functions(PyObject *module); /* offload.matmul */
/* ndarray's nb_matrix_multiply: a @ b with an offload array on either side. */
PyObject *mod_matmul_operator(PyObject *a, PyObject *b);
/* matrix_transpose, tensordot, vecdot (the main namespace's) */
int mod_linalg_add_functions(PyObject *module);

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
