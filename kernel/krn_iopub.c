/* krn_iopub: the IOPub thread, its XPUB socket, the bounded hand-off from
 * other threads, and the batching of captured stream text (krn_iopub.h). */
#include "krn_iopub.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "krn_log.h"

#define FLUSH_INTERVAL_MS 50
#define RUN_LIMIT (64 * 1024)
#define INPROC "inproc://offload-iopub"
/* Messages IOPub may hold for one subscriber, and in the hand-off between
 * threads: ipykernel's (and libzmq's) default high-water mark. A frontend
 * that stops reading then costs at most this many messages of memory (stream
 * runs are at most RUN_LIMIT each): XPUB drops what it cannot queue for that
 * subscriber, as PUB does, and everybody else still gets everything. */
#define IOPUB_HWM 1000

static struct {
    const krn_session *session;
    void *xpub, *pull;
    pthread_t thread;
    bool running;
    int wake_fd; /* eventfd: "a run started" or "stop" */
    /* [1] and [2]: read ends of the capture pipes, -1 when not captured.
     * Atomic: krn_iopub_capture_fds sets them while the thread already polls. */
    _Atomic int pipe_rd[3];
    volatile int stopping;

    /* Everything below is guarded by lock. */
    pthread_mutex_t lock;
    void *push;
    json_t *parent;
    bool silent;
    unsigned long dropped; /* messages the hand-off had no room for */
    int run_stream;        /* 0 = no pending text */
    char *run;
    size_t run_len, run_cap;
    struct timespec run_started;
} io = {.wake_fd = -1, .pipe_rd = {-1, -1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- sending (lock held) ---- */

/* Queues one message for the IOPub thread without ever waiting: with the
 * hand-off full (IOPUB_HWM messages the thread has not taken yet) the message
 * is dropped and counted, as XPUB drops for a slow subscriber -- a publisher
 * blocked here would stop the shell thread's replies. Only the first frame can
 * meet a full queue: libzmq counts whole messages, so once it is in, the rest
 * of the message follows. */
static void hand_off_locked(const krn_frames *f, const char *msg_type) {
    for (size_t i = 0; i < f->n; i++) {
        if (zmq_send(io.push, f->data[i], f->len[i],
                     (i + 1 < f->n ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) >= 0)
            continue;
        if (errno == EAGAIN && i == 0) {
            io.dropped++;
            krn_log(KRN_LOG_DEBUG, "IOPub hand-off full: %s dropped (%lu so far)", msg_type,
                    io.dropped);
        } else {
            krn_log(KRN_LOG_ERROR, "IOPub hand-off failed: %s", zmq_strerror(errno));
        }
        break;
    }
}

static void send_frames_locked(const char *msg_type, const json_t *parent, json_t *metadata,
                               json_t *content) {
    char topic[96];
    snprintf(topic, sizeof topic, "kernel.%s.%s", io.session->session, msg_type);
    krn_bytes id = {topic, strlen(topic)};
    krn_frames f;
    if (krn_wire_encode(io.session, &id, 1, msg_type, parent, metadata, content, &f)) {
        krn_log(KRN_LOG_ERROR, "could not encode %s for IOPub", msg_type);
        return;
    }
    hand_off_locked(&f, msg_type);
    krn_frames_free(&f);
}

/* Length of the prefix of s that does not end inside a UTF-8 sequence. */
static size_t complete_utf8_prefix(const char *s, size_t len) {
    size_t i = len, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--, back++;
    if (i == 0) return len;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return (need > 1 && back + 1 < need) ? i - 1 : len;
}

/* JSON strings must be valid UTF-8: replace what is not with U+FFFD. */
static json_t *utf8_string(const char *s, size_t len) {
    json_t *str = json_stringn(s, len);
    if (str) return str;
    char *clean = malloc(len * 3 + 1);
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80             ? 1
                   : (c & 0xE0) == 0xC0 ? 2
                   : (c & 0xF0) == 0xE0 ? 3
                   : (c & 0xF8) == 0xF0 ? 4
                                        : 0;
        bool ok = n > 0 && i + n <= len && !(n > 1 && c < 0xC2) && c != 0;
        for (size_t k = 1; ok && k < n; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (ok) { /* jansson is the judge of overlongs and surrogates */
            json_t *probe = json_stringn(s + i, n);
            ok = probe != NULL;
            json_decref(probe);
        }
        if (ok) {
            memcpy(clean + o, s + i, n);
            o += n, i += n;
        } else {
            memcpy(clean + o, "\xEF\xBF\xBD", 3);
            o += 3, i += 1;
        }
    }
    str = json_stringn(clean, o);
    free(clean);
    return str;
}

static void send_run_locked(bool hold_partial_char) {
    if (!io.run_stream || io.run_len == 0) return;
    size_t n = hold_partial_char ? complete_utf8_prefix(io.run, io.run_len) : io.run_len;
    if (n == 0) return;
    json_t *content =
        json_pack("{s:s, s:o}", "name", io.run_stream == KRN_STDERR ? "stderr" : "stdout", "text",
                  utf8_string(io.run, n));
    send_frames_locked("stream", io.parent, NULL, content);
    memmove(io.run, io.run + n, io.run_len - n);
    io.run_len -= n;
    if (io.run_len == 0) io.run_stream = 0;
}

static void append_locked(int stream, const char *text, size_t len) {
    if (io.silent) return;
    if (io.run_stream && io.run_stream != stream) send_run_locked(false);
    if (io.run_len == 0) {
        clock_gettime(CLOCK_MONOTONIC, &io.run_started);
        uint64_t one = 1;
        if (io.wake_fd >= 0 && write(io.wake_fd, &one, sizeof one) < 0)
            krn_log(KRN_LOG_DEBUG, "wake write: %s", strerror(errno));
    }
    io.run_stream = stream;
    if (io.run_len + len > io.run_cap) {
        size_t cap = io.run_cap ? io.run_cap : 4096;
        while (cap < io.run_len + len) cap *= 2;
        char *grown = realloc(io.run, cap);
        if (!grown) return;
        io.run = grown, io.run_cap = cap;
    }
    memcpy(io.run + io.run_len, text, len);
    io.run_len += len;
    if (io.run_len >= RUN_LIMIT) send_run_locked(true);
}

/* Read what the capture pipes hold right now. */
static void drain_pipes_locked(void) {
    char buf[16384];
    for (int fd = 1; fd <= 2; fd++) {
        if (io.pipe_rd[fd] < 0) continue;
        ssize_t n;
        while ((n = read(io.pipe_rd[fd], buf, sizeof buf)) > 0) append_locked(fd, buf, (size_t)n);
    }
}

/* ---- public ---- */

void krn_iopub_write(int stream, const char *text, size_t len) {
    pthread_mutex_lock(&io.lock);
    if (io.push) {
        drain_pipes_locked(); /* what C code wrote to fds 1/2 before this comes first */
        append_locked(stream, text, len);
    }
    pthread_mutex_unlock(&io.lock);
}

void krn_iopub_flush(void) {
    fflush(stdout);
    fflush(stderr);
    pthread_mutex_lock(&io.lock);
    if (io.push) {
        drain_pipes_locked();
        send_run_locked(true);
    }
    pthread_mutex_unlock(&io.lock);
}

void krn_iopub_set_parent(const json_t *parent) {
    pthread_mutex_lock(&io.lock);
    if (io.push) {
        drain_pipes_locked();
        send_run_locked(false);
    }
    json_decref(io.parent);
    io.parent = parent ? json_deep_copy(parent) : NULL;
    pthread_mutex_unlock(&io.lock);
}

void krn_iopub_publish_for(const json_t *parent, const char *msg_type, json_t *content) {
    pthread_mutex_lock(&io.lock);
    if (io.push)
        send_frames_locked(msg_type, parent, NULL, content);
    else
        json_decref(content);
    pthread_mutex_unlock(&io.lock);
}

void krn_iopub_set_silent(bool silent) {
    pthread_mutex_lock(&io.lock);
    if (io.push) {
        drain_pipes_locked();
        send_run_locked(false);
    }
    io.silent = silent;
    pthread_mutex_unlock(&io.lock);
}

void krn_iopub_publish(const char *msg_type, json_t *content) {
    krn_iopub_publish_md(msg_type, NULL, content);
}

void krn_iopub_publish_md(const char *msg_type, json_t *metadata, json_t *content) {
    pthread_mutex_lock(&io.lock);
    if (io.push && !io.silent) {
        drain_pipes_locked();
        send_run_locked(false); /* text printed before a display shows before it */
        send_frames_locked(msg_type, io.parent, metadata, content);
    } else {
        json_decref(metadata);
        json_decref(content);
    }
    pthread_mutex_unlock(&io.lock);
}

void krn_iopub_status(const json_t *parent, const char *state) {
    krn_iopub_publish_for(parent, "status", json_pack("{s:s}", "execution_state", state));
}

/* ---- the IOPub thread ---- */

static void forward_one(void) {
    for (;;) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, io.pull, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&part);
            return;
        }
        int more = zmq_msg_more(&part);
        if (zmq_msg_send(&part, io.xpub, more ? ZMQ_SNDMORE : 0) < 0) {
            zmq_msg_close(&part);
            krn_log(KRN_LOG_WARN, "IOPub send failed: %s", zmq_strerror(errno));
        }
        if (!more) return;
    }
}

