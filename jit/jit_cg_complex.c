/* jit_cg_complex: complex numbers -- what stays in the code generator.
 *
 * A complex64/complex128 value is a <2 x float>/<2 x double> (real first, as
 * NumPy lays them out in memory and OpenCL's float2/double2 pass by value).
 * The algorithms -- division, powers, every math function of a complex
 * argument -- are device functions in the kernel language, in the JIT's
 * device library (jit/lib/complex.py; docs/complex.md), which this file
 * calls: `/` calls cdiv, `**` with an exponent known at run time cpow, and a
 * builtin the function its jit_builtins row names (cx).
 *
 * Builder code stays here where the language cannot say it, or says it only
 * through this file:
 *   - the representation: the vector, its parts, building one from parts
 *     (the library's own complex(re, im) and .real/.imag come here);
 *   - conversions between dtypes, and complex to bool;
 *   - + - * and the comparisons, each a line or two on the parts: * is
 *     NumPy's plain formula, which the library's own products use too;
 *   - abs (hypot), conj, isnan, isinf, isfinite: one call or test per part;
 *   - a power whose exponent is a constant integer: its squarings are
 *     unrolled from the constant, which only the compiler sees (a device
 *     function's parameters are never compile-time), and a negative one
 *     divides with the library's cdiv.
 *
 * Called by jit_cg_types (conversions), jit_cg_arith (operators), jit_cg_expr
 * (.real, .imag) and jit_cg_call (builtins, .conjugate()). */
#include <stdint.h>
#include <string.h>

#include "jit_cg.h"

typedef struct {
    cg *c;
    jit_dtype d;  /* complex64 or complex128 */
    jit_dtype pd; /* its parts' dtype: float32 or float64 */
    LLVMBuilderRef b;
} cx;

static cx cx_of(cg *c, jit_dtype d) { return (cx){c, d, jit_complex_part(d), c->m->b}; }
static LLVMValueRef cx_k(cx *x, double v) { return LLVMConstReal(jit_cg_ltype_dt(x->c, x->pd), v); }
static LLVMValueRef cx_re(cx *x, LLVMValueRef z) {
    return LLVMBuildExtractElement(x->b, z, LLVMConstInt(x->c->m->i32, 0, 0), "re");
}
static LLVMValueRef cx_im(cx *x, LLVMValueRef z) {
    return LLVMBuildExtractElement(x->b, z, LLVMConstInt(x->c->m->i32, 1, 0), "im");
}
static LLVMValueRef cx_make(cx *x, LLVMValueRef re, LLVMValueRef im) {
    LLVMTypeRef vt = LLVMVectorType(jit_cg_ltype_dt(x->c, x->pd), 2);
    LLVMValueRef z =
        LLVMBuildInsertElement(x->b, LLVMGetUndef(vt), re, LLVMConstInt(x->c->m->i32, 0, 0), "");
    return LLVMBuildInsertElement(x->b, z, im, LLVMConstInt(x->c->m->i32, 1, 0), "");
}
static LLVMValueRef cx_mul(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFMul(x->b, a, b, "");
}
static LLVMValueRef cx_fn(cx *x, const char *name, LLVMValueRef a) {
    return jit_cg_math1(x->c, name, x->pd, a);
}
static LLVMValueRef cx_fn2(cx *x, const char *name, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef args[2] = {a, b};
    return jit_target_math(&x->c->m->tg, name, x->pd == JIT_F64, args, 2);
}
static LLVMValueRef cx_cmp(cx *x, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(x->b, p, a, b, "");
}
static LLVMValueRef cx_and(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildAnd(x->b, a, b, "");
}
static LLVMValueRef cx_or(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildOr(x->b, a, b, "");
}
/* |a| < inf: false for inf and NaN */
static LLVMValueRef cx_finite(cx *x, LLVMValueRef a) {
    return cx_cmp(x, LLVMRealOLT, cx_fn(x, "fabs", a), cx_k(x, 1.0 / 0.0));
}

/* (a + bi)(c + di) as NumPy: the plain formula. */
static void cx_mul_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c, LLVMValueRef d,
                         LLVMValueRef *re, LLVMValueRef *im) {
    *re = LLVMBuildFSub(x->b, cx_mul(x, a, c), cx_mul(x, b, d), "");
    *im = LLVMBuildFAdd(x->b, cx_mul(x, a, d), cx_mul(x, b, c), "");
}

static LLVMValueRef cx_times(cx *x, LLVMValueRef p, LLVMValueRef q) {
    LLVMValueRef re, im;
    cx_mul_parts(x, cx_re(x, p), cx_im(x, p), cx_re(x, q), cx_im(x, q), &re, &im);
    return cx_make(x, re, im);
}

