/* namespace: the array API namespace's own functions and creation
 * (mod_namespace.c: info, dtypes, empty/zeros/full/eye/linspace/tril/triu,
 * asarray's device side; module/kernels/creation.py) and NumPy's dispatch
 * (mod_dispatch.c: ndarray's __array_ufunc__ and __array_function__, which
 * send NumPy's calls to the offload functions of the same names).
 * Callers: mod_lib.c. Stands on elementwise/ and kit/. */
#ifndef MOD_NAMESPACE_H
#define MOD_NAMESPACE_H

#include "lib/kit/mod_kit.h"

int mod_namespace_add_functions(PyObject *module); /* info, dtypes, creation */
/* dst[...] = src by kernel (fills and assignments); ndarray's, through
 * mod_lib_array_kernels.assign. */
int mod_namespace_assign(mod_array *dst, PyObject *src);
int mod_dispatch_init(PyObject *module);

#endif
