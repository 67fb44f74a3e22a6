/* jit_cg: what the code generator's files share -- for jit_codegen.c and
 * jit_cg_*.c only (the rest of jit/ sees jit_codegen.h).
 *
 * The walk of a typed tree is one recursion cut into files by concern: an
 * expression holds calls and indexing, a call's arguments are expressions, a
 * device function's body is statements. So the files call one another through
 * the functions declared here, all on the context below: cg_module for the
 * module being built, cg for the function being generated in it. */
#ifndef JIT_CG_H
#define JIT_CG_H

#include <stdbool.h>

#include "jit_builtins.h"
#include "jit_codegen.h"

/* An array as generated code holds it: never in memory (jit_codegen.c). */
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

/* JIT_BOUNDSCHECK's state for the module (jit_cg_bounds.c). */
struct cg_bounds {
    bool leave; /* a failing work-item of the kernel returns: no barrier waits for it */
    const char *entry;
    char *sites; /* jit_artifact.bounds_sites so far */
    size_t len;
    int nsites;
    LLVMValueRef local_scratch; /* made at first need */
};

/* An integer's value, exactly, whatever its type: its 64 bits (extended as
 * its type says) and whether it is negative. Comparing these is comparing the
 * values, as NumPy 2 and Python do for signed with unsigned (-3 < uint8(0)),
 * where converting both to the promoted type would wrap one of them. */
typedef struct {
    LLVMValueRef neg, bits;
} int_key;

/* A range loop's trip count and values, computed before its copies. */
typedef struct {
    LLVMTypeRef t; /* the loop variable's */
    bool sg;       /* ... is signed */
    LLVMValueRef ctr, count, start, step;
} range_trips;

/* ---- jit_codegen.c: the driver, and what every function being generated needs ---- */
/* m's module (named name, in ctx: no triple yet), builder and types, for
 * m->target. */
