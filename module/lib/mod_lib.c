/* What lib gives the rest of the module: ndarray's operations that run its
 * kernels (handed to core at import, so that core never names lib) and its
 * functions in the offload namespace. */
#include "mod_lib.h"

#include "lib/elementwise/mod_elementwise.h"
#include "lib/linalg/mod_linalg.h"
#include "lib/manip/mod_manip.h"
#include "lib/namespace/mod_namespace.h"
#include "lib/order/mod_order.h"
#include "lib/reduce/mod_reduce.h"

static void fill_slots(PyTypeObject *type) {
    mod_ops_fill_slots(type);
    type->tp_as_number->nb_matrix_multiply = mod_matmul_operator;
}

const mod_array_kernels mod_lib_array_kernels = {
    .fill_slots = fill_slots,
    .methods = mod_reduce_methods,
    .copy = mod_ops_copy,
    .getitem = mod_index_getitem,
    .setitem = mod_index_setitem,
    .assign = mod_namespace_assign,
};

int mod_lib_add_functions(PyObject *module) {
    if (mod_kit_init() < 0 || mod_matmul_add_functions(module) < 0 ||
        mod_ops_add_functions(module) < 0 || mod_reduce_add_functions(module) < 0 ||
        mod_namespace_add_functions(module) < 0 || mod_manip_add_functions(module) < 0 ||
        mod_stats_add_functions(module) < 0 || mod_index_add_functions(module) < 0 ||
        mod_sort_add_functions(module) < 0 || mod_linalg_add_functions(module) < 0 ||
        mod_la_add_module(module) < 0 || mod_fft_add_module(module) < 0 ||
        mod_dispatch_init(module) < 0)
        return -1;
    return 0;
}
