/* krn_wire: the Jupyter wire format (messaging protocol 5.4) over multipart frames.
 *
 *   [identities...] "<IDS|MSG>" signature header parent_header metadata content [buffers...]
 *
 * Parsing checks the signature over the exact received bytes before any JSON
 * is read; encoding builds the frames of a reply or broadcast with a fresh
 * header. Pure data in, data out: no sockets here, so every part is unit-tested
 * (tests/unit/test_wire.c). Any thread may call. */
#ifndef KRN_WIRE_H
#define KRN_WIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "krn_sign.h"

#define KRN_PROTOCOL_VERSION "5.4"
#define KRN_DELIMITER "<IDS|MSG>"

/* Who we are on the wire: one per process. */
typedef struct {
    char session[37];     /* UUID4, fixed for the process */
    const char *username; /* borrowed */
    const krn_signer *signer;
} krn_session;

/* A parsed request. Owns every field; release with krn_msg_clear. */
typedef struct {
    krn_bytes *ids; /* routing identities, copied */
    size_t nids;
    json_t *header, *parent, *metadata, *content;
    const char *msg_type; /* borrowed from header */
    const char *msg_id;   /* borrowed from header */
    size_t nbuffers;      /* extra frames after content (kept only as a count) */
} krn_msg;

typedef enum {
    KRN_WIRE_OK = 0,
    KRN_WIRE_NO_DELIMITER,   /* no "<IDS|MSG>" frame */
    KRN_WIRE_MISSING_FRAMES, /* fewer than five frames after the delimiter */
    KRN_WIRE_BAD_SIGNATURE,  /* missing or wrong HMAC: drop, never act on it */
    KRN_WIRE_BAD_HEADER,     /* header not a JSON object with string msg_type/msg_id */
    KRN_WIRE_BAD_JSON,       /* header fine (so a reply is possible), another part is not */
} krn_wire_status;

/* Outgoing frames; each buffer is owned. */
typedef struct {
    size_t n;
    char **data;
    size_t *len;
} krn_frames;

krn_wire_status krn_wire_parse(const krn_bytes *frames, size_t nframes, const krn_signer *signer,
                               krn_msg *out, char *err, size_t errlen);
void krn_msg_clear(krn_msg *msg);

/* New header object: fresh msg_id, session, username, UTC date, msg_type, version. */
json_t *krn_wire_header(const krn_session *session, const char *msg_type);

/* Frames for one message: ids, delimiter, signature, header, parent (NULL = {}),
 * metadata (NULL = {}), content. Steals metadata and content. 0 or -1 (no memory). */
int krn_wire_encode(const krn_session *session, const krn_bytes *ids, size_t nids,
                    const char *msg_type, const json_t *parent, json_t *metadata, json_t *content,
                    krn_frames *out);
void krn_frames_free(krn_frames *frames);

/* "x_request" -> "x_reply"; false (nothing written) for types that get no reply. */
bool krn_reply_type(const char *msg_type, char *out, size_t outlen);

void krn_uuid4(char out[37]);
/* ISO-8601 UTC with six fractional digits: 2026-11-22T10:20:30.123456Z */
void krn_iso_now(char out[32]);

#endif
