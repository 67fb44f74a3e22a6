/* mod_linalg: the linear algebra functions of the array API's main
 * namespace besides matmul (mod_matmul.c) -- matrix_transpose, tensordot,
 * vecdot. Each is a composition of the namespace's own operations (views,
 * matmul, multiply, sum), so it runs where its operands live with their
 * checks and errors. Added to the namespace by mod_lib_add_functions. */
#include "lib/linalg/mod_linalg.h"

/* list.append(v): 0, or 1 with an exception */
static int append_int(PyObject *list, Py_ssize_t v) {
    PyObject *o = PyLong_FromSsize_t(v);
    int rc = o ? PyList_Append(list, o) : -1;
    Py_XDECREF(o);
    return rc < 0;
}

static PyObject *f_matrix_transpose(PyObject *self, PyObject *x) {
    mod_array *a = mod_kit_array_arg(x, "matrix_transpose");
    if (!a) return NULL;
    if (a->nd < 2)
        return PyErr_Format(PyExc_ValueError,
                            "matrix_transpose needs an array of two or more dimensions, not %d",
                            a->nd);
    return PyObject_GetAttrString(x, "mT");
}

/* vecdot(x1, x2, /, *, axis=-1): sum(conj(x1) * x2, axis) after broadcasting;
 * the contracted axis must have the same size in both (no broadcasting of it). */
static PyObject *f_vecdot(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "axis", NULL};
    PyObject *x1, *x2;
    int axis = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$i:vecdot", kwlist, &x1, &x2, &axis))
        return NULL;
    mod_array *a = mod_kit_array_arg(x1, "vecdot"), *b = a ? mod_kit_array_arg(x2, "vecdot") : NULL;
    if (!b) return NULL;
    int nd = a->nd > b->nd ? a->nd : b->nd;
    if (axis >= 0 || axis < -(a->nd < b->nd ? a->nd : b->nd))
        return PyErr_Format(PyExc_ValueError,
                            "vecdot: axis %d is not in [-%d, -1] for arrays of %d and %d "
                            "dimensions",
                            axis, a->nd < b->nd ? a->nd : b->nd, a->nd, b->nd);
    if (a->shape[a->nd + axis] != b->shape[b->nd + axis])
        return PyErr_Format(PyExc_ValueError,
                            "vecdot: the contracted axis has size %zd in x1 and %zd in x2",
                            a->shape[a->nd + axis], b->shape[b->nd + axis]);
    (void)nd;
    PyObject *left = mod_kit_is_complex(a->dtype)
                         ? mod_kit_call("conj", Py_BuildValue("(O)", x1), NULL)
                         : Py_NewRef(x1);
    PyObject *prod = left ? mod_kit_call("multiply", Py_BuildValue("(OO)", left, x2), NULL) : NULL;
    Py_XDECREF(left);
    if (!prod) return NULL;
    /* in the operands' promoted dtype, as the standard says (sum would widen integers) */
    PyObject *dtype = PyObject_GetAttrString(prod, "dtype");
    PyObject *kwargs = dtype ? Py_BuildValue("{s:i,s:N}", "axis", axis, "dtype", dtype) : NULL;
    PyObject *r = kwargs ? mod_kit_call("sum", Py_BuildValue("(O)", prod), kwargs) : NULL;
    Py_DECREF(prod);
    return r;
}

/* The axes of one operand tensordot contracts: from an int n (x1's last n,
 * x2's first n) or a pair of sequences; fills ax[0..*n) normalised. */
static int contracted(PyObject *axes, int which, const mod_array *a, int *ax, int *n) {
    if (PyLong_Check(axes)) {
        long k = PyLong_AsLong(axes);
        if (k == -1 && PyErr_Occurred()) return -1;
        if (k < 0 || k > a->nd) {
            PyErr_Format(PyExc_ValueError, "tensordot: axes=%ld is not in [0, %d]", k, a->nd);
            return -1;
        }
        *n = (int)k;
        for (int i = 0; i < *n; i++) ax[i] = which == 0 ? a->nd - *n + i : i;
        return 0;
    }
    PyObject *seq = PySequence_Check(axes) && PySequence_Size(axes) == 2
                        ? PySequence_GetItem(axes, which)
                        : NULL;
    if (!seq) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "tensordot: axes is an int or a pair of sequences of ints");
        return -1;
    }
    PyObject *fast = PySequence_Check(seq) ? PySequence_Fast(seq, "axes") : NULL;
    if (!fast && PyIndex_Check(seq)) { /* axes=(1, 0): one axis each */
        PyErr_Clear();
        fast = PyTuple_Pack(1, seq);
    }
    Py_DECREF(seq);
    if (!fast) return -1;
    *n = (int)PySequence_Fast_GET_SIZE(fast);
    int rc = 0;
    for (int i = 0; i < *n && rc == 0; i++) {
        long k = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (k == -1 && PyErr_Occurred())
            rc = -1;
        else if (k < -a->nd || k >= a->nd)
            rc = -1, PyErr_Format(PyExc_ValueError,
                                  "tensordot: axis %ld is out of bounds for "
                                  "an array of %d dimensions",
                                  k, a->nd);
        else
            ax[i] = (int)(k < 0 ? k + a->nd : k);
    }
    Py_DECREF(fast);
    return rc;
}

