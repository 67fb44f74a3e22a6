/* mod_constexpr: a kernel's compile-time parameters -- `N: ol.constexpr` --
 * and offload.constexpr / offload.static_range themselves.
 *
 * A compile-time parameter is not an argument of the device code: its value
 * at a launch picks (or makes) the kernel's variant for that value, which the
 * JIT parses with the value standing for the name (jit_func_parse's consts),
 * as it reads a global. So branches on it, loops unrolled over it, dtypes,
 * tuples and device functions passed in are all settled at compile time,
 * and every value is part of the variant's source hash. mod_kernel.c keeps
 * the variants; this file says which parameters are compile-time, splits a
 * launch's arguments, and compares values.
 *
 * A tuple given to any other parameter is a tuple of arrays: its length is
 * compile-time too (the JIT makes a parameter of each element, jit.h), so
 * it picks the variant with the values, and the split spreads its elements
 * into the run-time arguments. */
#include <limits.h>

#include "mod_launch.h"

/* offload.constexpr: only ever an annotation, never an instance. */
static PyTypeObject ConstexprType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.constexpr",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Marks a kernel parameter as compile-time: def k(item, x, N: offload.constexpr).\n"
              "Each value passed for it compiles the kernel once more, with the value in "
              "place of the name: ints, floats, bools, dtypes, tuples of them and "
              "@offload.device_func functions.",
};

/* Whether annotation ann says offload.constexpr: the type itself, or a
 * string naming it (postponed annotations, PEP 563), evaluated as Python
 * would in the function's globals. */
static bool says_constexpr(PyObject *ann, PyObject *globals) {
    if (ann == (PyObject *)&ConstexprType) return true;
    if (!PyUnicode_Check(ann) || !globals) return false;
    PyObject *code = Py_CompileString(PyUnicode_AsUTF8(ann), "<annotation>", Py_eval_input);
    PyObject *v = code ? PyEval_EvalCode(code, globals, globals) : NULL;
    bool yes = v == (PyObject *)&ConstexprType;
    Py_XDECREF(code);
    Py_XDECREF(v);
    PyErr_Clear();
    return yes;
}

int mod_constexpr_of(PyObject *pyfunc, mod_constexpr *out) {
    *out = (mod_constexpr){0};
    PyObject *code = PyObject_GetAttrString(pyfunc, "__code__");
    PyObject *argc = code ? PyObject_GetAttrString(code, "co_argcount") : NULL;
    PyObject *names = code ? PyObject_GetAttrString(code, "co_varnames") : NULL;
    PyObject *anns = PyObject_GetAttrString(pyfunc, "__annotations__");
    PyObject *globals = PyObject_GetAttrString(pyfunc, "__globals__");
    PyObject *found = PyList_New(0);
    long n = argc ? PyLong_AsLong(argc) : -1;
    int rc = n >= 0 && names && anns && PyDict_Check(anns) && found ? 0 : -1;
    if (rc == 0 && !(out->params = PyTuple_GetSlice(names, 1, n > 0 ? n : 1))) rc = -1;
    for (long i = 1; rc == 0 && i < n; i++) { /* the item is never compile-time */
        PyObject *name = PyTuple_GET_ITEM(names, i);
        PyObject *ann = PyDict_GetItemWithError(anns, name);
        if (!ann || !says_constexpr(ann, globals)) continue;
        if (i - 1 >= 64)
            rc = (PyErr_Format(PyExc_TypeError,
                               "compile-time parameter '%U' must be among a kernel's first 64",
                               name),
                  -1);
        else if ((rc = PyList_Append(found, name)) == 0)
            out->bits |= 1ull << (i - 1);
    }
    if (rc == 0 && !PyErr_Occurred()) {
        out->nparams = n > 0 ? (int)n - 1 : 0;
        if (PyList_GET_SIZE(found)) rc = (out->names = PyList_AsTuple(found)) ? 0 : -1;
    }
    if (rc < 0 && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "offload.kernel needs a plain Python function");
    Py_XDECREF(code);
    Py_XDECREF(argc);
    Py_XDECREF(names);
    Py_XDECREF(anns);
    Py_XDECREF(globals);
    Py_XDECREF(found);
    return PyErr_Occurred() ? -1 : 0;
}

