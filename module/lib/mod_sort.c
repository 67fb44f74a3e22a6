/* mod_sort: sorting, searching and set functions: sort argsort searchsorted unique_* (issue 22). To be written. */
#include "mod_lib.h"

int mod_sort_add_functions(PyObject *module) {
    (void)module;
    return 0;
}
