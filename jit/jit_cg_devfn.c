/* jit_cg_devfn: device functions -- one internal, always-inlined LLVM
 * function per (function, argument types), generated at its first call with
 * a builder of its own, and the calls to it: the kernel's own (called by
 * jit_cg_call) and the JIT's device library's (jit_lib.h; called by
 * jit_cg_complex and jit_cg_print), compiled once per process and target and
 * linked into the kernel's module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Linker.h>

#include "jit_cg.h"
#include "jit_lib.h"

/* The LLVM function of callee for argument types at[nargs], generated at its
 * first use in the module; its index in m->devfns, or -1 with the error set
 * (at n). */
static int devfn_for(cg *c, const jit_node *n, jit_func *callee, const jit_type *at, int nargs) {
    cg_module *m = c->m;
    cg_devfn *df = NULL;
    for (int i = 0; i < m->ndevfns; i++)
        if (m->devfns[i].f == callee && m->devfns[i].nargs == nargs &&
            !memcmp(m->devfns[i].args, at, sizeof(jit_type) * (size_t)nargs))
            df = &m->devfns[i];
    if (!df) {
        if (m->depth > 16) return jit_cg_fail(c, n, "device functions nest too deeply"), -1;
        jit_type ret;
        if (jit_infer(callee, at, &ret, m->err) < 0) return -1;
        cg_devfn *nd = realloc(m->devfns, (size_t)(m->ndevfns + 1) * sizeof *nd);
        if (!nd) return jit_cg_fail(c, n, "out of memory"), -1;
        m->devfns = nd;
        df = &nd[m->ndevfns++];
        memset(df, 0, sizeof *df);
        df->f = callee;
        df->nargs = nargs;
        memcpy(df->args, at, sizeof(jit_type) * (size_t)nargs);
        df->ret = ret;
        LLVMTypeRef pts[16 * 8 + 1];
        int np = 0;
        for (int i = 0; i < nargs; i++) {
            jit_cg_param_types(c, at[i], pts + np);
            np += jit_cg_param_count(at[i]);
        }
        if (m->bc) pts[np++] = m->gptr;     /* the bounds record */
        if (m->cancel) pts[np++] = m->gptr; /* the cancel flag */
        LLVMTypeRef rt = ret.kind == JT_NONE ? m->voidt : jit_cg_ltype(c, ret);
        df->fty = LLVMFunctionType(rt, pts, (unsigned)np, 0);
        char name[256];
        snprintf(name, sizeof name, "ofl_devfn_%s_%d", callee->name, m->ndevfns);
        jit_symbol_sanitize(name);
        df->fn = LLVMAddFunction(m->tg.mod, name, df->fty);
        LLVMSetLinkage(df->fn, LLVMInternalLinkage);
        jit_target_mark_function(&m->tg, df->fn);
        unsigned k = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
        LLVMAddAttributeAtIndex(df->fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(m->tg.ctx, k, 0));
        /* generate its body with a builder of its own, then come back */
        LLVMBuilderRef saved = m->b;
        m->b = LLVMCreateBuilderInContext(m->tg.ctx);
        m->tg.b = m->b;
        m->depth++;
        cg sub = {.m = m, .f = callee, .fn = df->fn, .ret_type = ret};
        sub.vars = calloc((size_t)callee->nvars + 1, sizeof *sub.vars);
        sub.arrays = calloc((size_t)callee->nvars + 1, sizeof *sub.arrays);
        LLVMPositionBuilderAtEnd(m->b, jit_cg_block(&sub, "entry"));
        jit_cg_make_allocas(&sub);
        if (ret.kind != JT_NONE) sub.ret_slot = jit_cg_entry_alloca(&sub, rt, "ret");
        int pi = 0;
        LLVMValueRef pv[8];
        for (int i = 0; i < nargs; i++) {
            for (int k = 0; k < jit_cg_param_count(at[i]); k++)
                pv[k] = LLVMGetParam(df->fn, (unsigned)(pi + k));
            jit_cg_bind_param(&sub, i, at[i], pv);
            pi += jit_cg_param_count(at[i]);
        }
        if (m->bc) sub.record = LLVMGetParam(df->fn, (unsigned)pi);
        if (m->cancel) sub.cancel_flag = LLVMGetParam(df->fn, (unsigned)pi + (m->bc ? 1 : 0));
        int idx = (int)(df - m->devfns);
        int rc = jit_cg_emit_function_body(&sub);
        df = &m->devfns[idx]; /* nested device functions may have grown the array */
        free(sub.vars);
        free(sub.arrays);
        free(sub.scratch);
        m->depth--;
        LLVMDisposeBuilder(m->b);
        m->b = saved;
        m->tg.b = saved;
        if (rc < 0) return -1;
        return idx;
    }
    return (int)(df - m->devfns);
}