static void welcome_subscriber(void) {
    char buf[512];
    int n = zmq_recv(io.xpub, buf, sizeof buf, ZMQ_DONTWAIT);
    if (n < 1 || buf[0] != 1) /* 0 = unsubscribe */
        return;
    size_t len = (size_t)n > sizeof buf ? sizeof buf - 1 : (size_t)n - 1;
    json_t *content = json_pack("{s:o}", "subscription", utf8_string(buf + 1, len));
    /* Straight to XPUB: only new subscribers care, and order with other traffic does not matter. */
    krn_frames f;
    krn_bytes topic = {"kernel.welcome", 14};
    if (krn_wire_encode(io.session, &topic, 1, "iopub_welcome", NULL, NULL, content, &f)) return;
    for (size_t i = 0; i < f.n; i++)
        zmq_send(io.xpub, f.data[i], f.len[i], i + 1 < f.n ? ZMQ_SNDMORE : 0);
    krn_frames_free(&f);
}

static int ms_until_flush(void) {
    pthread_mutex_lock(&io.lock);
    int ms = -1;
    if (io.run_len) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited = (now.tv_sec - io.run_started.tv_sec) * 1000 +
                      (now.tv_nsec - io.run_started.tv_nsec) / 1000000;
        ms = waited >= FLUSH_INTERVAL_MS ? 0 : (int)(FLUSH_INTERVAL_MS - waited);
    }
    pthread_mutex_unlock(&io.lock);
    return ms;
}

