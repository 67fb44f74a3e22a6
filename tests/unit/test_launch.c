/* Unit tests for the programs-and-launches half of offload/ofl_runtime.h.
 *
 * OpenCL: on a device that takes SPIR 1.2 bitcode (PoCL's CPU device here),
 * with bitcode made at test time the way the JIT makes it -- LLVM IR text to
 * SPIR-V and back to SPIR 1.2 -- by the LLVM 15 tools (llvm-as, llvm-spirv).
 * POCL_DEVICES="pthread pthread" gives a second device, for the check that a
 * launch refuses an array of another device. CUDA, where a device exists:
 * the same with PTX written here, plus a kernel's fault, the message naming
 * it, and the recovery (stale arrays and programs, a rebuilt program runs),
 * and the tuner's full build taking over from the quick first one.
 * What the machine cannot run is skipped, saying why. Host overhead per
 * launch is printed, not checked: machines differ.
 *
 * Prints "N passed, M failed" as its last line; exits non-zero on any failure. */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ofl_backend.h" /* the tuner's fields, for check_tuning */
#include "ofl_runtime.h"
#include "unit.h"

static ofl_device *const *devs;
static size_t ndevs;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static const char *filter_of(const ofl_device *dev) { return ofl_device_get_info(dev)->filter; }

/* ---- binary kinds ---- */

static void test_binary_kind(void) {
    CHECK(ofl_device_binary_kind(NULL) == OFL_BIN_NONE);
    for (size_t i = 0; i < ndevs; i++) {
        const ofl_device_info *in = ofl_device_get_info(devs[i]);
        ofl_binary_kind k = ofl_device_binary_kind(devs[i]);
        if (in->backend == OFL_CUDA)
            CHECK(k == OFL_BIN_PTX);
        else if (strstr(in->il_version, "SPIR-V"))
            CHECK(k == OFL_BIN_SPIRV);
        else if (in->has_spir)
            CHECK(k == OFL_BIN_SPIR12);
        else
            CHECK(k == OFL_BIN_NONE);
    }
}

/* ---- SPIR 1.2 bitcode from IR text, with the LLVM 15 tools ---- */

#define SPIR_HEAD                                                                                  \
    "target datalayout = \"e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-"        \
    "v512:512-v1024:1024-n8:16:32:64\"\n"                                                          \
    "target triple = \"spir64-unknown-unknown\"\n"                                                 \
    "declare spir_func i64 @_Z13get_global_idj(i32)\n"

/* Three kernels, each with the tail guard every JIT'd kernel has (a Range
 * need not be a multiple of the work-group size):
 *   vadd(a, b, c, n):    c[i] = a[i] + b[i]            for i < n
 *   axpy(y, x, a, n):    y[i] = a * x[i] + y[i]        a: a float by value
 *   fill2d(out, w, h):   out[j*w + i] = 1000*j + i     i, j: ids 0 and 1 */
static const char kernels_ir[] =
    SPIR_HEAD "define spir_kernel void @vadd(ptr addrspace(1) %a, ptr addrspace(1) %b,\n"
              "                              ptr addrspace(1) %c, i32 %n) {\n"
              "entry:\n"
              "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
              "  %n64 = sext i32 %n to i64\n"
              "  %ok = icmp slt i64 %i, %n64\n"
              "  br i1 %ok, label %body, label %done\n"
              "body:\n"
              "  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i\n"
              "  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i\n"
              "  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %i\n"
              "  %x = load float, ptr addrspace(1) %pa, align 4\n"
              "  %y = load float, ptr addrspace(1) %pb, align 4\n"
              "  %s = fadd float %x, %y\n"
              "  store float %s, ptr addrspace(1) %pc, align 4\n"
              "  br label %done\n"
              "done:\n"
              "  ret void\n"
              "}\n"
              "define spir_kernel void @axpy(ptr addrspace(1) %y, ptr addrspace(1) %x, float %a,\n"
              "                              i32 %n) {\n"
              "entry:\n"
              "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
              "  %n64 = sext i32 %n to i64\n"
              "  %ok = icmp slt i64 %i, %n64\n"
              "  br i1 %ok, label %body, label %done\n"
              "body:\n"
              "  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %i\n"
              "  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %i\n"
              "  %vx = load float, ptr addrspace(1) %px, align 4\n"
              "  %vy = load float, ptr addrspace(1) %py, align 4\n"
              "  %ax = fmul float %a, %vx\n"
              "  %r = fadd float %ax, %vy\n"
              "  store float %r, ptr addrspace(1) %py, align 4\n"
              "  br label %done\n"
              "done:\n"
              "  ret void\n"
              "}\n"
              "define spir_kernel void @fill2d(ptr addrspace(1) %out, i32 %w, i32 %h) {\n"
              "entry:\n"
              "  %i = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
              "  %j = call spir_func i64 @_Z13get_global_idj(i32 1)\n"
              "  %w64 = sext i32 %w to i64\n"
              "  %h64 = sext i32 %h to i64\n"
              "  %okx = icmp slt i64 %i, %w64\n"
              "  %oky = icmp slt i64 %j, %h64\n"
              "  %ok = and i1 %okx, %oky\n"
              "  br i1 %ok, label %body, label %done\n"
              "body:\n"
              "  %row = mul i64 %j, %w64\n"
              "  %k = add i64 %row, %i\n"
              "  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %k\n"
              "  %j32 = trunc i64 %j to i32\n"
              "  %i32 = trunc i64 %i to i32\n"
              "  %v1 = mul i32 %j32, 1000\n"
              "  %v = add i32 %v1, %i32\n"
              "  store i32 %v, ptr addrspace(1) %p, align 4\n"
              "  br label %done\n"
              "done:\n"
              "  ret void\n"
              "}\n"
              "!opencl.ocl.version = !{!0}\n"
              "!opencl.spir.version = !{!0}\n"
              "!0 = !{i32 1, i32 2}\n";

