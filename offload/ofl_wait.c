/* ofl_wait: waits that an interrupt can end, and the cancellation of queued
 * work (ofl_runtime.h, "interrupts and cancellation", says what callers see).
 *
 * Drivers' own waits (clFinish, clWaitForEvents, cuStreamSynchronize) cannot
 * be interrupted, so a wait here polls the device instead: sleeps that grow
 * from 5 us to 200 us between polls (a short wait costs little latency, a
 * long one little CPU), and the interrupt check every 20 ms (it takes the
 * GIL, which a short wait should never need). A runtime that computes on
 * its waiting threads gets a helper thread to block in its wait instead
 * ("lending", below). */
#include <sched.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ofl_backend.h"

#define CHECK_EVERY 0.020 /* seconds between interrupt checks */
#define GRACE 1.0         /* seconds that cancelled work has to end before the wait returns */
/* A wait first polls with nothing but yields between polls, for SPIN
 * seconds: Linux rounds a sleep up by the thread's timer slack (50 us), which
 * made every short launch + wait on a CPU device cost 80-140 us. Then it
 * naps, longer each time. */
#define SPIN 200e-6
#define NAP_FIRST 5000L /* ns */
#define NAP_MOST 200000L
/* A device out of process (a GPU) runs while this thread sleeps, so a nap
 * costs nothing but the wait's overshoot: there a nap is at most this part
 * of the time waited so far, and the thread's timer slack 1 us. (Doubling
 * naps had an H100's take of 2^26 elements, which reads a flag back, end
 * 0.3 ms after its 2.25 ms of device work, and a sort's one read back as
 * late; with 1/32, a 2.5 ms wait still ended about 40 us late on average,
 * while the device idled. A poll costs about a microsecond.) On a CPU device
 * the naps double: every wake-up takes the cores the kernel runs on. */
#define NAP_PART 128

static ofl_interrupt_fn interrupt_check; /* set once, at module init */
static volatile sig_atomic_t interrupt_requested;

void ofl_request_interrupt(void) { interrupt_requested = 1; }

bool ofl_take_interrupt(void) {
    /* cleared only when set: a request that lands between a read of 0 and a
     * store of 0 would be lost, and waits call this on every poll */
    if (!interrupt_requested) return false;
    interrupt_requested = 0;
    return true;
}

/* What the interrupt check says (it takes the GIL); false where none is set. */
static bool check_says_interrupted(void) {
    ofl_interrupt_fn fn = __atomic_load_n(&interrupt_check, __ATOMIC_ACQUIRE);
    return fn && fn();
}

bool ofl_interrupted(void) { return ofl_take_interrupt() || check_says_interrupted(); }

void ofl_set_interrupt_check(ofl_interrupt_fn fn) {
    __atomic_store_n(&interrupt_check, fn, __ATOMIC_RELEASE);
}

bool ofl_device_in_process(const ofl_device *dev) {
    return dev && dev->info.backend == OFL_OPENCL && dev->info.type == OFL_CPU;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- lending a thread to the runtime (devices that say lend_waits) ----
 * Intel's CPU runtime runs a kernel on TBB's workers and on the thread that
 * waits in its blocking calls: the arena keeps that thread's slot. A wait
 * here polls instead, to stay interruptible, so the slot stayed empty and on
 * two cores a kernel ran on one (y[i] = x[i] * 4 over 2^22 float32: 1.2 ms;
 * 0.62-0.71 ms when the waiter blocked in clFinish). So a wait that
 * outlasts LEND_AFTER asks the device's helper thread for a ticket: the
 * helper blocks in ops->lend (clFinish) and serves every ticket asked before
 * that call once it returns. The wait sleeps on the helper's condition from
 * then on, waking for its interrupt checks: a wait that went on polling took
 * its turns on the cores the helper and the runtime's workers compute on (on
 * two cores the scheduler left the helper and the worker sharing one while
 * the poller spun on the other: a max of 2^22 float32 took 0.30-0.41 ms in
 * that state, 0.15-0.21 ms asleep). And the helper runs on the CPU of the
 * wait that asked last, which that wait leaves free: woken where the
 * scheduler saw room, it often joined the runtime's worker on one core (with
 * NumPy calls between maxes of 2^22: 0.24-0.36 ms, 0.17-0.20 bound). */
#define LEND_AFTER 50e-6

typedef struct ofl_lender {
    pthread_mutex_t m;
    pthread_cond_t asked_c, served_c; /* served_c on CLOCK_MONOTONIC */
    unsigned long asked, served;
    int cpu, pinned; /* the last asker's CPU; the helper's (-1: unknown, unbound) */
    bool none;       /* the thread would not start: waits poll alone, as before */
    ofl_device *dev;
} ofl_lender;

