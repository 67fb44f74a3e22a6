/* jit_cg_bounds: JIT_BOUNDSCHECK (jit.h says what the kernel records) -- the
 * index checks of array accesses and the other run-time errors Python would
 * raise, each numbered as a site of jit_artifact.bounds_sites. Called by
 * jit_cg_memory (indexing), jit_cg_arith (negative powers) and jit_cg_loop
 * (a zero step). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_cg.h"

/* The number of the line "WHAT at FILE:LINE:COL" (what: "array 'a' " or
 * empty) for the check at `at`: the checks in the order they are generated,
 * so that code from the disk cache numbers them alike wherever the source now
 * sits. -1 when out of memory. */
static int check_site(cg *c, const jit_node *at, const char *what) {
    struct cg_bounds *bc = c->m->bc;
    char line[1200];
    if (snprintf(line, sizeof line, "%sat %s:%d:%d\n", what, c->f->filename ? c->f->filename : "?",
                 at->line, at->col) < 0)
        return -1;
    size_t len = strlen(line);
    for (size_t i = 0; i + 1 < len; i++) /* one line per site, whatever the file is called */
        if (line[i] == '\n') line[i] = ' ';
    char *more = realloc(bc->sites, bc->len + len + 1);
    if (!more) return -1;
    bc->sites = more;
    memcpy(bc->sites + bc->len, line, len + 1);
    bc->len += len;
    return bc->nsites++;
}

/* The site of the access at (arr the array's expression). */
static int bounds_site(cg *c, const jit_node *at, const jit_node *arr) {
    char what[300], name[32];
    if (arr->kind == N_VAR)
        snprintf(what, sizeof what, "array '%s' ", c->f->vars[arr->v.var].name);
    else
        snprintf(what, sizeof what, "array '%s(...)' ",
                 jit_builtin_name(&jit_builtins[arr->a->v.ref.id], name, sizeof name));
    return check_site(c, at, what);
}

static void bounds_word(cg *c, int word, LLVMValueRef v) {
    LLVMValueRef at = jit_cg_i64c(c, word);
    LLVMValueRef s =
        LLVMBuildStore(c->m->b, v, LLVMBuildGEP2(c->m->b, c->m->i64, c->record, &at, 1, ""));
    LLVMSetAlignment(s, 8);
}

/* In a failing work-item: the first one claims the record and fills it in
 * (words left NULL stay 0). */
static void bounds_record(cg *c, jit_fault kind, LLVMValueRef index, LLVMValueRef axis,
                          LLVMValueRef size, LLVMValueRef uns, int site) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(
        b, c->record, LLVMConstInt(c->m->i32, 0, 0), LLVMConstInt(c->m->i32, 1, 0),
        LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
    LLVMBasicBlockRef fill = jit_cg_block(c, "bounds.first"),
                      done = jit_cg_block(c, "bounds.recorded");
    LLVMBuildCondBr(b, LLVMBuildExtractValue(b, pair, 1, ""), fill, done);
    LLVMPositionBuilderAtEnd(b, fill);
    if (index) bounds_word(c, JIT_BOUNDS_INDEX, index);
    if (axis) bounds_word(c, JIT_BOUNDS_AXIS, axis);
    if (size) bounds_word(c, JIT_BOUNDS_SIZE, size);
    bounds_word(c, JIT_BOUNDS_SITE, jit_cg_i64c(c, site));
    if (uns) bounds_word(c, JIT_BOUNDS_UNSIGNED, uns);
    if (kind != JIT_FAULT_INDEX) bounds_word(c, JIT_BOUNDS_KIND, jit_cg_i64c(c, kind));
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
}

/* A run-time check that Python would raise for (JIT_BOUNDSCHECK only): where
 * bad holds, the record gets kind at `at`'s place (and value in its INDEX
 * word), and the work-item leaves the kernel where it may; else it goes on
 * (the caller makes the result harmless). 0, or -1 with the error set. */
int jit_cg_fault_check(cg *c, const jit_node *at, LLVMValueRef bad, jit_fault kind,
                       LLVMValueRef value) {
    LLVMBuilderRef b = c->m->b;
    int site = check_site(c, at, "");
    if (site < 0) return jit_cg_fail(c, at, "out of memory");
    LLVMBasicBlockRef failed = jit_cg_block(c, "check.fail"), good = jit_cg_block(c, "check.ok");
    LLVMBuildCondBr(b, bad, failed, good);
    LLVMPositionBuilderAtEnd(b, failed);
    bounds_record(c, kind, value, NULL, NULL, NULL, site);
    bool leave = c->m->bc->leave && c->m->depth == 0; /* a device function cannot end the kernel */
    LLVMBuildBr(b, leave ? c->ret_block : good);
    LLVMPositionBuilderAtEnd(b, good);
    return 0;
}

