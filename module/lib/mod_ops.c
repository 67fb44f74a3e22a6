/* mod_ops: element-wise work on offload arrays -- ndarray's operators
 * (+ - * / // % ** & | ^ << >>, their reflected and in-place forms, unary
 * - + ~ abs, comparisons) and the functions offload.sqrt ... offload.where,
 * clip, astype, copy -- computed by JIT kernels where the operands live.
 *
 * NumPy answers every type question: ufunc.resolve_dtypes gives the loop's
 * dtypes (NEP 50: Python scalars are weak), so a kernel casts each array
 * operand to its loop dtype, computes as NumPy's loop does, and stores into
 * the result's dtype. A Python or NumPy scalar operand is converted to its
 * loop dtype on the host (NumPy raises for 300 into int8) and passed by
 * value. The result lives on the operands' device; two devices raise
 * ExecutionPlacementError; a NumPy array operand raises TypeError (no silent
 * copies, as CuPy and dpnp).
 *
 * Shapes broadcast as NumPy's; dimensions that are contiguous in every
 * operand are merged, so same-shaped C-contiguous operands run as one 1-D
 * kernel over the elements. The kernel text is written per (operation, loop
 * dtypes, scalar or array operands, dimensions) and compiled through
 * mod_gen; the JIT specialises it per layout (contiguous or strided) and
 * device. Reached through ndarray's slots (mod_lib_array_kernels) and the
 * offload namespace. */
#include "mod_lib.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_OPERANDS 4 /* the result and up to three inputs (where, clip) */

/* One operation: a NumPy ufunc (or np.where) and the expression computing an
 * element from $0, $1, $2 -- the operands already in their loop dtypes. */
typedef struct {
    const char *name; /* offload.<name>, numpy.<name> */
    int nin;
    const char *expr;
    const char *bool_expr; /* when the loop is bool and expr would not do */
} op_def;

/* Indices of ops[]: LIB_, as OP_ names jit_tree.h's operators. */
enum {
    LIB_ADD,
    LIB_SUB,
    LIB_MUL,
    LIB_TRUEDIV,
    LIB_FLOORDIV,
    LIB_MOD,
    LIB_POW,
    LIB_AND,
    LIB_OR,
    LIB_XOR,
    LIB_LSHIFT,
    LIB_RSHIFT,
    LIB_EQ,
    LIB_NE,
    LIB_LT,
    LIB_LE,
    LIB_GT,
    LIB_GE,
    LIB_NEG,
    LIB_POS,
    LIB_INVERT,
    LIB_ABS,
    LIB_SQRT,
    LIB_EXP,
    LIB_LOG,
    LIB_LOG1P,
    LIB_SIN,
    LIB_COS,
    LIB_TAN,
    LIB_TANH,
    LIB_ARCTAN2,
    LIB_FLOOR,
    LIB_CEIL,
    LIB_MINIMUM,
    LIB_MAXIMUM,
    LIB_ISNAN,
    LIB_ISFINITE,
    LIB_CLIP,
    LIB_WHERE,
    LIB_COPY,
    LIB_NOPS
};

static const op_def ops[LIB_NOPS] = {
    [LIB_ADD] = {"add", 2, "$0 + $1", "$0 or $1"},
    [LIB_SUB] = {"subtract", 2, "$0 - $1", NULL},
    [LIB_MUL] = {"multiply", 2, "$0 * $1", "$0 and $1"},
    [LIB_TRUEDIV] = {"divide", 2, "$0 / $1", NULL},
    [LIB_FLOORDIV] = {"floor_divide", 2, "$0 // $1", NULL},
    [LIB_MOD] = {"remainder", 2, "$0 % $1", NULL},
    [LIB_POW] = {"power", 2, "$0 ** $1", NULL},
    [LIB_AND] = {"bitwise_and", 2, "$0 & $1", NULL},
    [LIB_OR] = {"bitwise_or", 2, "$0 | $1", NULL},
    [LIB_XOR] = {"bitwise_xor", 2, "$0 ^ $1", NULL},
    [LIB_LSHIFT] = {"left_shift", 2, "$0 << $1", NULL},
    [LIB_RSHIFT] = {"right_shift", 2, "$0 >> $1", NULL},
    [LIB_EQ] = {"equal", 2, "$0 == $1", NULL},
    [LIB_NE] = {"not_equal", 2, "$0 != $1", NULL},
    [LIB_LT] = {"less", 2, "$0 < $1", NULL},
    [LIB_LE] = {"less_equal", 2, "$0 <= $1", NULL},
    [LIB_GT] = {"greater", 2, "$0 > $1", NULL},
    [LIB_GE] = {"greater_equal", 2, "$0 >= $1", NULL},
    [LIB_NEG] = {"negative", 1, "-$0", NULL},
    [LIB_POS] = {"positive", 1, "+$0", NULL},
    [LIB_INVERT] = {"invert", 1, "~$0", "not $0"},
    [LIB_ABS] = {"absolute", 1, "abs($0)", "$0"},
    [LIB_SQRT] = {"sqrt", 1, "np.sqrt($0)", NULL},
    [LIB_EXP] = {"exp", 1, "np.exp($0)", NULL},
    [LIB_LOG] = {"log", 1, "np.log($0)", NULL},
    [LIB_LOG1P] = {"log1p", 1, "np.log1p($0)", NULL},
    [LIB_SIN] = {"sin", 1, "np.sin($0)", NULL},
    [LIB_COS] = {"cos", 1, "np.cos($0)", NULL},
    [LIB_TAN] = {"tan", 1, "np.tan($0)", NULL},
    [LIB_TANH] = {"tanh", 1, "np.tanh($0)", NULL},
    [LIB_ARCTAN2] = {"arctan2", 2, "np.arctan2($0, $1)", NULL},
    [LIB_FLOOR] = {"floor", 1, "np.floor($0)", NULL},
    [LIB_CEIL] = {"ceil", 1, "np.ceil($0)", NULL},
    [LIB_MINIMUM] = {"minimum", 2, "np.minimum($0, $1)", "$0 and $1"},
    [LIB_MAXIMUM] = {"maximum", 2, "np.maximum($0, $1)", "$0 or $1"},
    [LIB_ISNAN] = {"isnan", 1, "np.isnan($0)", NULL},
    [LIB_ISFINITE] = {"isfinite", 1, "np.isfinite($0)", NULL},
    [LIB_CLIP] = {"clip", 3, "np.minimum(np.maximum($0, $1), $2)", "($0 or $1) and $2"},
    [LIB_WHERE] = {"where", 3, "$1 if $0 else $2", NULL},
    [LIB_COPY] = {"copy", 1, "$0", NULL},
};

