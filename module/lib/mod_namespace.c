/* mod_namespace: the array API namespace itself: __array_namespace_info__, data type functions, constants, creation functions that need kernels, ndarray attributes (issue 22). To be written. */
#include "mod_lib.h"

int mod_namespace_add_functions(PyObject *module) {
    (void)module;
    return 0;
}
