/* jit_backend: from a finished LLVM module to what a device loads.
 *
 *   LLVM module (spir64)  --jit_emit_spirv-->  SPIR-V  --jit_spirv_to_spir12-->  SPIR 1.2 bitcode
 *   LLVM module (nvptx64) --jit_emit_ptx--->   PTX text (libdevice linked in when used)
 *
 * Every SPIR-V module is checked with the SPIRV-Tools validator before anyone
 * loads it. Owns the LLVM target set-up (jit_machine.c, below the rest), the
 * libdevice lookup and the thin C++ shim over the SPIRV-LLVM-Translator
 * (jit_spirv.cpp). Called only by the JIT's
 * driver (jit_compile.c) and the unit tests. Knows nothing of Python.
 *
 * Conventions: 0 on success; otherwise non-zero with a sentence in err[errlen].
 * Blobs are malloc'ed and owned by the caller (jit_blob_free). Modules passed in
 * stay owned by the caller; the emitters may optimise and change them in place
 * (they never dispose of them). Thread-safe: each call works in the module's own
 * LLVMContext; one-time target initialisation is done under a pthread_once. */
#ifndef JIT_BACKEND_H
#define JIT_BACKEND_H

#include <stddef.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

typedef struct {
    void *data; /* malloc'ed; text blobs (PTX, disassembly) end with a '\0' not counted in size */
    size_t size;
} jit_blob;

void jit_blob_free(jit_blob *b);

/* The LLVM pipeline ("default<O3>") over a kernel module; spir64 modules get no
 * target machine, nvptx64 ones the NVPTX one. Called by the emitters below; public
 * so --show llvm can print the optimised IR.
 *
 * Verifies the module first (an invalid one is an error, never a crash). Every
 * defined function that is not a kernel is made internal, so device functions
 * are inlined and vanish. Kernels are spir_kernel (LLVMSPIRKERNELCallConv) for
 * spir64 and ptx_kernel (LLVMPTXKernelCallConv, 71) or an nvvm.annotations
 * "kernel" entry for nvptx64.
 *
 * For spir64 the pipeline runs without loop and SLP vectorisation (the device
 * compilers vectorise across work-items themselves, and the translator rejects
 * llvm.vector.reduce.*), and with "no-builtin-memset/memcpy/memmove" on every
 * function so loops never become variable-length memset/memcpy calls, which
 * SPIR-V -> SPIR 1.2 translation turns into invalid IR. Afterwards freeze
 * instructions (which translator 15 rejects) are replaced by their operands,
 * and each function's blocks are put in reverse post-order (SPIR-V wants every
 * block after its dominators). */
int jit_optimize(LLVMModuleRef m, char *err, size_t errlen);
/* A function's string attribute: already optimised (a device library
 * function that kernels call rather than inline); jit_optimize's pipeline
 * leaves its body alone. */
#define JIT_OPTIMIZED "ofl-optimized"
/* For a module of device functions that kernel modules link (the device
 * library's, jit_lib.h): a light function pipeline instead of O3 (the kernel's
 * pipeline or the device's compiler does the rest), the same clean-ups, and
 * every function that is not internal stays, as the module's product. sm:
 * the PTX target's compute capability (ignored for spir64). */
int jit_optimize_part(LLVMModuleRef m, int sm, char *err, size_t errlen);

/* ---- SPIR-V (jit_spirv.cpp, jit_spirv_tools.c) ---- */

/* spir64-unknown-unknown module with opaque pointers, spir_kernel functions
 * -> SPIR-V 1.0 words (OpenCL environment), validated before return. */
int jit_emit_spirv(LLVMModuleRef m, jit_blob *spirv, char *err, size_t errlen);
/* SPIRV-Tools validator for the OpenCL 1.2 environment; err gets its message. */
int jit_spirv_validate(const jit_blob *spirv, char *err, size_t errlen);
/* Human-readable disassembly (SPIRV-Tools, friendly names) as a text blob. */
int jit_spirv_disassemble(const jit_blob *spirv, jit_blob *text, char *err, size_t errlen);
/* The same SPIR-V read back (in a fresh context, typed pointers) and written as
 * SPIR 1.2 bitcode: what PoCL takes with "-x spir -spir-std=1.2". */
int jit_spirv_to_spir12(const jit_blob *spirv, jit_blob *bitcode, char *err, size_t errlen);

/* ---- PTX (jit_ptx.c; jit_ptx_sm in jit_machine.c) ---- */

/* The PTX ISA target the NVPTX backend of the LLVM we link can emit for a device
 * of compute capability cc (major*10+minor): LLVM 15 stops at sm_86, so an sm_90
 * device gets sm_86 PTX (the driver JIT-compiles it; ptxas accepts it for sm_90). */
int jit_ptx_sm(int cc);
/* nvptx64-nvidia-cuda module -> PTX text for sm_<sm>. If the module calls any
 * __nv_* function, libdevice.10.bc is linked in first (only what is used stays).
 * libdevice is found at $OFFLOAD_LIBDEVICE, $CUDA_HOME/nvvm/libdevice/,
 * /usr/local/cuda/nvvm/libdevice/, /usr/lib/nvidia-cuda-toolkit/libdevice/ (first
 * that exists); not found -> an error naming those places (only when needed). */
int jit_emit_ptx(LLVMModuleRef m, int sm, jit_blob *ptx, char *err, size_t errlen);

/* ---- shared by the backend's own files; not for other callers ----
 * jit_machine.c is the lowest: jit_backend.c and jit_ptx.c call it, and
 * jit_ptx.c calls jit_backend.c, never the other way round. */

/* Target set-up (NVPTX) once per process; every entry point calls it (jit_machine.c). */
void jit_backend_init(void);
/* jit_optimize with a given target machine, NULL for spir64 (jit_backend.c). */
int jit_optimize_tm(LLVMModuleRef m, LLVMTargetMachineRef tm, char *err, size_t errlen);
/* The NVPTX target machine for sm_<sm> (mapped through jit_ptx_sm) with the
 * PTX version that sm needs; NULL with err set if LLVM lacks the target (jit_machine.c). */
LLVMTargetMachineRef jit_ptx_machine(int sm, char *err, size_t errlen);
/* llvm::writeSpirv, no validation (jit_spirv.cpp). */
int jit_spirv_write(LLVMModuleRef m, jit_blob *spirv, char *err, size_t errlen);

#endif
