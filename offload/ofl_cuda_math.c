/* ofl_cuda_math: cuBLAS, cuSOLVER and cuFFT on CUDA devices (ofl_runtime.h
 * says what each entry does). The libraries are opened with dlopen at first
 * use -- the system's (the loader's path, then /usr/local/cuda), else the pip
 * wheels under the directories the module names -- and their entry points
 * looked up by name, so neither the build nor a machine without them needs
 * them. Their C types are declared here by ABI: handles are pointers (cuFFT's
 * an int), enums and status codes ints, complex scalars pairs of floats.
 *
 * Each device keeps its handles (and cuFFT plans) in h.cu.math, made in its
 * context at first use and made again after a context reset (the old ones
 * went with the old context; they are dropped, not destroyed). Every call
 * runs under ofl_cuda_call -- the device's lock, its context current -- and
 * queues on the device's stream; workspaces are stream-ordered scratch from
 * the device's pool, freed in stream order, so nothing here waits. Each
 * library call is a timed span like a launch (%timeit's device time).
 *
 * Called by: the module's array library (module/lib/linalg/mod_vendor.c). */
#include <dlfcn.h> /* with _GNU_SOURCE (the build's): dlinfo, the path of a soname opened */
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"

/* ---- the libraries ---- */

typedef struct {
    const char *names[4]; /* sonames, newest first */
    const char *subdir;   /* the cu12 wheel's nvidia/<subdir>/lib */
    const char *wheel;    /* what to install */
    void *h;              /* NULL until opened */
    bool tried;           /* since the last ofl_math_search */
    char path[4096];      /* the file opened */
} vendor_lib;

static vendor_lib libs[] = {
    [OFL_CUBLAS] = {{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
                    "cublas",
                    "nvidia-cublas-cu12",
                    NULL,
                    false,
                    ""},
    [OFL_CUSOLVER] = {{"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so", NULL},
                      "cusolver",
                      "nvidia-cusolver-cu12",
                      NULL,
                      false,
                      ""},
    [OFL_CUFFT] = {{"libcufft.so.12", "libcufft.so.11", "libcufft.so", NULL},
                   "cufft",
                   "nvidia-cufft-cu12",
                   NULL,
                   false,
                   ""},
};
static pthread_mutex_t libs_lock = PTHREAD_MUTEX_INITIALIZER;
static char *search_dirs; /* ofl_math_search's, owned */

void ofl_math_search(const char *dirs) {
    pthread_mutex_lock(&libs_lock);
    free(search_dirs);
    search_dirs = dirs ? strdup(dirs) : NULL;
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) libs[i].tried = libs[i].h != NULL;
    pthread_mutex_unlock(&libs_lock);
}