static void *iopub_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&io.stopping, __ATOMIC_ACQUIRE)) {
        zmq_pollitem_t items[5] = {
            {io.pull, 0, ZMQ_POLLIN, 0},          {io.xpub, 0, ZMQ_POLLIN, 0},
            {NULL, io.wake_fd, ZMQ_POLLIN, 0},    {NULL, io.pipe_rd[1], ZMQ_POLLIN, 0},
            {NULL, io.pipe_rd[2], ZMQ_POLLIN, 0},
        };
        int nitems = io.pipe_rd[1] >= 0 ? 5 : 3;
        int rc = zmq_poll(items, nitems, ms_until_flush());
        if (rc < 0) {
            if (errno == EINTR) continue;
            if (errno != ETERM) krn_log(KRN_LOG_ERROR, "IOPub poll: %s", zmq_strerror(errno));
            break;
        }
        if (items[2].revents & ZMQ_POLLIN) {
            uint64_t v;
            ssize_t unused = read(io.wake_fd, &v, sizeof v);
            (void)unused;
        }
        if (items[1].revents & ZMQ_POLLIN) welcome_subscriber();
        if (nitems == 5 && ((items[3].revents | items[4].revents) & (ZMQ_POLLIN | ZMQ_POLLERR))) {
            pthread_mutex_lock(&io.lock);
            drain_pipes_locked();
            pthread_mutex_unlock(&io.lock);
        }
        if (ms_until_flush() == 0) {
            pthread_mutex_lock(&io.lock);
            send_run_locked(true);
            pthread_mutex_unlock(&io.lock);
        }
        if (items[0].revents & ZMQ_POLLIN)
            for (int i = 0; i < 256; i++) { /* bounded, so subscriptions are not starved */
                zmq_pollitem_t more = {io.pull, 0, ZMQ_POLLIN, 0};
                if (zmq_poll(&more, 1, 0) <= 0) break;
                forward_one();
            }
    }
    /* Deliver whatever was handed off before the stop. */
    zmq_pollitem_t last = {io.pull, 0, ZMQ_POLLIN, 0};
    while (zmq_poll(&last, 1, 0) > 0) forward_one();
    return NULL;
}

