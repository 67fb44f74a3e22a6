/* jit_cg_complex: complex numbers.
 *
 * A complex64/complex128 value is a <2 x float>/<2 x double> (real first, as
 * NumPy lays them out in memory and OpenCL's float2/double2 pass by value),
 * computed on its parts with real builtins. The formulas are NumPy's where it
 * has its own (multiplication, Smith's division, expm1, log1p, integer powers)
 * and C99's Annex G otherwise (NumPy calls the C library's cexp, clog, csqrt,
 * csin, ccos, ctanh), with its special values where they cost a select.
 *
 * Called by jit_cg_types (conversions), jit_cg_arith (operators), jit_cg_expr
 * (.real, .imag) and jit_cg_call (builtins, .conjugate()). */
#include <stdint.h>
#include <string.h>

#include "jit_cg.h"

typedef struct {
    cg *c;
    jit_dtype pd; /* the parts' dtype: float32 or float64 */
    LLVMBuilderRef b;
} cx;

static cx cx_of(cg *c, jit_dtype d) { return (cx){c, jit_complex_part(d), c->m->b}; }
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
static LLVMValueRef cx_add(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFAdd(x->b, a, b, "");
}
static LLVMValueRef cx_sub(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFSub(x->b, a, b, "");
}
static LLVMValueRef cx_mul(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFMul(x->b, a, b, "");
}
static LLVMValueRef cx_div(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFDiv(x->b, a, b, "");
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
static LLVMValueRef cx_sel(cx *x, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(x->b, cond, a, b, "");
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
    *re = cx_sub(x, cx_mul(x, a, c), cx_mul(x, b, d));
    *im = cx_add(x, cx_mul(x, a, d), cx_mul(x, b, c));
}

static LLVMValueRef cx_times(cx *x, LLVMValueRef p, LLVMValueRef q) {
    LLVMValueRef re, im;
    cx_mul_parts(x, cx_re(x, p), cx_im(x, p), cx_re(x, q), cx_im(x, q), &re, &im);
    return cx_make(x, re, im);
}

/* p / q by Smith's algorithm, as NumPy: no overflow of c*c + d*d, and a zero
 * divisor gives NumPy's infinities and NaNs. */
static LLVMValueRef cx_quot(cx *x, LLVMValueRef p, LLVMValueRef q) {
    LLVMValueRef a = cx_re(x, p), b = cx_im(x, p), c = cx_re(x, q), d = cx_im(x, q);
    LLVMValueRef ac = cx_fn(x, "fabs", c), ad = cx_fn(x, "fabs", d), one = cx_k(x, 1);
    /* |c| >= |d| */
    LLVMValueRef rat1 = cx_div(x, d, c);
    LLVMValueRef scl1 = cx_div(x, one, cx_add(x, c, cx_mul(x, d, rat1)));
    LLVMValueRef re1 = cx_mul(x, cx_add(x, a, cx_mul(x, b, rat1)), scl1);
    LLVMValueRef im1 = cx_mul(x, cx_sub(x, b, cx_mul(x, a, rat1)), scl1);
    /* both zero: a / |c|, b / |c| */
    LLVMValueRef zero =
        cx_and(x, cx_cmp(x, LLVMRealOEQ, ac, cx_k(x, 0)), cx_cmp(x, LLVMRealOEQ, ad, cx_k(x, 0)));
    re1 = cx_sel(x, zero, cx_div(x, a, ac), re1);
    im1 = cx_sel(x, zero, cx_div(x, b, ac), im1);
    /* |c| < |d| (or NaN) */
    LLVMValueRef rat2 = cx_div(x, c, d);
    LLVMValueRef scl2 = cx_div(x, one, cx_add(x, d, cx_mul(x, c, rat2)));
    LLVMValueRef re2 = cx_mul(x, cx_add(x, cx_mul(x, a, rat2), b), scl2);
    LLVMValueRef im2 = cx_mul(x, cx_sub(x, cx_mul(x, b, rat2), a), scl2);
    LLVMValueRef first = cx_cmp(x, LLVMRealOGE, ac, ad);
    return cx_make(x, cx_sel(x, first, re1, re2), cx_sel(x, first, im1, im2));
}

/* exp(a + bi): C99 cexp. */
static void cx_exp_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                         LLVMValueRef *im) {
    LLVMValueRef e = cx_fn(x, "exp", a), zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0);
    LLVMValueRef r = cx_mul(x, e, cx_fn(x, "cos", b)), i = cx_mul(x, e, cx_fn(x, "sin", b));
    LLVMValueRef breal = cx_cmp(x, LLVMRealOEQ, b, zero); /* exp(a) + bi, b's zero kept */
    r = cx_sel(x, breal, e, r);
    i = cx_sel(x, breal, b, i);
    LLVMValueRef bbad = LLVMBuildNot(x->b, cx_finite(x, b), "");
    LLVMValueRef pinf = cx_and(x, bbad, cx_cmp(x, LLVMRealOEQ, a, inf)),
                 ninf = cx_and(x, bbad, cx_cmp(x, LLVMRealOEQ, a, LLVMBuildFNeg(x->b, inf, "")));
    r = cx_sel(x, pinf, inf, cx_sel(x, ninf, zero, r));
    i = cx_sel(x, pinf, cx_sub(x, b, b), cx_sel(x, ninf, cx_fn2(x, "copysign", zero, b), i));
    *re = r;
    *im = i;
}

