/* jit_backend: the parts shared by both device paths -- the optimisation
 * pipeline, and SPIR-V emission (translator shim in jit_spirv.cpp, validator
 * in jit_spirv_tools.c). PTX lives in jit_ptx.c, the LLVM target set-up both
 * use in jit_machine.c. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "jit_backend.h"

void jit_blob_free(jit_blob *b) {
    if (!b) return;
    free(b->data);
    b->data = NULL;
    b->size = 0;
}

/* LLVM's messages often end in a newline; ours are one line. */
static void jit_trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = '\0';
}

static int jit_triple_is(LLVMModuleRef m, const char *prefix) {
    const char *t = LLVMGetTarget(m);
    return t && strncmp(t, prefix, strlen(prefix)) == 0;
}

/* Functions named kernels by nvvm.annotations: !{ptr @f, !"kernel", i32 1, ...}. */
static int jit_annotated_kernel(LLVMModuleRef m, LLVMValueRef f) {
    unsigned n = LLVMGetNamedMetadataNumOperands(m, "nvvm.annotations");
    if (n == 0) return 0;
    LLVMValueRef *nodes = malloc(n * sizeof *nodes);
    if (!nodes) return 0;
    LLVMGetNamedMetadataOperands(m, "nvvm.annotations", nodes);
    int found = 0;
    for (unsigned i = 0; i < n && !found; i++) {
        unsigned k = LLVMGetMDNodeNumOperands(nodes[i]);
        if (k < 3) continue;
        LLVMValueRef *ops = malloc(k * sizeof *ops);
        if (!ops) break;
        LLVMGetMDNodeOperands(nodes[i], ops);
        if (ops[0] == f) {
            for (unsigned j = 1; j + 1 < k; j += 2) {
                unsigned len = 0;
                const char *key = ops[j] ? LLVMGetMDString(ops[j], &len) : NULL;
                if (key && len == 6 && memcmp(key, "kernel", 6) == 0 && ops[j + 1] &&
                    LLVMIsAConstantInt(ops[j + 1]) && LLVMConstIntGetZExtValue(ops[j + 1]) == 1)
                    found = 1;
            }
        }
        free(ops);
    }
    free(nodes);
    return found;
}

static int jit_is_kernel(LLVMModuleRef m, LLVMValueRef f) {
    unsigned cc = LLVMGetFunctionCallConv(f);
    return cc == LLVMPTXKernelCallConv || cc == LLVMSPIRKERNELCallConv ||
           jit_annotated_kernel(m, f);
}

/* A kernel module exports only its kernels: internal device functions (and
 * libdevice's) are inlined or dropped instead of being emitted for nothing.
 * Globals keep their linkage: the runtime may look one up by name. */
static void jit_internalize(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f) || jit_is_kernel(m, f)) continue;
        LLVMSetLinkage(f, LLVMInternalLinkage);
        LLVMSetVisibility(f, LLVMDefaultVisibility);
        LLVMSetDLLStorageClass(f, LLVMDefaultStorageClass);
    }
}

/* Loop idiom recognition would turn a zeroing or copying loop over a private
 * array into llvm.memset/memcpy with a variable length; the translator emits
 * those as helper functions that come back from SPIR-V as mis-mangled
 * intrinsics (invalid IR). Saying the C library lacks them stops that. */
static void jit_no_mem_builtins(LLVMModuleRef m) {
    static const char *const names[] = {"no-builtin-memset", "no-builtin-memcpy",
                                        "no-builtin-memmove"};
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f)) continue;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            LLVMAddAttributeAtIndex(
                f, LLVMAttributeFunctionIndex,
                LLVMCreateStringAttribute(ctx, names[i], (unsigned)strlen(names[i]), "", 0));
    }
}

/* LLVM 15's C API leaves the SLP vectorizer in default<O3> whatever the pass
 * builder options say, and it turns chains of comparisons or products into
 * <N x ...> vectors, odd-width masks (bitcast <4 x i1> to i4) and
 * llvm.vector.reduce.* calls -- which the translator cannot take (it exits the
 * process). noimplicitfloat ("no vector registers to spare") is what both
 * vectorizers honour per function; the translator drops the attribute. */
