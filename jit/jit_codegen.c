/* jit_codegen: typed tree -> LLVM IR; this file is the driver.
 *
 * Numbers live in allocas (LLVM's mem2reg makes them registers); arrays are
 * (pointer, byte offset, shape, strides) held here, never in memory, which is
 * why an array variable is assigned once. Control flow that ends a block
 * (break, continue, return) leaves the builder in a fresh unreachable block,
 * so the walk never has to ask whether the current block is closed.
 *
 * Here: the module and each function's set-up (parameters, allocas, the
 * return block) and the helpers every part of the walk uses; the walk itself
 * is jit_cg_*.c's (jit_cg.h). jit_compile calls jit_codegen. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "jit_cg.h"

int jit_cg_fail(cg *c, const jit_node *n, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return jit_error_at(c->m->err, c->f, n ? n->line : 0, n ? n->col : 0, "%s", what);
}

LLVMValueRef jit_cg_entry_alloca(cg *c, LLVMTypeRef t, const char *name) {
    LLVMBuilderRef tmp = LLVMCreateBuilderInContext(c->m->tg.ctx);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(c->fn);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
        LLVMPositionBuilderBefore(tmp, first);
    else
        LLVMPositionBuilderAtEnd(tmp, entry);
    LLVMValueRef a = LLVMBuildAlloca(tmp, t, name);
    LLVMDisposeBuilder(tmp);
    return a;
}

LLVMBasicBlockRef jit_cg_block(cg *c, const char *name) {
    return LLVMAppendBasicBlockInContext(c->m->tg.ctx, c->fn, name);
}

/* After a terminator: continue in a block nothing jumps to. */
void jit_cg_dead_block(cg *c) { LLVMPositionBuilderAtEnd(c->m->b, jit_cg_block(c, "dead")); }

/* How many nodes of n's tree pred holds for (all when pred is NULL), device
 * functions' bodies included; too deep counts as many. */
int jit_cg_count_nodes(const jit_node *n, bool (*pred)(const jit_node *), int depth) {
    if (!n) return 0;
    if (depth > 16) return 1 << 20;
    int k = !pred || pred(n);
    if (n->kind == N_REF && n->v.ref.kind == REF_DEVFUNC && n->v.ref.func)
        for (int i = 0; i < n->v.ref.func->nbody; i++)
            k += jit_cg_count_nodes(n->v.ref.func->body[i], pred, depth + 1);
    k += jit_cg_count_nodes(n->a, pred, depth) + jit_cg_count_nodes(n->b, pred, depth) +
         jit_cg_count_nodes(n->c, pred, depth);
    for (int i = 0; i < n->nkids; i++) k += jit_cg_count_nodes(n->kids[i], pred, depth);
    for (int i = 0; i < n->nbody; i++) k += jit_cg_count_nodes(n->body[i], pred, depth);
    for (int i = 0; i < n->norelse; i++) k += jit_cg_count_nodes(n->orelse[i], pred, depth);
    return k;
}

bool jit_cg_is_barrier(const jit_node *n) {
    return n->kind == N_REF && n->v.ref.kind == REF_BUILTIN &&
           jit_builtins[n->v.ref.id].gen == GEN_BARRIER;
}

/* An NdItem or a Group is read from the hardware: it takes no parameter. */
int jit_cg_param_count(jit_type t) {
    return t.kind == JT_ARRAY ? 2 + 2 * t.ndim : t.kind == JT_NDITEM || t.kind == JT_GROUP ? 0 : 1;
}

void jit_cg_param_types(cg *c, jit_type t, LLVMTypeRef *out) {
    if (t.kind == JT_ARRAY) {
        out[0] = jit_cg_ptr_in(c, (jit_space)t.space);
        for (int k = 0; k < 1 + 2 * t.ndim; k++) out[1 + k] = c->m->i64;
    } else {
        out[0] = t.kind == JT_SCALAR ? jit_cg_mtype_dt(c, t.dtype) : jit_cg_ltype(c, t);
    }
}

