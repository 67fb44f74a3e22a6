/* krn_wire: parsing and encoding the wire format's frames (krn_wire.h). */
#include "krn_wire.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *json_string_field(const json_t *obj, const char *key) {
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static json_t *load_object(krn_bytes frame, char *err, size_t errlen, const char *what) {
    json_error_t jerr;
    json_t *v = json_loadb(frame.data, frame.len, JSON_DECODE_ANY, &jerr);
    if (!v) {
        snprintf(err, errlen, "%s is not valid JSON: %s (line %d, column %d)", what, jerr.text,
                 jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(v)) {
        snprintf(err, errlen, "%s is not a JSON object", what);
        json_decref(v);
        return NULL;
    }
    return v;
}

krn_wire_status krn_wire_parse(const krn_bytes *frames, size_t nframes, const krn_signer *signer,
                               krn_msg *out, char *err, size_t errlen) {
    static const size_t delim_len = sizeof KRN_DELIMITER - 1;
    memset(out, 0, sizeof *out);
    size_t d = 0;
    while (d < nframes &&
           !(frames[d].len == delim_len && memcmp(frames[d].data, KRN_DELIMITER, delim_len) == 0))
        d++;
    if (d == nframes) {
        snprintf(err, errlen, "no <IDS|MSG> delimiter among %zu frames", nframes);
        return KRN_WIRE_NO_DELIMITER;
    }
    if (nframes - d < 6) {
        snprintf(err, errlen, "%zu frames after the delimiter, need signature and four parts",
                 nframes - d - 1);
        return KRN_WIRE_MISSING_FRAMES;
    }
    const krn_bytes *sig = &frames[d + 1], *parts = &frames[d + 2];
    if (!krn_verify(signer, parts, sig->data, sig->len)) {
        snprintf(err, errlen, "%s signature", sig->len ? "wrong" : "missing");
        return KRN_WIRE_BAD_SIGNATURE;
    }

    out->header = load_object(parts[0], err, errlen, "header");
    if (!out->header) return KRN_WIRE_BAD_HEADER;
    out->msg_type = json_string_field(out->header, "msg_type");
    out->msg_id = json_string_field(out->header, "msg_id");
    if (!out->msg_type || !out->msg_id) {
        snprintf(err, errlen, "header lacks a string msg_type or msg_id");
        krn_msg_clear(out);
        return KRN_WIRE_BAD_HEADER;
    }
    out->ids = calloc(d ? d : 1, sizeof *out->ids);
    for (size_t i = 0; out->ids && i < d; i++) {
        void *copy = malloc(frames[i].len ? frames[i].len : 1);
        if (!copy) break;
        memcpy(copy, frames[i].data, frames[i].len);
        out->ids[i] = (krn_bytes){copy, frames[i].len};
        out->nids = i + 1;
    }
    out->nbuffers = nframes - d - 6;
    if (!(out->parent = load_object(parts[1], err, errlen, "parent_header")) ||
        !(out->metadata = load_object(parts[2], err, errlen, "metadata")) ||
        !(out->content = load_object(parts[3], err, errlen, "content")))
        return KRN_WIRE_BAD_JSON;
    return KRN_WIRE_OK;
}

void krn_msg_clear(krn_msg *msg) {
    for (size_t i = 0; i < msg->nids; i++) free((void *)msg->ids[i].data);
    free(msg->ids);
    json_decref(msg->header);
    json_decref(msg->parent);
    json_decref(msg->metadata);
    json_decref(msg->content);
    memset(msg, 0, sizeof *msg);
}

bool krn_reply_type(const char *msg_type, char *out, size_t outlen) {
    size_t n = strlen(msg_type);
    if (n <= 8 || strcmp(msg_type + n - 8, "_request") != 0 || n - 8 + 7 >= outlen) return false;
    snprintf(out, outlen, "%.*s_reply", (int)(n - 8), msg_type);
    return true;
}

void krn_uuid4(char out[37]) {
    unsigned char b[16];
    if (RAND_bytes(b, sizeof b) != 1) { /* never expected; still unique enough for ids */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        for (int i = 0; i < 16; i++) b[i] = (unsigned char)((ts.tv_nsec >> (i % 8)) ^ rand());
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

void krn_iso_now(char out[32]) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    /* Not strftime: glibc's calls tzset(), which writes the zone strings that
     * Python's time module reads on other threads without glibc's lock. The
     * modulos only tell the compiler each field's width. */
    snprintf(out, 32, "%04u-%02u-%02uT%02u:%02u:%02u.%06uZ", (unsigned)(tm.tm_year + 1900) % 10000u,
             (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
             (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
             (unsigned)(ts.tv_nsec / 1000) % 1000000u);
}

json_t *krn_wire_header(const krn_session *session, const char *msg_type) {
    char id[37], date[32];
    krn_uuid4(id);
    krn_iso_now(date);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msg_id", id, "session", session->session,
                     "username", session->username ? session->username : "kernel", "date", date,
                     "msg_type", msg_type, "version", KRN_PROTOCOL_VERSION);
}

static int push_frame(krn_frames *f, char *data, size_t len) {
    if (!data) return -1;
    f->data[f->n] = data;
    f->len[f->n++] = len;
    return 0;
}

static char *copy_bytes(const void *src, size_t len) {
    char *p = malloc(len ? len : 1);
    if (p) memcpy(p, src, len);
    return p;
}

int krn_wire_encode(const krn_session *session, const krn_bytes *ids, size_t nids,
                    const char *msg_type, const json_t *parent, json_t *metadata, json_t *content,
                    krn_frames *out) {
    memset(out, 0, sizeof *out);
    size_t cap = nids + 6;
    out->data = calloc(cap, sizeof *out->data);
    out->len = calloc(cap, sizeof *out->len);
    json_t *header = krn_wire_header(session, msg_type);
    if (!metadata) metadata = json_object();
    char *parts[4] = {NULL, NULL, NULL, NULL};
    int rc = -1;
    if (!out->data || !out->len || !header || !metadata || !content) goto done;
    const size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(17);
    parts[0] = json_dumps(header, flags);
    parts[1] = parent ? json_dumps(parent, flags) : strdup("{}");
    parts[2] = json_dumps(metadata, flags);
    parts[3] = json_dumps(content, flags);
    if (!parts[0] || !parts[1] || !parts[2] || !parts[3]) goto done;
    krn_bytes signed_parts[4];
    for (int i = 0; i < 4; i++) signed_parts[i] = (krn_bytes){parts[i], strlen(parts[i])};
    char sig[KRN_SIG_HEX_LEN + 1];
    krn_sign(session->signer, signed_parts, sig);

    for (size_t i = 0; i < nids; i++)
        if (push_frame(out, copy_bytes(ids[i].data, ids[i].len), ids[i].len)) goto done;
    if (push_frame(out, copy_bytes(KRN_DELIMITER, sizeof KRN_DELIMITER - 1),
                   sizeof KRN_DELIMITER - 1) ||
        push_frame(out, copy_bytes(sig, strlen(sig)), strlen(sig)))
        goto done;
    for (int i = 0; i < 4; i++) {
        push_frame(out, parts[i], signed_parts[i].len);
        parts[i] = NULL;
    }
    rc = 0;
done:
    for (int i = 0; i < 4; i++) free(parts[i]);
    json_decref(header);
    json_decref(metadata);
    json_decref(content);
    if (rc) krn_frames_free(out);
    return rc;
}

void krn_frames_free(krn_frames *f) {
    for (size_t i = 0; i < f->n; i++) free(f->data[i]);
    free(f->data);
    free(f->len);
    memset(f, 0, sizeof *f);
}
