/* jit_cg_call: calls -- builtins by their jit_builtins row, dtype
 * constructors, the methods of the item, NdItem, Group, AtomicRef and
 * numbers; print() is jit_cg_print's, device functions jit_cg_devfn's. Called
 * by jit_cg_expr. */
#include <stdint.h>

#include "jit_cg.h"

/* What a call made for its effect gives back (a barrier, a store). */
LLVMValueRef jit_cg_no_value(cg *c) { return LLVMConstInt(c->m->i1, 0, 0); }

/* A query of the item in user dimension d. A Range's item was read once at
 * the kernel's start. NdItem and Group queries: user dimension d is hardware
 * dimension ndim-1-d, as for a Range; read from the hardware every time, so
 * that device functions given the item or group need no parameters for them. */
static LLVMValueRef query(cg *c, int q, jit_type obj, int d) {
    jit_tgt *tg = &c->m->tg;
    int hw = obj.ndim - 1 - d;
    switch ((jit_method_op)q) {
    case Q_ITEM_ID: return c->uid[d];
    case Q_ITEM_RANGE: return c->range[d];
    case Q_GLOBAL_ID:
        return LLVMBuildAnd(c->m->b, jit_target_global_id(tg, hw), jit_cg_i64c(c, INT64_MAX),
                            "gid");
    case Q_LOCAL_ID: return jit_target_wg(tg, JIT_LOCAL_ID, hw);
    case Q_LOCAL_RANGE: return jit_target_wg(tg, JIT_LOCAL_SIZE, hw);
    case Q_GROUP_ID: return jit_target_wg(tg, JIT_GROUP_ID, hw);
    case Q_GROUP_RANGE: return jit_target_wg(tg, JIT_NUM_GROUPS, hw);
    case Q_GLOBAL_RANGE: /* an NdRange's global size is a whole number of groups */
        return LLVMBuildMul(c->m->b, jit_target_wg(tg, JIT_LOCAL_SIZE, hw),
                            jit_target_wg(tg, JIT_NUM_GROUPS, hw), "");
    default: return jit_cg_no_value(c); /* get_group(): the group is the item's */
    }
}

/* A method of the item, the NdItem or its Group; a linear id is row-major
 * (the last dimension fastest). */
static LLVMValueRef item_method(cg *c, jit_node *n, jit_type obj) {
    const jit_method *mt = jit_method_find((jit_kind)obj.kind, n->a->v.name);
    if (mt->nargs || !mt->over) return query(c, mt->op, obj, (int)n->v.i);
    LLVMValueRef lin = query(c, mt->op, obj, 0);
    for (int d = 1; d < obj.ndim; d++)
        lin = LLVMBuildAdd(c->m->b, LLVMBuildMul(c->m->b, lin, query(c, mt->over, obj, d), ""),
                           query(c, mt->op, obj, d), "");
    return lin;
}