/* Binds parameter values (from LLVMGetParam) to the function's variable v. */
void jit_cg_bind_param(cg *c, int v, jit_type t, LLVMValueRef *p) {
    if (t.kind == JT_ARRAY) {
        cg_array *a = &c->arrays[v];
        a->t = t;
        a->base = p[0];
        a->offset = p[1];
        for (int k = 0; k < t.ndim; k++) {
            a->shape[k] = p[2 + k];
            a->strides[k] = p[2 + t.ndim + k];
        }
        return;
    }
    if (t.kind == JT_NDITEM || t.kind == JT_GROUP) return;
    LLVMValueRef val = p[0];
    if (t.kind == JT_ATOMIC) {
        LLVMBuildStore(c->m->b, val, c->vars[v]);
        return;
    }
    if (t.kind == JT_SCALAR && t.dtype == JIT_BOOL)
        val = LLVMBuildICmp(c->m->b, LLVMIntNE, val, LLVMConstInt(c->m->i8, 0, 0), "");
    LLVMBuildStore(c->m->b, jit_cg_conv(c, val, t, c->f->var_types[v]), c->vars[v]);
}

void jit_cg_make_allocas(cg *c) {
    for (int v = 0; v < c->f->nvars; v++) {
        jit_type t = c->f->var_types[v];
        if (t.kind == JT_ARRAY || t.kind == JT_ITEM || t.kind == JT_NDITEM || t.kind == JT_GROUP ||
            t.kind == JT_UNKNOWN)
            continue;
        c->vars[v] = jit_cg_entry_alloca(c, jit_cg_ltype(c, t), c->f->vars[v].name);
    }
}

/* The body, then the single return block. The builder is in the entry block. */
int jit_cg_emit_function_body(cg *c) {
    LLVMBuilderRef b = c->m->b;
    c->ret_block = jit_cg_block(c, "return");
    if (jit_cg_stmts(c, c->f->body, c->f->nbody) < 0) return -1;
    LLVMBuildBr(b, c->ret_block);
    LLVMPositionBuilderAtEnd(b, c->ret_block);
    if (c->ret_slot)
        LLVMBuildRet(b, LLVMBuildLoad2(b, jit_cg_ltype(c, c->ret_type), c->ret_slot, ""));
    else
        LLVMBuildRetVoid(b);
    return 0;
}

void jit_symbol_sanitize(char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            *s = '_';
}

void jit_cg_module_init(cg_module *m, LLVMContextRef ctx, const char *name) {
    m->tg.ctx = ctx;
    m->tg.ptx = m->target->form == JIT_PTX;
    m->tg.mod = LLVMModuleCreateWithNameInContext(name, ctx);
    m->b = m->tg.b = LLVMCreateBuilderInContext(ctx);
    m->i1 = LLVMInt1TypeInContext(ctx);
    m->i8 = LLVMInt8TypeInContext(ctx);
    m->i32 = LLVMInt32TypeInContext(ctx);
    m->i64 = LLVMInt64TypeInContext(ctx);
    m->f32 = LLVMFloatTypeInContext(ctx);
    m->f64 = LLVMDoubleTypeInContext(ctx);
    m->gptr = LLVMPointerTypeInContext(ctx, 1);
    m->voidt = LLVMVoidTypeInContext(ctx);
}

