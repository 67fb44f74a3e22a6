/* manip: the array API's manipulation functions (concat, stack, flip,
 * roll, repeat, tile, ...), views where they can be and copies by the
 * elementwise room where not; repeat's kernels are module/kernels/manip.py.
 * Callers: mod_lib.c. Stands on elementwise/ and kit/. */
#ifndef MOD_MANIP_H
#define MOD_MANIP_H

#include "lib/kit/mod_kit.h"

int mod_manip_add_functions(PyObject *module); /* concat stack flip ... */

#endif