/* ---- operands ---- */

typedef struct {
    PyObject *obj;   /* borrowed: what the caller passed */
    mod_array *arr;  /* obj when it is an offload array, else NULL (a scalar) */
    PyObject *loop;  /* owned: its dtype in the loop */
    PyObject *value; /* owned: a scalar converted to that dtype */
} operand;

static void operands_clear(operand *o, int n) {
    for (int i = 0; i < n; i++) {
        Py_CLEAR(o[i].loop);
        Py_CLEAR(o[i].value);
    }
}

/* 1: o is an operand; 0: not one of ours (an operator returns NotImplemented);
 * -1: TypeError, for NumPy arrays and sequences (never a silent copy). */
static int classify(PyObject *o, const char *what, operand *out) {
    memset(out, 0, sizeof *out);
    out->obj = o;
    if (mod_array_check(o)) {
        out->arr = (mod_array *)o;
        return 1;
    }
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || mod_is_numpy_scalar(o)) return 1;
    if (mod_is_numpy_array(o) || PyList_Check(o) || PyTuple_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: an offload array cannot be combined with a %s; call offload.asarray(...) "
                     "on it first "
                     "(offload never copies to the device behind your back)",
                     what, Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

/* What resolve_dtypes takes for an operand: its dtype, or int / float for a
 * weak Python scalar (NEP 50); a Python bool is a bool. A NumPy scalar is
 * strong, np.float64 too although it subclasses float. */
static PyObject *dtype_spec(const operand *o) {
    if (o->arr) return Py_NewRef(o->arr->dtype);
    if (mod_is_numpy_scalar(o->obj)) return PyObject_GetAttrString(o->obj, "dtype");
    if (PyBool_Check(o->obj))
        return PyObject_CallMethod(mod_numpy_borrowed(), "dtype", "s", "bool");
    if (PyLong_Check(o->obj)) return Py_NewRef((PyObject *)&PyLong_Type);
    if (PyFloat_Check(o->obj)) return Py_NewRef((PyObject *)&PyFloat_Type);
    return PyObject_GetAttrString(o->obj, "dtype");
}

/* A loop dtype offload arrays hold, or a TypeError saying what NumPy chose. */
static int check_supported(const char *what, PyObject *dtype) {
    PyObject *ours = mod_dtype_new(dtype);
    if (ours) {
        Py_DECREF(ours);
        return 0;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "%s: NumPy computes this in %S, which offload arrays do not hold (they hold bool, "
                 "int8-int64, "
                 "uint8-uint64, float32 and float64); convert first, e.g. x.astype('float32')",
                 what, dtype);
    return -1;
}

/* The loop dtypes of a ufunc for the inputs (and the result, when it is an
 * existing array: NumPy's same_kind rule for in-place operators). Fills
 * in[i].loop and *result; NumPy's own TypeError when there is no loop. */
static int resolve_ufunc(const op_def *op, operand *in, int nin, PyObject *out_dtype,
                         PyObject **result) {
    /* numpy.clip is a function around the ufunc numpy._core.umath.clip */
    PyObject *ufunc = op == &ops[LIB_CLIP] ? PyImport_ImportModule("numpy._core.umath")
                                           : Py_NewRef(mod_numpy_borrowed());
    Py_XSETREF(ufunc, ufunc ? PyObject_GetAttrString(ufunc, op->name) : NULL);
    if (!ufunc) return -1;
    PyObject *specs = PyTuple_New(nin + 1), *loop = NULL;
    for (int i = 0; specs && i < nin; i++) {
        PyObject *s = dtype_spec(&in[i]);
        if (!s)
            Py_CLEAR(specs);
        else
            PyTuple_SET_ITEM(specs, i, s);
    }
    if (specs) {
        PyTuple_SET_ITEM(specs, nin, Py_NewRef(out_dtype ? out_dtype : Py_None));
        PyObject *args = PyTuple_Pack(1, specs);
        PyObject *kw = out_dtype ? Py_BuildValue("{ss}", "casting", "same_kind") : NULL;
        PyObject *resolve = PyObject_GetAttrString(ufunc, "resolve_dtypes");
        if (args && resolve && (kw || !out_dtype)) loop = PyObject_Call(resolve, args, kw);
        Py_XDECREF(args);
        Py_XDECREF(kw);
        Py_XDECREF(resolve);
    }
    Py_XDECREF(specs);
    Py_DECREF(ufunc);
    if (!loop) return -1;
    int rc = 0;
    for (int i = 0; i <= nin && rc == 0; i++)
        rc = check_supported(op->name, PyTuple_GET_ITEM(loop, i));
    for (int i = 0; i < nin && rc == 0; i++)
        if (!(in[i].loop = mod_dtype_new(PyTuple_GET_ITEM(loop, i)))) rc = -1;
    if (rc == 0) *result = mod_dtype_new(PyTuple_GET_ITEM(loop, nin));
    Py_DECREF(loop);
    return rc == 0 && *result ? 0 : -1;
}

/* np.where's dtype: numpy.result_type of the two choices (weak scalars). */
static int resolve_where(operand *in, PyObject **result) {
    PyObject *a = in[1].arr ? in[1].arr->dtype : in[1].obj,
             *b = in[2].arr ? in[2].arr->dtype : in[2].obj;
    PyObject *rt = PyObject_CallMethod(mod_numpy_borrowed(), "result_type", "OO", a, b);
    if (!rt || check_supported("where", rt) < 0) {
        Py_XDECREF(rt);
        return -1;
    }
    *result = mod_dtype_new(rt);
    Py_DECREF(rt);
    if (!*result) return -1;
    in[0].loop = mod_dtype_new((PyObject *)&PyBool_Type);
    in[1].loop = Py_NewRef(*result);
    in[2].loop = Py_NewRef(*result);
    return in[0].loop ? 0 : -1;
}

static bool integer_dtype(PyObject *dtype) {
    const char *name = mod_dtype_name(dtype);
    return !strncmp(name, "int", 3) || !strncmp(name, "uint", 4);
}

/* A scalar in its loop dtype, as NumPy converts it: 300 into int8 raises
 * OverflowError. A comparison with an integer array is the exception: NumPy
 * compares an out-of-range Python int exactly, so it is passed as int64
 * instead -- or, beyond int64 too, as an infinity of its sign, which every
 * integer element compares with as with the int. (A bool or float array's
 * loop is int64 or the float: NumPy raises there, and so does this.) */
static int convert_scalar(const op_def *op, operand *o, const operand *other) {
    PyObject *type = PyObject_GetAttrString(o->loop, "type");
    o->value = type ? PyObject_CallOneArg(type, o->obj) : NULL;
    Py_XDECREF(type);
    bool comparison =
        op >= &ops[LIB_EQ] && op <= &ops[LIB_GE] && other->arr && integer_dtype(other->arr->dtype);
    if (!o->value && comparison && PyLong_Check(o->obj) &&
        PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        o->value = PyObject_CallMethod(mod_numpy_borrowed(), "int64", "O", o->obj);
        if (!o->value && PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            int negative = PyObject_RichCompareBool(o->obj, Py_False, Py_LT);
            if (negative >= 0)
                o->value = PyObject_CallMethod(mod_numpy_borrowed(), "float64", "s",
                                               negative ? "-inf" : "inf");
        }
    }
    return o->value ? 0 : -1;
}

/* ---- shapes ---- */

typedef struct {
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS];
    Py_ssize_t strides[MAX_OPERANDS][MOD_MAXDIMS]; /* per array operand, 0 where broadcast */
} layout;

