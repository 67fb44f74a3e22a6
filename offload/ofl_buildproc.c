/* ofl_buildproc: builds SPIR-V for an OpenCL device in a helper process
 * (offload-clbuild, ofl_buildproc_main.c) rather than in this one. Called by
 * ofl_opencl.c only.
 *
 * An OpenCL compiler runs inside the process that calls clBuildProgram, and
 * Intel's CPU compiler crashes on some valid SPIR-V (its vectorizer, on a
 * float recurrence read after its loop: tests/fuzz/test_fuzz_regressions.py).
 * In this process that would end the notebook; in a helper it is an exit
 * status. The build is then tried again by a helper whose vectorizer is off
 * (the runtime reads CL_CONFIG_CPU_VECTORIZER_MODE once, at its start, so
 * that takes a process of its own), and only if that crashes too does the
 * build fail, quoting the compiler's last words. A helper answers with the
 * program binary, which this process loads (clCreateProgramWithBinary runs
 * no compiler: 1-2 ms).
 *
 * A helper starts at the first build that must compile (some 50 ms and
 * 220 MB: the runtime loads again there), not as the device opens: a
 * process whose kernels are all in the binary cache (ofl_bincache.c) needs
 * none. The one with the vectorizer off starts at the first crash; either
 * again after it ended (posix_spawn, which is safe in a process with
 * threads). Each lives until this process ends (it reads end of input
 * then). A build that outlasts ofl_build_timeout ends its helper and fails.
 * A mutex per device orders the requests; it is held across the build,
 * which callers run without the GIL. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ofl_backend.h"

#ifndef OFFLOAD_PKGLIBEXECDIR
#define OFFLOAD_PKGLIBEXECDIR "/usr/local/libexec/offload"
#endif

extern char **environ;

enum { VECTORIZED, SCALAR, NMODES };
enum { NO_DEVICE_EXIT = 3 }; /* the helper's exit status when it finds no such device */

typedef struct {
    pid_t pid; /* 0: not running */
    int sock;  /* our end of its stdin and stdout */
    int err;   /* its stderr: a memory file, read after a crash */
} helper;

struct ofl_buildproc {
    pthread_mutex_t lock;
    char exe[PATH_MAX];     /* offload-clbuild */
    char runtime[PATH_MAX]; /* the vendor library the device's platform lives in */
    char device[256];
    bool unusable; /* a helper found no such device: builds stay in this process */
    helper mode[NMODES];
};

/* OFFLOAD_CLBUILD names the helper, else it is the one beside this code: in
 * a build tree, offload/ is a sibling of kernel/ and python/ and two levels
 * above tests/unit/; installed, it is in pkglibexecdir. This code is in the
 * module's shared object, or in the kernel's executable, which dladdr may
 * name by argv[0] alone. */
static bool find_exe(char *out, size_t len) {
    const char *given = getenv("OFFLOAD_CLBUILD");
    if (given && given[0]) {
        snprintf(out, len, "%s", given);
        return access(out, X_OK) == 0;
    }
    Dl_info self;
    char dirs[2][PATH_MAX] = {"", ""};
    if (!dladdr((void *)find_exe, &self) || !self.dli_fname || !realpath(self.dli_fname, dirs[0]))
        dirs[0][0] = '\0';
    if (!realpath("/proc/self/exe", dirs[1])) dirs[1][0] = '\0';
    for (int d = 0; d < 2; d++) {
        char *slash = strrchr(dirs[d], '/');
        if (!slash) continue;
        *slash = '\0';
        for (int up = 1; up <= 2; up++) {
            snprintf(out, len, "%s/%s/offload/offload-clbuild", dirs[d], up == 1 ? ".." : "../..");
            if (access(out, X_OK) == 0) return true;
        }
    }
    snprintf(out, len, "%s/offload-clbuild", OFFLOAD_PKGLIBEXECDIR);
    return access(out, X_OK) == 0;
}

/* A platform object starts with its vendor's dispatch table (the ICD
 * contract), so where the table's clGetPlatformInfo lives names the vendor
 * library -- however the platform was found (a registered .icd, ofl_icd.c). */
static bool find_runtime(cl_platform_id platform, char out[PATH_MAX]) {
    void *const *table = *(void *const *const *)platform;
    Dl_info lib;
    if (!table || !dladdr(table[1], &lib) || !lib.dli_fname || !realpath(lib.dli_fname, out))
        return false;
    return !strstr(out, "libOpenCL"); /* a loader-managed table: no vendor to name */
}

/* The environment the helper starts with: ours, and for SCALAR the
 * vectorizer off. */
static char **helper_env(int mode) {
    static const char off[] = "CL_CONFIG_CPU_VECTORIZER_MODE=";
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (mode != SCALAR || strncmp(environ[i], off, sizeof off - 1) != 0) env[k++] = environ[i];
    if (mode == SCALAR) env[k++] = "CL_CONFIG_CPU_VECTORIZER_MODE=1";
    return env;
}

