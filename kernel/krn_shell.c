/* krn_shell: what each shell request is answered, and execution counting
 * (krn_shell.h). */
#include "krn_shell.h"

#include <Python.h>
#include <string.h>

#include "config.h"
#include "krn_history.h"
#include "krn_iopub.h"
#include "krn_log.h"
#include "krn_py.h"
#include "krn_pymod.h"

static json_t *kernel_info;
static int execution_count = 1; /* the number the next stored cell gets */

void krn_shell_init(void) {
    char banner[1024];
    snprintf(banner, sizeof banner,
             "Python %s\noffload %s -- a Jupyter kernel in C for heterogeneous Python.\n"
             "obj? shows help, %%lsmagic lists the magics.",
             krn_py_sys_version(), PACKAGE_VERSION);
    kernel_info = json_pack(
        "{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:i}, s:s}, s:s, s:b, s:["
        "{s:s, s:s}, {s:s, s:s}]}",
        "status", "ok", "protocol_version", KRN_PROTOCOL_VERSION, "implementation", "offload",
        "implementation_version", PACKAGE_VERSION, "language_info", "name", "python", "version",
        krn_py_version(), "mimetype", "text/x-python", "file_extension", ".py", "pygments_lexer",
        "ipython3", "codemirror_mode", "name", "ipython", "version", 3, "nbconvert_exporter",
        "python", "banner", banner, "debugger", 0, "help_links", "text", "Python Reference", "url",
        "https://docs.python.org/3/", "text", "offload", "url",
        "https://github.com/offload/offload");
}

json_t *krn_shell_kernel_info(void) { return json_deep_copy(kernel_info); }

static bool flag(const json_t *content, const char *key, bool fallback) {
    json_t *v = json_object_get(content, key);
    return json_is_boolean(v) ? json_is_true(v) : fallback;
}

static void answer(krn_answer *out, const char *type, json_t *content) {
    snprintf(out->type, sizeof out->type, "%s", type);
    out->content = content;
}

static void execute(const krn_msg *req, krn_answer *out) {
    json_t *code = json_object_get(req->content, "code");
    if (!json_is_string(code)) {
        answer(out, "execute_reply",
               json_pack("{s:s, s:s, s:s, s:[], s:i}", "status", "error", "ename", "ValueError",
                         "evalue", "execute_request needs a string 'code'", "traceback",
                         "execution_count", execution_count - 1));
        return;
    }
    bool silent = flag(req->content, "silent", false);
    krn_exec_request run = {
        .code = json_string_value(code),
        .count = execution_count,
        .silent = silent,
        .store_history = !silent && flag(req->content, "store_history", true),
    };
    if (!silent)
        krn_iopub_publish("execute_input",
                          json_pack("{s:s, s:i}", "code", run.code, "execution_count", run.count));
    krn_pymod_set_request(req, flag(req->content, "allow_stdin", true));
    krn_iopub_set_silent(silent);
    krn_exec_result res;
    krn_py_execute(&run, &res);
    krn_iopub_flush(); /* C stdio output of a silent cell is dropped too */
    krn_iopub_set_silent(false);
    krn_pymod_set_request(NULL, false);
    if (run.store_history) execution_count++;

    json_t *content;
    if (res.ok) {
        json_t *exprs = json_object_get(req->content, "user_expressions");
        content =
            json_pack("{s:s, s:o, s:o}", "status", "ok", "payload", res.payload, "user_expressions",
                      json_is_object(exprs) ? krn_py_user_expressions(exprs) : json_object());
    } else {
        json_decref(res.payload);
        if (!silent && !res.error_shown) krn_iopub_publish("error", json_deep_copy(res.error));
        content = res.error;
        json_object_set_new(content, "status", json_string("error"));
        json_object_set_new(content, "payload", json_array());
        json_object_set_new(content, "user_expressions", json_object());
    }
    json_object_set_new(content, "execution_count", json_integer(execution_count - 1));
    answer(out, "execute_reply", content);
    out->abort_queue = !res.ok && flag(req->content, "stop_on_error", true);
}

static int int_field(const json_t *content, const char *key, int fallback) {
    json_t *v = json_object_get(content, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : fallback;
}

static const char *code_field(const json_t *content) {
    json_t *v = json_object_get(content, "code");
    return json_is_string(v) ? json_string_value(v) : "";
}

void krn_shell_serve(const krn_msg *req, krn_answer *out) {
    const char *t = req->msg_type;
    const json_t *c = req->content;
    memset(out, 0, sizeof *out);
    if (strcmp(t, "execute_request") == 0) {
        execute(req, out);
    } else if (strcmp(t, "kernel_info_request") == 0) {
        answer(out, "kernel_info_reply", krn_shell_kernel_info());
    } else if (strcmp(t, "complete_request") == 0) {
        const char *code = code_field(c);
        answer(out, "complete_reply",
               krn_py_complete(code, int_field(c, "cursor_pos", (int)strlen(code))));
    } else if (strcmp(t, "inspect_request") == 0) {
        const char *code = code_field(c);
        answer(out, "inspect_reply",
               krn_py_inspect(code, int_field(c, "cursor_pos", (int)strlen(code)),
                              int_field(c, "detail_level", 0)));
    } else if (strcmp(t, "is_complete_request") == 0) {
        answer(out, "is_complete_reply", krn_py_is_complete(code_field(c)));
    } else if (strcmp(t, "history_request") == 0) {
        answer(out, "history_reply", krn_history_reply(c));
    } else if (strcmp(t, "comm_info_request") == 0) {
        answer(out, "comm_info_reply",
               json_pack("{s:s, s:o}", "status", "ok", "comms", krn_py_comm_info(c)));
    } else if (strcmp(t, "comm_open") == 0 || strcmp(t, "comm_msg") == 0 ||
               strcmp(t, "comm_close") == 0) {
        krn_pymod_set_request(req, false);
        bool handled = krn_py_comm(req);
        krn_pymod_set_request(NULL, false);
        json_t *id = json_object_get(c, "comm_id");
        /* No comm machinery loaded: close what the frontend opens so it does not wait. */
        if (!handled && strcmp(t, "comm_open") == 0 && json_is_string(id))
            krn_iopub_publish("comm_close", json_pack("{s:O, s:{}}", "comm_id", id, "data"));
    } else {
        krn_shell_unknown(req, "shell", out);
    }
}

void krn_shell_unknown(const krn_msg *req, const char *channel, krn_answer *out) {
    const char *t = req->msg_type;
    krn_log(KRN_LOG_WARN, "%s: unknown message type '%s'", channel, t);
    if (krn_reply_type(t, out->type, sizeof out->type)) /* someone waits for a reply */
        out->content = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename",
                                 "UnknownMessageType", "evalue", t, "traceback");
}