/* log(a + bi) = log|z| + i arg z; near |z| = 1 from log1p, where log(hypot)
 * would lose the digits. */
static void cx_log_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                         LLVMValueRef *im) {
    LLVMValueRef aa = cx_fn(x, "fabs", a), ab = cx_fn(x, "fabs", b);
    LLVMValueRef hi = cx_fn2(x, "fmax", aa, ab), lo = cx_fn2(x, "fmin", aa, ab);
    LLVMValueRef one = cx_k(x, 1);
    LLVMValueRef far = cx_fn(x, "log", cx_fn2(x, "hypot", a, b));
    LLVMValueRef t =
        cx_add(x, cx_mul(x, cx_sub(x, hi, one), cx_add(x, hi, one)), cx_mul(x, lo, lo));
    LLVMValueRef near = cx_mul(x, cx_k(x, 0.5), cx_fn(x, "log1p", t));
    LLVMValueRef is_near = /* fmax and fmin ignore a NaN: an ordered pair only */
        cx_and(x,
               cx_and(x, cx_cmp(x, LLVMRealOGT, hi, cx_k(x, 0.5)),
                      cx_cmp(x, LLVMRealOLT, hi, cx_k(x, 2))),
               cx_cmp(x, LLVMRealORD, a, b));
    *re = cx_sel(x, is_near, near, far);
    *im = cx_fn2(x, "atan2", b, a);
}

/* sqrt(a + bi): C99 csqrt, scaled where a + |z| would overflow. */
static void cx_sqrt_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                          LLVMValueRef *im) {
    LLVMValueRef zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0), half = cx_k(x, 0.5), two = cx_k(x, 2);
    LLVMValueRef aa = cx_fn(x, "fabs", a), ab = cx_fn(x, "fabs", b);
    LLVMValueRef big_at = cx_k(x, x->pd == JIT_F64 ? 0x1p1020 : 0x1p124);
    LLVMValueRef big =
        cx_or(x, cx_cmp(x, LLVMRealOGT, aa, big_at), cx_cmp(x, LLVMRealOGT, ab, big_at));
    LLVMValueRef sa = cx_sel(x, big, cx_mul(x, a, cx_k(x, 0.25)), a),
                 sb = cx_sel(x, big, cx_mul(x, b, cx_k(x, 0.25)), b);
    LLVMValueRef h = cx_fn2(x, "hypot", sa, sb);
    LLVMValueRef tp = cx_fn(x, "sqrt", cx_mul(x, cx_add(x, sa, h), half));
    LLVMValueRef tn = cx_fn(x, "sqrt", cx_mul(x, cx_sub(x, h, sa), half));
    LLVMValueRef pos = cx_cmp(x, LLVMRealOGE, a, zero);
    LLVMValueRef r = cx_sel(x, pos, tp, cx_div(x, cx_fn(x, "fabs", sb), cx_mul(x, two, tn)));
    LLVMValueRef i =
        cx_sel(x, pos, cx_div(x, sb, cx_mul(x, two, tp)), cx_fn2(x, "copysign", tn, sb));
    r = cx_sel(x, big, cx_mul(x, r, two), r);
    i = cx_sel(x, big, cx_mul(x, i, two), i);
    /* special values, the most binding last */
    LLVMValueRef bmb = cx_sub(x, b, b); /* 0, or NaN for an infinite or NaN b */
    LLVMValueRef ninf = cx_cmp(x, LLVMRealOEQ, a, LLVMBuildFNeg(x->b, inf, ""));
    r = cx_sel(x, ninf, cx_fn(x, "fabs", bmb), r);
    i = cx_sel(x, ninf, cx_fn2(x, "copysign", inf, b), i);
    LLVMValueRef pinf = cx_cmp(x, LLVMRealOEQ, a, inf);
    r = cx_sel(x, pinf, a, r);
    i = cx_sel(x, pinf, cx_fn2(x, "copysign", bmb, b), i);
    LLVMValueRef anan = cx_cmp(x, LLVMRealUNO, a, a);
    r = cx_sel(x, anan, a, r);
    i = cx_sel(x, anan, cx_add(x, a, b), i);
    LLVMValueRef binf = cx_cmp(x, LLVMRealOEQ, ab, inf);
    r = cx_sel(x, binf, inf, r);
    i = cx_sel(x, binf, b, i);
    LLVMValueRef z = cx_and(x, cx_cmp(x, LLVMRealOEQ, a, zero), cx_cmp(x, LLVMRealOEQ, b, zero));
    r = cx_sel(x, z, zero, r);
    i = cx_sel(x, z, b, i);
    *re = r;
    *im = i;
}

