/* jit_target: what differs between the SPIR (OpenCL) and NVPTX (CUDA) targets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_codegen.h"

#define SPIR_CALLCONV_KERNEL 76 /* LLVMSPIRKERNELCallConv */
#define SPIR_CALLCONV_FUNC 75   /* LLVMSPIRFUNCCallConv */
#define PTX_CALLCONV_KERNEL 71  /* LLVMPTXKernelCallConv */

void jit_target_layout(jit_tgt *t) {
    if (t->ptx) {
        LLVMSetTarget(t->mod, "nvptx64-nvidia-cuda");
        LLVMSetDataLayout(t->mod, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
        return;
    }
    LLVMSetTarget(t->mod, "spir64-unknown-unknown");
    LLVMSetDataLayout(t->mod, "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-"
                              "v512:512-v1024:1024-n8:16:32:64");
}

void jit_target_setup(jit_tgt *t) {
    jit_target_layout(t);
    if (t->ptx) return;
    /* OpenCL C 1.2 / SPIR 1.2: what the translator records and PoCL expects */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx);
    LLVMMetadataRef ver[2] = {LLVMValueAsMetadata(LLVMConstInt(i32, 1, 0)),
                              LLVMValueAsMetadata(LLVMConstInt(i32, 2, 0))};
    LLVMValueRef node = LLVMMetadataAsValue(t->ctx, LLVMMDNodeInContext2(t->ctx, ver, 2));
    LLVMAddNamedMetadataOperand(t->mod, "opencl.ocl.version", node);
    LLVMAddNamedMetadataOperand(t->mod, "opencl.spir.version", node);
}

/* !{fn, !"what", i32 value} in nvvm.annotations */
static void annotate(jit_tgt *t, LLVMValueRef fn, const char *what, int value) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx);
    LLVMMetadataRef ann[3] = {LLVMValueAsMetadata(fn),
                              LLVMMDStringInContext2(t->ctx, what, strlen(what)),
                              LLVMValueAsMetadata(LLVMConstInt(i32, (unsigned long long)value, 0))};
    LLVMAddNamedMetadataOperand(t->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(t->ctx, LLVMMDNodeInContext2(t->ctx, ann, 3)));
}

void jit_target_mark_kernel(jit_tgt *t, LLVMValueRef fn, int max_threads, int min_blocks) {
    if (!t->ptx) {
        LLVMSetFunctionCallConv(fn, SPIR_CALLCONV_KERNEL);
        return;
    }
    LLVMSetFunctionCallConv(fn, PTX_CALLCONV_KERNEL);
    annotate(t, fn, "kernel", 1);
    /* .maxntid and .minnctapersm: ptxas then keeps to the registers that
     * let min_blocks groups of max_threads share an SM */
    if (max_threads > 0) annotate(t, fn, "maxntidx", max_threads);
    if (max_threads > 0 && min_blocks > 0) annotate(t, fn, "minctasm", min_blocks);
}

void jit_target_mark_function(jit_tgt *t, LLVMValueRef fn) {
    if (!t->ptx) LLVMSetFunctionCallConv(fn, SPIR_CALLCONV_FUNC);
}

void jit_target_mark_call(jit_tgt *t, LLVMValueRef call) {
    if (!t->ptx) LLVMSetInstructionCallConv(call, SPIR_CALLCONV_FUNC);
}

static LLVMValueRef declare(jit_tgt *t, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                            int n, LLVMTypeRef *fty) {
    *fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(t->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(t->mod, name, *fty);
        jit_target_mark_function(t, fn);
        /* pure functions of their arguments: lets LLVM hoist and fold them */
        unsigned k = LLVMGetEnumAttributeKindForName("readnone", 8);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(t->ctx, k, 0));
        k = LLVMGetEnumAttributeKindForName("nounwind", 8);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(t->ctx, k, 0));
    }
    return fn;
}

static LLVMValueRef call(jit_tgt *t, const char *name, LLVMTypeRef ret, LLVMTypeRef *pt,
                         LLVMValueRef *args, int n) {
    LLVMTypeRef fty;
    LLVMValueRef fn = declare(t, name, ret, pt, n, &fty);
    LLVMValueRef c = LLVMBuildCall2(t->b, fty, fn, args, (unsigned)n, "");
    jit_target_mark_call(t, c);
    return c;
}

static LLVMValueRef sreg(jit_tgt *t, const char *reg, int hw) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx);
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg, "xyz"[hw]);
    LLVMTypeRef fty = LLVMFunctionType(i32, NULL, 0, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(t->mod, name);
    if (!fn) fn = LLVMAddFunction(t->mod, name, fty);
    return LLVMBuildZExt(t->b, LLVMBuildCall2(t->b, fty, fn, NULL, 0, ""),
                         LLVMInt64TypeInContext(t->ctx), "");
}

