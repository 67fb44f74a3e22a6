/* krn_server: the sockets, the control and heartbeat threads, and the main
 * request loop with busy/idle and stop_on_error (krn_server.h). The top of
 * kernel/: it starts the interpreter and hands it krn_io. */
#include "krn_server.h"

#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "krn_history.h"
#include "krn_interrupt.h"
#include "krn_iopub.h"
#include "krn_log.h"
#include "krn_py.h"
#include "krn_shell.h"

#define MAX_MESSAGE_BYTES ((size_t)64 << 20) /* larger requests get an error reply */
#define POLL_MS 1000                         /* how often idle loops look at the parent */
#define SHUTDOWN_GRACE_S 5                   /* then the process leaves regardless */

static struct {
    krn_session session;
    krn_signer *signer;
    void *ctx;
    void *shell, *control, *stdin_sock, *hb;
    pthread_t main_thread, control_thread, hb_thread;
    pid_t parent_pid;
    atomic_int stop; /* set by shutdown_request and parent death */
} srv;

/* ---- frames in and out ---- */

typedef struct {
    zmq_msg_t *parts;
    krn_bytes *frames;
    size_t n, cap, total;
} inbox;

static void inbox_clear(inbox *in) {
    for (size_t i = 0; i < in->n; i++) zmq_msg_close(&in->parts[i]);
    free(in->parts);
    free(in->frames);
    memset(in, 0, sizeof *in);
}

/* All frames of one message; -1 when none is queued, the socket is closing or memory ran out. */
static int recv_frames(void *sock, inbox *in) {
    memset(in, 0, sizeof *in);
    for (;;) {
        if (in->n == in->cap) {
            size_t cap = in->cap ? in->cap * 2 : 8;
            zmq_msg_t *parts = realloc(in->parts, cap * sizeof *parts);
            if (!parts) {
                inbox_clear(in);
                return -1;
            }
            in->parts = parts, in->cap = cap;
        }
        zmq_msg_t *m = &in->parts[in->n];
        zmq_msg_init(m);
        if (zmq_msg_recv(m, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(m);
            if (in->n == 0) { /* nothing queued (EAGAIN) or the socket is closing */
                inbox_clear(in);
                return -1;
            }
            break;
        }
        in->n++;
        in->total += zmq_msg_size(m);
        if (!zmq_msg_more(m)) break;
    }
    in->frames = malloc(in->n * sizeof *in->frames);
    if (!in->frames) {
        inbox_clear(in);
        return -1;
    }
    for (size_t i = 0; i < in->n; i++)
        in->frames[i] = (krn_bytes){zmq_msg_data(&in->parts[i]), zmq_msg_size(&in->parts[i])};
    return 0;
}

static void send_frames(void *sock, krn_frames *f) {
    for (size_t i = 0; i < f->n; i++)
        if (zmq_send(sock, f->data[i], f->len[i], i + 1 < f->n ? ZMQ_SNDMORE : 0) < 0) {
            krn_log(KRN_LOG_ERROR, "send failed: %s", zmq_strerror(errno));
            break;
        }
    krn_frames_free(f);
}

/* Send a reply to req on sock; steals content. */
static void reply(void *sock, const krn_msg *req, const char *reply_type, json_t *content) {
    krn_frames f;
    if (krn_wire_encode(&srv.session, req->ids, req->nids, reply_type, req->header, NULL, content,
                        &f) == 0)
        send_frames(sock, &f);
}

static json_t *error_reply(const char *ename, const char *evalue) {
    return json_pack("{s:s, s:s, s:s, s:[s]}", "status", "error", "ename", ename, "evalue", evalue,
                     "traceback", evalue);
}

/* Receive and parse one message. Returns 1 with *msg filled, 0 when the
 * message was dropped (already logged and, where possible, answered), -1 on a
 * socket error. */
static int next_request(void *sock, const char *channel, krn_msg *msg) {
    inbox in;
    if (recv_frames(sock, &in)) return -1;
    char err[256];
    krn_wire_status st = krn_wire_parse(in.frames, in.n, srv.signer, msg, err, sizeof err);
    size_t total = in.total;
    inbox_clear(&in);
    if (st == KRN_WIRE_OK && total > MAX_MESSAGE_BYTES) {
        st = KRN_WIRE_BAD_JSON;
        snprintf(err, sizeof err, "message of %zu bytes exceeds the limit of %zu", total,
                 MAX_MESSAGE_BYTES);
    }
    if (st == KRN_WIRE_OK) return 1;
    krn_log(KRN_LOG_WARN, "%s: dropped a message: %s", channel, err);
    char type[128];
    if (st == KRN_WIRE_BAD_JSON && krn_reply_type(msg->msg_type, type, sizeof type)) {
        krn_iopub_status(msg->header, "busy");
        reply(sock, msg, type, error_reply("MalformedMessage", err));
        krn_iopub_status(msg->header, "idle");
    }
    krn_msg_clear(msg);
    return 0;
}

/* ---- heartbeat: echo, never touching Python ---- */

static void *heartbeat_main(void *arg) {
    (void)arg;
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, srv.hb, 0) < 0) {
            zmq_msg_close(&m);
            if (errno == EINTR) continue;
            break; /* ETERM: shutting down */
        }
        int more = zmq_msg_more(&m);
        if (zmq_msg_send(&m, srv.hb, more ? ZMQ_SNDMORE : 0) < 0) zmq_msg_close(&m);
    }
    return NULL;
}

