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

/* ---- mod_kernel.c for mod_loops.c: prange loops are kernels too ---- */
#include "jit.h"

/* A Kernel over an already parsed function (takes jf); pyfunc names it. */
PyObject *mod_kernel_from_parsed(PyObject *pyfunc, jit_func *jf);
/* Launches as kernel[range](*args) does; an Event when want_event, else None. */
PyObject *mod_kernel_launch(PyObject *kernel, const mod_shape *range, PyObject *const *args, Py_ssize_t nargs,
                            bool want_event);
/* The same, with index checks when boundscheck (the kernel's own setting
 * counts too): waits for the launch; an index out of range is an IndexError. */
PyObject *mod_kernel_launch_checked(PyObject *kernel, const mod_shape *range, PyObject *const *args,
                                    Py_ssize_t nargs, bool want_event, bool boundscheck);
/* The module's own kernels (array operations): indices right by
 * construction, so never checked unless a launch asks. */
void mod_kernel_trusted(PyObject *kernel);
/* Whether kernels that do not say check indices on dev: OFFLOAD_BOUNDSCHECK
 * (0/1), else yes on devices in this process (ofl_device_in_process). */
bool mod_default_boundscheck(ofl_device *dev);
jit_func *mod_kernel_parsed(PyObject *kernel); /* borrowed; NULL before its first compile */
/* jit_var_type on the kernel's parsed function, under the lock its compiles
 * take (other threads may be compiling it); var must outlive the call. */
int mod_kernel_var_type(PyObject *kernel, const jit_type *args, int nargs, int range_ndim, const char *var,
                        jit_type *out, jit_error *err);
/* The JIT type of a kernel argument (argument i, for messages). */
int mod_kernel_arg_type(PyObject *o, int i, jit_type *t);
/* A jit_error as offload.CompileError (or DeviceError for internal ones). */
void mod_raise_jit(const jit_error *err);

#endif
