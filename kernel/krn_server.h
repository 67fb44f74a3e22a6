/* krn_server: the Jupyter kernel's sockets, threads and request loop.
 *
 * Threads: the main thread serves shell and stdin and runs Python; the
 * control thread answers control requests (interrupt, shutdown, kernel_info)
 * even while a cell runs; the heartbeat thread echoes pings and never touches
 * Python; the IOPub thread (krn_iopub) publishes. Only main.c starts it; the
 * stdin functions are for krn_py's input() on the main thread. */
#ifndef KRN_SERVER_H
#define KRN_SERVER_H

#include <stdbool.h>

#include "krn_conn.h"
#include "krn_wire.h"

/* Runs until shutdown; returns the process exit status. */
int krn_server_run(const krn_conn *conn);

/* Sends input_request for the given request. 0 or -1. */
int krn_stdin_request(const krn_msg *parent, const char *prompt, bool password);
/* Waits up to timeout_ms for input_reply: 1 with *value (malloc'd), 0 on
 * timeout or signal, -1 on error. Call without the GIL. */
int krn_stdin_reply(int timeout_ms, char **value);

#endif