/* tensordot(x1, x2, /, *, axes=2): x1's contracted axes moved last, x2's
 * first, both made matrices (free x contracted, contracted x free), one
 * matmul, and the free axes back. */
static PyObject *f_tensordot(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "axes", NULL};
    PyObject *x1, *x2, *axes = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:tensordot", kwlist, &x1, &x2, &axes))
        return NULL;
    mod_array *a = mod_kit_array_arg(x1, "tensordot"),
              *b = a ? mod_kit_array_arg(x2, "tensordot") : NULL;
    if (!b) return NULL;
    PyObject *two = axes ? NULL : PyLong_FromLong(2);
    if (!axes) axes = two;
    int ax[2][MOD_MAXDIMS], n[2];
    int rc = contracted(axes, 0, a, ax[0], &n[0]) < 0 || contracted(axes, 1, b, ax[1], &n[1]) < 0;
    Py_XDECREF(two);
    if (rc) return NULL;
    if (n[0] != n[1])
        return PyErr_Format(PyExc_ValueError, "tensordot: %d axes of x1 and %d of x2 to contract",
                            n[0], n[1]);
    Py_ssize_t k = 1;
    for (int i = 0; i < n[0]; i++) {
        if (a->shape[ax[0][i]] != b->shape[ax[1][i]])
            return PyErr_Format(PyExc_ValueError,
                                "tensordot: shape mismatch for sum: axis %d of x1 has %zd, axis "
                                "%d of x2 has %zd",
                                ax[0][i], a->shape[ax[0][i]], ax[1][i], b->shape[ax[1][i]]);
        k *= a->shape[ax[0][i]];
    }
    /* the permutations and the matrices' shapes */
    const mod_array *ops[2] = {a, b};
    PyObject *perm[2] = {NULL, NULL}, *mat[2] = {NULL, NULL}, *free_shape = PyList_New(0);
    PyObject *r = NULL;
    Py_ssize_t freesize[2] = {1, 1};
    if (!free_shape) return NULL;
    for (int w = 0; w < 2; w++) {
        const mod_array *o = ops[w];
        bool used[MOD_MAXDIMS] = {false};
        for (int i = 0; i < n[w]; i++) used[ax[w][i]] = true;
        PyObject *order = PyList_New(0);
        int bad = !order;
        for (int i = 0; w == 1 && !bad && i < n[1]; i++) bad = append_int(order, ax[1][i]);
        for (int d = 0; d < o->nd && !bad; d++) {
            if (used[d]) continue;
            bad = append_int(order, d) || append_int(free_shape, o->shape[d]);
            freesize[w] *= o->shape[d];
        }
        for (int i = 0; w == 0 && !bad && i < n[0]; i++) bad = append_int(order, ax[0][i]);
        PyObject *t = bad ? NULL : PyList_AsTuple(order);
        Py_XDECREF(order);
        perm[w] =
            t ? mod_kit_call("permute_dims", Py_BuildValue("(ON)", (PyObject *)o, t), NULL) : NULL;
        if (!perm[w]) goto out;
        PyObject *shape =
            w == 0 ? Py_BuildValue("(nn)", freesize[0], k) : Py_BuildValue("(nn)", k, freesize[1]);
        mat[w] =
            shape ? mod_kit_call("reshape", Py_BuildValue("(ON)", perm[w], shape), NULL) : NULL;
        if (!mat[w]) goto out;
    }
    PyObject *prod = mod_kit_call("matmul", Py_BuildValue("(OO)", mat[0], mat[1]), NULL);
    PyObject *shape = prod ? PyList_AsTuple(free_shape) : NULL;
    r = shape ? mod_kit_call("reshape", Py_BuildValue("(ON)", prod, shape), NULL) : NULL;
    Py_XDECREF(prod);
out:
    for (int w = 0; w < 2; w++) {
        Py_XDECREF(perm[w]);
        Py_XDECREF(mat[w]);
    }
    Py_DECREF(free_shape);
    return r;
}

static PyMethodDef functions[] = {
    {"matrix_transpose", f_matrix_transpose, METH_O,
     "matrix_transpose(x, /)\n--\n\n"
     "The array with its last two axes swapped (a view: x.mT); x has two or more dimensions."},
    {"vecdot", MOD_KWFUNC(f_vecdot),
     "vecdot(x1, x2, /, *, axis=-1)\n--\n\n"
     "The dot product of vectors along axis: sum(conj(x1) * x2, axis) with x1 and x2 "
     "broadcast against each other (the axis itself must match); on their device."},
    {"tensordot", MOD_KWFUNC(f_tensordot),
     "tensordot(x1, x2, /, *, axes=2)\n--\n\n"
     "The sum of products over axes: x1's last `axes` axes against x2's first (an int), or the "
     "axes given as a pair of sequences; the free axes of x1, then of x2, remain."},
    {NULL},
};

int mod_linalg_add_functions(PyObject *module) { return PyModule_AddFunctions(module, functions); }
