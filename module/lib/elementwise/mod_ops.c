/* mod_ops: element-wise work on offload arrays -- ndarray's operators
 * (+ - * / // % ** & | ^ << >>, their reflected and in-place forms, unary
 * - + ~ abs, comparisons) and the functions: every element-wise function of
 * the array API 2024.12 under its name and NumPy's (offload.sin, offload.acos
 * and offload.arccos, ...), NumPy's other ufuncs of real numbers (fmax, cbrt,
 * heaviside, ...), where, clip, round, real, imag, astype, copy -- computed
 * by elementwise.py's kernel (module/kernels/) where the operands live, one
 * device function per NumPy loop. Complex operands (and weak Python complex
 * scalars) take NumPy's complex loops: the JIT's complex arithmetic and
 * cmath functions, and <name>_complex where NumPy's loop differs from the
 * real one (sign, reciprocal, rint, the orderings); real/imag of a complex
 * array are float views of its parts, as NumPy's.
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
 * kernel over the elements. The kernel is specialised on the loop's device
 * function, the loop dtypes (scalar or array operands) and the dimensions;
 * the JIT specialises it further per layout (contiguous or strided) and
 * device. Reached through ndarray's slots (mod_lib_array_kernels) and the
 * offload namespace. */
#include "lib/elementwise/mod_elementwise.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPERANDS 4 /* the result and up to three inputs (where, clip) */

/* One operation: a NumPy ufunc (or np.where), computed by the device
 * function of its name in module/kernels/elementwise.py from operands
 * already in their loop dtypes -- or by <name>_bool, <name>_int or
 * <name>_complex, where the loops say (LOOP_*) that NumPy's bool, integer
 * or complex loop computes otherwise. */
enum { LOOP_BOOL = 1, LOOP_INT = 2, LOOP_COMPLEX = 4 };
typedef struct {
    const char *name; /* offload.<name>, numpy.<name>, elementwise.<name> */
    int nin;
    int loops;          /* LOOP_*: the loops with device functions of their own */
    const char *typing; /* the ufunc whose loops type it, when not numpy.<name> */
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
    LIB_ARCSIN,
    LIB_ARCCOS,
    LIB_ARCTAN,
    LIB_SINH,
    LIB_COSH,
    LIB_ARCSINH,
    LIB_ARCCOSH,
    LIB_ARCTANH,
    LIB_EXPM1,
    LIB_EXP2,
    LIB_LOG2,
    LIB_LOG10,
    LIB_CBRT,
    LIB_TRUNC,
    LIB_RINT,
    LIB_FABS,
    LIB_ISINF,
    LIB_SIGNBIT,
    LIB_SIGN,
    LIB_SQUARE,
    LIB_RECIPROCAL,
    LIB_CONJ,
    LIB_COPYSIGN,
    LIB_HYPOT,
    LIB_NEXTAFTER,
    LIB_LOGADDEXP,
    LIB_LOGADDEXP2,
    LIB_LOGICAL_AND,
    LIB_LOGICAL_OR,
    LIB_LOGICAL_XOR,
    LIB_LOGICAL_NOT,
    LIB_FMAX,
    LIB_FMIN,
    LIB_FMOD,
    LIB_HEAVISIDE,
    LIB_DEG2RAD,
    LIB_RAD2DEG,
    LIB_FLOAT_POWER,
    LIB_CLIP,
    LIB_WHERE,
    LIB_COPY,
    LIB_ROUND_UP,   /* round(x, decimals > 0) of floats */
    LIB_ROUND_DOWN, /* round(x, decimals < 0) of floats */
    LIB_COPY_REAL,  /* a complex array into a real one: NumPy's cast drops the imaginary part */
    LIB_NOPS
};