/* ---- stopping ---- */

static void *watchdog_main(void *arg) {
    (void)arg;
    sleep(SHUTDOWN_GRACE_S);
    krn_log(KRN_LOG_WARN, "shutdown took longer than %d s; leaving now", SHUTDOWN_GRACE_S);
    _exit(0);
}

static void request_stop(void) {
    if (atomic_exchange(&srv.stop, 1)) return;
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog_main, NULL) == 0) pthread_detach(t);
    /* Wake the main thread: out of a running cell, or out of its poll (the
     * SIGINT handler does nothing while idle, but the poll returns EINTR). */
    pthread_kill(srv.main_thread, SIGINT);
}

static bool parent_gone(void) { return srv.parent_pid > 1 && getppid() != srv.parent_pid; }

/* ---- control ---- */

static void shutdown_reply(void *sock, const krn_msg *req) {
    bool restart = json_is_true(json_object_get(req->content, "restart"));
    json_t *content = json_pack("{s:s, s:b}", "status", "ok", "restart", restart);
    krn_iopub_publish_for(req->header, "shutdown_reply", json_deep_copy(content));
    reply(sock, req, "shutdown_reply", content);
    krn_log(KRN_LOG_INFO, "shutdown requested%s", restart ? " (the client restarts us)" : "");
    request_stop();
}

