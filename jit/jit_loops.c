/* jit_loops: prange loops of a cell or function as loop kernels. */
#include "jit.h"
