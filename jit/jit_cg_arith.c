/* jit_cg_arith: operators on numbers -- arithmetic as NumPy computes it
 * (floor division, modulo, powers, shifts), comparisons, and integers of mixed
 * signedness compared by value. Called by expressions, augmented assignments
 * and the min/max builtins. */
#include "jit_cg.h"

/* Integer floor division and modulo as NumPy: by zero gives 0, the remainder
 * takes the divisor's sign, INT_MIN // -1 wraps instead of trapping. */
static LLVMValueRef int_divmod(cg *c, LLVMValueRef a, LLVMValueRef bv, bool is_signed, bool mod) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
    LLVMValueRef bz = LLVMBuildICmp(b, LLVMIntEQ, bv, zero, "");
    if (!is_signed) {
        LLVMValueRef safe = LLVMBuildSelect(b, bz, one, bv, "");
        LLVMValueRef r = mod ? LLVMBuildURem(b, a, safe, "") : LLVMBuildUDiv(b, a, safe, "");
        return LLVMBuildSelect(b, bz, zero, r, "");
    }
    LLVMValueRef minus1 = LLVMConstAllOnes(t);
    LLVMValueRef bm1 = LLVMBuildICmp(b, LLVMIntEQ, bv, minus1, "");
    LLVMValueRef safe = LLVMBuildSelect(b, LLVMBuildOr(b, bz, bm1, ""), one, bv, "");
    LLVMValueRef q = LLVMBuildSDiv(b, a, safe, ""), r = LLVMBuildSRem(b, a, safe, "");
    /* floor: when the remainder is non-zero and its sign differs from the divisor's */
    LLVMValueRef adjust =
        LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, r, zero, ""),
                     LLVMBuildICmp(b, LLVMIntNE, LLVMBuildICmp(b, LLVMIntSLT, r, zero, ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, safe, zero, ""), ""),
                     "");
    LLVMValueRef res;
    if (mod) {
        res = LLVMBuildSelect(b, adjust, LLVMBuildAdd(b, r, safe, ""), r, "");
        res = LLVMBuildSelect(b, bm1, zero, res, "");
    } else {
        res = LLVMBuildSelect(b, adjust, LLVMBuildSub(b, q, one, ""), q, "");
        res = LLVMBuildSelect(b, bm1, LLVMBuildNeg(b, a, ""), res, "");
    }
    return LLVMBuildSelect(b, bz, zero, res, "");
}

/* a ** n for integers by squaring; negative n gives 0 (NumPy raises: with JIT_BOUNDSCHECK,
 * jit_cg_binop's check has recorded it). */
static LLVMValueRef int_pow(cg *c, LLVMValueRef a, LLVMValueRef n, bool is_signed) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = jit_cg_block(c, "ipow"),
                      done = jit_cg_block(c, "ipow.done");
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
    LLVMValueRef n0 =
        is_signed ? LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, n, zero, ""), zero, n, "") : n;
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, n0, zero, ""), done, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef acc = LLVMBuildPhi(b, t, "acc"), base = LLVMBuildPhi(b, t, "base"),
                 e = LLVMBuildPhi(b, t, "e");
    LLVMValueRef odd = LLVMBuildTrunc(b, e, c->m->i1, "");
    LLVMValueRef acc2 = LLVMBuildSelect(b, odd, LLVMBuildMul(b, acc, base, ""), acc, "");
    LLVMValueRef base2 = LLVMBuildMul(b, base, base, "");
    LLVMValueRef e2 = LLVMBuildLShr(b, e, one, "");
    LLVMBasicBlockRef loop_end = LLVMGetInsertBlock(b);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, e2, zero, ""), done, loop);
    LLVMValueRef in_acc[2] = {one, acc2}, in_base[2] = {a, base2}, in_e[2] = {n0, e2};
    LLVMBasicBlockRef from[2] = {pre, loop_end};
    LLVMAddIncoming(acc, in_acc, from, 2);
    LLVMAddIncoming(base, in_base, from, 2);
    LLVMAddIncoming(e, in_e, from, 2);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef r = LLVMBuildPhi(b, t, "ipow");
    LLVMValueRef in_r[2] = {one, acc2};
    LLVMAddIncoming(r, in_r, from, 2);
    if (is_signed) /* negative exponents: 0 */
        r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, n, zero, ""), zero, r, "");
    return r;
}

