/* lib: the array library, the array API 2024.12 namespace on offload
 * arrays, in rooms with a header each (docs/architecture.md), higher first:
 * namespace/ (the namespace's own functions, creation, NumPy's dispatch),
 * linalg/ (matmul, linalg, fft, the vendor libraries), order/ (sorting,
 * sets, advanced indexing), reduce/ (reductions, statistics, scans), manip/
 * (manipulation), elementwise/ (operators, functions, copies), and kit/,
 * which they all stand on. Each plans its work in C and launches its device
 * code, kernels in the kernel language (module/kernels/), by name.
 * This file is the library's face: ndarray's number slots, comparisons,
 * indexing, assignment and strided copies, handed to core as
 * mod_lib_array_kernels, and the namespace's functions.
 * Callers: module/mod_module.c only. Stands on every room, launch/ and core/. */
#ifndef MOD_LIB_H
#define MOD_LIB_H

#include "launch/mod_launch.h"

extern const mod_array_kernels mod_lib_array_kernels; /* for mod_array_init */
int mod_lib_add_functions(PyObject *module); /* offload.add ... offload.sum ... offload.matmul */

#endif
