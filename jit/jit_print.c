/* jit_print: how print() in a kernel shows bools and floats, built in LLVM IR.
 *
 * Bools are a %s into a table of words. Floats are the shortest digits that
 * read back as the same value, laid out as repr() does for float64 and as
 * NumPy's str() for float32, in six printf conversions "%s%.0ld%s%.0ld%s%.0ld"
 * (a %.0 conversion of 0 prints nothing, which drops the parts a form lacks).
 * The algorithm and the layout: docs/float-printing.md
 *
 * Called by jit_codegen.c's print() (jit_codegen.h); builds through
 * jit_target.c. */
#include <stdint.h>
#include <string.h>

#include "jit_codegen.h"

enum {
    PW_EMPTY,
    PW_MINUS,
    PW_ZERO,
    PW_MZERO,
    PW_INF,
    PW_MINF,
    PW_NAN,
    PW_EP,
    PW_EP0,
    PW_EM,
    PW_EM0,
    PW_TRUE,
    PW_FALSE,
    PW_NWORDS
};
static const char *const print_words[PW_NWORDS] = {"",   "-",   "0",  "-0",  "inf",  "-inf", "nan",
                                                   "e+", "e+0", "e-", "e-0", "True", "False"};
/* After the words, the point slots: slot s is "." and s-1 zeros (slot 0 is ""). */
enum { POINT_SLOTS = 19, POINT_SIZE = 20 };

static int64_t word_offset(int w) {
    int64_t off = 1; /* nothing points at byte 0 (see jit_target_const_bytes) */
    for (int i = 0; i < w; i++) off += (int64_t)strlen(print_words[i]) + 1;
    return off;
}

static LLVMValueRef words_table(jit_tgt *t) {
    if (t->print_words) return t->print_words;
    char buf[512] = {0};
    size_t n = (size_t)word_offset(PW_NWORDS);
    for (int i = 0; i < PW_NWORDS; i++)
        memcpy(buf + word_offset(i), print_words[i], strlen(print_words[i]) + 1);
    for (int s = 1; s < POINT_SLOTS; s++) {
        char *slot = buf + n + (size_t)s * POINT_SIZE;
        slot[0] = '.';
        memset(slot + 1, '0', (size_t)s - 1);
    }
    n += POINT_SLOTS * POINT_SIZE;
    return t->print_words = jit_target_const_bytes(t, "ofl_print_words", buf, n);
}

/* The float formatter is built with these: r->b is its builder. */
typedef struct {
    jit_tgt *t;
    LLVMTypeRef i32, i64, f64;
    LLVMBuilderRef b;
    LLVMValueRef fn;
} rb;
typedef struct {
    LLVMValueRef hi, lo;
} dd; /* a double-double: hi + lo, |lo| <= ulp(hi)/2 */

static LLVMValueRef ki(rb *r, long long v) {
    return LLVMConstInt(r->i64, (unsigned long long)v, 1);
}
static LLVMValueRef ki32(rb *r, int v) {
    return LLVMConstInt(r->i32, (unsigned long long)(long long)v, 1);
}
static LLVMValueRef kf(rb *r, double v) { return LLVMConstReal(r->f64, v); }
static LLVMValueRef word(rb *r, int w) { return ki(r, word_offset(w)); }
static LLVMValueRef r_sel(rb *r, LLVMValueRef c, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildSelect(r->b, c, x, y, "");
}
static LLVMValueRef r_add(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildAdd(r->b, x, y, "");
}
static LLVMValueRef r_sub(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildSub(r->b, x, y, "");
}
static LLVMValueRef r_mul(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildMul(r->b, x, y, "");
}
static LLVMValueRef r_udiv(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildUDiv(r->b, x, y, "");
}
static LLVMValueRef r_urem(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildURem(r->b, x, y, "");
}
static LLVMValueRef r_and(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildAnd(r->b, x, y, "");
}
static LLVMValueRef r_or(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildOr(r->b, x, y, "");
}
static LLVMValueRef r_not(rb *r, LLVMValueRef x) { return LLVMBuildNot(r->b, x, ""); }
static LLVMValueRef r_icmp(rb *r, LLVMIntPredicate p, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildICmp(r->b, p, x, y, "");
}
static LLVMValueRef r_fadd(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildFAdd(r->b, x, y, "");
}
static LLVMValueRef r_fsub(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildFSub(r->b, x, y, "");
}
static LLVMValueRef r_fmul(rb *r, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildFMul(r->b, x, y, "");
}
static LLVMValueRef r_fcmp(rb *r, LLVMRealPredicate p, LLVMValueRef x, LLVMValueRef y) {
    return LLVMBuildFCmp(r->b, p, x, y, "");
}
static LLVMValueRef r_fma(rb *r, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z) {
    LLVMValueRef args[3] = {x, y, z};
    return jit_target_math(r->t, "fma", true, args, 3);
}
static LLVMValueRef r_rint(rb *r, LLVMValueRef x) {
    return jit_target_math(r->t, "rint", true, &x, 1);
}
static LLVMValueRef bit_of(rb *r, LLVMValueRef v, int i) { /* bit i of v, as an i1 */
    return LLVMBuildTrunc(r->b,
                          LLVMBuildLShr(r->b, v, LLVMConstInt(LLVMTypeOf(v), (unsigned)i, 0), ""),
                          LLVMInt1TypeInContext(r->t->ctx), "");
}

