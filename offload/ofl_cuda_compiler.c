/* ofl_cuda_compiler: each CUDA device's compiler threads (ofl_cuda_compiler.h).
 *
 * Why a thread of its own for loads: the driver compiles PTX markedly faster
 * on a thread that has compiled PTX before, and warming one thread does
 * nothing for another. On an H100 with driver 580 (fresh processes, the
 * driver's cache off), the JIT's 233-line black_scholes took a median 43 ms
 * as a thread's first compile and 37 ms after a warm-up on the same thread;
 * warmed on another thread, 51 ms. So the device starts this thread when it
 * opens and warms it at once, while the user is still typing, with a small
 * module of what costs the driver most in the JIT's PTX: the correctly
 * rounded division, reciprocal and square root, in float32 and float64.
 *
 * Why two builds: at the driver's optimisation level 0 the same load takes
 * ~25 ms instead of ~42, and that code runs fine for a first launch (the
 * bench's 2^16-element black_scholes: 13 us instead of 10) but not for long
 * (2^24: 373 us instead of 138). So a program is loaded at level 0 and its
 * full build follows on a second thread, the tuner, which launches take up
 * when it is done (~50 ms later). The tuner builds a library
 * (cuLibraryLoadData, CUDA 12.0+), not a module: a module load holds the
 * context for its whole compile, stalling the user's copies and launches
 * meanwhile (measured: a 64-byte read waited the 42 ms out), while a library
 * compiles outside any context and its function comes into the context in
 * 0.1 ms. (cuLink also compiles outside the context, but as relocatable code:
 * black_scholes then took 28 registers instead of 24 and ran 0.6% slower.)
 *
 * Builds hold the device's lock, so the loading thread serves one load at a
 * time. A build that comes while the warm-up still runs loads on its own
 * thread, as it would without this one: waiting could cost more than the
 * warm-up gains. At exit, a warm-up and a tuning still running are waited
 * for, and queued tunings dropped: the driver must not be compiling while
 * the process tears it down. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_cuda_compiler.h"

/* A program's full build, from the load until the tuner is done with it. */
typedef struct tuning {
    ofl_program *prog; /* not owned: ofl_cuda_forget comes before it is freed */
    struct tuning *next;
    char ptx[]; /* a copy: the caller's is gone by the time the tuner runs */
} tuning;

struct ofl_cuda_compiler {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool warm; /* the warm-up is over: loads come here */
    /* the load in hand, from ofl_cuda_load_ptx to the thread and back */
    bool asked, answered;
    CUcontext ctx;
    const char *ptx;
    bool quick;
    char *log;
    size_t loglen;
    CUmodule mod;
    CUresult rc;
    /* the tuner: full builds of programs loaded quickly, first come first built */
    bool tuner;              /* its thread runs: loads may be quick */
    bool closing;            /* the process exits: nothing more is tuned */
    tuning *queue;           /* owned; waiting, oldest first */
    ofl_program *in_hand;    /* the program the tuner builds now, or NULL */
    ofl_cuda_compiler *next; /* every device's, for the wait at exit */
};

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static ofl_cuda_compiler *all;

/* On the calling thread, in its current context; quick: at the driver's
 * lowest optimisation level. */
static CUresult load_here(CUmodule *mod, const char *ptx, bool quick, char *log, size_t loglen) {
    if (!ofl_cu.cuModuleLoadDataEx) return ofl_cu.cuModuleLoadData(mod, ptx);
    int opt[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                  CU_JIT_OPTIMIZATION_LEVEL};
    void *val[3] = {log, (void *)(uintptr_t)loglen, (void *)(uintptr_t)0};
    return ofl_cu.cuModuleLoadDataEx(mod, ptx, quick ? 3 : 2, opt, val);
}