static void jit_no_vectorize(LLVMModuleRef m) {
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    unsigned k = LLVMGetEnumAttributeKindForName("noimplicitfloat", 15);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f))
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(ctx, k, 0));
}

/* A type SPIR-V 1.0 without extensions has: integers of 1, 8, 16, 32 or 64
 * bits, vectors of 2, 3, 4, 8 or 16 of them (or floats), pointers, arrays and
 * structs of those. */
static int jit_spirv_type_ok(LLVMTypeRef t, char *why, size_t len) {
    switch (LLVMGetTypeKind(t)) {
    case LLVMIntegerTypeKind: {
        unsigned w = LLVMGetIntTypeWidth(t);
        if (w == 1 || w == 8 || w == 16 || w == 32 || w == 64) return 0;
        snprintf(why, len, "a %u-bit integer", w);
        return -1;
    }
    case LLVMVectorTypeKind: {
        unsigned n = LLVMGetVectorSize(t);
        if (n != 2 && n != 3 && n != 4 && n != 8 && n != 16) {
            snprintf(why, len, "a vector of %u elements", n);
            return -1;
        }
        return jit_spirv_type_ok(LLVMGetElementType(t), why, len);
    }
    case LLVMArrayTypeKind: return jit_spirv_type_ok(LLVMGetElementType(t), why, len);
    case LLVMStructTypeKind:
        for (unsigned i = 0, n = LLVMCountStructElementTypes(t); i < n; i++)
            if (jit_spirv_type_ok(LLVMStructGetTypeAtIndex(t, i), why, len)) return -1;
        return 0;
    default: return 0;
    }
}

/* What the translator would die on (it reports most errors by exiting the
 * process) becomes a message instead: a type SPIR-V lacks, or an LLVM
 * intrinsic it cannot lower. The optimiser is set up not to make these; this
 * catches what it still does. */
static int jit_spirv_legal(LLVMModuleRef m, char *err, size_t errlen) {
    char why[128];
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        size_t nlen = 0;
        const char *name = LLVMGetValueName2(f, &nlen);
        if (LLVMIsDeclaration(f)) {
            if (!strncmp(name, "llvm.vector.reduce.", 19) && LLVMGetFirstUse(f)) {
                snprintf(err, errlen, "the optimised code calls %s, which SPIR-V cannot express",
                         name);
                return -1;
            }
            continue;
        }
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
                int bad = jit_spirv_type_ok(LLVMTypeOf(i), why, sizeof why);
                for (int k = 0, n = LLVMGetNumOperands(i); !bad && k < n; k++)
                    bad = jit_spirv_type_ok(LLVMTypeOf(LLVMGetOperand(i, (unsigned)k)), why,
                                            sizeof why);
                if (bad) {
                    snprintf(err, errlen, "the optimised code of %s uses %s, which SPIR-V lacks",
                             name, why);
                    return -1;
                }
            }
    }
    return 0;
}

/* The translator (15) cannot translate freeze, which the pipeline adds for
 * i // n next to i % n (DivRemPairs) and when it unswitches loops. Newer
 * translators emit a freeze as its operand; so does this. */
static void jit_drop_freeze(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
                LLVMValueRef next = LLVMGetNextInstruction(i);
                if (LLVMGetInstructionOpcode(i) == LLVMFreeze) {
                    LLVMReplaceAllUsesWith(i, LLVMGetOperand(i, 0));
                    LLVMInstructionEraseFromParent(i);
                }
                i = next;
            }
}

/* Codegen clears an id's sign bit (ids are below 2^63) so that the optimiser
 * drops the negative-index wrap-around of whatever derives from it. Once it
 * has, the mask is a no-op, but one that hides from the device compiler that
 * neighbouring work-items' ids are consecutive: Intel's CPU runtime then
 * turns a[i] into gathers and scatters (2-3x slower than PoCL). So it goes. */
