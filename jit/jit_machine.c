/* jit_machine: LLVM's target set-up, below both device paths -- the one-time
 * registration of the NVPTX target and the NVPTX target machine for an sm
 * (the PTX ISA it needs), which jit_optimize (jit_backend.c) and jit_emit_ptx
 * (jit_ptx.c) both use. Called only by the backend's files; declared in
 * jit_backend.h. Knows nothing of kernels. */
#include <pthread.h>
#include <stdio.h>

#include <llvm/Config/llvm-config.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "jit_backend.h"

/* LLVM's target registry is global and its initialisers are not safe to race. */
static pthread_once_t jit_targets_once = PTHREAD_ONCE_INIT;

static void jit_init_targets(void) {
    /* IndVarSimplify would replace a loop's exit value by its closed form
     * (a sum of i over a range is a quadratic, computed in 65 bits), which
     * SPIR-V cannot express; the loop's own value serves as well. */
    const char *const argv[] = {"offload", "-replexitval=never"};
    LLVMParseCommandLineOptions(2, argv, NULL);
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

void jit_backend_init(void) { pthread_once(&jit_targets_once, jit_init_targets); }

#define JIT_PTX_TRIPLE "nvptx64-nvidia-cuda"

/* The sm_NN processors this LLVM's NVPTX backend knows (llc -mcpu=help),
 * ascending. PTX for sm_NN runs on every device of compute capability >= NN
 * (the driver compiles it), so a newer device gets the newest one listed. */
static const int jit_sms[] = {
    30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86,
#if LLVM_VERSION_MAJOR >= 16
    87, 89, 90,
#endif
};

int jit_ptx_sm(int cc) {
    if (cc < jit_sms[0]) return cc;
    int sm = jit_sms[0];
    for (size_t i = 0; i < sizeof jit_sms / sizeof jit_sms[0]; i++)
        if (jit_sms[i] <= cc) sm = jit_sms[i];
    return sm;
}

/* The oldest PTX ISA that has .target sm_<sm>, but at least 6.0 (CUDA 9):
 * the oldest ISA keeps the PTX loadable by the oldest driver that knows the
 * device. Without a +ptxNN feature LLVM would write ".version 3.2", which
 * ptxas refuses for any recent sm. */
static int jit_ptx_isa(int sm) {
    if (sm >= 89) return 78;
    if (sm >= 87) return 74;
    if (sm >= 86) return 71;
    if (sm >= 80) return 70;
    if (sm >= 75) return 63;
    if (sm >= 72) return 61;
    return 60;
}

LLVMTargetMachineRef jit_ptx_machine(int sm, char *err, size_t errlen) {
    jit_backend_init();
    LLVMTargetRef target = NULL;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(JIT_PTX_TRIPLE, &target, &msg)) {
        snprintf(err, errlen, "this LLVM (%d) has no NVPTX backend: %s", LLVM_VERSION_MAJOR,
                 msg ? msg : "");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    sm = jit_ptx_sm(sm);
    char cpu[16], features[16];
    snprintf(cpu, sizeof cpu, "sm_%d", sm);
    snprintf(features, sizeof features, "+ptx%d", jit_ptx_isa(sm));
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(target, JIT_PTX_TRIPLE, cpu, features, LLVMCodeGenLevelAggressive,
                                LLVMRelocDefault, LLVMCodeModelDefault);
    if (!tm) snprintf(err, errlen, "LLVM could not make an NVPTX target machine for %s", cpu);
    return tm;
}
