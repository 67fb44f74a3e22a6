/* jit_codegen: typed tree -> LLVM IR.
 *
 * Numbers live in allocas (LLVM's mem2reg makes them registers); arrays are
 * (pointer, byte offset, shape, strides) held here, never in memory, which is
 * why an array variable is assigned once. Control flow that ends a block
 * (break, continue, return) leaves the builder in a fresh unreachable block,
 * so the walk never has to ask whether the current block is closed. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "jit_builtins.h"
#include "jit_codegen.h"

typedef struct {
    LLVMValueRef base, offset, shape[3], strides[3];
    jit_type t;
} cg_array;

/* An index known to be in range in the loop being generated (hoist_checks):
 * array variable arr's axis `axis` indexed by variable idx. */
typedef struct {
    int arr, axis, idx;
} cg_proof;
#define MAX_PROOFS 32

typedef struct cg_devfn {
    jit_func *f;
    jit_type args[16];
    int nargs;
    jit_type ret;
    LLVMValueRef fn;
    LLVMTypeRef fty;
} cg_devfn;

typedef struct {
    jit_tgt tg;
    LLVMBuilderRef b;
    const jit_target *target;
    LLVMTypeRef i1, i8, i32, i64, f32, f64, gptr, voidt;
    jit_error *err;
    struct cg_bounds *bc;       /* JIT_BOUNDSCHECK, else NULL */
    bool cancel, cancel_checks; /* JIT_CANCEL: the flag's parameter; checks in loops (no barrier) */
    cg_devfn *devfns;
    int ndevfns;
    int depth;
    unsigned long long
        local_bytes; /* of the ol.local_arrays made so far, device functions' included */
} cg_module;

typedef struct {
    cg_module *m;
    jit_func *f;
    LLVMValueRef fn;
    LLVMValueRef *vars;            /* allocas of number variables */
    cg_array *arrays;              /* array variables */
    LLVMValueRef uid[3], range[3]; /* the item, per user dimension */
    LLVMValueRef record,
        private_scratch;      /* JIT_BOUNDSCHECK: the bounds record; made at first need */
    LLVMValueRef cancel_flag; /* JIT_CANCEL: the flag's parameter */
    LLVMBasicBlockRef brk[64], cont[64];
    int nloops;
    LLVMBasicBlockRef ret_block;
    LLVMValueRef ret_slot;
    jit_type ret_type;
    struct {
        const jit_node *at;
        cg_array a;
    } * scratch; /* local/private arrays made so far */
    int nscratch;
    /* accesses known in range: the kernel's first nassumed (jit_func_assume_in_range),
     * then those checked before the loop being generated (hoist_checks) */
    cg_proof proven[MAX_PROOFS];
    int nproven, nassumed;
} cg;

static int fail(cg *c, const jit_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(cg *c, const jit_node *n, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return jit_error_at(c->m->err, c->f, n ? n->line : 0, n ? n->col : 0, "%s", what);
}

/* ---- types and conversions ---- */

/* The dtype a value of type t is computed in on this target. */
static jit_dtype dt_of(cg *c, jit_type t) {
    if (t.kind == JT_WEAK_INT) return JIT_I64;
    if (t.kind == JT_WEAK_FLOAT) return c->m->target->fp64 ? JIT_F64 : JIT_F32;
    if (t.kind == JT_WEAK_COMPLEX) return c->m->target->fp64 ? JIT_C128 : JIT_C64;
    return (jit_dtype)t.dtype;
}

static LLVMTypeRef ltype_dt(cg *c, jit_dtype d) {
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
static LLVMTypeRef ptr_in(cg *c, jit_space sp) {
    return LLVMPointerTypeInContext(c->m->tg.ctx, jit_target_space(&c->m->tg, sp));
}
static LLVMTypeRef ltype(cg *c, jit_type t) {
    return t.kind == JT_ATOMIC ? ptr_in(c, (jit_space)t.space) : ltype_dt(c, dt_of(c, t));
}
/* in memory (array elements, parameters): bool is a byte */
static LLVMTypeRef mtype_dt(cg *c, jit_dtype d) {
    return d == JIT_BOOL ? c->m->i8 : ltype_dt(c, d);
}

static LLVMValueRef cx_convert(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to);

static LLVMValueRef conv_dt(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to) {
    LLVMBuilderRef b = c->m->b;
    if (from == to) return v;
    if (jit_dtype_is_complex(from) || jit_dtype_is_complex(to)) return cx_convert(c, v, from, to);
    LLVMTypeRef tt = ltype_dt(c, to);
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

static LLVMValueRef conv(cg *c, LLVMValueRef v, jit_type from, jit_type to) {
    return conv_dt(c, v, dt_of(c, from), dt_of(c, to));
}

static LLVMValueRef i64c(cg *c, long long v) {
    return LLVMConstInt(c->m->i64, (unsigned long long)v, 1);
}

static LLVMValueRef entry_alloca(cg *c, LLVMTypeRef t, const char *name) {
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

static LLVMBasicBlockRef block(cg *c, const char *name) {
    return LLVMAppendBasicBlockInContext(c->m->tg.ctx, c->fn, name);
}

/* After a terminator: continue in a block nothing jumps to. */
static void dead_block(cg *c) { LLVMPositionBuilderAtEnd(c->m->b, block(c, "dead")); }

/* ---- expressions ---- */

static LLVMValueRef expr(cg *c, jit_node *n);
static int array_of(cg *c, jit_node *n, cg_array *out);

static LLVMValueRef truth(cg *c, jit_node *n) {
    LLVMValueRef v = expr(c, n);
    return v ? conv_dt(c, v, dt_of(c, n->type), JIT_BOOL) : NULL;
}

static bool const_nonneg(const jit_node *n) {
    return n->kind == N_CONST && n->type.kind != JT_WEAK_FLOAT && n->v.i >= 0;
}

/* ---- JIT_BOUNDSCHECK (jit.h says what the kernel records) ---- */

struct cg_bounds {
    bool leave; /* a failing work-item of the kernel returns: no barrier waits for it */
    const char *entry;
    char *sites; /* jit_artifact.bounds_sites so far */
    size_t len;
    int nsites;
    LLVMValueRef local_scratch; /* made at first need */
};

/* How many nodes of n's tree pred holds for (all when pred is NULL), device
 * functions' bodies included; too deep counts as many. */
static int count_nodes(const jit_node *n, bool (*pred)(const jit_node *), int depth) {
    if (!n) return 0;
    if (depth > 16) return 1 << 20;
    int k = !pred || pred(n);
    if (n->kind == N_REF && n->v.ref.kind == REF_DEVFUNC && n->v.ref.func)
        for (int i = 0; i < n->v.ref.func->nbody; i++)
            k += count_nodes(n->v.ref.func->body[i], pred, depth + 1);
    k += count_nodes(n->a, pred, depth) + count_nodes(n->b, pred, depth) +
         count_nodes(n->c, pred, depth);
    for (int i = 0; i < n->nkids; i++) k += count_nodes(n->kids[i], pred, depth);
    for (int i = 0; i < n->nbody; i++) k += count_nodes(n->body[i], pred, depth);
    for (int i = 0; i < n->norelse; i++) k += count_nodes(n->orelse[i], pred, depth);
    return k;
}

static bool is_barrier(const jit_node *n) {
    return n->kind == N_REF && n->v.ref.kind == REF_BUILTIN &&
           jit_builtins[n->v.ref.id].gen == GEN_BARRIER;
}

/* What keeps a loop's body from being generated twice (see short_loop):
 * inner loops (the copies would multiply) and scratch arrays (one per site). */
static bool stops_versioning(const jit_node *n) {
    return n->kind == S_FOR || n->kind == S_WHILE ||
           (n->kind == N_REF && n->v.ref.kind == REF_BUILTIN &&
            jit_builtins[n->v.ref.id].gen == GEN_SCRATCH);
}

/* What keeps a loop from being unrolled (see unroll_copies). */
static bool stops_unrolling(const jit_node *n) {
    return n->kind == S_FOR || n->kind == S_WHILE || n->kind == S_BREAK || n->kind == S_CONTINUE ||
           is_barrier(n);
}

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
    LLVMValueRef at = i64c(c, word);
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
    LLVMBasicBlockRef fill = block(c, "bounds.first"), done = block(c, "bounds.recorded");
    LLVMBuildCondBr(b, LLVMBuildExtractValue(b, pair, 1, ""), fill, done);
    LLVMPositionBuilderAtEnd(b, fill);
    if (index) bounds_word(c, JIT_BOUNDS_INDEX, index);
    if (axis) bounds_word(c, JIT_BOUNDS_AXIS, axis);
    if (size) bounds_word(c, JIT_BOUNDS_SIZE, size);
    bounds_word(c, JIT_BOUNDS_SITE, i64c(c, site));
    if (uns) bounds_word(c, JIT_BOUNDS_UNSIGNED, uns);
    if (kind != JIT_FAULT_INDEX) bounds_word(c, JIT_BOUNDS_KIND, i64c(c, kind));
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
}

/* A run-time check that Python would raise for (JIT_BOUNDSCHECK only): where
 * bad holds, the record gets kind at `at`'s place (and value in its INDEX
 * word), and the work-item leaves the kernel where it may; else it goes on
 * (the caller makes the result harmless). 0, or -1 with the error set. */
static int fault_check(cg *c, const jit_node *at, LLVMValueRef bad, jit_fault kind,
                       LLVMValueRef value) {
    LLVMBuilderRef b = c->m->b;
    int site = check_site(c, at, "");
    if (site < 0) return fail(c, at, "out of memory");
    LLVMBasicBlockRef failed = block(c, "check.fail"), good = block(c, "check.ok");
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
        LLVMValueRef at = i64c(c, JIT_BOUNDS_SCRATCH);
        return LLVMBuildGEP2(c->m->b, c->m->i64, c->record, &at, 1, "bounds.scratch");
    }
    if (sp == JIT_PRIVATE) {
        if (!c->private_scratch)
            c->private_scratch = entry_alloca(c, LLVMArrayType(c->m->i64, 2), "bounds.scratch");
        return c->private_scratch;
    }
    if (!bc->local_scratch) { /* named like the kernel's other local variables (scratch_array says
                                 why) */
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
static LLVMValueRef bounds_check(cg *c, jit_node *n, cg_array *a, LLVMValueRef *raw,
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
    if (site < 0) return fail(c, n, "out of memory"), NULL;
    LLVMBasicBlockRef bad = block(c, "bounds.fail"), good = block(c, "bounds.ok");
    LLVMBuildCondBr(b, ok, good, bad);
    LLVMPositionBuilderAtEnd(b, bad);
    int last = a->t.ndim - 1; /* the record says the first axis out of range */
    LLVMValueRef axis = i64c(c, last), index = raw[last], size = a->shape[last],
                 u = i64c(c, uns[last]);
    for (int k = last - 1; k >= 0; k--) {
        LLVMValueRef out = LLVMBuildNot(b, in[k], "");
        axis = LLVMBuildSelect(b, out, i64c(c, k), axis, "");
        index = LLVMBuildSelect(b, out, raw[k], index, "");
        size = LLVMBuildSelect(b, out, a->shape[k], size, "");
        u = LLVMBuildSelect(b, out, i64c(c, uns[k]), u, "");
    }
    bounds_record(c, JIT_FAULT_INDEX, index, axis, size, u, site);
    bool leave = c->m->bc->leave && c->m->depth == 0; /* a device function cannot end the kernel */
    LLVMBuildBr(b, leave ? c->ret_block : good);
    LLVMPositionBuilderAtEnd(b, good);
    return leave ? p : LLVMBuildSelect(b, ok, p, bounds_scratch(c, (jit_space)a->t.space), "elem");
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

static LLVMValueRef element_ptr(cg *c, jit_node *n, cg_array *a) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef idx[3] = {0}, raw[3] = {0}, p;
    bool uns[3] = {0}, proven[3] = {0};
    for (int k = 0; k < a->t.ndim; k++) {
        proven[k] = index_proven(c, n, k);
        jit_node *kn = n->kids[k];
        LLVMValueRef v = expr(c, kn);
        if (!v) return NULL;
        jit_dtype d = dt_of(c, kn->type);
        if (jit_dtype_is_signed(d))
            v = conv_dt(c, v, d, JIT_I64);
        else if (d != JIT_U64)
            v = LLVMBuildZExt(b, v, c->m->i64, ""); /* bool, narrow unsigned */
        raw[k] = v;
        uns[k] = !jit_dtype_is_signed(d);
        if (jit_dtype_is_signed(d) && !const_nonneg(kn) && !proven[k]) /* Python's a[-1] */
            v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, v, i64c(c, 0), ""),
                                LLVMBuildAdd(b, v, a->shape[k], ""), v, "");
        idx[k] = v;
    }
    LLVMValueRef byte;
    if (a->t.layout == JIT_LAYOUT_C) {
        LLVMValueRef lin = idx[0];
        for (int k = 1; k < a->t.ndim; k++)
            lin = LLVMBuildAdd(b, LLVMBuildMul(b, lin, a->shape[k], ""), idx[k], "");
        LLVMValueRef base = LLVMBuildGEP2(b, c->m->i8, a->base, &a->offset, 1, "");
        p = LLVMBuildGEP2(b, mtype_dt(c, a->t.dtype), base, &lin, 1, "elem");
    } else {
        byte = a->offset;
        for (int k = 0; k < a->t.ndim; k++)
            byte = LLVMBuildAdd(b, byte, LLVMBuildMul(b, idx[k], a->strides[k], ""), "");
        p = LLVMBuildGEP2(b, c->m->i8, a->base, &byte, 1, "elem");
    }
    return c->m->bc ? bounds_check(c, n, a, raw, idx, uns, proven, p) : p;
}

/* A complex element is aligned as its parts are (NumPy's complex128 to 8). */
static int elem_align(jit_dtype d) {
    return jit_dtype_is_complex(d) ? jit_dtype_size(d) / 2 : jit_dtype_size(d);
}

static LLVMValueRef load_elem(cg *c, LLVMValueRef p, jit_dtype d) {
    LLVMValueRef v = LLVMBuildLoad2(c->m->b, mtype_dt(c, d), p, "");
    LLVMSetAlignment(v, (unsigned)elem_align(d));
    if (d == JIT_BOOL) v = LLVMBuildICmp(c->m->b, LLVMIntNE, v, LLVMConstInt(c->m->i8, 0, 0), "");
    return v;
}

static void store_elem(cg *c, LLVMValueRef p, LLVMValueRef v, jit_dtype d) {
    if (d == JIT_BOOL) v = LLVMBuildZExt(c->m->b, v, c->m->i8, "");
    LLVMValueRef s = LLVMBuildStore(c->m->b, v, p);
    LLVMSetAlignment(s, (unsigned)elem_align(d));
}

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
 * binop's check has recorded it). */
static LLVMValueRef int_pow(cg *c, LLVMValueRef a, LLVMValueRef n, bool is_signed) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = block(c, "ipow"),
                      done = block(c, "ipow.done");
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

static LLVMValueRef math1(cg *c, const char *name, jit_dtype d, LLVMValueRef x) {
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
    LLVMValueRef fl = math1(c, "floor", d, div);
    fl = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, LLVMBuildFSub(b, div, fl, ""), half, ""),
                         LLVMBuildFAdd(b, fl, one, ""), fl, "");
    LLVMValueRef quot = LLVMBuildFDiv(b, x, y, "");
    LLVMValueRef cs[2] = {zero, quot};
    LLVMValueRef signed_zero = jit_target_math(&c->m->tg, "copysign", d == JIT_F64, cs, 2);
    LLVMValueRef r =
        LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNE, div, zero, ""), fl, signed_zero, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, zero, ""), quot, r, "");
}