/* The tool's path: its versioned name on PATH, else LLVM 15's own folder. */
static bool find_tool(const char *name, const char *fallback, char *out, size_t len) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    if (system(cmd) == 0) {
        snprintf(out, len, "%s", name);
        return true;
    }
    if (access(fallback, X_OK) == 0) {
        snprintf(out, len, "%s", fallback);
        return true;
    }
    return false;
}

static void *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = buf ? (size_t)n : 0;
    return buf;
}

/* SPIR 1.2 bitcode of kernels_ir; NULL with *why set when the tools are missing. */
static void *make_spir12(size_t *size, char *why, size_t whylen) {
    char as[128], spirv[128];
    if (!find_tool("llvm-as-15", "/usr/lib/llvm-15/bin/llvm-as", as, sizeof as) ||
        !find_tool("llvm-spirv-15", "/usr/lib/llvm-15/bin/llvm-spirv", spirv, sizeof spirv)) {
        snprintf(why, whylen,
                 "llvm-as-15 or llvm-spirv-15 not found (packages llvm-15, "
                 "llvm-spirv-15)");
        return NULL;
    }
    char dir[] = "/tmp/ofl_test_launch.XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(why, whylen, "cannot make a temporary folder");
        return NULL;
    }
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/k.ll", dir);
    FILE *f = fopen(path, "w");
    void *bin = NULL;
    if (f) {
        fputs(kernels_ir, f);
        fclose(f);
        /* as the JIT does it: IR -> SPIR-V -> SPIR 1.2 bitcode */
        snprintf(cmd, sizeof cmd,
                 "cd %s && %s -opaque-pointers k.ll -o k.bc && %s k.bc -o k.spv && "
                 "%s -r --spirv-target-env=CL1.2 k.spv -o k12.bc",
                 dir, as, spirv, spirv);
        if (system(cmd) == 0) {
            snprintf(path, sizeof path, "%s/k12.bc", dir);
            bin = slurp(path, size);
        }
        if (!bin) snprintf(why, whylen, "the LLVM tools failed: %s", cmd);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", dir);
    return bin;
}

/* ---- the checks both backends share ---- */

typedef struct {
    ofl_device *dev;
    ofl_binary_kind kind;
    const void *bin;
    size_t size;
} target;

static ofl_program *build(const target *t, const char *entry) {
    ofl_program *p = NULL;
    ofl_error err = {0};
    int rc = ofl_program_build(t->dev, t->kind, t->bin, t->size, entry, &p, &err);
    if (rc) fprintf(stderr, "  build of %s on %s: %s\n", entry, filter_of(t->dev), err.msg);
    CHECK(rc == 0 && p);
    return p;
}

static ofl_arg buf_arg(const ofl_buffer *b) { return (ofl_arg){b, NULL, 0}; }

#define N 1000   /* not a multiple of any work-group size the runtime picks */
#define PAD 1100 /* c's length: what lies past n shows a missing tail guard */

static bool vadd_ok(ofl_buffer *c, const char *how) {
    static float out[PAD];
    ofl_error err = {0};
    if (ofl_read(c, 0, out, sizeof out, &err)) {
        fprintf(stderr, "  read after vadd (%s): %s\n", how, err.msg);
        return false;
    }
    for (int i = 0; i < PAD; i++) {
        float want = i < N ? (float)i + 2.0f * (float)i : -1.0f;
        if (out[i] != want) {
            fprintf(stderr, "  vadd (%s): c[%d] = %g, want %g\n", how, i, out[i], want);
            return false;
        }
    }
    return true;
}