static PyObject *shapes_str(const operand *in, int nin) {
    PyObject *parts = PyList_New(0);
    for (int i = 0; parts && i < nin; i++) {
        if (!in[i].arr) continue;
        PyObject *t = mod_int_tuple(in[i].arr->nd, in[i].arr->shape);
        PyObject *s = t ? PyObject_Repr(t) : NULL;
        if (!s || PyList_Append(parts, s) < 0) Py_CLEAR(parts);
        Py_XDECREF(t);
        Py_XDECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(" ");
    PyObject *r = parts && sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(parts);
    Py_XDECREF(sep);
    return r;
}

/* NumPy's broadcast of the array operands' shapes into l->shape. */
static int broadcast(const operand *in, int nin, layout *l) {
    l->nd = 0;
    for (int i = 0; i < nin; i++)
        if (in[i].arr && in[i].arr->nd > l->nd) l->nd = in[i].arr->nd;
    for (int d = 0; d < l->nd; d++) l->shape[d] = 1;
    for (int i = 0; i < nin; i++) {
        mod_array *a = in[i].arr;
        if (!a) continue;
        for (int d = 0; d < a->nd; d++) {
            Py_ssize_t *s = &l->shape[l->nd - a->nd + d], n = a->shape[d];
            if (n == *s || n == 1) continue;
            if (*s != 1) {
                PyObject *shapes = shapes_str(in, nin);
                if (shapes)
                    PyErr_Format(PyExc_ValueError,
                                 "operands could not be broadcast together with shapes %U", shapes);
                Py_XDECREF(shapes);
                return -1;
            }
            *s = n;
        }
    }
    return 0;
}

/* Operand k's strides over l's shape: its own, 0 where it broadcasts. */
static void broadcast_strides(layout *l, int k, const mod_array *a) {
    for (int d = 0; d < l->nd; d++) {
        int ad = d - (l->nd - a->nd);
        l->strides[k][d] = ad < 0 || a->shape[ad] == 1 ? 0 : a->strides[ad];
    }
}

/* Drops dimensions of size 1 and merges neighbours that are contiguous in
 * every operand, so most launches are 1-D over the elements. */
static void collapse(layout *l, int nops) {
    int nd = 0;
    for (int d = 0; d < l->nd; d++) {
        if (l->shape[d] == 1) continue;
        if (nd > 0) {
            bool merge = true;
            for (int k = 0; k < nops && merge; k++)
                merge = l->strides[k][nd - 1] == l->strides[k][d] * l->shape[d];
            if (merge) {
                l->shape[nd - 1] *= l->shape[d];
                for (int k = 0; k < nops; k++) l->strides[k][nd - 1] = l->strides[k][d];
                continue;
            }
        }
        l->shape[nd] = l->shape[d];
        for (int k = 0; k < nops; k++) l->strides[k][nd] = l->strides[k][d];
        nd++;
    }
    if (nd == 0) { /* one element */
        l->shape[0] = 1;
        for (int k = 0; k < nops; k++) l->strides[k][0] = 0;
        nd = 1;
    }
    l->nd = nd;
}

/* ---- kernels ---- */

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...) {
    size_t used = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* One statement `out[index] = <op's expression>`, each array operand read as
 * elem (a printf format taking the operand's number) and cast to its loop
 * dtype; scalars come as parameters x<i>, already in theirs. */
static void store_text(const op_def *op, const operand *in, int nin, const char *indent,
                       const char *index, const char *elem, char *src, size_t src_len) {
    char val[MAX_OPERANDS][96];
    for (int i = 0; i < nin; i++) {
        char e[48];
        if (in[i].arr)
            snprintf(e, sizeof e, elem, i);
        else
            snprintf(e, sizeof e, "x%d", i);
        bool cast = in[i].arr && in[i].arr->dtype != in[i].loop; /* canonical dtypes: identity */
        if (cast)
            snprintf(val[i], sizeof val[i], "np.%s(%s)", mod_dtype_name(in[i].loop), e);
        else
            snprintf(val[i], sizeof val[i], "%s", e);
    }
    bool bool_loop = strcmp(mod_dtype_name(in[0].loop), "bool") ==
                     0; /* ops with a bool_expr have one loop dtype */
    const char *expr = bool_loop && op->bool_expr ? op->bool_expr : op->expr;
    append(src, src_len, "%sout[%s] = ", indent, index);
    for (const char *p = expr; *p; p++) {
        if (*p == '$' && p[1] >= '0' && p[1] < '0' + nin) {
            append(src, src_len, "(%s)", val[p[1] - '0']);
            p++;
        } else {
            append(src, src_len, "%c", *p);
        }
    }
    append(src, src_len, "\n");
}

/* Work-items of a 1-D kernel each do `unroll` elements, m apart (m: the
 * work-items), loading all before storing any: on an H100 that takes x * 4.0
 * from 80 % to the device copy's bandwidth. A CPU device vectorises across
 * work-items instead, and the unrolled body with its tail loop defeats that
 * (Intel's runtime: 4.3 ms for x * 4 over 2^22 float32, 1 ms with one
 * element per work-item): there each work-item does one. */
#define UNROLL 4

static int unroll_for(ofl_device *dev) {
    return ofl_device_get_info(dev)->type == OFL_CPU ? 1 : UNROLL;
}

/* The kernel text for op over nd dimensions: parameters out, then one per
 * input (an array, or a scalar already in its loop dtype). */
static void kernel_text(const op_def *op, const operand *in, int nin, int nd, int unroll,
                        char *name, size_t name_len, char *src, size_t src_len) {
    snprintf(name, name_len, "%s_", op->name);
    for (int i = 0; i < nin; i++)
        append(name, name_len, "%s%s%s", i ? "_" : "",
               in[i].arr ? mod_dtype_name(in[i].arr->dtype) : "s",
               in[i].arr ? "" : mod_dtype_name(in[i].loop));
    append(name, name_len, "_%dd%s", nd, nd == 1 && unroll == 1 ? "_1" : "");
    snprintf(src, src_len, "def %s(it, out", name);
    for (int i = 0; i < nin; i++) append(src, src_len, ", x%d", i);
    append(src, src_len, "):\n");
    if (nd > 1) {
        char idx[32] = "", elem[48];
        for (int d = 0; d < nd; d++) {
            append(idx, sizeof idx, "%si%d", d ? ", " : "", d);
            append(src, src_len, "    i%d = it.get_id(%d)\n", d, d);
        }
        snprintf(elem, sizeof elem, "x%%d[%s]", idx);
        store_text(op, in, nin, "    ", idx, elem, src, src_len);
        return;
    }
    if (unroll == 1) {
        append(src, src_len, "    i = it.get_id(0)\n");
        store_text(op, in, nin, "    ", "i", "x%d[i]", src, src_len);
        return;
    }
    append(src, src_len,
           "    i = it.get_id(0)\n    m = it.get_range(0)\n    n = out.shape[0]\n"
           "    if i + %d * m < n:\n",
           unroll - 1);
    for (int i = 0; i < nin; i++)
        for (int u = 0; in[i].arr && u < unroll; u++)
            append(src, src_len, "        x%d_%d = x%d[i + %d * m]\n", i, u, i, u);
    for (int u = 0; u < unroll; u++) {
        char idx[32], elem[32];
        snprintf(idx, sizeof idx, "i + %d * m", u);
        snprintf(elem, sizeof elem, "x%%d_%d", u);
        store_text(op, in, nin, "        ", idx, elem, src, src_len);
    }
    append(src, src_len, "    else:\n        for k in range(i, n, m):\n");
    store_text(op, in, nin, "            ", "k", "x%d[k]", src, src_len);
}

/* Launches the kernel over l (array operands' strides in l, the result
 * first), one launch per index of the dimensions beyond the kernel's 3. */
static int launch(const char *name, const char *src, mod_array **arrs, const operand *in, int nin,
                  const layout *l, int kdims, int unroll) {
    int lead = l->nd - kdims;
    Py_ssize_t idx[MOD_MAXDIMS] = {0};
    for (;;) {
        PyObject *args[MAX_OPERANDS] = {NULL};
        int rc = 0;
        for (int k = 0, a = 0; k <= nin && rc == 0; k++) {
            if (k > 0 && !in[k - 1].arr) {
                args[k] = Py_NewRef(in[k - 1].value);
                continue;
            }
            Py_ssize_t off = arrs[a]->offset;
            for (int d = 0; d < lead; d++) off += idx[d] * l->strides[a][d];
            args[k] = mod_array_view(arrs[a], kdims, l->shape + lead, l->strides[a] + lead, off);
            if (!args[k]) rc = -1;
            a++;
        }
        Py_ssize_t items = (l->shape[lead] + unroll - 1) / unroll; /* a 1-D kernel's work-items */
        PyObject *r = rc == 0 ? mod_gen_launch(name, src, kdims,
                                               kdims == 1 ? &items : l->shape + lead, args, nin + 1)
                              : NULL;
        for (int k = 0; k <= nin; k++) Py_XDECREF(args[k]);
        if (!r) return -1;
        Py_DECREF(r);
        int d = lead - 1; /* next index of the leading dimensions */
        while (d >= 0 && ++idx[d] == l->shape[d]) idx[d--] = 0;
        if (d < 0) return 0;
    }
}

/* Whether b's elements overlap a's without being the very same elements
 * (x[1:] += x[:-1] must read x before writing it, as NumPy does). */
static bool overlaps_differently(const mod_array *a, const mod_array *b) {
    if (a->mem != b->mem) return false;
    if (a->offset == b->offset && a->nd == b->nd &&
        !memcmp(a->shape, b->shape, sizeof(Py_ssize_t) * (size_t)a->nd) &&
        !memcmp(a->strides, b->strides, sizeof(Py_ssize_t) * (size_t)a->nd))
        return false;
    return true; /* conservative: sharing memory at another layout */
}

static PyObject *run(const op_def *op, PyObject *const *args, int nin, mod_array *out,
                     PyObject *dtype);

/* A C-contiguous copy of a on its device, by kernel. */
static PyObject *copy_of(mod_array *a) {
    PyObject *arg = (PyObject *)a;
    return run(&ops[LIB_COPY], &arg, 1, NULL, NULL);
}

/* op on args (offload arrays and scalars), into out (in-place operators) or a
 * new array of NumPy's result dtype -- or of dtype, for astype. */
static PyObject *run(const op_def *op, PyObject *const *args, int nin, mod_array *out,
                     PyObject *dtype) {
    operand in[MAX_OPERANDS - 1];
    PyObject *result_dtype = NULL, *result = NULL, *copies[MAX_OPERANDS] = {NULL};
    ofl_device *dev = NULL;
    int first = -1;
    for (int i = 0; i < nin; i++) {
        int c = classify(args[i], op->name, &in[i]);
        if (c <= 0) {
            if (c == 0)
                PyErr_Format(PyExc_TypeError, "%s: unsupported operand type %s", op->name,
                             Py_TYPE(args[i])->tp_name);
            operands_clear(in, i);
            return NULL;
        }
        if (!in[i].arr) continue;
        ofl_device *d = mod_array_device(in[i].arr);
        if (!dev) {
            dev = d;
            first = i;
        } else if (d != dev) {
            PyErr_Format(
                mod_ExecutionPlacementError,
                "%s: operands live on two devices: operand %d on %s and operand %d on %s; move one "
                "with .to_device(...)",
                op->name, first + 1, ofl_device_get_info(dev)->filter, i + 1,
                ofl_device_get_info(d)->filter);
            operands_clear(in, i + 1);
            return NULL;
        }
    }
    if (!dev) {
        operands_clear(in, nin);
        return PyErr_Format(PyExc_TypeError, "offload.%s needs at least one offload array",
                            op->name);
    }
    if (out && mod_array_device(out) != dev) {
        PyErr_Format(mod_ExecutionPlacementError, "%s: the result lives on %s and an operand on %s",
                     op->name, ofl_device_get_info(mod_array_device(out))->filter,
                     ofl_device_get_info(dev)->filter);
        goto done;
    }
    int rc;
    if (op == &ops[LIB_WHERE])
        rc = resolve_where(in, &result_dtype);
    else if (op == &ops[LIB_COPY]) { /* copy and astype: the input's dtype in, any dtype out */
        in[0].loop = Py_NewRef(in[0].arr->dtype);
        result_dtype = Py_NewRef(dtype ? dtype : in[0].arr->dtype);
        rc = 0;
    } else
        rc = resolve_ufunc(op, in, nin, out ? out->dtype : NULL, &result_dtype);
    for (int i = 0; i < nin && rc == 0; i++)
        if (!in[i].arr) rc = convert_scalar(op, &in[i], &in[nin == 2 ? 1 - i : 0]);
    layout l;
    if (rc < 0 || broadcast(in, nin, &l) < 0) goto done;
    if (out) {
        bool fits =
            out->nd == l.nd && !memcmp(out->shape, l.shape, sizeof(Py_ssize_t) * (size_t)l.nd);
        if (!fits) {
            PyObject *o = mod_int_tuple(out->nd, out->shape), *b = mod_int_tuple(l.nd, l.shape);
            if (o && b)
                PyErr_Format(PyExc_ValueError,
                             "non-broadcastable output operand with shape %R doesn't match the "
                             "broadcast shape %R",
                             o, b);
            Py_XDECREF(o);
            Py_XDECREF(b);
            goto done;
        }
        result = Py_NewRef(out);
    } else if (!(result = mod_array_new_empty(dev, result_dtype, l.nd, l.shape))) {
        goto done;
    }
    Py_ssize_t size = 1;
    for (int d = 0; d < l.nd; d++) size *= l.shape[d];
    if (size == 0) goto done;
    /* the array operands, the result first; inputs overlapping the result read from a copy */
    mod_array *arrs[MAX_OPERANDS] = {(mod_array *)result};
    int narr = 1;
    for (int i = 0; i < nin; i++) {
        if (!in[i].arr) continue;
        mod_array *a = in[i].arr;
        if (out && overlaps_differently(out, a)) {
            if (!(copies[narr] = copy_of(a))) goto fail;
            a = (mod_array *)copies[narr];
        }
        arrs[narr++] = a;
    }
    for (int k = 0; k < narr; k++) broadcast_strides(&l, k, arrs[k]);
    collapse(&l, narr);
    int kdims = l.nd < 3 ? l.nd : 3;
    char name[160], src[4096];
    int unroll = unroll_for(mod_array_device(arrs[0]));
    kernel_text(op, in, nin, kdims, unroll, name, sizeof name, src, sizeof src);
    if (launch(name, src, arrs, in, nin, &l, kdims, unroll) == 0) goto done;
fail:
    Py_CLEAR(result);
done:
    for (int k = 0; k < MAX_OPERANDS; k++) Py_XDECREF(copies[k]);
    Py_XDECREF(result_dtype);
    operands_clear(in, nin);
    return result;
}

/* ---- ndarray's slots ---- */

/* The operator's NotImplemented for operands that are not ours, so that
 * Python asks the other operand; NumPy arrays and sequences raise instead. */
static int both_ours(PyObject *a, PyObject *b, const char *what) {
    operand o;
    int ra = classify(a, what, &o);
    if (ra < 0) return -1;
    int rb = classify(b, what, &o);
    return rb < 0 ? -1 : ra && rb;
}

static PyObject *binary(int op, PyObject *a, PyObject *b) {
    int ok = both_ours(a, b, ops[op].name);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    PyObject *args[2] = {a, b};
    return run(&ops[op], args, 2, NULL, NULL);
}

static PyObject *inplace(int op, PyObject *a, PyObject *b) {
    int ok = both_ours(a, b, ops[op].name);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    PyObject *args[2] = {a, b};
    return run(&ops[op], args, 2, (mod_array *)a, NULL);
}

static PyObject *unary(int op, PyObject *a) { return run(&ops[op], &a, 1, NULL, NULL); }

#define BINARY(fn, op)                                                                             \
    static PyObject *nb_##fn(PyObject *a, PyObject *b) { return binary(op, a, b); }                \
    static PyObject *nb_inplace_##fn(PyObject *a, PyObject *b) { return inplace(op, a, b); }
BINARY(add, LIB_ADD)
BINARY(subtract, LIB_SUB)
BINARY(multiply, LIB_MUL)
BINARY(true_divide, LIB_TRUEDIV)
BINARY(floor_divide, LIB_FLOORDIV)
BINARY(remainder, LIB_MOD)
BINARY(and, LIB_AND)
BINARY(or, LIB_OR)
BINARY(xor, LIB_XOR)
BINARY(lshift, LIB_LSHIFT)
BINARY(rshift, LIB_RSHIFT)
#undef BINARY

/* NumPy's `**` takes sqrt for a float array to a scalar 0.5 (its fast scalar
 * power), which differs from pow for -inf and -0.0: so here too. */
static bool sqrt_power(PyObject *a, PyObject *b) {
    if (!mod_array_check(a) || !(PyFloat_Check(b) || PyLong_Check(b)) ||
        PyFloat_AsDouble(b) != 0.5) {
        PyErr_Clear();
        return false;
    }
    PyObject *kind = PyObject_GetAttrString(((mod_array *)a)->dtype, "kind");
    bool inexact =
        kind && PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, "f") == 0;
    Py_XDECREF(kind);
    PyErr_Clear();
    return inexact;
}

/* ... and np.square for a bool array to a Python int 2, whose result is int8. */
static bool bool_square(PyObject *a, PyObject *b) {
    if (!mod_array_check(a) || !PyLong_CheckExact(b) || PyLong_AsLong(b) != 2) {
        PyErr_Clear();
        return false;
    }
    return ((mod_array *)a)->dtype == mod_dtype_find_borrowed('b', 1);
}

static PyObject *nb_power(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED; /* pow(x, y, m) is not an array operation */
    if (sqrt_power(a, b)) return unary(LIB_SQRT, a);
    if (bool_square(a, b)) {
        PyObject *as_int8 = mod_ops_copy((mod_array *)a, mod_dtype_find_borrowed('i', 1));
        PyObject *r = as_int8 ? binary(LIB_POW, as_int8, b) : NULL;
        Py_XDECREF(as_int8);
        return r;
    }
    return binary(LIB_POW, a, b);
}
static PyObject *nb_inplace_power(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    if (sqrt_power(a, b)) return run(&ops[LIB_SQRT], &a, 1, (mod_array *)a, NULL);
    return inplace(LIB_POW, a, b);
}
static PyObject *nb_negative(PyObject *a) { return unary(LIB_NEG, a); }
static PyObject *nb_positive(PyObject *a) { return unary(LIB_POS, a); }
static PyObject *nb_invert(PyObject *a) { return unary(LIB_INVERT, a); }
static PyObject *nb_absolute(PyObject *a) { return unary(LIB_ABS, a); }

static PyObject *richcompare(PyObject *a, PyObject *b, int cmp) {
    static const int op[] = {[Py_LT] = LIB_LT, [Py_LE] = LIB_LE, [Py_EQ] = LIB_EQ,
                             [Py_NE] = LIB_NE, [Py_GT] = LIB_GT, [Py_GE] = LIB_GE};
    return binary(op[cmp], a, b);
}

void mod_ops_fill_slots(PyTypeObject *type) {
    PyNumberMethods *nb = type->tp_as_number;
#define SLOTS(fn) nb->nb_##fn = nb_##fn, nb->nb_inplace_##fn = nb_inplace_##fn
    SLOTS(add);
    SLOTS(subtract);
    SLOTS(multiply);
    SLOTS(true_divide);
    SLOTS(floor_divide);
    SLOTS(remainder);
    SLOTS(power);
    SLOTS(and);
    SLOTS(or);
    SLOTS(xor);
    SLOTS(lshift);
    SLOTS(rshift);
#undef SLOTS
    nb->nb_negative = nb_negative;
    nb->nb_positive = nb_positive;
    nb->nb_invert = nb_invert;
    nb->nb_absolute = nb_absolute;
    type->tp_richcompare = richcompare;
}

PyObject *mod_ops_copy(mod_array *a, PyObject *dtype) {
    PyObject *arg = (PyObject *)a;
    return run(&ops[LIB_COPY], &arg, 1, NULL, dtype);
}

int mod_ops_copy_into(mod_array *dst, PyObject *src) {
    PyObject *r = run(&ops[LIB_COPY], &src, 1, dst, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* ---- functions in the offload namespace ---- */

/* offload.<ufunc>(x[, y]): self is the operation's index. */
static PyObject *f_ufunc(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const op_def *op = &ops[PyLong_AsLong(self)];
    if (nargs != op->nin)
        return PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s (%zd given)", op->name,
                            op->nin, op->nin == 1 ? "" : "s", nargs);
    return run(op, args, op->nin, NULL, NULL);
}

static PyObject *f_where(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError,
                            "where(condition, x, y) takes 3 arguments (%zd given); offload "
                            "has no one-argument where (nonzero)",
                            nargs);
    return run(&ops[LIB_WHERE], args, 3, NULL, NULL);
}

static PyObject *f_clip(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "a_min", "a_max", NULL};
    PyObject *x, *lo = Py_None, *hi = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:clip", kwlist, &x, &lo, &hi)) return NULL;
    /* as numpy's _clip: a Python int bound beyond an integer array's range is no bound */
    if (mod_array_check(x) && integer_dtype(((mod_array *)x)->dtype)) {
        PyObject *info =
            PyObject_CallMethod(mod_numpy_borrowed(), "iinfo", "O", ((mod_array *)x)->dtype);
        PyObject *min = info ? PyObject_GetAttrString(info, "min") : NULL;
        PyObject *max = info ? PyObject_GetAttrString(info, "max") : NULL;
        int lo_out = min && PyLong_CheckExact(lo) ? PyObject_RichCompareBool(lo, min, Py_LE) : 0;
        int hi_out = max && PyLong_CheckExact(hi) ? PyObject_RichCompareBool(hi, max, Py_GE) : 0;
        Py_XDECREF(info);
        Py_XDECREF(min);
        Py_XDECREF(max);
        if (!max || lo_out < 0 || hi_out < 0) return NULL;
        if (lo_out) lo = Py_None;
        if (hi_out) hi = Py_None;
    }
    PyObject *xs[3] = {x, lo, hi};
    if (lo != Py_None && hi != Py_None) return run(&ops[LIB_CLIP], xs, 3, NULL, NULL);
    if (lo != Py_None) return run(&ops[LIB_MAXIMUM], xs, 2, NULL, NULL);
    if (hi != Py_None) return run(&ops[LIB_MINIMUM], (PyObject *[]){x, hi}, 2, NULL, NULL);
    return run(&ops[LIB_POS], xs, 1, NULL, NULL); /* numpy.positive: a copy, a TypeError for bool */
}

