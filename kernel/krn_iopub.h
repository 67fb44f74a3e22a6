/* krn_iopub: the IOPub channel and the output streams of running code.
 *
 * One thread owns the XPUB socket. Every other thread hands it finished
 * messages through one inproc PUSH socket, taken under a lock, so IOPub
 * order is the order in which threads published. The XPUB socket answers
 * each new subscription with iopub_welcome (JEP 65, protocol 5.4).
 * Both queues are bounded (1000 messages, ipykernel's high-water mark): a
 * subscriber that stops reading loses messages, as with PUB, instead of
 * growing the kernel; publishing never blocks (a full hand-off drops the
 * message and says so at debug level).
 *
 * Stream text -- Python's sys.stdout/sys.stderr and whatever C code writes
 * to file descriptors 1 and 2 (captured through pipes) -- is batched into one
 * run per stream switch and sent every 50 ms, when a run passes 64 KiB, and
 * on krn_iopub_flush, which the kernel calls before displays and replies.
 * Any thread may call any function here after krn_iopub_start. */
#ifndef KRN_IOPUB_H
#define KRN_IOPUB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "krn_io.h"
#include "krn_wire.h"

int krn_iopub_start(void *zmq_ctx, const char *endpoint, const krn_session *session, char *err,
                    size_t errlen);
/* Sends what is pending, stops the thread, closes the sockets. */
void krn_iopub_stop(void);

/* Point fds 1 and 2 at pipes read by the IOPub thread. */
int krn_iopub_capture_fds(char *err, size_t errlen);

/* Header of the request whose output follows (copied; NULL for none).
 * Pending stream text is flushed under the previous parent first. */
void krn_iopub_set_parent(const json_t *parent);

/* While a silent execute runs, its output (streams, displays, results) is
 * dropped; status messages still go out. */
void krn_iopub_set_silent(bool silent);

/* Publish under the current parent; steals content (and metadata: NULL = {}). */
void krn_iopub_publish(const char *msg_type, json_t *content);
void krn_iopub_publish_md(const char *msg_type, json_t *metadata, json_t *content);
/* Publish under an explicit parent (for the control thread); steals content. */
void krn_iopub_publish_for(const json_t *parent, const char *msg_type, json_t *content);
void krn_iopub_status(const json_t *parent, const char *state);

/* Append stream text (bytes; invalid UTF-8 is replaced when sent). */
void krn_iopub_write(int stream, const char *text, size_t len);
/* Flush C stdio and the capture pipes, then send pending stream text. */
void krn_iopub_flush(void);

#endif
