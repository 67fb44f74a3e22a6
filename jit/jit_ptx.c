/* jit_ptx: nvptx64 modules -> PTX text through LLVM's NVPTX backend (its
 * target machine from jit_machine.c), with NVIDIA's libdevice (the CUDA math
 * library as LLVM bitcode) linked in when a kernel calls one of its __nv_*
 * functions. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

#include "jit_backend.h"

/* ---- libdevice ---- */

/* The file's bytes, read once: parsing then starts from memory, and lazily,
 * so a kernel pays only for the functions it calls. Never freed. */
static pthread_mutex_t jit_ld_lock = PTHREAD_MUTEX_INITIALIZER;
static char *jit_ld_bytes;
static size_t jit_ld_size;

static int jit_is_file(const char *p) {
    struct stat st;
    return p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int jit_read_file(const char *path, char **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        fclose(f);
        *data = buf;
        *size = (size_t)n;
        return 0;
    }
    free(buf);
    fclose(f);
    return -1;
}

static int jit_libdevice(const char **data, size_t *size, char *err, size_t errlen) {
    pthread_mutex_lock(&jit_ld_lock);
    if (!jit_ld_bytes) {
        char cand[4][4096];
        int n = 0;
        const char *env = getenv("OFFLOAD_LIBDEVICE");
        if (env && *env) {
            /* A file, or the folder that holds it. */
            snprintf(cand[n++], sizeof cand[0], "%s", env);
            if (!jit_is_file(env)) snprintf(cand[0], sizeof cand[0], "%s/libdevice.10.bc", env);
        }
        const char *cuda = getenv("CUDA_HOME");
        if (cuda && *cuda)
            snprintf(cand[n++], sizeof cand[0], "%s/nvvm/libdevice/libdevice.10.bc", cuda);
        snprintf(cand[n++], sizeof cand[0], "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
        snprintf(cand[n++], sizeof cand[0],
                 "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
        for (int i = 0; i < n && !jit_ld_bytes; i++)
            if (jit_is_file(cand[i]) && jit_read_file(cand[i], &jit_ld_bytes, &jit_ld_size) != 0) {
                snprintf(err, errlen, "cannot read libdevice at %s", cand[i]);
                pthread_mutex_unlock(&jit_ld_lock);
                return -1;
            }
        if (!jit_ld_bytes) {
            snprintf(err, errlen,
                     "math functions on CUDA devices need libdevice.10.bc from the CUDA toolkit, "
                     "and it is not at $OFFLOAD_LIBDEVICE (%s), $CUDA_HOME/nvvm/libdevice/ (%s), "
                     "/usr/local/cuda/nvvm/libdevice/ or /usr/lib/nvidia-cuda-toolkit/libdevice/; "
                     "install the toolkit (or pip's nvidia-cuda-nvcc-cu12 and set CUDA_HOME to its "
                     "nvidia/cuda_nvcc folder) or set OFFLOAD_LIBDEVICE to the file",
                     env && *env ? env : "unset", cuda && *cuda ? cuda : "unset");
            pthread_mutex_unlock(&jit_ld_lock);
            return -1;
        }
    }
    *data = jit_ld_bytes;
    *size = jit_ld_size;
    pthread_mutex_unlock(&jit_ld_lock);
    return 0;
}

static int jit_uses_libdevice(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        size_t len = 0;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && len > 5 && memcmp(name, "__nv_", 5) == 0) return 1;
    }
    return 0;
}

/* LLVM reports bitcode and link errors through the context's diagnostic
 * handler, whose default prints and exit()s; ours keeps the first error. */
typedef struct {
    char *err;
    size_t errlen;
    int failed;
} jit_diag;

static void jit_on_diag(LLVMDiagnosticInfoRef di, void *opaque) {
    jit_diag *d = opaque;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || d->failed) return;
    char *msg = LLVMGetDiagInfoDescription(di);
    snprintf(d->err, d->errlen, "linking libdevice failed: %s", msg ? msg : "");
    LLVMDisposeMessage(msg);
    d->failed = 1;
}