static void jit_unmask_ids(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
                LLVMValueRef next = LLVMGetNextInstruction(i), id = NULL, mask = NULL;
                if (LLVMGetInstructionOpcode(i) == LLVMAnd)
                    id = LLVMGetOperand(i, 0), mask = LLVMGetOperand(i, 1);
                LLVMValueRef callee = id && LLVMIsACallInst(id) ? LLVMGetCalledValue(id) : NULL;
                size_t len = 0;
                const char *name = callee ? LLVMGetValueName2(callee, &len) : "";
                if (callee && strcmp(name, "_Z13get_global_idj") == 0 && LLVMIsAConstantInt(mask) &&
                    LLVMConstIntGetZExtValue(mask) == (unsigned long long)INT64_MAX) {
                    LLVMReplaceAllUsesWith(i, id);
                    LLVMInstructionEraseFromParent(i);
                }
                i = next;
            }
}

/* llvm.umin.i1 and its kin as the and/or they are on bools (the signed
 * ones see true as -1); NULL for any other call. */
static LLVMValueRef bool_min_max(LLVMBuilderRef b, LLVMValueRef call) {
    LLVMValueRef callee = LLVMGetCalledValue(call);
    size_t len = 0;
    const char *name = callee ? LLVMGetValueName2(callee, &len) : "";
    bool and_ = strcmp(name, "llvm.umin.i1") == 0 || strcmp(name, "llvm.smax.i1") == 0;
    bool or_ = strcmp(name, "llvm.umax.i1") == 0 || strcmp(name, "llvm.smin.i1") == 0;
    if (!and_ && !or_) return NULL;
    LLVMValueRef x = LLVMGetOperand(call, 0), y = LLVMGetOperand(call, 1);
    return and_ ? LLVMBuildAnd(b, x, y, "") : LLVMBuildOr(b, x, y, "");
}

/* The optimiser narrows an order compare of two widened bools (zext i1 to
 * i8, then icmp ule, or umin) to one of the bools themselves, which SPIR-V
 * forbids (OpULessThan wants integers; the translator makes llvm.umin.i1
 * one). Compares are widened again, min and max become and and or. It also
 * turns `(0 if c else -5) >> 3` into sitofp of the bool, whose true is -1.0;
 * the translator (15) converts the bool as 1 first and gives 1.0 (fuzz seed
 * 201984083), so that becomes a select of -1.0 and 0.0. */
static void jit_widen_bool_compares(LLVMModuleRef m) {
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMTypeRef i1 = LLVMInt1TypeInContext(ctx), i8 = LLVMInt8TypeInContext(ctx);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
                LLVMValueRef next = LLVMGetNextInstruction(i);
                if (LLVMIsACallInst(i) && LLVMTypeOf(i) == i1) {
                    LLVMPositionBuilderBefore(b, i);
                    LLVMValueRef v = bool_min_max(b, i);
                    if (v) {
                        LLVMReplaceAllUsesWith(i, v);
                        LLVMInstructionEraseFromParent(i);
                    }
                    i = next;
                    continue;
                }
                if (LLVMGetInstructionOpcode(i) == LLVMSIToFP &&
                    LLVMTypeOf(LLVMGetOperand(i, 0)) == i1) {
                    LLVMPositionBuilderBefore(b, i);
                    LLVMTypeRef ft = LLVMTypeOf(i);
                    LLVMValueRef v =
                        LLVMBuildSelect(b, LLVMGetOperand(i, 0), LLVMConstReal(ft, -1.0),
                                        LLVMConstReal(ft, 0.0), "");
                    LLVMReplaceAllUsesWith(i, v);
                    LLVMInstructionEraseFromParent(i);
                    i = next;
                    continue;
                }
                LLVMIntPredicate p =
                    LLVMGetInstructionOpcode(i) == LLVMICmp ? LLVMGetICmpPredicate(i) : LLVMIntEQ;
                if (p != LLVMIntEQ && p != LLVMIntNE && LLVMTypeOf(LLVMGetOperand(i, 0)) == i1) {
                    bool sign = p == LLVMIntSGT || p == LLVMIntSGE || p == LLVMIntSLT ||
                                p == LLVMIntSLE; /* a signed i1 true is -1 */
                    LLVMPositionBuilderBefore(b, i);
                    LLVMValueRef x = LLVMGetOperand(i, 0), y = LLVMGetOperand(i, 1);
                    x = sign ? LLVMBuildSExt(b, x, i8, "") : LLVMBuildZExt(b, x, i8, "");
                    y = sign ? LLVMBuildSExt(b, y, i8, "") : LLVMBuildZExt(b, y, i8, "");
                    LLVMValueRef wide = LLVMBuildICmp(b, p, x, y, "");
                    LLVMReplaceAllUsesWith(i, wide);
                    LLVMInstructionEraseFromParent(i);
                }
                i = next;
            }
    LLVMDisposeBuilder(b);
}