static void *lender_main(void *arg) {
    ofl_lender *l = arg;
    pthread_mutex_lock(&l->m);
    for (;;) {
        while (l->served == l->asked) pthread_cond_wait(&l->asked_c, &l->m);
        unsigned long upto = l->asked;
        int cpu = l->cpu;
        pthread_mutex_unlock(&l->m);
#ifdef __linux__
        if (cpu >= 0 && cpu != l->pinned) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof one, &one) == 0) l->pinned = cpu;
        }
#endif
        l->dev->ops->lend(l->dev);
        pthread_mutex_lock(&l->m);
        l->served = upto;
        pthread_cond_broadcast(&l->served_c);
    }
    return NULL;
}

/* dev's helper, started at the first call (signals blocked in it: they are
 * for the waiting threads); NULL without memory. */
static ofl_lender *lender_of(ofl_device *dev) {
    static pthread_mutex_t starting = PTHREAD_MUTEX_INITIALIZER;
    ofl_lender *l = __atomic_load_n(&dev->lender, __ATOMIC_ACQUIRE);
    if (l) return l;
    pthread_mutex_lock(&starting);
    if (!(l = dev->lender) && (l = calloc(1, sizeof *l))) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_mutex_init(&l->m, NULL);
        pthread_cond_init(&l->asked_c, NULL);
        pthread_cond_init(&l->served_c, &ca);
        pthread_condattr_destroy(&ca);
        l->dev = dev;
        l->cpu = l->pinned = -1;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t t;
        pthread_attr_t ta;
        pthread_attr_init(&ta);
        pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
        l->none = pthread_create(&t, &ta, lender_main, l) != 0;
        pthread_attr_destroy(&ta);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        __atomic_store_n(&dev->lender, l, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&starting);
    return l;
}

/* A ticket, served once what was queued before this call has run; 0: no
 * helper. */
static unsigned long lend_ask(ofl_device *dev) {
    ofl_lender *l = lender_of(dev);
    if (!l || l->none) return 0;
    pthread_mutex_lock(&l->m);
    unsigned long ticket = ++l->asked;
#ifdef __linux__
    l->cpu = sched_getcpu();
#endif
    pthread_cond_signal(&l->asked_c);
    pthread_mutex_unlock(&l->m);
    return ticket;
}

/* Sleeps until ticket is served or the clock of now() reads until; whether
 * it was served. */
static bool lend_wait(ofl_device *dev, unsigned long ticket, double until) {
    ofl_lender *l = dev->lender;
    double whole = (double)(time_t)until;
    struct timespec deadline = {(time_t)until, (long)((until - whole) * 1e9)};
    pthread_mutex_lock(&l->m);
    while (l->served < ticket && pthread_cond_timedwait(&l->served_c, &l->m, &deadline) == 0) {
    }
    bool served = l->served >= ticket;
    pthread_mutex_unlock(&l->m);
    return served;
}

typedef enum { DONE, INTERRUPTED, TIMED_OUT } wait_end;

/* Polls ev (NULL: dev's queue, lock held) until it is done, the check fires
 * (when check), or budget seconds pass (budget < 0: no limit). */
static int poll_until(ofl_device *dev, ofl_event *ev, bool check, double budget, wait_end *end,
                      ofl_error *err) {
    double start = now(), next_check = start + CHECK_EVERY;
    long nap = NAP_FIRST;
    bool remote = !ofl_device_in_process(dev);
    unsigned long ticket = 0; /* the helper's, while it lends a thread */
    for (;;) {
        bool done = false;
        int rc = dev->ops->poll(dev, ev, &done, err);
        if (rc) return rc;
        if (done) return *end = DONE, 0;
        double t = now();
        if (budget >= 0 && t - start >= budget) return *end = TIMED_OUT, 0;
        if (check && ofl_take_interrupt()) return *end = INTERRUPTED, 0;
        if (check && t >= next_check) {
            /* The check takes the GIL, and a thread holding the GIL may be
             * waiting for this device's lock (to launch): the lock is let go
             * meanwhile. Work queued then is waited for too. */
            if (!ev) pthread_mutex_unlock(&dev->lock);
            bool hit = check_says_interrupted();
            if (!ev) pthread_mutex_lock(&dev->lock);
            if (hit) return *end = INTERRUPTED, 0;
            next_check = now() + CHECK_EVERY;
        }
        if (dev->lend_waits && !ticket && t - start >= LEND_AFTER) ticket = lend_ask(dev);
        if (ticket) { /* asleep until the helper returns, the next check or the budget's end */
            double until = check ? next_check : t + CHECK_EVERY;
            if (budget >= 0 && start + budget < until) until = start + budget;
            if (lend_wait(dev, ticket, until))
                ticket = 0; /* its work is done: the poll sees it, or work queued since */
            continue;
        }
        if (t - start < SPIN) { /* short work: a nap would outlast it (timer slack: ~50 us) */
            sched_yield();
            continue;
        }
        if (remote) {
            long part = (long)((t - start) * 1e9 / NAP_PART);
            nap = part < NAP_FIRST ? NAP_FIRST : part < NAP_MOST ? part : NAP_MOST;
        }
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (!remote) nap = nap * 2 < NAP_MOST ? nap * 2 : NAP_MOST;
    }
}