/* a + e with |e| small against a, renormalised */
static dd quick_two_sum(rb *r, LLVMValueRef a, LLVMValueRef e) {
    LLVMValueRef s = r_fadd(r, a, e);
    return (dd){s, r_fsub(r, e, r_fsub(r, s, a))};
}
/* a + c exactly (Knuth) */
static dd two_sum(rb *r, LLVMValueRef a, LLVMValueRef c) {
    LLVMValueRef s = r_fadd(r, a, c), bb = r_fsub(r, s, a);
    return (dd){s, r_fadd(r, r_fsub(r, a, r_fsub(r, s, bb)), r_fsub(r, c, bb))};
}
static dd dd_mul(rb *r, dd x, dd y) {
    LLVMValueRef p = r_fmul(r, x.hi, y.hi);
    LLVMValueRef e = r_fma(r, x.hi, y.hi, LLVMBuildFNeg(r->b, p, "")); /* exactly x.hi * y.hi - p */
    return quick_two_sum(r, p,
                         r_fadd(r, e, r_fadd(r, r_fmul(r, x.hi, y.lo), r_fmul(r, x.lo, y.hi))));
}
static dd dd_mul_d(rb *r, dd x, LLVMValueRef d) {
    LLVMValueRef p = r_fmul(r, x.hi, d);
    LLVMValueRef e = r_fma(r, x.hi, d, LLVMBuildFNeg(r->b, p, ""));
    return quick_two_sum(r, p, r_fadd(r, e, r_fmul(r, x.lo, d)));
}

/* s * 10^k (|k| < 512) as a double-double, by the binary digits of |k|. Every
 * factor is on the same side of 1, so no partial product over- or underflows
 * where the result does not; for 0 <= k <= 22 and s a power of two it is
 * exact. Each step selects on the last one: independent terms would be
 * vectorised into a reduction, which the SPIR-V translator rejects. */
