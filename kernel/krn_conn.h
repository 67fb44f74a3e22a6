/* krn_conn: the connection file a Jupyter client writes for the kernel
 * (transport, ip, five ports, key, signature_scheme). Read once by main. */
#ifndef KRN_CONN_H
#define KRN_CONN_H

#include <stddef.h>

typedef struct {
    char transport[8]; /* tcp | ipc */
    char ip[256];
    int shell_port, iopub_port, stdin_port, control_port, hb_port;
    char *key; /* owned; may be "" */
    size_t keylen;
    char scheme[32];
} krn_conn;

int krn_conn_load(const char *path, krn_conn *conn, char *err, size_t errlen);
/* "tcp://127.0.0.1:5555" or "ipc://ip-5555" as jupyter_client builds them. */
void krn_conn_endpoint(const krn_conn *conn, int port, char *out, size_t outlen);
void krn_conn_clear(krn_conn *conn);

#endif