LLVMValueRef jit_cg_math1(cg *c, const char *name, jit_dtype d, LLVMValueRef x) {
    return jit_target_math(&c->m->tg, name, d == JIT_F64, &x, 1);
}

/* C's fmod, exact: NVPTX expands LLVM's frem to x - trunc(x / y) * y, which
 * is inexact for large quotients and NaN for an infinite y (0 % inf is 0). */
static LLVMValueRef exact_fmod(cg *c, jit_dtype d, LLVMValueRef x, LLVMValueRef y) {
    LLVMValueRef args[2] = {x, y};
    return jit_target_math(&c->m->tg, "fmod", d == JIT_F64, args, 2);
}

/* a // b for floats as Python and NumPy: from fmod, so that 1.0 // 0.1 is 9
 * (floor(1.0 / 0.1) would be 10); by zero it is a / b (inf or nan). */
static LLVMValueRef float_floordiv(cg *c, jit_dtype d, LLVMValueRef x, LLVMValueRef y) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef zero = LLVMConstReal(t, 0), one = LLVMConstReal(t, 1),
                 half = LLVMConstReal(t, 0.5);
    LLVMValueRef mod = exact_fmod(c, d, x, y);
    LLVMValueRef div = LLVMBuildFDiv(b, LLVMBuildFSub(b, x, mod, ""), y, "");
    LLVMValueRef wrong_sign =
        LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealONE, mod, zero, ""),
                     LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, y, zero, ""),
                                  LLVMBuildFCmp(b, LLVMRealOLT, mod, zero, ""), ""),
                     "");
    div = LLVMBuildSelect(b, wrong_sign, LLVMBuildFSub(b, div, one, ""), div, "");
    LLVMValueRef fl = jit_cg_math1(c, "floor", d, div);
    fl = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, LLVMBuildFSub(b, div, fl, ""), half, ""),
                         LLVMBuildFAdd(b, fl, one, ""), fl, "");
    LLVMValueRef quot = LLVMBuildFDiv(b, x, y, "");
    LLVMValueRef cs[2] = {zero, quot};
    LLVMValueRef signed_zero = jit_target_math(&c->m->tg, "copysign", d == JIT_F64, cs, 2);
    LLVMValueRef r =
        LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNE, div, zero, ""), fl, signed_zero, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, zero, ""), quot, r, "");
}

