/* Unit tests for jit/jit_backend.h: LLVM IR (written here as text) through
 * the optimiser to validated SPIR-V, back to SPIR 1.2 bitcode that PoCL builds
 * and runs (when an OpenCL device with cl_khr_spir exists), and to PTX with
 * libdevice that ptxas assembles (when ptxas and libdevice exist). No GPU
 * needed. Prints the time each step takes (not checked: machines differ).
 *
 * Prints "N passed, M failed" as its last line; exits non-zero on any failure. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm/Config/llvm-config.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>

#include "jit_backend.h"
#include "unit.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A module from IR text in a fresh context with opaque pointers (what the
 * code generator makes); NULL and a message on a parse error. */
static LLVMModuleRef parse_ir(LLVMContextRef *ctx, const char *ir) {
    *ctx = LLVMContextCreate();
#if LLVM_VERSION_MAJOR < 17
    LLVMContextSetOpaquePointers(*ctx, 1);
#endif
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "test.ll");
    LLVMModuleRef m = NULL;
    char *msg = NULL;
    if (LLVMParseIRInContext(*ctx, buf, &m, &msg)) { /* consumes buf */
        fprintf(stderr, "IR parse error: %s\n", msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    return m;
}

static void dispose(LLVMContextRef ctx, LLVMModuleRef m) {
    if (m) LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
}

#define SPIR_HEAD                                                                                  \
    "target datalayout = \"e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-"        \
    "v512:512-v1024:1024\"\n"                                                                      \
    "target triple = \"spir64-unknown-unknown\"\n"                                                 \
    "declare spir_func i64 @_Z13get_global_idj(i32)\n"

/* c[i] = sqrt(a[i] + b[i]) for i < n: a Range need not be a multiple of the
 * work-group size, so every kernel has such a tail guard. */
static const char vadd_ir[] =
    SPIR_HEAD "declare spir_func float @_Z4sqrtf(float)\n"
              "define spir_kernel void @vadd(ptr addrspace(1) %a, ptr addrspace(1) %b,\n"
              "                              ptr addrspace(1) %c, i64 %n) {\n"
              "entry:\n"
              "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
              "  %ok = icmp slt i64 %i, %n\n"
              "  br i1 %ok, label %body, label %done\n"
              "body:\n"
              "  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i\n"
              "  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i\n"
              "  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %i\n"
              "  %x = load float, ptr addrspace(1) %pa\n"
              "  %y = load float, ptr addrspace(1) %pb\n"
              "  %s = fadd float %x, %y\n"
              "  %r = call spir_func float @_Z4sqrtf(float %s)\n"
              "  store float %r, ptr addrspace(1) %pc\n"
              "  br label %done\n"
              "done:\n"
              "  ret void\n"
              "}\n";

/* What the optimiser turns into llvm.smin/smax/umin/abs/fshl, a reduction loop
 * the loop vectoriser would turn into llvm.vector.reduce, a bool (i8) loop, a
 * private array zeroed by a variable-length loop (llvm.memset), a device
 * function, i // n next to i % n and a loop it unswitches (freeze), and
 * 64-bit atomics (Int64Atomics, which SPIRV-Tools' OpenCL
 * environments refuse). All must survive SPIR-V and come back as SPIR 1.2. */
static const char patterns_ir[] = SPIR_HEAD
    "define internal spir_func i32 @clampi(i32 %x, i32 %lo) {\n"
    "  %lt = icmp slt i32 %x, %lo\n"
    "  %r = select i1 %lt, i32 %lo, i32 %x\n"
    "  ret i32 %r\n"
    "}\n"
    "define spir_kernel void @minmax(ptr addrspace(1) %a, ptr addrspace(1) %b,\n"
    "        ptr addrspace(1) %c, ptr addrspace(1) %f, i64 %n) {\n"
    "entry:\n"
    "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
    "  %ok = icmp slt i64 %i, %n\n"
    "  br i1 %ok, label %body, label %done\n"
    "body:\n"
    "  %pa = getelementptr inbounds i32, ptr addrspace(1) %a, i64 %i\n"
    "  %pb = getelementptr inbounds i32, ptr addrspace(1) %b, i64 %i\n"
    "  %pc = getelementptr inbounds i32, ptr addrspace(1) %c, i64 %i\n"
    "  %x = load i32, ptr addrspace(1) %pa\n"
    "  %y = load i32, ptr addrspace(1) %pb\n"
    "  %lt = icmp slt i32 %x, %y\n"
    "  %mn = select i1 %lt, i32 %x, i32 %y\n"
    "  %mx = call spir_func i32 @clampi(i32 %mn, i32 0)\n"
    "  %neg = sub i32 0, %x\n"
    "  %isneg = icmp slt i32 %x, 0\n"
    "  %ab = select i1 %isneg, i32 %neg, i32 %x\n"
    "  %ult = icmp ult i32 %x, %y\n"
    "  %umn = select i1 %ult, i32 %x, i32 %y\n"
    "  %rot1 = shl i32 %x, 3\n"
    "  %rot2 = lshr i32 %x, 29\n"
    "  %rot = or i32 %rot1, %rot2\n"
    "  %s1 = add i32 %mx, %ab\n"
    "  %s2 = add i32 %s1, %umn\n"
    "  %s3 = xor i32 %s2, %rot\n"
    "  store i32 %s3, ptr addrspace(1) %pc\n"
    "  %pf = getelementptr inbounds float, ptr addrspace(1) %f, i64 %i\n"
    "  %fx = load float, ptr addrspace(1) %pf\n"
    "  %flt = fcmp olt float %fx, 0.0\n"
    "  %fneg = fneg float %fx\n"
    "  %fab = select i1 %flt, float %fneg, float %fx\n"
    "  %fgt = fcmp ogt float %fab, 1.0\n"
    "  %fmn = select i1 %fgt, float 1.0, float %fab\n"
    "  store float %fmn, ptr addrspace(1) %pf\n"
    "  br label %done\n"
    "done:\n"
    "  ret void\n"
    "}\n"
    "define spir_kernel void @rowsum(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %out,\n"
    "        ptr addrspace(1) noalias %bools, ptr addrspace(1) noalias %bout, i64 %rows,\n"
    "        i64 %cols) {\n"
    "entry:\n"
    "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
    "  %ok = icmp slt i64 %i, %rows\n"
    "  br i1 %ok, label %pre, label %done\n"
    "pre:\n"
    "  %base = mul i64 %i, %cols\n"
    "  %has = icmp sgt i64 %cols, 0\n"
    "  br i1 %has, label %loop, label %fin\n"
    "loop:\n"
    "  %j = phi i64 [0, %pre], [%j1, %loop]\n"
    "  %acc = phi i32 [0, %pre], [%acc1, %loop]\n"
    "  %k = add i64 %base, %j\n"
    "  %p = getelementptr inbounds i32, ptr addrspace(1) %a, i64 %k\n"
    "  %v = load i32, ptr addrspace(1) %p\n"
    "  %acc1 = add i32 %acc, %v\n"
    "  %bp = getelementptr inbounds i8, ptr addrspace(1) %bools, i64 %k\n"
    "  %bv = load i8, ptr addrspace(1) %bp\n"
    "  %bo = getelementptr inbounds i8, ptr addrspace(1) %bout, i64 %k\n"
    "  %bnot = xor i8 %bv, 1\n"
    "  store i8 %bnot, ptr addrspace(1) %bo\n"
    "  %j1 = add nsw i64 %j, 1\n"
    "  %c = icmp slt i64 %j1, %cols\n"
    "  br i1 %c, label %loop, label %fin\n"
    "fin:\n"
    "  %r = phi i32 [0, %pre], [%acc1, %loop]\n"
    "  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %i\n"
    "  store i32 %r, ptr addrspace(1) %po\n"
    "  br label %done\n"
    "done:\n"
    "  ret void\n"
    "}\n"
    "define spir_kernel void @priv(ptr addrspace(1) %out, i64 %m) {\n"
    "entry:\n"
    "  %arr = alloca [16 x float], align 4\n"
    "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
    "  %mm = and i64 %m, 15\n"
    "  br label %z\n"
    "z:\n"
    "  %j = phi i64 [0, %entry], [%j1, %z]\n"
    "  %p = getelementptr inbounds [16 x float], ptr %arr, i64 0, i64 %j\n"
    "  store float 0.0, ptr %p\n"
    "  %j1 = add nuw nsw i64 %j, 1\n"
    "  %c = icmp ult i64 %j1, %mm\n"
    "  br i1 %c, label %z, label %rd\n"
    "rd:\n"
    "  %pi = and i64 %i, 15\n"
    "  %pp = getelementptr inbounds [16 x float], ptr %arr, i64 0, i64 %pi\n"
    "  %pv = load float, ptr %pp\n"
    "  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i\n"
    "  store float %pv, ptr addrspace(1) %po\n"
    "  ret void\n"
    "}\n"
    "define spir_kernel void @divrem(ptr addrspace(1) %p, i64 %n, i64 %m, i32 %flag) {\n"
    "entry:\n"
    "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
    "  %q = sdiv i64 %i, %n\n"
    "  %r = srem i64 %i, %n\n"
    "  %x = mul i64 %q, %m\n"
    "  %y = add i64 %x, %r\n"
    "  %pp = getelementptr inbounds float, ptr addrspace(1) %p, i64 %y\n"
    "  store float 1.0, ptr addrspace(1) %pp\n"
    "  br label %loop\n"
    "loop:\n"
    "  %j = phi i64 [0, %entry], [%j1, %latch]\n"
    "  %c = icmp eq i32 %flag, 0\n"
    "  br i1 %c, label %a, label %b\n"
    "a:\n"
    "  %pa = getelementptr inbounds float, ptr addrspace(1) %p, i64 %j\n"
    "  store float 2.0, ptr addrspace(1) %pa\n"
    "  br label %latch\n"
    "b:\n"
    "  %pb = getelementptr inbounds float, ptr addrspace(1) %p, i64 %j\n"
    "  %v = load float, ptr addrspace(1) %pb\n"
    "  %v2 = fmul float %v, 3.0\n"
    "  store float %v2, ptr addrspace(1) %pb\n"
    "  br label %latch\n"
    "latch:\n"
    "  %j1 = add i64 %j, 1\n"
    "  %d = icmp slt i64 %j1, %m\n"
    "  br i1 %d, label %loop, label %out\n"
    "out:\n"
    "  ret void\n"
    "}\n"
    "define spir_kernel void @atomics(ptr addrspace(1) %p, ptr addrspace(1) %q,\n"
    "        ptr addrspace(1) %d) {\n"
    "  %o = atomicrmw add ptr addrspace(1) %p, i64 1 seq_cst\n"
    "  %o2 = atomicrmw max ptr addrspace(1) %q, i32 7 monotonic\n"
    "  %x = cmpxchg ptr addrspace(1) %p, i64 %o, i64 5 seq_cst seq_cst\n"
    "  %v = load double, ptr addrspace(1) %d\n"
    "  %v2 = fmul double %v, 2.0\n"
    "  store double %v2, ptr addrspace(1) %d\n"
    "  ret void\n"
    "}\n";

/* A block placed before the block that dominates it: legal LLVM IR that the
 * optimiser leaves alone (the calls keep a and b apart), invalid SPIR-V
 * unless the backend orders the blocks. */
static const char order_ir[] =
    SPIR_HEAD "declare spir_func void @_Z7barrierj(i32)\n"
              "declare spir_func void @_Z9mem_fencej(i32)\n"
              "define spir_kernel void @order(ptr addrspace(1) %p, i64 %n) {\n"
              "entry:\n"
              "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
              "  %c0 = icmp slt i64 %i, %n\n"
              "  br i1 %c0, label %a, label %b\n"
              "a:\n"
              "  call spir_func void @_Z7barrierj(i32 1)\n"
              "  br label %cond\n"
              "b:\n"
              "  call spir_func void @_Z9mem_fencej(i32 1)\n"
              "  br label %cond\n"
              "then:\n"
              "  store volatile float 3.0, ptr addrspace(1) %p\n"
              "  br label %join\n"
              "cond:\n"
              "  %v = load volatile float, ptr addrspace(1) %p\n"
              "  %c1 = fcmp ogt float %v, 1.5\n"
              "  br i1 %c1, label %then, label %join\n"
              "join:\n"
              "  ret void\n"
              "}\n";

#define PTX_HEAD                                                                                   \
    "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"                          \
    "target triple = \"nvptx64-nvidia-cuda\"\n"                                                    \
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"                                               \
    "declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"                                             \
    "declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"

/* y[i] = sin(x[i]) + sqrt(x[i]) (float), z[i] = pow(z[i], 1.5) (double), i < n. */
static const char ptx_math_ir[] =
    PTX_HEAD "declare float @__nv_sinf(float)\n"
             "declare float @__nv_sqrtf(float)\n"
             "declare double @__nv_pow(double, double)\n"
             "define ptx_kernel void @sinpow(ptr addrspace(1) %x, ptr addrspace(1) %y,\n"
             "                               ptr addrspace(1) %z, i64 %n) {\n"
             "entry:\n"
             "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
             "  %d = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
             "  %bd = mul i32 %b, %d\n"
             "  %i32 = add i32 %bd, %t\n"
             "  %i = zext i32 %i32 to i64\n"
             "  %ok = icmp slt i64 %i, %n\n"
             "  br i1 %ok, label %body, label %done\n"
             "body:\n"
             "  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %i\n"
             "  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %i\n"
             "  %pz = getelementptr inbounds double, ptr addrspace(1) %z, i64 %i\n"
             "  %v = load float, ptr addrspace(1) %px\n"
             "  %s = call float @__nv_sinf(float %v)\n"
             "  %q = call float @__nv_sqrtf(float %v)\n"
             "  %sq = fadd float %s, %q\n"
             "  store float %sq, ptr addrspace(1) %py\n"
             "  %w = load double, ptr addrspace(1) %pz\n"
             "  %p = call double @__nv_pow(double %w, double 1.5)\n"
             "  store double %p, ptr addrspace(1) %pz\n"
             "  br label %done\n"
             "done:\n"
             "  ret void\n"
             "}\n";

/* No libdevice; marked a kernel the older way (nvvm.annotations), with a
 * device function that must be inlined and dropped. */
static const char ptx_plain_ir[] =
    PTX_HEAD "define float @twice(float %v) {\n"
             "  %r = fmul float %v, 2.0\n"
             "  ret float %r\n"
             "}\n"
             "define void @scale(ptr addrspace(1) %x, i32 %n) {\n"
             "entry:\n"
             "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
             "  %d = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
             "  %bd = mul i32 %b, %d\n"
             "  %i = add i32 %bd, %t\n"
             "  %ok = icmp slt i32 %i, %n\n"
             "  br i1 %ok, label %body, label %done\n"
             "body:\n"
             "  %p = getelementptr inbounds float, ptr addrspace(1) %x, i32 %i\n"
             "  %v = load float, ptr addrspace(1) %p\n"
             "  %r = call float @twice(float %v)\n"
             "  store float %r, ptr addrspace(1) %p\n"
             "  br label %done\n"
             "done:\n"
             "  ret void\n"
             "}\n"
             "!nvvm.annotations = !{!0}\n"
             "!0 = !{ptr @scale, !\"kernel\", i32 1}\n";

/* ---------------------------------------------------------------- OpenCL */

/* The first OpenCL device that takes SPIR 1.2 (cl_khr_spir); 0 if none. */
static int spir_device(cl_platform_id *plat, cl_device_id *dev) {
    cl_platform_id ps[8];
    cl_uint np = 0;
    if (clGetPlatformIDs(8, ps, &np) != CL_SUCCESS) return 0;
    for (cl_uint p = 0; p < np && p < 8; p++) {
        cl_device_id ds[8];
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 8, ds, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && d < 8; d++) {
            char ext[8192] = "";
            clGetDeviceInfo(ds[d], CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
            if (strstr(ext, "cl_khr_spir")) {
                *plat = ps[p];
                *dev = ds[d];
                return 1;
            }
        }
    }
    return 0;
}

/* Builds SPIR 1.2 bitcode as the runtime does; the program on success. */
static cl_program build_spir(cl_context ctx, cl_device_id dev, const jit_blob *bc, double *ms) {
    const unsigned char *bin = bc->data;
    size_t size = bc->size;
    cl_int st = CL_SUCCESS, bst = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(ctx, 1, &dev, &size, &bin, &bst, &st);
    if (st != CL_SUCCESS || bst != CL_SUCCESS) {
        fprintf(stderr, "clCreateProgramWithBinary: %d / %d\n", st, bst);
        return NULL;
    }
    double t0 = now_ms();
    st = clBuildProgram(prog, 1, &dev, "-x spir -spir-std=1.2", NULL, NULL);
    *ms = now_ms() - t0;
    if (st != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "clBuildProgram: %d\n%s\n", st, log);
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

/* Runs vadd over n = 1000 (not a multiple of any work-group size). */
static void run_vadd(cl_context ctx, cl_device_id dev, cl_program prog) {
    enum { N = 1000 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 0.25f * (float)i;
        c[i] = -1.0f;
    }
    cl_int st;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &st);
    cl_kernel k = clCreateKernel(prog, "vadd", &st);
    CHECK(st == CL_SUCCESS);
    if (!q || !k) goto out_k;
    cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof a, a, &st);
    cl_mem db = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b, &st);
    /* One element more than n: the guard must leave it alone. */
    cl_mem dc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof c, c, &st);
    cl_long n = N - 1;
    clSetKernelArg(k, 0, sizeof da, &da);
    clSetKernelArg(k, 1, sizeof db, &db);
    clSetKernelArg(k, 2, sizeof dc, &dc);
    clSetKernelArg(k, 3, sizeof n, &n);
    size_t global = N;
    st = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    CHECK(st == CL_SUCCESS);
    st = clEnqueueReadBuffer(q, dc, CL_TRUE, 0, sizeof c, c, 0, NULL, NULL);
    CHECK(st == CL_SUCCESS);
    int bad = 0;
    for (int i = 0; i < N - 1; i++)
        if (fabsf(c[i] - sqrtf(a[i] + b[i])) > 1e-5f * (1.0f + c[i])) bad++;
    CHECK(bad == 0);
    CHECK(c[N - 1] == -1.0f);
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
out_k:
    if (k) clReleaseKernel(k);
    if (q) clReleaseCommandQueue(q);
}

