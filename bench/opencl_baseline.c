/* bench/opencl_baseline.c -- the peer of offload's kernels on an OpenCL device
 * (PoCL's CPU device here): the same kernels written in OpenCL C and built by
 * the platform itself (clCreateProgramWithSource + clBuildProgram), timed the
 * way offload times its own launches. bench_jit.py builds and runs it:
 *     cc -O2 -o /tmp/opencl_baseline bench/opencl_baseline.c -lOpenCL
 *
 *   opencl_baseline info
 *       the platform and device it would use, as JSON
 *   opencl_baseline run --kernel NAME --dtype float|double --dir DIR --n N
 *                       [--m M] [--dims D] [--reps R] [--warm W] [--local 0|1]
 *       NAME: vadd saxpy triad black_scholes l2_norm pairwise_distance.
 *       Reads its inputs from DIR (raw arrays of the dtype, C order, written by
 *       bench_jit.py: vadd a b; saxpy x y; triad b c; black_scholes price
 *       strike t; l2_norm a (N x D); pairwise_distance X1 (N x D), X2 (M x D)),
 *       then, timed with CLOCK_MONOTONIC as one span ("first_result_ms"):
 *       clCreateProgramWithSource, clBuildProgram, clCreateKernel, the
 *       arguments, one launch, clFinish and the blocking reads of the outputs
 *       -- from source text to the first result on the host, as offload's
 *       "definition to first result". build_ms is clBuildProgram alone. The
 *       outputs of that first launch go to DIR/<name>.out.bin for the caller
 *       to check. Then W untimed launches, clFinish, and R launches queued
 *       back to back, each with its own event, one clFinish; kernel_s lists
 *       each launch's CL_PROFILING_COMMAND_END - _START (offload's
 *       Event.elapsed is the same difference on its own queue).
 *       Scalars: saxpy a = 2, triad s = 3, black_scholes rate 0.1 and
 *       volatility 0.2, as bench_jit.py passes them to offload.
 *       Work-groups as offload picks them (offload/ofl_program.c pick_local):
 *       1-D 256 (or N if smaller), global rounded up, the kernel guards the
 *       tail; 2-D 16 x 16 (clamped to the extents). --local 0 passes NULL and
 *       lets the platform choose instead.
 *   opencl_baseline launch --nargs K --launches N [--warm W]
 *       host cost of a launch: a 1-work-item kernel with K (0, 1 or 3) float
 *       array arguments of one element; W untimed launches and clFinish, then
 *       N times (clSetKernelArg for each argument + clEnqueueNDRangeKernel, no
 *       event), then clFinish; per_launch_us = that wall time / N.
 *
 * The platform: the first with a device of type CPU, else the first device
 * found (OPENCL_BASELINE_PLATFORM=substring picks by platform name). PoCL
 * caches builds under POCL_CACHE_DIR (default ~/.cache/pocl): point it at an
 * empty directory for a cold build, at the same one again for a cached one.
 * Output: one JSON object on stdout. Exit status 0 fine, 2 no OpenCL device,
 * 1 a failed call (the JSON then has "error"). */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void json_str(const char *key, const char *v, int comma) {
    printf("\"%s\": \"", key);
    for (const char *p = v; p && *p; p++) {
        if (*p == '"' || *p == '\\') putchar('\\');
        if ((unsigned char)*p < 0x20) continue;
        putchar(*p);
    }
    printf("\"%s", comma ? ", " : "");
}

static int fail(const char *what, cl_int rc) {
    printf("{\"error\": \"%s failed with %d\"}\n", what, (int)rc);
    return 1;
}

#define CK(call, what)                                                                             \
    do {                                                                                           \
        cl_int rc_ = (call);                                                                       \
        if (rc_ != CL_SUCCESS) return fail(what, rc_);                                             \
    } while (0)

static cl_platform_id plat;
static cl_device_id dev;
static cl_context ctx;
static cl_command_queue queue;