/* ---- complex numbers ----
 *
 * A complex64/complex128 value is a <2 x float>/<2 x double> (real first, as
 * NumPy lays them out in memory and OpenCL's float2/double2 pass by value),
 * computed on its parts with real builtins. The formulas are NumPy's where it
 * has its own (multiplication, Smith's division, expm1, log1p, integer powers)
 * and C99's Annex G otherwise (NumPy calls the C library's cexp, clog, csqrt,
 * csin, ccos, ctanh), with its special values where they cost a select. */

typedef struct {
    cg *c;
    jit_dtype pd; /* the parts' dtype: float32 or float64 */
    LLVMBuilderRef b;
} cx;

static cx cx_of(cg *c, jit_dtype d) { return (cx){c, jit_complex_part(d), c->m->b}; }
static LLVMValueRef cx_k(cx *x, double v) { return LLVMConstReal(ltype_dt(x->c, x->pd), v); }
static LLVMValueRef cx_re(cx *x, LLVMValueRef z) {
    return LLVMBuildExtractElement(x->b, z, LLVMConstInt(x->c->m->i32, 0, 0), "re");
}
static LLVMValueRef cx_im(cx *x, LLVMValueRef z) {
    return LLVMBuildExtractElement(x->b, z, LLVMConstInt(x->c->m->i32, 1, 0), "im");
}
static LLVMValueRef cx_make(cx *x, LLVMValueRef re, LLVMValueRef im) {
    LLVMTypeRef vt = LLVMVectorType(ltype_dt(x->c, x->pd), 2);
    LLVMValueRef z =
        LLVMBuildInsertElement(x->b, LLVMGetUndef(vt), re, LLVMConstInt(x->c->m->i32, 0, 0), "");
    return LLVMBuildInsertElement(x->b, z, im, LLVMConstInt(x->c->m->i32, 1, 0), "");
}
static LLVMValueRef cx_add(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFAdd(x->b, a, b, "");
}
static LLVMValueRef cx_sub(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFSub(x->b, a, b, "");
}
static LLVMValueRef cx_mul(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFMul(x->b, a, b, "");
}
static LLVMValueRef cx_div(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFDiv(x->b, a, b, "");
}
static LLVMValueRef cx_fn(cx *x, const char *name, LLVMValueRef a) {
    return math1(x->c, name, x->pd, a);
}
static LLVMValueRef cx_fn2(cx *x, const char *name, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef args[2] = {a, b};
    return jit_target_math(&x->c->m->tg, name, x->pd == JIT_F64, args, 2);
}
static LLVMValueRef cx_cmp(cx *x, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(x->b, p, a, b, "");
}
static LLVMValueRef cx_sel(cx *x, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(x->b, cond, a, b, "");
}
static LLVMValueRef cx_and(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildAnd(x->b, a, b, "");
}
static LLVMValueRef cx_or(cx *x, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildOr(x->b, a, b, "");
}
/* |a| < inf: false for inf and NaN */
static LLVMValueRef cx_finite(cx *x, LLVMValueRef a) {
    return cx_cmp(x, LLVMRealOLT, cx_fn(x, "fabs", a), cx_k(x, 1.0 / 0.0));
}

/* (a + bi)(c + di) as NumPy: the plain formula. */
static void cx_mul_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c, LLVMValueRef d,
                         LLVMValueRef *re, LLVMValueRef *im) {
    *re = cx_sub(x, cx_mul(x, a, c), cx_mul(x, b, d));
    *im = cx_add(x, cx_mul(x, a, d), cx_mul(x, b, c));
}

static LLVMValueRef cx_times(cx *x, LLVMValueRef p, LLVMValueRef q) {
    LLVMValueRef re, im;
    cx_mul_parts(x, cx_re(x, p), cx_im(x, p), cx_re(x, q), cx_im(x, q), &re, &im);
    return cx_make(x, re, im);
}

/* p / q by Smith's algorithm, as NumPy: no overflow of c*c + d*d, and a zero
 * divisor gives NumPy's infinities and NaNs. */
static LLVMValueRef cx_quot(cx *x, LLVMValueRef p, LLVMValueRef q) {
    LLVMValueRef a = cx_re(x, p), b = cx_im(x, p), c = cx_re(x, q), d = cx_im(x, q);
    LLVMValueRef ac = cx_fn(x, "fabs", c), ad = cx_fn(x, "fabs", d), one = cx_k(x, 1);
    /* |c| >= |d| */
    LLVMValueRef rat1 = cx_div(x, d, c);
    LLVMValueRef scl1 = cx_div(x, one, cx_add(x, c, cx_mul(x, d, rat1)));
    LLVMValueRef re1 = cx_mul(x, cx_add(x, a, cx_mul(x, b, rat1)), scl1);
    LLVMValueRef im1 = cx_mul(x, cx_sub(x, b, cx_mul(x, a, rat1)), scl1);
    /* both zero: a / |c|, b / |c| */
    LLVMValueRef zero =
        cx_and(x, cx_cmp(x, LLVMRealOEQ, ac, cx_k(x, 0)), cx_cmp(x, LLVMRealOEQ, ad, cx_k(x, 0)));
    re1 = cx_sel(x, zero, cx_div(x, a, ac), re1);
    im1 = cx_sel(x, zero, cx_div(x, b, ac), im1);
    /* |c| < |d| (or NaN) */
    LLVMValueRef rat2 = cx_div(x, c, d);
    LLVMValueRef scl2 = cx_div(x, one, cx_add(x, d, cx_mul(x, c, rat2)));
    LLVMValueRef re2 = cx_mul(x, cx_add(x, cx_mul(x, a, rat2), b), scl2);
    LLVMValueRef im2 = cx_mul(x, cx_sub(x, cx_mul(x, b, rat2), a), scl2);
    LLVMValueRef first = cx_cmp(x, LLVMRealOGE, ac, ad);
    return cx_make(x, cx_sel(x, first, re1, re2), cx_sel(x, first, im1, im2));
}

/* exp(a + bi): C99 cexp. */
static void cx_exp_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                         LLVMValueRef *im) {
    LLVMValueRef e = cx_fn(x, "exp", a), zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0);
    LLVMValueRef r = cx_mul(x, e, cx_fn(x, "cos", b)), i = cx_mul(x, e, cx_fn(x, "sin", b));
    LLVMValueRef breal = cx_cmp(x, LLVMRealOEQ, b, zero); /* exp(a) + bi, b's zero kept */
    r = cx_sel(x, breal, e, r);
    i = cx_sel(x, breal, b, i);
    LLVMValueRef bbad = LLVMBuildNot(x->b, cx_finite(x, b), "");
    LLVMValueRef pinf = cx_and(x, bbad, cx_cmp(x, LLVMRealOEQ, a, inf)),
                 ninf = cx_and(x, bbad, cx_cmp(x, LLVMRealOEQ, a, LLVMBuildFNeg(x->b, inf, "")));
    r = cx_sel(x, pinf, inf, cx_sel(x, ninf, zero, r));
    i = cx_sel(x, pinf, cx_sub(x, b, b), cx_sel(x, ninf, cx_fn2(x, "copysign", zero, b), i));
    *re = r;
    *im = i;
}

/* log(a + bi) = log|z| + i arg z; near |z| = 1 from log1p, where log(hypot)
 * would lose the digits. */
static void cx_log_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                         LLVMValueRef *im) {
    LLVMValueRef aa = cx_fn(x, "fabs", a), ab = cx_fn(x, "fabs", b);
    LLVMValueRef hi = cx_fn2(x, "fmax", aa, ab), lo = cx_fn2(x, "fmin", aa, ab);
    LLVMValueRef one = cx_k(x, 1);
    LLVMValueRef far = cx_fn(x, "log", cx_fn2(x, "hypot", a, b));
    LLVMValueRef t =
        cx_add(x, cx_mul(x, cx_sub(x, hi, one), cx_add(x, hi, one)), cx_mul(x, lo, lo));
    LLVMValueRef near = cx_mul(x, cx_k(x, 0.5), cx_fn(x, "log1p", t));
    LLVMValueRef is_near = /* fmax and fmin ignore a NaN: an ordered pair only */
        cx_and(x,
               cx_and(x, cx_cmp(x, LLVMRealOGT, hi, cx_k(x, 0.5)),
                      cx_cmp(x, LLVMRealOLT, hi, cx_k(x, 2))),
               cx_cmp(x, LLVMRealORD, a, b));
    *re = cx_sel(x, is_near, near, far);
    *im = cx_fn2(x, "atan2", b, a);
}

/* sqrt(a + bi): C99 csqrt, scaled where a + |z| would overflow. */
static void cx_sqrt_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                          LLVMValueRef *im) {
    LLVMValueRef zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0), half = cx_k(x, 0.5), two = cx_k(x, 2);
    LLVMValueRef aa = cx_fn(x, "fabs", a), ab = cx_fn(x, "fabs", b);
    LLVMValueRef big_at = cx_k(x, x->pd == JIT_F64 ? 0x1p1020 : 0x1p124);
    LLVMValueRef big =
        cx_or(x, cx_cmp(x, LLVMRealOGT, aa, big_at), cx_cmp(x, LLVMRealOGT, ab, big_at));
    LLVMValueRef sa = cx_sel(x, big, cx_mul(x, a, cx_k(x, 0.25)), a),
                 sb = cx_sel(x, big, cx_mul(x, b, cx_k(x, 0.25)), b);
    LLVMValueRef h = cx_fn2(x, "hypot", sa, sb);
    LLVMValueRef tp = cx_fn(x, "sqrt", cx_mul(x, cx_add(x, sa, h), half));
    LLVMValueRef tn = cx_fn(x, "sqrt", cx_mul(x, cx_sub(x, h, sa), half));
    LLVMValueRef pos = cx_cmp(x, LLVMRealOGE, a, zero);
    LLVMValueRef r = cx_sel(x, pos, tp, cx_div(x, cx_fn(x, "fabs", sb), cx_mul(x, two, tn)));
    LLVMValueRef i =
        cx_sel(x, pos, cx_div(x, sb, cx_mul(x, two, tp)), cx_fn2(x, "copysign", tn, sb));
    r = cx_sel(x, big, cx_mul(x, r, two), r);
    i = cx_sel(x, big, cx_mul(x, i, two), i);
    /* special values, the most binding last */
    LLVMValueRef bmb = cx_sub(x, b, b); /* 0, or NaN for an infinite or NaN b */
    LLVMValueRef ninf = cx_cmp(x, LLVMRealOEQ, a, LLVMBuildFNeg(x->b, inf, ""));
    r = cx_sel(x, ninf, cx_fn(x, "fabs", bmb), r);
    i = cx_sel(x, ninf, cx_fn2(x, "copysign", inf, b), i);
    LLVMValueRef pinf = cx_cmp(x, LLVMRealOEQ, a, inf);
    r = cx_sel(x, pinf, a, r);
    i = cx_sel(x, pinf, cx_fn2(x, "copysign", bmb, b), i);
    LLVMValueRef anan = cx_cmp(x, LLVMRealUNO, a, a);
    r = cx_sel(x, anan, a, r);
    i = cx_sel(x, anan, cx_add(x, a, b), i);
    LLVMValueRef binf = cx_cmp(x, LLVMRealOEQ, ab, inf);
    r = cx_sel(x, binf, inf, r);
    i = cx_sel(x, binf, b, i);
    LLVMValueRef z = cx_and(x, cx_cmp(x, LLVMRealOEQ, a, zero), cx_cmp(x, LLVMRealOEQ, b, zero));
    r = cx_sel(x, z, zero, r);
    i = cx_sel(x, z, b, i);
    *re = r;
    *im = i;
}

/* sin(a + bi) = sin a cosh b + i cos a sinh b; cos(a + bi) = cos a cosh b -
 * i sin a sinh b; zero parts keep their zeros where the products would be
 * 0 * inf or NaN * 0. */
static void cx_sincos_parts(cx *x, bool is_cos, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                            LLVMValueRef *im) {
    LLVMValueRef zero = cx_k(x, 0);
    LLVMValueRef sa = cx_fn(x, "sin", a), ca = cx_fn(x, "cos", a), chb = cx_fn(x, "cosh", b),
                 shb = cx_fn(x, "sinh", b);
    LLVMValueRef azero = cx_cmp(x, LLVMRealOEQ, a, zero),
                 bzero_abad = cx_and(x, cx_cmp(x, LLVMRealOEQ, b, zero),
                                     LLVMBuildNot(x->b, cx_finite(x, a), ""));
    /* a infinite or NaN, b infinite: the infinite part's sign is unspecified;
     * glibc's (which NumPy shows) is + */
    LLVMValueRef inf = cx_k(x, 1.0 / 0.0), nan = cx_k(x, 0.0 / 0.0);
    LLVMValueRef both_bad = cx_and(x, LLVMBuildNot(x->b, cx_finite(x, a), ""),
                                   cx_cmp(x, LLVMRealOEQ, cx_fn(x, "fabs", b), inf));
    LLVMValueRef r, i;
    if (!is_cos) {
        r = cx_sel(x, azero, a, cx_mul(x, sa, chb));
        i = cx_sel(x, bzero_abad, b, cx_mul(x, ca, shb));
        r = cx_sel(x, both_bad, nan, r);
        i = cx_sel(x, both_bad, inf, i);
    } else {
        r = cx_mul(x, ca, chb);
        LLVMValueRef i0 =
            LLVMBuildFNeg(x->b, cx_mul(x, a, cx_fn2(x, "copysign", cx_k(x, 1), b)), "");
        i = cx_sel(x, azero, i0, LLVMBuildFNeg(x->b, cx_mul(x, sa, shb), ""));
        /* glibc's ccosh(-b + ai): a infinite or NaN, b finite: (NaN, +0 for a zero b,
         * else NaN); a zero, b NaN: (NaN, a) */
        LLVMValueRef abad_bfin =
            cx_and(x, LLVMBuildNot(x->b, cx_finite(x, a), ""), cx_finite(x, b));
        i = cx_sel(x, abad_bfin, cx_sel(x, cx_cmp(x, LLVMRealOEQ, b, zero), zero, nan), i);
        r = cx_sel(x, abad_bfin, nan, r);
        LLVMValueRef azero_bnan = cx_and(x, azero, cx_cmp(x, LLVMRealUNO, b, b));
        i = cx_sel(x, azero_bnan, a, i);
        r = cx_sel(x, both_bad, inf, r);
        i = cx_sel(x, both_bad, nan, i);
    }
    *re = r;
    *im = i;
}

/* tanh(a + bi): Kahan's formula (as FreeBSD's ctanh); past |a| of 22 (9 for
 * float32) tanh a is 1 to the last bit. */
