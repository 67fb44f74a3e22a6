/* mod_manip: the array API's manipulation functions (2024.12) in the offload
 * namespace, with NumPy's results, dtypes and errors -- broadcast_arrays
 * broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape
 * roll squeeze stack tile unstack -- and NumPy's names and conveniences
 * around them: concatenate transpose swapaxes ravel atleast_1d/2d/3d hstack
 * vstack. Added to the module by mod_lib_add_functions; ndarray's reshape
 * method is replaced by this file's (views wherever NumPy gives one).
 *
 * Where NumPy returns a view, so does this: a new layout over the same
 * device memory (mod_array_view), so writing through it writes the input.
 * Where NumPy copies, the result is a new C-contiguous array on the inputs'
 * device, filled by kernels there: mod_ops_copy_into copies each piece into
 * a view of the result (one launch a piece; tile and repeat by an integer
 * each take one launch, their source seen through a stride-0 view), and
 * repeat by an array of counts runs kernels/manip.py's (a blocked scan of the
 * counts, then a gather). Array data never goes through the host; repeat
 * reads back one count, the result's length.
 *
 * Inputs must be offload arrays on one device: NumPy arrays and lists raise
 * TypeError (no hidden copies), two devices ExecutionPlacementError. */
#include "lib/manip/mod_manip.h"
#include "lib/elementwise/mod_elementwise.h"

#include <stdio.h>
#include <string.h>

/* ---- arguments ---- */

/* The arrays of a sequence argument, all on one device: a new list (the
 * items borrowed from it through *items), or NULL with an exception. */
static PyObject *array_seq(PyObject *seq, const char *fn, mod_array ***items, Py_ssize_t *n) {
    if (mod_array_check(seq) || mod_is_numpy_array(seq) || !PySequence_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "offload.%s: expected a sequence of offload arrays, got %s",
                     fn, Py_TYPE(seq)->tp_name);
        return NULL;
    }
    PyObject *list = PySequence_List(seq);
    if (!list) return NULL;
    *n = PyList_GET_SIZE(list);
    *items = (mod_array **)PySequence_Fast_ITEMS(list);
    ofl_device *dev = NULL;
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (!mod_kit_array_arg(PyList_GET_ITEM(list, i), fn)) goto fail;
        ofl_device *d = mod_array_device((*items)[i]);
        if (!dev) dev = d;
        if (d != dev) {
            PyErr_Format(mod_ExecutionPlacementError,
                         "%s: arrays live on two devices: array 0 on %s and array %zd on %s; move "
                         "one with .to_device(...)",
                         fn, ofl_device_get_info(dev)->filter, i, ofl_device_get_info(d)->filter);
            goto fail;
        }
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* An axis in [-nd, nd) as a non-negative index; a bool or float is a
 * TypeError. prefix (or NULL) starts the AxisError's message, as NumPy's. */
static int axis_in(PyObject *o, int nd, int *out, const char *prefix) {
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "an axis must be an integer, not %s", Py_TYPE(o)->tp_name);
        return -1;
    }
    return mod_kit_axis(o, nd, prefix, out);
}

static int one_axis(PyObject *o, int nd, int *out) { return axis_in(o, nd, out, NULL); }

/* An integer or a sequence of them as axes of an nd-dimensional array into
 * axes[0..*n-1]; a repeat raises ValueError(dup) unless dup is NULL. */
static int axis_list(PyObject *o, int nd, int *axes, int *n, const char *dup, const char *prefix) {
    if (PyIndex_Check(o) || PyBool_Check(o)) {
        *n = 1;
        return axis_in(o, nd, axes, prefix);
    }
    PyObject *seq = PySequence_Fast(o, "axis must be an integer or a tuple of integers");
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (k > MOD_MAXDIMS) {
        PyErr_SetString(PyExc_ValueError, "too many axes");
        rc = -1;
    }
    for (Py_ssize_t i = 0; i < k && rc == 0; i++) {
        rc = axis_in(PySequence_Fast_GET_ITEM(seq, i), nd, &axes[i], prefix);
        for (Py_ssize_t j = 0; j < i && rc == 0 && dup; j++)
            if (axes[j] == axes[i]) {
                PyErr_SetString(PyExc_ValueError, dup);
                rc = -1;
            }
    }
    Py_DECREF(seq);
    *n = (int)k;
    return rc;
}

static PyObject *view(mod_array *a, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides) {
    return mod_array_view(a, nd, shape, strides, a->offset);
}

/* Puts item (new, or NULL for an error) into t[i]; clears t on an error. */
static void tuple_put(PyObject **t, Py_ssize_t i, PyObject *item) {
    if (!item) Py_CLEAR(*t);
    if (*t)
        PyTuple_SET_ITEM(*t, i, item);
    else
        Py_XDECREF(item);
}

/* A shape as NumPy's messages write it: "(2,3,4)", "(3,)". */
static PyObject *compact_shape(int nd, const Py_ssize_t *shape) {
    PyObject *t = mod_int_tuple(nd, shape), *r = t ? PyObject_Repr(t) : NULL;
    Py_XDECREF(t);
    if (r) Py_SETREF(r, PyObject_CallMethod(r, "replace", "ss", " ", ""));
    return r;
}

/* ---- views ---- */

/* x seen with the shape broadcast to (nd, shape): NumPy's rules, stride 0
 * where x's dimension is 1 (or absent) and the target's is not. */
static PyObject *broadcast_view(mod_array *x, int nd, const Py_ssize_t *shape) {
    Py_ssize_t strides[MOD_MAXDIMS];
    for (int d = 0; d < nd; d++)
        if (shape[d] < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "all elements of broadcast shape must be non-negative");
            return NULL;
        }
    bool ok = nd >= x->nd;
    for (int d = 0; d < nd && ok; d++) {
        int xd = d - (nd - x->nd);
        if (xd < 0)
            strides[d] = 0;
        else if (x->shape[xd] == shape[d])
            strides[d] = x->strides[xd];
        else if (x->shape[xd] == 1)
            strides[d] = 0;
        else
            ok = false;
    }
    if (ok) return view(x, nd, shape, strides);
    if (nd < x->nd)
        PyErr_SetString(PyExc_ValueError,
                        "input operand has more dimensions than allowed by the axis remapping");
    else {
        PyObject *a = compact_shape(x->nd, x->shape), *b = compact_shape(nd, shape);
        if (a && b)
            PyErr_Format(PyExc_ValueError,
                         "operands could not be broadcast together with remapped shapes "
                         "[original->remapped]: %U  and requested shape %U",
                         a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    return NULL;
}

static PyObject *f_broadcast_to(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "shape", NULL};
    PyObject *x, *shape_arg;
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:broadcast_to", kwlist, &x, &shape_arg) ||
        !mod_kit_array_arg(x, "broadcast_to") || mod_parse_shape(shape_arg, &nd, shape) < 0)
        return NULL;
    return broadcast_view((mod_array *)x, nd, shape);
}

