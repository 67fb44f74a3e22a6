/* jit_cg_types: the LLVM type of each jit type, as a value and in memory,
 * and conversions between dtypes as NumPy casts. Every codegen file calls
 * these. */
#include "jit_cg.h"

/* The dtype a value of type t is computed in on this target. */
jit_dtype jit_cg_dt_of(cg *c, jit_type t) {
    if (t.kind == JT_WEAK_INT) return JIT_I64;
    if (t.kind == JT_WEAK_FLOAT) return c->m->target->fp64 ? JIT_F64 : JIT_F32;
    if (t.kind == JT_WEAK_COMPLEX) return c->m->target->fp64 ? JIT_C128 : JIT_C64;
    return (jit_dtype)t.dtype;
}

LLVMTypeRef jit_cg_ltype_dt(cg *c, jit_dtype d) {
    switch (d) {
    case JIT_BOOL: return c->m->i1;
    case JIT_I8:
    case JIT_U8: return c->m->i8;
    case JIT_I16:
    case JIT_U16: return LLVMInt16TypeInContext(c->m->tg.ctx);
    case JIT_I32:
    case JIT_U32: return c->m->i32;
    case JIT_F32: return c->m->f32;
    case JIT_F64: return c->m->f64;
    case JIT_C64: return LLVMVectorType(c->m->f32, 2);
    case JIT_C128: return LLVMVectorType(c->m->f64, 2);
    default: return c->m->i64;
    }
}
LLVMTypeRef jit_cg_ptr_in(cg *c, jit_space sp) {
    return LLVMPointerTypeInContext(c->m->tg.ctx, jit_target_space(&c->m->tg, sp));
}
LLVMTypeRef jit_cg_ltype(cg *c, jit_type t) {
    return t.kind == JT_ATOMIC ? jit_cg_ptr_in(c, (jit_space)t.space)
                               : jit_cg_ltype_dt(c, jit_cg_dt_of(c, t));
}
/* in memory (array elements, parameters): bool is a byte */
LLVMTypeRef jit_cg_mtype_dt(cg *c, jit_dtype d) {
    return d == JIT_BOOL ? c->m->i8 : jit_cg_ltype_dt(c, d);
}

LLVMValueRef jit_cg_conv_dt(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to) {
    LLVMBuilderRef b = c->m->b;
    if (from == to) return v;
    if (jit_dtype_is_complex(from) || jit_dtype_is_complex(to))
        return jit_cg_cx_convert(c, v, from, to);
    LLVMTypeRef tt = jit_cg_ltype_dt(c, to);
    bool ff = jit_dtype_is_float(from), tf = jit_dtype_is_float(to);
    if (to == JIT_BOOL)
        return ff ? LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0), "")
                  : LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
    if (from == JIT_BOOL) return tf ? LLVMBuildUIToFP(b, v, tt, "") : LLVMBuildZExt(b, v, tt, "");
    if (ff && tf)
        return jit_dtype_bits(to) > jit_dtype_bits(from) ? LLVMBuildFPExt(b, v, tt, "")
                                                         : LLVMBuildFPTrunc(b, v, tt, "");
    if (ff) { /* C-like truncation; through int64 so negative values wrap into small unsigned types
               */
        if (to == JIT_U64) return LLVMBuildFPToUI(b, v, tt, "");
        LLVMValueRef w = LLVMBuildFPToSI(b, v, c->m->i64, "");
        return to == JIT_I64 ? w : LLVMBuildTrunc(b, w, tt, "");
    }
    if (tf)
        return jit_dtype_is_signed(from) ? LLVMBuildSIToFP(b, v, tt, "")
                                         : LLVMBuildUIToFP(b, v, tt, "");
    int fb = jit_dtype_bits(from), tb = jit_dtype_bits(to);
    if (fb == tb) return v;
    if (tb < fb) return LLVMBuildTrunc(b, v, tt, "");
    return jit_dtype_is_signed(from) ? LLVMBuildSExt(b, v, tt, "") : LLVMBuildZExt(b, v, tt, "");
}

LLVMValueRef jit_cg_conv(cg *c, LLVMValueRef v, jit_type from, jit_type to) {
    return jit_cg_conv_dt(c, v, jit_cg_dt_of(c, from), jit_cg_dt_of(c, to));
}

LLVMValueRef jit_cg_i64c(cg *c, long long v) {
    return LLVMConstInt(c->m->i64, (unsigned long long)v, 1);
}