static const op_def ops[LIB_NOPS] = {
    [LIB_ADD] = {"add", 2, LOOP_BOOL},
    [LIB_SUB] = {"subtract", 2, 0},
    [LIB_MUL] = {"multiply", 2, LOOP_BOOL},
    [LIB_TRUEDIV] = {"divide", 2, 0},
    [LIB_FLOORDIV] = {"floor_divide", 2, 0},
    [LIB_MOD] = {"remainder", 2, 0},
    [LIB_POW] = {"power", 2, 0},
    [LIB_AND] = {"bitwise_and", 2, 0},
    [LIB_OR] = {"bitwise_or", 2, 0},
    [LIB_XOR] = {"bitwise_xor", 2, 0},
    [LIB_LSHIFT] = {"left_shift", 2, 0},
    [LIB_RSHIFT] = {"right_shift", 2, 0},
    [LIB_EQ] = {"equal", 2, 0},
    [LIB_NE] = {"not_equal", 2, 0},
    [LIB_LT] = {"less", 2, 0},
    [LIB_LE] = {"less_equal", 2, 0},
    [LIB_GT] = {"greater", 2, 0},
    [LIB_GE] = {"greater_equal", 2, 0},
    [LIB_NEG] = {"negative", 1, 0},
    [LIB_POS] = {"positive", 1, 0},
    [LIB_INVERT] = {"invert", 1, LOOP_BOOL},
    [LIB_ABS] = {"absolute", 1, LOOP_BOOL},
    [LIB_SQRT] = {"sqrt", 1, 0},
    [LIB_EXP] = {"exp", 1, 0},
    [LIB_LOG] = {"log", 1, 0},
    [LIB_LOG1P] = {"log1p", 1, 0},
    [LIB_SIN] = {"sin", 1, 0},
    [LIB_COS] = {"cos", 1, 0},
    [LIB_TAN] = {"tan", 1, 0},
    [LIB_TANH] = {"tanh", 1, 0},
    [LIB_ARCTAN2] = {"arctan2", 2, 0},
    [LIB_FLOOR] = {"floor", 1, 0},
    [LIB_CEIL] = {"ceil", 1, 0},
    [LIB_MINIMUM] = {"minimum", 2, LOOP_BOOL | LOOP_COMPLEX},
    [LIB_MAXIMUM] = {"maximum", 2, LOOP_BOOL | LOOP_COMPLEX},
    [LIB_ISNAN] = {"isnan", 1, 0},
    [LIB_ISFINITE] = {"isfinite", 1, 0},
    [LIB_ARCSIN] = {"arcsin", 1, 0},
    [LIB_ARCCOS] = {"arccos", 1, 0},
    [LIB_ARCTAN] = {"arctan", 1, 0},
    [LIB_SINH] = {"sinh", 1, 0},
    [LIB_COSH] = {"cosh", 1, 0},
    [LIB_ARCSINH] = {"arcsinh", 1, 0},
    [LIB_ARCCOSH] = {"arccosh", 1, 0},
    [LIB_ARCTANH] = {"arctanh", 1, 0},
    [LIB_EXPM1] = {"expm1", 1, 0},
    [LIB_EXP2] = {"exp2", 1, 0},
    [LIB_LOG2] = {"log2", 1, 0},
    [LIB_LOG10] = {"log10", 1, 0},
    [LIB_CBRT] = {"cbrt", 1, 0},
    [LIB_TRUNC] = {"trunc", 1, 0},
    [LIB_RINT] = {"rint", 1, LOOP_COMPLEX},
    [LIB_FABS] = {"fabs", 1, 0},
    [LIB_ISINF] = {"isinf", 1, 0},
    [LIB_SIGNBIT] = {"signbit", 1, 0},
    [LIB_SIGN] = {"sign", 1, LOOP_INT | LOOP_COMPLEX},
    [LIB_SQUARE] = {"square", 1, 0},
    [LIB_RECIPROCAL] = {"reciprocal", 1, LOOP_INT | LOOP_COMPLEX},
    [LIB_CONJ] = {"conjugate", 1, LOOP_COMPLEX},
    [LIB_COPYSIGN] = {"copysign", 2, 0},
    [LIB_HYPOT] = {"hypot", 2, 0},
    [LIB_NEXTAFTER] = {"nextafter", 2, 0},
    [LIB_LOGADDEXP] = {"logaddexp", 2, 0},
    [LIB_LOGADDEXP2] = {"logaddexp2", 2, 0},
    [LIB_LOGICAL_AND] = {"logical_and", 2, 0},
    [LIB_LOGICAL_OR] = {"logical_or", 2, 0},
    [LIB_LOGICAL_XOR] = {"logical_xor", 2, 0},
    [LIB_LOGICAL_NOT] = {"logical_not", 1, 0},
    [LIB_FMAX] = {"fmax", 2, LOOP_BOOL | LOOP_COMPLEX},
    [LIB_FMIN] = {"fmin", 2, LOOP_BOOL | LOOP_COMPLEX},
    [LIB_FMOD] = {"fmod", 2, LOOP_INT},
    [LIB_HEAVISIDE] = {"heaviside", 2, 0},
    [LIB_DEG2RAD] = {"deg2rad", 1, 0},
    [LIB_RAD2DEG] = {"rad2deg", 1, 0},
    [LIB_FLOAT_POWER] = {"float_power", 2, 0},
    [LIB_CLIP] = {"clip", 3, LOOP_BOOL | LOOP_COMPLEX},
    [LIB_WHERE] = {"where", 3, 0},
    [LIB_COPY] = {"copy", 1, 0},
    [LIB_ROUND_UP] = {"round_up", 2, LOOP_COMPLEX, "multiply"},
    [LIB_ROUND_DOWN] = {"round_down", 2, LOOP_COMPLEX, "multiply"},
    [LIB_COPY_REAL] = {"copy_real", 1, 0, "positive"},
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
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) ||
        mod_is_numpy_scalar(o))
        return 1;
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
    if (PyComplex_Check(o->obj)) return Py_NewRef((PyObject *)&PyComplex_Type);
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
                 "int8-int64, uint8-uint64, float32, float64, complex64 and complex128); convert "
                 "first, e.g. x.astype('float32')",
                 what, dtype);
    return -1;
}