/* The device library's fn on the complex values v[n] of x's dtype. */
static LLVMValueRef cx_lib(cx *x, const jit_node *at, const char *fn, LLVMValueRef *v, int n) {
    jit_type t[2] = {jit_scalar(x->d), jit_scalar(x->d)}, ret;
    LLVMValueRef r = jit_cg_call_lib(x->c, at, fn, t, v, n, true, &ret);
    return r ? jit_cg_conv(x->c, r, ret, t[0]) : NULL;
}

/* p ** n for a constant integer n, |n| < 100, as NumPy's npy_cpow: by
 * squaring, unrolled for n (the library's cpow, for an exponent known at run
 * time, takes all seven bits); 1 / p ** -n by Smith's division. */
static LLVMValueRef cx_const_pow(cx *x, LLVMValueRef p, const jit_node *qn) {
    LLVMValueRef one = cx_make(x, cx_k(x, 1), cx_k(x, 0));
    int64_t n = qn->v.i < 0 ? -qn->v.i : qn->v.i;
    LLVMValueRef acc = one, sq = p;
    bool first = true; /* NumPy's own n = 1, 2, 3 skip the leading 1 * p */
    for (; n; n >>= 1) {
        if (n & 1) acc = first ? sq : cx_times(x, acc, sq), first = false;
        if (n > 1) sq = cx_times(x, sq, sq);
    }
    LLVMValueRef v[2] = {one, acc};
    return qn->v.i < 0 ? cx_lib(x, qn, "cdiv", v, 2) : acc;
}

/* op on two complex values of dtype d (jit_infer allowed only these). */
LLVMValueRef jit_cg_cx_arith(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q,
                             const jit_node *qn) {
    cx x = cx_of(c, d);
    LLVMValueRef v[2] = {p, q};
    switch (op) {
    case OP_ADD: return LLVMBuildFAdd(x.b, p, q, "");
    case OP_SUB: return LLVMBuildFSub(x.b, p, q, "");
    case OP_MUL: return cx_times(&x, p, q);
    case OP_DIV: return cx_lib(&x, qn, "cdiv", v, 2);
    default:
        if (qn->kind == N_CONST && qn->type.kind == JT_WEAK_INT && qn->v.i > -100 && qn->v.i < 100)
            return cx_const_pow(&x, p, qn);
        return cx_lib(&x, qn, "cpow", v, 2);
    }
}

/* p op q on complex values as NumPy 2: == and != on both parts; the
 * orderings lexicographic, real parts first, false where a NaN decides. */
LLVMValueRef jit_cg_cx_compare(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q) {
    cx x = cx_of(c, d);
    LLVMValueRef a = cx_re(&x, p), b = cx_im(&x, p), cr = cx_re(&x, q), di = cx_im(&x, q);
    if (op == OP_EQ || op == OP_NE)
        return op == OP_EQ
                   ? cx_and(&x, cx_cmp(&x, LLVMRealOEQ, a, cr), cx_cmp(&x, LLVMRealOEQ, b, di))
                   : cx_or(&x, cx_cmp(&x, LLVMRealUNE, a, cr), cx_cmp(&x, LLVMRealUNE, b, di));
    static const LLVMRealPredicate strict[] = {
        [OP_LT] = LLVMRealOLT, [OP_LE] = LLVMRealOLT, [OP_GT] = LLVMRealOGT, [OP_GE] = LLVMRealOGT};
    static const LLVMRealPredicate tie[] = {
        [OP_LT] = LLVMRealOLT, [OP_LE] = LLVMRealOLE, [OP_GT] = LLVMRealOGT, [OP_GE] = LLVMRealOGE};
    LLVMValueRef ordered_im = cx_cmp(&x, LLVMRealORD, b, di);
    LLVMValueRef by_re = cx_and(&x, cx_cmp(&x, strict[op], a, cr), ordered_im);
    LLVMValueRef by_im = cx_and(&x, cx_cmp(&x, LLVMRealOEQ, a, cr), cx_cmp(&x, tie[op], b, di));
    return cx_or(&x, by_re, by_im);
}

/* A number of dtype from as dtype to where either is complex: a real number
 * gets a +0 imaginary part; complex to bool is Python's truth (z != 0); to a
 * real dtype (which jit_infer allows only through .real) the real part. */