/* sin(a + bi) = sin a cosh b + i cos a sinh b; cos(a + bi) = cos a cosh b -
 * i sin a sinh b; zero parts keep their zeros where the products would be
 * 0 * inf or NaN * 0. */
static void cx_sincos_parts(cx *x, bool is_cos, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                            LLVMValueRef *im) {
    LLVMValueRef zero = cx_k(x, 0);
    LLVMValueRef sa = cx_fn(x, "sin", a), ca = cx_fn(x, "cos", a), chb = cx_fn(x, "cosh", b),
                 shb = cx_fn(x, "sinh", b);
    LLVMValueRef azero = cx_cmp(x, LLVMRealOEQ, a, zero),
                 bzero_abad = cx_and(x, cx_cmp(x, LLVMRealOEQ, b, zero),
                                     LLVMBuildNot(x->b, cx_finite(x, a), ""));
    /* a infinite or NaN, b infinite: the infinite part's sign is unspecified;
     * glibc's (which NumPy shows) is + */
    LLVMValueRef inf = cx_k(x, 1.0 / 0.0), nan = cx_k(x, 0.0 / 0.0);
    LLVMValueRef both_bad = cx_and(x, LLVMBuildNot(x->b, cx_finite(x, a), ""),
                                   cx_cmp(x, LLVMRealOEQ, cx_fn(x, "fabs", b), inf));
    LLVMValueRef r, i;
    if (!is_cos) {
        r = cx_sel(x, azero, a, cx_mul(x, sa, chb));
        i = cx_sel(x, bzero_abad, b, cx_mul(x, ca, shb));
        r = cx_sel(x, both_bad, nan, r);
        i = cx_sel(x, both_bad, inf, i);
    } else {
        r = cx_mul(x, ca, chb);
        LLVMValueRef i0 =
            LLVMBuildFNeg(x->b, cx_mul(x, a, cx_fn2(x, "copysign", cx_k(x, 1), b)), "");
        i = cx_sel(x, azero, i0, LLVMBuildFNeg(x->b, cx_mul(x, sa, shb), ""));
        /* glibc's ccosh(-b + ai): a infinite or NaN, b finite: (NaN, +0 for a zero b,
         * else NaN); a zero, b NaN: (NaN, a) */
        LLVMValueRef abad_bfin =
            cx_and(x, LLVMBuildNot(x->b, cx_finite(x, a), ""), cx_finite(x, b));
        i = cx_sel(x, abad_bfin, cx_sel(x, cx_cmp(x, LLVMRealOEQ, b, zero), zero, nan), i);
        r = cx_sel(x, abad_bfin, nan, r);
        LLVMValueRef azero_bnan = cx_and(x, azero, cx_cmp(x, LLVMRealUNO, b, b));
        i = cx_sel(x, azero_bnan, a, i);
        r = cx_sel(x, both_bad, inf, r);
        i = cx_sel(x, both_bad, nan, i);
    }
    *re = r;
    *im = i;
}