static bool is_half(PyObject *dtype) {
    PyObject *c = PyObject_GetAttrString(dtype, "char");
    bool half = c && PyUnicode_Check(c) && PyUnicode_CompareWithASCIIString(c, "e") == 0;
    Py_XDECREF(c);
    PyErr_Clear();
    return half;
}

/* The loop dtypes of a ufunc for the inputs (and the result, when it is an
 * existing array: NumPy's same_kind rule for in-place operators). Fills
 * in[i].loop and *result; NumPy's own TypeError when there is no loop. */
static int resolve_ufunc(const op_def *op, operand *in, int nin, PyObject *out_dtype,
                         PyObject **result) {
    /* numpy.clip is a function around the ufunc numpy._core.umath.clip */
    PyObject *ufunc = op == &ops[LIB_CLIP] ? PyImport_ImportModule("numpy._core.umath")
                                           : Py_NewRef(mod_numpy_borrowed());
    Py_XSETREF(ufunc,
               ufunc ? PyObject_GetAttrString(ufunc, op->typing ? op->typing : op->name) : NULL);
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
    /* signbit's loop for bool and 8-bit integers is float16 but its result a
     * bool: float32 holds those values exactly and gives the same answers */
    PyObject *lt[MAX_OPERANDS]; /* borrowed: the loop's dtypes */
    for (int i = 0; i <= nin; i++) lt[i] = PyTuple_GET_ITEM(loop, i);
    for (int i = 0; i < nin; i++)
        if (is_half(lt[i]) && !is_half(lt[nin])) lt[i] = mod_dtype_find_borrowed('f', 4);
    int rc = 0;
    for (int i = 0; i <= nin && rc == 0; i++) rc = check_supported(op->name, lt[i]);
    for (int i = 0; i < nin && rc == 0; i++)
        if (!(in[i].loop = mod_dtype_new(lt[i]))) rc = -1;
    if (rc == 0) *result = mod_dtype_new(lt[nin]);
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

/* NumPy's ComplexWarning for a cast that drops imaginary parts; 0, or -1
 * when the warning is an error. */
static int warn_complex_cast(void) {
    PyObject *exc = PyImport_ImportModule("numpy.exceptions");
    PyObject *cls = exc ? PyObject_GetAttrString(exc, "ComplexWarning") : NULL;
    Py_XDECREF(exc);
    if (!cls) return -1;
    int rc = PyErr_WarnEx(cls, "Casting complex values to real discards the imaginary part", 1);
    Py_DECREF(cls);
    return rc;
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
    mod_array *arrs[MAX_OPERANDS];
    for (int i = 0; i < nin; i++) arrs[i] = in[i].arr;
    if (!mod_kit_broadcast(arrs, nin, &l->nd, l->shape)) return 0;
    PyObject *shapes = shapes_str(in, nin);
    if (shapes)
        PyErr_Format(PyExc_ValueError, "operands could not be broadcast together with shapes %U",
                     shapes);
    Py_XDECREF(shapes);
    return -1;
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

/* The device function of op's loop whose first input dtype is loop
 * (elementwise.py's <name>, or <name>_bool, _int, _complex): borrowed, kept
 * per op and loop kind for the process. */
static PyObject *loop_function(const op_def *op, PyObject *loop) {
    static PyObject *found[LIB_NOPS][4];
    int kind = mod_kit_is_complex(loop) && (op->loops & LOOP_COMPLEX)             ? 3
               : !strcmp(mod_dtype_name(loop), "bool") && (op->loops & LOOP_BOOL) ? 1
               : integer_dtype(loop) && (op->loops & LOOP_INT)                    ? 2
                                                                                  : 0;
    PyObject **slot = &found[op - ops][kind];
    if (!*slot) {
        static const char *const suffix[] = {"", "_bool", "_int", "_complex"};
        char name[64];
        snprintf(name, sizeof name, "%s%s", op->name, suffix[kind]);
        *slot = mod_library_get("elementwise", name);
    }
    return *slot;
}

/* Work-items of a 1-D kernel on a GPU each do UNROLL elements
 * (elementwise.py's kernel says why); on a CPU one. */
#define UNROLL 4

static int unroll_for(ofl_device *dev) {
    return ofl_device_get_info(dev)->type == OFL_CPU ? 1 : UNROLL;
}

/* T, elementwise's loop dtypes: each array operand's, None for a scalar
 * (passed in its loop dtype). New reference. */
static PyObject *loop_dtypes(const operand *in, int nin) {
    PyObject *t = PyTuple_New(nin);
    for (int i = 0; t && i < nin; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(in[i].arr ? in[i].loop : Py_None));
    return t;
}

/* Launches elementwise over l (array operands' strides in l, the result
 * first), one launch per index of the dimensions beyond the kernel's 3. */
static int launch(const op_def *op, mod_array **arrs, const operand *in, int nin, const layout *l,
                  int kdims, int unroll) {
    PyObject *fn = loop_function(op, in[0].loop), *types = fn ? loop_dtypes(in, nin) : NULL;
    if (!types) return -1;
    int lead = l->nd - kdims, rc = 0;
    Py_ssize_t idx[MOD_MAXDIMS] = {0};
    while (rc == 0) {
        PyObject *args[MAX_OPERANDS] = {NULL}; /* out, x0, x1, x2: owned */
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
        for (int k = nin + 1; k < MAX_OPERANDS && rc == 0; k++) args[k] = Py_NewRef(args[0]);
        mod_shape range = {.ndim = kdims};
        for (int d = 0; d < kdims; d++) range.size[d] = l->shape[lead + d];
        range.size[0] = kdims == 1 ? (range.size[0] + unroll - 1) / unroll : range.size[0];
        if (rc == 0)
            rc = mod_library_launch("elementwise", "elementwise", &range, "OOOOOOii", args[0],
                                    args[1], args[2], args[3], fn, types, kdims, unroll);
        for (int k = 0; k < MAX_OPERANDS; k++) Py_XDECREF(args[k]);
        int d = lead - 1; /* next index of the leading dimensions */
        while (d >= 0 && ++idx[d] == l->shape[d]) idx[d--] = 0;
        if (d < 0) break;
    }
    Py_DECREF(types);
    return rc;
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
    if (!dev && out) dev = mod_array_device(out); /* a scalar stored into out */
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
        /* a scalar stored into out is converted to out's dtype on the host */
        PyObject *from = in[0].arr ? in[0].arr->dtype : out ? out->dtype : NULL;
        result_dtype = Py_NewRef(dtype ? dtype : from);
        in[0].loop = Py_NewRef(in[0].arr ? from : result_dtype);
        rc = 0;
        /* complex into real (not bool, which is z != 0): the real part, warned */
        if (in[0].arr && mod_kit_is_complex(from) && !mod_kit_is_complex(result_dtype) &&
            strcmp(mod_dtype_name(result_dtype), "bool") != 0) {
            op = &ops[LIB_COPY_REAL];
            rc = warn_complex_cast();
        }
    } else
        rc = resolve_ufunc(op, in, nin, out ? out->dtype : NULL, &result_dtype);
    for (int i = 0; i < nin && rc == 0; i++)
        if (!in[i].arr) rc = convert_scalar(op, &in[i], &in[nin == 2 ? 1 - i : 0]);
    layout l;
    if (rc < 0 || broadcast(in, nin, &l) < 0) goto done;
    if (out) {
        /* the operands' shape must broadcast to out's, which is the launch's */
        bool fits = out->nd >= l.nd;
        for (int d = 0; d < l.nd && fits; d++) {
            Py_ssize_t n = l.shape[d], o = out->shape[out->nd - l.nd + d];
            fits = n == o || n == 1;
        }
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
        l.nd = out->nd;
        memcpy(l.shape, out->shape, sizeof(Py_ssize_t) * (size_t)out->nd);
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
    int unroll = unroll_for(mod_array_device(arrs[0]));
    if (launch(op, arrs, in, nin, &l, kdims, unroll) == 0) goto done;
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
    bool inexact = kind && PyUnicode_Check(kind) &&
                   (PyUnicode_CompareWithASCIIString(kind, "f") == 0 ||
                    PyUnicode_CompareWithASCIIString(kind, "c") == 0);
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

/* clip(x, /, min=None, max=None), NumPy's clip(a, a_min, a_max) too: one
 * bound given twice (positionally and by keyword, or by both names) is NumPy's
 * TypeError. */
static PyObject *f_clip(PyObject *self, PyObject *args, PyObject *kw) {
    static const char *const names[] = {"a_min", "a_max", "min", "max"};
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs < 1 || nargs > 3)
        return PyErr_Format(PyExc_TypeError, "clip() takes 1 to 3 positional arguments (%zd given)",
                            nargs);
    PyObject *x = PyTuple_GET_ITEM(args, 0), *bound[2] = {NULL, NULL};
    for (int i = 1; i < nargs; i++) bound[i - 1] = PyTuple_GET_ITEM(args, i);
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (kw && PyDict_Next(kw, &pos, &key, &value)) {
        int k = 0;
        while (k < 4 && PyUnicode_CompareWithASCIIString(key, names[k]) != 0) k++;
        if (k == 4)
            return PyErr_Format(PyExc_TypeError,
                                "clip() got an unexpected keyword argument '%U' (it takes "
                                "min= and max=, or NumPy's a_min= and a_max=)",
                                key);
        if (bound[k % 2])
            return PyErr_Format(PyExc_TypeError,
                                "clip() got the %s bound twice: pass one of a_%s= and %s=",
                                k % 2 ? "upper" : "lower", names[k % 2 + 2], names[k % 2 + 2]);
        bound[k % 2] = value;
    }
    PyObject *lo = bound[0] ? bound[0] : Py_None, *hi = bound[1] ? bound[1] : Py_None;
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

static PyObject *f_copy(PyObject *self, PyObject *x) {
    mod_array *a = mod_kit_array_arg(x, "copy");
    return a ? mod_ops_copy(a, NULL) : NULL;
}

/* round(x, /, decimals=0) as numpy.round: half to even; integers are copied
 * (by a negative decimals, rounded through float64 as NumPy does); bool's
 * result would be float16, a TypeError. */
static PyObject *f_round(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "decimals", NULL};
    PyObject *x;
    int decimals = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i:round", kwlist, &x, &decimals)) return NULL;
    if (!mod_array_check(x) || !integer_dtype(((mod_array *)x)->dtype)) {
        if (decimals == 0) return run(&ops[LIB_RINT], &x, 1, NULL, NULL);
        PyObject *f = PyFloat_FromDouble(pow(10.0, abs(decimals)));
        PyObject *xs[2] = {x, f};
        PyObject *r =
            f ? run(&ops[decimals > 0 ? LIB_ROUND_UP : LIB_ROUND_DOWN], xs, 2, NULL, NULL) : NULL;
        Py_XDECREF(f);
        return r;
    }
    mod_array *a = (mod_array *)x;
    if (decimals >= 0) return mod_ops_copy(a, NULL);
    PyObject *f = PyFloat_FromDouble(pow(10.0, -decimals));
    PyObject *d = f ? mod_ops_copy(a, mod_dtype_find_borrowed('f', 8)) : NULL;
    PyObject *xs[2] = {d, f};
    PyObject *rounded = d ? run(&ops[LIB_ROUND_DOWN], xs, 2, NULL, NULL) : NULL;
    PyObject *r = rounded ? mod_ops_copy((mod_array *)rounded, a->dtype) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(d);
    Py_XDECREF(rounded);
    return r;
}

/* The real (imag: imaginary) parts of a complex array as a view, as
 * NumPy's: the parts' dtype, the same byte strides, the imaginary parts half
 * an element on. */
static PyObject *part_view(mod_array *a, bool imag) {
    PyObject *part = mod_dtype_find_borrowed('f', a->itemsize / 2);
    mod_array *v = (mod_array *)mod_array_view(a, a->nd, a->shape, a->strides,
                                               a->offset + (imag ? a->itemsize / 2 : 0));
    if (!v) return NULL;
    Py_SETREF(v->dtype, Py_NewRef(part));
    v->itemsize = a->itemsize / 2;
    return (PyObject *)v;
}

/* real(x): a view of a complex array's real parts; a real array itself, as
 * numpy.real's. */
static PyObject *f_real(PyObject *self, PyObject *x) {
    mod_array *a = mod_kit_array_arg(x, "real");
    if (a && mod_kit_is_complex(a->dtype)) return part_view(a, false);
    return a ? Py_NewRef(x) : NULL;
}

/* imag(x): a view of a complex array's imaginary parts; for a real array,
 * zeros of its dtype and shape, on its device. */
static PyObject *f_imag(PyObject *self, PyObject *x) {
    mod_array *a = mod_kit_array_arg(x, "imag");
    if (a && mod_kit_is_complex(a->dtype)) return part_view(a, true);
    PyObject *r = a ? mod_array_new_empty(mod_array_device(a), a->dtype, a->nd, a->shape) : NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (r && (!zero || mod_ops_copy_into((mod_array *)r, zero) < 0)) Py_CLEAR(r);
    Py_XDECREF(zero);
    return r;
}

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL
static PyMethodDef functions[] = {
    {"where", FASTCALL(f_where),
     "where(condition, x, y) -> ndarray: x where condition, else y (NumPy's dtype)"},
    {"clip", MOD_KWFUNC(f_clip),
     "clip(x, /, min=None, max=None)\n--\n\n"
     "x limited to [min, max], each bound a scalar or an array broadcast against x, None for "
     "none; NumPy's a_min= and a_max= too (NaN propagates, and the dtype is NumPy's)."},
    {"round", MOD_KWFUNC(f_round),
     "round(x, /, decimals=0) -> ndarray: x rounded to decimals places, halves to even "
     "(numpy.round)"},
    {"around", MOD_KWFUNC(f_round),
     "around(x, /, decimals=0) -> ndarray: numpy.around, the same as round"},
    {"real", f_real, METH_O,
     "real(x, /) -> ndarray: the real part: a float view of a complex array's real parts, x "
     "itself for a real array (numpy.real)"},
    {"imag", f_imag, METH_O,
     "imag(x, /) -> ndarray: the imaginary part: a float view of a complex array's imaginary "
     "parts, zeros of x's dtype and shape for a real array (numpy.imag)"},
    {"copy", f_copy, METH_O, "copy(x) -> ndarray: a C-contiguous copy on x's device"},
    {NULL},
};

/* The array API's names and NumPy's other names for the same operations. */
static const struct {
    const char *name;
    int op;
} aliases[] = {
    {"abs", LIB_ABS},
    {"acos", LIB_ARCCOS},
    {"acosh", LIB_ARCCOSH},
    {"asin", LIB_ARCSIN},
    {"asinh", LIB_ARCSINH},
    {"atan", LIB_ARCTAN},
    {"atanh", LIB_ARCTANH},
    {"atan2", LIB_ARCTAN2},
    {"bitwise_left_shift", LIB_LSHIFT},
    {"bitwise_right_shift", LIB_RSHIFT},
    {"bitwise_invert", LIB_INVERT},
    {"bitwise_not", LIB_INVERT},
    {"conj", LIB_CONJ},
    {"pow", LIB_POW},
    {"true_divide", LIB_TRUEDIV},
    {"mod", LIB_MOD},
    {"degrees", LIB_RAD2DEG},
    {"radians", LIB_DEG2RAD},
};
#define NALIASES ((int)(sizeof aliases / sizeof *aliases))

/* The ufuncs offload exposes under NumPy's names, then the aliases; each
 * with its docstring. */
static PyMethodDef ufunc_defs[LIB_NOPS + NALIASES];
static char ufunc_docs[LIB_NOPS + NALIASES][160];

static bool is_ufunc(int i) {
    return i != LIB_CLIP && i != LIB_WHERE && i != LIB_COPY && i != LIB_ROUND_UP &&
           i != LIB_ROUND_DOWN && i != LIB_COPY_REAL;
}

static int add_ufunc(PyObject *module, int slot, const char *name, int i) {
    snprintf(ufunc_docs[slot], sizeof ufunc_docs[slot],
             "%s(%s, /) -> ndarray: numpy.%s element-wise, on the operands' device, with NumPy's "
             "dtypes and values",
             name, ops[i].nin == 1 ? "x" : "x1, x2", ops[i].name);
    ufunc_defs[slot] = (PyMethodDef){name, FASTCALL(f_ufunc), ufunc_docs[slot]};
    PyObject *index = PyLong_FromLong(i);
    PyObject *fn = index ? PyCFunction_NewEx(&ufunc_defs[slot], index, NULL) : NULL;
    Py_XDECREF(index);
    int rc = fn ? PyModule_AddObjectRef(module, name, fn) : -1;
    Py_XDECREF(fn);
    return rc;
}

/* ndarray.real / .imag, and their setters: x.real = v assigns into the view. */
static PyObject *get_real(PyObject *x, void *imag) {
    return imag ? f_imag(NULL, x) : f_real(NULL, x);
}

static int set_real(PyObject *x, PyObject *value, void *imag) {
    mod_array *a = (mod_array *)x;
    if (!value) {
        PyErr_Format(PyExc_AttributeError, "cannot delete an array's %s part",
                     imag ? "imaginary" : "real");
        return -1;
    }
    if (imag && !mod_kit_is_complex(a->dtype)) {
        PyErr_SetString(PyExc_TypeError, "array does not have imaginary part to set");
        return -1;
    }
    PyObject *v = mod_kit_is_complex(a->dtype) ? part_view(a, imag != NULL) : Py_NewRef(x);
    int rc = v ? mod_ops_copy_into((mod_array *)v, value) : -1;
    Py_XDECREF(v);
    return rc;
}

static PyGetSetDef part_getset[] = {
    {"real", get_real, set_real, "the real parts (a view for a complex array; itself otherwise)",
     NULL},
    {"imag", get_real, set_real,
     "the imaginary parts (a view for a complex array; zeros otherwise)", (void *)"imag"},
    {NULL},
};

static PyObject *m_conj(PyObject *x, PyObject *unused) {
    return run(&ops[LIB_CONJ], &x, 1, NULL, NULL);
}

static PyMethodDef part_methods[] = {
    {"conj", m_conj, METH_NOARGS, "conj() -> ndarray: the complex conjugate (numpy.conj)"},
    {"conjugate", m_conj, METH_NOARGS, "conjugate() -> ndarray: the complex conjugate"},
    {NULL},
};

int mod_ops_add_functions(PyObject *module) {
    if (mod_type_add_getset(&mod_ArrayType, part_getset) < 0 ||
        mod_type_add_methods(&mod_ArrayType, part_methods) < 0)
        return -1;
    PyObject *none = Py_None;
    if (PyDict_SetItemString(mod_ArrayType.tp_dict, "__array_ufunc__", none) < 0) return -1;
    PyType_Modified(
        &mod_ArrayType); /* NumPy's ufuncs defer to our operators, which refuse to mix */
    for (int i = 0; i < LIB_NOPS; i++)
        if (is_ufunc(i) && add_ufunc(module, i, ops[i].name, i) < 0) return -1;
    for (int k = 0; k < NALIASES; k++)
        if (add_ufunc(module, LIB_NOPS + k, aliases[k].name, aliases[k].op) < 0) return -1;
    return PyModule_AddFunctions(module, functions);
}