static int pick_device(void) {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 2;
    cl_platform_id ps[16];
    if (np > 16) np = 16;
    clGetPlatformIDs(np, ps, NULL);
    const char *want = getenv("OPENCL_BASELINE_PLATFORM");
    for (int pass = 0; pass < 2; pass++) {
        for (cl_uint i = 0; i < np; i++) {
            char name[256] = "";
            clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
            if (want && *want && !strstr(name, want)) continue;
            cl_device_type t = pass == 0 ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_ALL;
            cl_uint nd = 0;
            if (clGetDeviceIDs(ps[i], t, 1, &dev, &nd) == CL_SUCCESS && nd) {
                plat = ps[i];
                return 0;
            }
        }
    }
    return 2;
}

static int open_device(void) {
    int st = pick_device();
    if (st) {
        printf("{\"error\": \"no OpenCL device\"}\n");
        return st;
    }
    cl_int rc;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateContext", rc);
    queue = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateCommandQueue", rc);
    return 0;
}

static void print_info_fields(void) {
    char s[512];
    s[0] = 0;
    clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof s, s, NULL);
    json_str("platform", s, 1);
    s[0] = 0;
    clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof s, s, NULL);
    json_str("platform_version", s, 1);
    s[0] = 0;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof s, s, NULL);
    json_str("device", s, 1);
    s[0] = 0;
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof s, s, NULL);
    json_str("driver_version", s, 1);
    cl_uint cu = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    printf("\"compute_units\": %u", cu);
}

/* ------------------------------------------------------------- kernels */

static const char *SRC_HEAD_FLOAT = "#define T float\n";
static const char *SRC_HEAD_DOUBLE =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define T double\n";

static const char *SRC_VADD =
    "__kernel void vadd(__global const T *a, __global const T *b, __global T *c, ulong n) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";
static const char *SRC_SAXPY =
    "__kernel void saxpy(T a, __global const T *x, __global T *y, ulong n) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";
static const char *SRC_TRIAD =
    "__kernel void triad(__global T *a, __global const T *b, __global const T *c, T s,\n"
    "                    ulong n) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n) a[i] = b[i] + s * c[i];\n"
    "}\n";
/* dpbench's black_scholes kernel (numba_dpex_k / numba_cuda versions) */
static const char *SRC_BLACK_SCHOLES =
    "__kernel void black_scholes(long nopt, __global const T *price,\n"
    "                            __global const T *strike, __global const T *t, T rate,\n"
    "                            T volatility, __global T *call, __global T *put) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= (size_t)nopt) return;\n"
    "    T mr = -rate;\n"
    "    T sig_sig_two = volatility * volatility * (T)2;\n"
    "    T P = price[i], S = strike[i], TT = t[i];\n"
    "    T a = log(P / S);\n"
    "    T b = TT * mr;\n"
    "    T z = TT * sig_sig_two;\n"
    "    T c = (T)0.25 * z;\n"
    "    T y = (T)1 / sqrt(z);\n"
    "    T w1 = (a - b + c) * y;\n"
    "    T w2 = (a - b - c) * y;\n"
    "    T d1 = (T)0.5 + (T)0.5 * erf(w1);\n"
    "    T d2 = (T)0.5 + (T)0.5 * erf(w2);\n"
    "    T Se = exp(b) * S;\n"
    "    T r = P * d1 - Se * d2;\n"
    "    call[i] = r;\n"
    "    put[i] = r - P + Se;\n"
    "}\n";
/* dpbench's l2_norm kernel: it accumulates in d[i] itself */
static const char *SRC_L2_NORM =
    "__kernel void l2_norm(__global const T *a, __global T *d, ulong n, ulong dims) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    d[i] = (T)0;\n"
    "    for (ulong k = 0; k < dims; k++) d[i] += a[i * dims + k] * a[i * dims + k];\n"
    "    d[i] = sqrt(d[i]);\n"
    "}\n";