/* NumPy's broadcast shape of n arrays, or its ValueError. */
static int broadcast_shapes(mod_array **a, Py_ssize_t n, int *nd, Py_ssize_t *shape) {
    int bad = mod_kit_broadcast(a, (int)n, nd, shape);
    if (!bad) return 0;
    Py_ssize_t i = bad - 1, j = 0; /* j: the first array that set the dimension i misses */
    int back = 0;                  /* that dimension counted from the last */
    for (int d = 0; d < a[i]->nd && !back; d++) {
        Py_ssize_t m = a[i]->shape[d], s = shape[*nd - a[i]->nd + d];
        if (m != s && m != 1) back = a[i]->nd - d;
    }
    Py_ssize_t want = shape[*nd - back];
    while (j < i && (a[j]->nd < back || a[j]->shape[a[j]->nd - back] != want)) j++;
    PyObject *sa = mod_int_tuple(a[j]->nd, a[j]->shape), *sb = mod_int_tuple(a[i]->nd, a[i]->shape);
    if (sa && sb)
        PyErr_Format(PyExc_ValueError,
                     "shape mismatch: objects cannot be broadcast to a single shape.  "
                     "Mismatch is between arg %zd with shape %R and arg %zd with shape %R.",
                     j, sa, i, sb);
    Py_XDECREF(sa);
    Py_XDECREF(sb);
    return -1;
}

static PyObject *f_broadcast_arrays(PyObject *self, PyObject *args) {
    mod_array **a;
    Py_ssize_t n;
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS];
    PyObject *list = array_seq(args, "broadcast_arrays", &a, &n);
    if (!list) return NULL;
    PyObject *r = NULL;
    if (broadcast_shapes(a, n, &nd, shape) == 0) {
        r = PyTuple_New(n);
        for (Py_ssize_t i = 0; r && i < n; i++) tuple_put(&r, i, broadcast_view(a[i], nd, shape));
    }
    Py_DECREF(list);
    /* a list, as the array API 2024.12 says (NumPy 2 and the 2025.12 draft: a tuple) */
    PyObject *l = r ? PySequence_List(r) : NULL;
    Py_XDECREF(r);
    return l;
}

static PyObject *expand(mod_array *x, const int *axes, int k) {
    int nd = x->nd + k;
    if (nd > MOD_MAXDIMS)
        return PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
    bool added[MOD_MAXDIMS] = {false};
    for (int i = 0; i < k; i++) added[axes[i]] = true;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    /* a new axis gets the stride a C-contiguous array would have there, so
     * the view is contiguous exactly when x is */
    Py_ssize_t next = x->itemsize;
    for (int d = nd - 1, xd = x->nd - 1; d >= 0; d--) {
        if (added[d]) {
            shape[d] = 1, strides[d] = next;
        } else {
            shape[d] = x->shape[xd], strides[d] = x->strides[xd];
            next = x->strides[xd] * x->shape[xd];
            xd--;
        }
    }
    return view(x, nd, shape, strides);
}

static PyObject *f_expand_dims(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axis", NULL};
    PyObject *x, *axis = NULL;
    int axes[MOD_MAXDIMS], k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:expand_dims", kwlist, &x, &axis) ||
        !mod_kit_array_arg(x, "expand_dims"))
        return NULL;
    mod_array *a = (mod_array *)x;
    if (!axis) {
        axes[0] = 0, k = 1;
    } else {
        /* the axes count in the result's dimensions, so their number comes first */
        Py_ssize_t n = PyIndex_Check(axis) ? 1 : PyObject_Length(axis);
        if (n < 0) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError, "axis must be an integer or a tuple of integers");
        }
        if (a->nd + n > MOD_MAXDIMS)
            return PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
        if (axis_list(axis, a->nd + (int)n, axes, &k, "repeated axis", NULL) < 0) return NULL;
    }
    return expand(a, axes, k);
}

static PyObject *f_flip(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axis", NULL};
    PyObject *x, *axis = Py_None;
    int axes[MOD_MAXDIMS], k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:flip", kwlist, &x, &axis) ||
        !mod_kit_array_arg(x, "flip"))
        return NULL;
    mod_array *a = (mod_array *)x;
    if (axis == Py_None)
        for (k = 0; k < a->nd; k++) axes[k] = k;
    else if (axis_list(axis, a->nd, axes, &k, "repeated axis", NULL) < 0)
        return NULL;
    Py_ssize_t strides[MOD_MAXDIMS], offset = a->offset;
    memcpy(strides, a->strides, sizeof(Py_ssize_t) * (size_t)a->nd);
    for (int i = 0; i < k; i++) {
        int d = axes[i];
        if (a->shape[d] > 0) offset += (a->shape[d] - 1) * strides[d];
        strides[d] = -strides[d];
    }
    return mod_array_view(a, a->nd, a->shape, strides, offset);
}

/* x with its axes in the order perm (a permutation of 0..nd-1). */
static PyObject *permuted(mod_array *x, const int *perm) {
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    for (int d = 0; d < x->nd; d++) shape[d] = x->shape[perm[d]], strides[d] = x->strides[perm[d]];
    return view(x, x->nd, shape, strides);
}

static PyObject *permute(mod_array *x, PyObject *axes_arg) {
    int perm[MOD_MAXDIMS], k;
    if (axes_arg == Py_None) {
        for (int d = 0; d < x->nd; d++) perm[d] = x->nd - 1 - d;
        return permuted(x, perm);
    }
    Py_ssize_t n = PyIndex_Check(axes_arg) ? 1 : PyObject_Length(axes_arg);
    if (n < 0) return NULL;
    if (n != x->nd) return PyErr_Format(PyExc_ValueError, "axes don't match array");
    if (axis_list(axes_arg, x->nd, perm, &k, "repeated axis in transpose", NULL) < 0) return NULL;
    return permuted(x, perm);
}

static PyObject *f_permute_dims(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axes", NULL};
    PyObject *x, *axes;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:permute_dims", kwlist, &x, &axes) ||
        !mod_kit_array_arg(x, "permute_dims"))
        return NULL;
    if (axes == Py_None) return PyErr_Format(PyExc_TypeError, "permute_dims: axes must be a tuple");
    return permute((mod_array *)x, axes);
}

static PyObject *f_transpose(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "axes", NULL};
    PyObject *x, *axes = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:transpose", kwlist, &x, &axes) ||
        !mod_kit_array_arg(x, "transpose"))
        return NULL;
    return permute((mod_array *)x, axes);
}

static PyObject *f_swapaxes(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "axis1", "axis2", NULL};
    PyObject *x, *a1, *a2;
    int perm[MOD_MAXDIMS], i, j;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:swapaxes", kwlist, &x, &a1, &a2) ||
        !mod_kit_array_arg(x, "swapaxes"))
        return NULL;
    mod_array *a = (mod_array *)x;
    if (axis_in(a1, a->nd, &i, "axis1") < 0 || axis_in(a2, a->nd, &j, "axis2") < 0) return NULL;
    for (int d = 0; d < a->nd; d++) perm[d] = d;
    perm[i] = j, perm[j] = i;
    return permuted(a, perm);
}