int jit_codegen(jit_func *f, const jit_type *args, int nargs, int range_ndim, const jit_target *t,
                unsigned flags, LLVMContextRef ctx, const char *entry, LLVMModuleRef *out,
                char **bounds_sites, jit_error *err) {
    cg_module m = {.target = t, .err = err};
    struct cg_bounds bc = {.entry = entry};
    *bounds_sites = NULL;
    if (flags & JIT_BOUNDSCHECK) {
        m.bc = &bc;
        bc.leave = true;
        for (int i = 0; i < f->nbody && bc.leave; i++)
            bc.leave = !jit_cg_count_nodes(f->body[i], jit_cg_is_barrier, 0);
    }
    if (flags & JIT_CANCEL) {
        m.cancel = m.cancel_checks = true;
        for (int i = 0; i < f->nbody && m.cancel_checks; i++)
            m.cancel_checks = !jit_cg_count_nodes(f->body[i], jit_cg_is_barrier, 0);
    }
    jit_cg_module_init(&m, ctx, f->name);
    jit_target_setup(&m.tg);

    cg c = {.m = &m, .f = f};
    LLVMTypeRef pts[512];
    int np = 0;
    for (int i = 0; i < nargs; i++) {
        if (np + jit_cg_param_count(args[i]) > 500) {
            jit_cg_fail(&c, NULL, "too many kernel arguments");
            goto fail;
        }
        jit_cg_param_types(&c, args[i], pts + np);
        np += jit_cg_param_count(args[i]);
    }
    for (int d = 0; d < range_ndim; d++) pts[np++] = m.i64;
    if (m.bc) pts[np++] = m.gptr;     /* the bounds record */
    if (m.cancel) pts[np++] = m.gptr; /* the cancel flag, last */
    c.fn = LLVMAddFunction(m.tg.mod, entry, LLVMFunctionType(m.voidt, pts, (unsigned)np, 0));
    jit_target_mark_kernel(&m.tg, c.fn, t->max_threads, t->min_blocks);
    c.vars = calloc((size_t)f->nvars + 1, sizeof *c.vars);
    c.arrays = calloc((size_t)f->nvars + 1, sizeof *c.arrays);
    for (int i = 0; i < f->nin_range; i++)
        c.proven[i] = (cg_proof){f->in_range[i].arr, f->in_range[i].axis, f->in_range[i].idx};
    c.nproven = c.nassumed = f->nin_range;
    LLVMPositionBuilderAtEnd(m.b, jit_cg_block(&c, "entry"));
    jit_cg_make_allocas(&c);
    if (m.bc) c.record = LLVMGetParam(c.fn, (unsigned)np - 1 - (m.cancel ? 1 : 0));
    if (m.cancel) c.cancel_flag = LLVMGetParam(c.fn, (unsigned)np - 1);
    int pi = 0;
    for (int i = 0; i < nargs; i++) {
        LLVMValueRef pv[8];
        for (int k = 0; k < jit_cg_param_count(args[i]); k++)
            pv[k] = LLVMGetParam(c.fn, (unsigned)(pi + k));
        jit_cg_bind_param(&c, i + 1, args[i], pv);
        pi += jit_cg_param_count(args[i]);
    }
    /* the item: user dimension d is hardware dimension ndim-1-d; work-items past the range stop
     * here. An NdRange's grid is its global size: no tail, and none may leave before a barrier. */
    LLVMValueRef outside = NULL;
    bool nd = f->var_types[0].kind == JT_NDITEM;
    for (int d = 0; d < range_ndim && !nd; d++) {
        c.range[d] = LLVMGetParam(c.fn, (unsigned)(pi + d));
        /* ids are below 2^63: clearing the sign bit tells LLVM, which then drops the
         * negative-index wrap-around wherever an index derives from an id */
        c.uid[d] = LLVMBuildAnd(m.b, jit_target_global_id(&m.tg, range_ndim - 1 - d),
                                jit_cg_i64c(&c, INT64_MAX), "id");
        LLVMValueRef o = LLVMBuildICmp(m.b, LLVMIntUGE, c.uid[d], c.range[d], "");
        outside = outside ? LLVMBuildOr(m.b, outside, o, "") : o;
    }
    if (outside) {
        LLVMBasicBlockRef body = jit_cg_block(&c, "body"), early = jit_cg_block(&c, "tail");
        LLVMBuildCondBr(m.b, outside, early, body);
        LLVMPositionBuilderAtEnd(m.b, early);
        LLVMBuildRetVoid(m.b);
        LLVMPositionBuilderAtEnd(m.b, body);
    }
    int rc = jit_cg_emit_function_body(&c);
    free(c.vars);
    free(c.arrays);
    free(c.scratch);
    if (rc < 0) goto fail;
    free(m.devfns);
    LLVMDisposeBuilder(m.b);
    *out = m.tg.mod;
    *bounds_sites = bc.sites;
    if (m.bc && !bc.sites &&
        !(*bounds_sites = calloc(1, 1))) { /* no access checked: an empty table */
        LLVMDisposeModule(m.tg.mod);
        *out = NULL;
        return jit_error_at(err, f, 0, 0, "out of memory");
    }
    return 0;
fail:
    free(bc.sites);
    free(m.devfns);
    LLVMDisposeBuilder(m.b);
    LLVMDisposeModule(m.tg.mod);
    return -1;
}