static int poll_loop(ofl_device *dev, ofl_event *ev, bool check, double budget, wait_end *end,
                     ofl_error *err) {
#ifdef __linux__
    int slack = ofl_device_in_process(dev) ? -1 : prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack > 0) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    int rc = poll_until(dev, ev, check, budget, end, err);
    if (slack > 0) prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
    return rc;
#else
    return poll_until(dev, ev, check, budget, end, err);
#endif
}

static void set_flag(ofl_device *dev, int v) {
    if (dev->cancel_word) __atomic_store_n(dev->cancel_word, v, __ATOMIC_SEQ_CST);
    dev->cancelling = v != 0;
}

/* The queue is empty: what was cancelled has ended. */
static void queue_empty(ofl_device *dev) {
    dev->busy = false;
    if (dev->cancelling) set_flag(dev, 0);
}

/* After an interrupt, lock held: tells the queued work to stop and gives it
 * GRACE to end. Always OFL_ERR_INTERRUPTED. */
static int cancel(ofl_device *dev, ofl_error *err) {
    set_flag(dev, 1);
    wait_end end = TIMED_OUT;
    ofl_error ignored; /* the cancelled work's failure is no news now */
    if (poll_loop(dev, NULL, false, GRACE, &end, &ignored) == 0 && end == DONE) {
        dev->ops->synchronize(dev, NULL);
        queue_empty(dev);
        return ofl_fail(err, OFL_ERR_INTERRUPTED,
                        "interrupted: the work queued on %s was cancelled", dev->info.filter);
    }
    return ofl_fail(err, OFL_ERR_INTERRUPTED,
                    "interrupted: the work queued on %s (%s) was told to stop but still runs "
                    "(a kernel without loops, or a device that cannot see the host's flag); "
                    "the next launch there waits for it",
                    dev->info.filter, dev->info.name);
}

int ofl_wait_queue(ofl_device *dev, ofl_error *err) {
    if (!dev->opened) return 0;
    if (dev->busy || dev->cancelling) {
        wait_end end = DONE;
        int rc = poll_loop(dev, NULL, true, -1, &end, err);
        if (rc) return rc;
        if (end == INTERRUPTED) return cancel(dev, err);
    }
    int rc = dev->ops->synchronize(dev, err); /* empty now: reports what failed */
    queue_empty(dev);
    return rc;
}

int ofl_wait_settle(ofl_device *dev, ofl_error *err) {
    return dev->cancelling ? ofl_wait_queue(dev, err) : 0;
}

int ofl_event_wait(ofl_event *ev, ofl_error *err) {
    if (!ev) return ofl_fail(err, OFL_ERR_INVALID, "no event given");
    ofl_device *dev = ev->dev;
    wait_end end = DONE;
    int rc = poll_loop(dev, ev, true, -1, &end, err); /* without the lock, as event calls run */
    if (rc) return rc;
    if (end == INTERRUPTED) {
        pthread_mutex_lock(&dev->lock);
        rc = cancel(dev, err);
        pthread_mutex_unlock(&dev->lock);
        return rc;
    }
    return dev->ops->event_wait(ev, err); /* done: reports its failure */
}

int ofl_synchronize(ofl_device *dev, ofl_error *err) {
    if (!dev) return ofl_fail(err, OFL_ERR_INVALID, "no device given");
    pthread_mutex_lock(&dev->lock);
    int rc = ofl_wait_queue(dev, err); /* a device never opened has nothing queued */
    pthread_mutex_unlock(&dev->lock);
    return rc;
}

ofl_buffer *ofl_cancel_buffer(ofl_device *dev) {
    if (!dev->cancel && (dev->cancel = calloc(1, sizeof *dev->cancel)) != NULL) {
        dev->cancel->dev = dev;
        dev->cancel->size = sizeof(int);
        dev->cancel->foreign = true;
    }
    if (dev->cancel) dev->cancel->generation = dev->generation;
    return dev->cancel;
}

int ofl_cancel_arg(ofl_device *dev, ofl_arg *out, ofl_error *err) {
    int rc = ofl_device_lock(dev, err);
    if (rc) return rc;
    if (!dev->cancel)
        rc = ofl_fail(err, OFL_ERR_DEVICE,
                      "%s (%s) has no cancel flag (out of memory when it opened)", dev->info.filter,
                      dev->info.name);
    else {
        dev->cancel->generation = dev->generation; /* remade by a CUDA reset's reopen */
        *out = (ofl_arg){.buffer = dev->cancel};
    }
    ofl_device_unlock(dev);
    return rc;
}

void ofl_cancel_device(ofl_device *dev) {
    pthread_mutex_lock(&dev->lock);
    if (dev->opened && dev->busy) set_flag(dev, 1);
    pthread_mutex_unlock(&dev->lock);
}