/* ---------------------------------------------------------------- SPIR-V */

static int has_bitcode_magic(const jit_blob *b) {
    const unsigned char *p = b->data;
    return b->size > 4 && p[0] == 'B' && p[1] == 'C' && p[2] == 0xC0 && p[3] == 0xDE;
}

static void test_spirv_vadd(void) {
    char err[2048] = "";
    LLVMContextRef ctx;
    double t0 = now_ms();
    LLVMModuleRef m = parse_ir(&ctx, vadd_ir);
    double t_parse = now_ms() - t0;
    CHECK(m != NULL);
    if (!m) return dispose(ctx, m);

    jit_blob spv = {0}, text = {0}, bc = {0};
    t0 = now_ms();
    int rc = jit_emit_spirv(m, &spv, err, sizeof err);
    double t_emit = now_ms() - t0;
    if (rc) fprintf(stderr, "jit_emit_spirv: %s\n", err);
    CHECK(rc == 0);
    CHECK(spv.size > 20 && spv.size % 4 == 0);
    CHECK(spv.data && ((uint32_t *)spv.data)[0] == 0x07230203);
    CHECK(spv.data && ((uint32_t *)spv.data)[1] == 0x00010000); /* SPIR-V 1.0 */

    t0 = now_ms();
    rc = jit_spirv_validate(&spv, err, sizeof err);
    double t_val = now_ms() - t0;
    CHECK(rc == 0);

    t0 = now_ms();
    rc = jit_spirv_disassemble(&spv, &text, err, sizeof err);
    double t_dis = now_ms() - t0;
    CHECK(rc == 0);
    CHECK(text.data && strlen(text.data) == text.size);
    CHECK_HAS(text.data, "OpEntryPoint Kernel");
    CHECK_HAS(text.data, "\"vadd\"");
    CHECK_HAS(text.data, "sqrt");

    t0 = now_ms();
    rc = jit_spirv_to_spir12(&spv, &bc, err, sizeof err);
    double t_spir = now_ms() - t0;
    if (rc) fprintf(stderr, "jit_spirv_to_spir12: %s\n", err);
    CHECK(rc == 0);
    CHECK(has_bitcode_magic(&bc));

    printf("  spir64 vadd: parse %.2f ms, optimise+SPIR-V+validate %.2f ms (%zu bytes), "
           "validate %.2f ms, disassemble %.2f ms, SPIR 1.2 %.2f ms (%zu bytes)\n",
           t_parse, t_emit, spv.size, t_val, t_dis, t_spir, bc.size);

    cl_platform_id plat;
    cl_device_id dev;
    if (rc == 0 && spir_device(&plat, &dev)) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
        cl_int st;
        cl_context cctx = clCreateContext(props, 1, &dev, NULL, NULL, &st);
        CHECK(st == CL_SUCCESS);
        double t_build = 0;
        cl_program prog = cctx ? build_spir(cctx, dev, &bc, &t_build) : NULL;
        CHECK(prog != NULL);
        char name[256] = "";
        clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
        printf("  SPIR 1.2 build on %s: %.1f ms (its own cache may make repeats fast)\n", name,
               t_build);
        if (prog) {
            run_vadd(cctx, dev, prog);
            clReleaseProgram(prog);
        }
        if (cctx) clReleaseContext(cctx);
    } else if (rc == 0) {
        printf("  skipped: no OpenCL device with cl_khr_spir to build SPIR 1.2 on\n");
    }
    jit_blob_free(&spv);
    jit_blob_free(&text);
    jit_blob_free(&bc);
    CHECK(spv.data == NULL && spv.size == 0);
    dispose(ctx, m);

    /* Warm, step by step: the optimiser, then the rest of jit_emit_spirv
     * (translation and validation; re-optimising optimised IR is cheap). */
    m = parse_ir(&ctx, vadd_ir);
    t0 = now_ms();
    CHECK(m && jit_optimize(m, err, sizeof err) == 0);
    double t_opt = now_ms() - t0;
    t0 = now_ms();
    CHECK(m && jit_emit_spirv(m, &spv, err, sizeof err) == 0);
    double t_rest = now_ms() - t0;
    printf("  spir64 vadd again: optimise %.2f ms, then SPIR-V+validate %.2f ms\n", t_opt, t_rest);
    jit_blob_free(&spv);
    dispose(ctx, m);
}