static void cx_tanh_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                          LLVMValueRef *im) {
    LLVMValueRef one = cx_k(x, 1), zero = cx_k(x, 0);
    LLVMValueRef t = cx_fn(x, "tan", b), s = cx_fn(x, "sinh", a);
    LLVMValueRef beta = cx_add(x, one, cx_mul(x, t, t));
    LLVMValueRef rho = cx_fn(x, "sqrt", cx_add(x, one, cx_mul(x, s, s)));
    LLVMValueRef den = cx_add(x, one, cx_mul(x, cx_mul(x, beta, s), s));
    LLVMValueRef r = cx_div(x, cx_mul(x, cx_mul(x, beta, rho), s), den), i = cx_div(x, t, den);
    LLVMValueRef big =
        cx_cmp(x, LLVMRealOGE, cx_fn(x, "fabs", a), cx_k(x, x->pd == JIT_F64 ? 22 : 9));
    LLVMValueRef ib =
        cx_mul(x, cx_mul(x, cx_mul(x, cx_k(x, 4), cx_fn(x, "sin", b)), cx_fn(x, "cos", b)),
               cx_fn(x, "exp", cx_mul(x, cx_k(x, -2), cx_fn(x, "fabs", a))));
    ib = cx_sel(x, cx_finite(x, b), ib, cx_fn2(x, "copysign", zero, b));
    r = cx_sel(x, big, cx_fn2(x, "copysign", one, a), r);
    i = cx_sel(x, big, ib, i);
    LLVMValueRef breal = cx_cmp(x, LLVMRealOEQ, b, zero);
    r = cx_sel(x, breal, cx_fn(x, "tanh", a), r);
    i = cx_sel(x, breal, b, i);
    LLVMValueRef aimag = cx_cmp(x, LLVMRealOEQ, a, zero); /* i tan b, a's zero kept */
    r = cx_sel(x, aimag, a, r);
    i = cx_sel(x, aimag, t, i);
    /* glibc's: a not infinite and not zero, b infinite or NaN: NaN */
    LLVMValueRef nan_case =
        cx_and(x,
               cx_and(x, cx_cmp(x, LLVMRealUNE, cx_fn(x, "fabs", a), cx_k(x, 1.0 / 0.0)),
                      cx_cmp(x, LLVMRealUNE, a, zero)),
               LLVMBuildNot(x->b, cx_finite(x, b), ""));
    r = cx_sel(x, nan_case, cx_k(x, 0.0 / 0.0), r);
    i = cx_sel(x, nan_case, cx_k(x, 0.0 / 0.0), i);
    *re = r;
    *im = i;
}

/* Kahan's formulas ("Branch cuts for complex elementary functions", as
 * Julia's): from p = sqrt(1 - z) and q = sqrt(1 + z), which keep every
 * digit near the branch points and overflow nowhere.
 * asin(z) = atan2(a, Re(p q)) + i asinh(Im(conj(p) q)),
 * acos(z) = 2 atan2(Re p, Re q) + i asinh(Im(conj(q) p)). */
static void cx_asin_acos_parts(cx *x, bool is_acos, LLVMValueRef a, LLVMValueRef b,
                               LLVMValueRef *re, LLVMValueRef *im) {
    LLVMValueRef one = cx_k(x, 1), zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0);
    LLVMValueRef halfpi = cx_k(x, 1.5707963267948966);
    LLVMValueRef pr, pi, qr, qi;
    cx_sqrt_parts(x, cx_sub(x, one, a), LLVMBuildFNeg(x->b, b, ""), &pr, &pi);
    cx_sqrt_parts(x, cx_add(x, one, a), b, &qr, &qi);
    LLVMValueRef anan = cx_cmp(x, LLVMRealUNO, a, a), bnan = cx_cmp(x, LLVMRealUNO, b, b);
    LLVMValueRef ainf = cx_cmp(x, LLVMRealOEQ, cx_fn(x, "fabs", a), inf),
                 binf = cx_cmp(x, LLVMRealOEQ, cx_fn(x, "fabs", b), inf);
    LLVMValueRef r, i;
    if (!is_acos) {
        r = cx_fn2(x, "atan2", a, cx_sub(x, cx_mul(x, pr, qr), cx_mul(x, pi, qi)));
        r = cx_sel(x, cx_cmp(x, LLVMRealOEQ, a, zero), a, r);
        r = cx_sel(x, ainf, cx_fn2(x, "copysign", halfpi, a), r);
        i = cx_fn(x, "asinh",
                  cx_fn2(x, "copysign", cx_sub(x, cx_mul(x, pr, qi), cx_mul(x, pi, qr)), b));
        /* both infinite: (+-pi/4, b); a infinite, b NaN: (NaN, inf) */
        r = cx_sel(x, cx_and(x, ainf, binf), cx_fn2(x, "copysign", cx_k(x, 0.7853981633974483), a),
                   r);
        i = cx_sel(x, cx_and(x, ainf, binf), b, i);
        r = cx_sel(x, cx_and(x, ainf, bnan), b, r);
        i = cx_sel(x, cx_and(x, ainf, bnan), inf, i);
    } else {
        r = cx_mul(x, cx_k(x, 2), cx_fn2(x, "atan2", pr, qr));
        i = cx_fn(x, "asinh", cx_sub(x, cx_mul(x, qr, pi), cx_mul(x, qi, pr)));
        /* NaN parts as C99 (glibc): a NaN a gives (NaN, -b) for an infinite b,
         * else NaN; a NaN b gives (NaN, -inf) for an infinite a, (pi/2, b)
         * for a zero a, else NaN */
        LLVMValueRef azero = cx_cmp(x, LLVMRealOEQ, a, zero);
        LLVMValueRef bn_r = cx_sel(x, azero, halfpi, b);
        LLVMValueRef bn_i = cx_sel(x, ainf, LLVMBuildFNeg(x->b, inf, ""), b);
        r = cx_sel(x, bnan, bn_r, r);
        i = cx_sel(x, bnan, bn_i, i);
        r = cx_sel(x, anan, a, r);
        i = cx_sel(x, anan, cx_sel(x, binf, LLVMBuildFNeg(x->b, b, ""), a), i);
        /* both infinite: (pi/4 or 3 pi/4, -b) */
        LLVMValueRef both = cx_and(x, ainf, binf);
        r = cx_sel(x, both,
                   cx_sel(x, cx_cmp(x, LLVMRealOGT, a, zero), cx_k(x, 0.7853981633974483),
                          cx_k(x, 2.356194490192345)),
                   r);
        i = cx_sel(x, both, LLVMBuildFNeg(x->b, b, ""), i);
        /* zero: (pi/2, -b) */
        LLVMValueRef z = cx_and(x, azero, cx_cmp(x, LLVMRealOEQ, b, zero));
        r = cx_sel(x, z, halfpi, r);
        i = cx_sel(x, z, LLVMBuildFNeg(x->b, b, ""), i);
    }
    *re = r;
    *im = i;
}

/* atanh(a + bi) by Kahan's formula (as Julia's): past sqrt(max)/4 it is
 * 1/z's real part + i pi/2; else from |a| (the result's signs follow a) as
 * log1p(4x / ((1 - x)^2 + y^2)) / 4 + i atan2(2y, (1 - x)(1 + x) - y^2) / 2,
 * y offset by rho so that x = 1, y = 0 divides by no zero. */
static void cx_atanh_parts(cx *x, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *re,
                           LLVMValueRef *im) {
    bool f64 = x->pd == JIT_F64;
    double theta_v = f64 ? 3.3519519824856493e153 : 4.611686e18;
    LLVMValueRef one = cx_k(x, 1), zero = cx_k(x, 0), inf = cx_k(x, 1.0 / 0.0);
    LLVMValueRef halfpi = cx_k(x, 1.5707963267948966), theta = cx_k(x, theta_v),
                 rho = cx_k(x, 1.0 / theta_v);
    LLVMValueRef ax = cx_fn(x, "fabs", a), ay = cx_fn(x, "fabs", b);
    /* far out: Re(1/z) by Smith's division, i pi/2 with b's sign */
    LLVMValueRef q1 = cx_div(x, b, a), q2 = cx_div(x, a, b);
    LLVMValueRef far_r =
        cx_sel(x, cx_cmp(x, LLVMRealOGE, ax, ay), cx_div(x, one, cx_add(x, a, cx_mul(x, b, q1))),
               cx_div(x, q2, cx_add(x, cx_mul(x, a, q2), b)));
    LLVMValueRef far_i = cx_fn2(x, "copysign", halfpi, b);
    LLVMValueRef binf = cx_cmp(x, LLVMRealOEQ, ay, inf), bnan = cx_cmp(x, LLVMRealUNO, b, b);
    LLVMValueRef ainf = cx_cmp(x, LLVMRealOEQ, ax, inf);
    far_r = cx_sel(x, cx_or(x, binf, cx_and(x, bnan, ainf)), cx_fn2(x, "copysign", zero, a), far_r);
    far_i = cx_sel(x, bnan, b, far_i);
    /* a NaN a and a finite b: NaN (C99) */
    far_i =
        cx_sel(x, cx_and(x, cx_cmp(x, LLVMRealUNO, a, a), LLVMBuildNot(x->b, binf, "")), a, far_i);
    LLVMValueRef far =
        cx_or(x, cx_cmp(x, LLVMRealOGT, ax, theta), cx_cmp(x, LLVMRealOGT, ay, theta));
    /* near: z times the sign of a */
    LLVMValueRef beta = cx_fn2(x, "copysign", one, a);
    LLVMValueRef xr = ax, y = cx_mul(x, b, beta);
    LLVMValueRef ayr = cx_add(x, ay, rho), ysq = cx_mul(x, ayr, ayr);
    LLVMValueRef omx = cx_sub(x, one, xr);
    LLVMValueRef xi =
        cx_mul(x,
               cx_fn(x, "log1p",
                     cx_div(x, cx_mul(x, cx_k(x, 4), xr), cx_add(x, cx_mul(x, omx, omx), ysq))),
               cx_k(x, 0.25));
    xi = cx_sel(x, cx_cmp(x, LLVMRealOEQ, xr, zero), xr, xi);
    LLVMValueRef eta = cx_mul(x,
                              cx_fn2(x, "atan2", cx_mul(x, cx_k(x, 2), y),
                                     cx_sub(x, cx_mul(x, omx, cx_add(x, one, xr)), ysq)),
                              cx_k(x, 0.5));
    /* x = 1: log(sqrt(sqrt(4 + y^2)) / sqrt|y|), (pi/2 + atan(|y| / 2)) / 2 (Julia adds
     * rho to |y| here too, which a tiny y would notice) */
    LLVMValueRef xone = cx_cmp(x, LLVMRealOEQ, xr, one);
    LLVMValueRef xi1 =
        cx_fn(x, "log",
              cx_div(x, cx_fn(x, "sqrt", cx_fn(x, "sqrt", cx_add(x, cx_k(x, 4), cx_mul(x, y, y)))),
                     cx_fn(x, "sqrt", ay)));
    LLVMValueRef eta1 = cx_mul(
        x,
        cx_fn2(x, "copysign", cx_add(x, halfpi, cx_fn(x, "atan", cx_mul(x, ay, cx_k(x, 0.5)))), y),
        cx_k(x, 0.5));
    LLVMValueRef yzero = cx_cmp(x, LLVMRealOEQ, y, zero);
    xi1 = cx_sel(x, yzero, inf, xi1);
    eta1 = cx_sel(x, yzero, y, eta1);
    xi = cx_sel(x, xone, xi1, xi);
    eta = cx_sel(x, xone, eta1, eta);
    *re = cx_sel(x, far, far_r, cx_mul(x, beta, xi));
    *im = cx_sel(x, far, far_i, cx_mul(x, beta, eta));
}

/* fn (a complex_math name jit_infer allowed) of z. */
static LLVMValueRef cx_math(cx *x, const char *fn, LLVMValueRef z) {
    LLVMValueRef a = cx_re(x, z), b = cx_im(x, z), re, im;
    if (!strcmp(fn, "exp")) {
        cx_exp_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "log")) {
        cx_log_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "sqrt")) {
        cx_sqrt_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "sin") || !strcmp(fn, "cos")) {
        cx_sincos_parts(x, fn[0] == 'c', a, b, &re, &im);
    } else if (!strcmp(fn, "tanh")) {
        cx_tanh_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "expm1")) { /* NumPy's nc_expm1 */
        LLVMValueRef h = cx_fn(x, "sin", cx_mul(x, b, cx_k(x, 0.5)));
        re = cx_sub(x, cx_mul(x, cx_fn(x, "expm1", a), cx_fn(x, "cos", b)),
                    cx_mul(x, cx_mul(x, cx_k(x, 2), h), h));
        im = cx_mul(x, cx_fn(x, "exp", a), cx_fn(x, "sin", b));
    } else if (!strcmp(fn, "log2") || !strcmp(fn, "log10")) { /* NumPy's: log times log2(e) */
        LLVMValueRef k = cx_k(x, fn[3] == '2' ? 1.4426950408889634 : 0.4342944819032518);
        cx_log_parts(x, a, b, &re, &im);
        re = cx_mul(x, re, k);
        im = cx_mul(x, im, k);
    } else if (!strcmp(fn, "asin") || !strcmp(fn, "acos")) {
        cx_asin_acos_parts(x, fn[1] == 'c', a, b, &re, &im);
    } else if (!strcmp(fn, "atanh")) {
        cx_atanh_parts(x, a, b, &re, &im);
    } else if (!strcmp(fn, "sinh") || !strcmp(fn, "cosh") || !strcmp(fn, "tan") ||
               !strcmp(fn, "asinh") || !strcmp(fn, "atan")) {
        /* C99's identities through i z = -b + ai: sinh z = -i sin(iz), tan z =
         * -i tanh(iz), asinh z = -i asin(iz), atan z = -i atanh(iz); and cosh z =
         * cos(-iz), b - ai (glibc's ccos(w) is ccosh(iw), and ccosh is not even
         * in its NaNs' zeros) */
        LLVMValueRef ia = LLVMBuildFNeg(x->b, b, ""), r, i;
        if (fn[0] == 'c')
            cx_sincos_parts(x, true, b, LLVMBuildFNeg(x->b, a, ""), &r, &i);
        else if (fn[0] == 's')
            cx_sincos_parts(x, false, ia, a, &r, &i);
        else if (!strcmp(fn, "tan"))
            cx_tanh_parts(x, ia, a, &r, &i);
        else if (!strcmp(fn, "asinh"))
            cx_asin_acos_parts(x, false, ia, a, &r, &i);
        else
            cx_atanh_parts(x, ia, a, &r, &i);
        if (fn[0] == 'c') {
            re = r, im = i;
        } else {
            re = i, im = LLVMBuildFNeg(x->b, r, "");
        }
    } else if (!strcmp(fn, "acosh")) { /* acosh z = +-i acos z: real part >= 0, b's sign */
        LLVMValueRef r, i;
        cx_asin_acos_parts(x, true, a, b, &r, &i);
        re = cx_fn(x, "fabs", i);
        im = cx_fn2(x, "copysign", r, b);
    } else if (!strcmp(fn, "rint")) { /* numpy.rint: both parts */
        re = cx_fn(x, "rint", a);
        im = cx_fn(x, "rint", b);
    } else { /* log1p: NumPy's nc_log1p */
        LLVMValueRef a1 = cx_add(x, a, cx_k(x, 1));
        re = cx_fn(x, "log", cx_fn2(x, "hypot", a1, b));
        im = cx_fn2(x, "atan2", b, a1);
    }
    return cx_make(x, re, im);
}