/* Where a failed access in memory space sp goes instead: 16 bytes of that
 * space that no array uses (the largest element, a complex128, fits). */
static LLVMValueRef bounds_scratch(cg *c, jit_space sp) {
    struct cg_bounds *bc = c->m->bc;
    if (sp == JIT_GLOBAL) {
        LLVMValueRef at = jit_cg_i64c(c, JIT_BOUNDS_SCRATCH);
        return LLVMBuildGEP2(c->m->b, c->m->i64, c->record, &at, 1, "bounds.scratch");
    }
    if (sp == JIT_PRIVATE) {
        if (!c->private_scratch)
            c->private_scratch =
                jit_cg_entry_alloca(c, LLVMArrayType(c->m->i64, 2), "bounds.scratch");
        return c->private_scratch;
    }
    if (!bc->local_scratch) { /* named like the kernel's other local variables (jit_cg_scratch_array
                                 says why) */
        char name[200];
        snprintf(name, sizeof name, "%s.bounds_scratch", bc->entry);
        LLVMTypeRef t = LLVMArrayType(c->m->i64, 2);
        bc->local_scratch = LLVMAddGlobalInAddressSpace(c->m->tg.mod, t, name,
                                                        jit_target_space(&c->m->tg, JIT_LOCAL));
        LLVMSetInitializer(bc->local_scratch, LLVMGetUndef(t));
        LLVMSetLinkage(bc->local_scratch, LLVMInternalLinkage);
        LLVMSetAlignment(bc->local_scratch, 8);
    }
    return bc->local_scratch;
}

/* p (the element at idx, indices after the wrap; raw as written) checked:
 * what the access may use. The check is idx < shape unsigned, which a wrapped
 * index below -n fails too. */
LLVMValueRef jit_cg_bounds_check(cg *c, jit_node *n, cg_array *a, LLVMValueRef *raw,
                                 LLVMValueRef *idx, const bool *uns, const bool *proven,
                                 LLVMValueRef p) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef in[3], ok = NULL;
    for (int k = 0; k < a->t.ndim; k++) {
        in[k] = proven[k] ? LLVMConstInt(c->m->i1, 1, 0)
                          : LLVMBuildICmp(b, LLVMIntULT, idx[k], a->shape[k], "");
        if (!proven[k]) ok = ok ? LLVMBuildAnd(b, ok, in[k], "") : in[k];
    }
    if (!ok) return p; /* every axis was checked before the loop */
    int site = bounds_site(c, n, n->a);
    if (site < 0) return jit_cg_fail(c, n, "out of memory"), NULL;
    LLVMBasicBlockRef bad = jit_cg_block(c, "bounds.fail"), good = jit_cg_block(c, "bounds.ok");
    LLVMBuildCondBr(b, ok, good, bad);
    LLVMPositionBuilderAtEnd(b, bad);
    int last = a->t.ndim - 1; /* the record says the first axis out of range */
    LLVMValueRef axis = jit_cg_i64c(c, last), index = raw[last], size = a->shape[last],
                 u = jit_cg_i64c(c, uns[last]);
    for (int k = last - 1; k >= 0; k--) {
        LLVMValueRef out = LLVMBuildNot(b, in[k], "");
        axis = LLVMBuildSelect(b, out, jit_cg_i64c(c, k), axis, "");
        index = LLVMBuildSelect(b, out, raw[k], index, "");
        size = LLVMBuildSelect(b, out, a->shape[k], size, "");
        u = LLVMBuildSelect(b, out, jit_cg_i64c(c, uns[k]), u, "");
    }
    bounds_record(c, JIT_FAULT_INDEX, index, axis, size, u, site);
    bool leave = c->m->bc->leave && c->m->depth == 0; /* a device function cannot end the kernel */
    LLVMBuildBr(b, leave ? c->ret_block : good);
    LLVMPositionBuilderAtEnd(b, good);
    return leave ? p : LLVMBuildSelect(b, ok, p, bounds_scratch(c, (jit_space)a->t.space), "elem");
}
