/* mod_kernel: device kernels in the offload module -- shared by mod_kernel.c
 * (Kernel, DeviceFunc, compile, launch) and mod_launch.c (Range, Event). */
#ifndef MOD_KERNEL_H
#define MOD_KERNEL_H

#include "mod_module.h"

typedef struct {
    PyObject_HEAD int ndim;
    Py_ssize_t size[3];
} mod_range;

extern PyTypeObject mod_RangeType, mod_NdRangeType;

/* What a launch runs over, in the user's order (the last dimension fastest):
 * a Range, or an NdRange (nd, with its work-group size in local). */
typedef struct {
    int ndim;
    bool nd;
    Py_ssize_t size[3], local[3];
} mod_shape;

/* A Range, an NdRange, or what Range() takes (an int, a tuple) as a shape;
 * TypeError/ValueError otherwise. */
int mod_shape_of(PyObject *o, mod_shape *out);
PyObject *mod_shape_repr(const mod_shape *s);

/* Takes ev; an Event object that waits on it. */
PyObject *mod_event_new(ofl_event *ev, const char *kernel_name);

#endif
