/* jit_cg_memory: arrays in memory -- an element's address (Python's negative
 * indices, the index checks), loads and stores, the storage of
 * ol.local_array / ol.private_array, and AtomicRef's operations. Called by
 * expressions, assignments and calls. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jit_cg.h"

static bool const_nonneg(const jit_node *n) {
    return n->kind == N_CONST && n->type.kind != JT_WEAK_FLOAT && n->v.i >= 0;
}

/* Whether axis k of access n was checked before the loop (hoist_checks). */
static bool index_proven(const cg *c, const jit_node *n, int k) {
    const jit_node *ix = n->kids[k];
    if (n->a->kind != N_VAR || ix->kind != N_VAR) return false;
    for (int i = 0; i < c->nproven; i++)
        if (c->proven[i].arr == n->a->v.var && c->proven[i].axis == k &&
            c->proven[i].idx == ix->v.var)
            return true;
    return false;
}

LLVMValueRef jit_cg_element_ptr(cg *c, jit_node *n, cg_array *a) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef idx[3] = {0}, raw[3] = {0}, p;
    bool uns[3] = {0}, proven[3] = {0};
    for (int k = 0; k < a->t.ndim; k++) {
        proven[k] = index_proven(c, n, k);
        jit_node *kn = n->kids[k];
        LLVMValueRef v = jit_cg_expr(c, kn);
        if (!v) return NULL;
        jit_dtype d = jit_cg_dt_of(c, kn->type);
        if (jit_dtype_is_signed(d))
            v = jit_cg_conv_dt(c, v, d, JIT_I64);
        else if (d != JIT_U64)
            v = LLVMBuildZExt(b, v, c->m->i64, ""); /* bool, narrow unsigned */
        raw[k] = v;
        uns[k] = !jit_dtype_is_signed(d);
        if (jit_dtype_is_signed(d) && !const_nonneg(kn) && !proven[k]) /* Python's a[-1] */
            v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, v, jit_cg_i64c(c, 0), ""),
                                LLVMBuildAdd(b, v, a->shape[k], ""), v, "");
        idx[k] = v;
    }
    LLVMValueRef byte;
    if (a->t.layout == JIT_LAYOUT_C) {
        LLVMValueRef lin = idx[0];
        for (int k = 1; k < a->t.ndim; k++)
            lin = LLVMBuildAdd(b, LLVMBuildMul(b, lin, a->shape[k], ""), idx[k], "");
        LLVMValueRef base = LLVMBuildGEP2(b, c->m->i8, a->base, &a->offset, 1, "");
        p = LLVMBuildGEP2(b, jit_cg_mtype_dt(c, a->t.dtype), base, &lin, 1, "elem");
    } else {
        byte = a->offset;
        for (int k = 0; k < a->t.ndim; k++)
            byte = LLVMBuildAdd(b, byte, LLVMBuildMul(b, idx[k], a->strides[k], ""), "");
        p = LLVMBuildGEP2(b, c->m->i8, a->base, &byte, 1, "elem");
    }
    return c->m->bc ? jit_cg_bounds_check(c, n, a, raw, idx, uns, proven, p) : p;
}

/* A complex element is aligned as its parts are (NumPy's complex128 to 8). */
static int elem_align(jit_dtype d) {
    return jit_dtype_is_complex(d) ? jit_dtype_size(d) / 2 : jit_dtype_size(d);
}

LLVMValueRef jit_cg_load_elem(cg *c, LLVMValueRef p, jit_dtype d) {
    LLVMValueRef v = LLVMBuildLoad2(c->m->b, jit_cg_mtype_dt(c, d), p, "");
    LLVMSetAlignment(v, (unsigned)elem_align(d));
    if (d == JIT_BOOL) v = LLVMBuildICmp(c->m->b, LLVMIntNE, v, LLVMConstInt(c->m->i8, 0, 0), "");
    return v;
}

void jit_cg_store_elem(cg *c, LLVMValueRef p, LLVMValueRef v, jit_dtype d) {
    if (d == JIT_BOOL) v = LLVMBuildZExt(c->m->b, v, c->m->i8, "");
    LLVMValueRef s = LLVMBuildStore(c->m->b, v, p);
    LLVMSetAlignment(s, (unsigned)elem_align(d));
}

int jit_cg_array_of(cg *c, jit_node *n, cg_array *out) {
    if (n->kind == N_VAR && n->type.kind == JT_ARRAY && c->arrays[n->v.var].base) {
        *out = c->arrays[n->v.var];
        return 0;
    }
    if (n->kind == N_CALL && n->type.kind == JT_ARRAY) return jit_cg_scratch_array(c, n, out);
    return jit_cg_fail(c, n, "internal: not an array here");
}

/* The storage of ol.local_array / ol.private_array call n, made at its first
 * use: a work-group variable of the module (named as OpenCL C compilers name
 * a kernel's __local variables, which PoCL relies on) or an entry-block
 * alloca. The shape is constant (jit_infer checked). */