LLVMValueRef jit_cg_call_devfn(cg *c, jit_node *n) {
    cg_module *m = c->m;
    jit_func *callee = n->a->v.ref.func;
    jit_type at[16];
    if (n->nkids > 16)
        return jit_cg_fail(c, n, "a device function takes at most 16 arguments"), NULL;
    for (int i = 0; i < n->nkids; i++) at[i] = n->kids[i]->type;
    int dfi = devfn_for(c, n, callee, at, n->nkids);
    if (dfi < 0) return NULL;
    LLVMValueRef args[16 * 8 + 1];
    int na = 0;
    for (int i = 0; i < n->nkids; i++) {
        if (at[i].kind == JT_ARRAY) {
            cg_array a;
            if (jit_cg_array_of(c, n->kids[i], &a) < 0) return NULL;
            args[na++] = a.base;
            args[na++] = a.offset;
            for (int k = 0; k < a.t.ndim; k++) args[na++] = a.shape[k];
            for (int k = 0; k < a.t.ndim; k++) args[na++] = a.strides[k];
        } else if (jit_cg_param_count(at[i])) {
            LLVMValueRef v = jit_cg_expr(c, n->kids[i]);
            if (!v) return NULL;
            if (at[i].kind == JT_SCALAR && at[i].dtype == JIT_BOOL)
                v = LLVMBuildZExt(m->b, v, m->i8, "");
            args[na++] = v;
        }
    }
    if (m->bc) args[na++] = c->record;
    if (m->cancel) args[na++] = c->cancel_flag;
    cg_devfn *df = &m->devfns[dfi]; /* arguments that call device functions may have grown it */
    LLVMValueRef r = LLVMBuildCall2(m->b, df->fty, df->fn, args, (unsigned)na, "");
    jit_target_mark_call(&m->tg, r);
    if (df->ret.kind == JT_NONE)
        return jit_cg_no_value(c); /* a statement call; the value is unused */
    n->type = df->ret;
    return r;
}

/* ---- the device library's functions, compiled once per target ----
 * A library function is generated into a module of its own, in a context of
 * its own, and optimised there (jit_optimize_part): its helpers inlined, its
 * variables and private arrays in registers. The bitcode is kept for the
 * process (jit_lib_code), keyed by the function, its argument types and
 * whatever of the target and flags changes its code; each kernel that calls
 * it links a copy into its own module, to inline it (complex arithmetic) or
 * to call it (print's float_repr, whose body the kernel's pipeline then skips).
 * Generated afresh in every kernel, float_repr alone cost each printing
 * kernel's O3 about 80 ms; compiled here, it costs one process 30 ms.
 * They are compiled without bounds checks, even for a bounds-checked kernel:
 * their indices are the JIT's own, not the user's, and checking them would
 * give every kernel a compile of its own (the sites are numbered per kernel). */

/* The key of f for argument types at[nargs] in m: the name, what of the
 * target the code depends on (triple and data layout, float64 as the weak
 * float, the sm the pipeline tunes for), the cancel checks, the types. */
static void lib_key(const cg_module *m, const jit_func *f, const jit_type *at, int nargs, char *key,
                    size_t len) {
    const jit_target *t = m->target;
    size_t n = (size_t)snprintf(key, len, "%s|form %d sm %d fp64 %d cancel %d %d|", f->name,
                                (int)t->form, t->form == JIT_PTX ? t->sm : 0, (int)t->fp64,
                                (int)m->cancel, (int)m->cancel_checks);
    for (int i = 0; i < nargs && n + 12 < len; i++)
        n += (size_t)snprintf(key + n, len - n, "%02x%02x%02x%02x%02x ", at[i].kind, at[i].dtype,
                              at[i].ndim, at[i].layout, at[i].space);
}

/* Generates and optimises f for at[nargs] in a module of its own, and
 * stores its bitcode under key. NULL with the error set (at n). Under
 * jit_lib_lock. */