static void reset_c(ofl_buffer *c) {
    static float minus[PAD];
    for (int i = 0; i < PAD; i++) minus[i] = -1.0f;
    CHECK(ofl_write(c, 0, minus, sizeof minus, NULL) == 0);
}

/* vadd over n = 1000 with the runtime's work-group, with an explicit one,
 * timed by an event; the refusals of sizes and arguments. */
static void check_vadd(const target *t, ofl_device *other) {
    const char *f = filter_of(t->dev);
    ofl_program *p = build(t, "vadd");
    if (!p) return;
    CHECK(ofl_program_device(p) == t->dev);
    CHECK(ofl_program_max_work_group_size(p) >= 1);
    CHECK(!ofl_program_is_stale(p));

    static float a[N], b[N];
    for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 2.0f * (float)i;
    ofl_buffer *ba = NULL, *bb = NULL, *bc = NULL;
    ofl_error err = {0};
    CHECK(ofl_alloc(t->dev, sizeof a, &ba, &err) == 0);
    CHECK(ofl_alloc(t->dev, sizeof b, &bb, &err) == 0);
    CHECK(ofl_alloc(t->dev, PAD * sizeof(float), &bc, &err) == 0);
    if (!ba || !bb || !bc) goto out;
    CHECK(ofl_write(ba, 0, a, sizeof a, &err) == 0);
    CHECK(ofl_write(bb, 0, b, sizeof b, &err) == 0);
    reset_c(bc);
    int n = N;
    ofl_arg args[4] = {buf_arg(ba), buf_arg(bb), buf_arg(bc), {NULL, &n, sizeof n}};
    size_t global[1] = {N};

    /* the runtime's work-group, timed */
    ofl_event *ev = NULL;
    int rc = ofl_launch(p, 1, global, NULL, args, 4, &ev, &err);
    if (rc) fprintf(stderr, "  launch on %s: %s\n", f, err.msg);
    CHECK(rc == 0 && ev);
    if (ev) {
        CHECK(ofl_event_wait(ev, &err) == 0);
        double s = ofl_event_elapsed(ev);
        CHECK(s >= 0 && s < 10);
        printf("vadd of %d on %s: %.1f us on the device\n", N, f, s * 1e6);
        ofl_event_release(ev);
    }
    CHECK(vadd_ok(bc, "runtime's work-group"));

    /* an explicit work-group that divides n */
    reset_c(bc);
    size_t local[1] = {8};
    rc = ofl_launch(p, 1, global, local, args, 4, NULL, &err);
    if (rc) fprintf(stderr, "  launch with local 8 on %s: %s\n", f, err.msg);
    CHECK(rc == 0);
    CHECK(ofl_synchronize(t->dev, &err) == 0);
    CHECK(vadd_ok(bc, "local 8"));

    /* a global size that the work-group does not divide */
    memset(&err, 0, sizeof err);
    local[0] = 64;
    CHECK(ofl_launch(p, 1, global, local, args, 4, NULL, &err) == OFL_ERR_INVALID);
    CHECK(err.code == OFL_ERR_INVALID);
    CHECK_HAS(err.msg, "1000");
    CHECK_HAS(err.msg, "64");
    CHECK_HAS(err.msg, "vadd");

    /* a work-group larger than the kernel allows (each dimension within the
     * device's limits, the product not) */
    size_t most = ofl_program_max_work_group_size(p);
    const ofl_device_info *in = ofl_device_get_info(t->dev);
    size_t lx = most < in->max_work_item_sizes[0] ? most : in->max_work_item_sizes[0];
    size_t big[2] = {lx, most / lx + 1};
    if (big[1] <= in->max_work_item_sizes[1]) {
        char limit[32];
        snprintf(limit, sizeof limit, "%zu", most);
        memset(&err, 0, sizeof err);
        CHECK(ofl_launch(p, 2, big, big, args, 4, NULL, &err) == OFL_ERR_INVALID);
        CHECK_HAS(err.msg, limit);
    }
    size_t zero_local[1] = {0};
    CHECK(ofl_launch(p, 1, global, zero_local, args, 4, NULL, &err) == OFL_ERR_INVALID);

    /* arguments: their count, a missing value */
    CHECK(ofl_launch(p, 1, global, NULL, args, 3, NULL, &err) == OFL_ERR_INVALID);
    CHECK_HAS(err.msg, "takes 4 arguments");
    ofl_arg no_value[4] = {args[0], args[1], args[2], {NULL, NULL, 0}};
    CHECK(ofl_launch(p, 1, global, NULL, no_value, 4, NULL, &err) == OFL_ERR_INVALID);
    CHECK_HAS(err.msg, "argument 3");

    /* dimensions */
    CHECK(ofl_launch(p, 0, global, NULL, args, 4, NULL, &err) == OFL_ERR_INVALID);
    CHECK(ofl_launch(p, 4, global, NULL, args, 4, NULL, &err) == OFL_ERR_INVALID);
    CHECK(ofl_launch(NULL, 1, global, NULL, args, 4, NULL, &err) == OFL_ERR_INVALID);

    /* nothing to run: fine, and its event completes */
    size_t none[1] = {0};
    reset_c(bc);
    ev = NULL;
    CHECK(ofl_launch(p, 1, none, NULL, args, 4, &ev, &err) == 0 && ev);
    CHECK(ofl_event_wait(ev, &err) == 0);
    ofl_event_release(ev);
    float first;
    CHECK(ofl_read(bc, 0, &first, sizeof first, &err) == 0 && first == -1.0f);

    /* an array of another device */
    if (other) {
        ofl_buffer *bo = NULL;
        CHECK(ofl_alloc(other, sizeof a, &bo, &err) == 0);
        ofl_arg mixed[4] = {buf_arg(bo), args[1], args[2], args[3]};
        memset(&err, 0, sizeof err);
        CHECK(ofl_launch(p, 1, global, NULL, mixed, 4, NULL, &err) == OFL_ERR_INVALID);
        CHECK_HAS(err.msg, filter_of(other));
        CHECK_HAS(err.msg, f);
        ofl_free(bo);
    }

    /* host overhead per launch: queued back to back, then waited for */
    int reps = 2000;
    double t0 = now_us();
    for (int r = 0; r < reps; r++) ofl_launch(p, 1, global, NULL, args, 4, NULL, NULL);
    double t1 = now_us();
    CHECK(ofl_synchronize(t->dev, &err) == 0);
    double t2 = now_us();
    printf("%d launches of vadd on %s: %.2f us each to queue, %.2f us each in all\n", reps, f,
           (t1 - t0) / reps, (t2 - t0) / reps);
    CHECK(vadd_ok(bc, "after the repeats"));
out:
    ofl_free(ba);
    ofl_free(bb);
    ofl_free(bc);
    ofl_program_release(p);
}