/* p ** q as NumPy's npy_cpow: an integer exponent of magnitude below 100 by
 * squaring (1/p**-n for negative n), else exp(q log p), with 0 ** q as NumPy
 * has it (0 for a positive real q, NaN otherwise). A constant exponent
 * unrolls its own squarings; a runtime one (ol.pow(x, 2) passes 2 as an
 * argument) takes all seven, selecting NumPy's products per bit, since
 * exp(2 log p) is a few ulps from p * p where NumPy gives p * p. */
static LLVMValueRef cx_int_pow(cx *x, LLVMValueRef p, LLVMValueRef qr) {
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(qr));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMValueRef n = LLVMBuildFPToSI(x->b, cx_fn(x, "fabs", qr), i32, "");
    LLVMValueRef sq = cx_times(x, p, p);
    /* NumPy's own n = 1, 2, 3 skip the leading 1 * p (which is NaN where p is infinite) */
    LLVMValueRef acc = cx_make(x, cx_k(x, 1), cx_k(x, 0)), pw = p;
    for (int bit = 1; bit < 128; bit <<= 1) {
        LLVMValueRef set =
            LLVMBuildICmp(x->b, LLVMIntNE, LLVMBuildAnd(x->b, n, LLVMConstInt(i32, bit, 0), ""),
                          LLVMConstInt(i32, 0, 0), "");
        acc = cx_sel(x, set, cx_times(x, acc, pw), acc);
        if (bit < 64) pw = cx_times(x, pw, pw);
    }
    LLVMValueRef r = acc;
    LLVMValueRef small[3] = {p, sq, cx_times(x, p, sq)};
    for (int k = 3; k >= 1; k--)
        r = cx_sel(x, LLVMBuildICmp(x->b, LLVMIntEQ, n, LLVMConstInt(i32, k, 0), ""), small[k - 1],
                   r);
    LLVMValueRef one = cx_make(x, cx_k(x, 1), cx_k(x, 0));
    return cx_sel(x, cx_cmp(x, LLVMRealOLT, qr, cx_k(x, 0)), cx_quot(x, one, r), r);
}

static LLVMValueRef cx_pow(cx *x, LLVMValueRef p, LLVMValueRef q, const jit_node *qn) {
    LLVMValueRef one = cx_make(x, cx_k(x, 1), cx_k(x, 0));
    if (qn->kind == N_CONST && qn->type.kind == JT_WEAK_INT && qn->v.i > -100 && qn->v.i < 100) {
        int64_t n = qn->v.i < 0 ? -qn->v.i : qn->v.i;
        LLVMValueRef acc = one, sq = p;
        bool first = true;
        for (; n; n >>= 1) {
            if (n & 1) acc = first ? sq : cx_times(x, acc, sq), first = false;
            if (n > 1) sq = cx_times(x, sq, sq);
        }
        return qn->v.i < 0 ? cx_quot(x, one, acc) : acc;
    }
    LLVMValueRef lr, li, er, ei, mr, mi, zero = cx_k(x, 0);
    cx_log_parts(x, cx_re(x, p), cx_im(x, p), &lr, &li);
    cx_mul_parts(x, cx_re(x, q), cx_im(x, q), lr, li, &mr, &mi);
    cx_exp_parts(x, mr, mi, &er, &ei);
    LLVMValueRef qr = cx_re(x, q), qi = cx_im(x, q);
    /* an integral real exponent below 100 in magnitude; any other qr is
     * replaced by 0 before the conversion (fptosi of NaN is poison) */
    LLVMValueRef integral = cx_and(x,
                                   cx_and(x, cx_cmp(x, LLVMRealOEQ, qi, zero),
                                          cx_cmp(x, LLVMRealOEQ, qr, cx_fn(x, "rint", qr))),
                                   cx_cmp(x, LLVMRealOLT, cx_fn(x, "fabs", qr), cx_k(x, 100)));
    LLVMValueRef ipow = cx_int_pow(x, p, cx_sel(x, integral, qr, zero));
    er = cx_sel(x, integral, cx_re(x, ipow), er);
    ei = cx_sel(x, integral, cx_im(x, ipow), ei);
    LLVMValueRef pzero = cx_and(x, cx_cmp(x, LLVMRealOEQ, cx_re(x, p), zero),
                                cx_cmp(x, LLVMRealOEQ, cx_im(x, p), zero));
    LLVMValueRef qpos =
        cx_and(x, cx_cmp(x, LLVMRealOGT, qr, zero), cx_cmp(x, LLVMRealOEQ, qi, zero));
    LLVMValueRef nan = cx_k(x, 0.0 / 0.0);
    er = cx_sel(x, pzero, cx_sel(x, qpos, zero, nan), er);
    ei = cx_sel(x, pzero, cx_sel(x, qpos, zero, nan), ei);
    LLVMValueRef qzero =
        cx_and(x, cx_cmp(x, LLVMRealOEQ, qr, zero), cx_cmp(x, LLVMRealOEQ, qi, zero));
    return cx_sel(x, qzero, one, cx_make(x, er, ei));
}

/* op on two complex values of dtype d (jit_infer allowed only these). */
static LLVMValueRef cx_arith(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q,
                             const jit_node *qn) {
    cx x = cx_of(c, d);
    switch (op) {
    case OP_ADD: return LLVMBuildFAdd(x.b, p, q, "");
    case OP_SUB: return LLVMBuildFSub(x.b, p, q, "");
    case OP_MUL: return cx_times(&x, p, q);
    case OP_DIV: return cx_quot(&x, p, q);
    default: return cx_pow(&x, p, q, qn);
    }
}

/* p op q on complex values as NumPy 2: == and != on both parts; the
 * orderings lexicographic, real parts first, false where a NaN decides. */
static LLVMValueRef cx_compare(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q) {
    cx x = cx_of(c, d);
    LLVMValueRef a = cx_re(&x, p), b = cx_im(&x, p), cr = cx_re(&x, q), di = cx_im(&x, q);
    if (op == OP_EQ || op == OP_NE)
        return op == OP_EQ
                   ? cx_and(&x, cx_cmp(&x, LLVMRealOEQ, a, cr), cx_cmp(&x, LLVMRealOEQ, b, di))
                   : cx_or(&x, cx_cmp(&x, LLVMRealUNE, a, cr), cx_cmp(&x, LLVMRealUNE, b, di));
    static const LLVMRealPredicate strict[] = {
        [OP_LT] = LLVMRealOLT, [OP_LE] = LLVMRealOLT, [OP_GT] = LLVMRealOGT, [OP_GE] = LLVMRealOGT};
    static const LLVMRealPredicate tie[] = {
        [OP_LT] = LLVMRealOLT, [OP_LE] = LLVMRealOLE, [OP_GT] = LLVMRealOGT, [OP_GE] = LLVMRealOGE};
    LLVMValueRef ordered_im = cx_cmp(&x, LLVMRealORD, b, di);
    LLVMValueRef by_re = cx_and(&x, cx_cmp(&x, strict[op], a, cr), ordered_im);
    LLVMValueRef by_im = cx_and(&x, cx_cmp(&x, LLVMRealOEQ, a, cr), cx_cmp(&x, tie[op], b, di));
    return cx_or(&x, by_re, by_im);
}

/* A number of dtype from as dtype to where either is complex: a real number
 * gets a +0 imaginary part; complex to bool is Python's truth (z != 0); to a
 * real dtype (which jit_infer allows only through .real) the real part. */
static LLVMValueRef cx_convert(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to) {
    LLVMBuilderRef b = c->m->b;
    if (jit_dtype_is_complex(from) && jit_dtype_is_complex(to)) {
        LLVMTypeRef tt = ltype_dt(c, to);
        return to == JIT_C128 ? LLVMBuildFPExt(b, v, tt, "") : LLVMBuildFPTrunc(b, v, tt, "");
    }
    if (jit_dtype_is_complex(to)) {
        cx x = cx_of(c, to);
        return cx_make(&x, conv_dt(c, v, from, x.pd), cx_k(&x, 0));
    }
    cx x = cx_of(c, from);
    if (to == JIT_BOOL) {
        LLVMValueRef zero = cx_k(&x, 0);
        return cx_or(&x, cx_cmp(&x, LLVMRealUNE, cx_re(&x, v), zero),
                     cx_cmp(&x, LLVMRealUNE, cx_im(&x, v), zero));
    }
    return conv_dt(c, cx_re(&x, v), x.pd, to);
}

/* A builtin with a complex argument, complex(re, im) or numpy.conj; a[] the
 * arguments' values. */
static LLVMValueRef cx_builtin(cg *c, jit_node *n, const jit_builtin *bt, LLVMValueRef *a) {
    jit_type rt = n->type, t0 = n->nkids ? n->kids[0]->type : rt;
    jit_dtype d0 = dt_of(c, t0);
    if (bt->gen == GEN_COMPLEX) {
        cx x = cx_of(c, dt_of(c, rt));
        LLVMValueRef re = n->nkids > 0 ? conv_dt(c, a[0], d0, x.pd) : cx_k(&x, 0);
        LLVMValueRef im =
            n->nkids > 1 ? conv_dt(c, a[1], dt_of(c, n->kids[1]->type), x.pd) : cx_k(&x, 0);
        return cx_make(&x, re, im);
    }
    if (!jit_dtype_is_complex(d0)) /* numpy.conj of a real number: itself */
        return conv(c, a[0], t0, rt);
    cx x = cx_of(c, d0);
    LLVMValueRef re = cx_re(&x, a[0]), im = cx_im(&x, a[0]);
    switch (bt->gen) {
    case GEN_CONJ: return cx_make(&x, re, LLVMBuildFNeg(x.b, im, ""));
    case GEN_ABS: return cx_fn2(&x, "hypot", re, im);
    case GEN_ISNAN:
        return cx_or(&x, cx_cmp(&x, LLVMRealUNO, re, re), cx_cmp(&x, LLVMRealUNO, im, im));
    case GEN_ISFINITE: return cx_and(&x, cx_finite(&x, re), cx_finite(&x, im));
    case GEN_ISINF: {
        LLVMValueRef inf = cx_k(&x, 1.0 / 0.0);
        return cx_or(&x, cx_cmp(&x, LLVMRealOEQ, cx_fn(&x, "fabs", re), inf),
                     cx_cmp(&x, LLVMRealOEQ, cx_fn(&x, "fabs", im), inf));
    }
    case GEN_CONVERT: return cx_convert(c, a[0], d0, JIT_BOOL);
    case GEN_MATH:
    case GEN_NP_ROUND: {
        cx y = cx_of(c, dt_of(c, rt));
        return cx_math(&y, bt->fn, conv(c, a[0], t0, rt));
    }
    default: return fail(c, n, "internal: complex builtin %s", bt->py), NULL;
    }
}

/* z.real, z.imag of any number (a real one's imaginary part is zero). */
static LLVMValueRef cx_part(cg *c, jit_node *n) {
    LLVMValueRef v = expr(c, n->a);
    if (!v) return NULL;
    jit_dtype d = dt_of(c, n->a->type);
    bool imag = !strcmp(n->v.name, "imag");
    if (!jit_dtype_is_complex(d)) return imag ? LLVMConstNull(LLVMTypeOf(v)) : v;
    cx x = cx_of(c, d);
    return imag ? cx_im(&x, v) : cx_re(&x, v);
}

/* z.conjugate() / z.conj() */
static LLVMValueRef cx_conj_method(cg *c, jit_node *n) {
    jit_node *obj = n->a->a;
    LLVMValueRef v = expr(c, obj);
    if (!v) return NULL;
    jit_dtype d = dt_of(c, obj->type);
    if (!jit_dtype_is_complex(d)) return conv(c, v, obj->type, n->type);
    cx x = cx_of(c, d);
    return cx_make(&x, cx_re(&x, v), LLVMBuildFNeg(x.b, cx_im(&x, v), ""));
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
    default: fail(c, at, "internal: operator %d", op); return NULL;
    }
}

static LLVMValueRef compare(cg *c, int op, jit_dtype d, LLVMValueRef x, LLVMValueRef y) {
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

/* An integer's value, exactly, whatever its type: its 64 bits (extended as
 * its type says) and whether it is negative. Comparing these is comparing the
 * values, as NumPy 2 and Python do for signed with unsigned (-3 < uint8(0)),
 * where converting both to the promoted type would wrap one of them. */
typedef struct {
    LLVMValueRef neg, bits;
} int_key;

static bool exact_int(jit_type t) { return jit_is_number(t) && !jit_is_floating(t); }

static bool is_signed_type(cg *c, jit_type t) { return jit_dtype_is_signed(dt_of(c, t)); }

static int_key key_of(cg *c, LLVMValueRef v, jit_type t) {
    int_key k = {LLVMConstInt(c->m->i1, 0, 0), conv_dt(c, v, dt_of(c, t), JIT_I64)};
    if (is_signed_type(c, t)) k.neg = LLVMBuildICmp(c->m->b, LLVMIntSLT, k.bits, i64c(c, 0), "");
    return k;
}

/* x < y on keys: a negative value is below every other; among values of one
 * sign the bits order them unsigned. */
static LLVMValueRef key_less(cg *c, int_key x, int_key y) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef differ = LLVMBuildXor(b, x.neg, y.neg, "");
    return LLVMBuildSelect(b, differ, x.neg, LLVMBuildICmp(b, LLVMIntULT, x.bits, y.bits, ""), "");
}

static LLVMValueRef key_compare(cg *c, int op, int_key x, int_key y) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef one = LLVMConstInt(c->m->i1, 1, 0);
    switch (op) {
    case OP_LT: return key_less(c, x, y);
    case OP_GT: return key_less(c, y, x);
    case OP_LE: return LLVMBuildXor(b, key_less(c, y, x), one, "");
    case OP_GE: return LLVMBuildXor(b, key_less(c, x, y), one, "");
    default: {
        LLVMValueRef eq = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, x.neg, y.neg, ""),
                                       LLVMBuildICmp(b, LLVMIntEQ, x.bits, y.bits, ""), "");
        return op == OP_EQ ? eq : LLVMBuildXor(b, eq, one, "");
    }
    }
}

/* x op y for two numbers of any types: integers of different signedness by
 * value (keys), the rest in their promoted type. */
static LLVMValueRef compare_values(cg *c, int op, LLVMValueRef x, jit_type tx, LLVMValueRef y,
                                   jit_type ty) {
    if (exact_int(tx) && exact_int(ty) && is_signed_type(c, tx) != is_signed_type(c, ty))
        return key_compare(c, op, key_of(c, x, tx), key_of(c, y, ty));
    jit_type pt = jit_promote(tx, ty);
    if (jit_is_complex(pt))
        return cx_compare(c, op, dt_of(c, pt), conv(c, x, tx, pt), conv(c, y, ty, pt));
    return compare(c, op, dt_of(c, pt), conv(c, x, tx, pt), conv(c, y, ty, pt));
}