/* The arithmetic of op on two values already converted to dtype d. */
static LLVMValueRef arith(cg *c, jit_node *at, int op, jit_dtype d, LLVMValueRef x,
                          LLVMValueRef y) {
    LLVMBuilderRef b = c->m->b;
    bool fl = jit_dtype_is_float(d), sg = jit_dtype_is_signed(d);
    if (d == JIT_BOOL) { /* & | ^ on bools; the rest were promoted to int64 */
        switch (op) {
        case OP_BITAND: return LLVMBuildAnd(b, x, y, "");
        case OP_BITOR: return LLVMBuildOr(b, x, y, "");
        case OP_BITXOR: return LLVMBuildXor(b, x, y, "");
        default: break;
        }
    }
    switch (op) {
    case OP_ADD: return fl ? LLVMBuildFAdd(b, x, y, "") : LLVMBuildAdd(b, x, y, "");
    case OP_SUB: return fl ? LLVMBuildFSub(b, x, y, "") : LLVMBuildSub(b, x, y, "");
    case OP_MUL: return fl ? LLVMBuildFMul(b, x, y, "") : LLVMBuildMul(b, x, y, "");
    case OP_DIV: return LLVMBuildFDiv(b, x, y, "");
    case OP_FLOORDIV:
        if (!fl) return int_divmod(c, x, y, sg, false);
        return float_floordiv(c, d, x, y);
    case OP_MOD: {
        if (!fl) return int_divmod(c, x, y, sg, true);
        LLVMValueRef r = exact_fmod(c, d, x, y), zero = LLVMConstReal(LLVMTypeOf(x), 0);
        LLVMValueRef fix =
            LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealONE, r, zero, ""),
                         LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, r, zero, ""),
                                      LLVMBuildFCmp(b, LLVMRealOLT, y, zero, ""), ""),
                         "");
        r = LLVMBuildSelect(b, fix, LLVMBuildFAdd(b, r, y, ""), r, "");
        /* a zero remainder takes the divisor's sign, as Python's and NumPy's */
        LLVMValueRef cs[2] = {zero, y};
        LLVMValueRef signed_zero = jit_target_math(&c->m->tg, "copysign", d == JIT_F64, cs, 2);
        return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, r, zero, ""), signed_zero, r, "");
    }
    case OP_POW:
        if (!fl) return int_pow(c, x, y, sg);
        {
            LLVMValueRef args[2] = {x, y};
            return jit_target_math(&c->m->tg, "pow", d == JIT_F64, args, 2);
        }
    case OP_BITAND: return LLVMBuildAnd(b, x, y, "");
    case OP_BITOR: return LLVMBuildOr(b, x, y, "");
    case OP_BITXOR: return LLVMBuildXor(b, x, y, "");
    case OP_LSHIFT:
    case OP_RSHIFT: {
        /* NumPy: shifting by the width or more gives 0 (or -1 for negative >>) */
        LLVMTypeRef t = LLVMTypeOf(x);
        LLVMValueRef bits = LLVMConstInt(t, (unsigned long long)jit_dtype_bits(d), 0);
        LLVMValueRef big = LLVMBuildICmp(b, sg ? LLVMIntSGE : LLVMIntUGE, y, bits, "");
        if (sg)
            big =
                LLVMBuildOr(b, big, LLVMBuildICmp(b, LLVMIntSLT, y, LLVMConstInt(t, 0, 0), ""), "");
        LLVMValueRef safe = LLVMBuildSelect(b, big, LLVMConstInt(t, 0, 0), y, "");
        if (op == OP_LSHIFT)
            return LLVMBuildSelect(b, big, LLVMConstInt(t, 0, 0), LLVMBuildShl(b, x, safe, ""), "");
        LLVMValueRef r = sg ? LLVMBuildAShr(b, x, safe, "") : LLVMBuildLShr(b, x, safe, "");
        LLVMValueRef fill =
            sg ? LLVMBuildAShr(b, x, LLVMConstInt(t, (unsigned long long)jit_dtype_bits(d) - 1, 0),
                               "")
               : LLVMConstInt(t, 0, 0);
        return LLVMBuildSelect(b, big, fill, r, "");
    }
    default: jit_cg_fail(c, at, "internal: operator %d", op); return NULL;
    }
}

LLVMValueRef jit_cg_compare(cg *c, int op, jit_dtype d, LLVMValueRef x, LLVMValueRef y) {
    LLVMBuilderRef b = c->m->b;
    if (jit_dtype_is_float(d)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                               LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        return LLVMBuildFCmp(b, fp[op - OP_EQ], x, y, "");
    }
    bool sg = jit_dtype_is_signed(d);
    static const LLVMIntPredicate si[] = {LLVMIntEQ,  LLVMIntNE,  LLVMIntSLT,
                                          LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
    static const LLVMIntPredicate ui[] = {LLVMIntEQ,  LLVMIntNE,  LLVMIntULT,
                                          LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
    return LLVMBuildICmp(b, sg ? si[op - OP_EQ] : ui[op - OP_EQ], x, y, "");
}

bool jit_cg_exact_int(jit_type t) { return jit_is_number(t) && !jit_is_floating(t); }

bool jit_cg_is_signed_type(cg *c, jit_type t) { return jit_dtype_is_signed(jit_cg_dt_of(c, t)); }

int_key jit_cg_key_of(cg *c, LLVMValueRef v, jit_type t) {
    int_key k = {LLVMConstInt(c->m->i1, 0, 0), jit_cg_conv_dt(c, v, jit_cg_dt_of(c, t), JIT_I64)};
    if (jit_cg_is_signed_type(c, t))
        k.neg = LLVMBuildICmp(c->m->b, LLVMIntSLT, k.bits, jit_cg_i64c(c, 0), "");
    return k;
}

/* x < y on keys: a negative value is below every other; among values of one
 * sign the bits order them unsigned. */
LLVMValueRef jit_cg_key_less(cg *c, int_key x, int_key y) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef differ = LLVMBuildXor(b, x.neg, y.neg, "");
    return LLVMBuildSelect(b, differ, x.neg, LLVMBuildICmp(b, LLVMIntULT, x.bits, y.bits, ""), "");
}

static LLVMValueRef key_compare(cg *c, int op, int_key x, int_key y) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef one = LLVMConstInt(c->m->i1, 1, 0);
    switch (op) {
    case OP_LT: return jit_cg_key_less(c, x, y);
    case OP_GT: return jit_cg_key_less(c, y, x);
    case OP_LE: return LLVMBuildXor(b, jit_cg_key_less(c, y, x), one, "");
    case OP_GE: return LLVMBuildXor(b, jit_cg_key_less(c, x, y), one, "");
    default: {
        LLVMValueRef eq = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, x.neg, y.neg, ""),
                                       LLVMBuildICmp(b, LLVMIntEQ, x.bits, y.bits, ""), "");
        return op == OP_EQ ? eq : LLVMBuildXor(b, eq, one, "");
    }
    }
}