/* 0, or the errno that says why the helper did not start */
static int start(ofl_buildproc *b, int mode) {
    helper *h = &b->mode[mode];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return errno;
    int err = memfd_create("offload-clbuild-stderr", MFD_CLOEXEC);
    char **env = err >= 0 ? helper_env(mode) : NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err, 2);
    /* its own session: an interrupt sent to the notebook's process group
     * is not for it; and no signal blocked that the compiler may need */
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {b->exe, b->runtime, b->device, NULL};
    pid_t pid = 0;
    int rc = err < 0 ? errno : env ? posix_spawn(&pid, b->exe, &fa, &attr, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(env);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        if (err >= 0) close(err);
        return rc;
    }
    h->pid = pid, h->sock = sv[0], h->err = err;
    return 0;
}

ofl_buildproc *ofl_buildproc_open(cl_platform_id platform, const char *device) {
    const char *here = getenv("OFFLOAD_BUILD_IN_PROCESS"); /* "0" or "": as unset, as elsewhere */
    ofl_buildproc *b = calloc(1, sizeof *b);
    if (!b || (here && here[0] && strcmp(here, "0") != 0) || !find_exe(b->exe, sizeof b->exe) ||
        !find_runtime(platform, b->runtime)) {
        free(b);
        return NULL;
    }
    snprintf(b->device, sizeof b->device, "%s", device);
    pthread_mutex_init(&b->lock, NULL);
    return b;
}

/* Lets go of a helper that has been reaped. */
static void forget(helper *h) {
    close(h->sock), close(h->err);
    h->pid = 0;
}

enum { ANSWERED, CRASHED, KILLED, INTERRUPTED, TIMED_OUT };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sends or receives n bytes: ANSWERED, CRASHED when the stream broke (the
 * helper ended), INTERRUPTED when the user interrupted first, TIMED_OUT at
 * the deadline (a monotonic time): a compiler that loops is stopped either
 * way, as a runaway kernel is. */
static int io_all(int fd, void *buf, size_t n, bool sending, double deadline) {
    char *p = buf;
    struct pollfd pf = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
    while (n > 0) {
        int ready = poll(&pf, 1, 20);
        if (ready < 0 && errno != EINTR) return CRASHED;
        if (ready <= 0) {
            if (ofl_interrupted()) return INTERRUPTED;
            if (now_s() >= deadline) return TIMED_OUT;
            continue;
        }
        ssize_t k =
            sending ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, n, MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return CRASHED;
        p += k, n -= (size_t)k;
    }
    return ANSWERED;
}

/* The helper stopped answering: reaps it and describes its end in why --
 * the signal, and the compiler's last line about what it was doing.
 * Returns its exit status, 128 + the signal that ended it, or -1 when its
 * status is gone. */
static int bury(helper *h, char *why, size_t len) {
    int st = 0;
    pid_t got;
    /* an exit or a crash has already set its status; this ends one that
     * only broke the stream (an answer too large to take) */
    kill(h->pid, SIGKILL);
    while ((got = waitpid(h->pid, &st, 0)) < 0 && errno == EINTR) {
    }
    /* not ours to reap where SIGCHLD is ignored: the status is gone */
    int used = got < 0           ? snprintf(why, len, "stopped answering")
               : WIFSIGNALED(st) ? snprintf(why, len, "crashed (signal %d, %s)", WTERMSIG(st),
                                            strsignal(WTERMSIG(st)))
                                 : snprintf(why, len, "exited with status %d", WEXITSTATUS(st));
    char tail[4096];
    off_t size = lseek(h->err, 0, SEEK_END);
    off_t from = size > (off_t)sizeof tail - 1 ? size - (off_t)sizeof tail + 1 : 0;
    ssize_t n = pread(h->err, tail, sizeof tail - 1, from);
    tail[n > 0 ? n : 0] = '\0';
    forget(h);
    /* LLVM's crash report names the pass it was in, innermost last */
    char *line = NULL;
    for (char *p = strstr(tail, "Running pass"); p; p = strstr(p + 1, "Running pass")) line = p;
    if (line && used > 0 && (size_t)used < len)
        snprintf(why + used, len - (size_t)used, "; its last words: %.*s",
                 (int)strcspn(line, "\r\n"), line);
    return got < 0 ? -1 : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* One request to the helper of mode. ANSWERED: *status and *bytes (n of
 * them and a NUL). Else why says how it stopped: KILLED by SIGKILL, which
 * is someone else's doing (a user, the OOM killer; a thread that ends does
 * not: there is no PR_SET_PDEATHSIG), CRASHED for another signal or an
 * exit, OFL_BUILDPROC_HERE when it could not start or found no device,
 * INTERRUPTED when the user interrupted the wait and TIMED_OUT when it
 * outlasted `limit` seconds (the helper is ended: a later build starts
 * another). */