/* tanh(a + bi): Kahan's formula (as FreeBSD's ctanh); past |a| of 22 (9 for
 * float32) tanh a is 1 to the last bit. */
static void cx_tanh_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                          LLVMValueRef *im) {
    LLVMValueRef one = cx_k(x, 1), zero = cx_k(x, 0);
    LLVMValueRef t = cx_fn(x, "tan", b), s = cx_fn(x, "sinh", a);
    LLVMValueRef beta = cx_add(x, one, cx_mul(x, t, t));
    LLVMValueRef rho = cx_fn(x, "sqrt", cx_add(x, one, cx_mul(x, s, s)));
    LLVMValueRef den = cx_add(x, one, cx_mul(x, cx_mul(x, beta, s), s));
    LLVMValueRef r = cx_div(x, cx_mul(x, cx_mul(x, beta, rho), s), den), i = cx_div(x, t, den);
    LLVMValueRef big =
        cx_cmp(x, LLVMRealOGE, cx_fn(x, "fabs", a), cx_k(x, x->pd == JIT_F64 ? 22 : 9));
    LLVMValueRef ib =
        cx_mul(x, cx_mul(x, cx_mul(x, cx_k(x, 4), cx_fn(x, "sin", b)), cx_fn(x, "cos", b)),
               cx_fn(x, "exp", cx_mul(x, cx_k(x, -2), cx_fn(x, "fabs", a))));
    ib = cx_sel(x, cx_finite(x, b), ib, cx_fn2(x, "copysign", zero, b));
    r = cx_sel(x, big, cx_fn2(x, "copysign", one, a), r);
    i = cx_sel(x, big, ib, i);
    LLVMValueRef breal = cx_cmp(x, LLVMRealOEQ, b, zero);
    r = cx_sel(x, breal, cx_fn(x, "tanh", a), r);
    i = cx_sel(x, breal, b, i);
    LLVMValueRef aimag = cx_cmp(x, LLVMRealOEQ, a, zero); /* i tan b, a's zero kept */
    r = cx_sel(x, aimag, a, r);
    i = cx_sel(x, aimag, t, i);
    /* glibc's: a not infinite and not zero, b infinite or NaN: NaN */
    LLVMValueRef nan_case =
        cx_and(x,
               cx_and(x, cx_cmp(x, LLVMRealUNE, cx_fn(x, "fabs", a), cx_k(x, 1.0 / 0.0)),
                      cx_cmp(x, LLVMRealUNE, a, zero)),
               LLVMBuildNot(x->b, cx_finite(x, b), ""));
    r = cx_sel(x, nan_case, cx_k(x, 0.0 / 0.0), r);
    i = cx_sel(x, nan_case, cx_k(x, 0.0 / 0.0), i);
    *re = r;
    *im = i;
}

/* Kahan's formulas ("Branch cuts for complex elementary functions", as
 * Julia's): from p = sqrt(1 - z) and q = sqrt(1 + z), which keep every
 * digit near the branch points and overflow nowhere.
 * asin(z) = atan2(a, Re(p q)) + i asinh(Im(conj(p) q)),
 * acos(z) = 2 atan2(Re p, Re q) + i asinh(Im(conj(q) p)). */
