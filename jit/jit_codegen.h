/* jit_codegen: a typed jit_tree -> an LLVM module for one target.
 *
 * jit_codegen.c sets up the module and function and walks the tree with
 * jit_cg_*.c, one concern each (jit_cg.h lists them); jit_target.c holds what differs between the
 * SPIR (OpenCL) and NVPTX (CUDA) targets: triple, data layout, how a work
 * item finds its id, how kernels are marked, and the names of math functions
 * (OpenCL builtins vs libdevice); jit_print.c how print() shows bools and
 * floats. Internal to jit/. */
#ifndef JIT_CODEGEN_H
#define JIT_CODEGEN_H

#include <llvm-c/Core.h>

#include "jit_tree.h"

/* Builds the kernel f (already typed by jit_infer for item + args; an NdItem
 * for an NdRange launch) into a new module in ctx, as the symbol entry.
 * flags: JIT_BOUNDSCHECK adds the index checks and the bounds record
 * parameter; *bounds_sites then gets what jit_artifact.bounds_sites holds
 * (malloc'ed), else NULL. */
int jit_codegen(jit_func *f, const jit_type *args, int nargs, int range_ndim, const jit_target *t,
                unsigned flags, LLVMContextRef ctx, const char *entry, LLVMModuleRef *out,
                char **bounds_sites, jit_error *err);
/* Makes s a valid OpenCL/PTX identifier in place (anything else becomes '_'). */
void jit_symbol_sanitize(char *s);

/* ---- jit_target.c ---- */
typedef struct {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    bool ptx;
    LLVMValueRef print_words; /* jit_print.c's, made at first use */
} jit_tgt;

void jit_target_setup(jit_tgt *t); /* triple, data layout, module metadata */
/* Triple and data layout only: for a module that kernel modules link (the
 * device library's), whose metadata would be added to theirs a second time. */
void jit_target_layout(jit_tgt *t);
/* Also the launch bounds, on PTX (0: none). */
void jit_target_mark_kernel(jit_tgt *t, LLVMValueRef fn, int max_threads, int min_blocks);
void jit_target_mark_function(jit_tgt *t, LLVMValueRef fn); /* a device function */
void jit_target_mark_call(jit_tgt *t, LLVMValueRef call);
/* The global id of hardware dimension hw (0 fastest), as i64. */
LLVMValueRef jit_target_global_id(jit_tgt *t, int hw);
/* The work-group model, as i64, of hardware dimension hw. */
typedef enum { JIT_LOCAL_ID, JIT_LOCAL_SIZE, JIT_GROUP_ID, JIT_NUM_GROUPS } jit_wg_query;
LLVMValueRef jit_target_wg(jit_tgt *t, jit_wg_query q, int hw);
/* A barrier for the work-group with global and local memory fences. */
void jit_target_barrier(jit_tgt *t);
/* Address spaces of global, local (work-group) and private memory. */
unsigned jit_target_space(jit_tgt *t, jit_space s);
/* An internal constant byte array (data[len]) where printf can read it as a %s
 * argument: OpenCL's constant space, the global space on NVPTX. Point only
 * past its first byte: the SPIR-V translator types a pointer to the array
 * itself as one to an array, which printf does not take for a string. */
LLVMValueRef jit_target_const_bytes(jit_tgt *t, const char *name, const char *data, size_t len);
/* printf(fmt, args...) on the device: the OpenCL.std printf instruction in
 * SPIR-V, CUDA's vprintf with its argument buffer. args are i32, i64, float,
 * double or pointers into jit_target_const_bytes arrays (%s), promoted as C
 * varargs are (at most 63). -1 when out of memory. */
int jit_target_printf(jit_tgt *t, const char *fmt, LLVMValueRef *args, int nargs);
/* A math function of the OpenCL/libdevice family on float (f64 false) or double
 * arguments: name is the C name ("sin", "atan2", "ldexp", "tgamma", "rint"). */
LLVMValueRef jit_target_math(jit_tgt *t, const char *name, bool f64, LLVMValueRef *args, int nargs);

/* ---- jit_print.c: print()'s bools and floats ---- */
/* A pointer to "True" or "False" (bool v) for a %s. */
LLVMValueRef jit_print_bool(jit_tgt *t, LLVMValueRef v);
/* x's bits as an i64, of its own width (x a double; f32: holding a float32),
 * for the device library's float_repr (jit/lib/print.py). */
LLVMValueRef jit_print_float_bits(jit_tgt *t, LLVMValueRef x, bool f32);
/* The six arguments of "%s%.0ld%s%.0ld%s%.0ld" from float_repr's six parts
 * (i64; the words and the point slot as indices). */
void jit_print_float_parts(jit_tgt *t, LLVMValueRef parts[6], LLVMValueRef out[6]);

#endif