void mod_constexpr_clear(mod_constexpr *c) {
    Py_CLEAR(c->names);
    Py_CLEAR(c->params);
}

/* TypeError unless tuple argument i (of pyfunc) holds arrays only. */
static int check_tuple(PyObject *pyfunc, PyObject *t, Py_ssize_t i) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(t); k++) {
        PyObject *o = PyTuple_GET_ITEM(t, k);
        if (mod_array_check(o) || mod_is_numpy_array(o)) continue;
        PyObject *name = PyObject_GetAttrString(pyfunc, "__name__");
        if (name)
            PyErr_Format(PyExc_TypeError,
                         "%U(): argument %zd is a tuple, whose elements a kernel takes as "
                         "arrays, but element %zd is %s\nA tuple of numbers is a compile-time "
                         "value: annotate the parameter ol.constexpr.",
                         name, i + 1, k, Py_TYPE(o)->tp_name);
        Py_XDECREF(name);
        return -1;
    }
    return 0;
}

int mod_constexpr_split(const mod_constexpr *c, PyObject *pyfunc, PyObject *const *args,
                        Py_ssize_t nargs, PyObject **rest, Py_ssize_t *nrest, PyObject **values,
                        unsigned char *lens) {
    if (nargs != c->nparams) {
        PyObject *name = PyObject_GetAttrString(pyfunc, "__name__");
        if (name && c->names)
            PyErr_Format(PyExc_TypeError,
                         "%U() takes %d argument%s after the item (%zd of them compile-time: "
                         "%S), got %zd",
                         name, c->nparams, c->nparams == 1 ? "" : "s", PyTuple_GET_SIZE(c->names),
                         c->names, nargs);
        else if (name)
            PyErr_Format(PyExc_TypeError, "%U() takes %d argument%s after the item, got %zd", name,
                         c->nparams, c->nparams == 1 ? "" : "s", nargs);
        Py_XDECREF(name);
        return -1;
    }
    Py_ssize_t r = 0, v = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        lens[i] = 0;
        if (c->bits >> i & 1) {
            values[v++] = args[i];
        } else if (PyTuple_Check(args[i])) {
            Py_ssize_t n = PyTuple_GET_SIZE(args[i]);
            if (check_tuple(pyfunc, args[i], i) < 0) return -1;
            if (n > MOD_SPREAD_MOST - r || n > UCHAR_MAX - 1) {
                PyErr_Format(PyExc_TypeError,
                             "a kernel takes at most %d arguments, counting each element of "
                             "a tuple of arrays",
                             MOD_SPREAD_MOST);
                return -1;
            }
            for (Py_ssize_t k = 0; k < n; k++) rest[r++] = PyTuple_GET_ITEM(args[i], k);
            lens[i] = (unsigned char)(n + 1);
        } else {
            if (r == MOD_SPREAD_MOST) {
                PyErr_Format(PyExc_TypeError,
                             "a kernel takes at most %d arguments, counting each element of "
                             "a tuple of arrays",
                             MOD_SPREAD_MOST);
                return -1;
            }
            rest[r++] = args[i];
        }
    }
    *nrest = r;
    return 0;
}

/* Two compile-time values that compile the same kernel: the same object, or
 * equal and of one type (1, 1.0 and True type differently). A float NaN
 * equals itself here by its bits, or each launch would compile again. */
bool mod_constexpr_same(PyObject *a, PyObject *b) {
    if (a == b) return true;
    if (Py_TYPE(a) != Py_TYPE(b)) return false;
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyTuple_Check(a)) {
        if (PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) return false;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++)
            if (!mod_constexpr_same(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i))) return false;
        return true;
    }
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);
    if (eq == 0 && PyObject_HasAttrString(a, "tobytes")) { /* a NumPy scalar's NaN */
        PyObject *x = PyObject_CallMethod(a, "tobytes", NULL);
        PyObject *y = x ? PyObject_CallMethod(b, "tobytes", NULL) : NULL;
        eq = x && y ? PyObject_RichCompareBool(x, y, Py_EQ) : -1;
        Py_XDECREF(x);
        Py_XDECREF(y);
    }
    if (eq < 0) PyErr_Clear();
    return eq == 1;
}