static dd pow10_dd(rb *r, LLVMValueRef k, LLVMValueRef s) {
    /* 10^(2^i) and 10^-(2^i), hi and lo */
    static const double up[9][2] = {{0x1.4p+3, 0},
                                    {0x1.9p+6, 0},
                                    {0x1.388p+13, 0},
                                    {0x1.7d784p+26, 0},
                                    {0x1.1c37937e08p+53, 0},
                                    {0x1.3b8b5b5056e17p+106, -0x1.3107fp+52},
                                    {0x1.84f03e93ff9f5p+212, -0x1.2ac340948e389p+157},
                                    {0x1.27748f9301d32p+425, -0x1.901cc86649e4ap+371},
                                    {0x1.54fdd7f73bf3cp+850, -0x1.7222446fe467p+795}};
    static const double down[9][2] = {{0x1.999999999999ap-4, -0x1.999999999999ap-58},
                                      {0x1.47ae147ae147bp-7, -0x1.eb851eb851eb8p-63},
                                      {0x1.a36e2eb1c432dp-14, -0x1.6a161e4f765fep-68},
                                      {0x1.5798ee2308c3ap-27, -0x1.03023df2d4c94p-82},
                                      {0x1.cd2b297d889bcp-54, 0x1.5b4c2ebe68799p-109},
                                      {0x1.9f623d5a8a733p-107, -0x1.a2cc10f3892d4p-161},
                                      {0x1.50ffd44f4a73dp-213, 0x1.a53f2398d747bp-268},
                                      {0x1.bba08cf8c979dp-426, -0x1.afa9c1a60497dp-480},
                                      {0x1.8062864ac6f43p-851, 0x1.39fa911155ffp-906}};
    LLVMValueRef neg = r_icmp(r, LLVMIntSLT, k, ki32(r, 0));
    LLVMValueRef mag = r_sel(r, neg, LLVMBuildNeg(r->b, k, ""), k);
    dd t = {s, kf(r, 0)};
    for (int i = 0; i < 9; i++) {
        dd f = {r_sel(r, neg, kf(r, down[i][0]), kf(r, up[i][0])),
                r_sel(r, neg, kf(r, down[i][1]), kf(r, up[i][1]))};
        dd tf = dd_mul(r, t, f);
        LLVMValueRef bit = bit_of(r, mag, i);
        t = (dd){r_sel(r, bit, tf.hi, t.hi), r_sel(r, bit, tf.lo, t.lo)};
    }
    return t;
}

/* 10^w (0 <= w <= 18), by w's binary digits (a table would be a global of
 * LLVM's in the private space, which SPIR-V cannot hold). */
static LLVMValueRef ipow10(rb *r, LLVMValueRef w) {
    static const long long sq[5] = {10, 100, 10000, 100000000, 10000000000000000LL};
    LLVMValueRef v = ki(r, 1);
    for (int i = 0; i < 5; i++) v = r_sel(r, bit_of(r, w, i), r_mul(r, v, ki(r, sq[i])), v);
    return v;
}

/* The number of decimal digits of 0 < v < 10^18, in a loop: a sum of
 * compares would be vectorised into a bool-vector bitcast SPIR-V cannot hold. */
static LLVMValueRef ndigits(rb *r, LLVMValueRef v) {
    LLVMBuilderRef b = r->b;
    LLVMContextRef ctx = r->t->ctx;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b),
                      loop = LLVMAppendBasicBlockInContext(ctx, r->fn, "ndigits"),
                      done = LLVMAppendBasicBlockInContext(ctx, r->fn, "ndigits.done");
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef n = LLVMBuildPhi(b, r->i64, "n"), p = LLVMBuildPhi(b, r->i64, "p10");
    LLVMValueRef in_n[2] = {ki(r, 1), r_add(r, n, ki(r, 1))},
                 in_p[2] = {ki(r, 10), r_mul(r, p, ki(r, 10))};
    LLVMBuildCondBr(b, r_and(r, r_icmp(r, LLVMIntUGE, v, p), r_icmp(r, LLVMIntULT, n, ki(r, 18))),
                    loop, done);
    LLVMBasicBlockRef from[2] = {pre, loop};
    LLVMAddIncoming(n, in_n, from, 2);
    LLVMAddIncoming(p, in_p, from, 2);
    LLVMPositionBuilderAtEnd(b, done);
    return n;
}

/* x = m * 2^e2 (m an integer); the ends of the interval of reals that read
 * back as x are vu * 2^eu above it and vd * 2^ed below (odd numerators). */
typedef struct {
    LLVMValueRef even, vu, eu, vd, ed;
} ends;