/* A 2-D launch: ids 0 and 1, the runtime's work-group and an explicit one. */
static void check_fill2d(const target *t) {
    ofl_program *p = build(t, "fill2d");
    if (!p) return;
    enum { W = 37, H = 23 };
    ofl_buffer *b = NULL;
    ofl_error err = {0};
    CHECK(ofl_alloc(t->dev, W * H * sizeof(int), &b, &err) == 0);
    if (!b) goto out;
    int w = W, h = H;
    ofl_arg args[3] = {buf_arg(b), {NULL, &w, sizeof w}, {NULL, &h, sizeof h}};
    size_t global[2] = {W, H}, local[2] = {1, 1};
    for (int pass = 0; pass < 2; pass++) {
        static int out[W * H];
        memset(out, 0xff, sizeof out);
        CHECK(ofl_write(b, 0, out, sizeof out, &err) == 0);
        int rc = ofl_launch(p, 2, global, pass ? local : NULL, args, 3, NULL, &err);
        if (rc) fprintf(stderr, "  fill2d on %s: %s\n", filter_of(t->dev), err.msg);
        CHECK(rc == 0);
        CHECK(ofl_read(b, 0, out, sizeof out, &err) == 0);
        int bad = 0;
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) bad += out[j * W + i] != 1000 * j + i;
        if (bad) fprintf(stderr, "  fill2d (pass %d): %d cells wrong\n", pass, bad);
        CHECK(bad == 0);
    }
out:
    ofl_free(b);
    ofl_program_release(p);
}

/* A binary the driver refuses, an entry point it lacks, a kind it does not take. */
static void check_build_errors(const target *t, ofl_binary_kind wrong_kind) {
    const char *f = filter_of(t->dev);
    ofl_program *p = NULL;
    ofl_error err = {0};
    static const char junk[] = "this is not a binary of any kind";
    int rc = ofl_program_build(t->dev, t->kind, junk, sizeof junk, "vadd", &p, &err);
    if (rc != OFL_ERR_DEVICE) fprintf(stderr, "  junk binary: %d %s\n", rc, err.msg);
    CHECK(rc == OFL_ERR_DEVICE);
    CHECK(p == NULL);
    CHECK_HAS(err.msg, f);
    CHECK_HAS(err.msg, "vadd");

    memset(&err, 0, sizeof err);
    rc = ofl_program_build(t->dev, t->kind, t->bin, t->size, "no_such_kernel", &p, &err);
    CHECK(rc != 0);
    CHECK(p == NULL);
    CHECK_HAS(err.msg, "no_such_kernel");

    CHECK(ofl_program_build(t->dev, wrong_kind, t->bin, t->size, "vadd", &p, &err) ==
          OFL_ERR_INVALID);
    CHECK(ofl_program_build(t->dev, t->kind, t->bin, 0, "vadd", &p, &err) == OFL_ERR_INVALID);
    CHECK(ofl_program_build(t->dev, t->kind, t->bin, t->size, "", &p, &err) == OFL_ERR_INVALID);
    CHECK(ofl_program_build(NULL, t->kind, t->bin, t->size, "vadd", &p, &err) == OFL_ERR_INVALID);
    ofl_program_release(NULL);
}