static int ask(ofl_buildproc *b, int mode, const void *il, size_t size, double limit,
               cl_int *status, unsigned char **bytes, size_t *n, char *why, size_t whylen) {
    helper *h = &b->mode[mode];
    int e = h->pid ? 0 : start(b, mode);
    if (e) {
        snprintf(why, whylen, "could not be started (%.300s: %s)", b->exe, strerror(e));
        return OFL_BUILDPROC_HERE;
    }
    uint64_t len = size, got = 0;
    int32_t st = 0;
    *bytes = NULL;
    double end = now_s() + limit;
    int io = io_all(h->sock, &len, sizeof len, true, end);
    if (io == ANSWERED) io = io_all(h->sock, (void *)il, size, true, end);
    if (io == ANSWERED) io = io_all(h->sock, &st, sizeof st, false, end);
    if (io == ANSWERED) io = io_all(h->sock, &got, sizeof got, false, end);
    if (io == ANSWERED && (got >= SIZE_MAX || !(*bytes = malloc(got + 1)))) io = CRASHED;
    if (io == ANSWERED) io = io_all(h->sock, *bytes, got, false, end);
    if (io == ANSWERED) {
        (*bytes)[got] = '\0';
        *status = st, *n = got;
        /* what the compiler said before is of no use after an answer: a
         * long session must not keep it (its holes take no memory); where
         * that fails, it only grows */
        if (ftruncate(h->err, 0) != 0) errno = 0;
        return ANSWERED;
    }
    free(*bytes);
    *bytes = NULL;
    /* interrupted or out of time, it is stopped too: its answer would come
     * to the next request */
    int ended = bury(h, why, whylen);
    if (io == INTERRUPTED || io == TIMED_OUT) return io;
    return ended == NO_DEVICE_EXIT ? OFL_BUILDPROC_HERE : ended == 128 + SIGKILL ? KILLED : CRASHED;
}

/* ask, and once more in a new helper after a SIGKILL; KILLED twice is a crash */
static int ask_twice(ofl_buildproc *b, int mode, const void *il, size_t size, double limit,
                     cl_int *status, unsigned char **bytes, size_t *n, char *why, size_t whylen) {
    int rc = ask(b, mode, il, size, limit, status, bytes, n, why, whylen);
    if (rc == KILLED) rc = ask(b, mode, il, size, limit, status, bytes, n, why, whylen);
    return rc == KILLED ? CRASHED : rc;
}

/* Reaps the helpers that ended between builds (killed by hand, the OOM
 * killer: not a build's doing; the next build starts another). True when
 * one ended because it found no device. */
static bool reap_idle(ofl_buildproc *b) {
    bool no_device = false;
    for (int m = 0; m < NMODES; m++) {
        helper *h = &b->mode[m];
        int st;
        if (!h->pid || waitpid(h->pid, &st, WNOHANG) != h->pid) continue;
        no_device |= WIFEXITED(st) && WEXITSTATUS(st) == NO_DEVICE_EXIT;
        forget(h);
    }
    return no_device;
}

int ofl_buildproc_build(ofl_buildproc *b, ofl_program *prog, const void *il, size_t size,
                        cl_int *status, unsigned char **bytes, size_t *n, ofl_error *err) {
    char why[NMODES][512] = {"", ""};
    double limit;
    int rc = ofl_build_timeout(&limit, err);
    if (rc) return rc;
    rc = OFL_BUILDPROC_HERE;
    pthread_mutex_lock(&b->lock);
    if (!b->unusable && reap_idle(b)) b->unusable = true;
    if (!b->unusable) {
        rc = ask_twice(b, VECTORIZED, il, size, limit, status, bytes, n, why[VECTORIZED],
                       sizeof why[0]);
        b->unusable = rc == OFL_BUILDPROC_HERE;
        /* after a crash, never here: this process would crash the same way */
        if (rc == CRASHED) {
            int again =
                ask_twice(b, SCALAR, il, size, limit, status, bytes, n, why[SCALAR], sizeof why[0]);
            if (again == ANSWERED) rc = ANSWERED, prog->vectorizer_off = true;
            if (again == INTERRUPTED || again == TIMED_OUT) rc = again;
        }
    }
    pthread_mutex_unlock(&b->lock);
    const ofl_device_info *in = &prog->dev->info;
    if (rc == INTERRUPTED)
        return ofl_fail(err, OFL_ERR_INTERRUPTED,
                        "interrupted: the build of kernel '%s' for %s was stopped", prog->name,
                        in->filter);
    if (rc == TIMED_OUT)
        return ofl_fail(err, OFL_ERR_DEVICE,
                        "cannot build kernel '%s' for %s (%s): its OpenCL compiler did not finish "
                        "in %g s (OFFLOAD_BUILD_TIMEOUT) and was stopped; the device stays usable",
                        prog->name, in->filter, in->name, limit);
    if (rc != CRASHED) return rc;
    return ofl_fail(err, OFL_ERR_DEVICE,
                    "cannot build kernel '%s' for %s (%s): its OpenCL compiler %s; built again "
                    "with its vectorizer off, it %s",
                    prog->name, in->filter, in->name, why[VECTORIZED], why[SCALAR]);
}