LLVMValueRef jit_target_global_id(jit_tgt *t, int hw) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx), i64 = LLVMInt64TypeInContext(t->ctx);
    if (!t->ptx) {
        LLVMValueRef d = LLVMConstInt(i32, (unsigned long long)hw, 0);
        return call(t, "_Z13get_global_idj", i64, &i32, &d, 1);
    }
    LLVMValueRef v[3];
    static const char *const regs[3] = {"ctaid", "ntid", "tid"};
    for (int i = 0; i < 3; i++) v[i] = sreg(t, regs[i], hw);
    /* in 64 bits: a grid of 2^31 blocks of 1024 overflows 32 */
    return LLVMBuildAdd(t->b, LLVMBuildMul(t->b, v[0], v[1], ""), v[2], "gid");
}

LLVMValueRef jit_target_wg(jit_tgt *t, jit_wg_query q, int hw) {
    if (t->ptx) {
        static const char *const regs[] = {"tid", "ntid", "ctaid", "nctaid"};
        return sreg(t, regs[q], hw);
    }
    static const char *const fns[] = {"_Z12get_local_idj", "_Z14get_local_sizej",
                                      "_Z12get_group_idj", "_Z14get_num_groupsj"};
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx), i64 = LLVMInt64TypeInContext(t->ctx);
    LLVMValueRef d = LLVMConstInt(i32, (unsigned long long)hw, 0);
    return call(t, fns[q], i64, &i32, &d, 1);
}

void jit_target_barrier(jit_tgt *t) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx), voidt = LLVMVoidTypeInContext(t->ctx);
    const char *name = t->ptx ? "llvm.nvvm.barrier0" : "_Z7barrierj";
    LLVMTypeRef fty = LLVMFunctionType(voidt, &i32, t->ptx ? 0 : 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(t->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(t->mod, name, fty);
        jit_target_mark_function(t, fn);
        /* convergent: every work-item of the group must reach this very call, so
         * LLVM may neither duplicate it into branches nor sink it into one */
        static const char *const attrs[] = {"convergent", "nounwind"};
        for (int i = 0; i < 2; i++) {
            unsigned k = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(t->ctx, k, 0));
        }
    }
    /* OpenCL: CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE; bar.sync orders both by itself */
    LLVMValueRef flags = LLVMConstInt(i32, 3, 0);
    LLVMValueRef c = LLVMBuildCall2(t->b, fty, fn, &flags, t->ptx ? 0 : 1, "");
    jit_target_mark_call(t, c);
}

unsigned jit_target_space(jit_tgt *t, jit_space s) {
    (void)t; /* the same numbers on SPIR and NVPTX: private is generic 0 on NVPTX */
    return s == JIT_GLOBAL ? 1 : s == JIT_LOCAL ? 3 : 0;
}

LLVMValueRef jit_target_math(jit_tgt *t, const char *name, bool f64, LLVMValueRef *args,
                             int nargs) {
    LLVMTypeRef ft = f64 ? LLVMDoubleTypeInContext(t->ctx) : LLVMFloatTypeInContext(t->ctx);
    LLVMTypeRef pt[3] = {ft, ft, ft};
    bool ldexp = strcmp(name, "ldexp") == 0;
    if (ldexp) pt[1] = LLVMInt32TypeInContext(t->ctx);
    char sym[64];
    if (t->ptx && strcmp(name, "rint") == 0) {
        /* libdevice's rint rounds halves away from zero; the intrinsic is PTX's
         * cvt.rni, round half to even as Python's round() */
        snprintf(sym, sizeof sym, "llvm.rint.%s", f64 ? "f64" : "f32");
        LLVMTypeRef fty = LLVMFunctionType(ft, pt, 1, 0);
        LLVMValueRef fn = LLVMGetNamedFunction(t->mod, sym);
        if (!fn) fn = LLVMAddFunction(t->mod, sym, fty);
        return LLVMBuildCall2(t->b, fty, fn, args, 1, "");
    }
    if (t->ptx) {
        snprintf(sym, sizeof sym, "__nv_%s%s", name, f64 ? "" : "f");
    } else { /* Itanium mangling of the OpenCL builtin: _Z<len><name><f|d>... */
        int n = snprintf(sym, sizeof sym, "_Z%zu%s", strlen(name), name);
        for (int i = 0; i < nargs; i++) sym[n++] = i == 1 && ldexp ? 'i' : f64 ? 'd' : 'f';
        sym[n] = '\0';
    }
    return call(t, sym, ft, pt, args, nargs);
}

LLVMValueRef jit_target_const_bytes(jit_tgt *t, const char *name, const char *data, size_t len) {
    LLVMValueRef init = LLVMConstStringInContext(t->ctx, data, (unsigned)len, 1);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(t->mod, LLVMTypeOf(init), name, t->ptx ? 1 : 2);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return g;
}