static PyObject *f_moveaxis(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "", NULL};
    PyObject *x, *src_arg, *dst_arg;
    int src[MOD_MAXDIMS], dst[MOD_MAXDIMS], ns, nd_;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO:moveaxis", kwlist, &x, &src_arg, &dst_arg) ||
        !mod_kit_array_arg(x, "moveaxis"))
        return NULL;
    mod_array *a = (mod_array *)x;
    if (axis_list(src_arg, a->nd, src, &ns, "repeated axis in `source` argument", "source") < 0 ||
        axis_list(dst_arg, a->nd, dst, &nd_, "repeated axis in `destination` argument",
                  "destination") < 0)
        return NULL;
    if (ns != nd_)
        return PyErr_Format(PyExc_ValueError, "`source` and `destination` arguments must have "
                                              "the same number of elements");
    /* NumPy's: the axes not moved keep their order in the places left */
    int perm[MOD_MAXDIMS], placed[MOD_MAXDIMS];
    bool moved[MOD_MAXDIMS] = {false}, taken[MOD_MAXDIMS] = {false};
    for (int i = 0; i < ns; i++) {
        moved[src[i]] = taken[dst[i]] = true;
        perm[dst[i]] = src[i];
    }
    int k = 0;
    for (int d = 0; d < a->nd; d++)
        if (!moved[d]) placed[k++] = d;
    for (int d = 0, j = 0; d < a->nd; d++)
        if (!taken[d]) perm[d] = placed[j++];
    return permuted(a, perm);
}

static PyObject *f_squeeze(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axis", NULL};
    PyObject *x, *axis = Py_None;
    int axes[MOD_MAXDIMS], k;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:squeeze", kwlist, &x, &axis) ||
        !mod_kit_array_arg(x, "squeeze"))
        return NULL;
    mod_array *a = (mod_array *)x;
    bool drop[MOD_MAXDIMS] = {false};
    if (axis == Py_None) {
        for (int d = 0; d < a->nd; d++) drop[d] = a->shape[d] == 1;
    } else {
        if (axis_list(axis, a->nd, axes, &k, "duplicate value in 'axis'", NULL) < 0) return NULL;
        for (int i = 0; i < k; i++) {
            if (a->shape[axes[i]] != 1)
                return PyErr_Format(PyExc_ValueError, "cannot select an axis to squeeze out "
                                                      "which has size not equal to one");
            drop[axes[i]] = true;
        }
    }
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < a->nd; d++)
        if (!drop[d]) shape[nd] = a->shape[d], strides[nd++] = a->strides[d];
    return view(a, nd, shape, strides);
}

static PyObject *f_unstack(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axis", NULL};
    PyObject *x, *axis_arg = NULL;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:unstack", kwlist, &x, &axis_arg) ||
        !mod_kit_array_arg(x, "unstack"))
        return NULL;
    mod_array *a = (mod_array *)x;
    if (a->nd == 0) return PyErr_Format(PyExc_ValueError, "Input array must be at least 1-d.");
    /* "source": NumPy's message, from the moveaxis inside its unstack */
    if (axis_arg && axis_in(axis_arg, a->nd, &axis, "source") < 0) return NULL;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS], n = a->shape[axis];
    for (int d = 0, k = 0; d < a->nd; d++)
        if (d != axis) shape[k] = a->shape[d], strides[k++] = a->strides[d];
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        tuple_put(&t, i,
                  mod_array_view(a, a->nd - 1, shape, strides, a->offset + i * a->strides[axis]));
    }
    return t;
}

/* ---- reshape ---- */

/* Strides giving x the shape (nd, shape) without moving its elements, as
 * NumPy's _attempt_nocopy_reshape finds them (C order; x not empty): false
 * when a copy is needed. Runs of x's dimensions that are contiguous with one
 * another may be split or merged; size-1 dimensions are free. */
static bool nocopy_strides(const mod_array *x, int nd, const Py_ssize_t *shape,
                           Py_ssize_t *strides) {
    Py_ssize_t od[MOD_MAXDIMS], os[MOD_MAXDIMS];
    int ond = 0;
    for (int d = 0; d < x->nd; d++)
        if (x->shape[d] != 1) od[ond] = x->shape[d], os[ond++] = x->strides[d];
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nd && oi < ond) {
        Py_ssize_t np_ = shape[ni], op = od[oi];
        while (np_ != op) {
            if (np_ < op)
                np_ *= shape[nj++];
            else
                op *= od[oj++];
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (os[ok] != od[ok + 1] * os[ok + 1]) return false;
        strides[nj - 1] = os[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--) strides[nk - 1] = strides[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    Py_ssize_t last = ni >= 1 ? strides[ni - 1] : x->itemsize;
    for (int nk = ni; nk < nd; nk++) strides[nk] = last;
    return true;
}

/* A shape for x's size: one -1 is inferred; NumPy's errors. */
static int reshape_shape(const mod_array *x, int nd, Py_ssize_t *shape) {
    int unknown = -1;
    Py_ssize_t known = 1, size = mod_kit_size(x->nd, x->shape);
    for (int d = 0; d < nd; d++) {
        if (shape[d] == -1) {
            if (unknown >= 0) {
                PyErr_SetString(PyExc_ValueError, "can only specify one unknown dimension");
                return -1;
            }
            unknown = d;
        } else if (shape[d] < 0) {
            PyErr_SetString(PyExc_ValueError, "negative dimensions not allowed");
            return -1;
        } else {
            known *= shape[d];
        }
    }
    if (unknown < 0 ? known == size : known > 0 && size % known == 0) {
        if (unknown >= 0) shape[unknown] = size / known;
        return 0;
    }
    /* NumPy's wording: "(5,newaxis,7)", a leading newaxis left out */
    PyObject *parts = PyList_New(0);
    for (int d = unknown == 0 ? 1 : 0; parts && d < nd; d++) {
        PyObject *s =
            d == unknown ? PyUnicode_FromString("newaxis") : PyUnicode_FromFormat("%zd", shape[d]);
        if (!s || PyList_Append(parts, s) < 0) Py_CLEAR(parts);
        Py_XDECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(",");
    PyObject *joined = parts && sep ? PyUnicode_Join(sep, parts) : NULL;
    if (joined)
        PyErr_Format(PyExc_ValueError, "cannot reshape array of size %zd into shape (%U%s)", size,
                     joined, nd == 1 ? "," : "");
    Py_XDECREF(parts);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    return -1;
}

/* x in shape (nd, shape): a view where the layout allows (copy -1 or 0),
 * else a C-contiguous copy (copy -1 or 1; 0 raises). */
static PyObject *reshaped(mod_array *x, int nd, Py_ssize_t *shape, int copy) {
    Py_ssize_t strides[MOD_MAXDIMS];
    if (reshape_shape(x, nd, shape) < 0) return NULL;
    bool empty = mod_kit_size(nd, shape) == 0;
    if (copy != 1 && (empty || nocopy_strides(x, nd, shape, strides))) {
        if (empty) mod_kit_c_strides(nd, shape, x->itemsize, strides);
        return view(x, nd, shape, strides);
    }
    if (copy == 0)
        return PyErr_Format(PyExc_ValueError, "Unable to avoid creating a copy while reshaping.");
    mod_array *c = (mod_array *)mod_ops_copy(x, NULL);
    if (!c) return NULL;
    mod_kit_c_strides(nd, shape, x->itemsize, strides);
    PyObject *r = view(c, nd, shape, strides);
    Py_DECREF(c);
    return r;
}

static PyObject *f_reshape(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "shape", "copy", NULL};
    PyObject *x, *shape_arg, *copy_arg = Py_None;
    int nd, copy;
    Py_ssize_t shape[MOD_MAXDIMS];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:reshape", kwlist, &x, &shape_arg,
                                     &copy_arg) ||
        !mod_kit_array_arg(x, "reshape") || (copy = mod_parse_copy(copy_arg)) == -2 ||
        mod_parse_shape(shape_arg, &nd, shape) < 0)
        return NULL;
    return reshaped((mod_array *)x, nd, shape, copy);
}

