/* mod_kernel: device kernels in the offload module -- shared by mod_kernel.c
 * (Kernel, DeviceFunc, compile, launch) and mod_launch.c (Range, Event). */
#ifndef MOD_KERNEL_H
#define MOD_KERNEL_H

#include "mod_module.h"

typedef struct {
    PyObject_HEAD int ndim;
    Py_ssize_t size[3];
} mod_range;

extern PyTypeObject mod_RangeType;

/* Takes ev; an Event object that waits on it. */
PyObject *mod_event_new(ofl_event *ev, const char *kernel_name);

#endif