/* x op y for two numbers of any types: integers of different signedness by
 * value (keys), the rest in their promoted type. */
LLVMValueRef jit_cg_compare_values(cg *c, int op, LLVMValueRef x, jit_type tx, LLVMValueRef y,
                                   jit_type ty) {
    if (jit_cg_exact_int(tx) && jit_cg_exact_int(ty) &&
        jit_cg_is_signed_type(c, tx) != jit_cg_is_signed_type(c, ty))
        return key_compare(c, op, jit_cg_key_of(c, x, tx), jit_cg_key_of(c, y, ty));
    jit_type pt = jit_promote(tx, ty);
    if (jit_is_complex(pt))
        return jit_cg_cx_compare(c, op, jit_cg_dt_of(c, pt), jit_cg_conv(c, x, tx, pt),
                                 jit_cg_conv(c, y, ty, pt));
    return jit_cg_compare(c, op, jit_cg_dt_of(c, pt), jit_cg_conv(c, x, tx, pt),
                          jit_cg_conv(c, y, ty, pt));
}

LLVMValueRef jit_cg_binop(cg *c, jit_node *n, int op, jit_node *an, jit_node *bn, LLVMValueRef x,
                          LLVMValueRef y) {
    jit_type rt = n->type;
    if (jit_is_complex(rt))
        return jit_cg_cx_arith(c, op, jit_cg_dt_of(c, rt), jit_cg_conv(c, x, an->type, rt),
                               jit_cg_conv(c, y, bn->type, rt), bn);
    if (op == OP_POW && jit_is_floating(rt) && bn->kind == N_CONST &&
        bn->type.kind == JT_WEAK_INT &&
        (bn->v.i == 2 || bn->v.i == 3)) { /* x**2, x**3: multiplications, as compilers do */
        LLVMValueRef v = jit_cg_conv(c, x, an->type, rt);
        LLVMValueRef sq = LLVMBuildFMul(c->m->b, v, v, "");
        return bn->v.i == 2 ? sq : LLVMBuildFMul(c->m->b, sq, v, "");
    }
    jit_dtype d = jit_cg_dt_of(c, rt);
    x = jit_cg_conv(c, x, an->type, rt);
    y = jit_cg_conv(c, y, bn->type, rt);
    if (op == OP_POW && c->m->bc && jit_dtype_is_signed(d) && !jit_dtype_is_float(d) &&
        !LLVMIsAConstantInt(y)) {
        /* NumPy's ValueError for a negative exponent known only now (a constant one is a
         * CompileError) */
        LLVMValueRef neg =
            LLVMBuildICmp(c->m->b, LLVMIntSLT, y, LLVMConstInt(LLVMTypeOf(y), 0, 0), "");
        if (jit_cg_fault_check(c, bn, neg, JIT_FAULT_NEG_POWER, jit_cg_conv_dt(c, y, d, JIT_I64)) <
            0)
            return NULL;
    }
    return arith(c, n, op, d, x, y);
}
