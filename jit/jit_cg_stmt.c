/* jit_cg_stmt: statements, one function per kind -- assignments (unpacking
 * too), augmented assignments, if, break and continue, return; loops are
 * jit_cg_loop's. Called by the driver for a function's body and by loops and
 * ifs for theirs. */
#include "jit_cg.h"

static int store_var(cg *c, jit_node *t, LLVMValueRef v, jit_type vt) {
    jit_type dst = c->f->var_types[t->v.var];
    if (vt.kind == JT_NDITEM || vt.kind == JT_GROUP)
        return 0; /* nothing to keep: read from the hardware */
    if (vt.kind == JT_ATOMIC) {
        LLVMBuildStore(c->m->b, v, c->vars[t->v.var]);
        return 0;
    }
    LLVMBuildStore(c->m->b, jit_cg_conv(c, v, vt, dst), c->vars[t->v.var]);
    return 0;
}

static int assign(cg *c, jit_node *t, jit_node *value, LLVMValueRef v, jit_type vt) {
    if (t->kind == N_VAR) {
        if (vt.kind == JT_ARRAY) {
            cg_array a;
            if (jit_cg_array_of(c, value, &a) < 0) return -1;
            a.t = c->f->var_types[t->v.var];
            c->arrays[t->v.var] = a;
            return 0;
        }
        return store_var(c, t, v, vt);
    }
    cg_array a;
    if (jit_cg_array_of(c, t->a, &a) < 0) return -1;
    LLVMValueRef p = jit_cg_element_ptr(c, t, &a);
    if (!p) return -1;
    jit_cg_store_elem(c, p, jit_cg_conv_dt(c, v, jit_cg_dt_of(c, vt), a.t.dtype), a.t.dtype);
    return 0;
}

/* a, b = b, a: every value first, then the assignments. */
static int unpack_values(cg *c, jit_node *n) {
    jit_node *val = n->a;
    LLVMValueRef vs[16];
    if (val->nkids > 16) return jit_cg_fail(c, n, "at most 16 values can be unpacked");
    for (int i = 0; i < val->nkids; i++)
        if (val->kids[i]->type.kind != JT_ARRAY && !(vs[i] = jit_cg_expr(c, val->kids[i])))
            return -1;
    for (int t = 0; t < n->nkids; t++)
        for (int i = 0; i < val->nkids; i++)
            if (assign(c, n->kids[t]->kids[i], val->kids[i], vs[i], val->kids[i]->type) < 0)
                return -1;
    return 0;
}

/* n, m = a.shape */
static int unpack_shape(cg *c, jit_node *n) {
    jit_node *val = n->a;
    cg_array a;
    if (jit_cg_array_of(c, val->a, &a) < 0) return -1;
    for (int t = 0; t < n->nkids; t++)
        for (int i = 0; i < n->kids[t]->nkids; i++)
            if (assign(c, n->kids[t]->kids[i], NULL, a.shape[i], jit_weak_int()) < 0) return -1;
    return 0;
}

static int assign_stmt(cg *c, jit_node *n) {
    jit_node *val = n->a;
    if (val->kind == N_TUPLE) return unpack_values(c, n);
    if (val->type.kind == JT_TUPLE) return unpack_shape(c, n);
    LLVMValueRef v = NULL;
    if (val->type.kind != JT_ARRAY && !(v = jit_cg_expr(c, val))) return -1;
    for (int t = 0; t < n->nkids; t++)
        if (assign(c, n->kids[t], val, v, val->type) < 0) return -1;
    return 0;
}