static CUresult load_in(CUcontext ctx, CUmodule *mod, const char *ptx, bool quick, char *log,
                        size_t loglen) {
    CUresult rc = ofl_cu.cuCtxPushCurrent(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    rc = load_here(mod, ptx, quick, log, loglen);
    CUcontext popped;
    ofl_cu.cuCtxPopCurrent(&popped);
    return rc;
}

/* A kernel the size of a small JIT kernel's; its result is never used. */
static const char warm_ptx[] =
    ".version 7.0\n"
    ".target sm_%d\n"
    ".address_size 64\n"
    ".visible .entry ofl_warm_up(.param .u64 out, .param .f32 x, .param .f64 y)\n"
    "{\n"
    "\t.reg .f32 %%f<8>;\n"
    "\t.reg .f64 %%d<8>;\n"
    "\t.reg .b64 %%rd<3>;\n"
    "\tld.param.u64 %%rd1, [out];\n"
    "\tld.param.f32 %%f1, [x];\n"
    "\tld.param.f64 %%d1, [y];\n"
    "\tdiv.rn.f32 %%f2, %%f1, %%f1;\n"
    "\tsqrt.rn.f32 %%f3, %%f2;\n"
    "\trcp.rn.f32 %%f4, %%f3;\n"
    "\tdiv.rn.f64 %%d2, %%d1, %%d1;\n"
    "\tsqrt.rn.f64 %%d3, %%d2;\n"
    "\trcp.rn.f64 %%d4, %%d3;\n"
    "\tcvt.rn.f32.f64 %%f5, %%d4;\n"
    "\tadd.f32 %%f6, %%f4, %%f5;\n"
    "\tcvta.to.global.u64 %%rd2, %%rd1;\n"
    "\tst.global.f32 [%%rd2], %%f6;\n"
    "\tret;\n"
    "}\n";

/* The context may be reset meanwhile (a fault elsewhere, CuPy's say):
 * the gate keeps the reset out until the module is gone again. */
static void warm_up(ofl_device *dev) {
    /* PTX 7.0 names targets up to sm_80; the driver compiles for the device */
    int sm = dev->info.cuda_cc_major * 10 + dev->info.cuda_cc_minor;
    char ptx[sizeof warm_ptx];
    snprintf(ptx, sizeof ptx, warm_ptx, sm < 80 ? sm : 80);
    pthread_rwlock_rdlock(&dev->h.cu.gate);
    if (ofl_cu.cuCtxPushCurrent(dev->h.cu.ctx) == CUDA_SUCCESS) {
        CUmodule mod = NULL;
        char log[1024];
        if (load_here(&mod, ptx, false, log, sizeof log) == CUDA_SUCCESS)
            ofl_cu.cuModuleUnload(mod);
        CUcontext popped;
        ofl_cu.cuCtxPopCurrent(&popped);
    }
    pthread_rwlock_unlock(&dev->h.cu.gate);
}

/* close_compilers must run at exit before the driver's JIT library tears
 * itself down, or a full build still running on the tuner frees into freed
 * state ("free(): invalid pointer" after a cell's last launch). exit runs
 * its handlers in the reverse order of their registration, and the library
 * registers its destructors as it first compiles (the warm-up, a first full
 * build): registering once more after each puts close_compilers ahead of
 * them. It may run twice; the second finds everything closed. */
static pthread_once_t after_warm_up = PTHREAD_ONCE_INIT, after_full_build = PTHREAD_ONCE_INIT;
static void close_compilers(void);
static void close_at_exit_again(void) { atexit(close_compilers); }

static void *compiler_main(void *arg) {
    ofl_device *dev = arg;
    ofl_cuda_compiler *c = dev->h.cu.compiler;
    pthread_setname_np(pthread_self(), "ofl-ptx-jit"); /* for top, gdb and the tests */
    warm_up(dev);                                      /* a failure only leaves the thread cold */
    pthread_once(&after_warm_up, close_at_exit_again);
    pthread_mutex_lock(&c->mu);
    c->warm = true;
    pthread_cond_broadcast(&c->cv);
    for (;;) {
        while (!c->asked) pthread_cond_wait(&c->cv, &c->mu);
        c->asked = false;
        pthread_mutex_unlock(&c->mu);
        CUmodule mod = NULL;
        CUresult rc = load_in(c->ctx, &mod, c->ptx, c->quick, c->log, c->loglen);
        pthread_mutex_lock(&c->mu);
        c->mod = mod, c->rc = rc, c->answered = true;
        pthread_cond_broadcast(&c->cv);
    }
    return NULL;
}

/* The full build of t->prog. Any failure leaves the program as it is: its
 * quick build runs right, only slower. The gate keeps a context reset out
 * while the library's function is fetched into the context; after a reset
 * (the generation moved on) the program is stale and nothing is kept. */
static void tune(ofl_cuda_compiler *c, const tuning *t) {
    ofl_program *prog = t->prog;
    ofl_device *dev = prog->dev;
    CUlibrary lib = NULL;
    CUkernel kernel = NULL;
    CUfunction fn = NULL;
    int most = 0;
    if (ofl_cu.cuLibraryLoadData(&lib, t->ptx, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS)
        return;
    bool ok = ofl_cu.cuLibraryGetKernel(&kernel, lib, prog->name) == CUDA_SUCCESS;
    pthread_rwlock_rdlock(&dev->h.cu.gate);
    ok = ok && prog->generation == __atomic_load_n(&dev->generation, __ATOMIC_ACQUIRE) &&
         ofl_cu.cuCtxPushCurrent(dev->h.cu.ctx) == CUDA_SUCCESS;
    if (ok) {
        ok = ofl_cu.cuKernelGetFunction(&fn, kernel) == CUDA_SUCCESS &&
             ofl_cu.cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn) ==
                 CUDA_SUCCESS &&
             most > 0;
        CUcontext popped;
        ofl_cu.cuCtxPopCurrent(&popped);
    }
    pthread_rwlock_unlock(&dev->h.cu.gate);
    if (!ok) {
        ofl_cu.cuLibraryUnload(lib);
        return;
    }
    pthread_mutex_lock(&c->mu); /* ofl_cuda_forget waits for it there */
    prog->h.cu.tuned_lib = lib;
    prog->h.cu.tuned_max = (size_t)most;
    __atomic_store_n(&prog->h.cu.tuned_fn, fn, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->mu);
}

static void *tuner_main(void *arg) {
    ofl_cuda_compiler *c = arg;
    pthread_setname_np(pthread_self(), "ofl-ptx-tune");
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        tuning *t = c->queue;
        if (!t) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        c->queue = t->next;
        c->in_hand = t->prog;
        pthread_mutex_unlock(&c->mu);
        tune(c, t);
        free(t);
        pthread_once(&after_full_build, close_at_exit_again);
        pthread_mutex_lock(&c->mu);
        c->in_hand = NULL;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void close_compilers(void) {
    pthread_mutex_lock(&all_lock);
    for (ofl_cuda_compiler *c = all; c; c = c->next) {
        pthread_mutex_lock(&c->mu);
        c->closing = true;
        for (tuning *t = c->queue, *next; t; t = next) next = t->next, free(t);
        c->queue = NULL;
        pthread_cond_broadcast(&c->cv);
        while (!c->warm || c->in_hand) pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&all_lock);
}

/* A detached thread that takes no signals (SIGINT is the main thread's); it
 * lives as long as the device: to exit. */
static bool start_thread(void *(*main)(void *), void *arg) {
    sigset_t none, old;
    sigfillset(&none);
    pthread_sigmask(SIG_SETMASK, &none, &old);
    pthread_t tid;
    int rc = pthread_create(&tid, NULL, main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) pthread_detach(tid);
    return rc == 0;
}

void ofl_cuda_compiler_start(ofl_device *dev) {
    if (dev->h.cu.compiler || !ofl_cu.cuModuleUnload) return;
    ofl_cuda_compiler *c = calloc(1, sizeof *c);
    if (!c) return;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    dev->h.cu.compiler = c;
    if (!start_thread(compiler_main, dev)) {
        dev->h.cu.compiler = NULL; /* loads stay on their callers' threads */
        free(c);
        return;
    }
    c->tuner = ofl_cu.cuLibraryLoadData && ofl_cu.cuLibraryUnload && ofl_cu.cuLibraryGetKernel &&
               ofl_cu.cuKernelGetFunction && ofl_cu.cuModuleLoadDataEx &&
               ofl_cu.cuFuncGetAttribute && start_thread(tuner_main, c);
    pthread_mutex_lock(&all_lock);
    if (!all) atexit(close_compilers);
    c->next = all, all = c;
    pthread_mutex_unlock(&all_lock);
}

/* prog's full build, for the tuner; NULL when there is none (or no memory),
 * and then the load must be a full one. */
static tuning *new_tuning(ofl_cuda_compiler *c, ofl_program *prog, const char *ptx) {
    size_t len = strlen(ptx) + 1;
    tuning *t = c && c->tuner ? malloc(sizeof *t + len) : NULL;
    if (t) {
        t->prog = prog, t->next = NULL;
        memcpy(t->ptx, ptx, len);
    }
    return t;
}

static void queue_tuning(ofl_cuda_compiler *c, tuning *t) {
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        free(t);
    } else {
        tuning **end = &c->queue;
        while (*end) end = &(*end)->next;
        *end = t;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

/* On the warm thread if there is one, else here. */
static CUresult load(ofl_device *dev, CUmodule *mod, const char *ptx, bool quick, char *log,
                     size_t loglen) {
    ofl_cuda_compiler *c = dev->h.cu.compiler;
    if (c) {
        pthread_mutex_lock(&c->mu);
        if (c->warm) {
            c->ctx = dev->h.cu.ctx, c->ptx = ptx, c->quick = quick, c->log = log;
            c->loglen = loglen, c->asked = true, c->answered = false;
            pthread_cond_broadcast(&c->cv);
            while (!c->answered) pthread_cond_wait(&c->cv, &c->mu);
            *mod = c->mod;
            CUresult rc = c->rc;
            pthread_mutex_unlock(&c->mu);
            return rc;
        }
        pthread_mutex_unlock(&c->mu);
    }
    return load_here(mod, ptx, quick, log, loglen);
}

CUresult ofl_cuda_load_ptx(ofl_program *prog, CUmodule *mod, const char *ptx, char *log,
                           size_t loglen) {
    ofl_cuda_compiler *c = prog->dev->h.cu.compiler;
    tuning *t = new_tuning(c, prog, ptx);
    CUresult rc = load(prog->dev, mod, ptx, t != NULL, log, loglen);
    /* queued after the load: the two compiles would share the CPU */
    if (rc == CUDA_SUCCESS && t)
        queue_tuning(c, t);
    else
        free(t);
    return rc;
}

void ofl_cuda_forget(ofl_program *prog) {
    ofl_cuda_compiler *c = prog->dev->h.cu.compiler;
    if (!c || !c->tuner) return;
    pthread_mutex_lock(&c->mu);
    for (tuning **p = &c->queue; *p;) {
        tuning *t = *p;
        if (t->prog == prog)
            *p = t->next, free(t);
        else
            p = &t->next;
    }
    while (c->in_hand == prog) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}