/* ndarray.reshape(*shape, copy=None), NumPy's method: x.reshape(2, 3) or x.reshape((2, 3)). */
static PyObject *m_reshape(PyObject *x, PyObject *args, PyObject *kw) {
    PyObject *copy_arg = kw ? PyDict_GetItemString(kw, "copy") : NULL; /* borrowed */
    Py_ssize_t nkw = kw ? PyDict_GET_SIZE(kw) : 0;
    PyObject *order = kw ? PyDict_GetItemString(kw, "order") : NULL;
    if (nkw > (copy_arg != NULL) + (order != NULL))
        return PyErr_Format(PyExc_TypeError, "reshape() takes only the keywords copy and order");
    if (order && !(PyUnicode_Check(order) && PyUnicode_CompareWithASCIIString(order, "C") == 0))
        return PyErr_Format(PyExc_NotImplementedError, "reshape: only order='C' is supported");
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n == 0) return PyErr_Format(PyExc_TypeError, "reshape() missing required argument 'shape'");
    int nd, copy = copy_arg ? mod_parse_copy(copy_arg) : -1;
    Py_ssize_t shape[MOD_MAXDIMS];
    if (copy == -2 || mod_parse_shape(n == 1 ? PyTuple_GET_ITEM(args, 0) : args, &nd, shape) < 0)
        return NULL;
    return reshaped((mod_array *)x, nd, shape, copy);
}

/* x as 1-D: a view when x is C-contiguous, else a copy (NumPy's ravel). */
static PyObject *flat(mod_array *x) {
    Py_ssize_t n = mod_kit_size(x->nd, x->shape);
    return reshaped(x, 1, &n, mod_array_is_c_contiguous(x) ? -1 : 1);
}

static PyObject *f_ravel(PyObject *self, PyObject *x) {
    return mod_kit_array_arg(x, "ravel") ? flat((mod_array *)x) : NULL;
}

/* ---- copies ---- */

/* NumPy 2's result_type of the arrays' dtypes, one offload holds. */
static PyObject *result_dtype(mod_array **a, Py_ssize_t n) {
    PyObject *dt = Py_NewRef(a[0]->dtype);
    for (Py_ssize_t i = 1; dt && i < n; i++)
        if (a[i]->dtype != dt)
            Py_SETREF(dt, PyObject_CallMethod(mod_numpy_borrowed(), "result_type", "OO", dt,
                                              a[i]->dtype));
    if (!dt) return NULL;
    Py_SETREF(dt, mod_dtype_new(dt));
    return dt;
}

/* dst_base seen as (nd, shape, strides) at offset, filled from src. */
static int copy_piece(mod_array *dst_base, int nd, const Py_ssize_t *shape,
                      const Py_ssize_t *strides, Py_ssize_t offset, PyObject *src) {
    if (mod_kit_size(nd, shape) == 0) return 0;
    PyObject *dst = mod_array_view(dst_base, nd, shape, strides, offset);
    int rc = dst ? mod_ops_copy_into((mod_array *)dst, src) : -1;
    Py_XDECREF(dst);
    return rc;
}

/* The arrays joined along axis (axis < 0: all flattened, as axis=None). */
static PyObject *concat_arrays(mod_array **a, Py_ssize_t n, PyObject *axis_arg) {
    if (n == 0) return PyErr_Format(PyExc_ValueError, "need at least one array to concatenate");
    PyObject *dtype = result_dtype(a, n);
    if (!dtype) return NULL;
    ofl_device *dev = mod_array_device(a[0]);
    Py_ssize_t itemsize = mod_dtype_itemsize(dtype), shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    PyObject *r = NULL;
    if (axis_arg == Py_None) {
        Py_ssize_t total = 0, at = 0;
        for (Py_ssize_t i = 0; i < n; i++) total += mod_kit_size(a[i]->nd, a[i]->shape);
        if (!(r = mod_array_new_empty(dev, dtype, 1, &total))) goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
            /* the piece's place in the result, seen in the piece's own shape */
            mod_kit_c_strides(a[i]->nd, a[i]->shape, itemsize, strides);
            if (copy_piece((mod_array *)r, a[i]->nd, a[i]->shape, strides, at * itemsize,
                           (PyObject *)a[i]) < 0) {
                Py_CLEAR(r);
                goto done;
            }
            at += mod_kit_size(a[i]->nd, a[i]->shape);
        }
        goto done;
    }
    int nd = a[0]->nd, axis;
    if (nd == 0) {
        PyErr_SetString(PyExc_ValueError, "zero-dimensional arrays cannot be concatenated");
        goto done;
    }
    if (one_axis(axis_arg, nd, &axis) < 0) goto done;
    memcpy(shape, a[0]->shape, sizeof(Py_ssize_t) * (size_t)nd);
    for (Py_ssize_t i = 1; i < n; i++) {
        if (a[i]->nd != nd) {
            PyErr_Format(PyExc_ValueError,
                         "all the input arrays must have same number of dimensions, but the array "
                         "at index 0 has %d dimension(s) and the array at index %zd has %d "
                         "dimension(s)",
                         nd, i, a[i]->nd);
            goto done;
        }
        for (int d = 0; d < nd; d++)
            if (d != axis && a[i]->shape[d] != shape[d]) {
                PyErr_Format(PyExc_ValueError,
                             "all the input array dimensions except for the concatenation axis "
                             "must match exactly, but along dimension %d, the array at index 0 "
                             "has size %zd and the array at index %zd has size %zd",
                             d, shape[d], i, a[i]->shape[d]);
                goto done;
            }
        shape[axis] += a[i]->shape[axis];
    }
    if (!(r = mod_array_new_empty(dev, dtype, nd, shape))) goto done;
    mod_array *res = (mod_array *)r;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (copy_piece(res, nd, a[i]->shape, res->strides, at * res->strides[axis],
                       (PyObject *)a[i]) < 0) {
            Py_CLEAR(r);
            goto done;
        }
        at += a[i]->shape[axis];
    }