/* ---- OpenCL ---- */

static void check_axpy(const target *t) {
    ofl_program *p = build(t, "axpy");
    if (!p) return;
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
    ofl_buffer *bx = NULL, *by = NULL;
    ofl_error err = {0};
    CHECK(ofl_alloc(t->dev, sizeof x, &bx, &err) == 0);
    CHECK(ofl_alloc(t->dev, sizeof y, &by, &err) == 0);
    if (bx && by) {
        CHECK(ofl_write(bx, 0, x, sizeof x, &err) == 0);
        CHECK(ofl_write(by, 0, y, sizeof y, &err) == 0);
        float a = 2.5f;
        int n = N;
        ofl_arg args[4] = {buf_arg(by), buf_arg(bx), {NULL, &a, sizeof a}, {NULL, &n, sizeof n}};
        size_t global[1] = {N};
        int rc = ofl_launch(p, 1, global, NULL, args, 4, NULL, &err);
        if (rc) fprintf(stderr, "  axpy: %s\n", err.msg);
        CHECK(rc == 0);
        CHECK(ofl_read(by, 0, y, sizeof y, &err) == 0);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += y[i] != 2.5f * (float)i + 1.0f;
        CHECK(bad == 0);
    }
    ofl_free(bx);
    ofl_free(by);
    ofl_program_release(p);
}

/* The pool of released OpenCL buffers: bounded, the oldest let go when it
 * is full, the newest of a size handed out again. */
static void check_pool(ofl_device *dev) {
    enum { NBUF = 20, KIB = 1024 };
    ofl_buffer *b[NBUF];
    ofl_error err;
    for (int i = 0; i < NBUF; i++) CHECK(ofl_alloc(dev, (size_t)(256 + i) * KIB, &b[i], &err) == 0);
    void *last = b[NBUF - 1]->h.mem;
    for (int i = 0; i < NBUF; i++) ofl_free(b[i]);
    CHECK(dev->h.cl.npool == 16);
    size_t sum = 0;
    for (int i = 0; i < dev->h.cl.npool; i++) sum += dev->h.cl.pool[i].size;
    CHECK(sum == dev->h.cl.pooled);
    CHECK(dev->h.cl.pool[0].size == (size_t)(256 + NBUF - 16) * KIB); /* the 4 oldest went */
    ofl_buffer *again = NULL, *old = NULL;
    CHECK(ofl_alloc(dev, (size_t)(256 + NBUF - 1) * KIB, &again, &err) == 0);
    CHECK(again->h.mem == last);
    CHECK(ofl_alloc(dev, 256 * KIB, &old, &err) == 0); /* not from the pool: it left */
    CHECK(dev->h.cl.npool == 15);
    ofl_free(again);
    ofl_free(old);
}

static void test_opencl(void) {
    ofl_device *dev = NULL, *other = NULL;
    for (size_t i = 0; i < ndevs; i++) {
        if (ofl_device_binary_kind(devs[i]) != OFL_BIN_SPIR12) continue;
        if (!dev)
            dev = devs[i];
        else if (!other)
            other = devs[i];
    }
    if (!dev) {
        printf("skip: OpenCL launches (no device takes SPIR 1.2 bitcode)\n");
        return;
    }
    char why[1200] = "";
    size_t size = 0;
    void *bin = make_spir12(&size, why, sizeof why);
    if (!bin) {
        printf("skip: OpenCL launches (%s)\n", why);
        return;
    }
    if (!other)
        printf("skip: an array of another device (a second SPIR 1.2 device; PoCL gives one "
               "with POCL_DEVICES=\"pthread pthread\")\n");
    target t = {dev, OFL_BIN_SPIR12, bin, size};
    check_build_errors(&t, OFL_BIN_PTX);
    check_vadd(&t, other);
    check_axpy(&t);
    check_fill2d(&t);
    check_pool(dev);
    free(bin);
}

/* ---- CUDA ---- */

/* The kernels of kernels_ir, as LLVM's NVPTX back end writes them (sm_50:
 * every GPU since takes it through the driver's JIT), and bad(addr), which
 * stores to an address no memory is at. */