int jit_cg_scratch_array(cg *c, jit_node *n, cg_array *out) {
    for (int i = 0; i < c->nscratch; i++)
        if (c->scratch[i].at == n) {
            *out = c->scratch[i].a;
            return 0;
        }
    jit_type t = n->type;
    jit_node *shape = n->kids[0];
    int64_t count = 1, dims[3];
    for (int d = 0; d < t.ndim; d++) {
        dims[d] = (shape->kind == N_TUPLE ? shape->kids[d] : shape)->v.i;
        count *= dims[d];
        if (count > (1 << 24))
            return jit_cg_fail(c, n, "this array is too large for local or private memory");
    }
    LLVMTypeRef et = jit_cg_mtype_dt(c, t.dtype), at = LLVMArrayType(et, (unsigned)count);
    cg_array a = {.offset = jit_cg_i64c(c, 0), .t = t};
    if (t.space == JIT_LOCAL) {
        /* over the device's local memory a launch fails, or PoCL aborts the process */
        c->m->local_bytes +=
            (unsigned long long)count * (unsigned long long)jit_dtype_size(t.dtype);
        unsigned long long most = c->m->target->local_mem;
        if (most && c->m->local_bytes > most)
            return jit_cg_fail(
                c, n,
                "the kernel's local arrays need %llu bytes, more than the %llu bytes of "
                "local memory "
                "a work-group has on this device\nUse smaller tiles, or fewer or narrower "
                "local arrays.",
                c->m->local_bytes, most);
        char name[200];
        snprintf(name, sizeof name, "%s.local%d", LLVMGetValueName(c->fn), c->nscratch);
        a.base = LLVMAddGlobalInAddressSpace(c->m->tg.mod, at, name,
                                             jit_target_space(&c->m->tg, JIT_LOCAL));
        LLVMSetInitializer(a.base, LLVMGetUndef(at));
        LLVMSetLinkage(a.base, LLVMInternalLinkage);
        LLVMSetAlignment(a.base, 16);
    } else {
        a.base = jit_cg_entry_alloca(c, at, "private");
    }
    int64_t stride = jit_dtype_size(t.dtype);
    for (int d = t.ndim - 1; d >= 0; d--) {
        a.shape[d] = jit_cg_i64c(c, dims[d]);
        a.strides[d] = jit_cg_i64c(c, stride);
        stride *= dims[d];
    }
    void *more = realloc(c->scratch, sizeof *c->scratch * (size_t)(c->nscratch + 1));
    if (!more) return jit_cg_fail(c, n, "out of memory");
    c->scratch = more;
    c->scratch[c->nscratch].at = n;
    c->scratch[c->nscratch++].a = a;
    *out = a;
    return 0;
}

/* ol.AtomicRef(array, index): the element's address. */
LLVMValueRef jit_cg_atomic_ptr(cg *c, jit_node *n) {
    cg_array a;
    if (jit_cg_array_of(c, n->kids[0], &a) < 0) return NULL;
    jit_node idx = *n, *ix = n->kids[1];
    idx.a = n->kids[0]; /* the array, as an index's a: what a bounds check names */
    idx.kids = ix->kind == N_TUPLE ? ix->kids : &n->kids[1];
    idx.nkids = ix->kind == N_TUPLE ? ix->nkids : 1;
    return jit_cg_element_ptr(c, &idx, &a);
}

static LLVMValueRef bits_of(cg *c, LLVMValueRef v, LLVMTypeRef it) {
    return LLVMTypeOf(v) == it ? v : LLVMBuildBitCast(c->m->b, v, it, "");
}

/* old = *p; *p = op(old, v) for floats, as a compare-and-swap loop on the
 * bits: for the operations a device has no instruction for. Returns old. */
static LLVMValueRef cas_loop(cg *c, LLVMValueRef p, jit_method_op op, jit_dtype d, LLVMValueRef v) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef et = jit_cg_ltype_dt(c, d),
                it = LLVMIntTypeInContext(c->m->tg.ctx, (unsigned)jit_dtype_bits(d));
    LLVMValueRef first = LLVMBuildLoad2(b, it, p, "");
    LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(first, (unsigned)jit_dtype_size(d));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = jit_cg_block(c, "cas"),
                      done = jit_cg_block(c, "cas.done");
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef old = LLVMBuildPhi(b, it, "old"), oldf = LLVMBuildBitCast(b, old, et, ""), now;
    if (op == A_ADD)
        now = LLVMBuildFAdd(b, oldf, v, "");
    else if (op == A_SUB)
        now = LLVMBuildFSub(b, oldf, v, "");
    else
        now = LLVMBuildSelect(
            b, LLVMBuildFCmp(b, op == A_MIN ? LLVMRealOLT : LLVMRealOGT, v, oldf, ""), v, oldf, "");
    LLVMValueRef pair =
        LLVMBuildAtomicCmpXchg(b, p, old, LLVMBuildBitCast(b, now, it, ""),
                               LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
    LLVMValueRef found = LLVMBuildExtractValue(b, pair, 0, ""),
                 ok = LLVMBuildExtractValue(b, pair, 1, "");
    LLVMValueRef in[2] = {first, found};
    LLVMBasicBlockRef from[2] = {pre, loop};
    LLVMAddIncoming(old, in, from, 2);
    LLVMBuildCondBr(b, ok, done, loop);
    LLVMPositionBuilderAtEnd(b, done);
    return oldf;
}