LLVMValueRef jit_cg_cx_convert(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to) {
    LLVMBuilderRef b = c->m->b;
    if (jit_dtype_is_complex(from) && jit_dtype_is_complex(to)) {
        LLVMTypeRef tt = jit_cg_ltype_dt(c, to);
        return to == JIT_C128 ? LLVMBuildFPExt(b, v, tt, "") : LLVMBuildFPTrunc(b, v, tt, "");
    }
    if (jit_dtype_is_complex(to)) {
        cx x = cx_of(c, to);
        return cx_make(&x, jit_cg_conv_dt(c, v, from, x.pd), cx_k(&x, 0));
    }
    cx x = cx_of(c, from);
    if (to == JIT_BOOL) {
        LLVMValueRef zero = cx_k(&x, 0);
        return cx_or(&x, cx_cmp(&x, LLVMRealUNE, cx_re(&x, v), zero),
                     cx_cmp(&x, LLVMRealUNE, cx_im(&x, v), zero));
    }
    return jit_cg_conv_dt(c, cx_re(&x, v), x.pd, to);
}

/* A builtin with a complex argument, complex(re, im) or numpy.conj; a[] the
 * arguments' values. */
LLVMValueRef jit_cg_cx_builtin(cg *c, jit_node *n, const jit_builtin *bt, LLVMValueRef *a) {
    jit_type rt = n->type, t0 = n->nkids ? n->kids[0]->type : rt;
    jit_dtype d0 = jit_cg_dt_of(c, t0);
    if (bt->gen == GEN_COMPLEX) {
        cx x = cx_of(c, jit_cg_dt_of(c, rt));
        LLVMValueRef re = n->nkids > 0 ? jit_cg_conv_dt(c, a[0], d0, x.pd) : cx_k(&x, 0);
        LLVMValueRef im = n->nkids > 1
                              ? jit_cg_conv_dt(c, a[1], jit_cg_dt_of(c, n->kids[1]->type), x.pd)
                              : cx_k(&x, 0);
        return cx_make(&x, re, im);
    }
    if (!jit_dtype_is_complex(d0)) /* numpy.conj of a real number: itself */
        return jit_cg_conv(c, a[0], t0, rt);
    cx x = cx_of(c, d0);
    LLVMValueRef re = cx_re(&x, a[0]), im = cx_im(&x, a[0]);
    switch (bt->gen) {
    case GEN_CONJ: return cx_make(&x, re, LLVMBuildFNeg(x.b, im, ""));
    case GEN_ABS: return cx_fn2(&x, "hypot", re, im);
    case GEN_ISNAN:
        return cx_or(&x, cx_cmp(&x, LLVMRealUNO, re, re), cx_cmp(&x, LLVMRealUNO, im, im));
    case GEN_ISFINITE: return cx_and(&x, cx_finite(&x, re), cx_finite(&x, im));
    case GEN_ISINF: {
        LLVMValueRef inf = cx_k(&x, 1.0 / 0.0);
        return cx_or(&x, cx_cmp(&x, LLVMRealOEQ, cx_fn(&x, "fabs", re), inf),
                     cx_cmp(&x, LLVMRealOEQ, cx_fn(&x, "fabs", im), inf));
    }
    case GEN_CONVERT: return jit_cg_cx_convert(c, a[0], d0, JIT_BOOL);
    case GEN_MATH:
    case GEN_NP_ROUND: {
        cx y = cx_of(c, jit_cg_dt_of(c, rt));
        LLVMValueRef z = jit_cg_conv(c, a[0], t0, rt);
        return cx_lib(&y, n, bt->cx, &z, 1);
    }
    default: return jit_cg_fail(c, n, "internal: complex builtin %s", bt->py), NULL;
    }
}

/* z.real, z.imag of any number (a real one's imaginary part is zero). */
LLVMValueRef jit_cg_cx_part(cg *c, jit_node *n) {
    LLVMValueRef v = jit_cg_expr(c, n->a);
    if (!v) return NULL;
    jit_dtype d = jit_cg_dt_of(c, n->a->type);
    bool imag = !strcmp(n->v.name, "imag");
    if (!jit_dtype_is_complex(d)) return imag ? LLVMConstNull(LLVMTypeOf(v)) : v;
    cx x = cx_of(c, d);
    return imag ? cx_im(&x, v) : cx_re(&x, v);
}

/* z.conjugate() / z.conj() */
LLVMValueRef jit_cg_cx_conj_method(cg *c, jit_node *n) {
    jit_node *obj = n->a->a;
    LLVMValueRef v = jit_cg_expr(c, obj);
    if (!v) return NULL;
    jit_dtype d = jit_cg_dt_of(c, obj->type);
    if (!jit_dtype_is_complex(d)) return jit_cg_conv(c, v, obj->type, n->type);
    cx x = cx_of(c, d);
    return cx_make(&x, cx_re(&x, v), LLVMBuildFNeg(x.b, cx_im(&x, v), ""));
}