static const char kernels_ptx[] =
    ".version 4.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry vadd(.param .u64 vadd_param_0, .param .u64 vadd_param_1,\n"
    "                     .param .u64 vadd_param_2, .param .u32 vadd_param_3)\n"
    "{\n"
    "  .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<8>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  ld.param.u32 %r3, [vadd_param_3];\n"
    "  mov.u32 %r4, %ntid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r4, %r1;\n"
    "  setp.ge.s32 %p1, %r5, %r3;\n"
    "  @%p1 bra $L__BB0_2;\n"
    "  ld.param.u64 %rd4, [vadd_param_0];\n"
    "  ld.param.u64 %rd5, [vadd_param_1];\n"
    "  ld.param.u64 %rd6, [vadd_param_2];\n"
    "  mul.wide.s32 %rd7, %r5, 4;\n"
    "  add.s64 %rd1, %rd4, %rd7;\n"
    "  add.s64 %rd2, %rd5, %rd7;\n"
    "  add.s64 %rd3, %rd6, %rd7;\n"
    "  ld.global.f32 %f1, [%rd1];\n"
    "  ld.global.f32 %f2, [%rd2];\n"
    "  add.rn.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd3], %f3;\n"
    "$L__BB0_2:\n"
    "  ret;\n"
    "}\n"
    ".visible .entry fill2d(.param .u64 fill2d_param_0, .param .u32 fill2d_param_1,\n"
    "                       .param .u32 fill2d_param_2)\n"
    "{\n"
    "  .reg .pred %p<4>; .reg .b32 %r<13>; .reg .b64 %rd<4>;\n"
    "  ld.param.u32 %r2, [fill2d_param_1];\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  ld.param.u32 %r4, [fill2d_param_2];\n"
    "  mov.u32 %r5, %ctaid.x;\n"
    "  mov.u32 %r6, %ntid.x;\n"
    "  mad.lo.s32 %r7, %r5, %r6, %r3;\n"
    "  mov.u32 %r8, %tid.y;\n"
    "  mov.u32 %r9, %ctaid.y;\n"
    "  mov.u32 %r10, %ntid.y;\n"
    "  mad.lo.s32 %r11, %r9, %r10, %r8;\n"
    "  setp.ge.s32 %p1, %r7, %r2;\n"
    "  setp.ge.s32 %p2, %r11, %r4;\n"
    "  or.pred %p3, %p1, %p2;\n"
    "  @%p3 bra $L__BB1_2;\n"
    "  ld.param.u64 %rd2, [fill2d_param_0];\n"
    "  mad.lo.s32 %r12, %r11, %r2, %r7;\n"
    "  mul.wide.s32 %rd3, %r12, 4;\n"
    "  add.s64 %rd1, %rd2, %rd3;\n"
    "  mad.lo.s32 %r1, %r11, 1000, %r7;\n"
    "  st.global.u32 [%rd1], %r1;\n"
    "$L__BB1_2:\n"
    "  ret;\n"
    "}\n"
    ".visible .entry bad(.param .u64 bad_param_0)\n"
    "{\n"
    "  .reg .b32 %r<2>; .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [bad_param_0];\n"
    "  mov.u32 %r1, 1;\n"
    "  st.volatile.global.u32 [%rd1], %r1;\n"
    "  ret;\n"
    "}\n";

/* ptxas's complaint reaches the message. */
static void check_ptx_log(ofl_device *dev) {
    static const char broken[] = ".version 4.0\n.target sm_50\n.address_size 64\n"
                                 ".visible .entry vadd()\n{\n  frobnicate.u32 %r1;\n  ret;\n}\n";
    ofl_program *p = NULL;
    ofl_error err = {0};
    /* without its '\0': the runtime adds one */
    int rc = ofl_program_build(dev, OFL_BIN_PTX, broken, sizeof broken - 1, "vadd", &p, &err);
    CHECK(rc == OFL_ERR_DEVICE);
    CHECK_HAS(err.msg, "PTX compiler says");
    CHECK_HAS(err.msg, "frobnicate");
    printf("broken PTX: %s\n", err.msg);
}

/* A kernel's fault: named at the next wait, the context reset, what lived
 * in it refused, and the device usable again. */