void jit_cg_module_init(cg_module *m, LLVMContextRef ctx, const char *name);
int jit_cg_fail(cg *c, const jit_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
LLVMValueRef jit_cg_entry_alloca(cg *c, LLVMTypeRef t, const char *name);
LLVMBasicBlockRef jit_cg_block(cg *c, const char *name);
void jit_cg_dead_block(cg *c);
int jit_cg_count_nodes(const jit_node *n, bool (*pred)(const jit_node *), int depth);
bool jit_cg_is_barrier(const jit_node *n);
int jit_cg_param_count(jit_type t);
void jit_cg_param_types(cg *c, jit_type t, LLVMTypeRef *out);
void jit_cg_bind_param(cg *c, int v, jit_type t, LLVMValueRef *p);
void jit_cg_make_allocas(cg *c);
int jit_cg_emit_function_body(cg *c);

/* ---- jit_cg_types.c: LLVM types, conversions between dtypes ---- */
jit_dtype jit_cg_dt_of(cg *c, jit_type t);
LLVMTypeRef jit_cg_ltype_dt(cg *c, jit_dtype d);
LLVMTypeRef jit_cg_ptr_in(cg *c, jit_space sp);
LLVMTypeRef jit_cg_ltype(cg *c, jit_type t);
LLVMTypeRef jit_cg_mtype_dt(cg *c, jit_dtype d);
LLVMValueRef jit_cg_conv_dt(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to);
LLVMValueRef jit_cg_conv(cg *c, LLVMValueRef v, jit_type from, jit_type to);
LLVMValueRef jit_cg_i64c(cg *c, long long v);

/* ---- jit_cg_arith.c: operators on numbers ---- */
LLVMValueRef jit_cg_math1(cg *c, const char *name, jit_dtype d, LLVMValueRef x);
LLVMValueRef jit_cg_compare(cg *c, int op, jit_dtype d, LLVMValueRef x, LLVMValueRef y);
bool jit_cg_exact_int(jit_type t);
bool jit_cg_is_signed_type(cg *c, jit_type t);
int_key jit_cg_key_of(cg *c, LLVMValueRef v, jit_type t);
LLVMValueRef jit_cg_key_less(cg *c, int_key x, int_key y);
LLVMValueRef jit_cg_compare_values(cg *c, int op, LLVMValueRef x, jit_type tx, LLVMValueRef y,
                                   jit_type ty);
LLVMValueRef jit_cg_binop(cg *c, jit_node *n, int op, jit_node *an, jit_node *bn, LLVMValueRef x,
                          LLVMValueRef y);

/* ---- jit_cg_expr.c: expressions; NULL with the error set on failure ---- */
LLVMValueRef jit_cg_expr(cg *c, jit_node *n);
LLVMValueRef jit_cg_truth(cg *c, jit_node *n); /* n as a bool */

/* ---- jit_cg_complex.c: complex numbers ---- */
LLVMValueRef jit_cg_cx_arith(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q,
                             const jit_node *qn);
LLVMValueRef jit_cg_cx_compare(cg *c, int op, jit_dtype d, LLVMValueRef p, LLVMValueRef q);
LLVMValueRef jit_cg_cx_convert(cg *c, LLVMValueRef v, jit_dtype from, jit_dtype to);
LLVMValueRef jit_cg_cx_builtin(cg *c, jit_node *n, const jit_builtin *bt, LLVMValueRef *a);
LLVMValueRef jit_cg_cx_part(cg *c, jit_node *n);
LLVMValueRef jit_cg_cx_conj_method(cg *c, jit_node *n);

/* ---- jit_cg_bounds.c: JIT_BOUNDSCHECK's run-time checks ---- */
int jit_cg_fault_check(cg *c, const jit_node *at, LLVMValueRef bad, jit_fault kind,
                       LLVMValueRef value);
LLVMValueRef jit_cg_bounds_check(cg *c, jit_node *n, cg_array *a, LLVMValueRef *raw,
                                 LLVMValueRef *idx, const bool *uns, const bool *proven,
                                 LLVMValueRef p);

/* ---- jit_cg_memory.c: arrays' elements, local and private arrays, atomics ---- */
int jit_cg_array_of(cg *c, jit_node *n, cg_array *out);
LLVMValueRef jit_cg_element_ptr(cg *c, jit_node *n, cg_array *a);
LLVMValueRef jit_cg_load_elem(cg *c, LLVMValueRef p, jit_dtype d);
void jit_cg_store_elem(cg *c, LLVMValueRef p, LLVMValueRef v, jit_dtype d);
int jit_cg_scratch_array(cg *c, jit_node *n, cg_array *out);
LLVMValueRef jit_cg_atomic_ptr(cg *c, jit_node *n);
LLVMValueRef jit_cg_atomic_op(cg *c, jit_node *n, jit_type at, LLVMValueRef p);

/* ---- jit_cg_call.c, jit_cg_print.c, jit_cg_devfn.c: calls ---- */
LLVMValueRef jit_cg_call(cg *c, jit_node *n);
LLVMValueRef jit_cg_no_value(cg *c);
LLVMValueRef jit_cg_emit_print(cg *c, jit_node *n);
LLVMValueRef jit_cg_call_devfn(cg *c, jit_node *n);
/* A call of the device library's function name (jit_lib.h) on arguments of
 * types at[nargs]: a number is one value of v, an array its parameters' values
 * (jit_cg_param_count: base, offset, shapes, strides); 16 values at most.
 * inlined: the kernel's pipeline inlines it (arithmetic); else it stays a
 * call, and the kernel's pipeline leaves its body alone (a slow path such
 * as print's). *ret its result's type. Errors at n. */
LLVMValueRef jit_cg_call_lib(cg *c, const jit_node *n, const char *name, const jit_type *at,
                             LLVMValueRef *v, int nargs, bool inlined, jit_type *ret);

/* ---- jit_cg_stmt.c, jit_cg_loop.c, jit_cg_hoist.c: statements (-1: the error is set) ---- */
int jit_cg_stmts(cg *c, jit_node **body, int n);
int jit_cg_while(cg *c, jit_node *n);
int jit_cg_for(cg *c, jit_node *n);
bool jit_cg_stops_versioning(const jit_node *n);
int jit_cg_range_loops(cg *c, const jit_node *n, const range_trips *r);
int jit_cg_hoisted_loops(cg *c, const jit_node *n, const range_trips *r);

#endif
