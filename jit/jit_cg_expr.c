/* jit_cg_expr: an expression's value -- constants, variables, operators,
 * `and`/`or`, conditional expressions, attributes and indexing; calls go to
 * jit_cg_call. Called wherever the walk needs a value. */
#include <stdint.h>

#include "jit_cg.h"

LLVMValueRef jit_cg_truth(cg *c, jit_node *n) {
    LLVMValueRef v = jit_cg_expr(c, n);
    return v ? jit_cg_conv_dt(c, v, jit_cg_dt_of(c, n->type), JIT_BOOL) : NULL;
}

/* `a and b and ...` / `a or b or ...` as Python: the value of the operand
 * that decided (the first falsy one for and, truthy for or, else the last),
 * in the node's type, the operands' common one. */
static LLVMValueRef short_circuit(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    LLVMBasicBlockRef start = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef done = jit_cg_block(c, n->op == OP_AND ? "and.done" : "or.done");
    /* the phi first, so that each operand adds its edge as it goes: CPython
     * takes an `and` of any length */
    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef phi = LLVMBuildPhi(b, jit_cg_ltype(c, n->type), "");
    LLVMPositionBuilderAtEnd(b, start);
    for (int i = 0; i < n->nkids; i++) {
        jit_node *k = n->kids[i];
        LLVMValueRef v = jit_cg_expr(c, k);
        if (!v) return NULL;
        LLVMValueRef value = jit_cg_conv(c, v, k->type, n->type);
        LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
        LLVMAddIncoming(phi, &value, &from, 1);
        if (i + 1 == n->nkids) {
            LLVMBuildBr(b, done);
            break;
        }
        LLVMValueRef truthy = jit_cg_conv_dt(c, v, jit_cg_dt_of(c, k->type), JIT_BOOL);
        LLVMBasicBlockRef next = jit_cg_block(c, "bool.next");
        if (n->op == OP_AND)
            LLVMBuildCondBr(b, truthy, next, done);
        else
            LLVMBuildCondBr(b, truthy, done, next);
        LLVMPositionBuilderAtEnd(b, next);
    }
    LLVMPositionBuilderAtEnd(b, done);
    return phi;
}

/* A value that costs nothing to compute and cannot fail: a constant, a
 * number variable, a part of one, its negation. Both sides of `b if a else
 * c` that are such are computed and selected between, as a select compiles
 * to no branch where the optimiser might keep one (after a device function
 * is inlined, say). */
static bool no_work(const jit_node *n) {
    if (n->kind == N_CONST) return true;
    if (n->kind == N_VAR) return jit_is_number(n->type);
    if (n->kind == N_UNARY && (n->op == OP_NEG || n->op == OP_POS)) return no_work(n->a);
    if (n->kind == N_ATTR) return jit_is_number(n->a->type) && no_work(n->a);
    return false;
}