done:
    Py_DECREF(dtype);
    return r;
}

static PyObject *concat_common(PyObject *args, PyObject *kw, char **kwlist, const char *fmt,
                               const char *fn) {
    PyObject *seq, *axis = NULL;
    mod_array **a;
    Py_ssize_t n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &seq, &axis)) return NULL;
    PyObject *list = array_seq(seq, fn, &a, &n);
    if (!list) return NULL;
    PyObject *zero = axis ? NULL : PyLong_FromLong(0);
    PyObject *r = axis || zero ? concat_arrays(a, n, axis ? axis : zero) : NULL;
    Py_XDECREF(zero);
    Py_DECREF(list);
    return r;
}

static PyObject *f_concat(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axis", NULL};
    return concat_common(args, kw, kwlist, "O|$O:concat", "concat");
}

static PyObject *f_concatenate(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"arrays", "axis", NULL};
    return concat_common(args, kw, kwlist, "O|O:concatenate", "concatenate");
}

static PyObject *f_stack(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"arrays", "axis", NULL};
    PyObject *seq, *axis_arg = NULL;
    mod_array **a;
    Py_ssize_t n;
    int axis = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:stack", kwlist, &seq, &axis_arg)) return NULL;
    PyObject *list = array_seq(seq, "stack", &a, &n), *r = NULL, *dtype = NULL;
    if (!list) return NULL;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "need at least one array to stack");
        goto done;
    }
    int nd = a[0]->nd;
    for (Py_ssize_t i = 1; i < n; i++)
        if (a[i]->nd != nd || memcmp(a[i]->shape, a[0]->shape, sizeof(Py_ssize_t) * (size_t)nd)) {
            PyErr_SetString(PyExc_ValueError, "all input arrays must have the same shape");
            goto done;
        }
    if (nd + 1 > MOD_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
        goto done;
    }
    if ((axis_arg && one_axis(axis_arg, nd + 1, &axis) < 0) || !(dtype = result_dtype(a, n)))
        goto done;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    for (int d = 0, k = 0; d <= nd; d++) shape[d] = d == axis ? n : a[0]->shape[k++];
    if (!(r = mod_array_new_empty(mod_array_device(a[0]), dtype, nd + 1, shape))) goto done;
    mod_array *res = (mod_array *)r;
    for (int d = 0, k = 0; d <= nd; d++)
        if (d != axis) strides[k++] = res->strides[d];
    for (Py_ssize_t i = 0; i < n; i++)
        if (copy_piece(res, nd, a[0]->shape, strides, i * res->strides[axis], (PyObject *)a[i]) <
            0) {
            Py_CLEAR(r);
            break;
        }
done:
    Py_XDECREF(dtype);
    Py_DECREF(list);
    return r;
}

static PyObject *f_roll(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "shift", "axis", NULL};
    PyObject *x, *shift_arg, *axis_arg = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:roll", kwlist, &x, &shift_arg, &axis_arg) ||
        !mod_kit_array_arg(x, "roll"))
        return NULL;
    mod_array *a = (mod_array *)x;
    /* the shifts, one per axis after broadcasting shift against axis */
    PyObject *shifts = PyTuple_Check(shift_arg) || PyList_Check(shift_arg)
                           ? PySequence_Tuple(shift_arg)
                           : PyTuple_Pack(1, shift_arg);
    if (!shifts) return NULL;
    PyObject *src = NULL, *r = NULL;
    int axes[MOD_MAXDIMS], k = 1;
    Py_ssize_t ns = PyTuple_GET_SIZE(shifts), by[MOD_MAXDIMS] = {0};
    if (axis_arg == Py_None) {
        src = flat(a);
        axes[0] = 0;
    } else {
        src = Py_NewRef(x);
        if (axis_list(axis_arg, a->nd, axes, &k, NULL, NULL) < 0) goto done;
    }
    if (!src) goto done;
    mod_array *s = (mod_array *)src;
    Py_ssize_t pairs = ns > k ? ns : k;
    if (axis_arg != Py_None && ns != k && ns != 1 && k != 1) {
        PyErr_SetString(PyExc_ValueError, "'shift' and 'axis' should be scalars or 1D sequences");
        goto done;
    }
    if (axis_arg == Py_None) pairs = ns;
    for (Py_ssize_t i = 0; i < pairs; i++) {
        PyObject *sh = PyTuple_GET_ITEM(shifts, ns == 1 ? 0 : i);
        int ax = axes[k == 1 ? 0 : i];
        if (PyBool_Check(sh) || !PyIndex_Check(sh)) {
            PyErr_Format(PyExc_TypeError, "roll: a shift must be an integer, not %s",
                         Py_TYPE(sh)->tp_name);
            goto done;
        }
        Py_ssize_t v = PyNumber_AsSsize_t(sh, PyExc_OverflowError);
        if (v == -1 && PyErr_Occurred()) goto done;
        Py_ssize_t n = s->shape[ax];
        if (n > 0) by[ax] = ((by[ax] + v % n) % n + n) % n;
    }
    if (!(r = mod_array_new_empty(mod_array_device(s), s->dtype, s->nd, s->shape))) goto done;
    /* 2^m pieces for the m axes shifted: along each, dst[b:] = src[:n-b] and dst[:b] = src[n-b:] */
    int moved[MOD_MAXDIMS], m = 0;
    for (int d = 0; d < s->nd; d++)
        if (by[d]) moved[m++] = d;
    mod_array *res = (mod_array *)r;
    for (long piece = 0; piece < (1L << m); piece++) {
        Py_ssize_t shape[MOD_MAXDIMS], src_off = s->offset, dst_off = 0;
        memcpy(shape, s->shape, sizeof(Py_ssize_t) * (size_t)s->nd);
        for (int j = 0; j < m; j++) {
            int d = moved[j];
            Py_ssize_t b = by[d], n = s->shape[d];
            if (piece >> j & 1) { /* the tail of src to the head of dst */
                shape[d] = b;
                src_off += (n - b) * s->strides[d];
            } else {
                shape[d] = n - b;
                dst_off += b * res->strides[d];
            }
        }
        PyObject *part = mod_array_view(s, s->nd, shape, s->strides, src_off);
        int rc = part ? copy_piece(res, s->nd, shape, res->strides, dst_off, part) : -1;
        Py_XDECREF(part);
        if (rc < 0) {
            Py_CLEAR(r);
            goto done;
        }
    }
    if (axis_arg == Py_None) { /* back to x's shape: the result is C-contiguous */
        Py_ssize_t strides[MOD_MAXDIMS];
        mod_kit_c_strides(a->nd, a->shape, a->itemsize, strides);
        Py_SETREF(r, view(res, a->nd, a->shape, strides));
    }
