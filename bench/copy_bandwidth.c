/* bench/copy_bandwidth.c -- the floor for offload's host<->device copies:
 * what the CUDA driver API itself moves, from C, with nothing around it.
 *
 * Build and run (bench_transfers.py does this itself; no CUDA header or
 * library is needed at build time -- libcuda.so.1 is opened with dlopen, as
 * offload does):
 *     cc -O2 -o /tmp/copy_bandwidth bench/copy_bandwidth.c -ldl
 *     /tmp/copy_bandwidth [--min-mb 1] [--max-mb 1024] [--reps 20]
 *
 * For each size (1 MiB doubling to --max-mb), on device 0's primary context
 * (the one offload and CuPy use), with a fresh random-ish float32 pattern:
 *   h2d_pageable  cuMemcpyHtoD_v2 from malloc'd, already-touched host memory
 *   d2h_pageable  cuMemcpyDtoH_v2 into malloc'd, already-touched host memory
 *   h2d_async     cuMemcpyHtoDAsync_v2 on a created stream + cuStreamSynchronize
 *                 (offload's own call sequence), pageable memory
 *   d2h_async     cuMemcpyDtoHAsync_v2 likewise
 *   d2h_fresh     cuMemcpyDtoH_v2 into a buffer malloc'd just before the copy
 *                 (as asnumpy does with np.empty: first-touch page faults
 *                 happen inside the copy); freed after
 *   h2d_pinned    cuMemcpyHtoD_v2 from cuMemHostAlloc'd memory
 *   d2h_pinned    cuMemcpyDtoH_v2 into cuMemHostAlloc'd memory
 * Timing: cuCtxSynchronize, clock_gettime(CLOCK_MONOTONIC), one copy,
 * synchronize, clock_gettime; after 2 warm-up copies, the median of reps
 * (fewer for big sizes: at least 3, at most reps, about 2 GiB moved).
 * Each size is checked once: device -> host back equals what was sent.
 * GB/s are 10^9 bytes per second. Output: one header line starting "#",
 * then one whitespace-separated line per size (machine-readable):
 *     bytes h2d_pageable d2h_pageable h2d_async d2h_async d2h_fresh h2d_pinned d2h_pinned
 * Exit status: 0 fine, 2 no driver or device (prints why), 1 a failed call. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The few driver types used; ABI-stable (the _v2 entry points take a 64-bit
 * CUdeviceptr). Declared here so this builds where cuda.h is absent. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;

static struct {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuGetErrorName)(CUresult, const char **);
} cu;

static const struct {
    const char *name;
    size_t off;
} syms[] = {
#define S(f, n)                                                                                    \
    { n, offsetof(__typeof__(cu), f) }
    S(cuInit, "cuInit"),
    S(cuDeviceGet, "cuDeviceGet"),
    S(cuDeviceGetName, "cuDeviceGetName"),
    S(cuDriverGetVersion, "cuDriverGetVersion"),
    S(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    S(cuCtxSetCurrent, "cuCtxSetCurrent"),
    S(cuCtxSynchronize, "cuCtxSynchronize"),
    S(cuStreamCreate, "cuStreamCreate"),
    S(cuStreamSynchronize, "cuStreamSynchronize"),
    S(cuMemAlloc, "cuMemAlloc_v2"),
    S(cuMemFree, "cuMemFree_v2"),
    S(cuMemHostAlloc, "cuMemHostAlloc"),
    S(cuMemFreeHost, "cuMemFreeHost"),
    S(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    S(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    S(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    S(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    S(cuGetErrorName, "cuGetErrorName"),
#undef S
};

static void check(CUresult rc, const char *what) {
    if (rc == 0) return;
    const char *name = "?";
    if (cu.cuGetErrorName) cu.cuGetErrorName(rc, &name);
    fprintf(stderr, "copy_bandwidth: %s failed: %s (%d)\n", what, name, rc);
    exit(1);
}
#define CK(call) check((call), #call)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { H2D_PAGE, D2H_PAGE, H2D_ASYNC, D2H_ASYNC, D2H_FRESH, H2D_PIN, D2H_PIN, NKIND };

/* Seconds for one copy of kind k; everything synchronised before and after. */
static double one(int k, CUdeviceptr d, void *page, void *pin, size_t n, CUstream s) {
    CK(cu.cuCtxSynchronize());
    void *fresh = NULL;
    double t0 = now();
    switch (k) {
    case H2D_PAGE: CK(cu.cuMemcpyHtoD(d, page, n)); break;
    case D2H_PAGE: CK(cu.cuMemcpyDtoH(page, d, n)); break;
    case H2D_ASYNC:
        CK(cu.cuMemcpyHtoDAsync(d, page, n, s));
        CK(cu.cuStreamSynchronize(s));
        break;
    case D2H_ASYNC:
        CK(cu.cuMemcpyDtoHAsync(page, d, n, s));
        CK(cu.cuStreamSynchronize(s));
        break;
    case D2H_FRESH:
        t0 = 0; /* the malloc is outside the timed region, its page faults are not */
        fresh = malloc(n);
        if (!fresh) {
            fprintf(stderr, "copy_bandwidth: out of host memory\n");
            exit(1);
        }
        t0 = now();
        CK(cu.cuMemcpyDtoH(fresh, d, n));
        break;
    case H2D_PIN: CK(cu.cuMemcpyHtoD(d, pin, n)); break;
    case D2H_PIN: CK(cu.cuMemcpyDtoH(pin, d, n)); break;
    }
    CK(cu.cuCtxSynchronize());
    double t = now() - t0;
    free(fresh);
    return t;
}