static void cx_asin_acos_parts(cx *x, bool is_acos, LLVMValueRef a, LLVMValueRef b,
                               LLVMValueRef *re, LLVMValueRef *im) {
    LLVMValueRef one = cx_k(x, 1), zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0);
    LLVMValueRef halfpi = cx_k(x, 1.5707963267948966);
    LLVMValueRef pr, pi, qr, qi;
    cx_sqrt_parts(x, cx_sub(x, one, a), LLVMBuildFNeg(x->b, b, ""), &pr, &pi);
    cx_sqrt_parts(x, cx_add(x, one, a), b, &qr, &qi);
    LLVMValueRef anan = cx_cmp(x, LLVMRealUNO, a, a), bnan = cx_cmp(x, LLVMRealUNO, b, b);
    LLVMValueRef ainf = cx_cmp(x, LLVMRealOEQ, cx_fn(x, "fabs", a), inf),
                 binf = cx_cmp(x, LLVMRealOEQ, cx_fn(x, "fabs", b), inf);
    LLVMValueRef r, i;
    if (!is_acos) {
        r = cx_fn2(x, "atan2", a, cx_sub(x, cx_mul(x, pr, qr), cx_mul(x, pi, qi)));
        r = cx_sel(x, cx_cmp(x, LLVMRealOEQ, a, zero), a, r);
        r = cx_sel(x, ainf, cx_fn2(x, "copysign", halfpi, a), r);
        i = cx_fn(x, "asinh",
                  cx_fn2(x, "copysign", cx_sub(x, cx_mul(x, pr, qi), cx_mul(x, pi, qr)), b));
        /* both infinite: (+-pi/4, b); a infinite, b NaN: (NaN, inf) */
        r = cx_sel(x, cx_and(x, ainf, binf), cx_fn2(x, "copysign", cx_k(x, 0.7853981633974483), a),
                   r);
        i = cx_sel(x, cx_and(x, ainf, binf), b, i);
        r = cx_sel(x, cx_and(x, ainf, bnan), b, r);
        i = cx_sel(x, cx_and(x, ainf, bnan), inf, i);
    } else {
        r = cx_mul(x, cx_k(x, 2), cx_fn2(x, "atan2", pr, qr));
        i = cx_fn(x, "asinh", cx_sub(x, cx_mul(x, qr, pi), cx_mul(x, qi, pr)));
        /* NaN parts as C99 (glibc): a NaN a gives (NaN, -b) for an infinite b,
         * else NaN; a NaN b gives (NaN, -inf) for an infinite a, (pi/2, b)
         * for a zero a, else NaN */
        LLVMValueRef azero = cx_cmp(x, LLVMRealOEQ, a, zero);
        LLVMValueRef bn_r = cx_sel(x, azero, halfpi, b);
        LLVMValueRef bn_i = cx_sel(x, ainf, LLVMBuildFNeg(x->b, inf, ""), b);
        r = cx_sel(x, bnan, bn_r, r);
        i = cx_sel(x, bnan, bn_i, i);
        r = cx_sel(x, anan, a, r);
        i = cx_sel(x, anan, cx_sel(x, binf, LLVMBuildFNeg(x->b, b, ""), a), i);
        /* both infinite: (pi/4 or 3 pi/4, -b) */
        LLVMValueRef both = cx_and(x, ainf, binf);
        r = cx_sel(x, both,
                   cx_sel(x, cx_cmp(x, LLVMRealOGT, a, zero), cx_k(x, 0.7853981633974483),
                          cx_k(x, 2.356194490192345)),
                   r);
        i = cx_sel(x, both, LLVMBuildFNeg(x->b, b, ""), i);
        /* zero: (pi/2, -b) */
        LLVMValueRef z = cx_and(x, azero, cx_cmp(x, LLVMRealOEQ, b, zero));
        r = cx_sel(x, z, halfpi, r);
        i = cx_sel(x, z, LLVMBuildFNeg(x->b, b, ""), i);
    }
    *re = r;
    *im = i;
}

/* atanh(a + bi) by Kahan's formula (as Julia's): past sqrt(max)/4 it is
 * 1/z's real part + i pi/2; else from |a| (the result's signs follow a) as
 * log1p(4x / ((1 - x)^2 + y^2)) / 4 + i atan2(2y, (1 - x)(1 + x) - y^2) / 2,
 * y offset by rho so that x = 1, y = 0 divides by no zero. */
