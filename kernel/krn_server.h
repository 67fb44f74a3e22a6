/* krn_server: the Jupyter kernel's sockets, threads and request loop.
 *
 * Threads: the main thread serves shell and stdin and runs Python; the
 * control thread answers control requests (interrupt, shutdown, kernel_info)
 * even while a cell runs; the heartbeat thread echoes pings and never touches
 * Python; the IOPub thread (krn_iopub) publishes. Only main.c starts it. It
 * hands the interpreter (krn_py) its publish and stdin functions (krn_io.h). */
#ifndef KRN_SERVER_H
#define KRN_SERVER_H

#include <stdbool.h>

#include "krn_conn.h"
#include "krn_wire.h"

/* Runs until shutdown; returns the process exit status. */
int krn_server_run(const krn_conn *conn);

#endif