static void check_fault(const target *t) {
    const char *f = filter_of(t->dev);
    ofl_program *vadd = build(t, "vadd"), *bad = build(t, "bad");
    ofl_buffer *x = NULL;
    ofl_error err = {0};
    CHECK(ofl_alloc(t->dev, 4096, &x, &err) == 0);
    if (!vadd || !bad || !x) goto out;
    uint64_t nowhere = 16; /* the null page: nothing is mapped there */
    ofl_arg bad_args[1] = {{NULL, &nowhere, sizeof nowhere}};
    size_t one[1] = {1};
    ofl_event *ev = NULL;
    CHECK(ofl_launch(bad, 1, one, NULL, bad_args, 1, &ev, &err) == 0); /* queued fine */
    memset(&err, 0, sizeof err);
    int rc = ofl_synchronize(t->dev, &err);
    printf("after the fault: %s\n", err.msg);
    CHECK(rc == OFL_ERR_DEVICE);
    CHECK_HAS(err.msg, "kernel 'bad' failed on");
    CHECK_HAS(err.msg, f);
    CHECK_HAS(err.msg, "CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK(ofl_program_is_stale(vadd));
    CHECK(ofl_program_is_stale(bad));

    /* the event and the array of the old context */
    if (ev) {
        CHECK(ofl_event_wait(ev, &err) == OFL_ERR_DEVICE);
        CHECK(ofl_event_elapsed(ev) < 0);
        ofl_event_release(ev);
    }
    char tmp[16];
    memset(&err, 0, sizeof err);
    CHECK(ofl_read(x, 0, tmp, sizeof tmp, &err) == OFL_ERR_DEVICE);
    CHECK_HAS(err.msg, "this array lived in");
    CHECK_HAS(err.msg, "kernel 'bad' faulted");
    CHECK(ofl_write(x, 0, tmp, sizeof tmp, &err) == OFL_ERR_DEVICE);

    /* the program of the old context */
    int n = 4;
    ofl_arg args[4] = {buf_arg(x), buf_arg(x), buf_arg(x), {NULL, &n, sizeof n}};
    memset(&err, 0, sizeof err);
    CHECK(ofl_launch(vadd, 1, one, NULL, args, 4, NULL, &err) == OFL_ERR_DEVICE);
    CHECK_HAS(err.msg, "stale");
    ofl_free(x); /* forgets it: the memory went with the context */
    x = NULL;
    ofl_program_release(vadd);
    vadd = NULL;

    /* Either the reset recovered (older drivers): a new context takes
     * allocations and a rebuilt program; or the driver keeps the fault for
     * the life of the process (580 does): then every call says so, at once. */
    memset(&err, 0, sizeof err);
    if (ofl_synchronize(t->dev, &err) == 0) {
        printf("the context of %s recovered after the fault\n", f);
        CHECK(ofl_alloc(t->dev, 4096, &x, &err) == 0);
        vadd = build(t, "vadd");
        if (x && vadd) {
            float v[4] = {1, 2, 3, 4}, w[4] = {0};
            CHECK(ofl_write(x, 0, v, sizeof v, &err) == 0);
            size_t four[1] = {4};
            CHECK(ofl_launch(vadd, 1, four, NULL, args, 4, NULL, &err) == 0); /* x = x + x */
            CHECK(ofl_read(x, 0, w, sizeof w, &err) == 0);
            CHECK(w[0] == 2 && w[3] == 8);
        }
    } else {
        printf("%s is lost for this process: %s\n", f, err.msg);
        CHECK(err.code == OFL_ERR_DEVICE);
        CHECK_HAS(err.msg, "restart");
        CHECK_HAS(err.msg, "kernel 'bad' faulted");
        memset(&err, 0, sizeof err);
        CHECK(ofl_alloc(t->dev, 4096, &x, &err) == OFL_ERR_DEVICE);
        CHECK_HAS(err.msg, "restart");
        ofl_program *again = NULL;
        CHECK(ofl_program_build(t->dev, t->kind, t->bin, t->size, "vadd", &again, &err) ==
              OFL_ERR_DEVICE);
        CHECK(again == NULL);
    }
out:
    ofl_free(x);
    ofl_program_release(vadd);
    ofl_program_release(bad);
}

/* A program runs right from its quick build, and again once the tuner's
 * full build has taken over; programs released while queued for the tuner,
 * or in its hands, take nothing down. */
static void check_tuning(const target *t) {
    /* released at once: the first one is likely in the tuner's hands */
    for (int k = 0; k < 6; k++) ofl_program_release(build(t, k % 2 ? "fill2d" : "vadd"));
    ofl_program *p = build(t, "vadd");
    ofl_buffer *ba = NULL, *bc = NULL;
    ofl_error err = {0};
    CHECK(ofl_alloc(t->dev, N * sizeof(float), &ba, &err) == 0);
    CHECK(ofl_alloc(t->dev, PAD * sizeof(float), &bc, &err) == 0);
    if (!p || !ba || !bc) goto out;
    static float a[N];
    for (int i = 0; i < N; i++) a[i] = (float)i;
    CHECK(ofl_write(ba, 0, a, sizeof a, &err) == 0);
    int n = N;
    /* c = a + a, then c = a + c: the 3i that vadd_ok wants */
    ofl_arg first[4] = {buf_arg(ba), buf_arg(ba), buf_arg(bc), {NULL, &n, sizeof n}};
    ofl_arg second[4] = {buf_arg(ba), buf_arg(bc), buf_arg(bc), {NULL, &n, sizeof n}};
    size_t global[1] = {N};
    const char *how[2] = {"the quick build", "the tuned build"};
    for (int tuned = 0; tuned < 2; tuned++) {
        if (tuned) {
            /* not a timing: the tuner takes ~50 ms; a minute means it never will */
            for (int ms = 0; ms < 60000 && !__atomic_load_n(&p->h.cu.tuned_fn, __ATOMIC_ACQUIRE);
                 ms += 5)
                usleep(5000);
            CHECK(p->h.cu.tuned_fn != NULL && p->h.cu.tuned_fn != p->h.cu.fn);
            CHECK(p->h.cu.tuned_max >= 1);
        }
        reset_c(bc);
        CHECK(ofl_launch(p, 1, global, NULL, first, 4, NULL, &err) == 0);
        CHECK(ofl_launch(p, 1, global, NULL, second, 4, NULL, &err) == 0);
        CHECK(vadd_ok(bc, how[tuned]));
    }
out:
    ofl_free(ba);
    ofl_free(bc);
    ofl_program_release(p);
}

static void test_cuda(void) {
    ofl_device *dev = NULL, *other = NULL;
    for (size_t i = 0; i < ndevs; i++) {
        if (ofl_device_binary_kind(devs[i]) != OFL_BIN_PTX) continue;
        if (!dev)
            dev = devs[i];
        else if (!other)
            other = devs[i];
    }
    /* a CPU device's array is another device's too */
    for (size_t i = 0; i < ndevs && !other; i++)
        if (devs[i] != dev) other = devs[i];
    if (!dev) {
        printf("skip: CUDA launches (no CUDA device)\n");
        return;
    }
    target t = {dev, OFL_BIN_PTX, kernels_ptx, sizeof kernels_ptx};
    check_build_errors(&t, OFL_BIN_SPIR12);
    check_ptx_log(dev);
    check_vadd(&t, other);
    check_fill2d(&t);
    check_tuning(&t);
    check_fault(&t);
}

/* The vendor math libraries' search (ofl_cuda_math.c), without a GPU: where
 * this machine has no cuFFT, the answer names the wheel; a file of that name
 * under a search directory's nvidia/cufft/lib (a cu12 wheel's layout) or
 * nvidia/cu13/lib is then found, and its path told. The stand-in is a copy of
 * this process's libm: any shared object opens. */
static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    CHECK(in && out);
    char buf[65536];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(fwrite(buf, 1, n, out) == n);
    if (in) fclose(in);
    if (out) fclose(out);
}