static void cx_atanh_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                           LLVMValueRef *im) {
    bool f64 = x->pd == JIT_F64;
    double theta_v = f64 ? 3.3519519824856493e153 : 4.611686e18;
    LLVMValueRef one = cx_k(x, 1), zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0);
    LLVMValueRef halfpi = cx_k(x, 1.5707963267948966), theta = cx_k(x, theta_v),
                 rho = cx_k(x, 1.0 / theta_v);
    LLVMValueRef ax = cx_fn(x, "fabs", a), ay = cx_fn(x, "fabs", b);
    /* far out: Re(1/z) by Smith's division, i pi/2 with b's sign */
    LLVMValueRef q1 = cx_div(x, b, a), q2 = cx_div(x, a, b);
    LLVMValueRef far_r =
        cx_sel(x, cx_cmp(x, LLVMRealOGE, ax, ay), cx_div(x, one, cx_add(x, a, cx_mul(x, b, q1))),
               cx_div(x, q2, cx_add(x, cx_mul(x, a, q2), b)));
    LLVMValueRef far_i = cx_fn2(x, "copysign", halfpi, b);
    LLVMValueRef binf = cx_cmp(x, LLVMRealOEQ, ay, inf), bnan = cx_cmp(x, LLVMRealUNO, b, b);
    LLVMValueRef ainf = cx_cmp(x, LLVMRealOEQ, ax, inf);
    far_r = cx_sel(x, cx_or(x, binf, cx_and(x, bnan, ainf)), cx_fn2(x, "copysign", zero, a), far_r);
    far_i = cx_sel(x, bnan, b, far_i);
    /* a NaN a and a finite b: NaN (C99) */
    far_i =
        cx_sel(x, cx_and(x, cx_cmp(x, LLVMRealUNO, a, a), LLVMBuildNot(x->b, binf, "")), a, far_i);
    LLVMValueRef far =
        cx_or(x, cx_cmp(x, LLVMRealOGT, ax, theta), cx_cmp(x, LLVMRealOGT, ay, theta));
    /* near: z times the sign of a */
    LLVMValueRef beta = cx_fn2(x, "copysign", one, a);
    LLVMValueRef xr = ax, y = cx_mul(x, b, beta);
    LLVMValueRef ayr = cx_add(x, ay, rho), ysq = cx_mul(x, ayr, ayr);
    LLVMValueRef omx = cx_sub(x, one, xr);
    LLVMValueRef xi =
        cx_mul(x,
               cx_fn(x, "log1p",
                     cx_div(x, cx_mul(x, cx_k(x, 4), xr), cx_add(x, cx_mul(x, omx, omx), ysq))),
               cx_k(x, 0.25));
    xi = cx_sel(x, cx_cmp(x, LLVMRealOEQ, xr, zero), xr, xi);
    LLVMValueRef eta = cx_mul(x,
                              cx_fn2(x, "atan2", cx_mul(x, cx_k(x, 2), y),
                                     cx_sub(x, cx_mul(x, omx, cx_add(x, one, xr)), ysq)),
                              cx_k(x, 0.5));
    /* x = 1: log(sqrt(sqrt(4 + y^2)) / sqrt|y|), (pi/2 + atan(|y| / 2)) / 2 (Julia adds
     * rho to |y| here too, which a tiny y would notice) */
    LLVMValueRef xone = cx_cmp(x, LLVMRealOEQ, xr, one);
    LLVMValueRef xi1 =
        cx_fn(x, "log",
              cx_div(x, cx_fn(x, "sqrt", cx_fn(x, "sqrt", cx_add(x, cx_k(x, 4), cx_mul(x, y, y)))),
                     cx_fn(x, "sqrt", ay)));
    LLVMValueRef eta1 = cx_mul(
        x,
        cx_fn2(x, "copysign", cx_add(x, halfpi, cx_fn(x, "atan", cx_mul(x, ay, cx_k(x, 0.5)))), y),
        cx_k(x, 0.5));
    LLVMValueRef yzero = cx_cmp(x, LLVMRealOEQ, y, zero);
    xi1 = cx_sel(x, yzero, inf, xi1);
    eta1 = cx_sel(x, yzero, y, eta1);
    xi = cx_sel(x, xone, xi1, xi);
    eta = cx_sel(x, xone, eta1, eta);
    *re = cx_sel(x, far, far_r, cx_mul(x, beta, xi));
    *im = cx_sel(x, far, far_i, cx_mul(x, beta, eta));
}