static int jit_link_libdevice(LLVMModuleRef m, char *err, size_t errlen) {
    const char *bytes;
    size_t size;
    if (jit_libdevice(&bytes, &size, err, errlen)) return -1;
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMDiagnosticHandler old_handler = LLVMContextGetDiagnosticHandler(ctx);
    void *old_opaque = LLVMContextGetDiagnosticContext(ctx);
    jit_diag d = {err, errlen, 0};
    LLVMContextSetDiagnosticHandler(ctx, jit_on_diag, &d);

    int rc = -1;
    LLVMModuleRef ld = NULL;
    /* The module owns this buffer (which does not own the bytes). */
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRange(bytes, size, "libdevice.10.bc", 0);
    if (LLVMGetBitcodeModuleInContext2(ctx, buf, &ld) || !ld) {
        if (!d.failed)
            snprintf(err, errlen, "libdevice.10.bc is not LLVM bitcode this LLVM can read");
        goto out;
    }
    /* linkonce_odr: the linker then takes (and materialises) only the
     * functions the kernel reaches, not all ~350. */
    for (LLVMValueRef f = LLVMGetFirstFunction(ld); f; f = LLVMGetNextFunction(f))
        if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage)
            LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
    /* libdevice says nvptx64-nvidia-gpulibs and an older data layout. */
    LLVMSetTarget(ld, LLVMGetTarget(m));
    LLVMSetDataLayout(ld, LLVMGetDataLayoutStr(m));
    if (LLVMLinkModules2(m, ld)) { /* ld is gone either way */
        if (!d.failed) snprintf(err, errlen, "linking libdevice failed");
        goto out;
    }
    rc = d.failed ? -1 : 0;
out:
    LLVMContextSetDiagnosticHandler(ctx, old_handler, old_opaque);
    return rc;
}

/* libdevice asks __nvvm_reflect("__CUDA_FTZ") and friends which variant to
 * run. Answered here rather than by LLVM's NVVMReflect pass, which (LLVM 15-17)
 * says 0 to "__CUDA_PREC_SQRT" and so picks the approximate sqrt: IEEE
 * results, no flush to zero, and the sm the PTX is for. */
static int jit_reflect_value(LLVMValueRef arg, int sm) {
    while (arg && LLVMIsAConstantExpr(arg)) arg = LLVMGetOperand(arg, 0);
    if (!arg || !LLVMIsAGlobalVariable(arg) || !LLVMGetInitializer(arg)) return 0;
    size_t len = 0;
    const char *s = LLVMIsAConstantDataSequential(LLVMGetInitializer(arg))
                        ? LLVMGetAsString(LLVMGetInitializer(arg), &len)
                        : NULL;
    if (!s) return 0;
    if (len >= 11 && strncmp(s, "__CUDA_ARCH", len) == 0) return sm * 10;
    if (len >= 16 && strncmp(s, "__CUDA_PREC_SQRT", len) == 0) return 1;
    return 0; /* __CUDA_FTZ and anything unknown */
}

static void jit_resolve_reflect(LLVMModuleRef m, int sm) {
    static const char *const names[] = {"__nvvm_reflect", "llvm.nvvm.reflect"};
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(m));
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        LLVMValueRef fn = LLVMGetNamedFunction(m, names[k]);
        if (!fn) continue;
        LLVMUseRef u;
        while ((u = LLVMGetFirstUse(fn))) {
            LLVMValueRef call = LLVMGetUser(u);
            if (!LLVMIsACallInst(call) || LLVMGetCalledValue(call) != fn)
                break; /* not a call: leave it to LLVM's own pass */
            int v = jit_reflect_value(LLVMGetOperand(call, 0), sm);
            LLVMReplaceAllUsesWith(call, LLVMConstInt(i32, (unsigned long long)v, 0));
            LLVMInstructionEraseFromParent(call);
        }
        if (!LLVMGetFirstUse(fn)) LLVMDeleteFunction(fn);
    }
}

/* ---- loads ahead of shared-memory atomics ----
 * When registers are tight ptxas issues a global load where the PTX has it,
 * so in a loop body that jit_codegen.c copied four times each copy's load
 * waited behind the previous copy's shared-memory atomics (a histogram: one
 * load in flight per work-item). Global and shared memory never alias and a
 * relaxed atomic orders nothing else, so a relaxed atomicrmw on shared memory
 * whose value is unused moves down past global loads and arithmetic, and the
 * loads of all the copies go first. */
#define JIT_PTX_GLOBAL 1
#define JIT_PTX_SHARED 3

static unsigned jit_space_of(LLVMValueRef ptr) {
    return LLVMGetPointerAddressSpace(LLVMTypeOf(ptr));
}

