/* mod_manip: manipulation functions of the array API (issue 22). To be written. */
#include "mod_lib.h"

int mod_manip_add_functions(PyObject *module) {
    (void)module;
    return 0;
}