static const jit_lib_code *lib_compile(cg *c, const jit_node *n, jit_func *f, const jit_type *at,
                                       int nargs, const char *key) {
    cg_module *m = c->m;
    cg_module lm = {.target = m->target,
                    .err = m->err,
                    .cancel = m->cancel,
                    .cancel_checks = m->cancel_checks,
                    .depth = m->depth};
    LLVMContextRef ctx = LLVMContextCreate();
    jit_cg_module_init(&lm, ctx, f->name);
    jit_target_layout(&lm.tg);
    cg lc = {.m = &lm, .f = c->f};
    const jit_lib_code *code = NULL;
    int dfi = devfn_for(&lc, n, f, at, nargs);
    if (dfi >= 0 && lm.local_bytes) /* its arrays would be no kernel's to count */
        dfi = jit_cg_fail(c, n, "internal: the device library's %s uses local memory", f->name);
    if (dfi >= 0) {
        char sym[96], msg[3000];
        snprintf(sym, sizeof sym, "ofl_lib_%s_%d", f->name, jit_lib_code_count());
        jit_symbol_sanitize(sym);
        LLVMValueRef fn = lm.devfns[dfi].fn;
        LLVMSetValueName2(fn, sym, strlen(sym));
        LLVMSetLinkage(fn, LLVMExternalLinkage);
        if (jit_optimize_part(lm.tg.mod, m->target->sm, msg, sizeof msg) < 0) {
            jit_cg_fail(c, n, "internal: the device library's %s: %s", f->name, msg);
        } else {
            LLVMMemoryBufferRef buf = LLVMWriteBitcodeToMemoryBuffer(lm.tg.mod);
            code = jit_lib_code_add(key, sym, lm.devfns[dfi].ret, LLVMGetBufferStart(buf),
                                    LLVMGetBufferSize(buf));
            LLVMDisposeMemoryBuffer(buf);
            if (!code) jit_cg_fail(c, n, "out of memory");
        }
    }
    free(lm.devfns);
    LLVMDisposeBuilder(lm.b);
    LLVMDisposeModule(lm.tg.mod);
    LLVMContextDispose(ctx);
    return code;
}

/* code's function in m's module: linked in at its first call there, to be
 * inlined or (inlined false) called. NULL with the error set (at n). */
static LLVMValueRef lib_link(cg *c, const jit_node *n, const jit_lib_code *code, bool inlined) {
    cg_module *m = c->m;
    LLVMValueRef fn = LLVMGetNamedFunction(m->tg.mod, code->sym);
    if (fn) return fn;
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRange(code->code, code->size, code->sym, 0);
    LLVMModuleRef lib = NULL;
    bool bad = LLVMParseBitcodeInContext2(m->tg.ctx, buf, &lib) != 0;
    LLVMDisposeMemoryBuffer(buf);
    if (bad || LLVMLinkModules2(m->tg.mod, lib)) /* lib is gone either way */
        return jit_cg_fail(c, n, "internal: cannot link the device library's %s", code->sym), NULL;
    fn = LLVMGetNamedFunction(m->tg.mod, code->sym);
    if (!fn) return NULL;
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    if (!inlined) { /* a call, to a body the kernel's pipeline leaves as it is */
        unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
        unsigned never = LLVMGetEnumAttributeKindForName("noinline", 8);
        LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, always);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(m->tg.ctx, never, 0));
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(m->tg.ctx, JIT_OPTIMIZED,
                                                          (unsigned)strlen(JIT_OPTIMIZED), "", 0));
    }
    return fn;
}

LLVMValueRef jit_cg_call_lib(cg *c, const jit_node *n, const char *name, const jit_type *at,
                             LLVMValueRef *v, int nargs, bool inlined, jit_type *ret) {
    cg_module *m = c->m;
    jit_func *f = jit_lib_find(name);
    if (!f) return jit_cg_fail(c, n, "internal: no %s in the JIT's device library", name), NULL;
    char key[512];
    lib_key(m, f, at, nargs, key, sizeof key);
    jit_lib_lock(); /* its tree is typed in place, and shared with other compiles */
    const jit_lib_code *code = jit_lib_code_find(key);
    if (!code) code = lib_compile(c, n, f, at, nargs, key);
    jit_lib_unlock();
    LLVMValueRef fn = code ? lib_link(c, n, code, inlined) : NULL;
    if (!fn) return NULL;
    LLVMValueRef args[16 + 2];
    int na = 0;
    for (int i = 0, vi = 0; i < nargs; i++) /* an array is its parameters' values, in v */
        for (int k = 0; k < jit_cg_param_count(at[i]) && na < 16; k++, vi++)
            args[na++] = at[i].kind == JT_SCALAR && at[i].dtype == JIT_BOOL
                             ? LLVMBuildZExt(m->b, v[vi], m->i8, "")
                             : v[vi];
    if (m->cancel) args[na++] = c->cancel_flag;
    LLVMValueRef r = LLVMBuildCall2(m->b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)na, "");
    jit_target_mark_call(&m->tg, r);
    *ret = code->ret;
    return r;
}