/* a[i] op= v: the element's address once. */
static int augassign_element(cg *c, jit_node *n) {
    jit_node *t = n->a;
    cg_array a;
    if (jit_cg_array_of(c, t->a, &a) < 0) return -1;
    LLVMValueRef p = jit_cg_element_ptr(c, t, &a);
    if (!p) return -1;
    LLVMValueRef cur = jit_cg_load_elem(c, p, a.t.dtype), v = jit_cg_expr(c, n->b);
    if (!v) return -1;
    jit_type et = jit_scalar(a.t.dtype);
    jit_node tmp = *n, elem = *t;
    elem.type = et;
    tmp.type = n->op == OP_DIV ? jit_true_divide(et, n->b->type) : jit_promote(et, n->b->type);
    if (et.dtype == JIT_BOOL && n->b->type.kind == JT_SCALAR && n->b->type.dtype == JIT_BOOL &&
        n->op != OP_BITAND && n->op != OP_BITOR && n->op != OP_BITXOR)
        tmp.type = jit_scalar(JIT_I64);
    LLVMValueRef r = jit_cg_binop(c, &tmp, n->op, &elem, n->b, cur, v);
    if (!r) return -1;
    jit_cg_store_elem(c, p, jit_cg_conv_dt(c, r, jit_cg_dt_of(c, tmp.type), a.t.dtype), a.t.dtype);
    return 0;
}

static int augassign_stmt(cg *c, jit_node *n) {
    jit_node *t = n->a;
    if (t->kind != N_VAR) return augassign_element(c, n);
    LLVMValueRef cur = jit_cg_expr(c, t), v = cur ? jit_cg_expr(c, n->b) : NULL;
    if (!v) return -1;
    jit_node tmp = *n; /* the operation's type is the promotion of both */
    tmp.type = jit_promote(t->type, n->b->type);
    if (n->op == OP_DIV) tmp.type = jit_true_divide(t->type, n->b->type);
    LLVMValueRef r = jit_cg_binop(c, &tmp, n->op, t, n->b, cur, v);
    return r ? store_var(c, t, r, tmp.type) : -1;
}

static int if_stmt(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef cond = jit_cg_truth(c, n->a);
    if (!cond) return -1;
    LLVMBasicBlockRef tb = jit_cg_block(c, "then"), eb = jit_cg_block(c, "else"),
                      done = jit_cg_block(c, "endif");
    LLVMBuildCondBr(b, cond, tb, eb);
    LLVMPositionBuilderAtEnd(b, tb);
    if (jit_cg_stmts(c, n->body, n->nbody) < 0) return -1;
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, eb);
    if (jit_cg_stmts(c, n->orelse, n->norelse) < 0) return -1;
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    return 0;
}

/* break, continue */
static int jump_stmt(cg *c, jit_node *n) {
    if (!c->nloops)
        return jit_cg_fail(c, n, "'%s' outside a loop", n->kind == S_BREAK ? "break" : "continue");
    LLVMBuildBr(c->m->b, n->kind == S_BREAK ? c->brk[c->nloops - 1] : c->cont[c->nloops - 1]);
    jit_cg_dead_block(c);
    return 0;
}

static int return_stmt(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    if (n->a && c->ret_slot) {
        LLVMValueRef v = jit_cg_expr(c, n->a);
        if (!v) return -1;
        LLVMBuildStore(b, jit_cg_conv(c, v, n->a->type, c->ret_type), c->ret_slot);
    }
    LLVMBuildBr(b, c->ret_block);
    jit_cg_dead_block(c);
    return 0;
}

static int stmt(cg *c, jit_node *n) {
    switch ((jit_node_kind)n->kind) {
    case S_ASSIGN: return assign_stmt(c, n);
    case S_AUGASSIGN: return augassign_stmt(c, n);
    case S_EXPR: return jit_cg_expr(c, n->a) ? 0 : -1;
    case S_PASS: return 0;
    case S_IF: return if_stmt(c, n);
    case S_WHILE: return jit_cg_while(c, n);
    case S_FOR: return jit_cg_for(c, n);
    case S_BREAK:
    case S_CONTINUE: return jump_stmt(c, n);
    case S_RETURN: return return_stmt(c, n);
    default: return jit_cg_fail(c, n, "internal: statement kind %d", n->kind);
    }
}

int jit_cg_stmts(cg *c, jit_node **body, int n) {
    for (int i = 0; i < n; i++)
        if (stmt(c, body[i]) < 0) return -1;
    return 0;
}