/* From x's bits (as i64) in a format of mant_bits and bias. */
static ends interval_ends(rb *r, LLVMValueRef bits, int mant_bits, int bias) {
    LLVMValueRef expf = LLVMBuildLShr(r->b, bits, ki(r, mant_bits), "");
    LLVMValueRef frac = r_and(r, bits, ki(r, (1LL << mant_bits) - 1));
    LLVMValueRef normal = r_icmp(r, LLVMIntNE, expf, ki(r, 0));
    LLVMValueRef m = r_sel(r, normal, r_or(r, frac, ki(r, 1LL << mant_bits)), frac);
    LLVMValueRef e2 = r_sub(r, r_sel(r, normal, expf, ki(r, 1)), ki(r, bias + mant_bits));
    /* a power of two above the smallest normal has its lower neighbour at half the distance */
    LLVMValueRef pow2 =
        r_and(r, r_icmp(r, LLVMIntEQ, frac, ki(r, 0)), r_icmp(r, LLVMIntUGT, expf, ki(r, 1)));
    LLVMValueRef m2 = LLVMBuildShl(r->b, m, ki(r, 1), "");
    return (ends){.even = r_icmp(r, LLVMIntEQ, r_and(r, m, ki(r, 1)), ki(r, 0)),
                  .vu = r_add(r, m2, ki(r, 1)),
                  .eu = r_sub(r, e2, ki(r, 1)),
                  .vd = r_sel(r, pow2, r_sub(r, LLVMBuildShl(r->b, m, ki(r, 2), ""), ki(r, 1)),
                              r_sub(r, m2, ki(r, 1))),
                  .ed = r_sub(r, e2, r_sel(r, pow2, ki(r, 2), ki(r, 1)))};
}

/* Whether the decimal Mc * 10^q, at dc = Mc - S from S = x * 10^-q, reads
 * back as x: strictly inside the interval (half-gaps Hu above, Hd below, in
 * S's scale), or exactly on an end when x is even (round half to even: 1e+23
 * lies half a gap from its double, and Python prints it so). A distance
 * within 2^-36 of the end is decided exactly, in integers: the end v * 2^ev
 * equals Mc * 5^q * 2^q, which only an integer decimal (q >= 0) can. */
static LLVMValueRef reads_back(rb *r, LLVMValueRef Mc, LLVMValueRef dc, LLVMValueRef Hu,
                               LLVMValueRef Hd, LLVMValueRef q, const ends *x) {
    LLVMValueRef above = r_fcmp(r, LLVMRealOGE, dc, kf(r, 0));
    LLVMValueRef dist = r_sel(r, above, dc, LLVMBuildFNeg(r->b, dc, "")),
                 H = r_sel(r, above, Hu, Hd);
    LLVMValueRef inside = r_fcmp(r, LLVMRealOLT, dist, r_fmul(r, H, kf(r, 1 - 0x1p-36)));
    LLVMValueRef near = r_fcmp(r, LLVMRealOLE, dist, r_fmul(r, H, kf(r, 1 + 0x1p-36)));
    LLVMValueRef v = r_sel(r, above, x->vu, x->vd), ev = r_sel(r, above, x->eu, x->ed);
    static const long long p5[5] = {5, 25, 625, 390625,
                                    152587890625LL}; /* 5^(2^i); v < 2^55 < 5^24 */
    LLVMValueRef f5 = ki(r, 1);
    for (int i = 0; i < 5; i++) f5 = r_sel(r, bit_of(r, q, i), r_mul(r, f5, ki(r, p5[i])), f5);
    LLVMValueRef t = r_sub(r, ev, q),
                 ts = r_sel(r, r_icmp(r, LLVMIntULE, t, ki(r, 62)), t, ki(r, 0));
    LLVMValueRef odd = LLVMBuildLShr(r->b, Mc, ts, "");
    LLVMValueRef exact =
        r_and(r, r_and(r, r_icmp(r, LLVMIntSGE, q, ki(r, 0)), r_icmp(r, LLVMIntSLE, q, ki(r, 23))),
              r_icmp(r, LLVMIntULE, t, ki(r, 62)));
    exact = r_and(r, exact, r_icmp(r, LLVMIntEQ, LLVMBuildShl(r->b, odd, ts, ""), Mc));
    exact = r_and(r, exact, r_icmp(r, LLVMIntEQ, r_urem(r, v, f5), ki(r, 0)));
    exact = r_and(r, exact, r_icmp(r, LLVMIntEQ, r_udiv(r, v, f5), odd));
    return r_or(r, inside, r_and(r, r_and(r, near, x->even), exact));
}

/* The formatter {i64 x 6} ofl_repr_f64/f32(double x): the six printf
 * arguments of x (the words as offsets into the words table). f32: x holds a
 * float32, whose digits and interval are float32's. Digits: the first p at
 * which the nearest p-digit decimal, or its other neighbour, reads back as x
 * (17, 9 for float32, always do); docs/float-printing.md. */
