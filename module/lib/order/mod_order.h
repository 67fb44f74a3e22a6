/* order: what works from the order of elements or by their positions --
 * the radix engine and its clients (mod_sort.c: sort, argsort,
 * searchsorted, unique_*; docs/radix-sort.md) and advanced indexing
 * (mod_index.c: masks, nonzero, take, put, a[key] with arrays). Device code:
 * module/kernels/sort.py and index.py. Callers: mod_lib.c. Stands on
 * reduce/ (its scans), elementwise/ and kit/. */
#ifndef MOD_ORDER_H
#define MOD_ORDER_H

#include "lib/kit/mod_kit.h"

int mod_sort_add_functions(PyObject *module);  /* sort argsort searchsorted unique_* */
int mod_index_add_functions(PyObject *module); /* take take_along_axis nonzero */
/* a[key] and a[key] = value where key holds arrays, lists or booleans
 * (NumPy's advanced indexing); ndarray's, through mod_lib_array_kernels. */
PyObject *mod_index_getitem(mod_array *a, PyObject *key);
int mod_index_setitem(mod_array *a, PyObject *key, PyObject *value);

#endif