/* An AtomicRef method on the element at p. Relaxed order, as CUDA's atomics
 * and SYCL's atomic_ref default: group_barrier orders memory. */
LLVMValueRef jit_cg_atomic_op(cg *c, jit_node *n, jit_type at, LLVMValueRef p) {
    LLVMBuilderRef b = c->m->b;
    const char *m = n->a->v.name;
    jit_dtype d = (jit_dtype)at.dtype;
    bool fl = jit_dtype_is_float(d);
    if (jit_dtype_bits(d) == 64 && !c->m->target->atomic64)
        return jit_cg_fail(
                   c, n,
                   "this device has no 64-bit atomics, so %s on %s elements cannot run there\n"
                   "Use an int32, uint32 or float32 array.",
                   m, jit_dtype_name(d)),
               NULL;
    LLVMTypeRef et = jit_cg_ltype_dt(c, d),
                it = LLVMIntTypeInContext(c->m->tg.ctx, (unsigned)jit_dtype_bits(d));
    LLVMValueRef v[2] = {0};
    for (int i = 0; i < n->nkids && i < 2; i++) {
        if (!(v[i] = jit_cg_expr(c, n->kids[i]))) return NULL;
        v[i] = jit_cg_conv(c, v[i], n->kids[i]->type, jit_scalar(d));
    }
    LLVMAtomicOrdering relaxed = LLVMAtomicOrderingMonotonic;
    LLVMValueRef r;
    jit_method_op op = jit_method_find(JT_ATOMIC, m)->op;
    /* the integer fetch_* instructions, signed and unsigned */
    static const LLVMAtomicRMWBinOp rmw[][2] = {
        [A_ADD] = {LLVMAtomicRMWBinOpAdd, LLVMAtomicRMWBinOpAdd},
        [A_SUB] = {LLVMAtomicRMWBinOpSub, LLVMAtomicRMWBinOpSub},
        [A_AND] = {LLVMAtomicRMWBinOpAnd, LLVMAtomicRMWBinOpAnd},
        [A_OR] = {LLVMAtomicRMWBinOpOr, LLVMAtomicRMWBinOpOr},
        [A_XOR] = {LLVMAtomicRMWBinOpXor, LLVMAtomicRMWBinOpXor},
        [A_MIN] = {LLVMAtomicRMWBinOpMin, LLVMAtomicRMWBinOpUMin},
        [A_MAX] = {LLVMAtomicRMWBinOpMax, LLVMAtomicRMWBinOpUMax},
    };
    switch (op) {
    case A_LOAD:
        r = LLVMBuildLoad2(b, it, p, "");
        LLVMSetOrdering(r, relaxed);
        LLVMSetAlignment(r, (unsigned)jit_dtype_size(d));
        break;
    case A_STORE: {
        LLVMValueRef st = LLVMBuildStore(b, bits_of(c, v[0], it), p);
        LLVMSetOrdering(st, relaxed);
        LLVMSetAlignment(st, (unsigned)jit_dtype_size(d));
        return jit_cg_no_value(c);
    }
    case A_COMPARE_EXCHANGE: { /* floats compare bits, as C++ atomics do */
        LLVMValueRef pair = LLVMBuildAtomicCmpXchg(b, p, bits_of(c, v[0], it), bits_of(c, v[1], it),
                                                   relaxed, relaxed, 0);
        r = LLVMBuildExtractValue(b, pair, 0, "");
        break;
    }
    case A_EXCHANGE:
        r = LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpXchg, p, bits_of(c, v[0], it), relaxed, 0);
        break;
    default:
        if (!fl)
            return LLVMBuildAtomicRMW(b, rmw[op][!jit_dtype_is_signed(d)], p, v[0], relaxed, 0);
        /* CUDA has float add; OpenCL 1.2 devices have no float atomics at all */
        if (c->m->tg.ptx && (op == A_ADD || op == A_SUB))
            return LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpFAdd, p,
                                      op == A_SUB ? LLVMBuildFNeg(b, v[0], "") : v[0], relaxed, 0);
        return cas_loop(c, p, op, d, v[0]);
    }
    return fl ? LLVMBuildBitCast(b, r, et, "") : r;
}