static LLVMValueRef repr_fn(jit_tgt *t, bool f32) {
    if (t->repr[f32]) return t->repr[f32];
    LLVMTypeRef i64 = LLVMInt64TypeInContext(t->ctx), i32 = LLVMInt32TypeInContext(t->ctx),
                f64 = LLVMDoubleTypeInContext(t->ctx);
    LLVMTypeRef fields[6] = {i64, i64, i64, i64, i64, i64};
    LLVMTypeRef st = LLVMStructTypeInContext(t->ctx, fields, 6, 0);
    LLVMTypeRef fty = LLVMFunctionType(st, &f64, 1, 0);
    LLVMValueRef fn = LLVMAddFunction(t->mod, f32 ? "ofl_repr_f32" : "ofl_repr_f64", fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    jit_target_mark_function(t, fn);
    t->repr[f32] = fn;
    LLVMBuilderRef saved = t->b;
    rb R = {.t = t,
            .i32 = i32,
            .i64 = i64,
            .f64 = f64,
            .b = LLVMCreateBuilderInContext(t->ctx),
            .fn = fn},
       *r = &R;
    LLVMBuilderRef b = R.b;
    t->b = b; /* jit_target_math builds with it */
    LLVMContextRef ctx = t->ctx;
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry"),
                      finite = LLVMAppendBasicBlockInContext(ctx, fn, "finite"),
                      loop = LLVMAppendBasicBlockInContext(ctx, fn, "digits"),
                      next = LLVMAppendBasicBlockInContext(ctx, fn, "digits.more"),
                      strip = LLVMAppendBasicBlockInContext(ctx, fn, "strip"),
                      strip_more = LLVMAppendBasicBlockInContext(ctx, fn, "strip.more"),
                      layout = LLVMAppendBasicBlockInContext(ctx, fn, "layout"),
                      done = LLVMAppendBasicBlockInContext(ctx, fn, "done");

    /* nan, inf and zero: a prefix word, and ".0" after a zero */
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef x = LLVMGetParam(fn, 0), bits = LLVMBuildBitCast(b, x, i64, "");
    LLVMValueRef sign = r_icmp(r, LLVMIntSLT, bits, ki(r, 0));
    LLVMValueRef ax = LLVMBuildBitCast(b, r_and(r, bits, ki(r, INT64_MAX)), f64, "ax");
    LLVMValueRef isnan = r_fcmp(r, LLVMRealUNO, x, x),
                 isinf = r_fcmp(r, LLVMRealOEQ, ax, kf(r, 1.0 / 0.0));
    LLVMValueRef iszero = r_fcmp(r, LLVMRealOEQ, ax, kf(r, 0));
    LLVMValueRef sp_pfx = r_sel(r, isinf, r_sel(r, sign, word(r, PW_MINF), word(r, PW_INF)),
                                r_sel(r, sign, word(r, PW_MZERO), word(r, PW_ZERO)));
    sp_pfx = r_sel(r, isnan, word(r, PW_NAN), sp_pfx);
    LLVMValueRef sp_point = r_sel(r, iszero, ki(r, 2), ki(r, 0));
    LLVMBuildCondBr(b, r_or(r, isnan, r_or(r, isinf, iszero)), done, finite);

    /* The gaps to x's neighbours in its own type (at the largest value, the
     * one above is taken equal to the one below), and its exact form. */
    LLVMPositionBuilderAtEnd(b, finite);
    LLVMValueRef up, down;
    ends xe;
    if (f32) {
        LLVMTypeRef f32t = LLVMFloatTypeInContext(ctx);
        LLVMValueRef fb = LLVMBuildBitCast(b, LLVMBuildFPTrunc(b, ax, f32t, ""), i32, "");
        xe = interval_ends(r, LLVMBuildZExt(b, fb, i64, ""), 23, 127);
        LLVMValueRef nx =
            LLVMBuildFPExt(b, LLVMBuildBitCast(b, r_add(r, fb, ki32(r, 1)), f32t, ""), f64, "");
        LLVMValueRef pv =
            LLVMBuildFPExt(b, LLVMBuildBitCast(b, r_sub(r, fb, ki32(r, 1)), f32t, ""), f64, "");
        up = r_sel(r, r_icmp(r, LLVMIntEQ, fb, ki32(r, 0x7f7fffff)), r_fsub(r, ax, pv),
                   r_fsub(r, nx, ax));
        down = r_fsub(r, ax, pv);
    } else {
        LLVMValueRef ab = LLVMBuildBitCast(b, ax, i64, "");
        xe = interval_ends(r, ab, 52, 1023);
        LLVMValueRef nx = LLVMBuildBitCast(b, r_add(r, ab, ki(r, 1)), f64, "");
        LLVMValueRef pv = LLVMBuildBitCast(b, r_sub(r, ab, ki(r, 1)), f64, "");
        up = r_sel(r, r_icmp(r, LLVMIntEQ, ab, ki(r, 0x7fefffffffffffffLL)), r_fsub(r, ax, pv),
                   r_fsub(r, nx, ax));
        down = r_fsub(r, ax, pv);
    }
    /* x scaled by 2^sxe so that x and the powers of ten stay normal in double-double */
    LLVMValueRef tiny = r_fcmp(r, LLVMRealOLT, ax, kf(r, 0x1p-500)),
                 huge = r_fcmp(r, LLVMRealOGT, ax, kf(r, 0x1p+500));
    LLVMValueRef sx = r_sel(r, tiny, kf(r, 0x1p+512), r_sel(r, huge, kf(r, 0x1p-512), kf(r, 1)));
    LLVMValueRef s0 = r_sel(r, tiny, kf(r, 0x1p-512), r_sel(r, huge, kf(r, 0x1p+512), kf(r, 1)));
    LLVMValueRef sxe = r_sel(r, tiny, ki32(r, 512), r_sel(r, huge, ki32(r, -512), ki32(r, 0)));
    LLVMValueRef axp = r_fmul(r, ax, sx);
    LLVMValueRef hu = r_fmul(r, r_fmul(r, up, sx), kf(r, 0.5)),
                 hd = r_fmul(r, r_fmul(r, down, sx), kf(r, 0.5));
    /* x's decimal exponent e: floor(log10(2^e2)) = e2 * 78913 >> 18 for
     * |e2| < 2^11, and one more when x * 10^-e >= 10 */
    LLVMValueRef e2 = LLVMBuildTrunc(
        b, LLVMBuildLShr(b, LLVMBuildBitCast(b, axp, i64, ""), ki(r, 52), ""), i32, "");
    e2 = r_sub(r, r_sub(r, e2, ki32(r, 1023)), sxe);
    LLVMValueRef e = LLVMBuildAShr(b, r_mul(r, e2, ki32(r, 78913)), ki32(r, 18), "");
    dd s1 = dd_mul_d(r, pow10_dd(r, LLVMBuildNeg(b, e, ""), s0), axp);
    LLVMValueRef ge = r_or(r, r_fcmp(r, LLVMRealOGT, s1.hi, kf(r, 10)),
                           r_and(r, r_fcmp(r, LLVMRealOEQ, s1.hi, kf(r, 10)),
                                 r_fcmp(r, LLVMRealOGE, s1.lo, kf(r, 0))));
    e = r_add(r, e, LLVMBuildZExt(b, ge, i32, ""));
    LLVMBuildBr(b, loop);

    /* p digits: S = x * 10^-q, q = e-p+1, lies in [10^(p-1), 10^p); exact
     * when 10^-q is an exact double, so that a tie between two decimals
     * (S = n + 1/2) goes to the even digit, as in Python. M = rint(S). */
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef p = LLVMBuildPhi(b, i32, "p");
    LLVMValueRef q32 = r_add(r, r_sub(r, e, p), ki32(r, 1)), q = LLVMBuildSExt(b, q32, i64, "q");
    dd T = pow10_dd(r, LLVMBuildNeg(b, q32, ""), s0), S = dd_mul_d(r, T, axp);
    LLVMValueRef rr = r_rint(r, S.hi);
    dd f = two_sum(r, r_fsub(r, S.hi, rr), S.lo); /* S - rr, exactly */
    LLVMValueRef rf = r_rint(r, f.hi);
    LLVMValueRef d = r_fsub(r, r_fsub(r, rf, f.hi), f.lo); /* M - S */
    LLVMValueRef M = r_add(r, LLVMBuildFPToSI(b, rr, i64, ""), LLVMBuildFPToSI(b, rf, i64, ""));
    LLVMValueRef Hu = r_fmul(r, T.hi, hu), Hd = r_fmul(r, T.hi, hd);
    LLVMValueRef okM = reads_back(r, M, d, Hu, Hd, q, &xe);
    /* else the other neighbour: M+1 when M is below S, M-1 when above */
    LLVMValueRef above = r_fcmp(r, LLVMRealOGE, d, kf(r, 0));
    LLVMValueRef N = r_sel(r, above, r_sub(r, M, ki(r, 1)), r_add(r, M, ki(r, 1)));
    LLVMValueRef dN = r_sel(r, above, r_fsub(r, d, kf(r, 1)), r_fadd(r, d, kf(r, 1)));
    LLVMValueRef okN = reads_back(r, N, dN, Hu, Hd, q, &xe);
    M = r_sel(r, r_and(r, r_not(r, okM), okN), N, M);
    LLVMValueRef last = r_icmp(r, LLVMIntEQ, p, ki32(r, f32 ? 9 : 17));
    LLVMBuildCondBr(b, r_or(r, r_or(r, okM, okN), last), strip, next);
    LLVMPositionBuilderAtEnd(b, next);
    LLVMValueRef in_p[2] = {ki32(r, 1), r_add(r, p, ki32(r, 1))};
    LLVMBasicBlockRef from[2] = {finite, next};
    LLVMBuildBr(b, loop);
    LLVMAddIncoming(p, in_p, from, 2);

    /* x ~ M * 10^q without M's trailing zeros (M = 10^p after rounding up) */
    LLVMPositionBuilderAtEnd(b, strip);
    LLVMValueRef sm = LLVMBuildPhi(b, i64, "m"), sq = LLVMBuildPhi(b, i64, "q");
    LLVMBuildCondBr(b, r_icmp(r, LLVMIntEQ, r_urem(r, sm, ki(r, 10)), ki(r, 0)), strip_more,
                    layout);
    LLVMPositionBuilderAtEnd(b, strip_more);
    LLVMValueRef in_m[2] = {M, r_udiv(r, sm, ki(r, 10))}, in_q[2] = {q, r_add(r, sq, ki(r, 1))};
    LLVMBasicBlockRef from_s[2] = {loop, strip_more};
    LLVMBuildBr(b, strip);
    LLVMAddIncoming(sm, in_m, from_s, 2);
    LLVMAddIncoming(sq, in_q, from_s, 2);

    /* The six parts [prefix][A][point slot][B][exponent word][C] of each form. */
    LLVMPositionBuilderAtEnd(b, layout);
    LLVMValueRef zero = ki(r, 0), one = ki(r, 1), n = ndigits(r, sm);
    LLVMValueRef E = r_sub(r, r_add(r, sq, n), one); /* x ~ d.ddd * 10^E */
    LLVMValueRef minus = r_sel(r, sign, word(r, PW_MINUS), word(r, PW_EMPTY));
    /* fixed for 1e-4 <= |x| < 1e16, by the digits (Python's repr); for
     * float32 for 1e-4 <= |x| < 1e6, by the value (NumPy's str) */
    LLVMValueRef fixed =
        f32 ? r_and(r, r_fcmp(r, LLVMRealOGE, ax, kf(r, 1e-4)),
                    r_fcmp(r, LLVMRealOLT, ax, kf(r, 1e6)))
            : r_and(r, r_icmp(r, LLVMIntSGE, E, ki(r, -4)), r_icmp(r, LLVMIntSLT, E, ki(r, 16)));
    LLVMValueRef big = r_icmp(r, LLVMIntSGE, E, zero);
    /* fixed, |x| >= 1: int digits, then w fraction digits or ".0" */
    LLVMValueRef w = r_sub(r, r_sub(r, n, E), one), whole = r_icmp(r, LLVMIntSLE, w, zero);
    LLVMValueRef pw = ipow10(r, r_sel(r, whole, LLVMBuildNeg(b, w, ""), w));
    LLVMValueRef big_a = r_sel(r, whole, r_mul(r, sm, pw), r_udiv(r, sm, pw));
    LLVMValueRef big_b = r_sel(r, whole, zero, r_urem(r, sm, pw));
    LLVMValueRef big_point =
        r_sel(r, whole, ki(r, 2), r_add(r, one, r_sub(r, w, ndigits(r, big_b))));
    /* fixed, |x| < 1: "0", "." and -E-1 zeros, the digits */
    LLVMValueRef small_pfx = r_sel(r, sign, word(r, PW_MZERO), word(r, PW_ZERO));
    LLVMValueRef small_point = LLVMBuildNeg(b, E, "");
    /* scientific: a digit, the others after a point, then the exponent */
    LLVMValueRef pe = ipow10(r, r_sub(r, n, one));
    LLVMValueRef sci_a = r_udiv(r, sm, pe), sci_b = r_urem(r, sm, pe),
                 more = r_icmp(r, LLVMIntSGT, n, one);
    LLVMValueRef sci_point = r_sel(r, more, r_sub(r, n, ndigits(r, sci_b)), zero);
    LLVMValueRef eneg = r_icmp(r, LLVMIntSLT, E, zero),
                 eabs = r_sel(r, eneg, LLVMBuildNeg(b, E, ""), E);
    LLVMValueRef one_digit = r_icmp(r, LLVMIntSLT, eabs, ki(r, 10));
    LLVMValueRef eword = r_sel(r, eneg, r_sel(r, one_digit, word(r, PW_EM0), word(r, PW_EM)),
                               r_sel(r, one_digit, word(r, PW_EP0), word(r, PW_EP)));
    LLVMValueRef fbig = r_and(r, fixed, big), fsmall = r_and(r, fixed, r_not(r, big));
    LLVMValueRef parts[6] = {
        r_sel(r, fsmall, small_pfx, minus),
        r_sel(r, fbig, big_a, r_sel(r, fsmall, zero, sci_a)),
        r_sel(r, fbig, big_point, r_sel(r, fsmall, small_point, sci_point)),
        r_sel(r, fbig, big_b, r_sel(r, fsmall, sm, r_sel(r, more, sci_b, zero))),
        r_sel(r, fixed, word(r, PW_EMPTY), eword),
        r_sel(r, fixed, zero, eabs),
    };
    LLVMBasicBlockRef layout_end = LLVMGetInsertBlock(b); /* ndigits made blocks */
    LLVMBuildBr(b, done);

    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef special[6] = {sp_pfx, zero, sp_point, zero, word(r, PW_EMPTY), zero};
    LLVMBasicBlockRef pfrom[2] = {entry, layout_end};
    LLVMValueRef phis[6], ret = LLVMGetUndef(st);
    for (int i = 0; i < 6; i++) {
        phis[i] = LLVMBuildPhi(b, i64, "");
        LLVMValueRef in[2] = {special[i], parts[i]};
        LLVMAddIncoming(phis[i], in, pfrom, 2);
    }
    phis[2] =
        r_add(r, word(r, PW_NWORDS), r_mul(r, phis[2], ki(r, POINT_SIZE))); /* slot -> offset */
    for (int i = 0; i < 6; i++) ret = LLVMBuildInsertValue(b, ret, phis[i], (unsigned)i, "");
    LLVMBuildRet(b, ret);
    LLVMDisposeBuilder(b);
    t->b = saved;
    return fn;
}

LLVMValueRef jit_print_bool(jit_tgt *t, LLVMValueRef v) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(t->ctx);
    LLVMValueRef w =
        LLVMBuildSelect(t->b, v, LLVMConstInt(i64, (unsigned long long)word_offset(PW_TRUE), 1),
                        LLVMConstInt(i64, (unsigned long long)word_offset(PW_FALSE), 1), "");
    return LLVMBuildGEP2(t->b, LLVMInt8TypeInContext(t->ctx), words_table(t), &w, 1, "");
}

void jit_print_float(jit_tgt *t, LLVMValueRef x, bool f32, LLVMValueRef out[6]) {
    LLVMValueRef fn = repr_fn(t, f32);
    LLVMValueRef parts = LLVMBuildCall2(t->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
    jit_target_mark_call(t, parts);
    for (int i = 0; i < 6; i++) {
        LLVMValueRef part = LLVMBuildExtractValue(t->b, parts, (unsigned)i, "");
        out[i] = i % 2 == 0 ? LLVMBuildGEP2(t->b, LLVMInt8TypeInContext(t->ctx), words_table(t),
                                            &part, 1, "")
                            : part;
    }
}