static LLVMValueRef binop(cg *c, jit_node *n, int op, jit_node *an, jit_node *bn, LLVMValueRef x,
                          LLVMValueRef y) {
    jit_type rt = n->type;
    if (jit_is_complex(rt))
        return cx_arith(c, op, dt_of(c, rt), conv(c, x, an->type, rt), conv(c, y, bn->type, rt),
                        bn);
    if (op == OP_POW && jit_is_floating(rt) && bn->kind == N_CONST &&
        bn->type.kind == JT_WEAK_INT &&
        (bn->v.i == 2 || bn->v.i == 3)) { /* x**2, x**3: multiplications, as compilers do */
        LLVMValueRef v = conv(c, x, an->type, rt);
        LLVMValueRef sq = LLVMBuildFMul(c->m->b, v, v, "");
        return bn->v.i == 2 ? sq : LLVMBuildFMul(c->m->b, sq, v, "");
    }
    jit_dtype d = dt_of(c, rt);
    x = conv(c, x, an->type, rt);
    y = conv(c, y, bn->type, rt);
    if (op == OP_POW && c->m->bc && jit_dtype_is_signed(d) && !jit_dtype_is_float(d) &&
        !LLVMIsAConstantInt(y)) {
        /* NumPy's ValueError for a negative exponent known only now (a constant one is a
         * CompileError) */
        LLVMValueRef neg =
            LLVMBuildICmp(c->m->b, LLVMIntSLT, y, LLVMConstInt(LLVMTypeOf(y), 0, 0), "");
        if (fault_check(c, bn, neg, JIT_FAULT_NEG_POWER, conv_dt(c, y, d, JIT_I64)) < 0)
            return NULL;
    }
    return arith(c, n, op, d, x, y);
}

/* `a and b and ...` / `a or b or ...` as Python: the value of the operand
 * that decided (the first falsy one for and, truthy for or, else the last),
 * in the node's type, the operands' common one. */
static LLVMValueRef short_circuit(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    LLVMBasicBlockRef start = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef done = block(c, n->op == OP_AND ? "and.done" : "or.done");
    /* the phi first, so that each operand adds its edge as it goes: CPython
     * takes an `and` of any length */
    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef phi = LLVMBuildPhi(b, ltype(c, n->type), "");
    LLVMPositionBuilderAtEnd(b, start);
    for (int i = 0; i < n->nkids; i++) {
        jit_node *k = n->kids[i];
        LLVMValueRef v = expr(c, k);
        if (!v) return NULL;
        LLVMValueRef value = conv(c, v, k->type, n->type);
        LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
        LLVMAddIncoming(phi, &value, &from, 1);
        if (i + 1 == n->nkids) {
            LLVMBuildBr(b, done);
            break;
        }
        LLVMValueRef truthy = conv_dt(c, v, dt_of(c, k->type), JIT_BOOL);
        LLVMBasicBlockRef next = block(c, "bool.next");
        if (n->op == OP_AND)
            LLVMBuildCondBr(b, truthy, next, done);
        else
            LLVMBuildCondBr(b, truthy, done, next);
        LLVMPositionBuilderAtEnd(b, next);
    }
    LLVMPositionBuilderAtEnd(b, done);
    return phi;
}

static LLVMValueRef call_devfn(cg *c, jit_node *n);

static LLVMValueRef call_builtin(cg *c, jit_node *n, const jit_builtin *bt) {
    LLVMBuilderRef b = c->m->b;
    jit_type rt = n->type;
    LLVMValueRef a[8];
    for (int i = 0; i < n->nkids && i < 8; i++)
        if (n->kids[i]->type.kind != JT_ARRAY && !(a[i] = expr(c, n->kids[i]))) return NULL;
    jit_type t0 = n->nkids ? n->kids[0]->type : rt;
    jit_dtype d0 = dt_of(c, t0);
    if (bt->gen == GEN_COMPLEX || bt->gen == GEN_CONJ || jit_dtype_is_complex(d0))
        return cx_builtin(c, n, bt, a);
    switch (bt->gen) {
    case GEN_LEN: {
        cg_array arr;
        return array_of(c, n->kids[0], &arr) < 0 ? NULL : arr.shape[0];
    }
    case GEN_CONVERT:
        if (!n->nkids) return LLVMConstNull(ltype(c, rt));
        return conv(c, a[0], t0, rt);
    case GEN_ABS: {
        LLVMValueRef v = conv(c, a[0], t0, rt);
        jit_dtype d = dt_of(c, rt);
        if (jit_dtype_is_float(d)) return math1(c, "fabs", d, v);
        if (!jit_dtype_is_signed(d)) return v;
        return LLVMBuildSelect(
            b, LLVMBuildICmp(b, LLVMIntSLT, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), ""),
            LLVMBuildNeg(b, v, ""), v, "");
    }
    case GEN_MIN:
    case GEN_MAX: {
        jit_dtype d = dt_of(c, rt);
        LLVMValueRef r = conv(c, a[0], t0, rt);
        bool mixed = false; /* signed and unsigned integers: choose by value, then convert */
        for (int i = 0; i < n->nkids; i++)
            mixed |= exact_int(n->kids[i]->type) &&
                     is_signed_type(c, n->kids[i]->type) != is_signed_type(c, t0);
        if (mixed && jit_is_integral(rt)) {
            int_key best = key_of(c, a[0], t0);
            for (int i = 1; i < n->nkids; i++) {
                int_key k = key_of(c, a[i], n->kids[i]->type);
                LLVMValueRef better =
                    bt->gen == GEN_MIN ? key_less(c, k, best) : key_less(c, best, k);
                r = LLVMBuildSelect(b, better, conv(c, a[i], n->kids[i]->type, rt), r, "");
                best.neg = LLVMBuildSelect(b, better, k.neg, best.neg, "");
                best.bits = LLVMBuildSelect(b, better, k.bits, best.bits, "");
            }
            return r;
        }
        for (int i = 1; i < n->nkids; i++) { /* Python keeps the first of equal values */
            LLVMValueRef v = conv(c, a[i], n->kids[i]->type, rt);
            LLVMValueRef better = compare(c, bt->gen == GEN_MIN ? OP_LT : OP_GT, d, v, r);
            r = LLVMBuildSelect(b, better, v, r, "");
        }
        return r;
    }
    case GEN_ROUND:
        if (!jit_dtype_is_float(d0)) return conv(c, a[0], t0, rt);
        return conv_dt(c, math1(c, bt->fn, d0, a[0]), d0, dt_of(c, rt));
    case GEN_NP_ROUND: {
        LLVMValueRef v = conv(c, a[0], t0, rt);
        jit_dtype d = dt_of(c, rt);
        if (!jit_dtype_is_float(d)) return v;
        return math1(c, bt->fn, d, v);
    }
    case GEN_MINIMUM:
    case GEN_MAXIMUM: { /* NumPy: a NaN on either side wins */
        jit_dtype d = dt_of(c, rt);
        LLVMValueRef x = conv(c, a[0], t0, rt), y = conv(c, a[1], n->kids[1]->type, rt);
        LLVMValueRef r = LLVMBuildSelect(
            b, compare(c, bt->gen == GEN_MINIMUM ? OP_LT : OP_GT, d, y, x), y, x, "");
        if (!jit_dtype_is_float(d)) return r;
        return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, y, y, ""), y, r, "");
    }
    case GEN_ISFINITE:
        if (!jit_dtype_is_float(d0)) return LLVMConstInt(c->m->i1, 1, 0);
        return LLVMBuildFCmp(b, LLVMRealOLT, math1(c, "fabs", d0, a[0]),
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
        return LLVMBuildFCmp(b, LLVMRealOEQ, math1(c, "fabs", d0, a[0]), inf, "");
    }
    case GEN_LDEXP: {
        jit_dtype d = dt_of(c, rt);
        LLVMValueRef args[2] = {conv(c, a[0], t0, rt),
                                conv_dt(c, a[1], dt_of(c, n->kids[1]->type), JIT_I32)};
        return jit_target_math(&c->m->tg, bt->fn, d == JIT_F64, args, 2);
    }
    case GEN_MATH: {
        jit_dtype d = dt_of(c, rt);
        LLVMValueRef args[3];
        for (int i = 0; i < n->nkids && i < 3; i++) args[i] = conv(c, a[i], n->kids[i]->type, rt);
        return jit_target_math(&c->m->tg, bt->fn, d == JIT_F64, args, n->nkids);
    }
    default: return fail(c, n, "internal: builtin %s", bt->py), NULL;
    }
}

/* ---- nd-range kernels: the work-group, local and private arrays, atomics ---- */

/* What a call made for its effect gives back (a barrier, a store). */
static LLVMValueRef no_value(cg *c) { return LLVMConstInt(c->m->i1, 0, 0); }

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
        return LLVMBuildAnd(c->m->b, jit_target_global_id(tg, hw), i64c(c, INT64_MAX), "gid");
    case Q_LOCAL_ID: return jit_target_wg(tg, JIT_LOCAL_ID, hw);
    case Q_LOCAL_RANGE: return jit_target_wg(tg, JIT_LOCAL_SIZE, hw);
    case Q_GROUP_ID: return jit_target_wg(tg, JIT_GROUP_ID, hw);
    case Q_GROUP_RANGE: return jit_target_wg(tg, JIT_NUM_GROUPS, hw);
    case Q_GLOBAL_RANGE: /* an NdRange's global size is a whole number of groups */
        return LLVMBuildMul(c->m->b, jit_target_wg(tg, JIT_LOCAL_SIZE, hw),
                            jit_target_wg(tg, JIT_NUM_GROUPS, hw), "");
    default: return no_value(c); /* get_group(): the group is the item's */
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

/* The storage of ol.local_array / ol.private_array call n, made at its first
 * use: a work-group variable of the module (named as OpenCL C compilers name
 * a kernel's __local variables, which PoCL relies on) or an entry-block
 * alloca. The shape is constant (jit_infer checked). */
static int scratch_array(cg *c, jit_node *n, cg_array *out) {
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
            return fail(c, n, "this array is too large for local or private memory");
    }
    LLVMTypeRef et = mtype_dt(c, t.dtype), at = LLVMArrayType(et, (unsigned)count);
    cg_array a = {.offset = i64c(c, 0), .t = t};
    if (t.space == JIT_LOCAL) {
        /* over the device's local memory a launch fails, or PoCL aborts the process */
        c->m->local_bytes +=
            (unsigned long long)count * (unsigned long long)jit_dtype_size(t.dtype);
        unsigned long long most = c->m->target->local_mem;
        if (most && c->m->local_bytes > most)
            return fail(c, n,
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
        a.base = entry_alloca(c, at, "private");
    }
    int64_t stride = jit_dtype_size(t.dtype);
    for (int d = t.ndim - 1; d >= 0; d--) {
        a.shape[d] = i64c(c, dims[d]);
        a.strides[d] = i64c(c, stride);
        stride *= dims[d];
    }
    void *more = realloc(c->scratch, sizeof *c->scratch * (size_t)(c->nscratch + 1));
    if (!more) return fail(c, n, "out of memory");
    c->scratch = more;
    c->scratch[c->nscratch].at = n;
    c->scratch[c->nscratch++].a = a;
    *out = a;
    return 0;
}

/* ol.AtomicRef(array, index): the element's address. */
static LLVMValueRef atomic_ptr(cg *c, jit_node *n) {
    cg_array a;
    if (array_of(c, n->kids[0], &a) < 0) return NULL;
    jit_node idx = *n, *ix = n->kids[1];
    idx.a = n->kids[0]; /* the array, as an index's a: what a bounds check names */
    idx.kids = ix->kind == N_TUPLE ? ix->kids : &n->kids[1];
    idx.nkids = ix->kind == N_TUPLE ? ix->nkids : 1;
    return element_ptr(c, &idx, &a);
}

static LLVMValueRef bits_of(cg *c, LLVMValueRef v, LLVMTypeRef it) {
    return LLVMTypeOf(v) == it ? v : LLVMBuildBitCast(c->m->b, v, it, "");
}

/* old = *p; *p = op(old, v) for floats, as a compare-and-swap loop on the
 * bits: for the operations a device has no instruction for. Returns old. */