/* fn (a complex_math name jit_infer allowed) of z. */
static LLVMValueRef cx_math(cx *x, const char *fn, LLVMValueRef z) {
    LLVMValueRef a = cx_re(x, z), b = cx_im(x, z), re, im;
    if (!strcmp(fn, "exp")) {
        cx_exp_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "log")) {
        cx_log_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "sqrt")) {
        cx_sqrt_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "sin") || !strcmp(fn, "cos")) {
        cx_sincos_parts(x, fn[0] == 'c', a, b, &re, &im);
    } else if (!strcmp(fn, "tanh")) {
        cx_tanh_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "expm1")) { /* NumPy's nc_expm1 */
        LLVMValueRef h = cx_fn(x, "sin", cx_mul(x, b, cx_k(x, 0.5)));
        re = cx_sub(x, cx_mul(x, cx_fn(x, "expm1", a), cx_fn(x, "cos", b)),
                    cx_mul(x, cx_mul(x, cx_k(x, 2), h), h));
        im = cx_mul(x, cx_fn(x, "exp", a), cx_fn(x, "sin", b));
    } else if (!strcmp(fn, "log2") || !strcmp(fn, "log10")) { /* NumPy's: log times log2(e) */
        LLVMValueRef k = cx_k(x, fn[3] == '2' ? 1.4426950408889634 : 0.4342944819032518);
        cx_log_parts(x, a, b, &re, &im);
        re = cx_mul(x, re, k);
        im = cx_mul(x, im, k);
    } else if (!strcmp(fn, "asin") || !strcmp(fn, "acos")) {
        cx_asin_acos_parts(x, fn[1] == 'c', a, b, &re, &im);
    } else if (!strcmp(fn, "atanh")) {
        cx_atanh_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "sinh") || !strcmp(fn, "cosh") || !strcmp(fn, "tan") ||
               !strcmp(fn, "asinh") || !strcmp(fn, "atan")) {
        /* C99's identities through i z = -b + ai: sinh z = -i sin(iz), tan z =
         * -i tanh(iz), asinh z = -i asin(iz), atan z = -i atanh(iz); and cosh z =
         * cos(-iz), b - ai (glibc's ccos(w) is ccosh(iw), and ccosh is not even
         * in its NaNs' zeros) */
        LLVMValueRef ia = LLVMBuildFNeg(x->b, b, ""), r, i;
        if (fn[0] == 'c')
            cx_sincos_parts(x, true, b, LLVMBuildFNeg(x->b, a, ""), &r, &i);
        else if (fn[0] == 's')
            cx_sincos_parts(x, false, ia, a, &r, &i);
        else if (!strcmp(fn, "tan"))
            cx_tanh_parts(x, ia, a, &r, &i);
        else if (!strcmp(fn, "asinh"))
            cx_asin_acos_parts(x, false, ia, a, &r, &i);
        else
            cx_atanh_parts(x, ia, a, &r, &i);
        if (fn[0] == 'c') {
            re = r, im = i;
        } else {
            re = i, im = LLVMBuildFNeg(x->b, r, "");
        }
    } else if (!strcmp(fn, "acosh")) { /* acosh z = +-i acos z: real part >= 0, b's sign */
        LLVMValueRef r, i;
        cx_asin_acos_parts(x, true, a, b, &r, &i);
        re = cx_fn(x, "fabs", i);
        im = cx_fn2(x, "copysign", r, b);
    } else if (!strcmp(fn, "rint")) { /* numpy.rint: both parts */
        re = cx_fn(x, "rint", a);
        im = cx_fn(x, "rint", b);
    } else { /* log1p: NumPy's nc_log1p */
        LLVMValueRef a1 = cx_add(x, a, cx_k(x, 1));
        re = cx_fn(x, "log", cx_fn2(x, "hypot", a1, b));
        im = cx_fn2(x, "atan2", b, a1);
    }
    return cx_make(x, re, im);
}

/* p ** q as NumPy's npy_cpow: an integer exponent of magnitude below 100 by
 * squaring (1/p**-n for negative n), else exp(q log p), with 0 ** q as NumPy
 * has it (0 for a positive real q, NaN otherwise). A constant exponent
 * unrolls its own squarings; a runtime one (ol.pow(x, 2) passes 2 as an
 * argument) takes all seven, selecting NumPy's products per bit, since
 * exp(2 log p) is a few ulps from p * p where NumPy gives p * p. */
static LLVMValueRef cx_int_pow(cx *x, LLVMValueRef p, LLVMValueRef qr) {
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(qr));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMValueRef n = LLVMBuildFPToSI(x->b, cx_fn(x, "fabs", qr), i32, "");
    LLVMValueRef sq = cx_times(x, p, p);
    /* NumPy's own n = 1, 2, 3 skip the leading 1 * p (which is NaN where p is infinite) */
    LLVMValueRef acc = cx_make(x, cx_k(x, 1), cx_k(x, 0)), pw = p;
    for (int bit = 1; bit < 128; bit <<= 1) {
        LLVMValueRef set =
            LLVMBuildICmp(x->b, LLVMIntNE, LLVMBuildAnd(x->b, n, LLVMConstInt(i32, bit, 0), ""),
                          LLVMConstInt(i32, 0, 0), "");
        acc = cx_sel(x, set, cx_times(x, acc, pw), acc);
        if (bit < 64) pw = cx_times(x, pw, pw);
    }
    LLVMValueRef r = acc;
    LLVMValueRef small[3] = {p, sq, cx_times(x, p, sq)};
    for (int k = 3; k >= 1; k--)
        r = cx_sel(x, LLVMBuildICmp(x->b, LLVMIntEQ, n, LLVMConstInt(i32, k, 0), ""), small[k - 1],
                   r);
    LLVMValueRef one = cx_make(x, cx_k(x, 1), cx_k(x, 0));
    return cx_sel(x, cx_cmp(x, LLVMRealOLT, qr, cx_k(x, 0)), cx_quot(x, one, r), r);
}

