/* krn_conn: reads the connection file into a krn_conn (krn_conn.h). */
#include "krn_conn.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int get_port(json_t *root, const char *name, int *port, char *err, size_t errlen) {
    json_t *v = json_object_get(root, name);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535) {
        snprintf(err, errlen, "connection file: '%s' must be a port number", name);
        return -1;
    }
    *port = (int)json_integer_value(v);
    return 0;
}

static void copy_field(json_t *root, const char *name, const char *fallback, char *out, size_t n) {
    json_t *v = json_object_get(root, name);
    snprintf(out, n, "%s", json_is_string(v) ? json_string_value(v) : fallback);
}

int krn_conn_load(const char *path, krn_conn *conn, char *err, size_t errlen) {
    memset(conn, 0, sizeof *conn);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        snprintf(err, errlen, "cannot read connection file %s: %s", path, jerr.text);
        return -1;
    }
    int rc = -1;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "connection file %s is not a JSON object", path);
        goto done;
    }
    copy_field(root, "transport", "tcp", conn->transport, sizeof conn->transport);
    copy_field(root, "ip", "127.0.0.1", conn->ip, sizeof conn->ip);
    copy_field(root, "signature_scheme", "hmac-sha256", conn->scheme, sizeof conn->scheme);
    if (strcmp(conn->transport, "tcp") && strcmp(conn->transport, "ipc")) {
        snprintf(err, errlen, "connection file: unknown transport '%s'", conn->transport);
        goto done;
    }
    if (get_port(root, "shell_port", &conn->shell_port, err, errlen) ||
        get_port(root, "iopub_port", &conn->iopub_port, err, errlen) ||
        get_port(root, "stdin_port", &conn->stdin_port, err, errlen) ||
        get_port(root, "control_port", &conn->control_port, err, errlen) ||
        get_port(root, "hb_port", &conn->hb_port, err, errlen))
        goto done;
    json_t *key = json_object_get(root, "key");
    const char *k = json_is_string(key) ? json_string_value(key) : "";
    conn->keylen = json_is_string(key) ? json_string_length(key) : 0;
    conn->key = malloc(conn->keylen + 1);
    if (!conn->key) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    memcpy(conn->key, k, conn->keylen + 1);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

void krn_conn_endpoint(const krn_conn *conn, int port, char *out, size_t outlen) {
    if (strcmp(conn->transport, "ipc") == 0)
        snprintf(out, outlen, "ipc://%s-%d", conn->ip, port);
    else if (strchr(conn->ip, ':')) /* IPv6 literal */
        snprintf(out, outlen, "tcp://[%s]:%d", conn->ip, port);
    else
        snprintf(out, outlen, "tcp://%s:%d", conn->ip, port);
}

void krn_conn_clear(krn_conn *conn) {
    free(conn->key);
    conn->key = NULL;
}