/* The optimiser must leave nothing the translator refuses, and nothing that
 * comes back from SPIR-V as IR that PoCL refuses. */
static void test_spirv_patterns(void) {
    char err[2048] = "";
    LLVMContextRef ctx;
    LLVMModuleRef m = parse_ir(&ctx, patterns_ir);
    CHECK(m != NULL);
    if (!m) return dispose(ctx, m);
    CHECK(jit_optimize(m, err, sizeof err) == 0);
    char *ir = LLVMPrintModuleToString(m);
    CHECK(!strstr(ir, "llvm.vector.reduce"));
    CHECK(!strstr(ir, "llvm.memset"));
    CHECK(!strstr(ir, "@clampi")); /* inlined, internal, gone */
    CHECK(!strstr(ir, "x i32>"));  /* no vectorised loop */
    CHECK(!strstr(ir, "freeze"));
    LLVMDisposeMessage(ir);

    jit_blob spv = {0}, bc = {0};
    double t0 = now_ms();
    int rc = jit_emit_spirv(m, &spv, err, sizeof err);
    double t_emit = now_ms() - t0;
    if (rc) fprintf(stderr, "jit_emit_spirv(patterns): %s\n", err);
    CHECK(rc == 0);
    t0 = now_ms();
    rc = rc ? rc : jit_spirv_to_spir12(&spv, &bc, err, sizeof err);
    double t_spir = now_ms() - t0;
    if (rc) fprintf(stderr, "patterns: %s\n", err);
    CHECK(rc == 0 && has_bitcode_magic(&bc));
    printf("  spir64 patterns (5 kernels): SPIR-V %.2f ms (%zu bytes), SPIR 1.2 %.2f ms\n", t_emit,
           spv.size, t_spir);

    cl_platform_id plat;
    cl_device_id dev;
    if (rc == 0 && spir_device(&plat, &dev)) {
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
        cl_int st;
        cl_context cctx = clCreateContext(props, 1, &dev, NULL, NULL, &st);
        double t_build = 0;
        cl_program prog = cctx ? build_spir(cctx, dev, &bc, &t_build) : NULL;
        CHECK(prog != NULL);
        static const char *const names[] = {"minmax", "rowsum", "priv", "divrem", "atomics"};
        for (size_t i = 0; prog && i < sizeof names / sizeof names[0]; i++) {
            cl_kernel k = clCreateKernel(prog, names[i], &st);
            if (st != CL_SUCCESS) fprintf(stderr, "clCreateKernel(%s): %d\n", names[i], st);
            CHECK(st == CL_SUCCESS);
            if (k) clReleaseKernel(k);
        }
        if (prog) clReleaseProgram(prog);
        if (cctx) clReleaseContext(cctx);
    }
    jit_blob_free(&spv);
    jit_blob_free(&bc);
    dispose(ctx, m);
}