static LLVMValueRef call_builtin(cg *c, jit_node *n, const jit_builtin *bt) {
    LLVMBuilderRef b = c->m->b;
    jit_type rt = n->type;
    LLVMValueRef a[8];
    for (int i = 0; i < n->nkids && i < 8; i++)
        if (n->kids[i]->type.kind != JT_ARRAY && !(a[i] = jit_cg_expr(c, n->kids[i]))) return NULL;
    jit_type t0 = n->nkids ? n->kids[0]->type : rt;
    jit_dtype d0 = jit_cg_dt_of(c, t0);
    if (bt->gen == GEN_COMPLEX || bt->gen == GEN_CONJ || jit_dtype_is_complex(d0))
        return jit_cg_cx_builtin(c, n, bt, a);
    switch (bt->gen) {
    case GEN_LEN: {
        cg_array arr;
        return jit_cg_array_of(c, n->kids[0], &arr) < 0 ? NULL : arr.shape[0];
    }
    case GEN_CONVERT:
        if (!n->nkids) return LLVMConstNull(jit_cg_ltype(c, rt));
        return jit_cg_conv(c, a[0], t0, rt);
    case GEN_ABS: {
        LLVMValueRef v = jit_cg_conv(c, a[0], t0, rt);
        jit_dtype d = jit_cg_dt_of(c, rt);
        if (jit_dtype_is_float(d)) return jit_cg_math1(c, "fabs", d, v);
        if (!jit_dtype_is_signed(d)) return v;
        return LLVMBuildSelect(
            b, LLVMBuildICmp(b, LLVMIntSLT, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), ""),
            LLVMBuildNeg(b, v, ""), v, "");
    }
    case GEN_MIN:
    case GEN_MAX: {
        jit_dtype d = jit_cg_dt_of(c, rt);
        LLVMValueRef r = jit_cg_conv(c, a[0], t0, rt);
        bool mixed = false; /* signed and unsigned integers: choose by value, then convert */
        for (int i = 0; i < n->nkids; i++)
            mixed |= jit_cg_exact_int(n->kids[i]->type) &&
                     jit_cg_is_signed_type(c, n->kids[i]->type) != jit_cg_is_signed_type(c, t0);
        if (mixed && jit_is_integral(rt)) {
            int_key best = jit_cg_key_of(c, a[0], t0);
            for (int i = 1; i < n->nkids; i++) {
                int_key k = jit_cg_key_of(c, a[i], n->kids[i]->type);
                LLVMValueRef better =
                    bt->gen == GEN_MIN ? jit_cg_key_less(c, k, best) : jit_cg_key_less(c, best, k);
                r = LLVMBuildSelect(b, better, jit_cg_conv(c, a[i], n->kids[i]->type, rt), r, "");
                best.neg = LLVMBuildSelect(b, better, k.neg, best.neg, "");
                best.bits = LLVMBuildSelect(b, better, k.bits, best.bits, "");
            }
            return r;
        }
        for (int i = 1; i < n->nkids; i++) { /* Python keeps the first of equal values */
            LLVMValueRef v = jit_cg_conv(c, a[i], n->kids[i]->type, rt);
            LLVMValueRef better = jit_cg_compare(c, bt->gen == GEN_MIN ? OP_LT : OP_GT, d, v, r);
            r = LLVMBuildSelect(b, better, v, r, "");
        }
        return r;
    }
    case GEN_ROUND:
        if (!jit_dtype_is_float(d0)) return jit_cg_conv(c, a[0], t0, rt);
        return jit_cg_conv_dt(c, jit_cg_math1(c, bt->fn, d0, a[0]), d0, jit_cg_dt_of(c, rt));
    case GEN_NP_ROUND: {
        LLVMValueRef v = jit_cg_conv(c, a[0], t0, rt);
        jit_dtype d = jit_cg_dt_of(c, rt);
        if (!jit_dtype_is_float(d)) return v;
        return jit_cg_math1(c, bt->fn, d, v);
    }
    case GEN_MINIMUM:
    case GEN_MAXIMUM: { /* NumPy: a NaN on either side wins */
        jit_dtype d = jit_cg_dt_of(c, rt);
        LLVMValueRef x = jit_cg_conv(c, a[0], t0, rt),
                     y = jit_cg_conv(c, a[1], n->kids[1]->type, rt);
        LLVMValueRef r = LLVMBuildSelect(
            b, jit_cg_compare(c, bt->gen == GEN_MINIMUM ? OP_LT : OP_GT, d, y, x), y, x, "");
        if (!jit_dtype_is_float(d)) return r;
        return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, y, y, ""), y, r, "");
    }
    case GEN_ISFINITE:
        if (!jit_dtype_is_float(d0)) return LLVMConstInt(c->m->i1, 1, 0);
        return LLVMBuildFCmp(b, LLVMRealOLT, jit_cg_math1(c, "fabs", d0, a[0]),
                             LLVMConstReal(LLVMTypeOf(a[0]), 1.0 / 0.0), "");
    case GEN_SIGNBIT: {
        if (!jit_dtype_is_float(d0)) {
            if (!jit_dtype_is_signed(d0)) return LLVMConstInt(c->m->i1, 0, 0);
            return LLVMBuildICmp(b, LLVMIntSLT, a[0], LLVMConstInt(LLVMTypeOf(a[0]), 0, 0), "");
        }
        LLVMTypeRef it = LLVMIntTypeInContext(c->m->tg.ctx, d0 == JIT_F64 ? 64 : 32);
        LLVMValueRef bits = LLVMBuildBitCast(b, a[0], it, "");
        return LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstInt(it, 0, 0), "");
    }
    case GEN_ISNAN:
    case GEN_ISINF: {
        if (!jit_dtype_is_float(d0)) return LLVMConstInt(c->m->i1, 0, 0);
        if (bt->gen == GEN_ISNAN) return LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], "");
        LLVMValueRef inf = LLVMConstReal(LLVMTypeOf(a[0]), 1.0 / 0.0);
        return LLVMBuildFCmp(b, LLVMRealOEQ, jit_cg_math1(c, "fabs", d0, a[0]), inf, "");
    }
    case GEN_LDEXP: {
        jit_dtype d = jit_cg_dt_of(c, rt);
        LLVMValueRef args[2] = {
            jit_cg_conv(c, a[0], t0, rt),
            jit_cg_conv_dt(c, a[1], jit_cg_dt_of(c, n->kids[1]->type), JIT_I32)};
        return jit_target_math(&c->m->tg, bt->fn, d == JIT_F64, args, 2);
    }
    case GEN_MATH: {
        jit_dtype d = jit_cg_dt_of(c, rt);
        LLVMValueRef args[3];
        for (int i = 0; i < n->nkids && i < 3; i++)
            args[i] = jit_cg_conv(c, a[i], n->kids[i]->type, rt);
        return jit_target_math(&c->m->tg, bt->fn, d == JIT_F64, args, n->nkids);
    }
    default: return jit_cg_fail(c, n, "internal: builtin %s", bt->py), NULL;
    }
}