/* Intel's CPU compiler (2026.2) crashes vectorizing a float recurrence
 * stepped by a subtraction, f = f - x in a loop whose f from before the step
 * is read after it (kernel fuzzer, seed 2189110301). Such a step becomes
 * fma(-1, x, f), which it vectorizes: the same number in every case, since
 * -1 * x is exact and the one rounding is the subtraction's (signed zeros
 * and NaNs included). Recurrences are the fsubs whose first operand is a phi
 * they feed. */
static void jit_fsub_steps_as_fma(LLVMModuleRef m) {
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    unsigned fma = LLVMLookupIntrinsicID("llvm.fma", 8);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef phi = LLVMGetFirstInstruction(bb); phi && LLVMIsAPHINode(phi);
                 phi = LLVMGetNextInstruction(phi)) {
                LLVMTypeRef t = LLVMTypeOf(phi);
                LLVMTypeKind kind = LLVMGetTypeKind(t);
                if (kind != LLVMFloatTypeKind && kind != LLVMDoubleTypeKind) continue;
                for (unsigned k = 0; k < LLVMCountIncoming(phi); k++) {
                    LLVMValueRef step = LLVMGetIncomingValue(phi, k);
                    if (!LLVMIsAInstruction(step) || LLVMGetInstructionOpcode(step) != LLVMFSub ||
                        LLVMGetOperand(step, 0) != phi)
                        continue;
                    LLVMPositionBuilderBefore(b, step);
                    LLVMValueRef decl = LLVMGetIntrinsicDeclaration(m, fma, &t, 1);
                    LLVMValueRef args[] = {LLVMConstReal(t, -1.0), LLVMGetOperand(step, 1), phi};
                    LLVMValueRef v =
                        LLVMBuildCall2(b, LLVMGlobalGetValueType(decl), decl, args, 3, "");
                    LLVMReplaceAllUsesWith(step, v);
                    LLVMInstructionEraseFromParent(step);
                }
            }
    LLVMDisposeBuilder(b);
}

/* SPIR-V 1.0's OpSelect takes a vector condition for vector values, but
 * LLVM selects a whole vector (a complex number's <2 x T>) on one i1, as the
 * optimiser makes of a branch between two complex values: the condition is
 * splatted. */
static void jit_splat_select_conditions(LLVMModuleRef m) {
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
                if (LLVMGetInstructionOpcode(i) != LLVMSelect ||
                    LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMVectorTypeKind)
                    continue;
                LLVMValueRef cond = LLVMGetOperand(i, 0);
                if (LLVMGetTypeKind(LLVMTypeOf(cond)) == LLVMVectorTypeKind) continue;
                unsigned n = LLVMGetVectorSize(LLVMTypeOf(i));
                LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(cond), n);
                LLVMPositionBuilderBefore(b, i);
                LLVMValueRef one =
                    LLVMBuildInsertElement(b, LLVMGetUndef(vt), cond, LLVMConstInt(i32, 0, 0), "");
                LLVMValueRef splat = LLVMBuildShuffleVector(
                    b, one, LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(i32, n)), "");
                LLVMSetOperand(i, 0, splat);
            }
    LLVMDisposeBuilder(b);
}

static int jit_block_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (LLVMBasicBlockRef const *)a;
    uintptr_t y = (uintptr_t) * (LLVMBasicBlockRef const *)b;
    return x < y ? -1 : x > y;
}