static LLVMValueRef cas_loop(cg *c, LLVMValueRef p, jit_method_op op, jit_dtype d, LLVMValueRef v) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef et = ltype_dt(c, d),
                it = LLVMIntTypeInContext(c->m->tg.ctx, (unsigned)jit_dtype_bits(d));
    LLVMValueRef first = LLVMBuildLoad2(b, it, p, "");
    LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(first, (unsigned)jit_dtype_size(d));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = block(c, "cas"),
                      done = block(c, "cas.done");
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
static LLVMValueRef atomic_op(cg *c, jit_node *n, jit_type at, LLVMValueRef p) {
    LLVMBuilderRef b = c->m->b;
    const char *m = n->a->v.name;
    jit_dtype d = (jit_dtype)at.dtype;
    bool fl = jit_dtype_is_float(d);
    if (jit_dtype_bits(d) == 64 && !c->m->target->atomic64)
        return fail(c, n,
                    "this device has no 64-bit atomics, so %s on %s elements cannot run there\n"
                    "Use an int32, uint32 or float32 array.",
                    m, jit_dtype_name(d)),
               NULL;
    LLVMTypeRef et = ltype_dt(c, d),
                it = LLVMIntTypeInContext(c->m->tg.ctx, (unsigned)jit_dtype_bits(d));
    LLVMValueRef v[2] = {0};
    for (int i = 0; i < n->nkids && i < 2; i++) {
        if (!(v[i] = expr(c, n->kids[i]))) return NULL;
        v[i] = conv(c, v[i], n->kids[i]->type, jit_scalar(d));
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
        return no_value(c);
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

/* ---- print(): the device's printf ----
 *
 * One printf per print() call, so that the lines of different work-items do
 * not interleave mid-line (CUDA interleaves the separate calls of a warp).
 * The format is constant -- strings, sep and end are part of it -- and every
 * value is a conversion of fixed shape: ints in decimal, bools and floats as
 * jit_print.c lays them out. */

/* A print()'s format and arguments as they are gathered. */
typedef struct {
    jit_error *err;
    const jit_func *f;
    char *fmt;
    size_t len, cap;
    LLVMValueRef args[64];
    int nargs;
} print_buf;

static int fmt_add(print_buf *pb, const char *s, bool escape) {
    for (; *s; s++) {
        if (pb->len + 3 > pb->cap) { /* room for "%%" and the final '\0' */
            size_t cap = pb->cap ? pb->cap * 2 : 128;
            char *g = realloc(pb->fmt, cap);
            if (!g) return jit_error_at(pb->err, pb->f, 0, 0, "out of memory");
            pb->fmt = g;
            pb->cap = cap;
        }
        if (escape && *s == '%') pb->fmt[pb->len++] = '%';
        pb->fmt[pb->len++] = *s;
    }
    return 0;
}

/* A float printf can take without a double-double formatter: OpenCL devices
 * without float64 get "%.9g" of the float (it reads back as the same float32). */
static bool plain_float(cg *c) { return !c->m->target->fp64 && !c->m->tg.ptx; }

/* One value's conversion and arguments, promoted as C varargs are. */
static int print_value(cg *c, print_buf *pb, jit_node *k) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef v = expr(c, k);
    if (!v) return -1;
    jit_dtype d = dt_of(c, k->type);
    const char *l64 =
        c->m->tg.ptx ? "ll" : "l"; /* OpenCL C's long is 64 bits, and it has no long long */
    char conv[48];
    if (d == JIT_BOOL) {
        pb->args[pb->nargs++] = jit_print_bool(&c->m->tg, v);
        return fmt_add(pb, "%s", false);
    }
    if (jit_dtype_is_int(d)) {
        bool sg = jit_dtype_is_signed(d), wide = jit_dtype_bits(d) == 64;
        if (!wide) v = sg ? LLVMBuildSExt(b, v, c->m->i32, "") : LLVMBuildZExt(b, v, c->m->i32, "");
        pb->args[pb->nargs++] = v;
        snprintf(conv, sizeof conv, "%%%s%c", wide ? l64 : "", sg ? 'd' : 'u');
        return fmt_add(pb, conv, false);
    }
    if (plain_float(c)) {
        pb->args[pb->nargs++] = v;
        return fmt_add(pb, "%.9g", false);
    }
    bool f32 = d == JIT_F32;
    if (f32) v = LLVMBuildFPExt(b, v, c->m->f64, "");
    jit_print_float(&c->m->tg, v, f32, pb->args + pb->nargs);
    pb->nargs += 6;
    snprintf(conv, sizeof conv, "%%s%%.0%sd%%s%%.0%sd%%s%%.0%sd", l64, l64, l64);
    return fmt_add(pb, conv, false);
}

static LLVMValueRef emit_print(cg *c, jit_node *n) {
    print_buf pb = {.err = c->m->err, .f = c->f};
    const char *sep = n->b ? n->b->v.name : " ", *end = n->c ? n->c->v.name : "\n";
    int limit = c->m->tg.ptx ? 32 : 63; /* CUDA's printf takes at most 32 values */
    int rc = 0;
    for (int i = 0; i < n->nkids && rc == 0; i++) {
        jit_node *k = n->kids[i];
        if (i && (rc = fmt_add(&pb, sep, true)) < 0) break;
        if (k->kind == N_STR) {
            rc = fmt_add(&pb, k->v.name, true);
            continue;
        }
        if (pb.nargs + (jit_is_floating(k->type) && !plain_float(c) ? 6 : 1) > limit) {
            rc = fail(
                c, k,
                "this print() passes more than %d values to the device's printf (an int or a bool "
                "takes 1, a float 6)\nSplit it into several print() calls.",
                limit);
            break;
        }
        rc = print_value(c, &pb, k);
    }
    if (rc == 0) rc = fmt_add(&pb, end, true);
    if (rc == 0 && pb.len) { /* print(end="") prints nothing */
        pb.fmt[pb.len] = '\0';
        if (jit_target_printf(&c->m->tg, pb.fmt, pb.args, pb.nargs) < 0)
            rc = fail(c, n, "out of memory");
    }
    free(pb.fmt);
    return rc < 0 ? NULL : no_value(c);
}

static LLVMValueRef call(cg *c, jit_node *n) {
    jit_node *fn = n->a;
    if (fn->kind == N_REF && fn->v.ref.kind == REF_BUILTIN) {
        cg_array scratch;
        const jit_builtin *bt = &jit_builtins[fn->v.ref.id];
        switch (bt->gen) {
        case GEN_BARRIER: jit_target_barrier(&c->m->tg); return no_value(c);
        case GEN_SCRATCH: return scratch_array(c, n, &scratch) < 0 ? NULL : no_value(c);
        case GEN_ATOMIC_REF: return atomic_ptr(c, n);
        case GEN_PRINT: return emit_print(c, n);
        default: return call_builtin(c, n, bt);
        }
    }
    if (fn->kind == N_REF && fn->v.ref.kind == REF_DTYPE) {
        if (!n->nkids) return LLVMConstNull(ltype(c, n->type));
        LLVMValueRef v = expr(c, n->kids[0]);
        return v ? conv(c, v, n->kids[0]->type, n->type) : NULL;
    }
    if (fn->kind == N_REF && fn->v.ref.kind == REF_DEVFUNC) return call_devfn(c, n);
    if (fn->kind == N_ATTR && fn->a->type.kind == JT_ATOMIC) {
        LLVMValueRef p = expr(c, fn->a);
        return p ? atomic_op(c, n, fn->a->type, p) : NULL;
    }
    if (fn->kind == N_ATTR && jit_is_number(fn->a->type)) return cx_conj_method(c, n);
    if (fn->kind == N_ATTR) return item_method(c, n, fn->a->type);
    fail(c, n, "internal: call");
    return NULL;
}

static LLVMValueRef expr(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    switch ((jit_node_kind)n->kind) {
    case N_CONST: {
        jit_dtype d = dt_of(c, n->type);
        LLVMTypeRef t = ltype_dt(c, d);
        if (jit_dtype_is_complex(d)) {
            LLVMTypeRef pt = ltype_dt(c, jit_complex_part(d));
            LLVMValueRef parts[2] = {LLVMConstReal(pt, n->v.z[0]), LLVMConstReal(pt, n->v.z[1])};
            return LLVMConstVector(parts, 2);
        }
        if (n->type.kind == JT_WEAK_FLOAT || jit_dtype_is_float(d)) return LLVMConstReal(t, n->v.f);
        return LLVMConstInt(t, (unsigned long long)n->v.i, jit_dtype_is_signed(d));
    }
    case N_VAR:
        if (n->type.kind == JT_NDITEM || n->type.kind == JT_GROUP) return no_value(c);
        if (n->type.kind == JT_ARRAY || n->type.kind == JT_ITEM)
            return fail(c, n, "an array is not a number here"), NULL;
        return LLVMBuildLoad2(b, ltype(c, c->f->var_types[n->v.var]), c->vars[n->v.var],
                              c->f->vars[n->v.var].name);
    case N_BINOP: {
        LLVMValueRef x = expr(c, n->a), y = x ? expr(c, n->b) : NULL;
        return y ? binop(c, n, n->op, n->a, n->b, x, y) : NULL;
    }
    case N_UNARY: {
        LLVMValueRef x = expr(c, n->a);
        if (!x) return NULL;
        if (n->op == OP_NOT)
            return LLVMBuildNot(b, conv_dt(c, x, dt_of(c, n->a->type), JIT_BOOL), "");
        x = conv(c, x, n->a->type, n->type);
        jit_dtype d = dt_of(c, n->type);
        if (n->op == OP_POS) return x;
        if (n->op == OP_NEG)
            return jit_dtype_is_float(d) || jit_dtype_is_complex(d) ? LLVMBuildFNeg(b, x, "")
                                                                    : LLVMBuildNeg(b, x, "");
        return LLVMBuildNot(b, x, ""); /* ~ on ints and bools */
    }
    case N_COMPARE: {
        LLVMValueRef prev = expr(c, n->kids[0]), all = NULL;
        if (!prev) return NULL;
        for (int i = 1; i < n->nkids; i++) {
            LLVMValueRef next = expr(c, n->kids[i]);
            if (!next) return NULL;
            LLVMValueRef r = compare_values(c, n->ops[i - 1], prev, n->kids[i - 1]->type, next,
                                            n->kids[i]->type);
            all = all ? LLVMBuildAnd(b, all, r, "") : r;
            prev = next;
        }
        return all;
    }
    case N_BOOLOP: return short_circuit(c, n);
    case N_IFEXP: {
        LLVMValueRef cond = truth(c, n->a);
        if (!cond) return NULL;
        LLVMBasicBlockRef tb = block(c, "ifexp.then"), eb = block(c, "ifexp.else"),
                          done = block(c, "ifexp");
        LLVMBuildCondBr(b, cond, tb, eb);
        LLVMPositionBuilderAtEnd(b, tb);
        LLVMValueRef tv = expr(c, n->b);
        if (!tv) return NULL;
        tv = conv(c, tv, n->b->type, n->type);
        LLVMBasicBlockRef tend = LLVMGetInsertBlock(b);
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, eb);
        LLVMValueRef ev = expr(c, n->c);
        if (!ev) return NULL;
        ev = conv(c, ev, n->c->type, n->type);
        LLVMBasicBlockRef eend = LLVMGetInsertBlock(b);
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, done);
        LLVMValueRef phi = LLVMBuildPhi(b, ltype(c, n->type), "");
        LLVMValueRef v[2] = {tv, ev};
        LLVMBasicBlockRef from[2] = {tend, eend};
        LLVMAddIncoming(phi, v, from, 2);
        return phi;
    }
    case N_CALL: return call(c, n);
    case N_ATTR: {
        if (jit_is_number(n->a->type)) return cx_part(c, n);
        cg_array a;
        if (array_of(c, n->a, &a) < 0) return NULL;
        if (jit_attr_find(n->v.name) == ATTR_NDIM) return i64c(c, a.t.ndim);
        LLVMValueRef size = a.shape[0];
        for (int k = 1; k < a.t.ndim; k++) size = LLVMBuildMul(b, size, a.shape[k], "");
        return size;
    }
    case N_INDEX: {
        if (n->a->type.kind == JT_TUPLE) { /* a.shape[d] */
            cg_array a;
            if (array_of(c, n->a->a, &a) < 0) return NULL;
            int64_t d = n->kids[0]->kind == N_CONST ? n->kids[0]->v.i : -n->kids[0]->a->v.i;
            if (d < 0) d += a.t.ndim;
            return a.shape[d];
        }
        cg_array a;
        if (array_of(c, n->a, &a) < 0) return NULL;
        LLVMValueRef p = element_ptr(c, n, &a);
        return p ? load_elem(c, p, a.t.dtype) : NULL;
    }
    default: fail(c, n, "internal: expression kind %d", n->kind); return NULL;
    }
}

static int array_of(cg *c, jit_node *n, cg_array *out) {
    if (n->kind == N_VAR && n->type.kind == JT_ARRAY && c->arrays[n->v.var].base) {
        *out = c->arrays[n->v.var];
        return 0;
    }
    if (n->kind == N_CALL && n->type.kind == JT_ARRAY) return scratch_array(c, n, out);
    return fail(c, n, "internal: not an array here");
}

/* ---- device functions: one LLVM function per (function, argument types) ---- */

static int emit_function_body(cg *c);

/* An NdItem or a Group is read from the hardware: it takes no parameter. */
static int param_count(jit_type t) {
    return t.kind == JT_ARRAY ? 2 + 2 * t.ndim : t.kind == JT_NDITEM || t.kind == JT_GROUP ? 0 : 1;
}

static void param_types(cg *c, jit_type t, LLVMTypeRef *out) {
    if (t.kind == JT_ARRAY) {
        out[0] = ptr_in(c, (jit_space)t.space);
        for (int k = 0; k < 1 + 2 * t.ndim; k++) out[1 + k] = c->m->i64;
    } else {
        out[0] = t.kind == JT_SCALAR ? mtype_dt(c, t.dtype) : ltype(c, t);
    }
}

/* Binds parameter values (from LLVMGetParam) to the function's variable v. */
static void bind_param(cg *c, int v, jit_type t, LLVMValueRef *p) {
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
    LLVMBuildStore(c->m->b, conv(c, val, t, c->f->var_types[v]), c->vars[v]);
}

static void make_allocas(cg *c) {
    for (int v = 0; v < c->f->nvars; v++) {
        jit_type t = c->f->var_types[v];
        if (t.kind == JT_ARRAY || t.kind == JT_ITEM || t.kind == JT_NDITEM || t.kind == JT_GROUP ||
            t.kind == JT_UNKNOWN)
            continue;
        c->vars[v] = entry_alloca(c, ltype(c, t), c->f->vars[v].name);
    }
}

static LLVMValueRef call_devfn(cg *c, jit_node *n) {
    cg_module *m = c->m;
    jit_func *callee = n->a->v.ref.func;
    jit_type at[16];
    if (n->nkids > 16) return fail(c, n, "a device function takes at most 16 arguments"), NULL;
    for (int i = 0; i < n->nkids; i++) at[i] = n->kids[i]->type;
    cg_devfn *df = NULL;
    for (int i = 0; i < m->ndevfns; i++)
        if (m->devfns[i].f == callee && m->devfns[i].nargs == n->nkids &&
            !memcmp(m->devfns[i].args, at, sizeof(jit_type) * (size_t)n->nkids))
            df = &m->devfns[i];
    if (!df) {
        if (m->depth > 16) return fail(c, n, "device functions nest too deeply"), NULL;
        jit_type ret;
        if (jit_infer(callee, at, &ret, m->err) < 0) return NULL;
        cg_devfn *nd = realloc(m->devfns, (size_t)(m->ndevfns + 1) * sizeof *nd);
        if (!nd) return fail(c, n, "out of memory"), NULL;
        m->devfns = nd;
        df = &nd[m->ndevfns++];
        memset(df, 0, sizeof *df);
        df->f = callee;
        df->nargs = n->nkids;
        memcpy(df->args, at, sizeof(jit_type) * (size_t)n->nkids);
        df->ret = ret;
        LLVMTypeRef pts[16 * 8 + 1];
        int np = 0;
        for (int i = 0; i < n->nkids; i++) {
            param_types(c, at[i], pts + np);
            np += param_count(at[i]);
        }
        if (m->bc) pts[np++] = m->gptr;     /* the bounds record */
        if (m->cancel) pts[np++] = m->gptr; /* the cancel flag */
        LLVMTypeRef rt = ret.kind == JT_NONE ? m->voidt : ltype(c, ret);
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
        LLVMPositionBuilderAtEnd(m->b, block(&sub, "entry"));
        make_allocas(&sub);
        if (ret.kind != JT_NONE) sub.ret_slot = entry_alloca(&sub, rt, "ret");
        int pi = 0;
        LLVMValueRef pv[8];
        for (int i = 0; i < n->nkids; i++) {
            for (int k = 0; k < param_count(at[i]); k++)
                pv[k] = LLVMGetParam(df->fn, (unsigned)(pi + k));
            bind_param(&sub, i, at[i], pv);
            pi += param_count(at[i]);
        }
        if (m->bc) sub.record = LLVMGetParam(df->fn, (unsigned)pi);
        if (m->cancel) sub.cancel_flag = LLVMGetParam(df->fn, (unsigned)pi + (m->bc ? 1 : 0));
        int idx = (int)(df - m->devfns);
        int rc = emit_function_body(&sub);
        df = &m->devfns[idx]; /* nested device functions may have grown the array */
        free(sub.vars);
        free(sub.arrays);
        free(sub.scratch);
        m->depth--;
        LLVMDisposeBuilder(m->b);
        m->b = saved;
        m->tg.b = saved;
        if (rc < 0) return NULL;
    }
    int dfi = (int)(df - m->devfns);
    LLVMValueRef args[16 * 8 + 1];
    int na = 0;
    for (int i = 0; i < n->nkids; i++) {
        if (at[i].kind == JT_ARRAY) {
            cg_array a;
            if (array_of(c, n->kids[i], &a) < 0) return NULL;
            args[na++] = a.base;
            args[na++] = a.offset;
            for (int k = 0; k < a.t.ndim; k++) args[na++] = a.shape[k];
            for (int k = 0; k < a.t.ndim; k++) args[na++] = a.strides[k];
        } else if (param_count(at[i])) {
            LLVMValueRef v = expr(c, n->kids[i]);
            if (!v) return NULL;
            if (at[i].kind == JT_SCALAR && at[i].dtype == JIT_BOOL)
                v = LLVMBuildZExt(m->b, v, m->i8, "");
            args[na++] = v;
        }
    }
    if (m->bc) args[na++] = c->record;
    if (m->cancel) args[na++] = c->cancel_flag;
    df = &m->devfns[dfi]; /* arguments that call device functions may have grown the array */
    LLVMValueRef r = LLVMBuildCall2(m->b, df->fty, df->fn, args, (unsigned)na, "");
    jit_target_mark_call(&m->tg, r);
    if (df->ret.kind == JT_NONE) return no_value(c); /* a statement call; the value is unused */
    n->type = df->ret;
    return r;
}

