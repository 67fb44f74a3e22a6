/* krn_io: what the interpreter side (krn_py, krn_pymod) needs from the server
 * side -- publishing on IOPub and input() over the stdin channel -- handed in
 * by the server when it starts the interpreter, as xeus hands its
 * interpreter a publisher and stdin callbacks. So no interpreter file calls
 * up into the server or names its sockets. Header only. */
#ifndef KRN_IO_H
#define KRN_IO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "krn_wire.h"

enum { KRN_STDOUT = 1, KRN_STDERR = 2 };

typedef struct {
    /* Under the request being served; steals metadata (NULL = {}) and content. */
    void (*publish)(const char *msg_type, json_t *metadata, json_t *content);
    /* Stream text (bytes; invalid UTF-8 is replaced when sent). */
    void (*write)(int stream, const char *text, size_t len);
    /* Sends pending stream text, before displays, replies and prompts. */
    void (*flush)(void);
    /* Sends input_request under parent: 0 or -1. */
    int (*stdin_request)(const krn_msg *parent, const char *prompt, bool password);
    /* Waits up to timeout_ms for input_reply: 1 with *value (malloc'd), 0 on
     * timeout or signal, -1 on error. Called without the GIL. */
    int (*stdin_reply)(int timeout_ms, char **value);
} krn_io;

#endif