/* SPIR-V requires every block to come after the blocks that dominate it;
 * LLVM keeps blocks in any order, and neither the code generator nor the
 * optimiser sorts them. Reverse post-order satisfies the rule; unreachable
 * blocks go last. Iterative, so deep nesting cannot overflow the stack. */
static int jit_rpo_blocks(LLVMValueRef fn) {
    unsigned n = LLVMCountBasicBlocks(fn);
    if (n < 2) return 0;
    LLVMBasicBlockRef *sorted = malloc(n * sizeof *sorted);
    LLVMBasicBlockRef *stack = malloc(n * sizeof *stack);
    LLVMBasicBlockRef *post = malloc(n * sizeof *post);
    unsigned *next = malloc(n * sizeof *next);
    unsigned char *seen = calloc(n, 1);
    int rc = -1;
    if (!sorted || !stack || !post || !next || !seen) goto out;
    LLVMGetBasicBlocks(fn, sorted);
    qsort(sorted, n, sizeof *sorted, jit_block_cmp);

    unsigned sp = 0, np = 0;
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
    seen[(LLVMBasicBlockRef *)bsearch(&entry, sorted, n, sizeof *sorted, jit_block_cmp) - sorted] =
        1;
    stack[sp] = entry;
    next[sp++] = 0;
    while (sp) {
        LLVMBasicBlockRef bb = stack[sp - 1];
        LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
        unsigned ns = term ? LLVMGetNumSuccessors(term) : 0;
        if (next[sp - 1] < ns) {
            LLVMBasicBlockRef s = LLVMGetSuccessor(term, next[sp - 1]++);
            LLVMBasicBlockRef *hit = bsearch(&s, sorted, n, sizeof *sorted, jit_block_cmp);
            if (hit && !seen[hit - sorted]) {
                seen[hit - sorted] = 1;
                stack[sp] = s;
                next[sp++] = 0;
            }
        } else {
            post[np++] = bb;
            sp--;
        }
    }
    for (unsigned i = np - 1; i-- > 0;) LLVMMoveBasicBlockAfter(post[i], post[i + 1]);
    for (unsigned i = 0; i < n; i++)
        if (!seen[i]) LLVMMoveBasicBlockAfter(sorted[i], LLVMGetLastBasicBlock(fn));
    rc = 0;
out:
    free(sorted);
    free(stack);
    free(post);
    free(next);
    free(seen);
    return rc;
}

/* Functions marked JIT_OPTIMIZED (always noinline) are optnone while the
 * pipeline runs, which then skips them: their bodies were optimised once,
 * when the device library compiled them, and another pass over them in every
 * kernel would cost as much again. Unmarked after, so that the code
 * generator (NVPTX) treats them as any other function. */
static void hold_optimized(LLVMModuleRef m, bool on) {
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f) ||
            !LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, JIT_OPTIMIZED,
                                           (unsigned)strlen(JIT_OPTIMIZED)))
            continue;
        if (on)
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(ctx, optnone, 0));
        else
            LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, optnone);
    }
}

/* A library module's pipeline: its helpers inlined, its variables and
 * private arrays in registers, the IR folded and its blocks merged. Not
 * default<O3>: what the library compiles is either inlined into kernels,
 * whose own pipeline then optimises it with the kernel, or called from a
 * slow path (print), which the device's compiler optimises in turn; O3 here
 * tripled the one-off cost (float_repr: 28 against 80 ms). */
#define LIBRARY_PIPELINE "always-inline,function(sroa,early-cse,instcombine,simplifycfg)"

/* keep: a library module's (jit_optimize_part), whose functions that are
 * not internal are what it is for; else a kernel module's, where only the
 * kernels stay visible. */
