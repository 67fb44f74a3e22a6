/* krn_shell: answers to the shell channel's requests -- kernel_info,
 * execute, complete, inspect, is_complete, history, comm_info, comm_open.
 * The server owns sockets and busy/idle; this module owns execution counting
 * and what each reply says. Main thread, GIL held (kernel_info: any thread). */
#ifndef KRN_SHELL_H
#define KRN_SHELL_H

#include <stdbool.h>

#include "krn_wire.h"

typedef void (*krn_reply_fn)(void *sock, const krn_msg *req, const char *reply_type,
                             json_t *content);

/* After krn_py_init: fixes the kernel_info content. */
void krn_shell_init(void);
/* A new copy of the kernel_info_reply content. */
json_t *krn_shell_kernel_info(void);
/* Serves one request; true when it was an execute that failed with
 * stop_on_error, so the queued execute_requests must be aborted. */
bool krn_shell_serve(const krn_msg *req, void *sock, krn_reply_fn reply);

/* Logs an unknown message type; a *_request gets an error *_reply. */
void krn_shell_unknown(const krn_msg *req, void *sock, krn_reply_fn reply, const char *channel);

#endif