done:
    Py_DECREF(shifts);
    Py_XDECREF(src);
    return r;
}

static PyObject *f_tile(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", NULL};
    PyObject *x, *reps_arg;
    int nr;
    Py_ssize_t reps[MOD_MAXDIMS];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:tile", kwlist, &x, &reps_arg) ||
        !mod_kit_array_arg(x, "tile") || mod_parse_shape(reps_arg, &nr, reps) < 0)
        return NULL;
    mod_array *a = (mod_array *)x;
    for (int i = 0; i < nr; i++)
        if (reps[i] < 0)
            return PyErr_Format(PyExc_ValueError, "negative dimensions are not allowed");
    int nd = a->nd > nr ? a->nd : nr;
    Py_ssize_t xs[MOD_MAXDIMS], xst[MOD_MAXDIMS], rp[MOD_MAXDIMS], shape[MOD_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        int xd = d - (nd - a->nd), rd = d - (nd - nr);
        xs[d] = xd < 0 ? 1 : a->shape[xd];
        xst[d] = xd < 0 ? 0 : a->strides[xd];
        rp[d] = rd < 0 ? 1 : reps[rd];
        shape[d] = xs[d] * rp[d];
    }
    PyObject *r = mod_array_new_empty(mod_array_device(a), a->dtype, nd, shape);
    if (!r) return NULL;
    /* one copy: the result seen as (r0, s0, r1, s1, ...), x as the same
     * shape with stride 0 along the repetitions (dimensions repeated once
     * need no repetition axis) */
    mod_array *res = (mod_array *)r;
    Py_ssize_t vs[MOD_MAXDIMS], dst[MOD_MAXDIMS], srcs[MOD_MAXDIMS];
    int vn = 0;
    for (int d = 0; d < nd; d++) {
        if (rp[d] != 1) {
            if (vn == MOD_MAXDIMS) goto too_many;
            vs[vn] = rp[d], dst[vn] = xs[d] * res->strides[d], srcs[vn++] = 0;
        }
        if (vn == MOD_MAXDIMS) goto too_many;
        vs[vn] = xs[d], dst[vn] = res->strides[d], srcs[vn++] = xst[d];
    }
    PyObject *src = mod_array_view(a, vn, vs, srcs, a->offset);
    int rc = src ? copy_piece(res, vn, vs, dst, 0, src) : -1;
    Py_XDECREF(src);
    if (rc == 0) return r;
    Py_DECREF(r);
    return NULL;
too_many:
    Py_DECREF(r);
    return PyErr_Format(PyExc_ValueError, "tile: more than %d dimensions and repetitions together",
                        MOD_MAXDIMS);
}

/* ---- repeat ---- */

/* x repeated `times` times along axis, as one copy: the result seen as
 * (..., n, times, ...) and x with a stride-0 dimension there. */
static PyObject *repeat_int(mod_array *x, int axis, Py_ssize_t times) {
    Py_ssize_t shape[MOD_MAXDIMS];
    memcpy(shape, x->shape, sizeof(Py_ssize_t) * (size_t)x->nd);
    shape[axis] *= times;
    PyObject *r = mod_array_new_empty(mod_array_device(x), x->dtype, x->nd, shape);
    if (!r || x->nd + 1 > MOD_MAXDIMS) return r; /* no room for the view: only an empty result */
    mod_array *res = (mod_array *)r;
    Py_ssize_t vs[MOD_MAXDIMS], dst[MOD_MAXDIMS], src[MOD_MAXDIMS];
    for (int d = 0, v = 0; d < x->nd; d++) {
        vs[v] = x->shape[d], src[v] = x->strides[d];
        dst[v++] = d == axis ? res->strides[d] * times : res->strides[d];
        if (d == axis) vs[v] = times, src[v] = 0, dst[v++] = res->strides[d];
    }
    PyObject *s = mod_array_view(x, x->nd + 1, vs, src, x->offset);
    int rc = s ? copy_piece(res, x->nd + 1, vs, dst, 0, s) : -1;
    Py_XDECREF(s);
    if (rc == 0) return r;
    Py_DECREF(r);
    return NULL;
}

/* The counts' running sums, in blocks of REPEAT_BLOCK a work-item
 * (kernels/manip.py's repeat_sums, repeat_starts, repeat_cumsum). The total
 * comes back to the host: it is the result's length. */
#define REPEAT_BLOCK 256

/* The running sums of the counts r (1-D, n > 0) as a new int64 array on
 * their device, and their total in *total; ValueError for a negative count. */
static PyObject *running_sums(mod_array *r, Py_ssize_t n, Py_ssize_t *total) {
    ofl_device *dev = mod_array_device(r);
    PyObject *i64 = mod_dtype_find_borrowed('i', 8);
    Py_ssize_t nb = (n + REPEAT_BLOCK - 1) / REPEAT_BLOCK, one = 1;
    PyObject *part = mod_array_new_empty(dev, i64, 1, &nb);
    PyObject *tot = mod_array_new_empty(dev, i64, 1, &one);
    PyObject *cum = mod_array_new_empty(dev, i64, 1, &n);
    PyObject *host = NULL;
    mod_shape blocks = {.ndim = 1, .size = {nb}}, single = {.ndim = 1, .size = {1}};
    int rc = -1;
    if (!part || !tot || !cum) goto done;
    if (mod_library_launch("manip", "repeat_sums", &blocks, "OOnn", part, (PyObject *)r, n,
                           (Py_ssize_t)REPEAT_BLOCK) < 0 ||
        mod_library_launch("manip", "repeat_starts", &single, "OnO", part, nb, tot) < 0 ||
        mod_library_launch("manip", "repeat_cumsum", &blocks, "OOOnn", cum, part, (PyObject *)r, n,
                           (Py_ssize_t)REPEAT_BLOCK) < 0 ||
        !(host = mod_array_asnumpy((mod_array *)tot)))
        goto done;
    PyObject *item = PyObject_CallMethod(host, "item", "i", 0);
    *total = item ? PyLong_AsSsize_t(item) : -1;
    Py_XDECREF(item);
    if (*total == -1 && PyErr_Occurred()) goto done;
    if (*total < 0)
        PyErr_SetString(PyExc_ValueError, "repeats may not contain negative values.");
    else
        rc = 0;
done:
    Py_XDECREF(part);
    Py_XDECREF(tot);
    Py_XDECREF(host);
    if (rc < 0) Py_CLEAR(cum);
    return cum;
}

/* x (C-contiguous) repeated along axis by the counts r, one per element of
 * that axis: the counts' running sums, then one gather. */