LLVMValueRef jit_cg_expr(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    switch ((jit_node_kind)n->kind) {
    case N_CONST: {
        jit_dtype d = jit_cg_dt_of(c, n->type);
        LLVMTypeRef t = jit_cg_ltype_dt(c, d);
        if (jit_dtype_is_complex(d)) {
            LLVMTypeRef pt = jit_cg_ltype_dt(c, jit_complex_part(d));
            LLVMValueRef parts[2] = {LLVMConstReal(pt, n->v.z[0]), LLVMConstReal(pt, n->v.z[1])};
            return LLVMConstVector(parts, 2);
        }
        if (n->type.kind == JT_WEAK_FLOAT || jit_dtype_is_float(d)) return LLVMConstReal(t, n->v.f);
        return LLVMConstInt(t, (unsigned long long)n->v.i, jit_dtype_is_signed(d));
    }
    case N_VAR:
        if (n->type.kind == JT_NDITEM || n->type.kind == JT_GROUP) return jit_cg_no_value(c);
        if (n->type.kind == JT_ARRAY || n->type.kind == JT_ITEM)
            return jit_cg_fail(c, n, "an array is not a number here"), NULL;
        return LLVMBuildLoad2(b, jit_cg_ltype(c, c->f->var_types[n->v.var]), c->vars[n->v.var],
                              c->f->vars[n->v.var].name);
    case N_BINOP: {
        LLVMValueRef x = jit_cg_expr(c, n->a), y = x ? jit_cg_expr(c, n->b) : NULL;
        return y ? jit_cg_binop(c, n, n->op, n->a, n->b, x, y) : NULL;
    }
    case N_UNARY: {
        LLVMValueRef x = jit_cg_expr(c, n->a);
        if (!x) return NULL;
        if (n->op == OP_NOT)
            return LLVMBuildNot(b, jit_cg_conv_dt(c, x, jit_cg_dt_of(c, n->a->type), JIT_BOOL), "");
        x = jit_cg_conv(c, x, n->a->type, n->type);
        jit_dtype d = jit_cg_dt_of(c, n->type);
        if (n->op == OP_POS) return x;
        if (n->op == OP_NEG)
            return jit_dtype_is_float(d) || jit_dtype_is_complex(d) ? LLVMBuildFNeg(b, x, "")
                                                                    : LLVMBuildNeg(b, x, "");
        return LLVMBuildNot(b, x, ""); /* ~ on ints and bools */
    }
    case N_COMPARE: {
        LLVMValueRef prev = jit_cg_expr(c, n->kids[0]), all = NULL;
        if (!prev) return NULL;
        for (int i = 1; i < n->nkids; i++) {
            LLVMValueRef next = jit_cg_expr(c, n->kids[i]);
            if (!next) return NULL;
            LLVMValueRef r = jit_cg_compare_values(c, n->ops[i - 1], prev, n->kids[i - 1]->type,
                                                   next, n->kids[i]->type);
            all = all ? LLVMBuildAnd(b, all, r, "") : r;
            prev = next;
        }
        return all;
    }
    case N_BOOLOP: return short_circuit(c, n);
    case N_IFEXP: {
        LLVMValueRef cond = jit_cg_truth(c, n->a);
        if (!cond) return NULL;
        if (no_work(n->b) && no_work(n->c)) { /* nothing to skip: a select */
            LLVMValueRef tv = jit_cg_expr(c, n->b), ev = tv ? jit_cg_expr(c, n->c) : NULL;
            if (!ev) return NULL;
            return LLVMBuildSelect(b, cond, jit_cg_conv(c, tv, n->b->type, n->type),
                                   jit_cg_conv(c, ev, n->c->type, n->type), "");
        }
        LLVMBasicBlockRef tb = jit_cg_block(c, "ifexp.then"), eb = jit_cg_block(c, "ifexp.else"),
                          done = jit_cg_block(c, "ifexp");
        LLVMBuildCondBr(b, cond, tb, eb);
        LLVMPositionBuilderAtEnd(b, tb);
        LLVMValueRef tv = jit_cg_expr(c, n->b);
        if (!tv) return NULL;
        tv = jit_cg_conv(c, tv, n->b->type, n->type);
        LLVMBasicBlockRef tend = LLVMGetInsertBlock(b);
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, eb);
        LLVMValueRef ev = jit_cg_expr(c, n->c);
        if (!ev) return NULL;
        ev = jit_cg_conv(c, ev, n->c->type, n->type);
        LLVMBasicBlockRef eend = LLVMGetInsertBlock(b);
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, done);
        LLVMValueRef phi = LLVMBuildPhi(b, jit_cg_ltype(c, n->type), "");
        LLVMValueRef v[2] = {tv, ev};
        LLVMBasicBlockRef from[2] = {tend, eend};
        LLVMAddIncoming(phi, v, from, 2);
        return phi;
    }
    case N_CALL: return jit_cg_call(c, n);
    case N_ATTR: {
        if (jit_is_number(n->a->type)) return jit_cg_cx_part(c, n);
        cg_array a;
        if (jit_cg_array_of(c, n->a, &a) < 0) return NULL;
        if (jit_attr_find(n->v.name) == ATTR_NDIM) return jit_cg_i64c(c, a.t.ndim);
        LLVMValueRef size = a.shape[0];
        for (int k = 1; k < a.t.ndim; k++) size = LLVMBuildMul(b, size, a.shape[k], "");
        return size;
    }
    case N_INDEX: {
        if (n->a->type.kind == JT_TUPLE) { /* a.shape[d] */
            cg_array a;
            if (jit_cg_array_of(c, n->a->a, &a) < 0) return NULL;
            int64_t d = n->kids[0]->kind == N_CONST ? n->kids[0]->v.i : -n->kids[0]->a->v.i;
            if (d < 0) d += a.t.ndim;
            return a.shape[d];
        }
        cg_array a;
        if (jit_cg_array_of(c, n->a, &a) < 0) return NULL;
        LLVMValueRef p = jit_cg_element_ptr(c, n, &a);
        return p ? jit_cg_load_elem(c, p, a.t.dtype) : NULL;
    }
    default: jit_cg_fail(c, n, "internal: expression kind %d", n->kind); return NULL;
    }
}