PyObject *mod_constexpr_arrays(const mod_constexpr *c, const unsigned char *lens) {
    PyObject *d = PyDict_New();
    for (Py_ssize_t i = 0; d && i < c->nparams; i++) {
        if (!lens[i]) continue;
        PyObject *n = PyLong_FromLong(lens[i] - 1);
        if (!n || PyDict_SetItem(d, PyTuple_GET_ITEM(c->params, i), n) < 0) Py_CLEAR(d);
        Py_XDECREF(n);
    }
    return d;
}

PyObject *mod_constexpr_dict(const mod_constexpr *c, PyObject *values) {
    PyObject *d = PyDict_New();
    for (Py_ssize_t i = 0; d && i < PyTuple_GET_SIZE(values); i++)
        if (PyDict_SetItem(d, PyTuple_GET_ITEM(c->names, i), PyTuple_GET_ITEM(values, i)) < 0)
            Py_CLEAR(d);
    return d;
}

/* A value as a signature shows it: a type or a function by its name, a
 * dtype as NumPy prints it (float32), a tuple of such, anything else by
 * repr. New reference. */
static PyObject *shown(PyObject *v) {
    if (PyTuple_Check(v)) {
        PyObject *items = PyList_New(0), *sep = PyUnicode_FromString(", "), *joined = NULL;
        for (Py_ssize_t i = 0; items && i < PyTuple_GET_SIZE(v); i++) {
            PyObject *s = shown(PyTuple_GET_ITEM(v, i));
            if (!s || PyList_Append(items, s) < 0) Py_CLEAR(items);
            Py_XDECREF(s);
        }
        if (items && sep) joined = PyUnicode_Join(sep, items);
        PyObject *r =
            joined ? PyUnicode_FromFormat(PyTuple_GET_SIZE(v) == 1 ? "(%U,)" : "(%U)", joined)
                   : NULL;
        Py_XDECREF(items);
        Py_XDECREF(sep);
        Py_XDECREF(joined);
        return r;
    }
    if (PyType_Check(v)) {
        const char *name = ((PyTypeObject *)v)->tp_name, *dot = strrchr(name, '.');
        return PyUnicode_FromString(dot ? dot + 1 : name);
    }
    PyObject *dtype = PyObject_GetAttrString(mod_numpy_borrowed(), "dtype");
    int is_dtype = dtype ? PyObject_IsInstance(v, dtype) : -1;
    Py_XDECREF(dtype);
    if (is_dtype == 1) return PyObject_Str(v);
    PyObject *name = PyObject_GetAttrString(v, "__name__");
    PyErr_Clear();
    if (name && PyUnicode_Check(name)) return name;
    Py_XDECREF(name);
    return PyObject_Repr(v);
}

void mod_constexpr_describe(const mod_constexpr *c, PyObject *values, char *out, size_t len) {
    size_t used = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values) && used < len; i++) {
        PyObject *s = shown(PyTuple_GET_ITEM(values, i));
        used += (size_t)snprintf(out + used, len - used, "%s%s=%s", i ? ", " : "",
                                 PyUnicode_AsUTF8(PyTuple_GET_ITEM(c->names, i)),
                                 s ? PyUnicode_AsUTF8(s) : "?");
        Py_XDECREF(s);
        PyErr_Clear();
    }
}

/* offload.static_range(...): range's values; in a kernel, a loop over it is
 * unrolled at compile time (the JIT knows this object). */
static PyObject *static_range(PyObject *self, PyObject *args) {
    return PyObject_Call((PyObject *)&PyRange_Type, args, NULL);
}

static PyMethodDef functions[] = {
    {"static_range", static_range, METH_VARARGS,
     "static_range(stop) / static_range(start, stop[, step]): range() whose loop a kernel "
     "unrolls at compile time; its arguments must be compile-time ints."},
    {NULL, NULL, 0, NULL},
};

int mod_constexpr_add_functions(PyObject *module) {
    if (PyType_Ready(&ConstexprType) < 0 ||
        PyModule_AddObjectRef(module, "constexpr", (PyObject *)&ConstexprType) < 0)
        return -1;
    return PyModule_AddFunctions(module, functions);
}