static int optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, bool keep, char *err, size_t errlen) {
    jit_backend_init();
    char *msg = NULL;
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "invalid LLVM IR (a compiler bug): %s", msg ? msg : "");
        jit_trim(err);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);

    int spir = jit_triple_is(m, "spir");
    if (!keep) jit_internalize(m);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    if (spir) {
        /* Vectors are the device compiler's business (PoCL and IGC vectorise
         * across work-items); LLVM's would also bring llvm.vector.reduce.*,
         * which the translator rejects, and odd widths OpenCL lacks. */
        LLVMPassBuilderOptionsSetLoopVectorization(opts, 0);
        LLVMPassBuilderOptionsSetSLPVectorization(opts, 0);
        LLVMPassBuilderOptionsSetLoopInterleaving(opts, 0);
        jit_no_mem_builtins(m);
        jit_no_vectorize(m);
    }
    hold_optimized(m, true);
    LLVMErrorRef e = LLVMRunPasses(m, keep ? LIBRARY_PIPELINE : "default<O3>", tm, opts);
    hold_optimized(m, false);
    LLVMDisposePassBuilderOptions(opts);
    if (e) {
        char *em = LLVMGetErrorMessage(e);
        snprintf(err, errlen, "LLVM optimisation failed: %s", em);
        jit_trim(err);
        LLVMDisposeErrorMessage(em);
        return -1;
    }
    if (spir) {
        jit_drop_freeze(m);
        jit_unmask_ids(m);
        jit_widen_bool_compares(m);
        jit_splat_select_conditions(m);
        jit_fsub_steps_as_fma(m);
        for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
            if (jit_rpo_blocks(f)) {
                snprintf(err, errlen, "out of memory ordering basic blocks");
                return -1;
            }
    }
    return 0;
}

/* The sm a module was made for, from a function's "target-cpu" attribute;
 * 0 when none says. */
static int jit_module_sm(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        LLVMAttributeRef a =
            LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-cpu", 10);
        unsigned len = 0;
        const char *v = a ? LLVMGetStringAttributeValue(a, &len) : NULL;
        if (v && len > 3 && memcmp(v, "sm_", 3) == 0) return atoi(v + 3);
    }
    return 0;
}

int jit_optimize(LLVMModuleRef m, char *err, size_t errlen) {
    jit_backend_init();
    if (jit_triple_is(m, "spir")) return jit_optimize_tm(m, NULL, err, errlen);
    if (!jit_triple_is(m, "nvptx")) {
        snprintf(err, errlen, "cannot optimise for target triple '%s' (expected spir64 or nvptx64)",
                 LLVMGetTarget(m));
        return -1;
    }
    /* Shown IR should look like what jit_emit_ptx compiles; the sm only
     * matters to a few cost decisions, so any recent one will do. */
    int sm = jit_module_sm(m);
    LLVMTargetMachineRef tm = jit_ptx_machine(sm ? sm : 80, err, errlen);
    if (!tm) return -1;
    int rc = jit_optimize_tm(m, tm, err, errlen);
    LLVMDisposeTargetMachine(tm);
    return rc;
}

int jit_optimize_tm(LLVMModuleRef m, LLVMTargetMachineRef tm, char *err, size_t errlen) {
    return optimize(m, tm, false, err, errlen);
}

int jit_optimize_part(LLVMModuleRef m, int sm, char *err, size_t errlen) {
    jit_backend_init();
    if (jit_triple_is(m, "spir")) return optimize(m, NULL, true, err, errlen);
    LLVMTargetMachineRef tm = jit_ptx_machine(jit_ptx_sm(sm), err, errlen);
    if (!tm) return -1;
    int rc = optimize(m, tm, true, err, errlen);
    LLVMDisposeTargetMachine(tm);
    return rc;
}

int jit_emit_spirv(LLVMModuleRef m, jit_blob *spirv, char *err, size_t errlen) {
    spirv->data = NULL;
    spirv->size = 0;
    if (!jit_triple_is(m, "spir")) {
        snprintf(err, errlen, "SPIR-V needs a spir64 module, not target triple '%s'",
                 LLVMGetTarget(m));
        return -1;
    }
    if (jit_optimize(m, err, errlen) || jit_spirv_legal(m, err, errlen) ||
        jit_spirv_write(m, spirv, err, errlen))
        return -1;
    char why[1024];
    if (jit_spirv_validate(spirv, why, sizeof why)) {
        snprintf(err, errlen,
                 "the compiler made invalid SPIR-V (a compiler bug; please report it with "
                 "the kernel's source): %s",
                 why);
        jit_blob_free(spirv);
        return -1;
    }
    return 0;
}
