/* mod_loops: running prange loops (%%offload cells, @offload.jit). */
#include "mod_kernel.h"