int main(int argc, char **argv) {
    long min_mb = 1, max_mb = 1024, reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--min-mb") && i + 1 < argc)
            min_mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--max-mb") && i + 1 < argc)
            max_mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--min-mb N] [--max-mb N] [--reps N]\n", argv[0]);
            return 1;
        }
    }
    if (min_mb < 1 || max_mb < min_mb || reps < 3) {
        fprintf(stderr, "copy_bandwidth: need 1 <= min-mb <= max-mb and reps >= 3\n");
        return 1;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("# no CUDA driver: %s\n", dlerror());
        return 2;
    }
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        void *f = dlsym(lib, syms[i].name);
        if (!f) {
            printf("# no CUDA driver: libcuda.so.1 lacks %s\n", syms[i].name);
            return 2;
        }
        memcpy((char *)&cu + syms[i].off, &f, sizeof f);
    }
    if (cu.cuInit(0) != 0) {
        printf("# no CUDA device: cuInit failed\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    char name[256] = "";
    int driver = 0;
    CK(cu.cuDeviceGet(&dev, 0));
    CK(cu.cuDeviceGetName(name, sizeof name, dev));
    CK(cu.cuDriverGetVersion(&driver));
    CK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cu.cuCtxSetCurrent(ctx));
    CK(cu.cuStreamCreate(&stream, 0));
    printf("# device 0: %s, CUDA driver API %d.%d; GB/s = 1e9 B/s; median of reps after 2 "
           "warm-ups\n",
           name, driver / 1000, driver % 1000 / 10);
    printf("# bytes h2d_pageable d2h_pageable h2d_async d2h_async d2h_fresh h2d_pinned "
           "d2h_pinned\n");
    fflush(stdout);

    size_t maxn = (size_t)max_mb << 20;
    float *page = malloc(maxn), *back = malloc(maxn);
    void *pin = NULL;
    CUdeviceptr d = 0;
    if (!page || !back) {
        fprintf(stderr, "copy_bandwidth: out of host memory for %ld MiB\n", max_mb);
        return 1;
    }
    CK(cu.cuMemHostAlloc(&pin, maxn, 0));
    CK(cu.cuMemAlloc(&d, maxn));
    /* xorshift floats in [0, 1): not zeros, and every page touched */
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < maxn / sizeof(float); i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        page[i] = (float)(x >> 8) * (1.0f / 16777216.0f);
    }
    memcpy(pin, page, maxn);
    memset(back, 0, maxn);

    double *t = malloc((size_t)reps * sizeof *t);
    for (size_t n = (size_t)min_mb << 20; n <= maxn; n *= 2) {
        /* round trip check, pageable and pinned */
        CK(cu.cuMemcpyHtoD(d, page, n));
        CK(cu.cuMemcpyDtoH(back, d, n));
        if (memcmp(back, page, n) != 0) {
            fprintf(stderr, "copy_bandwidth: round trip of %zu bytes differs\n", n);
            return 1;
        }
        long r = (long)((2048.0 * (1 << 20)) / (double)n);
        r = r < 3 ? 3 : r > reps ? reps : r;
        printf("%zu", n);
        for (int k = 0; k < NKIND; k++) {
            for (int w = 0; w < 2; w++) one(k, d, page, pin, n, stream);
            for (long i = 0; i < r; i++) t[i] = one(k, d, page, pin, n, stream);
            printf(" %.3f", (double)n / median(t, (int)r) / 1e9);
        }
        printf("\n");
        fflush(stdout);
        /* the last kind wrote pinned memory from the device; the pinned copy
         * still holds the pattern (it was only read from and written back) */
        if (memcmp(pin, page, n) != 0) {
            fprintf(stderr, "copy_bandwidth: pinned round trip of %zu bytes differs\n", n);
            return 1;
        }
    }
    free(t);
    CK(cu.cuMemFree(d));
    CK(cu.cuMemFreeHost(pin));
    free(page);
    free(back);
    return 0;
}