static void test_spirv_block_order(void) {
    char err[2048] = "";
    LLVMContextRef ctx;
    LLVMModuleRef m = parse_ir(&ctx, order_ir);
    jit_blob spv = {0}, bc = {0};
    int rc = m ? jit_emit_spirv(m, &spv, err, sizeof err) : -1;
    if (rc) fprintf(stderr, "jit_emit_spirv(order): %s\n", err);
    CHECK(rc == 0);
    CHECK(rc == 0 && jit_spirv_to_spir12(&spv, &bc, err, sizeof err) == 0);
    jit_blob_free(&spv);
    jit_blob_free(&bc);
    dispose(ctx, m);
}

static void test_spirv_invalid(void) {
    char err[1024] = "";
    /* A header, then OpCapability with a word count that runs off the end. */
    uint32_t words[] = {0x07230203, 0x00010000, 0, 10, 0, (5u << 16) | 17u, 6};
    jit_blob bad = {words, sizeof words};
    CHECK(jit_spirv_validate(&bad, err, sizeof err) != 0);
    CHECK(err[0] != '\0');
    CHECK_HAS(err, "SPIR-V");

    err[0] = '\0';
    unsigned char odd[7] = {3, 2, 0x23, 7, 0, 0, 1};
    jit_blob short_blob = {odd, sizeof odd};
    CHECK(jit_spirv_validate(&short_blob, err, sizeof err) != 0);
    CHECK(err[0] != '\0');

    /* A well-formed module with no entry point and a Shader capability is
     * valid SPIR-V, but not for OpenCL. */
    uint32_t shader[] = {0x07230203,       0x00010000, 0, 1, 0,
                         (2u << 16) | 17u, 1,              /* OpCapability Shader */
                         (3u << 16) | 14u, 0,          1}; /* OpMemoryModel Logical GLSL450 */
    jit_blob sh = {shader, sizeof shader};
    err[0] = '\0';
    CHECK(jit_spirv_validate(&sh, err, sizeof err) != 0);
    CHECK(err[0] != '\0');

    jit_blob text = {0};
    err[0] = '\0';
    CHECK(jit_spirv_disassemble(&short_blob, &text, err, sizeof err) != 0);
    CHECK(text.data == NULL && err[0] != '\0');

    /* A triple that is not spir64 is refused, not miscompiled. */
    LLVMContextRef ctx;
    LLVMModuleRef m = parse_ir(&ctx, ptx_plain_ir);
    jit_blob spv = {0};
    err[0] = '\0';
    CHECK(m && jit_emit_spirv(m, &spv, err, sizeof err) != 0);
    CHECK_HAS(err, "spir64");
    dispose(ctx, m);

    /* Invalid IR is an error, not a crash. */
    m = parse_ir(&ctx, SPIR_HEAD "define spir_kernel void @k() {\n  ret void\n}\n");
    if (m) {
        LLVMValueRef k = LLVMGetNamedFunction(m, "k");
        LLVMBasicBlockRef bb = LLVMGetEntryBasicBlock(k);
        LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
        LLVMPositionBuilderAtEnd(b, bb); /* after the ret: a second terminator */
        LLVMBuildRetVoid(b);
        LLVMDisposeBuilder(b);
        err[0] = '\0';
        CHECK(jit_emit_spirv(m, &spv, err, sizeof err) != 0);
        CHECK_HAS(err, "compiler bug");
    }
    dispose(ctx, m);
}