/* ---- statements ---- */

static int stmts(cg *c, jit_node **body, int n);

static int store_var(cg *c, jit_node *t, LLVMValueRef v, jit_type vt) {
    jit_type dst = c->f->var_types[t->v.var];
    if (vt.kind == JT_NDITEM || vt.kind == JT_GROUP)
        return 0; /* nothing to keep: read from the hardware */
    if (vt.kind == JT_ATOMIC) {
        LLVMBuildStore(c->m->b, v, c->vars[t->v.var]);
        return 0;
    }
    LLVMBuildStore(c->m->b, conv(c, v, vt, dst), c->vars[t->v.var]);
    return 0;
}

static int assign(cg *c, jit_node *t, jit_node *value, LLVMValueRef v, jit_type vt) {
    if (t->kind == N_VAR) {
        if (vt.kind == JT_ARRAY) {
            cg_array a;
            if (array_of(c, value, &a) < 0) return -1;
            a.t = c->f->var_types[t->v.var];
            c->arrays[t->v.var] = a;
            return 0;
        }
        return store_var(c, t, v, vt);
    }
    cg_array a;
    if (array_of(c, t->a, &a) < 0) return -1;
    LLVMValueRef p = element_ptr(c, t, &a);
    if (!p) return -1;
    store_elem(c, p, conv_dt(c, v, dt_of(c, vt), a.t.dtype), a.t.dtype);
    return 0;
}

/* ---- JIT_CANCEL: ending a runaway kernel (jit.h) ----
 * A loop's back-edge counts its trips in a counter of its own (one trip, one
 * step: the count cannot step over the period), and every period-th trip
 * reads the host's flag, volatile so that it is read each
 * time; when set, the function returns at once (a kernel's work-item ends; a
 * device function returns to its caller, whose loops check too). The flag is
 * host memory on a GPU: each read is a bus crossing, so a work-item whose
 * loops are short never reads it (reading on the first trip made a pairwise
 * distance kernel 1000x slower on an H100). A `while` loop may never end (the
 * beginner's missing `k += 1`): every 1024 trips. A `for` over a range ends,
 * unless the range is huge: every 65536. Not where a barrier could wait for a
 * work-item that left (cg_module.cancel_checks). */
#define CANCEL_EVERY_WHILE 1024
#define CANCEL_EVERY_FOR 65536

static LLVMValueRef cancel_counter(cg *c) {
    LLVMValueRef n = entry_alloca(c, c->m->i32, "cancel.n");
    LLVMBuilderRef tmp = LLVMCreateBuilderInContext(c->m->tg.ctx);
    LLVMValueRef next = LLVMGetNextInstruction(n);
    if (next)
        LLVMPositionBuilderBefore(tmp, next);
    else
        LLVMPositionBuilderAtEnd(tmp, LLVMGetEntryBasicBlock(c->fn));
    LLVMBuildStore(tmp, LLVMConstInt(c->m->i32, 0, 0), n);
    LLVMDisposeBuilder(tmp);
    return n;
}

/* At a loop's back-edge, where the builder is; leaves it on the way on.
 * period: a power of two. */
static void cancel_check(cg *c, unsigned period) {
    if (!c->m->cancel_checks || !c->cancel_flag) return;
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef i32 = c->m->i32;
    LLVMValueRef ctr = cancel_counter(c);
    LLVMValueRef k = LLVMBuildAdd(b, LLVMBuildLoad2(b, i32, ctr, ""), LLVMConstInt(i32, 1, 0), "");
    LLVMBuildStore(b, k, ctr);
    LLVMValueRef due =
        LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, k, LLVMConstInt(i32, period - 1, 0), ""),
                      LLVMConstInt(i32, 0, 0), "");
    LLVMBasicBlockRef look = block(c, "cancel.look"), on = block(c, "cancel.on");
    LLVMBuildCondBr(b, due, look, on);
    LLVMPositionBuilderAtEnd(b, look);
    LLVMValueRef flag = LLVMBuildLoad2(b, i32, c->cancel_flag, "cancel.flag");
    LLVMSetVolatile(flag, 1);
    LLVMSetAlignment(flag, 4);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, flag, LLVMConstInt(i32, 0, 0), ""), c->ret_block,
                    on);
    LLVMPositionBuilderAtEnd(b, on);
}

/* ---- unrolling (PTX) ----
 * A grid-stride loop streams: each work-item should have several loads in
 * flight. LLVM 15's NVPTX tuning unrolls a loop of unknown trip count only
 * while the copies stay under 75 instructions (two copies of a dozen
 * statements), and it consumes an llvm.loop.unroll.count hint in its early
 * full-unroll pass, with an exit test between the copies. So the copies are
 * made here: an innermost loop of a runtime count, with no barrier, break or
 * continue and a small body, runs UNROLL_COPIES bodies per trip and then the
 * rest one at a time; jit_ptx.c then lets the copies' loads go first. A 256-bin
 * histogram went from 41.2 to 36.6 us on an H100 (numba-cuda 36.9). */
#define UNROLL_COPIES 4
#define UNROLL_MAX_NODES                                                                           \
    96 /* of the body's tree: beyond, the copies cost more compile time than they win */

static int unroll_copies(cg *c, const jit_node *loop, LLVMValueRef trips) {
    if (!c->m->tg.ptx || LLVMIsConstant(trips)) return 1;
    int size = 0;
    for (int i = 0; i < loop->nbody; i++) {
        if (count_nodes(loop->body[i], stops_unrolling, 0)) return 1;
        size += count_nodes(loop->body[i], NULL, 0);
    }
    return size <= UNROLL_MAX_NODES ? UNROLL_COPIES : 1;
}

/* !llvm.loop !{<self>, !{!"llvm.loop.unroll.disable"}} on a loop's back edge. */
static void never_unroll(cg *c, LLVMValueRef latch) {
    LLVMContextRef ctx = c->m->tg.ctx;
    LLVMMetadataRef disable = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef self = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(ctx, &disable, 1)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id); /* frees the temporary */
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}

/* While counter < end: copies times { the loop variable = start + counter * step;
 * the body; counter += 1 }. Leaves the builder after the loop, where break
 * also goes. A remainder (of fewer than UNROLL_COPIES trips) is not for LLVM
 * to unroll again. */
static int range_loop(cg *c, const jit_node *n, LLVMTypeRef t, LLVMValueRef ctr, LLVMValueRef end,
                      LLVMValueRef start, LLVMValueRef step, int copies, bool remainder) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef one = LLVMConstInt(t, 1, 0);
    LLVMBasicBlockRef cb = block(c, "for.cond"), bb = block(c, "for.body"),
                      inc = block(c, "for.inc"), done = block(c, "for.end");
    LLVMBuildBr(b, cb);
    LLVMPositionBuilderAtEnd(b, cb);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, LLVMBuildLoad2(b, t, ctr, ""), end, ""), bb,
                    done);
    LLVMPositionBuilderAtEnd(b, bb);
    if (c->nloops >= 64) return fail(c, n, "loops nest too deeply");
    for (int j = 0; j < copies; j++) {
        if (j) LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, t, ctr, ""), one, ""), ctr);
        LLVMValueRef k = LLVMBuildLoad2(b, t, ctr, "");
        LLVMBuildStore(b, LLVMBuildAdd(b, start, LLVMBuildMul(b, k, step, ""), ""),
                       c->vars[n->a->v.var]);
        c->brk[c->nloops] = done;
        c->cont[c->nloops++] = inc;
        int rc = stmts(c, n->body, n->nbody);
        c->nloops--;
        if (rc < 0) return -1;
    }
    LLVMBuildBr(b, inc);
    LLVMPositionBuilderAtEnd(b, inc);
    LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, t, ctr, ""), one, ""), ctr);
    cancel_check(c, CANCEL_EVERY_FOR);
    LLVMValueRef latch = LLVMBuildBr(b, cb);
    if (remainder) never_unroll(c, latch);
    LLVMPositionBuilderAtEnd(b, done);
    return 0;
}

/* A range loop's trip count and values, computed before its copies. */
typedef struct {
    LLVMTypeRef t; /* the loop variable's */
    bool sg;       /* ... is signed */
    LLVMValueRef ctr, count, start, step;
} range_trips;

/* The loop's copies: unrolled on PTX, and without the cancel check where the
 * loop is short (below). Leaves the builder after the loop. */
static int range_loops(cg *c, const jit_node *n, const range_trips *r) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef t = r->t;
    LLVMValueRef ctr = r->ctr, count = r->count, start = r->start, step = r->step;
    int copies = unroll_copies(c, n, count);
    if (copies > 1) { /* no break in its body: the copies' loop only ever exits to the rest */
        LLVMValueRef whole =
            LLVMBuildSub(b, count, LLVMBuildURem(b, count, LLVMConstInt(t, copies, 0), ""), "");
        if (range_loop(c, n, t, ctr, whole, start, step, copies, false) < 0) return -1;
    }
    if (copies == 1 && c->m->cancel_checks && c->cancel_flag &&
        count_nodes(n, stops_versioning, 0) == 1) {
        /* An innermost loop shorter than the cancel check's period would
         * never read the flag, yet the check's branch and early exit keep
         * a CPU compiler from vectorising it (Intel's runtime: a pairwise
         * distance 1.9x slower): such a loop runs in a copy without it. */
        LLVMBasicBlockRef shrt = block(c, "for.short"), lng = block(c, "for.long"),
                          join = block(c, "for.join");
        LLVMBuildCondBr(
            b, LLVMBuildICmp(b, LLVMIntULT, count, LLVMConstInt(t, CANCEL_EVERY_FOR, 0), ""), shrt,
            lng);
        LLVMPositionBuilderAtEnd(b, shrt);
        c->m->cancel_checks = false;
        int rc = range_loop(c, n, t, ctr, count, start, step, 1, false);
        c->m->cancel_checks = true;
        if (rc < 0) return -1;
        LLVMBuildBr(b, join);
        LLVMPositionBuilderAtEnd(b, lng);
        if (range_loop(c, n, t, ctr, count, start, step, 1, false) < 0) return -1;
        LLVMBuildBr(b, join);
        LLVMPositionBuilderAtEnd(b, join);
        return 0;
    }
    return range_loop(c, n, t, ctr, count, start, step, 1, copies > 1);
}

/* ---- index checks hoisted out of innermost loops ----
 * In an innermost range loop, an access a[..., v, ...] whose array variable
 * the body never assigns is in range on every trip when its index v is the
 * loop's variable (a constant positive step; the body never assigns it) and
 * the first and last values are, or when v is a variable the body never
 * assigns and its value is. That is known before the loop: where every such
 * access is in range, the loop runs a copy in which they need neither the
 * index check nor Python's wrap of negative indices -- both of which keep a
 * CPU compiler from seeing neighbouring trips touch neighbouring elements
 * (Intel's runtime: a loop's float32 sum 5.0 -> 0.45 ms); otherwise the
 * checked copy runs, so a bad index is still reported as before. */

/* Marks in stored[] the variables that n's statements assign. */
static void mark_stored(const jit_node *n, bool *stored) {
    if (!n) return;
    if (n->kind == S_ASSIGN)
        for (int i = 0; i < n->nkids; i++) {
            const jit_node *t = n->kids[i];
            if (t->kind == N_VAR) stored[t->v.var] = true;
            for (int j = 0; t->kind == N_TUPLE && j < t->nkids; j++)
                if (t->kids[j]->kind == N_VAR) stored[t->kids[j]->v.var] = true;
        }
    if ((n->kind == S_AUGASSIGN || n->kind == S_FOR) && n->a && n->a->kind == N_VAR)
        stored[n->a->v.var] = true;
    for (int i = 0; i < n->nbody; i++) mark_stored(n->body[i], stored);
    for (int i = 0; i < n->norelse; i++) mark_stored(n->orelse[i], stored);
}

/* Adds to c->proven (as candidates) the accesses under n that qualify. */
static void find_proofs(cg *c, const jit_node *n, int loop_var, const bool *stored) {
    if (!n || (n->kind == N_REF && n->v.ref.kind == REF_DEVFUNC)) return;
    if (n->kind == N_INDEX && n->a && n->a->kind == N_VAR && n->a->type.kind == JT_ARRAY &&
        !stored[n->a->v.var] && c->arrays[n->a->v.var].base && n->nkids == n->a->type.ndim) {
        bool checked = c->m->bc != NULL;
        for (int k = 0; k < n->nkids; k++) {
            const jit_node *ix = n->kids[k];
            if (ix->kind != N_VAR || (ix->v.var != loop_var && stored[ix->v.var])) continue;
            jit_dtype d = dt_of(c, c->f->var_types[ix->v.var]);
            if (!jit_dtype_is_int(d) || (!checked && !jit_dtype_is_signed(d))) continue;
            cg_proof p = {n->a->v.var, k, ix->v.var};
            bool known = false;
            for (int i = 0; i < c->nproven && !known; i++)
                known = !memcmp(&c->proven[i], &p, sizeof p);
            if (!known && c->nproven < MAX_PROOFS) c->proven[c->nproven++] = p;
        }
    }
    find_proofs(c, n->a, loop_var, stored);
    find_proofs(c, n->b, loop_var, stored);
    find_proofs(c, n->c, loop_var, stored);
    for (int i = 0; i < n->nkids; i++) find_proofs(c, n->kids[i], loop_var, stored);
    for (int i = 0; i < n->nbody; i++) find_proofs(c, n->body[i], loop_var, stored);
    for (int i = 0; i < n->norelse; i++) find_proofs(c, n->orelse[i], loop_var, stored);
}

/* v (of dtype d) as an i64 compared unsigned with a shape: a negative
 * signed value is then out of range too. */
static LLVMValueRef index_i64(cg *c, LLVMValueRef v, jit_dtype d) {
    if (jit_dtype_is_signed(d)) return conv_dt(c, v, d, JIT_I64);
    return d == JIT_U64 ? v : LLVMBuildZExt(c->m->b, v, c->m->i64, "");
}