static mod_array *array_arg(PyObject *x, const char *fn) {
    if (mod_array_check(x)) return (mod_array *)x;
    PyErr_Format(PyExc_TypeError, "offload.%s needs an offload array, not %s%s", fn,
                 Py_TYPE(x)->tp_name,
                 mod_is_numpy_array(x) ? " (call offload.asarray(...) on it first)" : "");
    return NULL;
}

static PyObject *f_astype(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "dtype", "copy", NULL};
    PyObject *x, *spec, *copy = Py_True;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:astype", kwlist, &x, &spec, &copy) ||
        !array_arg(x, "astype"))
        return NULL;
    PyObject *method = PyObject_GetAttrString(x, "astype");
    PyObject *r = method ? PyObject_CallFunctionObjArgs(method, spec, copy, NULL) : NULL;
    Py_XDECREF(method);
    return r;
}

static PyObject *f_copy(PyObject *self, PyObject *x) {
    mod_array *a = array_arg(x, "copy");
    return a ? mod_ops_copy(a, NULL) : NULL;
}

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL
static PyMethodDef functions[] = {
    {"where", FASTCALL(f_where),
     "where(condition, x, y) -> ndarray: x where condition, else y (NumPy's dtype)"},
    {"clip", (PyCFunction)(void (*)(void))f_clip, METH_VARARGS | METH_KEYWORDS,
     "clip(a, a_min, a_max) -> ndarray: a limited to [a_min, a_max] (NaN propagates, as NumPy)"},
    {"astype", (PyCFunction)(void (*)(void))f_astype, METH_VARARGS | METH_KEYWORDS,
     "astype(x, dtype, copy=True) -> ndarray: x converted on its device"},
    {"copy", f_copy, METH_O, "copy(x) -> ndarray: a C-contiguous copy on x's device"},
    {NULL},
};