static void *open_in(const char *dir, const char *sub, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* With libs_lock. Each soname by the loader's search, in the toolkit's own
 * directory, then in each wheel directory (their RUNPATH, $ORIGIN, finds the
 * libraries they need beside them). */
static void *open_lib(vendor_lib *l) {
    for (int i = 0; i < 4 && l->names[i]; i++) {
        void *h = dlopen(l->names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) h = open_in("/usr/local/cuda", "lib64", l->names[i]);
        for (const char *d = search_dirs; !h && d && *d;) {
            size_t len = strcspn(d, ":");
            char dir[2048];
            snprintf(dir, sizeof dir, "%.*s", (int)(len < sizeof dir ? len : sizeof dir - 1), d);
            char sub[64];
            snprintf(sub, sizeof sub, "nvidia/%s/lib", l->subdir);
            h = open_in(dir, sub, l->names[i]);
            if (!h) h = open_in(dir, "nvidia/cu13/lib", l->names[i]);
            d += len + (d[len] == ':');
        }
        if (h) return h;
    }
    return NULL;
}

static void *lib_handle(ofl_math_lib which) {
    vendor_lib *l = &libs[which];
    pthread_mutex_lock(&libs_lock);
    if (!l->tried) {
        l->h = open_lib(l), l->tried = true;
        struct link_map *map = NULL;
        if (l->h && dlinfo(l->h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
            snprintf(l->path, sizeof l->path, "%s", map->l_name);
    }
    pthread_mutex_unlock(&libs_lock);
    return l->h;
}

const char *ofl_math_path(ofl_math_lib lib) { return lib_handle(lib) ? libs[lib].path : NULL; }

bool ofl_math_available(ofl_math_lib lib, const char **why) {
    static const char *const missing[] = {
        [OFL_CUBLAS] = "cuBLAS was not found (libcublas.so.13 or .12): install the CUDA "
                       "toolkit's libraries or `pip install nvidia-cublas-cu12`",
        [OFL_CUSOLVER] = "cuSOLVER was not found (libcusolver.so.12 or .11): install the CUDA "
                         "toolkit's libraries or `pip install nvidia-cusolver-cu12`",
        [OFL_CUFFT] = "cuFFT was not found (libcufft.so.12 or .11): install the CUDA toolkit's "
                      "libraries or `pip install nvidia-cufft-cu12`",
    };
    if (lib_handle(lib)) return true;
    if (why) *why = missing[lib];
    return false;
}

/* The entry point name in lib, or NULL with err filled. */
static void *entry(ofl_math_lib lib, const char *name, ofl_error *err) {
    const char *why = NULL;
    if (!ofl_math_available(lib, &why)) {
        ofl_fail(err, OFL_ERR_DEVICE, "%s", why);
        return NULL;
    }
    void *f = dlsym(libs[lib].h, name);
    if (!f)
        ofl_fail(err, OFL_ERR_DEVICE, "%s has no %s (too old? install %s)", libs[lib].names[0],
                 name, libs[lib].wheel);
    return f;
}

/* The S/D/C/Z letter of BLAS and LAPACK names. */
static char letter(ofl_math_type t) { return "SDCZ"[t]; }
static size_t elem_size(ofl_math_type t) {
    static const size_t size[] = {4, 8, 8, 16};
    return size[t];
}
static ofl_math_type real_of(ofl_math_type t) {
    return t == OFL_MATH_C64 ? OFL_MATH_F32 : t == OFL_MATH_C128 ? OFL_MATH_F64 : t;
}

/* ---- per-device state ---- */

#define FFT_PLANS 8

typedef struct {
    int plan; /* a cufftHandle; 0 with kind < 0: the slot is free */
    int kind, type, rank;
    int64_t n[3], batch;
    size_t work;
    unsigned long long used;
} fft_plan;

struct ofl_cuda_math {
    unsigned generation; /* the context the handles live in */
    void *blas, *solver;
    CUdeviceptr blas_work;
    fft_plan plans[FFT_PLANS];
    unsigned long long clock;
};

/* dev's state for its current context, made anew after a reset (the old
 * handles are gone with their context: dropped, not destroyed). */
static struct ofl_cuda_math *state(ofl_device *dev, ofl_error *err) {
    struct ofl_cuda_math *s = dev->h.cu.math;
    if (s && s->generation == dev->generation) return s;
    if (!s && !(s = dev->h.cu.math = malloc(sizeof *s))) {
        ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    for (int i = 0; i < FFT_PLANS; i++) s->plans[i].kind = -1;
    s->generation = dev->generation;
    return s;
}

/* The code a failure below filled err with (err may be NULL). */
static int code_of(const ofl_error *err) { return err ? (int)err->code : OFL_ERR_DEVICE; }

/* A library's status: ALLOC_FAILED is 3 in cuBLAS, 2 in cuSOLVER and cuFFT. */
static int lib_fail(ofl_error *err, ofl_device *dev, const char *call, int status) {
    int alloc_failed = !strncmp(call, "cublas", 6) ? 3 : 2;
    return ofl_fail(err, status == alloc_failed ? OFL_ERR_OUT_OF_MEMORY : OFL_ERR_DEVICE,
                    "%s (%s): %s failed with status %d", dev->info.filter, dev->info.name, call,
                    status);
}

static int check_current(ofl_device *dev, ofl_buffer *const *bufs, int n, ofl_error *err) {
    for (int i = 0; i < n; i++)
        if (bufs[i] && bufs[i]->generation != dev->generation)
            return ofl_stale_fail(err, dev, "this array lived", "its contents are lost");
    return 0;
}

static void *at(const ofl_matrix *m, int64_t i, ofl_math_type t) {
    if (!m->buf) return NULL; /* an empty array's, never read */
    return (void *)(uintptr_t)(m->buf->h.ptr + m->offset + (size_t)(i * m->stride) * elem_size(t));
}
static void *at_int(ofl_buffer *b, int64_t i, int64_t per) {
    return (void *)(uintptr_t)(b->h.ptr + (size_t)(i * per) * sizeof(int));
}

static int too_big(ofl_error *err, const char *what, int64_t v) {
    return ofl_fail(err, OFL_ERR_INVALID, "%s = %lld is beyond what the vendor library takes (%d)",
                    what, (long long)v, INT_MAX);
}
#define FITS(v) ((v) >= 0 && (v) <= INT_MAX)

/* ---- cuBLAS ---- */

#define BLAS_WORK (32u << 20) /* NVIDIA's advice for Hopper */

static void *blas(ofl_device *dev, struct ofl_cuda_math *s, ofl_error *err) {
    if (s->blas) return s->blas;
    int (*create)(void **) = entry(OFL_CUBLAS, "cublasCreate_v2", err);
    if (!create) return NULL;
    int rc = create(&s->blas);
    if (rc) {
        s->blas = NULL;
        lib_fail(err, dev, "cublasCreate", rc);
        return NULL;
    }
    int (*set_work)(void *, void *, size_t) = dlsym(libs[OFL_CUBLAS].h, "cublasSetWorkspace_v2");
    if (set_work && ofl_cuda_scratch(dev, BLAS_WORK, &s->blas_work, NULL) == 0 &&
        set_work(s->blas, (void *)(uintptr_t)s->blas_work, BLAS_WORK) != 0)
        s->blas_work = 0; /* cuBLAS keeps its own */
    return s->blas;
}

typedef struct {
    ofl_math_type t;
    bool ta, tb, tf32;
    int64_t m, n, k, batch;
    ofl_matrix a, b, c;
} gemm_args;

static int gemm_call(ofl_device *dev, void *p, ofl_error *err) {
    gemm_args *g = p;
    ofl_buffer *bufs[] = {g->a.buf, g->b.buf, g->c.buf};
    int st = check_current(dev, bufs, 3, err);
    struct ofl_cuda_math *s = st ? NULL : state(dev, err);
    void *h = s ? blas(dev, s, err) : NULL;
    if (!h) return st ? st : code_of(err);
    char name[48];
    snprintf(name, sizeof name, "cublas%cgemmStridedBatched", letter(g->t));
    int (*gemm)(void *, int, int, int, int, int, const void *, const void *, int, long long,
                const void *, int, long long, const void *, void *, int, long long, int) =
        entry(OFL_CUBLAS, name, err);
    int (*set_stream)(void *, CUstream) = entry(OFL_CUBLAS, "cublasSetStream_v2", err);
    int (*set_math)(void *, int) = entry(OFL_CUBLAS, "cublasSetMathMode", err);
    if (!gemm || !set_stream || !set_math) return code_of(err);
    static const double one[2] = {1, 0}, zero[2] = {0, 0};
    static const float onef[2] = {1, 0}, zerof[2] = {0, 0};
    bool single = g->t == OFL_MATH_F32 || g->t == OFL_MATH_C64;
    int rc = set_stream(h, dev->h.cu.stream);
    if (!rc) rc = set_math(h, g->tf32 && g->t == OFL_MATH_F32 ? 3 /* TF32_TENSOR_OP */ : 0);
    ofl_event *span = ofl_timing_span_begin(dev);
    if (!rc)
        rc = gemm(h, g->ta, g->tb, (int)g->m, (int)g->n, (int)g->k, single ? (void *)onef : one,
                  at(&g->a, 0, g->t), (int)g->a.ld, g->a.stride, at(&g->b, 0, g->t), (int)g->b.ld,
                  g->b.stride, single ? (void *)zerof : zero, at(&g->c, 0, g->t), (int)g->c.ld,
                  g->c.stride, (int)g->batch);
    ofl_timing_span_end(dev, span, rc == 0);
    return rc ? lib_fail(err, dev, name, rc) : 0;
}

int ofl_math_gemm(ofl_device *dev, ofl_math_type t, bool ta, bool tb, int64_t m, int64_t n,
                  int64_t k, ofl_matrix a, ofl_matrix b, ofl_matrix c, int64_t batch, bool tf32,
                  ofl_error *err) {
    if (!FITS(m) || !FITS(n) || !FITS(k) || !FITS(batch) || !FITS(a.ld) || !FITS(b.ld) ||
        !FITS(c.ld))
        return too_big(err, "a dimension", m > n ? (m > k ? m : k) : (n > k ? n : k));
    if (m == 0 || n == 0 || batch == 0) return 0;
    gemm_args g = {t, ta, tb, tf32, m, n, k, batch, a, b, c};
    return ofl_cuda_call(dev, gemm_call, &g, err);
}

/* ---- cuSOLVER ---- */

static void *solver(ofl_device *dev, struct ofl_cuda_math *s, ofl_error *err) {
    int (*set_stream)(void *, CUstream) = entry(OFL_CUSOLVER, "cusolverDnSetStream", err);
    if (!set_stream) return NULL;
    if (!s->solver) {
        int (*create)(void **) = entry(OFL_CUSOLVER, "cusolverDnCreate", err);
        if (!create) return NULL;
        int rc = create(&s->solver);
        if (rc) {
            s->solver = NULL;
            lib_fail(err, dev, "cusolverDnCreate", rc);
            return NULL;
        }
    }
    int rc = set_stream(s->solver, dev->h.cu.stream);
    if (rc) lib_fail(err, dev, "cusolverDnSetStream", rc);
    return rc ? NULL : s->solver;
}

/* One LAPACK routine over a stack: the arguments every routine here takes. */
typedef struct {
    const char *routine; /* "getrf", ... (complex names by letter: see lapack_name) */
    ofl_math_type t;
    int64_t m, n, k, batch;
    bool flag, flag2; /* routine's: trans / upper / vectors / uv, full */
    ofl_matrix a, b, c, d;
    ofl_buffer *piv, *info;
} lapack_args;

static void lapack_name(char *out, size_t len, const lapack_args *l, const char *suffix) {
    bool cx = l->t == OFL_MATH_C64 || l->t == OFL_MATH_C128;
    const char *r = l->routine;
    if (cx && !strcmp(r, "syevd")) r = "heevd";
    if (cx && !strcmp(r, "orgqr")) r = "ungqr";
    snprintf(out, len, "cusolverDn%c%s%s", letter(l->t), r, suffix);
}

/* The routine's workspace size in elements, by its _bufferSize. */
static int lapack_work(ofl_device *dev, void *h, const lapack_args *l, int *lwork, ofl_error *err) {
    char name[64];
    lapack_name(name, sizeof name, l, "_bufferSize");
    void *f = entry(OFL_CUSOLVER, name, err);
    if (!f) return code_of(err);
    int m = (int)l->m, n = (int)l->n, lda = (int)l->a.ld, rc;
    void *a = at(&l->a, 0, l->t);
    const char *r = l->routine;
    if (!strcmp(r, "getrf") || !strcmp(r, "geqrf"))
        rc = ((int (*)(void *, int, int, void *, int, int *))f)(h, m, n, a, lda, lwork);
    else if (!strcmp(r, "potrf"))
        rc = ((int (*)(void *, int, int, void *, int, int *))f)(h, l->flag, n, a, lda, lwork);
    else if (!strcmp(r, "syevd"))
        rc = ((int (*)(void *, int, int, int, void *, int, void *, int *))f)(
            h, l->flag, l->flag2, n, a, lda, at(&l->b, 0, real_of(l->t)), lwork);
    else if (!strcmp(r, "gesvd"))
        rc = ((int (*)(void *, int, int, int *))f)(h, m, n, lwork);
    else /* orgqr */
        rc = ((int (*)(void *, int, int, int, void *, int, void *, int *))f)(
            h, m, n, (int)l->k, a, lda, at(&l->b, 0, l->t), lwork);
    return rc ? lib_fail(err, dev, name, rc) : 0;
}

static int lapack_call(ofl_device *dev, void *p, ofl_error *err) {
    lapack_args *l = p;
    ofl_buffer *bufs[] = {l->a.buf, l->b.buf, l->c.buf, l->d.buf, l->piv, l->info};
    int st = check_current(dev, bufs, 6, err);
    struct ofl_cuda_math *s = st ? NULL : state(dev, err);
    void *h = s ? solver(dev, s, err) : NULL;
    if (!h) return st ? st : code_of(err);
    char name[64];
    lapack_name(name, sizeof name, l, "");
    void *f = entry(OFL_CUSOLVER, name, err);
    if (!f) return code_of(err);
    const char *r = l->routine;
    int lwork = 0;
    if (strcmp(r, "getrs") && (st = lapack_work(dev, h, l, &lwork, err))) return st;
    CUdeviceptr work = 0, rwork = 0;
    size_t es = elem_size(l->t);
    if ((st = ofl_cuda_scratch(dev, (size_t)lwork * es, &work, err))) return st;
    bool svd = !strcmp(r, "gesvd");
    int64_t mn = l->m < l->n ? l->m : l->n;
    if (svd && (st = ofl_cuda_scratch(dev, (size_t)mn * elem_size(real_of(l->t)), &rwork, err))) {
        ofl_cuda_scratch_free(dev, work);
        return st;
    }
    void *w = (void *)(uintptr_t)work;
    int m = (int)l->m, n = (int)l->n, lda = (int)l->a.ld, rc = 0;
    ofl_event *span = ofl_timing_span_begin(dev);
    for (int64_t i = 0; i < l->batch && !rc; i++) {
        void *a = at(&l->a, i, l->t);
        int *info = at_int(l->info, i, 1);
        if (!strcmp(r, "getrf"))
            rc = ((int (*)(void *, int, int, void *, int, void *, void *, int *))f)(
                h, m, n, a, lda, w, at_int(l->piv, i, n), info);
        else if (!strcmp(r, "getrs"))
            rc = ((int (*)(void *, int, int, int, void *, int, void *, void *, int, int *))f)(
                h, l->flag, n, (int)l->k, a, lda, at_int(l->piv, i, n), at(&l->b, i, l->t),
                (int)l->b.ld, info);
        else if (!strcmp(r, "potrf"))
            rc = ((int (*)(void *, int, int, void *, int, void *, int, int *))f)(
                h, l->flag, n, a, lda, w, lwork, info);
        else if (!strcmp(r, "syevd"))
            rc = ((int (*)(void *, int, int, int, void *, int, void *, void *, int, int *))f)(
                h, l->flag, l->flag2, n, a, lda, at(&l->b, i, real_of(l->t)), w, lwork, info);
        else if (svd) {
            signed char job = !l->flag ? 'N' : l->flag2 ? 'A' : 'S';
            rc = ((int (*)(void *, signed char, signed char, int, int, void *, int, void *, void *,
                           int, void *, int, void *, int, void *, int *))f)(
                h, job, job, m, n, a, lda, at(&l->b, i, real_of(l->t)),
                l->flag ? at(&l->c, i, l->t) : NULL, l->flag ? (int)l->c.ld : 1,
                l->flag ? at(&l->d, i, l->t) : NULL, l->flag ? (int)l->d.ld : 1, w, lwork,
                (void *)(uintptr_t)rwork, info);
        } else if (!strcmp(r, "geqrf"))
            rc = ((int (*)(void *, int, int, void *, int, void *, void *, int, int *))f)(
                h, m, n, a, lda, at(&l->b, i, l->t), w, lwork, info);
        else /* orgqr */
            rc = ((int (*)(void *, int, int, int, void *, int, void *, void *, int, int *))f)(
                h, m, n, (int)l->k, a, lda, at(&l->b, i, l->t), w, lwork, info);
    }
    ofl_timing_span_end(dev, span, rc == 0);
    ofl_cuda_scratch_free(dev, work);
    ofl_cuda_scratch_free(dev, rwork);
    return rc ? lib_fail(err, dev, name, rc) : 0;
}

static int lapack(lapack_args *l, ofl_device *dev, ofl_error *err) {
    if (!FITS(l->m) || !FITS(l->n) || !FITS(l->k) || !FITS(l->a.ld) || !FITS(l->b.ld))
        return too_big(err, "a dimension", l->m > l->n ? l->m : l->n);
    if (l->batch == 0 || l->n == 0 || l->m == 0) return 0;
    return ofl_cuda_call(dev, lapack_call, l, err);
}

static const ofl_matrix none;

int ofl_math_getrf(ofl_device *dev, ofl_math_type t, int64_t n, ofl_matrix a, ofl_buffer *piv,
                   ofl_buffer *info, int64_t batch, ofl_error *err) {
    lapack_args l = {"getrf", t, n, n, 0, batch, false, false, a, none, none, none, piv, info};
    return lapack(&l, dev, err);
}

int ofl_math_getrs(ofl_device *dev, ofl_math_type t, bool trans, int64_t n, int64_t nrhs,
                   ofl_matrix lu, ofl_buffer *piv, ofl_matrix b, ofl_buffer *info, int64_t batch,
                   ofl_error *err) {
    if (nrhs == 0) return 0;
    lapack_args l = {"getrs", t, n, n, nrhs, batch, trans, false, lu, b, none, none, piv, info};
    return lapack(&l, dev, err);
}

int ofl_math_potrf(ofl_device *dev, ofl_math_type t, bool upper, int64_t n, ofl_matrix a,
                   ofl_buffer *info, int64_t batch, ofl_error *err) {
    lapack_args l = {"potrf", t, n, n, 0, batch, upper, false, a, none, none, none, NULL, info};
    return lapack(&l, dev, err);
}

int ofl_math_syevd(ofl_device *dev, ofl_math_type t, bool vectors, bool upper, int64_t n,
                   ofl_matrix a, ofl_matrix w, ofl_buffer *info, int64_t batch, ofl_error *err) {
    lapack_args l = {"syevd", t, n, n, 0, batch, vectors, upper, a, w, none, none, NULL, info};
    return lapack(&l, dev, err);
}

int ofl_math_gesvd(ofl_device *dev, ofl_math_type t, bool uv, bool full, int64_t m, int64_t n,
                   ofl_matrix a, ofl_matrix s, ofl_matrix u, ofl_matrix vt, ofl_buffer *info,
                   int64_t batch, ofl_error *err) {
    if (m < n)
        return ofl_fail(err, OFL_ERR_INVALID, "cuSOLVER's gesvd takes m >= n (got %lld x %lld)",
                        (long long)m, (long long)n);
    lapack_args l = {"gesvd", t, m, n, 0, batch, uv, full, a, s, u, vt, NULL, info};
    return lapack(&l, dev, err);
}

int ofl_math_geqrf(ofl_device *dev, ofl_math_type t, int64_t m, int64_t n, ofl_matrix a,
                   ofl_matrix tau, ofl_buffer *info, int64_t batch, ofl_error *err) {
    lapack_args l = {"geqrf", t, m, n, 0, batch, false, false, a, tau, none, none, NULL, info};
    return lapack(&l, dev, err);
}

int ofl_math_orgqr(ofl_device *dev, ofl_math_type t, int64_t m, int64_t n, int64_t k, ofl_matrix a,
                   ofl_matrix tau, ofl_buffer *info, int64_t batch, ofl_error *err) {
    lapack_args l = {"orgqr", t, m, n, k, batch, false, false, a, tau, none, none, NULL, info};
    return lapack(&l, dev, err);
}

/* ---- cuFFT ---- */

typedef struct {
    ofl_fft_kind kind;
    ofl_math_type t;
    bool inverse;
    int rank;
    int64_t n[3], batch;
    ofl_buffer *in, *out;
    size_t in_offset, out_offset;
} fft_args;

/* cufftType: C2C 0x29, R2C 0x2a, C2R 0x2c; double precision's are 0x40 more */
static int fft_type(const fft_args *f) {
    static const int single[] = {[OFL_FFT_C2C] = 0x29, [OFL_FFT_R2C] = 0x2a, [OFL_FFT_C2R] = 0x2c};
    bool dbl = f->t == OFL_MATH_F64 || f->t == OFL_MATH_C128;
    return single[f->kind] + (dbl ? 0x40 : 0);
}

/* A cached plan for f, or a new one in the least recently used slot. */
static fft_plan *fft_plan_for(ofl_device *dev, struct ofl_cuda_math *s, const fft_args *f,
                              ofl_error *err) {
    int type = fft_type(f);
    fft_plan *lru = &s->plans[0];
    for (int i = 0; i < FFT_PLANS; i++) {
        fft_plan *p = &s->plans[i];
        if (p->kind == (int)f->kind && p->type == type && p->rank == f->rank &&
            p->batch == f->batch && !memcmp(p->n, f->n, sizeof p->n)) {
            p->used = ++s->clock;
            return p;
        }
        if (p->used < lru->used) lru = p;
    }
    int (*create)(int *) = entry(OFL_CUFFT, "cufftCreate", err);
    int (*destroy)(int) = entry(OFL_CUFFT, "cufftDestroy", err);
    int (*set_auto)(int, int) = entry(OFL_CUFFT, "cufftSetAutoAllocation", err);
    int (*make)(int, int, long long *, long long *, long long, long long, long long *, long long,
                long long, int, long long, size_t *) = entry(OFL_CUFFT, "cufftMakePlanMany64", err);
    if (!create || !destroy || !set_auto || !make) return NULL;
    if (lru->kind >= 0) destroy(lru->plan), lru->kind = -1;
    long long n[3];
    for (int i = 0; i < f->rank; i++) n[i] = f->n[i];
    int plan = 0;
    size_t work = 0;
    int rc = create(&plan);
    if (!rc) rc = set_auto(plan, 0); /* the work area comes from the pool at each run */
    if (!rc) rc = make(plan, f->rank, n, NULL, 1, 0, NULL, 1, 0, type, f->batch, &work);
    if (rc) {
        if (plan) destroy(plan);
        lib_fail(err, dev, "cufftMakePlanMany64", rc);
        return NULL;
    }
    *lru = (fft_plan){plan,     (int)f->kind, type,      f->rank, {f->n[0], f->n[1], f->n[2]},
                      f->batch, work,         ++s->clock};
    return lru;
}

static int fft_call(ofl_device *dev, void *p, ofl_error *err) {
    fft_args *f = p;
    ofl_buffer *bufs[] = {f->in, f->out};
    int st = check_current(dev, bufs, 2, err);
    struct ofl_cuda_math *s = st ? NULL : state(dev, err);
    fft_plan *plan = s ? fft_plan_for(dev, s, f, err) : NULL;
    if (!plan) return st ? st : code_of(err);
    bool dbl = f->t == OFL_MATH_F64 || f->t == OFL_MATH_C128;
    static const char *const names[2][3] = {{[OFL_FFT_C2C] = "cufftExecC2C",
                                             [OFL_FFT_R2C] = "cufftExecR2C",
                                             [OFL_FFT_C2R] = "cufftExecC2R"},
                                            {[OFL_FFT_C2C] = "cufftExecZ2Z",
                                             [OFL_FFT_R2C] = "cufftExecD2Z",
                                             [OFL_FFT_C2R] = "cufftExecZ2D"}};
    const char *name = names[dbl][f->kind];
    void *exec = entry(OFL_CUFFT, name, err);
    int (*set_stream)(int, CUstream) = entry(OFL_CUFFT, "cufftSetStream", err);
    int (*set_work)(int, void *) = entry(OFL_CUFFT, "cufftSetWorkArea", err);
    if (!exec || !set_stream || !set_work) return code_of(err);
    CUdeviceptr work = 0;
    if ((st = ofl_cuda_scratch(dev, plan->work, &work, err))) return st;
    void *in = (void *)(uintptr_t)(f->in->h.ptr + f->in_offset);
    void *out = (void *)(uintptr_t)(f->out->h.ptr + f->out_offset);
    int rc = set_stream(plan->plan, dev->h.cu.stream);
    if (!rc) rc = set_work(plan->plan, (void *)(uintptr_t)work);
    ofl_event *span = ofl_timing_span_begin(dev);
    if (!rc)
        rc = f->kind == OFL_FFT_C2C ? ((int (*)(int, void *, void *, int))exec)(plan->plan, in, out,
                                                                                f->inverse ? 1 : -1)
                                    : ((int (*)(int, void *, void *))exec)(plan->plan, in, out);
    ofl_timing_span_end(dev, span, rc == 0);
    ofl_cuda_scratch_free(dev, work);
    return rc ? lib_fail(err, dev, name, rc) : 0;
}

int ofl_math_fft(ofl_device *dev, ofl_fft_kind kind, ofl_math_type t, bool inverse, int rank,
                 const int64_t *n, int64_t batch, ofl_buffer *in, size_t in_offset, ofl_buffer *out,
                 size_t out_offset, ofl_error *err) {
    if (rank < 1 || rank > 3)
        return ofl_fail(err, OFL_ERR_INVALID, "cuFFT transforms 1 to 3 dimensions, not %d", rank);
    fft_args f = {kind, t, inverse, rank, {1, 1, 1}, batch, in, out, in_offset, out_offset};
    int64_t total = batch;
    for (int i = 0; i < rank; i++) f.n[i] = n[i], total *= n[i];
    if (total == 0) return 0;
    return ofl_cuda_call(dev, fft_call, &f, err);
}