static PyObject *repeat_array(mod_array *x, int axis, mod_array *r) {
    Py_ssize_t n = x->shape[axis], total = 0, pre = 1, post = 1;
    Py_ssize_t shape[MOD_MAXDIMS];
    memcpy(shape, x->shape, sizeof(Py_ssize_t) * (size_t)x->nd);
    PyObject *cum = NULL, *res = NULL, *xv = NULL, *ov = NULL;
    if (n > 0 && !(cum = running_sums(r, n, &total))) return NULL;
    shape[axis] = total;
    if (!(res = mod_array_new_empty(mod_array_device(x), x->dtype, x->nd, shape))) goto fail;
    for (int d = 0; d < axis; d++) pre *= x->shape[d];
    for (int d = axis + 1; d < x->nd; d++) post *= x->shape[d];
    if (pre * total * post == 0) goto out;
    /* both seen as (pre, n, post), C-contiguous */
    Py_ssize_t is = x->itemsize, xs[3] = {pre, n, post}, os[3] = {pre, total, post};
    Py_ssize_t xst[3] = {n * post * is, post * is, is}, ost[3] = {total * post * is, post * is, is};
    int kd = post == 1 ? 2 : 3;
    if (!(xv = mod_array_view(x, kd, xs, xst, x->offset)) ||
        !(ov = view((mod_array *)res, kd, os, ost)))
        goto fail;
    mod_shape range = {.ndim = kd, .size = {pre, total, post}};
    if (mod_library_launch("manip", "repeat_gather", &range, "OOOni", ov, xv, cum, n, kd) < 0)
        goto fail;
out:
    Py_XDECREF(cum);
    Py_XDECREF(xv);
    Py_XDECREF(ov);
    return res;
fail:
    Py_CLEAR(res);
    goto out;
}

static PyObject *f_repeat(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "axis", NULL};
    PyObject *x, *reps, *axis_arg = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:repeat", kwlist, &x, &reps, &axis_arg) ||
        !mod_kit_array_arg(x, "repeat"))
        return NULL;
    mod_array *a = (mod_array *)x;
    mod_array *r = NULL;
    Py_ssize_t times = -1;
    if (mod_array_check(reps)) {
        r = (mod_array *)reps;
        ofl_device *dr = mod_array_device(r), *dx = mod_array_device(a);
        if (dr != dx)
            return PyErr_Format(mod_ExecutionPlacementError,
                                "repeat: x lives on %s and repeats on %s; move one with "
                                ".to_device(...)",
                                ofl_device_get_info(dx)->filter, ofl_device_get_info(dr)->filter);
        const char *dn = mod_dtype_name(r->dtype);
        if (!strcmp(dn, "uint64") || !strncmp(dn, "float", 5))
            return PyErr_Format(PyExc_TypeError,
                                "Cannot cast array data from dtype('%s') to dtype('int64') "
                                "according to the rule 'safe'",
                                dn);
        if (r->nd > 1)
            return PyErr_Format(PyExc_ValueError, "repeat: repeats must be 0-d or 1-d, not %d-d",
                                r->nd);
    } else if (!mod_is_numpy_array(reps) && (PyBool_Check(reps) || PyIndex_Check(reps))) {
        times = PyNumber_AsSsize_t(reps, PyExc_OverflowError);
        if (times == -1 && PyErr_Occurred()) return NULL;
        if (times < 0) return PyErr_Format(PyExc_ValueError, "negative dimensions are not allowed");
    } else {
        return PyErr_Format(PyExc_TypeError,
                            "offload.repeat: repeats must be an integer or an offload array of "
                            "integers, not %s%s",
                            Py_TYPE(reps)->tp_name,
                            mod_is_numpy_array(reps) || PyList_Check(reps) || PyTuple_Check(reps)
                                ? "; call offload.asarray(...) on it first"
                                : "");
    }
    PyObject *src; /* x, or x flattened for axis=None, or a C-contiguous copy for the gather */
    int axis = 0;
    if (axis_arg == Py_None)
        src = flat(a);
    else if (one_axis(axis_arg, a->nd, &axis) < 0)
        return NULL;
    else
        src = Py_NewRef(x);
    if (!src) return NULL;
    mod_array *s = (mod_array *)src;
    PyObject *res = NULL;
    if (r && (r->nd == 0 || (r->shape[0] == 1 && s->shape[axis] != 1))) {
        /* one count for every element: read it, as NumPy broadcasts it */
        PyObject *one = r->nd == 0 ? Py_NewRef(r) : mod_array_view(r, 0, NULL, NULL, r->offset);
        PyObject *host = one ? mod_array_asnumpy((mod_array *)one) : NULL;
        PyObject *item = host ? PyObject_CallMethod(host, "item", NULL) : NULL;
        times = item ? PyNumber_AsSsize_t(item, PyExc_OverflowError) : -1;
        Py_XDECREF(one);
        Py_XDECREF(host);
        Py_XDECREF(item);
        if (times == -1 && PyErr_Occurred()) goto done;
        if (times < 0) {
            PyErr_SetString(PyExc_ValueError, "repeats may not contain negative values.");
            goto done;
        }
        r = NULL;
    }
    if (!r) {
        res = repeat_int(s, axis, times);
        goto done;
    }
    if (r->shape[0] != s->shape[axis]) {
        PyErr_Format(PyExc_ValueError,
                     "operands could not be broadcast together with shape (%zd,) (%zd,)",
                     s->shape[axis], r->shape[0]);
        goto done;
    }
    if (!mod_array_is_c_contiguous(s)) {
        Py_SETREF(src, mod_ops_copy(s, NULL));
        if (!src) goto done;
        s = (mod_array *)src;
    }
    res = repeat_array(s, axis, r);
done:
    Py_XDECREF(src);
    return res;
}

/* ---- NumPy's conveniences ---- */

/* x with at least `least` dimensions, as NumPy's atleast_Nd adds them. */
static PyObject *at_least(mod_array *x, int least) {
    int axes[3], k = 0;
    if (x->nd >= least) return Py_NewRef(x);
    if (least == 1) axes[k++] = 0;
    if (least == 2) {
        axes[k++] = 0;
        if (x->nd == 0) axes[k++] = 1;
    }
    if (least == 3) {
        if (x->nd == 0) axes[k++] = 0, axes[k++] = 1, axes[k++] = 2;
        if (x->nd == 1) axes[k++] = 0, axes[k++] = 2;
        if (x->nd == 2) axes[k++] = 2;
    }
    return expand(x, axes, k);
}

static PyObject *atleast(PyObject *args, int least, const char *fn) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n == 1) {
        PyObject *x = PyTuple_GET_ITEM(args, 0);
        return mod_kit_array_arg(x, fn) ? at_least((mod_array *)x, least) : NULL;
    }
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        tuple_put(&t, i, mod_kit_array_arg(x, fn) ? at_least((mod_array *)x, least) : NULL);
    }
    return t;
}

