/* mag_offload: the %%offload cell magic. */
#include "mag_impl.h"