static void test_math_search(void) {
    const char *why = NULL;
    if (ofl_math_available(OFL_CUFFT, &why)) {
        printf("math search: this machine has cuFFT (%s); skipped\n", ofl_math_path(OFL_CUFFT));
        return;
    }
    CHECK_HAS(why, "pip install nvidia-cufft-cu12");
    CHECK(ofl_math_path(OFL_CUFFT) == NULL);
    Dl_info info;
    CHECK(dladdr((void *)&cos, &info) && info.dli_fname);
    char dir[] = "/tmp/ofl-math-XXXXXX", sub[256], lib[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(sub, sizeof sub, "mkdir -p %s/site/nvidia/cufft/lib %s/other/nvidia/cu13/lib", dir,
             dir);
    CHECK(system(sub) == 0);
    /* a directory without it changes nothing */
    snprintf(sub, sizeof sub, "%s/other", dir);
    ofl_math_search(sub);
    CHECK(!ofl_math_available(OFL_CUFFT, NULL));
    snprintf(lib, sizeof lib, "%s/site/nvidia/cufft/lib/libcufft.so.12", dir);
    copy_file(info.dli_fname, lib);
    snprintf(sub, sizeof sub, "/nonexistent:%s/other:%s/site", dir, dir);
    ofl_math_search(sub);
    CHECK(ofl_math_available(OFL_CUFFT, NULL));
    CHECK_STR(ofl_math_path(OFL_CUFFT), lib);
    /* CUDA 13's wheels put every library in nvidia/cu13/lib */
    if (!ofl_math_available(OFL_CUSOLVER, NULL)) {
        snprintf(lib, sizeof lib, "%s/other/nvidia/cu13/lib/libcusolver.so.12", dir);
        copy_file(info.dli_fname, lib);
        ofl_math_search(sub);
        CHECK_STR(ofl_math_path(OFL_CUSOLVER), lib);
    }
    snprintf(sub, sizeof sub, "rm -rf %s", dir);
    CHECK(system(sub) == 0);
}

int main(void) {
    test_math_search();
    /* two PoCL devices, for the check across devices (must precede discovery) */
    setenv("POCL_DEVICES", "pthread pthread", 0);
    const char *why = NULL;
    devs = ofl_devices(&ndevs, &why);
    if (why && why[0]) printf("devices: %s\n", why);
    test_binary_kind();
    test_opencl();
    test_cuda();
    return unit_finish();
}
