/* ofl_cuda_compiler: each CUDA device's compiler thread (ofl_cuda_compiler.h).
 *
 * Why a thread of its own: the driver compiles PTX markedly faster on a thread
 * that has compiled PTX before, and warming one thread does nothing for
 * another. On an H100 with driver 580 (fresh processes, the driver's cache
 * off), the JIT's 233-line black_scholes took a median 43 ms as a thread's
 * first compile and 37 ms after a warm-up on the same thread; warmed on
 * another thread, 51 ms. So the device starts this thread when it opens and
 * warms it at once, while the user is still typing, with a small module of
 * what costs the driver most in the JIT's PTX: the correctly rounded
 * division, reciprocal and square root, in float32 and float64. In the
 * bench's cold compile (bench/bench_jit.py) black_scholes' load went from a
 * median 53 ms (36-54) to 43 ms (31-48).
 *
 * Builds hold the device's lock, so the thread serves one load at a time. A
 * build that comes while the warm-up still runs loads on its own thread, as
 * it would without this one: waiting could cost more than the warm-up gains.
 * At exit, a warm-up still running is waited for: the driver must not be
 * compiling while the process tears it down. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ofl_cuda_compiler.h"

struct ofl_cuda_compiler {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool warm; /* the warm-up is over: loads come here */
    /* the load in hand, from ofl_cuda_load_ptx to the thread and back */
    bool asked, answered;
    CUcontext ctx;
    const char *ptx;
    char *log;
    size_t loglen;
    CUmodule mod;
    CUresult rc;
    ofl_cuda_compiler *next; /* every device's, for the wait at exit */
};

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static ofl_cuda_compiler *all;

/* On the calling thread, in its current context. */
static CUresult load_here(CUmodule *mod, const char *ptx, char *log, size_t loglen) {
    if (!ofl_cu.cuModuleLoadDataEx) return ofl_cu.cuModuleLoadData(mod, ptx);
    int opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)loglen};
    return ofl_cu.cuModuleLoadDataEx(mod, ptx, 2, opt, val);
}

static CUresult load_in(CUcontext ctx, CUmodule *mod, const char *ptx, char *log,
                        size_t loglen) {
    CUresult rc = ofl_cu.cuCtxPushCurrent(ctx);
    if (rc != CUDA_SUCCESS) return rc;
    rc = load_here(mod, ptx, log, loglen);
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
        if (load_here(&mod, ptx, log, sizeof log) == CUDA_SUCCESS) ofl_cu.cuModuleUnload(mod);
        CUcontext popped;
        ofl_cu.cuCtxPopCurrent(&popped);
    }
    pthread_rwlock_unlock(&dev->h.cu.gate);
}

static void *compiler_main(void *arg) {
    ofl_device *dev = arg;
    ofl_cuda_compiler *c = dev->h.cu.compiler;
    pthread_setname_np(pthread_self(), "ofl-ptx-jit"); /* for top, gdb and the tests */
    warm_up(dev); /* a failure only leaves the thread cold */
    pthread_mutex_lock(&c->mu);
    c->warm = true;
    pthread_cond_broadcast(&c->cv);
    for (;;) {
        while (!c->asked) pthread_cond_wait(&c->cv, &c->mu);
        c->asked = false;
        pthread_mutex_unlock(&c->mu);
        CUmodule mod = NULL;
        CUresult rc = load_in(c->ctx, &mod, c->ptx, c->log, c->loglen);
        pthread_mutex_lock(&c->mu);
        c->mod = mod, c->rc = rc, c->answered = true;
        pthread_cond_broadcast(&c->cv);
    }
    return NULL;
}

static void wait_for_warm_ups(void) {
    pthread_mutex_lock(&all_lock);
    for (ofl_cuda_compiler *c = all; c; c = c->next) {
        pthread_mutex_lock(&c->mu);
        while (!c->warm) pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&all_lock);
}

void ofl_cuda_compiler_start(ofl_device *dev) {
    if (dev->h.cu.compiler || !ofl_cu.cuModuleUnload) return;
    ofl_cuda_compiler *c = calloc(1, sizeof *c);
    if (!c) return;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    dev->h.cu.compiler = c;
    /* the thread takes no signals: SIGINT is the main thread's */
    sigset_t none, old;
    sigfillset(&none);
    pthread_sigmask(SIG_SETMASK, &none, &old);
    pthread_t tid;
    int rc = pthread_create(&tid, NULL, compiler_main, dev);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        dev->h.cu.compiler = NULL; /* loads stay on their callers' threads */
        free(c);
        return;
    }
    pthread_detach(tid); /* it lives as long as the device: to exit */
    pthread_mutex_lock(&all_lock);
    if (!all) atexit(wait_for_warm_ups);
    c->next = all, all = c;
    pthread_mutex_unlock(&all_lock);
}

CUresult ofl_cuda_load_ptx(ofl_device *dev, CUmodule *mod, const char *ptx, char *log,
                           size_t loglen) {
    ofl_cuda_compiler *c = dev->h.cu.compiler;
    if (c) {
        pthread_mutex_lock(&c->mu);
        if (c->warm) {
            c->ctx = dev->h.cu.ctx, c->ptx = ptx, c->log = log, c->loglen = loglen;
            c->asked = true, c->answered = false;
            pthread_cond_broadcast(&c->cv);
            while (!c->answered) pthread_cond_wait(&c->cv, &c->mu);
            *mod = c->mod;
            CUresult rc = c->rc;
            pthread_mutex_unlock(&c->mu);
            return rc;
        }
        pthread_mutex_unlock(&c->mu);
    }
    return load_here(mod, ptx, log, loglen);
}