/* The ufuncs offload exposes under NumPy's names (abs is absolute's alias). */
static PyMethodDef ufunc_defs[LIB_NOPS];

int mod_ops_add_functions(PyObject *module) {
    PyObject *none = Py_None;
    if (PyDict_SetItemString(mod_ArrayType.tp_dict, "__array_ufunc__", none) < 0) return -1;
    PyType_Modified(
        &mod_ArrayType); /* NumPy's ufuncs defer to our operators, which refuse to mix */
    for (int i = 0; i < LIB_NOPS; i++) {
        if (i == LIB_CLIP || i == LIB_WHERE || i == LIB_COPY) continue;
        ufunc_defs[i] = (PyMethodDef){ops[i].name, FASTCALL(f_ufunc), NULL};
        PyObject *index = PyLong_FromLong(i);
        PyObject *fn = index ? PyCFunction_NewEx(&ufunc_defs[i], index, NULL) : NULL;
        Py_XDECREF(index);
        if (!fn || PyModule_AddObjectRef(module, ops[i].name, fn) < 0 ||
            (i == LIB_ABS && PyModule_AddObjectRef(module, "abs", fn) < 0)) {
            Py_XDECREF(fn);
            return -1;
        }
        Py_DECREF(fn);
    }
    return PyModule_AddFunctions(module, functions);
}