static PyObject *f_atleast_1d(PyObject *self, PyObject *args) {
    return atleast(args, 1, "atleast_1d");
}
static PyObject *f_atleast_2d(PyObject *self, PyObject *args) {
    return atleast(args, 2, "atleast_2d");
}
static PyObject *f_atleast_3d(PyObject *self, PyObject *args) {
    return atleast(args, 3, "atleast_3d");
}

/* hstack and vstack: the arrays made at least 1-d (2-d), then joined. */
static PyObject *stack_hv(PyObject *seq, bool vertical) {
    const char *fn = vertical ? "vstack" : "hstack";
    mod_array **a;
    Py_ssize_t n;
    PyObject *list = array_seq(seq, fn, &a, &n);
    if (!list) return NULL;
    PyObject *r = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = at_least(a[i], vertical ? 2 : 1);
        if (!v) goto done;
        PyList_SetItem(list, i, v); /* steals v, releases the borrowed original's hold */
    }
    a = (mod_array **)PySequence_Fast_ITEMS(list);
    PyObject *axis = PyLong_FromLong(!vertical && n > 0 && a[0]->nd > 1 ? 1 : 0);
    if (axis) r = concat_arrays(a, n, axis);
    Py_XDECREF(axis);
done:
    Py_DECREF(list);
    return r;
}

static PyObject *f_hstack(PyObject *self, PyObject *tup) { return stack_hv(tup, false); }
static PyObject *f_vstack(PyObject *self, PyObject *tup) { return stack_hv(tup, true); }

static PyMethodDef functions[] = {
    {"broadcast_arrays", f_broadcast_arrays, METH_VARARGS,
     "broadcast_arrays(*arrays) -> list of ndarray\n\nViews of the arrays broadcast to one "
     "shape (NumPy's rules; writing through them writes the inputs)."},
    {"broadcast_to", MOD_KWFUNC(f_broadcast_to),
     "broadcast_to(x, /, shape) -> ndarray\n\nA view of x broadcast to shape (stride 0 along "
     "the broadcast dimensions)."},
    {"concat", MOD_KWFUNC(f_concat),
     "concat(arrays, /, *, axis=0) -> ndarray\n\nThe arrays joined along axis (axis=None: "
     "flattened first), in their result_type, on their device."},
    {"concatenate", MOD_KWFUNC(f_concatenate),
     "concatenate(arrays, axis=0) -> ndarray\n\nNumPy's name for concat."},
    {"expand_dims", MOD_KWFUNC(f_expand_dims),
     "expand_dims(x, /, *, axis=0) -> ndarray\n\nA view of x with a dimension of size 1 "
     "inserted at axis (an int, or a tuple as NumPy takes)."},
    {"flip", MOD_KWFUNC(f_flip),
     "flip(x, /, *, axis=None) -> ndarray\n\nA view of x with the order of elements reversed "
     "along axis (an int or a tuple; None: all axes)."},
    {"moveaxis", MOD_KWFUNC(f_moveaxis),
     "moveaxis(x, source, destination, /) -> ndarray\n\nA view of x with the axes source "
     "moved to destination (ints or tuples), the others in their order."},
    {"permute_dims", MOD_KWFUNC(f_permute_dims),
     "permute_dims(x, /, axes) -> ndarray\n\nA view of x with its axes in the order axes."},
    {"transpose", MOD_KWFUNC(f_transpose),
     "transpose(a, axes=None) -> ndarray\n\nNumPy's: a view with the axes permuted (reversed "
     "when axes is None)."},
    {"swapaxes", MOD_KWFUNC(f_swapaxes),
     "swapaxes(a, axis1, axis2) -> ndarray\n\nA view of a with two axes interchanged."},
    {"repeat", MOD_KWFUNC(f_repeat),
     "repeat(x, repeats, /, *, axis=None) -> ndarray\n\nEach element of x repeated: repeats is "
     "an int or a 1-D integer offload array with one count per element along axis (None: x "
     "flattened first). Computed on x's device."},
    {"reshape", MOD_KWFUNC(f_reshape),
     "reshape(x, /, shape, *, copy=None) -> ndarray\n\nx in a new shape (one dimension may be "
     "-1): a view where x's layout allows, else a copy. copy=True always copies; copy=False "
     "raises ValueError where a copy would be needed."},
    {"ravel", f_ravel, METH_O,
     "ravel(x) -> ndarray\n\nx as 1-D: a view when x is C-contiguous, else a copy."},
    {"roll", MOD_KWFUNC(f_roll),
     "roll(x, /, shift, *, axis=None) -> ndarray\n\nx's elements shifted along axis (ints or "
     "tuples; None: x flattened, then shaped back), those past the end coming back at the "
     "start."},
    {"squeeze", MOD_KWFUNC(f_squeeze),
     "squeeze(x, /, axis=None) -> ndarray\n\nA view of x without the size-1 axes named "
     "(ValueError for an axis that is not 1; None: all of them)."},
    {"stack", MOD_KWFUNC(f_stack),
     "stack(arrays, /, *, axis=0) -> ndarray\n\nArrays of one shape joined along a new axis, "
     "in their result_type."},
    {"tile", MOD_KWFUNC(f_tile),
     "tile(x, repetitions, /) -> ndarray\n\nx repeated repetitions[i] times along each "
     "dimension (NumPy's rules for unequal lengths)."},
    {"unstack", MOD_KWFUNC(f_unstack),
     "unstack(x, /, *, axis=0) -> tuple of ndarray\n\nViews of x's slices along axis."},
    {"atleast_1d", f_atleast_1d, METH_VARARGS,
     "atleast_1d(*arys) -> ndarray or tuple\n\nViews with at least one dimension."},
    {"atleast_2d", f_atleast_2d, METH_VARARGS,
     "atleast_2d(*arys) -> ndarray or tuple\n\nViews with at least two dimensions."},
    {"atleast_3d", f_atleast_3d, METH_VARARGS,
     "atleast_3d(*arys) -> ndarray or tuple\n\nViews with at least three dimensions (NumPy's "
     "placement of the new ones)."},
    {"hstack", f_hstack, METH_O,
     "hstack(tup) -> ndarray\n\nArrays joined column-wise (along axis 1; 1-D ones along 0)."},
    {"vstack", f_vstack, METH_O,
     "vstack(tup) -> ndarray\n\nArrays joined row-wise (made at least 2-D first)."},
    {NULL},
};

static PyMethodDef array_methods[] = {
    {"reshape", MOD_KWFUNC(m_reshape),
     "reshape(*shape, copy=None) -> ndarray\n\nNumPy's method: a view where the layout allows, "
     "else a copy (x.reshape(2, 3) or x.reshape((2, 3)))."},
    {NULL},
};

int mod_manip_add_functions(PyObject *module) {
    if (mod_type_add_methods(&mod_ArrayType, array_methods) < 0) return -1;
    return PyModule_AddFunctions(module, functions);
}