/* Four comparisons of one value ANDed into a branch: left to the SLP
 * vectorizer, they become a <4 x double> compare bitcast to i4, which the
 * translator cannot take (it exits the process). The optimiser must leave them
 * scalar; and what SPIR-V lacks must be an error, not a dead process. */
static const char compare_chain_ir[] =
    SPIR_HEAD "define spir_kernel void @k(ptr addrspace(1) %a, ptr addrspace(1) %b) {\n"
              "entry:\n"
              "  %id = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
              "  %pa = getelementptr double, ptr addrspace(1) %a, i64 %id\n"
              "  %x = load double, ptr addrspace(1) %pa\n"
              "  %c0 = fcmp ogt double %x, 0.0\n"
              "  br i1 %c0, label %l1, label %out\n"
              "l1:\n"
              "  %c1 = fcmp ogt double %x, 0.01\n"
              "  br i1 %c1, label %l2, label %out\n"
              "l2:\n"
              "  %c2 = fcmp ogt double %x, 0.02\n"
              "  br i1 %c2, label %l3, label %out\n"
              "l3:\n"
              "  %c3 = fcmp ogt double %x, 0.03\n"
              "  br i1 %c3, label %yes, label %out\n"
              "yes:\n"
              "  %pb = getelementptr double, ptr addrspace(1) %b, i64 %id\n"
              "  store double 1.0, ptr addrspace(1) %pb\n"
              "  br label %out\n"
              "out:\n"
              "  ret void\n"
              "}\n";

