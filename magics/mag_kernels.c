/* mag_kernels: %kernels, the table of compiled kernels. */
#include "mag_impl.h"
