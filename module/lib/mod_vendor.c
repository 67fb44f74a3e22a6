/* mod_vendor: cuBLAS, cuSOLVER and cuFFT behind offload's arrays on CUDA
 * devices (issue 23). Work in progress: every entry raises until the
 * libraries' loader lands. */
#include "mod_lib.h"

static PyObject *not_yet(const char *what) {
    PyErr_Format(PyExc_NotImplementedError, "%s on a CUDA device is not available yet", what);
    return NULL;
}

bool mod_vendor_blas_ready(ofl_device *dev) {
    (void)dev;
    return false;
}
PyObject *mod_vendor_matmul(mod_array *a, mod_array *b) {
    (void)a, (void)b;
    return not_yet("matmul");
}
PyObject *mod_vendor_solve(mod_array *a, mod_array *b) {
    (void)a, (void)b;
    return not_yet("solve");
}
PyObject *mod_vendor_inv(mod_array *a) {
    (void)a;
    return not_yet("inv");
}
PyObject *mod_vendor_slogdet(mod_array *a) {
    (void)a;
    return not_yet("slogdet");
}
PyObject *mod_vendor_cholesky(mod_array *a, bool upper) {
    (void)a, (void)upper;
    return not_yet("cholesky");
}
PyObject *mod_vendor_eigh(mod_array *a, bool vectors) {
    (void)a, (void)vectors;
    return not_yet("eigh");
}
PyObject *mod_vendor_svd(mod_array *a, bool full_matrices, bool uv) {
    (void)a, (void)full_matrices, (void)uv;
    return not_yet("svd");
}
PyObject *mod_vendor_qr(mod_array *a, bool complete) {
    (void)a, (void)complete;
    return not_yet("qr");
}
PyObject *mod_vendor_fft(mod_array *x, int rank, int kind, bool inverse, Py_ssize_t last_n) {
    (void)x, (void)rank, (void)kind, (void)inverse, (void)last_n;
    return not_yet("fft");
}