static int jit_is_sinkable_atomic(LLVMValueRef i) {
    return LLVMGetInstructionOpcode(i) == LLVMAtomicRMW && !LLVMGetFirstUse(i) &&
           LLVMGetOrdering(i) == LLVMAtomicOrderingMonotonic &&
           jit_space_of(LLVMGetOperand(i, 0)) == JIT_PTX_SHARED;
}

/* Whether an atomic on shared memory may move from before i to after it. */
static int jit_atomic_may_pass(LLVMValueRef i) {
    LLVMOpcode op = LLVMGetInstructionOpcode(i);
    if (op == LLVMLoad)
        return jit_space_of(LLVMGetOperand(i, 0)) == JIT_PTX_GLOBAL && !LLVMGetVolatile(i) &&
               LLVMGetOrdering(i) == LLVMAtomicOrderingNotAtomic;
    return (op >= LLVMAdd && op <= LLVMXor) || (op >= LLVMTrunc && op <= LLVMBitCast) ||
           op == LLVMAddrSpaceCast || op == LLVMICmp || op == LLVMFCmp || op == LLVMSelect ||
           op == LLVMGetElementPtr || op == LLVMFNeg || op == LLVMFreeze ||
           op == LLVMExtractValue || op == LLVMInsertValue;
}

static void jit_sink_shared_atomics(LLVMModuleRef m) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            /* bottom up, so that atomics keep their order among themselves */
            for (LLVMValueRef i = LLVMGetLastInstruction(bb), prev; i; i = prev) {
                prev = LLVMGetPreviousInstruction(i);
                if (!jit_is_sinkable_atomic(i)) continue;
                LLVMValueRef last = i;
                for (LLVMValueRef n = LLVMGetNextInstruction(i); n && jit_atomic_may_pass(n);
                     n = LLVMGetNextInstruction(n))
                    last = n;
                if (last == i) continue;
                LLVMInstructionRemoveFromParent(i);
                LLVMPositionBuilder(b, bb,
                                    LLVMGetNextInstruction(last)); /* the terminator at worst */
                LLVMInsertIntoBuilder(b, i);
            }
    LLVMDisposeBuilder(b);
}

int jit_emit_ptx(LLVMModuleRef m, int sm, jit_blob *ptx, char *err, size_t errlen) {
    ptx->data = NULL;
    ptx->size = 0;
    jit_backend_init();
    const char *triple = LLVMGetTarget(m);
    if (!triple || strncmp(triple, "nvptx", 5) != 0) {
        snprintf(err, errlen, "PTX needs an nvptx64 module, not target triple '%s'",
                 triple ? triple : "");
        return -1;
    }
    sm = jit_ptx_sm(sm);
    LLVMTargetMachineRef tm = jit_ptx_machine(sm, err, errlen);
    if (!tm) return -1;
    int rc = -1;
    if (!*LLVMGetDataLayoutStr(m)) {
        LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
        char *dl = LLVMCopyStringRepOfTargetData(td);
        LLVMSetDataLayout(m, dl);
        LLVMDisposeMessage(dl);
        LLVMDisposeTargetData(td);
    }
    if (jit_uses_libdevice(m) && jit_link_libdevice(m, err, errlen)) goto out;
    jit_resolve_reflect(m, sm);
    /* For NVVMReflect, should anything still ask: no flush to zero. */
    if (!LLVMGetModuleFlag(m, "nvvm-reflect-ftz", 16)) {
        LLVMContextRef ctx = LLVMGetModuleContext(m);
        LLVMAddModuleFlag(m, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                          LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), 0, 0)));
    }
    if (jit_optimize_tm(m, tm, err, errlen)) goto out;
    jit_sink_shared_atomics(m);
    char *msg = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &msg, &buf)) {
        snprintf(err, errlen, "NVPTX code generation failed (a compiler bug): %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        goto out;
    }
    size_t n = LLVMGetBufferSize(buf);
    if ((ptx->data = malloc(n + 1))) {
        memcpy(ptx->data, LLVMGetBufferStart(buf), n);
        ((char *)ptx->data)[n] = '\0';
        ptx->size = n;
        rc = 0;
    } else {
        snprintf(err, errlen, "out of memory for %zu bytes of PTX", n);
    }
    LLVMDisposeMemoryBuffer(buf);
out:
    LLVMDisposeTargetMachine(tm);
    return rc;
}
