#include <Python.h>

#include "krn_interrupt.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mod_public.h"

/* A signal ends a blocking call only if it is under way. One that lands
 * between the last check of the bytecode loop and a sleep (while C code runs,
 * say) leaves KeyboardInterrupt pending for as long as the sleep lasts. So
 * after each interrupt a thread pokes the main thread a few more times while
 * the same run goes on: the poked call retries after Python checks its
 * signals, which raises the pending KeyboardInterrupt, or, if it was raised
 * already, goes back to waiting. The poke ends calls as SIGINT does (no
 * SA_RESTART, so lock waits end too) but only for a few seconds after one.
 * A realtime signal, as neither Python nor the device runtimes use them. */
static const unsigned POKE_AFTER_MS[] = {5, 20, 100, 400, 1500, 3000};

static atomic_ulong running; /* number of the run under way; 0 while idle */
static unsigned long runs;   /* main thread only */
static pthread_t main_thread;
static sem_t interrupted; /* posted by the SIGINT handler, taken by the poker */

static int poke_signal(void) { return SIGRTMIN + 2; }

void krn_interrupt_run_begins(void) { atomic_store(&running, ++runs); }
void krn_interrupt_run_ends(void) { atomic_store(&running, 0); }
bool krn_interrupt_busy(void) { return atomic_load(&running) != 0; }

void krn_interrupt_request(void) {
    /* Sent to the main thread itself, so a call it blocks in ends with EINTR. */
    if (krn_interrupt_busy()) pthread_kill(main_thread, SIGINT);
}

static void on_sigint(int sig) {
    (void)sig;
    if (!krn_interrupt_busy()) return;
    int saved = errno;
    PyErr_SetInterruptEx(SIGINT);
    mod_request_interrupt(); /* a device wait ends even if the signal is taken on the way */
    sem_post(&interrupted);
    errno = saved;
}

static void on_poke(int sig) { (void)sig; }

static void *poker_main(void *arg) {
    (void)arg;
    for (;;) {
        if (sem_wait(&interrupted) != 0) continue; /* EINTR */
        unsigned long run = atomic_load(&running);
        for (size_t i = 0; run && i < sizeof POKE_AFTER_MS / sizeof *POKE_AFTER_MS; i++) {
            unsigned ms = POKE_AFTER_MS[i];
            struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000L};
            while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
            }
            if (atomic_load(&running) != run) break;
            pthread_kill(main_thread, poke_signal());
        }
    }
    return NULL;
}

int krn_interrupt_init(char *err, size_t errlen) {
    main_thread = pthread_self();
    if (sem_init(&interrupted, 0, 0) != 0) {
        snprintf(err, errlen, "cannot make the interrupt semaphore: %s", strerror(errno));
        return -1;
    }
    struct sigaction poke = {.sa_handler = on_poke};
    sigemptyset(&poke.sa_mask);
    struct sigaction intr = {.sa_handler = on_sigint};
    sigemptyset(&intr.sa_mask);
    if (sigaction(poke_signal(), &poke, NULL) != 0 || sigaction(SIGINT, &intr, NULL) != 0) {
        snprintf(err, errlen, "cannot install the interrupt handlers: %s", strerror(errno));
        return -1;
    }
    /* The poker blocks every signal: SIGINT belongs to the main thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_t poker;
    int rc = pthread_create(&poker, NULL, poker_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the interrupt thread: %s", strerror(rc));
        return -1;
    }
    pthread_detach(poker);
    return 0;
}