/* dpbench's pairwise_distance; j (the column of D) is the fastest index */
static const char *SRC_PAIRWISE =
    "__kernel void pairwise_distance(__global const T *X1, __global const T *X2,\n"
    "                                __global T *D, ulong n, ulong m, ulong dims) {\n"
    "    size_t j = get_global_id(0), i = get_global_id(1);\n"
    "    if (i >= n || j >= m) return;\n"
    "    T d = (T)0;\n"
    "    for (ulong k = 0; k < dims; k++) {\n"
    "        T tmp = X1[i * dims + k] - X2[j * dims + k];\n"
    "        d += tmp * tmp;\n"
    "    }\n"
    "    D[i * m + j] = sqrt(d);\n"
    "}\n";

/* ------------------------------------------------------------- run mode */

#define MAXB 6
#define MAXA 10

typedef struct {
    const char *name; /* file stem in DIR */
    size_t count;     /* elements */
    int in, out;      /* read from DIR/<name>.bin, written to DIR/<name>.out.bin */
    cl_mem mem;
    void *host;
} buf_t;

typedef struct {
    int buf; /* >= 0: that buffer; else a scalar */
    size_t size;
    unsigned char value[8];
} arg_t;

static int read_file(const char *dir, const char *name, void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("{\"error\": \"cannot open %s\"}\n", path);
        return 1;
    }
    size_t got = fread(p, 1, bytes, f);
    fclose(f);
    if (got != bytes) {
        printf("{\"error\": \"%s: %zu of %zu bytes\"}\n", path, got, bytes);
        return 1;
    }
    return 0;
}

static int write_file(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.out.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) {
        if (f) fclose(f);
        printf("{\"error\": \"cannot write %s\"}\n", path);
        return 1;
    }
    fclose(f);
    return 0;
}

static void scalar_T(arg_t *a, int dbl, double v) {
    a->buf = -1;
    if (dbl) {
        a->size = sizeof(double);
        memcpy(a->value, &v, sizeof v);
    } else {
        float f = (float)v;
        a->size = sizeof(float);
        memcpy(a->value, &f, sizeof f);
    }
}