/* Translator 15 types pointers from mangled names, so OpenCL's printf is
 * declared as the SPIR-V builtin with one parameter per argument: variadic
 * arguments past the format crash it, and plain "printf" too. The format is
 * reached through a GEP to its second byte: a pointer to the whole array
 * (what an all-zero GEP folds to) would be typed as one, and SPIR-V wants an
 * i8 pointer there. */
static int spir_printf(jit_tgt *t, const char *fmt, LLVMValueRef *args, int nargs) {
    LLVMTypeRef i8 = LLVMInt8TypeInContext(t->ctx), i64 = LLVMInt64TypeInContext(t->ctx);
    size_t len = strlen(fmt);
    char *text = malloc(len + 2);
    if (!text) return -1;
    text[0] = '\0';
    memcpy(text + 1, fmt, len + 1);
    LLVMValueRef g =
        jit_target_const_bytes(t, "ofl_printf_fmt", text, len + 2); /* LLVM numbers repeats */
    free(text);
    LLVMValueRef one = LLVMConstInt(i64, 1, 0);
    LLVMValueRef all[64];
    LLVMTypeRef types[64];
    all[0] = LLVMConstInBoundsGEP2(i8, g, &one, 1);
    types[0] = LLVMTypeOf(all[0]);
    char mangled[64 * 8 + 64] = "_Z18__spirv_ocl_printfPU3AS2c";
    size_t n = strlen(mangled);
    for (int i = 0; i < nargs && i < 63; i++) {
        all[i + 1] = args[i];
        types[i + 1] = LLVMTypeOf(args[i]);
        LLVMTypeKind k = LLVMGetTypeKind(types[i + 1]);
        const char *code = k == LLVMPointerTypeKind                  ? "PU3AS2c"
                           : k == LLVMDoubleTypeKind                 ? "d"
                           : k == LLVMFloatTypeKind                  ? "f"
                           : LLVMGetIntTypeWidth(types[i + 1]) == 64 ? "l"
                                                                     : "i";
        n += (size_t)snprintf(mangled + n, sizeof mangled - n, "%s", code);
    }
    LLVMTypeRef fty =
        LLVMFunctionType(LLVMInt32TypeInContext(t->ctx), types, (unsigned)nargs + 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(t->mod, mangled);
    if (!fn) {
        fn = LLVMAddFunction(t->mod, mangled, fty);
        jit_target_mark_function(t, fn);
    }
    jit_target_mark_call(t, LLVMBuildCall2(t->b, fty, fn, all, (unsigned)nargs + 1, ""));
    return 0;
}

int jit_target_printf(jit_tgt *t, const char *fmt, LLVMValueRef *args, int nargs) {
    if (!t->ptx) return spir_printf(t, fmt, args, nargs);
    /* CUDA: vprintf(format, buffer) with the arguments laid out as a C struct
     * would hold them (8-byte values 8-aligned), every pointer generic */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(t->ctx), gen = LLVMPointerTypeInContext(t->ctx, 0);
    LLVMValueRef g = jit_target_const_bytes(t, "ofl_printf_fmt", fmt, strlen(fmt) + 1);
    LLVMValueRef vals[64];
    LLVMTypeRef types[64];
    for (int i = 0; i < nargs && i < 64; i++) {
        vals[i] = args[i];
        if (LLVMGetTypeKind(LLVMTypeOf(vals[i])) == LLVMPointerTypeKind)
            vals[i] = LLVMBuildAddrSpaceCast(t->b, vals[i], gen, "");
        types[i] = LLVMTypeOf(vals[i]);
    }
    LLVMValueRef buf = LLVMConstNull(gen);
    if (nargs) {
        LLVMTypeRef st = LLVMStructTypeInContext(t->ctx, types, (unsigned)nargs, 0);
        /* in the entry block, so that a print in a loop reuses one buffer */
        LLVMBasicBlockRef entry =
            LLVMGetEntryBasicBlock(LLVMGetBasicBlockParent(LLVMGetInsertBlock(t->b)));
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(t->ctx);
        LLVMValueRef first = LLVMGetFirstInstruction(entry);
        if (first)
            LLVMPositionBuilderBefore(eb, first);
        else
            LLVMPositionBuilderAtEnd(eb, entry);
        buf = LLVMBuildAlloca(eb, st, "printf.args");
        LLVMDisposeBuilder(eb);
        for (int i = 0; i < nargs; i++)
            LLVMBuildStore(t->b, vals[i], LLVMBuildStructGEP2(t->b, st, buf, (unsigned)i, ""));
    }
    LLVMTypeRef pt[2] = {gen, gen};
    LLVMTypeRef fty = LLVMFunctionType(i32, pt, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(t->mod, "vprintf");
    if (!fn) fn = LLVMAddFunction(t->mod, "vprintf", fty);
    LLVMValueRef call_args[2] = {LLVMBuildAddrSpaceCast(t->b, g, gen, ""), buf};
    LLVMBuildCall2(t->b, fty, fn, call_args, 2, "");
    return 0;
}