static void serve_control(const krn_msg *req) {
    krn_iopub_status(req->header, "busy");
    if (strcmp(req->msg_type, "kernel_info_request") == 0) {
        reply(srv.control, req, "kernel_info_reply", krn_shell_kernel_info());
    } else if (strcmp(req->msg_type, "shutdown_request") == 0) {
        shutdown_reply(srv.control, req);
    } else if (strcmp(req->msg_type, "interrupt_request") == 0) {
        krn_interrupt_request();
        reply(srv.control, req, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
    } else {
        krn_answer ans = {.content = NULL};
        krn_shell_unknown(req, "control", &ans);
        if (ans.content) reply(srv.control, req, ans.type, ans.content);
    }
    krn_iopub_status(req->header, "idle");
}

static void *control_main(void *arg) {
    (void)arg;
    while (!atomic_load(&srv.stop)) {
        zmq_pollitem_t item = {srv.control, 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(&item, 1, POLL_MS);
        if (rc < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (parent_gone()) {
            krn_log(KRN_LOG_WARN, "the parent process is gone; shutting down");
            request_stop();
            break;
        }
        if (rc == 0) continue;
        krn_msg req;
        int got;
        while ((got = next_request(srv.control, "control", &req)) >= 0) {
            if (got == 1) {
                serve_control(&req);
                krn_msg_clear(&req);
            }
        }
    }
    return NULL;
}

/* ---- stdin (main thread, from input()) ---- */

/* Nothing on stdin is wanted unless input() just asked: what came before is
 * dropped, and while idle it is drained, so that a client writing there
 * unasked cannot fill the socket's queue (and its own, which then blocks). */
static void drop_stale_stdin(void) {
    for (inbox in; recv_frames(srv.stdin_sock, &in) == 0;) inbox_clear(&in);
}

static int stdin_request(const krn_msg *parent, const char *prompt, bool password) {
    drop_stale_stdin(); /* for example the reply to an input() that was interrupted */
    krn_frames f;
    json_t *content = json_pack("{s:s, s:b}", "prompt", prompt, "password", password);
    if (!content || krn_wire_encode(&srv.session, parent->ids, parent->nids, "input_request",
                                    parent->header, NULL, content, &f))
        return -1;
    send_frames(srv.stdin_sock, &f);
    return 0;
}

static int stdin_reply(int timeout_ms, char **value) {
    zmq_pollitem_t item = {srv.stdin_sock, 0, ZMQ_POLLIN, 0};
    int rc = zmq_poll(&item, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    if (rc == 0) return atomic_load(&srv.stop) ? -1 : 0;
    krn_msg msg;
    int got = next_request(srv.stdin_sock, "stdin", &msg);
    if (got <= 0) return 0;
    int result = 0;
    json_t *v = json_object_get(msg.content, "value");
    if (strcmp(msg.msg_type, "input_reply") == 0 && json_is_string(v)) {
        *value = strdup(json_string_value(v));
        result = 1;
    } else {
        krn_log(KRN_LOG_WARN, "stdin: ignored %s", msg.msg_type);
    }
    krn_msg_clear(&msg);
    return result;
}

/* The interpreter's way out (krn_io.h): IOPub and the stdin channel. */
static const krn_io interpreter_io = {
    .publish = krn_iopub_publish_md,
    .write = krn_iopub_write,
    .flush = krn_iopub_flush,
    .stdin_request = stdin_request,
    .stdin_reply = stdin_reply,
};

/* ---- shell (main thread) ---- */

/* stop_on_error: the execute_requests already queued when an execute fails
 * are answered "aborted", except those that asked not to be stopped
 * (stop_on_error false); other requests are served as usual. "Already
 * queued" means received before the failed execute's reply went out: a
 * client can only react to the reply after it, so no later request is lost. */
typedef struct {
    krn_msg *v;
    size_t n, cap;
} msg_list;

static void set_aside_queued(msg_list *list) {
    krn_msg req;
    int got;
    while ((got = next_request(srv.shell, "shell", &req)) >= 0) {
        if (got == 0) continue;
        if (list->n == list->cap) {
            size_t cap = list->cap ? list->cap * 2 : 8;
            krn_msg *grown = realloc(list->v, cap * sizeof *grown);
            if (!grown) {
                krn_msg_clear(&req);
                break;
            }
            list->v = grown, list->cap = cap;
        }
        list->v[list->n++] = req;
    }
}

static bool abortable(const krn_msg *req) {
    json_t *stop = json_object_get(req->content, "stop_on_error");
    return strcmp(req->msg_type, "execute_request") == 0 && !json_is_false(stop);
}

static void serve_shell(const krn_msg *req, bool aborting) {
    krn_iopub_set_parent(req->header);
    krn_iopub_status(req->header, "busy");
    krn_answer ans = {.content = NULL};
    if (aborting && abortable(req)) {
        snprintf(ans.type, sizeof ans.type, "execute_reply");
        ans.content = json_pack("{s:s}", "status", "aborted");
    } else if (strcmp(req->msg_type, "shutdown_request") == 0) {
        shutdown_reply(srv.shell, req);
    } else if (strcmp(req->msg_type, "interrupt_request") == 0) {
        snprintf(ans.type, sizeof ans.type, "interrupt_reply");
        ans.content = json_pack("{s:s}", "status", "ok");
    } else {
        krn_shell_serve(req, &ans);
    }
    msg_list queued = {NULL, 0, 0};
    if (ans.abort_queue && !aborting) set_aside_queued(&queued);
    krn_iopub_flush();
    if (ans.content) reply(srv.shell, req, ans.type, ans.content);
    krn_iopub_status(req->header, "idle");
    for (size_t i = 0; i < queued.n; i++) {
        serve_shell(&queued.v[i], true);
        krn_msg_clear(&queued.v[i]);
    }
    free(queued.v);
}

static void shell_loop(void) {
    PyThreadState *ts = PyEval_SaveThread(); /* no GIL while waiting */
    while (!atomic_load(&srv.stop)) {
        zmq_pollitem_t items[] = {{srv.shell, 0, ZMQ_POLLIN, 0},
                                  {srv.stdin_sock, 0, ZMQ_POLLIN, 0}};
        int rc = zmq_poll(items, 2, POLL_MS);
        if (rc < 0 && errno != EINTR) break;
        if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) drop_stale_stdin();
        if (rc <= 0 || !(items[0].revents & ZMQ_POLLIN)) continue;
        krn_msg req;
        int got;
        while (!atomic_load(&srv.stop) && (got = next_request(srv.shell, "shell", &req)) >= 0) {
            if (got == 0) continue;
            PyEval_RestoreThread(ts);
            serve_shell(&req, false);
            ts = PyEval_SaveThread();
            krn_msg_clear(&req);
        }
    }
    PyEval_RestoreThread(ts);
}

/* ---- set-up ---- */

static void *open_socket(int type, const krn_conn *conn, int port, char *err, size_t errlen) {
    char endpoint[300];
    krn_conn_endpoint(conn, port, endpoint, sizeof endpoint);
    void *s = zmq_socket(srv.ctx, type);
    int linger = 1000, ipv6 = strchr(conn->ip, ':') != NULL, handover = 1;
    if (s) {
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(s, ZMQ_IPV6, &ipv6, sizeof ipv6);
    }
    /* A frontend's DEALERs are named by its session id, so a client that
     * reconnects with the same session (jupyter_client's km.client()) comes
     * back under the name of its closed connection. A ROUTER whose I/O thread
     * has not yet seen that connection go would ignore the new one -- and
     * every request on it, for good: the new connection takes the name over. */
    if (s && type == ZMQ_ROUTER) zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &handover, sizeof handover);
    if (!s || zmq_bind(s, endpoint)) {
        snprintf(err, errlen, "cannot bind %s: %s", endpoint, zmq_strerror(errno));
        if (s) zmq_close(s);
        return NULL;
    }
    return s;
}

int krn_server_run(const krn_conn *conn) {
    char err[512];
    srv.main_thread = pthread_self();
    srv.parent_pid = getppid();
    srv.signer = krn_signer_new(conn->scheme, conn->key, conn->keylen, err, sizeof err);
    if (!srv.signer) {
        krn_log(KRN_LOG_ERROR, "%s", err);
        return 1;
    }
    krn_uuid4(srv.session.session);
    struct passwd *pw = getpwuid(getuid());
    srv.session.username = pw && pw->pw_name ? pw->pw_name : "kernel";
    srv.session.signer = srv.signer;

    /* Only the main thread takes SIGINT: every thread made from here on,
     * ZeroMQ's own included, inherits a mask that blocks it. */
    sigset_t sigint, old;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigint, &old);

    int status = 1;
    char iopub_ep[300];
    krn_conn_endpoint(conn, conn->iopub_port, iopub_ep, sizeof iopub_ep);
    srv.ctx = zmq_ctx_new();
    if (!srv.ctx ||
        !(srv.shell = open_socket(ZMQ_ROUTER, conn, conn->shell_port, err, sizeof err)) ||
        !(srv.control = open_socket(ZMQ_ROUTER, conn, conn->control_port, err, sizeof err)) ||
        !(srv.stdin_sock = open_socket(ZMQ_ROUTER, conn, conn->stdin_port, err, sizeof err)) ||
        !(srv.hb = open_socket(ZMQ_REP, conn, conn->hb_port, err, sizeof err)) ||
        krn_iopub_start(srv.ctx, iopub_ep, &srv.session, err, sizeof err) ||
        krn_iopub_capture_fds(err, sizeof err) || krn_py_init(&interpreter_io, err, sizeof err)) {
        krn_log(KRN_LOG_ERROR, "%s", err);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        goto teardown;
    }
    krn_shell_init();
    pthread_create(&srv.hb_thread, NULL, heartbeat_main, NULL);
    pthread_create(&srv.control_thread, NULL, control_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    krn_iopub_status(NULL, "starting");
    krn_log(KRN_LOG_INFO, "ready: Python %s, session %s", krn_py_version(), srv.session.session);
    shell_loop();
    status = 0;

    pthread_join(srv.control_thread, NULL); /* its last status goes out before IOPub stops */
    krn_iopub_stop();
    zmq_ctx_shutdown(srv.ctx); /* ends the heartbeat's blocking receive */
    pthread_join(srv.hb_thread, NULL);
    krn_py_finalize();
teardown:
    krn_iopub_stop();
    void *socks[] = {srv.shell, srv.control, srv.stdin_sock, srv.hb};
    for (size_t i = 0; i < 4; i++)
        if (socks[i]) zmq_close(socks[i]);
    if (srv.ctx) zmq_ctx_term(srv.ctx);
    krn_history_free();
    krn_signer_free(srv.signer);
    return status;
}