int krn_iopub_start(void *zmq_ctx, const char *endpoint, const krn_session *session, char *err,
                    size_t errlen) {
    int zero = 0, one = 1, linger = 1000;
    io.session = session;
    io.xpub = zmq_socket(zmq_ctx, ZMQ_XPUB);
    io.pull = zmq_socket(zmq_ctx, ZMQ_PULL);
    io.push = zmq_socket(zmq_ctx, ZMQ_PUSH);
    io.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!io.xpub || !io.pull || !io.push || io.wake_fd < 0) {
        snprintf(err, errlen, "cannot create IOPub sockets: %s", zmq_strerror(errno));
        return -1;
    }
    /* Bounded queues (IOPUB_HWM): a subscriber that stops reading must not
     * grow the kernel without end; lingering bounds shutdown. On inproc the
     * hand-off holds up to the sum of both marks. */
    int hwm = IOPUB_HWM, half = IOPUB_HWM / 2;
    zmq_setsockopt(io.xpub, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(io.xpub, ZMQ_XPUB_VERBOSE, &one, sizeof one);
    zmq_setsockopt(io.xpub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(io.pull, ZMQ_RCVHWM, &half, sizeof half);
    zmq_setsockopt(io.push, ZMQ_SNDHWM, &half, sizeof half);
    zmq_setsockopt(io.push, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(io.xpub, endpoint) || zmq_bind(io.pull, INPROC) || zmq_connect(io.push, INPROC)) {
        snprintf(err, errlen, "cannot bind IOPub to %s: %s", endpoint, zmq_strerror(errno));
        return -1;
    }
    if (pthread_create(&io.thread, NULL, iopub_main, NULL)) {
        snprintf(err, errlen, "cannot start the IOPub thread");
        return -1;
    }
    io.running = true;
    return 0;
}

int krn_iopub_capture_fds(char *err, size_t errlen) {
    for (int fd = 1; fd <= 2; fd++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC)) {
            snprintf(err, errlen, "cannot capture fd %d: %s", fd, strerror(errno));
            return -1;
        }
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
        if (dup2(p[1], fd) < 0) {
            snprintf(err, errlen, "cannot redirect fd %d: %s", fd, strerror(errno));
            return -1;
        }
        close(p[1]);
        io.pipe_rd[fd] = p[0];
    }
    uint64_t one = 1; /* the thread polls the pipes from its next round on */
    if (write(io.wake_fd, &one, sizeof one) < 0)
        krn_log(KRN_LOG_DEBUG, "wake write: %s", strerror(errno));
    /* C stdio on a pipe is fully buffered; line buffering keeps printf timely. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    return 0;
}

void krn_iopub_stop(void) {
    if (!io.running) return;
    krn_iopub_flush();
    __atomic_store_n(&io.stopping, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    if (write(io.wake_fd, &one, sizeof one) < 0)
        krn_log(KRN_LOG_DEBUG, "wake write: %s", strerror(errno));
    pthread_join(io.thread, NULL);
    io.running = false;
    pthread_mutex_lock(&io.lock);
    zmq_close(io.push);
    io.push = NULL;
    json_decref(io.parent);
    io.parent = NULL;
    free(io.run);
    io.run = NULL;
    io.run_len = io.run_cap = 0;
    pthread_mutex_unlock(&io.lock);
    zmq_close(io.pull);
    zmq_close(io.xpub);
    close(io.wake_fd);
}
