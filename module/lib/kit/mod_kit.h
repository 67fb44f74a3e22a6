/* kit: what every room of the array library stands on -- the argument
 * checks and errors every function shares (offload arrays only, NumPy's
 * AxisError), a dtype's kind, calls back into the namespace's own functions,
 * submodules, and at exit the wait for the devices' queued work.
 * Callers: lib's rooms. Stands on launch/ and core/. */
#ifndef MOD_KIT_H
#define MOD_KIT_H

#include "launch/mod_launch.h"

int mod_kit_init(void); /* at import: registers the at-exit wait */

/* b as Python's True or False, borrowed: a bool argument of a library
 * kernel's launch (mod_library_launch's "O"). */
static inline PyObject *mod_kit_bool(bool b) { return b ? Py_True : Py_False; }

/* A canonical dtype's numpy.dtype.kind: 'b' 'i' 'u' 'f' 'c'. */
char mod_kit_kind(PyObject *dtype);
static inline bool mod_kit_is_complex(PyObject *dtype) { return mod_kit_kind(dtype) == 'c'; }
/* Floating or complex: NaN is a value, and a mean divides in its own kind. */
static inline bool mod_kit_is_inexact(PyObject *dtype) {
    char k = mod_kit_kind(dtype);
    return k == 'f' || k == 'c';
}

/* ---- layouts ---- */

/* The number of elements of a shape. */
Py_ssize_t mod_kit_size(int nd, const Py_ssize_t *shape);
/* C-order strides of a shape (a dimension of 0 counts as 1, as NumPy's do). */
void mod_kit_c_strides(int nd, const Py_ssize_t *shape, Py_ssize_t itemsize, Py_ssize_t *strides);
/* NumPy's broadcast of the shapes of a[0..n) (NULL entries skipped) into
 * (*nd, shape). 0, or 1 + the index of the first array that does not fit
 * the shape of those before it, with no exception set: NumPy's message
 * differs by context, so the caller writes it. */
int mod_kit_broadcast(mod_array *const *a, int n, int *nd, Py_ssize_t *shape);

/* ---- arguments and errors ---- */

/* x as an offload array for offload.<fn>, or NULL with a TypeError that
 * says to call offload.asarray on host data (never copied behind the back). */
mod_array *mod_kit_array_arg(PyObject *x, const char *fn);

/* numpy.exceptions.AxisError(axis, nd) -- NumPy's own class (a ValueError
 * and an IndexError) and message, prefix (or NULL) starting it; returns -1. */
int mod_kit_axis_error(Py_ssize_t axis, int nd, const char *prefix);
/* The axis o names in an nd-dimensional array, in [0, nd): NumPy's
 * TypeError for a non-integer, mod_kit_axis_error out of range. */
int mod_kit_axis(PyObject *o, int nd, const char *prefix, int *out);

/* offload.<name>(*args, **kw), for rooms that compose the namespace's own
 * functions: args a new tuple and kw a new dict or NULL, both stolen (NULL
 * args, or an error already set: passed on, NULL). */
PyObject *mod_kit_call(const char *name, PyObject *args, PyObject *kw);

/* sub as offload.<name>: an attribute of module and a real submodule
 * (`import offload.<name>` finds it in sys.modules). 0 or -1. */
int mod_kit_add_submodule(PyObject *module, const char *name, PyObject *sub);

#endif