static void test_spirv_illegal(void) {
    char err[1024] = "";
    LLVMContextRef ctx;
    LLVMModuleRef m = parse_ir(&ctx, compare_chain_ir);
    jit_blob spv = {0};
    int rc = m ? jit_emit_spirv(m, &spv, err, sizeof err) : -1;
    if (rc) fprintf(stderr, "jit_emit_spirv(compare chain): %s\n", err);
    CHECK(rc == 0);
    jit_blob_free(&spv);
    dispose(ctx, m);

    /* an odd-width integer the kernel's own signature carries */
    m = parse_ir(&ctx, SPIR_HEAD "define spir_kernel void @k(i4 %x, ptr addrspace(1) %o) {\n"
                                 "  %w = zext i4 %x to i8\n"
                                 "  store i8 %w, ptr addrspace(1) %o\n"
                                 "  ret void\n}\n");
    err[0] = '\0';
    CHECK(m && jit_emit_spirv(m, &spv, err, sizeof err) != 0);
    CHECK_HAS(err, "4-bit integer");
    CHECK(spv.data == NULL);
    dispose(ctx, m);

    /* an intrinsic the translator does not lower */
    m = parse_ir(&ctx, SPIR_HEAD "declare i32 @llvm.vector.reduce.mul.v4i32(<4 x i32>)\n"
                                 "define spir_kernel void @k(ptr addrspace(1) %p) {\n"
                                 "  %v = load <4 x i32>, ptr addrspace(1) %p\n"
                                 "  %r = call i32 @llvm.vector.reduce.mul.v4i32(<4 x i32> %v)\n"
                                 "  store i32 %r, ptr addrspace(1) %p\n"
                                 "  ret void\n}\n");
    err[0] = '\0';
    CHECK(m && jit_emit_spirv(m, &spv, err, sizeof err) != 0);
    CHECK_HAS(err, "llvm.vector.reduce.mul");
    dispose(ctx, m);

    /* a vector width OpenCL lacks */
    m = parse_ir(&ctx, SPIR_HEAD "define spir_kernel void @k(ptr addrspace(1) %p) {\n"
                                 "  %v = load <32 x i32>, ptr addrspace(1) %p\n"
                                 "  %w = add <32 x i32> %v, %v\n"
                                 "  store <32 x i32> %w, ptr addrspace(1) %p\n"
                                 "  ret void\n}\n");
    err[0] = '\0';
    CHECK(m && jit_emit_spirv(m, &spv, err, sizeof err) != 0);
    CHECK_HAS(err, "vector of 32 elements");
    dispose(ctx, m);
}

