/* krn_shell: answers to the shell channel's requests -- kernel_info,
 * execute, complete, inspect, is_complete, history, comm_info, comm_open.
 * The server owns sockets and busy/idle; this module owns execution counting
 * and what each reply says. Main thread, GIL held (kernel_info: any thread). */
#ifndef KRN_SHELL_H
#define KRN_SHELL_H

#include <stdbool.h>

#include "krn_wire.h"

/* What to answer: the server sends it (content may be NULL: no reply). */
typedef struct {
    char type[64];
    json_t *content;  /* owned until sent */
    bool abort_queue; /* an execute failed with stop_on_error */
} krn_answer;

/* After krn_py_init: fixes the kernel_info content. */
void krn_shell_init(void);
/* A new copy of the kernel_info_reply content. */
json_t *krn_shell_kernel_info(void);
/* Serves one request and says what to reply. The server sends the reply
 * itself so that, after a failed execute, it can first set aside the
 * requests already queued (those, and only those, are aborted). */
void krn_shell_serve(const krn_msg *req, krn_answer *out);

/* Logs an unknown message type; a *_request gets an error *_reply. */
void krn_shell_unknown(const krn_msg *req, const char *channel, krn_answer *out);

#endif