LLVMValueRef jit_cg_call(cg *c, jit_node *n) {
    jit_node *fn = n->a;
    if (fn->kind == N_REF && fn->v.ref.kind == REF_BUILTIN) {
        cg_array scratch;
        const jit_builtin *bt = &jit_builtins[fn->v.ref.id];
        switch (bt->gen) {
        case GEN_BARRIER: jit_target_barrier(&c->m->tg); return jit_cg_no_value(c);
        case GEN_SCRATCH:
            return jit_cg_scratch_array(c, n, &scratch) < 0 ? NULL : jit_cg_no_value(c);
        case GEN_ATOMIC_REF: return jit_cg_atomic_ptr(c, n);
        case GEN_PRINT: return jit_cg_emit_print(c, n);
        default: return call_builtin(c, n, bt);
        }
    }
    if (fn->kind == N_REF && fn->v.ref.kind == REF_DTYPE) {
        if (!n->nkids) return LLVMConstNull(jit_cg_ltype(c, n->type));
        LLVMValueRef v = jit_cg_expr(c, n->kids[0]);
        return v ? jit_cg_conv(c, v, n->kids[0]->type, n->type) : NULL;
    }
    if (fn->kind == N_REF && fn->v.ref.kind == REF_DEVFUNC) return jit_cg_call_devfn(c, n);
    if (fn->kind == N_ATTR && fn->a->type.kind == JT_ATOMIC) {
        LLVMValueRef p = jit_cg_expr(c, fn->a);
        return p ? jit_cg_atomic_op(c, n, fn->a->type, p) : NULL;
    }
    if (fn->kind == N_ATTR && jit_is_number(fn->a->type)) return jit_cg_cx_conj_method(c, n);
    if (fn->kind == N_ATTR) return item_method(c, n, fn->a->type);
    jit_cg_fail(c, n, "internal: call");
    return NULL;
}
