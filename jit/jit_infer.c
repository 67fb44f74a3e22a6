/* jit_infer: types every node of a function for one signature.
 *
 * Local variables take the NumPy promotion of everything assigned to them
 * (`s = 0` then `s += x[i]` with float32 x makes s float32), so the walk is
 * repeated until no variable's type changes; errors are reported only by the
 * last walk, when every type is final. Arrays and the item never unify with
 * numbers: that is the "type conflict" error, naming both lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_builtins.h"
#include "jit_tree.h"

typedef struct {
    jit_func *f;
    jit_error *err;
    bool report; /* the final walk: errors are real */
    bool failed; /* an error is recorded: the first one stands */
    bool changed;
    int *def_line, *def_col; /* where each variable got the kind it has */
    jit_type ret;            /* device functions: the join of the returns */
    bool ret_seen, bare_return;
    int depth; /* device-function nesting, to stop recursion */
} infer;

#define TS(t) jit_type_str((t), (char[64]){0}, 64)

static int err_at(infer *s, const jit_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int err_at(infer *s, const jit_node *n, const char *fmt, ...) {
    if (!s->report || s->failed) return -1;
    s->failed = true;
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return jit_error_at(s->err, s->f, n->line, n->col, "%s", what);
}

static const jit_type unknown = {0};

static bool known(jit_type t) { return t.kind != JT_UNKNOWN; }

/* The join of a variable's type with a newly assigned one; -1 on a conflict. */
static int join(jit_type cur, jit_type t, jit_type *out) {
    if (!known(cur)) {
        *out = t;
        return 0;
    }
    if (!known(t)) {
        *out = cur;
        return 0;
    }
    if (jit_is_number(cur) && jit_is_number(t)) {
        *out = jit_promote(cur, t);
        return 0;
    }
    if (cur.kind == JT_ARRAY && t.kind == JT_ARRAY && cur.dtype == t.dtype && cur.ndim == t.ndim &&
        cur.space == t.space) {
        *out = cur;
        if (cur.layout != t.layout) out->layout = JIT_LAYOUT_ANY;
        return 0;
    }
    if (jit_type_eq(cur, t)) {
        *out = cur;
        return 0;
    }
    return -1;
}

static int assign_var(infer *s, const jit_node *at, int var, jit_type t) {
    jit_type *cur = &s->f->var_types[var];
    jit_type j;
    if (join(*cur, t, &j) < 0)
        return err_at(s, at,
                      "type conflict: '%s' is %s (line %d) but is assigned %s here (line %d)\n"
                      "A variable keeps one kind of value: use a new name for the other one.",
                      s->f->vars[var].name, TS(*cur), s->def_line[var], TS(t), at->line);
    if (!known(*cur) || (cur->kind != j.kind)) {
        s->def_line[var] = at->line;
        s->def_col[var] = at->col;
    }
    if (!jit_type_eq(*cur, j)) {
        *cur = j;
        s->changed = true;
    }
    return 0;
}

static jit_type expr(infer *s, jit_node *n);

static jit_type need_number(infer *s, jit_node *n, const char *what) {
    jit_type t = expr(s, n);
    if (known(t) && !jit_is_number(t)) {
        err_at(s, n, "%s needs a number, not %s", what, TS(t));
        return (jit_type){JT_NONE, 0, 0, 0, 0};
    }
    return t;
}

static int const_int(const jit_node *n, int64_t *v) {
    if (n->kind == N_CONST && n->type.kind == JT_WEAK_INT) {
        *v = n->v.i;
        return 0;
    }
    if (n->kind == N_UNARY && n->op == OP_NEG && n->a->kind == N_CONST &&
        n->a->type.kind == JT_WEAK_INT) {
        *v = -n->a->v.i;
        return 0;
    }
    return -1;
}

static jit_type complex_binop_type(infer *s, jit_node *n, int op, jit_type a, jit_type b);

static jit_type binop_type(infer *s, jit_node *n, int op, jit_type a, jit_type b) {
    if (!known(a) || !known(b)) return unknown;
    if (!jit_is_number(a) || !jit_is_number(b)) {
        err_at(s, n,
               "unsupported operand types for an arithmetic operator: %s and %s\n"
               "Index arrays to get their elements: a[i].",
               TS(a), TS(b));
        return (jit_type){JT_NONE, 0, 0, 0, 0};
    }
    bool abool = a.kind == JT_SCALAR && a.dtype == JIT_BOOL,
         bbool = b.kind == JT_SCALAR && b.dtype == JIT_BOOL;
    if (jit_is_complex(a) || jit_is_complex(b)) return complex_binop_type(s, n, op, a, b);
    switch (op) {
    case OP_DIV: return jit_true_divide(a, b);
    case OP_POW: {
        int64_t e;
        if (!jit_is_floating(a) && !jit_is_floating(b) && const_int(n->b, &e) == 0 && e < 0) {
            if (a.kind == JT_WEAK_INT) return jit_weak_float(); /* Python: 2 ** -1 == 0.5 */
            err_at(s, n->b,
                   "Integers to negative integer powers are not allowed\n"
                   "NumPy raises for %s ** %lld: write a float exponent (%lld.0) or convert the "
                   "base to float.",
                   TS(a), (long long)e, (long long)e);
            return (jit_type){JT_NONE, 0, 0, 0, 0};
        }
        if (abool && bbool) return jit_scalar(JIT_I64);
        return jit_promote(a, b);
    }
    case OP_LSHIFT:
    case OP_RSHIFT:
    case OP_BITAND:
    case OP_BITOR:
    case OP_BITXOR:
        if (jit_is_floating(a) || jit_is_floating(b)) {
            err_at(s, n, "bitwise operators need integers or bools, not %s and %s", TS(a), TS(b));
            return (jit_type){JT_NONE, 0, 0, 0, 0};
        }
        if (abool && bbool && (op == OP_LSHIFT || op == OP_RSHIFT)) return jit_scalar(JIT_I64);
        return jit_promote(a, b);
    default:
        if (abool && bbool) return jit_scalar(JIT_I64); /* True + True == 2, as in Python */
        return jit_promote(a, b);
    }
}

static jit_type call(infer *s, jit_node *n);

static jit_type expr(infer *s, jit_node *n) {
    jit_type t = unknown;
    switch ((jit_node_kind)n->kind) {
    case N_CONST: t = n->type; break;
    case N_VAR: t = s->f->var_types[n->v.var]; break;
    case N_REF:
        err_at(s, n, "this names a %s, which is not a value in a kernel",
               n->v.ref.kind == REF_MODULE  ? "module"
               : n->v.ref.kind == REF_DTYPE ? "type"
                                            : "function");
        t = (jit_type){JT_NONE, 0, 0, 0, 0};
        break;
    case N_BINOP: {
        jit_type a = expr(s, n->a), b = expr(s, n->b);
        t = binop_type(s, n, n->op, a, b);
        break;
    }
    case N_UNARY: {
        jit_type a = expr(s, n->a);
        if (!known(a)) break;
        if (!jit_is_number(a)) {
            err_at(s, n, "unsupported operand type for a unary operator: %s", TS(a));
            t = (jit_type){JT_NONE, 0, 0, 0, 0};
        } else if (n->op == OP_NOT) {
            t = jit_scalar(JIT_BOOL);
        } else if (n->op == OP_INVERT && jit_is_floating(a)) {
            err_at(s, n, "~ needs an integer or a bool, not %s", TS(a));
            t = (jit_type){JT_NONE, 0, 0, 0, 0};
        } else if (a.kind == JT_SCALAR && a.dtype == JIT_BOOL && n->op != OP_INVERT) {
            t = jit_scalar(JIT_I64); /* -True == -1 */
        } else {
            t = a;
        }
        break;
    }
    case N_COMPARE: {
        bool ok = true;
        for (int i = 0; i < n->nkids; i++) {
            jit_type k = need_number(s, n->kids[i], "a comparison");
            ok = ok && known(k);
        }
        t = jit_scalar(JIT_BOOL);
        break;
    }
    case N_BOOLOP: {
        /* Python's value: the operand that decided, here in the operands'
         * common type (bool when all are bools, as in every condition) */
        bool all_known = true;
        for (int i = 0; i < n->nkids; i++) {
            jit_type k = need_number(s, n->kids[i], "and/or");
            all_known = all_known && known(k);
            t = i == 0 || !all_known ? k : jit_promote(t, k);
        }
        if (!all_known) t = (jit_type){JT_NONE, 0, 0, 0, 0};
        break;
    }
    case N_IFEXP: {
        need_number(s, n->a, "a condition");
        jit_type b = expr(s, n->b), c = expr(s, n->c);
        if (!known(b) || !known(c)) {
            t = known(b) ? b : c;
            break;
        }
        if (join(b, c, &t) < 0) {
            err_at(s, n, "the two values of this conditional expression are %s and %s", TS(b),
                   TS(c));
            t = (jit_type){JT_NONE, 0, 0, 0, 0};
        }
        break;
    }
    case N_CALL: t = call(s, n); break;
    case N_ATTR: {
        jit_type a = expr(s, n->a);
        if (!known(a)) break;
        const char *name = n->v.name;
        int attr = a.kind == JT_ARRAY ? jit_attr_find(name) : -1;
        if (jit_is_number(a) && (!strcmp(name, "real") || !strcmp(name, "imag")))
            t = jit_real_of(a); /* NumPy's scalars and Python's numbers have both */
        else if (attr == ATTR_SHAPE)
            t = (jit_type){JT_TUPLE, JIT_I64, a.ndim, 0, 0};
        else if (attr >= 0)
            t = jit_weak_int();
        else {
            err_at(s, n, "%s has no attribute '%s' in kernels\n%s", TS(a), name,
                   a.kind == JT_ARRAY ? "Arrays offer shape, ndim and size."
                   : a.kind == JT_ITEM
                       ? "The item offers get_id(d), get_range(d) and get_linear_id()."
                       : "");
            t = (jit_type){JT_NONE, 0, 0, 0, 0};
        }
        break;
    }
    case N_INDEX: {
        jit_type a = expr(s, n->a);
        for (int i = 0; i < n->nkids; i++) {
            jit_type k = expr(s, n->kids[i]);
            if (known(k) && !jit_is_integral(k) && !(k.kind == JT_SCALAR && k.dtype == JIT_BOOL) &&
                s->report) {
                err_at(s, n->kids[i], "array indices must be integers, not %s%s", TS(k),
                       jit_is_floating(k) ? "\nConvert with int(...)." : "");
                return (jit_type){JT_NONE, 0, 0, 0, 0};
            }
        }
        if (!known(a)) break;
        if (a.kind == JT_TUPLE) {
            int64_t d;
            if (n->nkids != 1 || const_int(n->kids[0], &d) < 0 || d < -(int64_t)a.ndim ||
                d >= a.ndim) {
                err_at(s, n, "shape is indexed with a constant between 0 and %d here", a.ndim - 1);
                t = (jit_type){JT_NONE, 0, 0, 0, 0};
            } else {
                t = jit_weak_int();
            }
        } else if (a.kind != JT_ARRAY) {
            err_at(s, n, "%s cannot be indexed", TS(a));
            t = (jit_type){JT_NONE, 0, 0, 0, 0};
        } else if (n->nkids != a.ndim) {
            err_at(s, n, "%s needs %d indices, got %d\n%s", TS(a), a.ndim, n->nkids,
                   n->nkids < a.ndim
                       ? "Index every dimension: a[i, j]; rows and slices are not supported "
                         "inside kernels."
                       : "Too many indices for this array.");
            t = (jit_type){JT_NONE, 0, 0, 0, 0};
        } else {
            t = jit_scalar(a.dtype);
        }
        break;
    }
    case N_TUPLE:
        err_at(s, n, "tuples can only be unpacked (a, b = b, a) in kernels");
        t = (jit_type){JT_NONE, 0, 0, 0, 0};
        break;
    default: break;
    }
    n->type = t;
    return t;
}

static int argc_is(infer *s, jit_node *n, const char *name, int lo, int hi) {
    if (n->nkids >= lo && n->nkids <= hi) return 0;
    if (lo == hi)
        return err_at(s, n, "%s() takes %d argument%s, got %d", name, lo, lo == 1 ? "" : "s",
                      n->nkids);
    return err_at(s, n, "%s() takes %d to %d arguments, got %d", name, lo, hi, n->nkids);
}

/* print(...): the device formats numbers and bools; strings are constants (N_STR). */
static jit_type print_args(infer *s, jit_node *n) {
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    for (int i = 0; i < n->nkids; i++) {
        jit_node *k = n->kids[i];
        if (k->kind == N_STR) continue;
        jit_type t = expr(s, k);
        if (!known(t)) return unknown;
        if (jit_is_complex(t)) {
            err_at(s, k,
                   "print() in a kernel does not print complex numbers\n"
                   "Print the parts: print(z.real, z.imag).");
            return none;
        }
        if (!jit_is_number(t)) {
            err_at(s, k,
                   "print() in a kernel prints numbers, bools and constant strings, not %s\n%s",
                   TS(t),
                   t.kind == JT_ARRAY
                       ? "Print its elements: print(a[i]), or print the array on the host after "
                         "the kernel."
                       : "Pass numbers and constant strings as separate arguments.");
            return none;
        }
    }
    return none;
}

static jit_type call_offload(infer *s, jit_node *n, const jit_builtin *bt, const char *name);
static jit_type complex_builtin_type(infer *s, jit_node *n, const jit_builtin *bt, const char *name,
                                     const jit_type *a, jit_type all);

static jit_type call_builtin(infer *s, jit_node *n, const jit_builtin *bt) {
    char name[32];
    jit_builtin_name(bt, name, sizeof name);
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    jit_type a[3] = {unknown, unknown, unknown};
    switch (bt->type) {
    case TY_PRINT: return print_args(s, n);
    case TY_LEN: {
        if (argc_is(s, n, name, bt->lo, bt->hi) < 0) return none;
        jit_type x = expr(s, n->kids[0]);
        if (known(x) && x.kind != JT_ARRAY) {
            err_at(s, n, "len() needs an array, not %s", TS(x));
            return none;
        }
        return jit_weak_int();
    }
    case TY_RANGE: err_at(s, n, "range() can only be used in a for loop"); return none;
    case TY_BARRIER:
    case TY_LOCAL_ARRAY:
    case TY_PRIVATE_ARRAY:
    case TY_ATOMIC_REF: return call_offload(s, n, bt, name);
    default: break;
    }
    if (argc_is(s, n, name, bt->lo, bt->hi) < 0) return none;
    jit_type all = unknown;
    for (int i = 0; i < n->nkids; i++) {
        jit_type k = need_number(s, n->kids[i], name);
        if (i < 3) a[i] = k;
        if (!known(k)) return unknown;
        if (k.kind == JT_NONE) return none;
        all = i == 0 ? k : jit_promote(all, k);
    }
    if (jit_is_complex(all) || bt->type == TY_WEAK_COMPLEX)
        return complex_builtin_type(s, n, bt, name, a, all);
    switch (bt->type) {
    case TY_ABS:
        return a[0].kind == JT_SCALAR && a[0].dtype == JIT_BOOL ? jit_scalar(JIT_I64) : a[0];
    case TY_PROMOTE: return all;
    case TY_WEAK_INT: return jit_weak_int();
    case TY_WEAK_FLOAT: return jit_weak_float();
    case TY_BOOL: return jit_scalar(JIT_BOOL);
    case TY_SAME: return a[0];
    case TY_INT_OF_FLOAT: return jit_is_floating(a[0]) ? jit_weak_int() : a[0];
    case TY_LDEXP:
        if (!jit_is_integral(a[1]) && !(a[1].kind == JT_SCALAR && a[1].dtype == JIT_BOOL)) {
            err_at(s, n->kids[1], "ldexp's exponent must be an integer, not %s", TS(a[1]));
            return none;
        }
        return jit_float_of(a[0]);
    default: return jit_float_of(all);
    }
}

/* ---- complex numbers ---- */

/* A complex value where a real dtype is wanted (a cast, a store into a real
 * array, an atomic): NumPy drops the imaginary part with a ComplexWarning, and
 * Python's float(z) raises; a kernel refuses it at compile time. bool keeps
 * Python's truth (z != 0). */
static int complex_to_real(infer *s, jit_node *at, jit_type from, jit_dtype to) {
    if (!jit_is_complex(from) || jit_dtype_is_complex(to) || to == JIT_BOOL) return 0;
    return err_at(s, at,
                  "cannot convert %s to %s: that would discard the imaginary part\n"
                  "Take the part you mean: z.real, z.imag or abs(z).",
                  TS(from), jit_dtype_name(to));
}

/* The arithmetic operators on complex numbers: NumPy has no floor division,
 * modulo or bitwise operators for them. */
static jit_type complex_binop_type(infer *s, jit_node *n, int op, jit_type a, jit_type b) {
    switch (op) {
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_POW: return jit_promote(a, b);
    case OP_DIV: return jit_true_divide(a, b);
    default:
        err_at(s, n, "%s is not defined for complex numbers (%s and %s)",
               op == OP_FLOORDIV ? "floor division (//)"
               : op == OP_MOD    ? "the remainder (%)"
                                 : "this bitwise operator",
               TS(a), TS(b));
        return (jit_type){JT_NONE, 0, 0, 0, 0};
    }
}

/* A builtin with a complex argument (all: the arguments' promotion), or
 * complex(re, im). */
static jit_type complex_builtin_type(infer *s, jit_node *n, const jit_builtin *bt, const char *name,
                                     const jit_type *a, jit_type all) {
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    if (bt->gen == GEN_COMPLEX) {
        for (int i = 0; i < n->nkids; i++)
            if (jit_is_complex(a[i])) {
                err_at(s, n->kids[i],
                       "complex() takes real parts here, not %s\nWrite z, or z.real and z.imag.",
                       TS(a[i]));
                return none;
            }
        return jit_weak_complex();
    }
    switch (bt->gen) {
    case GEN_ABS: return jit_real_of(all);
    case GEN_CONJ: return a[0];
    case GEN_ISNAN:
    case GEN_ISINF:
    case GEN_ISFINITE: return jit_scalar(JIT_BOOL);
    case GEN_CONVERT:
        if (bt->type == TY_BOOL) return jit_scalar(JIT_BOOL);
        err_at(s, n,
               "%s() cannot convert a complex number (Python raises TypeError)\n"
               "Take the part you mean: %s(z.real), or abs(z).",
               name, name);
        return none;
    case GEN_MATH:     /* the math functions a complex argument takes: cmath's */
    case GEN_NP_ROUND: /* numpy.rint rounds both parts; floor, ceil, trunc have no complex loop */
        if (n->nkids == 1 && bt->cx) return all;
        break;
    default: break;
    }
    err_at(s, n,
           "%s() does not take complex numbers in kernels\n"
           "Complex arguments go to exp, log, log2, log10, sqrt, sin, cos, tan, sinh, cosh, "
           "tanh, arcsin, arccos, arctan, arcsinh, arccosh, arctanh, expm1, log1p, np.rint, abs, "
           "conj, isnan, isinf and isfinite.",
           name);
    return none;
}

/* ---- nd-range kernels: offload.group_barrier, local/private arrays, AtomicRef ---- */

/* A compile-time shape: a positive int or a tuple of 1-3 of them. */
static int const_shape(infer *s, jit_node *n, int64_t shape[3], int *ndim) {
    jit_node *one[1] = {n};
    jit_node **dims = n->kind == N_TUPLE ? n->kids : one;
    int nd = n->kind == N_TUPLE ? n->nkids : 1;
    if (nd < 1 || nd > 3) return err_at(s, n, "an array's shape has 1 to 3 dimensions, not %d", nd);
    for (int d = 0; d < nd; d++) {
        int64_t v;
        if (const_int(dims[d], &v) < 0 || v <= 0)
            return err_at(s, dims[d],
                          "the shape of a local or private array is a positive constant\n"
                          "Use a number or a module-level constant: ol.local_array((TILE, TILE), "
                          "np.float32).");
        shape[d] = v;
    }
    *ndim = nd;
    return 0;
}

static bool atomic_dtype(jit_dtype d) {
    return d == JIT_I32 || d == JIT_U32 || d == JIT_I64 || d == JIT_U64 || d == JIT_F32 ||
           d == JIT_F64;
}

static jit_type call_offload(infer *s, jit_node *n, const jit_builtin *bt, const char *name) {
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    if (argc_is(s, n, name, bt->lo, bt->hi) < 0) return none;
    if (bt->type == TY_BARRIER) {
        jit_type g = expr(s, n->kids[0]);
        if (known(g) && g.kind != JT_GROUP) {
            err_at(s, n->kids[0],
                   "group_barrier() takes the work-group, not %s\n"
                   "Write: ol.group_barrier(item.get_group()) in a kernel launched over an "
                   "ol.NdRange.",
                   TS(g));
            return none;
        }
        return none;
    }
    if (bt->type == TY_LOCAL_ARRAY || bt->type == TY_PRIVATE_ARRAY) {
        bool local = bt->type == TY_LOCAL_ARRAY;
        jit_node *dt = n->kids[1];
        if (dt->kind != N_REF || dt->v.ref.kind != REF_DTYPE) {
            err_at(s, dt, "%s() takes a dtype second, such as np.float32 or ol.int32", name);
            return none;
        }
        int64_t shape[3];
        int nd = 0;
        if (const_shape(s, n->kids[0], shape, &nd) < 0) return none;
        if (local) {
            jit_type item = s->f->var_types[0];
            if (!s->f->is_kernel) {
                err_at(s, n,
                       "local arrays are made in the kernel itself\n"
                       "Make it there and pass it to the device function.");
                return none;
            }
            if (item.kind != JT_NDITEM) {
                err_at(
                    s, n,
                    "a local array is shared by a work-group, and this kernel was launched over a "
                    "Range, which has none\nLaunch over ol.NdRange(global, local).");
                return none;
            }
        }
        jit_type t = jit_array((jit_dtype)dt->v.ref.id, nd, JIT_LAYOUT_C);
        t.space = local ? JIT_LOCAL : JIT_PRIVATE;
        return t;
    }
    /* AtomicRef(array, index) */
    jit_type a = expr(s, n->kids[0]);
    jit_node *ix = n->kids[1];
    int nidx = ix->kind == N_TUPLE ? ix->nkids : 1;
    for (int i = 0; i < nidx; i++) {
        jit_node *k = ix->kind == N_TUPLE ? ix->kids[i] : ix;
        jit_type kt = expr(s, k);
        if (known(kt) && !jit_is_integral(kt) && !(kt.kind == JT_SCALAR && kt.dtype == JIT_BOOL)) {
            err_at(s, k, "array indices must be integers, not %s", TS(kt));
            return none;
        }
    }
    if (ix->kind == N_TUPLE) ix->type = (jit_type){JT_TUPLE, 0, (unsigned char)nidx, 0, 0};
    if (!known(a)) return unknown;
    if (a.kind != JT_ARRAY) {
        err_at(s, n->kids[0], "AtomicRef() takes an array, not %s", TS(a));
        return none;
    }
    if (!atomic_dtype((jit_dtype)a.dtype)) {
        err_at(s, n->kids[0],
               "atomics work on int32, uint32, int64, uint64, float32 and float64 arrays, "
               "not %s",
               TS(a));
        return none;
    }
    if (a.space == JIT_PRIVATE) {
        err_at(s, n->kids[0], "a private array belongs to one work-item: it needs no atomics");
        return none;
    }
    if (nidx != a.ndim) {
        err_at(s, ix,
               "%s needs %d indices, got %d\nWrite ol.AtomicRef(a, i) for 1-D arrays and "
               "ol.AtomicRef(a, (i, j)) for 2-D ones.",
               TS(a), a.ndim, nidx);
        return none;
    }
    return (jit_type){JT_ATOMIC, a.dtype, 0, 0, a.space};
}

/* A method of the item, the NdItem, its Group or an AtomicRef. */
static jit_type call_method(infer *s, jit_node *n, jit_type obj) {
    jit_node *fn = n->a;
    const char *m = fn->v.name;
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    const jit_method *mt = jit_method_find((jit_kind)obj.kind, m);
    if (!mt) {
        if (obj.kind == JT_ITEM && (!strncmp(m, "get_group", 9) || !strncmp(m, "get_local", 9) ||
                                    !strncmp(m, "get_global", 10)))
            err_at(
                s, fn,
                "the item of a Range launch has no method '%s': work-groups come with an NdRange\n"
                "Launch over ol.NdRange(global, local) to get an NdItem.",
                m);
        else if (obj.kind == JT_ITEM)
            err_at(s, fn,
                   "the item has no method '%s'\nThe item offers get_id(d), get_range(d) and "
                   "get_linear_id().",
                   m);
        else if (obj.kind == JT_NDITEM)
            err_at(
                s, fn,
                "the NdItem has no method '%s'\nIt offers get_global_id(d), get_local_id(d), "
                "get_global_range(d), get_local_range(d), get_group(), get_global_linear_id() and "
                "get_local_linear_id().",
                m);
        else if (obj.kind == JT_GROUP)
            err_at(s, fn,
                   "the Group has no method '%s'\nIt offers get_group_id(d), get_group_range(d), "
                   "get_local_range(d) and get_group_linear_id().",
                   m);
        else
            err_at(s, fn,
                   "an AtomicRef has no method '%s'\nIt offers fetch_add, fetch_sub, fetch_min, "
                   "fetch_max, "
                   "fetch_and, fetch_or, fetch_xor, exchange, load, store and compare_exchange.",
                   m);
        return none;
    }
    if (argc_is(s, n, m, mt->nargs, mt->nargs) < 0) return none;
    if (obj.kind == JT_ATOMIC) {
        for (int i = 0; i < mt->nargs; i++) {
            jit_type k = need_number(s, n->kids[i], m);
            if (!known(k)) return unknown;
            if (complex_to_real(s, n->kids[i], k, (jit_dtype)obj.dtype) < 0) return none;
        }
        if (mt->op >= A_AND && jit_dtype_is_float(obj.dtype)) {
            err_at(s, fn, "%s needs an integer array, not %s", m, jit_dtype_name(obj.dtype));
            return none;
        }
        return mt->op == A_STORE ? none : jit_scalar((jit_dtype)obj.dtype);
    }
    if (mt->op == Q_GROUP) return (jit_type){JT_GROUP, 0, obj.ndim, 0, 0};
    int64_t d = 0;
    if (mt->nargs && (const_int(n->kids[0], &d) < 0 || d < 0 || d >= obj.ndim)) {
        if (obj.kind == JT_ITEM)
            err_at(s, n->kids[0],
                   "item.%s() takes a constant dimension between 0 and %d "
                   "(the kernel was launched over a %d-D range)\nWrite item.%s(0)%s.",
                   m, obj.ndim - 1, obj.ndim, m, obj.ndim > 1 ? ", item.get_id(1), ..." : "");
        else
            err_at(s, n->kids[0],
                   "%s() takes a constant dimension between 0 and %d (the kernel was "
                   "launched over a %d-D NdRange)",
                   m, obj.ndim - 1, obj.ndim);
        return none;
    }
    n->v.i = d;
    return jit_weak_int();
}

static jit_type infer_devfunc(infer *s, jit_node *n, jit_func *callee);
static int complex_to_real(infer *s, jit_node *at, jit_type from, jit_dtype to);

static jit_type call(infer *s, jit_node *n) {
    jit_node *fn = n->a;
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    if (fn->kind == N_REF) {
        switch (fn->v.ref.kind) {
        case REF_BUILTIN: return call_builtin(s, n, &jit_builtins[fn->v.ref.id]);
        case REF_DTYPE: {
            if (argc_is(s, n, jit_dtype_name(fn->v.ref.id), 0, 1) < 0) return none;
            jit_type x = n->nkids ? need_number(s, n->kids[0], jit_dtype_name(fn->v.ref.id))
                                  : jit_scalar(JIT_BOOL);
            if (!known(x)) return unknown;
            if (complex_to_real(s, n->nkids ? n->kids[0] : n, x, (jit_dtype)fn->v.ref.id) < 0)
                return none;
            return jit_scalar(fn->v.ref.id);
        }
        case REF_DEVFUNC: return infer_devfunc(s, n, fn->v.ref.func);
        default: err_at(s, n, "a module cannot be called"); return none;
        }
    }
    if (fn->kind == N_ATTR) {
        jit_type obj = expr(s, fn->a);
        if (!known(obj)) return unknown;
        if (obj.kind == JT_ITEM || obj.kind == JT_NDITEM || obj.kind == JT_GROUP ||
            obj.kind == JT_ATOMIC)
            return call_method(s, n, obj);
        if (jit_is_number(obj) &&
            (!strcmp(fn->v.name, "conjugate") || !strcmp(fn->v.name, "conj"))) {
            if (argc_is(s, n, fn->v.name, 0, 0) < 0) return none;
            return obj.kind == JT_SCALAR && obj.dtype == JIT_BOOL ? jit_scalar(JIT_I64) : obj;
        }
        err_at(s, fn, "%s has no method '%s' in kernels", TS(obj), fn->v.name);
        return none;
    }
    jit_type t = expr(s, fn);
    if (known(t)) err_at(s, n, "%s cannot be called", TS(t));
    return none;
}

static int walk(infer *s, jit_node **body, int n);

static int run(jit_func *f, const jit_type *params, jit_type *ret, jit_error *err, int depth);

static jit_type infer_devfunc(infer *s, jit_node *n, jit_func *callee) {
    jit_type none = {JT_NONE, 0, 0, 0, 0};
    if (n->nkids != callee->nparams) {
        err_at(s, n, "%s() takes %d argument%s, got %d", callee->name, callee->nparams,
               callee->nparams == 1 ? "" : "s", n->nkids);
        return none;
    }
    jit_type args[64];
    if (n->nkids > 64) {
        err_at(s, n, "too many arguments");
        return none;
    }
    for (int i = 0; i < n->nkids; i++) {
        args[i] = expr(s, n->kids[i]);
        if (!known(args[i])) return unknown;
        if (args[i].kind == JT_ITEM || args[i].kind == JT_NONE ||
            args[i].kind == JT_TUPLE) { /* an NdItem, Group or AtomicRef may go */
            err_at(s, n->kids[i], "%s cannot be passed to a device function", TS(args[i]));
            return none;
        }
    }
    if (s->depth > 16) {
        err_at(s, n, "device functions nest too deeply (recursion?)");
        return none;
    }
    jit_type r;
    jit_error sub;
    if (run(callee, args, &r, &sub, s->depth + 1) < 0) {
        if (s->report) *s->err = sub;
        return none;
    }
    return r;
}

static int assign_target(infer *s, jit_node *t, jit_type vt, jit_node *at) {
    if (t->kind == N_VAR) {
        if (vt.kind == JT_NONE) return err_at(s, at, "this call returns no value");
        if (vt.kind == JT_ARRAY && s->f->var_types[t->v.var].kind == JT_ARRAY && s->report &&
            (t->v.var < s->f->nparams || s->def_line[t->v.var] != t->line))
            return err_at(s, t, "array variables cannot be reassigned in kernels\nUse a new name.");
        return assign_var(s, t, t->v.var, vt);
    }
    /* an array element */
    jit_type et = expr(s, t);
    if (known(vt) && known(et) && !jit_is_number(vt))
        return err_at(s, at, "cannot store %s into an element of %s", TS(vt), TS(t->a->type));
    if (known(vt) && known(et) && et.kind == JT_SCALAR)
        return complex_to_real(s, at, vt, (jit_dtype)et.dtype);
    return 0;
}

static int stmt(infer *s, jit_node *n) {
    switch ((jit_node_kind)n->kind) {
    case S_ASSIGN:
        for (int i = 0; i < n->nkids; i++) {
            jit_node *t = n->kids[i];
            if (t->kind == N_TUPLE) {
                if (n->a->kind == N_TUPLE) {
                    if (n->a->nkids != t->nkids)
                        return err_at(s, n, "cannot unpack %d values into %d names", n->a->nkids,
                                      t->nkids);
                    for (int k = 0; k < t->nkids; k++)
                        if (assign_target(s, t->kids[k], expr(s, n->a->kids[k]), n->a->kids[k]) <
                                0 &&
                            s->report)
                            return -1;
                    n->a->type = (jit_type){JT_TUPLE, 0, (unsigned char)t->nkids, 0, 0};
                } else {
                    jit_type v = expr(s, n->a);
                    if (!known(v)) continue;
                    if (v.kind != JT_TUPLE || v.ndim != t->nkids)
                        return err_at(s, n, "cannot unpack %s into %d names", TS(v), t->nkids);
                    for (int k = 0; k < t->nkids; k++)
                        if (assign_target(s, t->kids[k], jit_weak_int(), n->a) < 0 && s->report)
                            return -1;
                }
            } else if (assign_target(s, t, expr(s, n->a), n->a) < 0 && s->report) {
                return -1;
            }
        }
        return 0;
    case S_AUGASSIGN: {
        jit_type cur = expr(s, n->a), v = expr(s, n->b);
        jit_type r = binop_type(s, n, n->op, cur, v);
        if (!known(r)) return 0;
        if (r.kind == JT_NONE) return -1;
        if (n->a->kind == N_VAR) return assign_var(s, n, n->a->v.var, r);
        if (known(cur) && cur.kind == JT_SCALAR)
            return complex_to_real(s, n, r, (jit_dtype)cur.dtype);
        return 0;
    }
    case S_EXPR: expr(s, n->a); return 0;
    case S_IF:
    case S_WHILE:
        need_number(s, n->a, "a condition");
        return walk(s, n->body, n->nbody) < 0 || walk(s, n->orelse, n->norelse) < 0 ? -1 : 0;
    case S_FOR: {
        jit_type t = unknown;
        int64_t step;
        if (n->nkids == 3 && const_int(n->kids[2], &step) == 0 && step == 0)
            return err_at(s, n->kids[2],
                          "range() arg 3 must not be zero\n"
                          "Python raises ValueError for a zero step.");
        for (int i = 0; i < n->nkids; i++) {
            jit_type k = expr(s, n->kids[i]);
            if (!known(k)) {
                t = unknown;
                break;
            }
            if (!jit_is_integral(k) && !(k.kind == JT_SCALAR && k.dtype == JIT_BOOL))
                return err_at(s, n->kids[i], "range() needs integers, not %s", TS(k));
            t = i == 0 ? k : jit_promote(t, k);
        }
        if (known(t) && assign_var(s, n->a, n->a->v.var, t) < 0) return -1;
        n->a->type = s->f->var_types[n->a->v.var];
        return walk(s, n->body, n->nbody);
    }
    case S_RETURN:
        if (!n->a) {
            s->bare_return = true;
            return 0;
        }
        {
            jit_type t = expr(s, n->a);
            if (!known(t)) return 0;
            if (!jit_is_number(t))
                return err_at(s, n->a, "a device function can return a number, not %s", TS(t));
            jit_type j;
            join(s->ret_seen ? s->ret : unknown, t, &j);
            s->ret = j;
            s->ret_seen = true;
        }
        return 0;
    default: return 0;
    }
}

static int walk(infer *s, jit_node **body, int n) {
    for (int i = 0; i < n; i++)
        if ((stmt(s, body[i]) < 0 && s->report) || s->failed) return -1;
    return 0;
}

static int run(jit_func *f, const jit_type *params, jit_type *ret, jit_error *err, int depth) {
    free(f->var_types);
    f->var_types = calloc((size_t)f->nvars + 1, sizeof *f->var_types);
    int *lines = calloc((size_t)f->nvars * 2 + 2, sizeof *lines);
    if (!f->var_types || !lines) {
        free(lines);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return -1;
    }
    infer s = {
        .f = f, .err = err, .def_line = lines, .def_col = lines + f->nvars + 1, .depth = depth};
    for (int i = 0; i < f->nparams; i++) {
        f->var_types[i] = params[i];
        lines[i] = f->vars[i].line;
    }
    int rounds = 0;
    do {
        s.changed = false;
        s.ret_seen = s.bare_return = false;
        s.ret = unknown;
        walk(&s, f->body, f->nbody);
    } while (s.changed && ++rounds < 64);
    s.report = true;
    s.ret_seen = s.bare_return = false;
    s.ret = unknown;
    int rc = walk(&s, f->body, f->nbody);
    /* a variable whose type never became known is read before any assignment,
     * or only in code a compile-time decision dropped (never used: any type) */
    for (int v = f->nparams; rc == 0 && v < f->nvars; v++) {
        if (known(f->var_types[v])) continue;
        if (!f->vars[v].in_code)
            f->var_types[v] = jit_weak_int();
        else
            rc = jit_error_at(
                err, f, f->vars[v].line, f->vars[v].col,
                "the type of '%s' cannot be inferred: it is read before it is assigned",
                f->vars[v].name);
    }
    if (rc == 0 && !f->is_kernel) {
        if (s.ret_seen && s.bare_return)
            rc = jit_error_at(err, f, f->vars[0].line, 1,
                              "'%s' returns a value on some paths and nothing on others", f->name);
        *ret = s.ret_seen ? s.ret : (jit_type){JT_NONE, 0, 0, 0, 0};
    }
    free(lines);
    return rc;
}

typedef struct {
    jit_func *f;
    const jit_type *params;
    jit_type *ret;
    jit_error *err;
} infer_call;

static int infer_main(void *arg) {
    infer_call *c = arg;
    if (jit_check_assigned(c->f, c->err) < 0) return -1;
    return run(c->f, c->params, c->ret, c->err, 0);
}

int jit_infer(jit_func *f, const jit_type *params, jit_type *ret, jit_error *err) {
    jit_type r;
    infer_call c = {f, params, ret ? ret : &r, err};
    return jit_with_stack(f->depth, infer_main, &c, err);
}