static LLVMValueRef cx_pow(cx *x, LLVMValueRef p, LLVMValueRef q, const jit_node *qn) {
    LLVMValueRef one = cx_make(x, cx_k(x, 1), cx_k(x, 0));
    if (qn->kind == N_CONST && qn->type.kind == JT_WEAK_INT && qn->v.i > -100 && qn->v.i < 100) {
        int64_t n = qn->v.i < 0 ? -qn->v.i : qn->v.i;
        LLVMValueRef acc = one, sq = p;
        bool first = true;
        for (; n; n >>= 1) {
            if (n & 1) acc = first ? sq : cx_times(x, acc, sq), first = false;
            if (n > 1) sq = cx_times(x, sq, sq);
        }
        return qn->v.i < 0 ? cx_quot(x, one, acc) : acc;
    }
    LLVMValueRef lr, li, er, ei, mr, mi, zero = cx_k(x, 0);
    cx_log_parts(x, cx_re(x, p), cx_im(x, p), &lr, &li);
    cx_mul_parts(x, cx_re(x, q), cx_im(x, q), lr, li, &mr, &mi);
    cx_exp_parts(x, mr, mi, &er, &ei);
    LLVMValueRef qr = cx_re(x, q), qi = cx_im(x, q);
    /* an integral real exponent below 100 in magnitude; any other qr is
     * replaced by 0 before the conversion (fptosi of NaN is poison) */
    LLVMValueRef integral = cx_and(x,
                                   cx_and(x, cx_cmp(x, LLVMRealOEQ, qi, zero),
                                          cx_cmp(x, LLVMRealOEQ, qr, cx_fn(x, "rint", qr))),
                                   cx_cmp(x, LLVMRealOLT, cx_fn(x, "fabs", qr), cx_k(x, 100)));
    LLVMValueRef ipow = cx_int_pow(x, p, cx_sel(x, integral, qr, zero));
    er = cx_sel(x, integral, cx_re(x, ipow), er);
    ei = cx_sel(x, integral, cx_im(x, ipow), ei);
    LLVMValueRef pzero = cx_and(x, cx_cmp(x, LLVMRealOEQ, cx_re(x, p), zero),
                                cx_cmp(x, LLVMRealOEQ, cx_im(x, p), zero));
    LLVMValueRef qpos =
        cx_and(x, cx_cmp(x, LLVMRealOGT, qr, zero), cx_cmp(x, LLVMRealOEQ, qi, zero));
    LLVMValueRef nan = cx_k(x, 0.0 / 0.0);
    er = cx_sel(x, pzero, cx_sel(x, qpos, zero, nan), er);
    ei = cx_sel(x, pzero, cx_sel(x, qpos, zero, nan), ei);
    LLVMValueRef qzero =
        cx_and(x, cx_cmp(x, LLVMRealOEQ, qr, zero), cx_cmp(x, LLVMRealOEQ, qi, zero));
    return cx_sel(x, qzero, one, cx_make(x, er, ei));
}

/* op on two complex values of dtype d (jit_infer allowed only these). */
LLVMValueRef jit_cg_cx_arith(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q,
                             const jit_node *qn) {
    cx x = cx_of(c, d);
    switch (op) {
    case OP_ADD: return LLVMBuildFAdd(x.b, p, q, "");
    case OP_SUB: return LLVMBuildFSub(x.b, p, q, "");
    case OP_MUL: return cx_times(&x, p, q);
    case OP_DIV: return cx_quot(&x, p, q);
    default: return cx_pow(&x, p, q, qn);
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
        return cx_math(&y, bt->fn, jit_cg_conv(c, a[0], t0, rt));
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