/* ---------------------------------------------------------------- PTX */

static const char *find_ptxas(void) {
    static char path[4096];
    const char *env = getenv("PATH");
    if (env) {
        char *dirs = strdup(env), *save = NULL;
        for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            snprintf(path, sizeof path, "%s/ptxas", d);
            if (access(path, X_OK) == 0) {
                free(dirs);
                return path;
            }
        }
        free(dirs);
    }
    const char *home = getenv("CUDA_HOME"); /* `make check` may point it at pip's toolkit */
    if (home && *home) {
        snprintf(path, sizeof path, "%s/bin/ptxas", home);
        if (access(path, X_OK) == 0) return path;
    }
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return "/usr/local/cuda/bin/ptxas";
    return NULL;
}

static void ptxas_check(const jit_blob *ptx, const char *what) {
    const char *ptxas = find_ptxas();
    if (!ptxas) {
        printf("  skipped: no ptxas to assemble the %s PTX\n", what);
        return;
    }
    char file[] = "/tmp/offload-test-XXXXXX.ptx";
    int fd = mkstemps(file, 4);
    CHECK(fd >= 0);
    if (fd < 0) return;
    CHECK(write(fd, ptx->data, ptx->size) == (ssize_t)ptx->size);
    close(fd);
    static const char *const archs[] = {"sm_80", "sm_90"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "'%s' -arch=%s -o /dev/null '%s'", ptxas, archs[i], file);
        int st = system(cmd);
        if (st != 0)
            fprintf(stderr, "ptxas -arch=%s failed on the %s PTX (%s)\n", archs[i], what, file);
        CHECK(st == 0);
    }
    unlink(file);
}

static void test_ptx_sm(void) {
    CHECK(jit_ptx_sm(80) == 80);
    CHECK(jit_ptx_sm(75) == 75);
    CHECK(jit_ptx_sm(86) == 86);
    CHECK(jit_ptx_sm(61) == 61);
    CHECK(jit_ptx_sm(20) == 20);
    CHECK(jit_ptx_sm(63) == 62); /* no sm_63: the newest older one */
#if LLVM_VERSION_MAJOR >= 16
    CHECK(jit_ptx_sm(90) == 90);
    CHECK(jit_ptx_sm(120) == 90);
#else
    CHECK(jit_ptx_sm(87) == 86);
    CHECK(jit_ptx_sm(90) == 86);
    CHECK(jit_ptx_sm(120) == 86);
#endif
}

