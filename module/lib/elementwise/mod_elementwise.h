/* elementwise: NumPy's element-wise operators and functions on offload
 * arrays (mod_ops.c plans them; module/kernels/elementwise.py is their
 * device code), and the strided copies and casts every other room uses.
 * Callers: the rooms above it and mod_lib.c. Stands on kit/. */
#ifndef MOD_ELEMENTWISE_H
#define MOD_ELEMENTWISE_H

#include "lib/kit/mod_kit.h"

/* ndarray's arithmetic slots and tp_richcompare (before PyType_Ready). */
void mod_ops_fill_slots(PyTypeObject *type);
int mod_ops_add_functions(PyObject *module);
/* A C-contiguous copy of a on its device, in dtype (NULL: a's). */
PyObject *mod_ops_copy(mod_array *a, PyObject *dtype);
/* dst[...] = src by kernel on dst's device: src an offload array there
 * (broadcast to dst's shape, cast by NumPy's same_kind rule, overlap
 * handled) or a Python/NumPy scalar. 0, or -1 with an exception. */
int mod_ops_copy_into(mod_array *dst, PyObject *src);

#endif