static void scalar_u64(arg_t *a, uint64_t v) {
    a->buf = -1;
    a->size = sizeof v;
    memcpy(a->value, &v, sizeof v);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int run(const char *kname, int dbl, const char *dir, size_t n, size_t m, size_t dims,
               int reps, int warm, int local_on) {
    size_t es = dbl ? sizeof(double) : sizeof(float);
    buf_t b[MAXB];
    arg_t a[MAXA];
    int nb = 0, na = 0, ndim = 1;
    const char *src = NULL;
    memset(b, 0, sizeof b);
    memset(a, 0, sizeof a);
#define BUF(nm, cnt, i_, o_) (b[nb] = (buf_t){nm, cnt, i_, o_, NULL, NULL}, nb++)
#define ABUF(i) (a[na].buf = (i), na++)
    if (!strcmp(kname, "vadd")) {
        src = SRC_VADD;
        ABUF(BUF("a", n, 1, 0));
        ABUF(BUF("b", n, 1, 0));
        ABUF(BUF("c", n, 0, 1));
        scalar_u64(&a[na++], n);
    } else if (!strcmp(kname, "saxpy")) {
        src = SRC_SAXPY;
        scalar_T(&a[na++], dbl, 2.0);
        ABUF(BUF("x", n, 1, 0));
        ABUF(BUF("y", n, 1, 1));
        scalar_u64(&a[na++], n);
    } else if (!strcmp(kname, "triad")) {
        src = SRC_TRIAD;
        ABUF(BUF("a", n, 0, 1));
        ABUF(BUF("b", n, 1, 0));
        ABUF(BUF("c", n, 1, 0));
        scalar_T(&a[na++], dbl, 3.0);
        scalar_u64(&a[na++], n);
    } else if (!strcmp(kname, "black_scholes")) {
        src = SRC_BLACK_SCHOLES;
        scalar_u64(&a[na++], n);
        ABUF(BUF("price", n, 1, 0));
        ABUF(BUF("strike", n, 1, 0));
        ABUF(BUF("t", n, 1, 0));
        scalar_T(&a[na++], dbl, 0.1);
        scalar_T(&a[na++], dbl, 0.2);
        ABUF(BUF("call", n, 0, 1));
        ABUF(BUF("put", n, 0, 1));
    } else if (!strcmp(kname, "l2_norm")) {
        src = SRC_L2_NORM;
        ABUF(BUF("a", n * dims, 1, 0));
        ABUF(BUF("d", n, 0, 1));
        scalar_u64(&a[na++], n);
        scalar_u64(&a[na++], dims);
    } else if (!strcmp(kname, "pairwise_distance")) {
        src = SRC_PAIRWISE;
        ndim = 2;
        ABUF(BUF("X1", n * dims, 1, 0));
        ABUF(BUF("X2", m * dims, 1, 0));
        ABUF(BUF("D", n * m, 0, 1));
        scalar_u64(&a[na++], n);
        scalar_u64(&a[na++], m);
        scalar_u64(&a[na++], dims);
    } else {
        printf("{\"error\": \"unknown kernel %s\"}\n", kname);
        return 1;
    }
#undef BUF
#undef ABUF
    int st = open_device();
    if (st) return st;
    cl_int rc;
    for (int i = 0; i < nb; i++) {
        size_t bytes = b[i].count * es;
        b[i].host = malloc(bytes ? bytes : 1);
        if (!b[i].host) return fail("malloc", -1);
        if (b[i].in) {
            if (read_file(dir, b[i].name, b[i].host, bytes)) return 1;
        } else {
            memset(b[i].host, 0, bytes);
        }
        b[i].mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes ? bytes : 1,
                                  b[i].host, &rc);
        if (rc != CL_SUCCESS) return fail("clCreateBuffer", rc);
    }
    CK(clFinish(queue), "clFinish");

    size_t g[2], l[2];
    if (ndim == 1) {
        l[0] = n < 256 ? (n ? n : 1) : 256;
        g[0] = (n + l[0] - 1) / l[0] * l[0];
    } else {
        l[0] = m < 16 ? (m ? m : 1) : 16; /* dimension 0: j over m */
        l[1] = n < 16 ? (n ? n : 1) : 16;
        g[0] = (m + l[0] - 1) / l[0] * l[0];
        g[1] = (n + l[1] - 1) / l[1] * l[1];
    }

    /* the timed span: source text to the first result on the host */
    double t0 = now_ms();
    const char *parts[2] = {dbl ? SRC_HEAD_DOUBLE : SRC_HEAD_FLOAT, src};
    cl_program prog = clCreateProgramWithSource(ctx, 2, parts, NULL, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateProgramWithSource", rc);
    double tb0 = now_ms();
    rc = clBuildProgram(prog, 1, &dev, "", NULL, NULL);
    double tb1 = now_ms();
    if (rc != CL_SUCCESS) {
        static char log[8192];
        log[0] = 0;
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("{");
        json_str("error", "clBuildProgram failed", 1);
        json_str("log", log, 0);
        printf("}\n");
        return 1;
    }
    cl_kernel k = clCreateKernel(prog, kname, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateKernel", rc);
    for (int i = 0; i < na; i++) {
        if (a[i].buf >= 0)
            rc = clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &b[a[i].buf].mem);
        else
            rc = clSetKernelArg(k, (cl_uint)i, a[i].size, a[i].value);
        if (rc != CL_SUCCESS) return fail("clSetKernelArg", rc);
    }
    cl_event e0;
    CK(clEnqueueNDRangeKernel(queue, k, (cl_uint)ndim, NULL, g, local_on ? l : NULL, 0, NULL, &e0),
       "clEnqueueNDRangeKernel");
    CK(clFinish(queue), "clFinish");
    for (int i = 0; i < nb; i++)
        if (b[i].out)
            CK(clEnqueueReadBuffer(queue, b[i].mem, CL_TRUE, 0, b[i].count * es, b[i].host, 0, NULL,
                                   NULL),
               "clEnqueueReadBuffer");
    double t1 = now_ms();
    cl_ulong s0 = 0, s1 = 0;
    clGetEventProfilingInfo(e0, CL_PROFILING_COMMAND_START, sizeof s0, &s0, NULL);
    clGetEventProfilingInfo(e0, CL_PROFILING_COMMAND_END, sizeof s1, &s1, NULL);
    clReleaseEvent(e0);
    for (int i = 0; i < nb; i++)
        if (b[i].out && write_file(dir, b[i].name, b[i].host, b[i].count * es)) return 1;

    /* steady state: warm-ups, then reps queued back to back, one event each */
    for (int i = 0; i < warm; i++)
        CK(clEnqueueNDRangeKernel(queue, k, (cl_uint)ndim, NULL, g, local_on ? l : NULL, 0, NULL,
                                  NULL),
           "clEnqueueNDRangeKernel");
    CK(clFinish(queue), "clFinish");
    cl_event *ev = calloc((size_t)(reps > 0 ? reps : 1), sizeof *ev);
    double *ks = calloc((size_t)(reps > 0 ? reps : 1), sizeof *ks);
    if (!ev || !ks) return fail("calloc", -1);
    for (int i = 0; i < reps; i++)
        CK(clEnqueueNDRangeKernel(queue, k, (cl_uint)ndim, NULL, g, local_on ? l : NULL, 0, NULL,
                                  &ev[i]),
           "clEnqueueNDRangeKernel");
    CK(clFinish(queue), "clFinish");
    for (int i = 0; i < reps; i++) {
        cl_ulong x0 = 0, x1 = 0;
        clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof x0, &x0, NULL);
        clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof x1, &x1, NULL);
        ks[i] = x1 >= x0 ? (double)(x1 - x0) * 1e-9 : 0.0;
        clReleaseEvent(ev[i]);
    }

    printf("{");
    print_info_fields();
    printf(", ");
    json_str("kernel", kname, 1);
    json_str("dtype", dbl ? "float64" : "float32", 1);
    printf("\"n\": %zu, \"m\": %zu, \"dims\": %zu, ", n, m, dims);
    printf("\"global\": [%zu, %zu], \"local\": [%zu, %zu], \"local_on\": %d, ", g[0],
           ndim > 1 ? g[1] : 1, l[0], ndim > 1 ? l[1] : 1, local_on);
    printf("\"create_ms\": %.4f, \"build_ms\": %.4f, \"first_result_ms\": %.4f, ", tb0 - t0,
           tb1 - tb0, t1 - t0);
    printf("\"first_kernel_s\": %.9g, \"kernel_s\": [", s1 >= s0 ? (double)(s1 - s0) * 1e-9 : 0.0);
    for (int i = 0; i < reps; i++) printf("%s%.9g", i ? ", " : "", ks[i]);
    qsort(ks, (size_t)reps, sizeof *ks, cmp_double);
    printf("], \"median_s\": %.9g}\n", reps > 0 ? ks[reps / 2] : 0.0);
    free(ev);
    free(ks);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    for (int i = 0; i < nb; i++) {
        clReleaseMemObject(b[i].mem);
        free(b[i].host);
    }
    return 0;
}

