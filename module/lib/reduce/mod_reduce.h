/* reduce: reductions (mod_reduce.c: sum prod min max mean argmin argmax any
 * all count_nonzero, every form in docs/reductions.md), and the statistics
 * and scans built on them (mod_stats.c: std var cumulative_* diff). Device
 * code: module/kernels/reduce.py and scan.py. Callers: the rooms above it
 * and mod_lib.c. Stands on elementwise/ and kit/. */
#ifndef MOD_REDUCE_H
#define MOD_REDUCE_H

#include "lib/kit/mod_kit.h"

int mod_reduce_add_functions(PyObject *module); /* offload.<name>(a, axis=None, ...) */
extern PyMethodDef mod_reduce_methods[];        /* the ndarray methods of the same names */
/* offload.<name>(x, axis=axis, dtype=dtype, keepdims=keepdims) for the other
 * rooms (mod_stats: var is a mean and a sum); dtype may be NULL. */
PyObject *mod_reduce_named(const char *name, PyObject *x, PyObject *axis, PyObject *dtype,
                           bool keepdims);

int mod_stats_add_functions(PyObject *module); /* std var cumulative_* diff */
/* a[0..n) (int32 or int64, contiguous) becomes its exclusive prefix sums,
 * in place, by the scans' blocks form (made for GPUs). */
int mod_stats_exclusive_scan(mod_array *a, Py_ssize_t n);

#endif