/* Whether every proof in c->proven holds, computed before the loop. */
static LLVMValueRef proofs_hold(cg *c, const jit_node *n, const range_trips *r) {
    LLVMBuilderRef b = c->m->b;
    int loop_var = n->a->v.var;
    jit_dtype ld = dt_of(c, c->f->var_types[loop_var]);
    LLVMValueRef last = LLVMBuildAdd(
        b, r->start,
        LLVMBuildMul(b, LLVMBuildSub(b, r->count, LLVMConstInt(r->t, 1, 0), ""), r->step, ""), "");
    LLVMValueRef first64 = index_i64(c, r->start, ld), last64 = index_i64(c, last, ld);
    LLVMValueRef ok = jit_dtype_is_signed(ld)
                          ? LLVMBuildICmp(b, LLVMIntSGE, first64, LLVMConstInt(c->m->i64, 0, 0), "")
                          : LLVMConstInt(c->m->i1, 1, 0);
    for (int i = c->nassumed; i < c->nproven; i++) {
        const cg_proof *p = &c->proven[i];
        LLVMValueRef shape = c->arrays[p->arr].shape[p->axis], v;
        if (p->idx == loop_var) {
            v = last64;
        } else {
            jit_dtype d = dt_of(c, c->f->var_types[p->idx]);
            v = index_i64(c, LLVMBuildLoad2(b, ltype_dt(c, d), c->vars[p->idx], ""), d);
        }
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, v, shape, ""), "");
    }
    return ok;
}

/* The loop, as a checked-before copy where that serves, and the plain one. */
static int hoisted_loops(cg *c, const jit_node *n, const range_trips *r) {
    LLVMBuilderRef b = c->m->b;
    int base = c->nassumed;
    bool pos_step = LLVMIsAConstantInt(r->step) && LLVMConstIntGetSExtValue(r->step) > 0;
    if (c->nproven > base || !pos_step || count_nodes(n, stops_versioning, 0) != 1)
        return range_loops(c, n, r);
    bool *stored = calloc((size_t)c->f->nvars + 1, 1);
    if (!stored) return fail(c, n, "out of memory");
    for (int i = 0; i < n->nbody; i++) mark_stored(n->body[i], stored);
    for (int i = 0; i < n->nbody; i++) find_proofs(c, n->body[i], n->a->v.var, stored);
    bool loop_var_stored = stored[n->a->v.var];
    free(stored);
    int k = base; /* proofs on a loop variable the body assigns say nothing */
    for (int i = base; i < c->nproven; i++)
        if (!(loop_var_stored && c->proven[i].idx == n->a->v.var)) c->proven[k++] = c->proven[i];
    c->nproven = k;
    if (k == base) return range_loops(c, n, r);
    LLVMBasicBlockRef fast = block(c, "for.checked_before"), slow = block(c, "for.checked"),
                      join = block(c, "for.join");
    LLVMBuildCondBr(b, proofs_hold(c, n, r), fast, slow);
    LLVMPositionBuilderAtEnd(b, fast);
    int rc = range_loops(c, n, r);
    c->nproven = base;
    if (rc < 0) return -1;
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, slow);
    if (range_loops(c, n, r) < 0) return -1;
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    return 0;
}

static int stmt(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    switch ((jit_node_kind)n->kind) {
    case S_ASSIGN: {
        jit_node *val = n->a;
        if (val->kind == N_TUPLE) { /* evaluate every value, then assign: a, b = b, a */
            LLVMValueRef vs[16];
            if (val->nkids > 16) return fail(c, n, "at most 16 values can be unpacked");
            for (int i = 0; i < val->nkids; i++)
                if (val->kids[i]->type.kind != JT_ARRAY && !(vs[i] = expr(c, val->kids[i])))
                    return -1;
            for (int t = 0; t < n->nkids; t++)
                for (int i = 0; i < val->nkids; i++)
                    if (assign(c, n->kids[t]->kids[i], val->kids[i], vs[i], val->kids[i]->type) < 0)
                        return -1;
            return 0;
        }
        if (val->type.kind == JT_TUPLE) { /* n, m = a.shape */
            cg_array a;
            if (array_of(c, val->a, &a) < 0) return -1;
            for (int t = 0; t < n->nkids; t++)
                for (int i = 0; i < n->kids[t]->nkids; i++)
                    if (assign(c, n->kids[t]->kids[i], NULL, a.shape[i], jit_weak_int()) < 0)
                        return -1;
            return 0;
        }
        LLVMValueRef v = NULL;
        if (val->type.kind != JT_ARRAY && !(v = expr(c, val))) return -1;
        for (int t = 0; t < n->nkids; t++)
            if (assign(c, n->kids[t], val, v, val->type) < 0) return -1;
        return 0;
    }
    case S_AUGASSIGN: {
        jit_node *t = n->a;
        if (t->kind == N_VAR) {
            LLVMValueRef cur = expr(c, t), v = cur ? expr(c, n->b) : NULL;
            if (!v) return -1;
            jit_node tmp = *n; /* the operation's type is the promotion of both */
            tmp.type = jit_promote(t->type, n->b->type);
            if (n->op == OP_DIV) tmp.type = jit_true_divide(t->type, n->b->type);
            LLVMValueRef r = binop(c, &tmp, n->op, t, n->b, cur, v);
            return r ? store_var(c, t, r, tmp.type) : -1;
        }
        cg_array a;
        if (array_of(c, t->a, &a) < 0) return -1;
        LLVMValueRef p = element_ptr(c, t, &a);
        if (!p) return -1;
        LLVMValueRef cur = load_elem(c, p, a.t.dtype), v = expr(c, n->b);
        if (!v) return -1;
        jit_type et = jit_scalar(a.t.dtype);
        jit_node tmp = *n, elem = *t;
        elem.type = et;
        tmp.type = n->op == OP_DIV ? jit_true_divide(et, n->b->type) : jit_promote(et, n->b->type);
        if (et.dtype == JIT_BOOL && n->b->type.kind == JT_SCALAR && n->b->type.dtype == JIT_BOOL &&
            n->op != OP_BITAND && n->op != OP_BITOR && n->op != OP_BITXOR)
            tmp.type = jit_scalar(JIT_I64);
        LLVMValueRef r = binop(c, &tmp, n->op, &elem, n->b, cur, v);
        if (!r) return -1;
        store_elem(c, p, conv_dt(c, r, dt_of(c, tmp.type), a.t.dtype), a.t.dtype);
        return 0;
    }
    case S_EXPR: return expr(c, n->a) ? 0 : -1;
    case S_PASS: return 0;
    case S_IF: {
        LLVMValueRef cond = truth(c, n->a);
        if (!cond) return -1;
        LLVMBasicBlockRef tb = block(c, "then"), eb = block(c, "else"), done = block(c, "endif");
        LLVMBuildCondBr(b, cond, tb, eb);
        LLVMPositionBuilderAtEnd(b, tb);
        if (stmts(c, n->body, n->nbody) < 0) return -1;
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, eb);
        if (stmts(c, n->orelse, n->norelse) < 0) return -1;
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, done);
        return 0;
    }
    case S_WHILE: {
        LLVMBasicBlockRef cb = block(c, "while.cond"), bb = block(c, "while.body"),
                          done = block(c, "while.end");
        LLVMBuildBr(b, cb);
        LLVMPositionBuilderAtEnd(b, cb);
        cancel_check(c, CANCEL_EVERY_WHILE); /* here, where continue comes back too */
        LLVMValueRef cond = truth(c, n->a);
        if (!cond) return -1;
        LLVMBuildCondBr(b, cond, bb, done);
        LLVMPositionBuilderAtEnd(b, bb);
        if (c->nloops >= 64) return fail(c, n, "loops nest too deeply");
        c->brk[c->nloops] = done;
        c->cont[c->nloops++] = cb;
        int rc = stmts(c, n->body, n->nbody);
        c->nloops--;
        if (rc < 0) return -1;
        LLVMBuildBr(b, cb);
        LLVMPositionBuilderAtEnd(b, done);
        return 0;
    }
    case S_FOR: {
        jit_type lt_ = c->f->var_types[n->a->v.var];
        LLVMTypeRef t = ltype(c, lt_);
        bool sg = jit_dtype_is_signed(dt_of(c, lt_));
        LLVMValueRef args[3];
        for (int i = 0; i < n->nkids; i++) {
            LLVMValueRef v = expr(c, n->kids[i]);
            if (!v) return -1;
            args[i] = conv(c, v, n->kids[i]->type, lt_);
        }
        LLVMValueRef start = n->nkids > 1 ? args[0] : LLVMConstInt(t, 0, 0);
        LLVMValueRef stop = n->nkids > 1 ? args[1] : args[0];
        LLVMValueRef step = n->nkids > 2 ? args[2] : LLVMConstInt(t, 1, 0);
        if (c->m->bc &&
            !LLVMIsAConstantInt(step) && /* Python's ValueError (a constant 0 is a CompileError) */
            fault_check(c, n->kids[2], LLVMBuildICmp(b, LLVMIntEQ, step, LLVMConstInt(t, 0, 0), ""),
                        JIT_FAULT_ZERO_STEP, NULL) < 0)
            return -1;
        /* Python's trip count, computed once: a loop of a known count (a counter
         * from 0) is one LLVM unrolls and vectorises whatever the step's sign, and
         * it cannot overflow past stop. Assigning the loop variable in the body
         * does not change the iteration. */
        LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
        LLVMValueRef pos = LLVMBuildICmp(b, sg ? LLVMIntSGT : LLVMIntNE, step, zero, "");
        LLVMValueRef neg =
            sg ? LLVMBuildICmp(b, LLVMIntSLT, step, zero, "") : LLVMConstInt(c->m->i1, 0, 0);
        LLVMValueRef mag = sg ? LLVMBuildSelect(b, neg, LLVMBuildNeg(b, step, ""), step, "") : step;
        mag = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, mag, zero, ""), one, mag, "");
        LLVMValueRef lo = LLVMBuildSelect(b, neg, stop, start, ""),
                     hi = LLVMBuildSelect(b, neg, start, stop, "");
        LLVMValueRef runs =
            LLVMBuildAnd(b, LLVMBuildICmp(b, sg ? LLVMIntSLT : LLVMIntULT, lo, hi, ""),
                         LLVMBuildOr(b, pos, neg, ""), ""); /* range(..., 0) runs nothing */
        LLVMValueRef count = LLVMBuildAdd(
            b, LLVMBuildUDiv(b, LLVMBuildSub(b, LLVMBuildSub(b, hi, lo, ""), one, ""), mag, ""),
            one, "");
        count = LLVMBuildSelect(b, runs, count, zero, "trips");
        LLVMValueRef ctr = entry_alloca(c, t, "range.k");
        LLVMBuildStore(b, zero, ctr);
        range_trips trips = {t, sg, ctr, count, start, step};
        return hoisted_loops(c, n, &trips);
    }
    case S_BREAK:
    case S_CONTINUE:
        if (!c->nloops)
            return fail(c, n, "'%s' outside a loop", n->kind == S_BREAK ? "break" : "continue");
        LLVMBuildBr(b, n->kind == S_BREAK ? c->brk[c->nloops - 1] : c->cont[c->nloops - 1]);
        dead_block(c);
        return 0;
    case S_RETURN:
        if (n->a && c->ret_slot) {
            LLVMValueRef v = expr(c, n->a);
            if (!v) return -1;
            LLVMBuildStore(b, conv(c, v, n->a->type, c->ret_type), c->ret_slot);
        }
        LLVMBuildBr(b, c->ret_block);
        dead_block(c);
        return 0;
    default: return fail(c, n, "internal: statement kind %d", n->kind);
    }
}

static int stmts(cg *c, jit_node **body, int n) {
    for (int i = 0; i < n; i++)
        if (stmt(c, body[i]) < 0) return -1;
    return 0;
}

/* The body, then the single return block. The builder is in the entry block. */
static int emit_function_body(cg *c) {
    LLVMBuilderRef b = c->m->b;
    c->ret_block = block(c, "return");
    if (stmts(c, c->f->body, c->f->nbody) < 0) return -1;
    LLVMBuildBr(b, c->ret_block);
    LLVMPositionBuilderAtEnd(b, c->ret_block);
    if (c->ret_slot)
        LLVMBuildRet(b, LLVMBuildLoad2(b, ltype(c, c->ret_type), c->ret_slot, ""));
    else
        LLVMBuildRetVoid(b);
    return 0;
}

void jit_symbol_sanitize(char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            *s = '_';
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
            bc.leave = !count_nodes(f->body[i], is_barrier, 0);
    }
    if (flags & JIT_CANCEL) {
        m.cancel = m.cancel_checks = true;
        for (int i = 0; i < f->nbody && m.cancel_checks; i++)
            m.cancel_checks = !count_nodes(f->body[i], is_barrier, 0);
    }
    m.tg.ctx = ctx;
    m.tg.ptx = t->form == JIT_PTX;
    m.tg.mod = LLVMModuleCreateWithNameInContext(f->name, ctx);
    m.b = m.tg.b = LLVMCreateBuilderInContext(ctx);
    m.i1 = LLVMInt1TypeInContext(ctx);
    m.i8 = LLVMInt8TypeInContext(ctx);
    m.i32 = LLVMInt32TypeInContext(ctx);
    m.i64 = LLVMInt64TypeInContext(ctx);
    m.f32 = LLVMFloatTypeInContext(ctx);
    m.f64 = LLVMDoubleTypeInContext(ctx);
    m.gptr = LLVMPointerTypeInContext(ctx, 1);
    m.voidt = LLVMVoidTypeInContext(ctx);
    jit_target_setup(&m.tg);

    cg c = {.m = &m, .f = f};
    LLVMTypeRef pts[512];
    int np = 0;
    for (int i = 0; i < nargs; i++) {
        if (np + param_count(args[i]) > 500) {
            fail(&c, NULL, "too many kernel arguments");
            goto fail;
        }
        param_types(&c, args[i], pts + np);
        np += param_count(args[i]);
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
    LLVMPositionBuilderAtEnd(m.b, block(&c, "entry"));
    make_allocas(&c);
    if (m.bc) c.record = LLVMGetParam(c.fn, (unsigned)np - 1 - (m.cancel ? 1 : 0));
    if (m.cancel) c.cancel_flag = LLVMGetParam(c.fn, (unsigned)np - 1);
    int pi = 0;
    for (int i = 0; i < nargs; i++) {
        LLVMValueRef pv[8];
        for (int k = 0; k < param_count(args[i]); k++)
            pv[k] = LLVMGetParam(c.fn, (unsigned)(pi + k));
        bind_param(&c, i + 1, args[i], pv);
        pi += param_count(args[i]);
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
                                i64c(&c, INT64_MAX), "id");
        LLVMValueRef o = LLVMBuildICmp(m.b, LLVMIntUGE, c.uid[d], c.range[d], "");
        outside = outside ? LLVMBuildOr(m.b, outside, o, "") : o;
    }
    if (outside) {
        LLVMBasicBlockRef body = block(&c, "body"), early = block(&c, "tail");
        LLVMBuildCondBr(m.b, outside, early, body);
        LLVMPositionBuilderAtEnd(m.b, early);
        LLVMBuildRetVoid(m.b);
        LLVMPositionBuilderAtEnd(m.b, body);
    }
    int rc = emit_function_body(&c);
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