static void test_ptx_plain(void) {
    char err[2048] = "";
    LLVMContextRef ctx;
    LLVMModuleRef m = parse_ir(&ctx, ptx_plain_ir);
    CHECK(m != NULL);
    jit_blob ptx = {0};
    double t0 = now_ms();
    int rc = m ? jit_emit_ptx(m, 80, &ptx, err, sizeof err) : -1;
    double t = now_ms() - t0;
    if (rc) fprintf(stderr, "jit_emit_ptx(plain): %s\n", err);
    CHECK(rc == 0);
    CHECK(ptx.data && strlen(ptx.data) == ptx.size);
    CHECK_HAS(ptx.data, ".entry scale");
    CHECK_HAS(ptx.data, ".target sm_80");
    CHECK(ptx.data && !strstr(ptx.data, "twice")); /* inlined and dropped */
    printf("  nvptx64 without libdevice: optimise+PTX %.2f ms (%zu bytes)\n", t, ptx.size);
    if (rc == 0) ptxas_check(&ptx, "plain");
    jit_blob_free(&ptx);
    dispose(ctx, m);
}

static void test_ptx_libdevice(void) {
    char err[2048] = "";
    for (int round = 0; round < 2; round++) {
        LLVMContextRef ctx;
        LLVMModuleRef m = parse_ir(&ctx, ptx_math_ir);
        CHECK(m != NULL);
        if (!m) return dispose(ctx, m);
        jit_blob ptx = {0};
        double t0 = now_ms();
        int rc = jit_emit_ptx(m, 80, &ptx, err, sizeof err);
        double t = now_ms() - t0;
        if (rc && strstr(err, "libdevice.10.bc from the CUDA toolkit")) {
            printf("  skipped: %s\n", err);
            return dispose(ctx, m);
        }
        if (rc) fprintf(stderr, "jit_emit_ptx(math): %s\n", err);
        CHECK(rc == 0);
        CHECK_HAS(ptx.data, ".entry sinpow");
        CHECK_HAS(ptx.data, ".target sm_80");
        CHECK_HAS(ptx.data, ".version 7.0");
        CHECK(ptx.data && !strstr(ptx.data, "__nv_"));          /* all inlined */
        CHECK(ptx.data && !strstr(ptx.data, "__nvvm_reflect")); /* all resolved */
        /* __CUDA_PREC_SQRT 1 and __CUDA_FTZ 0: IEEE sqrt, no flush to zero. */
        CHECK_HAS(ptx.data, "sqrt.rn.f32");
        CHECK(ptx.data && !strstr(ptx.data, "sqrt.approx"));
        printf("  nvptx64 with libdevice (%s): link+optimise+PTX %.2f ms (%zu bytes)\n",
               round ? "from memory" : "first, reads the file", t, ptx.size);
        if (rc == 0 && round == 0) ptxas_check(&ptx, "libdevice");
        jit_blob_free(&ptx);

        /* The same module again for sm_90 and 120: what the mapping gives. */
        if (round == 1) {
            LLVMContextRef ctx2;
            LLVMModuleRef m2 = parse_ir(&ctx2, ptx_math_ir);
            char want[32];
            snprintf(want, sizeof want, ".target sm_%d", jit_ptx_sm(90));
            CHECK(m2 && jit_emit_ptx(m2, 90, &ptx, err, sizeof err) == 0);
            CHECK_HAS(ptx.data, want);
            jit_blob_free(&ptx);
            dispose(ctx2, m2);
        }
        dispose(ctx, m);
    }
}

/* Contexts are per compile; several threads compile at once in the kernel. */
static void *compile_both(void *arg) {
    int *ok = arg;
    char err[1024];
    LLVMContextRef ctx;
    LLVMModuleRef m = parse_ir(&ctx, vadd_ir);
    jit_blob spv = {0}, bc = {0}, ptx = {0};
    *ok = m && jit_emit_spirv(m, &spv, err, sizeof err) == 0 &&
          jit_spirv_to_spir12(&spv, &bc, err, sizeof err) == 0;
    dispose(ctx, m);
    m = parse_ir(&ctx, ptx_plain_ir);
    *ok = *ok && m && jit_emit_ptx(m, 75, &ptx, err, sizeof err) == 0;
    dispose(ctx, m);
    jit_blob_free(&ptx);
    /* libdevice's bytes are shared; each parse is in the caller's context. */
    m = parse_ir(&ctx, ptx_math_ir);
    *ok = *ok && m &&
          (jit_emit_ptx(m, 86, &ptx, err, sizeof err) == 0 ||
           strstr(err, "libdevice.10.bc from the CUDA toolkit"));
    dispose(ctx, m);
    jit_blob_free(&spv);
    jit_blob_free(&bc);
    jit_blob_free(&ptx);
    return NULL;
}

static void test_threads(void) {
    enum { T = 4 };
    pthread_t th[T];
    int ok[T] = {0};
    for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, compile_both, &ok[i]);
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK(ok[i]);
    }
}

int main(void) {
    printf("jit backend (LLVM %d):\n", LLVM_VERSION_MAJOR);
    test_spirv_vadd();
    test_spirv_patterns();
    test_spirv_block_order();
    test_spirv_invalid();
    test_spirv_illegal();
    test_ptx_sm();
    test_ptx_plain();
    test_ptx_libdevice();
    test_threads();
    return unit_finish();
}