/* ------------------------------------------------------------- launch mode */

static int launch_cost(int nargs, long launches, long warm) {
    static const char *srcs[4] = {
        "__kernel void k(void) { }\n",
        "__kernel void k(__global float *a) {\n"
        "    size_t i = get_global_id(0); a[i] = a[i] + 1.0f; }\n",
        NULL,
        "__kernel void k(__global const float *a, __global const float *b, __global float *c) {\n"
        "    size_t i = get_global_id(0); c[i] = a[i] + b[i]; }\n",
    };
    if (nargs < 0 || nargs > 3 || !srcs[nargs]) {
        printf("{\"error\": \"--nargs must be 0, 1 or 3\"}\n");
        return 1;
    }
    int st = open_device();
    if (st) return st;
    cl_int rc;
    cl_mem bufs[3];
    float one = 1.0f;
    for (int i = 0; i < 3; i++) {
        bufs[i] =
            clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof one, &one, &rc);
        if (rc != CL_SUCCESS) return fail("clCreateBuffer", rc);
    }
    cl_program prog = clCreateProgramWithSource(ctx, 1, &srcs[nargs], NULL, &rc);
    if (rc != CL_SUCCESS) return fail("clCreateProgramWithSource", rc);
    CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL), "clBuildProgram");
    cl_kernel k = clCreateKernel(prog, "k", &rc);
    if (rc != CL_SUCCESS) return fail("clCreateKernel", rc);
    size_t g = 1, l = 1;
    for (long i = 0; i < warm; i++) {
        for (int j = 0; j < nargs; j++) clSetKernelArg(k, (cl_uint)j, sizeof(cl_mem), &bufs[j]);
        CK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, &l, 0, NULL, NULL),
           "clEnqueueNDRangeKernel");
    }
    CK(clFinish(queue), "clFinish");
    double t0 = now_ms();
    for (long i = 0; i < launches; i++) {
        for (int j = 0; j < nargs; j++) clSetKernelArg(k, (cl_uint)j, sizeof(cl_mem), &bufs[j]);
        CK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, &l, 0, NULL, NULL),
           "clEnqueueNDRangeKernel");
    }
    double t1 = now_ms();
    CK(clFinish(queue), "clFinish");
    double t2 = now_ms();
    printf("{");
    print_info_fields();
    printf(", \"nargs\": %d, \"launches\": %ld, \"enqueue_us\": %.4f, \"per_launch_us\": %.4f}\n",
           nargs, launches, (t1 - t0) * 1e3 / (double)launches, (t2 - t0) * 1e3 / (double)launches);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    for (int i = 0; i < 3; i++) clReleaseMemObject(bufs[i]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s info | run --kernel NAME ... | launch --nargs K ...\n", argv[0]);
        return 1;
    }
    const char *mode = argv[1], *kname = "vadd", *dtype = "float", *dir = ".";
    size_t n = 1024, m = 0, dims = 3;
    int reps = 20, warm = 2, nargs = 0, local_on = 1;
    long launches = 20000, lwarm = 1000;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--kernel"))
            kname = v;
        else if (!strcmp(k, "--dtype"))
            dtype = v;
        else if (!strcmp(k, "--dir"))
            dir = v;
        else if (!strcmp(k, "--n"))
            n = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--m"))
            m = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--dims"))
            dims = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--reps"))
            reps = atoi(v);
        else if (!strcmp(k, "--warm"))
            warm = atoi(v), lwarm = atol(v);
        else if (!strcmp(k, "--local"))
            local_on = atoi(v);
        else if (!strcmp(k, "--nargs"))
            nargs = atoi(v);
        else if (!strcmp(k, "--launches"))
            launches = atol(v);
        else {
            fprintf(stderr, "unknown option %s\n", k);
            return 1;
        }
    }
    if (!strcmp(mode, "info")) {
        int st = open_device();
        if (st) return st;
        printf("{");
        print_info_fields();
        printf("}\n");
        return 0;
    }
    if (!strcmp(mode, "run")) {
        int dbl = !strcmp(dtype, "double") || !strcmp(dtype, "float64");
        if (!m) m = n;
        return run(kname, dbl, dir, n, m, dims, reps, warm, local_on);
    }
    if (!strcmp(mode, "launch")) return launch_cost(nargs, launches, lwarm);
    fprintf(stderr, "unknown mode %s\n", mode);
    return 1;
}
