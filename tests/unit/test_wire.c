/* Unit tests for kernel/krn_sign.h and kernel/krn_wire.h: signatures, parsing of
 * multipart messages (good and bad), encoding, ids and dates. No sockets.
 *
 * Prints "N passed, M failed" as its last line; exits non-zero on any failure. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "krn_sign.h"
#include "krn_wire.h"
#include "unit.h"

static krn_bytes B(const char *s) { return (krn_bytes){s, strlen(s)}; }

static const char KEY[] = "secret-key";
static const char HDR[] = "{\"msg_id\":\"1\",\"msg_type\":\"kernel_info_request\"}";
/* hmac.new(b"secret-key", HDR + b"{}" + b"{}" + b"{}", hashlib.sha256).hexdigest() */
static const char HDR_SIG[] = "d24613c901272087168eb7a17b371d2f54d14044dca08737846f4baf86191b6a";

static krn_signer *new_signer(const char *key) {
    char err[256] = "";
    krn_signer *s = krn_signer_new(key[0] ? "hmac-sha256" : "", key, strlen(key), err, sizeof err);
    if (!s) fprintf(stderr, "krn_signer_new failed: %s\n", err);
    return s;
}

/* ------------------------------------------------------------------ signing */

static void test_sign_known_vectors(void) {
    krn_signer *s = new_signer(KEY);
    CHECK(s != NULL);
    if (!s) return;
    CHECK(krn_signer_enabled(s));
    krn_bytes parts[4] = {B(HDR), B("{}"), B("{}"), B("{}")};
    char sig[KRN_SIG_HEX_LEN + 1];
    memset(sig, 'x', sizeof sig);
    krn_sign(s, parts, sig);
    CHECK_STR(sig, HDR_SIG);
    CHECK(strlen(sig) == KRN_SIG_HEX_LEN);
    krn_signer_free(s);

    /* RFC 4231 test case 2, message split over the four parts. */
    char err[256] = "";
    krn_signer *jefe = krn_signer_new("hmac-sha256", "Jefe", 4, err, sizeof err);
    CHECK(jefe != NULL);
    if (!jefe) return;
    krn_bytes rfc[4] = {B("what do ya "), B("want "), B("for nothing?"), B("")};
    krn_sign(jefe, rfc, sig);
    CHECK_STR(sig, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    krn_signer_free(jefe);
}

static void test_sign_covers_parts_in_order(void) {
    /* HMAC covers the concatenation in order: swapping two parts changes it. */
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    krn_bytes a[4] = {B(HDR), B("{}"), B("{}"), B("{\"a\":1}")};
    krn_bytes b[4] = {B(HDR), B("{\"a\":1}"), B("{}"), B("{}")};
    char sa[KRN_SIG_HEX_LEN + 1], sb[KRN_SIG_HEX_LEN + 1];
    krn_sign(s, a, sa);
    krn_sign(s, b, sb);
    CHECK(strlen(sa) == KRN_SIG_HEX_LEN && strlen(sb) == KRN_SIG_HEX_LEN);
    CHECK(strcmp(sa, sb) != 0);
    for (int i = 0; i < KRN_SIG_HEX_LEN; i++)
        CHECK(isxdigit((unsigned char)sa[i]) && !isupper((unsigned char)sa[i]));
    krn_signer_free(s);
}

static void test_verify(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    krn_bytes parts[4] = {B(HDR), B("{}"), B("{}"), B("{}")};
    CHECK(krn_verify(s, parts, HDR_SIG, strlen(HDR_SIG)));

    char wrong[KRN_SIG_HEX_LEN + 1];
    strcpy(wrong, HDR_SIG);
    wrong[10] = wrong[10] == '0' ? '1' : '0';
    CHECK(!krn_verify(s, parts, wrong, strlen(wrong)));
    strcpy(wrong, HDR_SIG);
    wrong[KRN_SIG_HEX_LEN - 1] = wrong[KRN_SIG_HEX_LEN - 1] == 'a' ? 'b' : 'a';
    CHECK(!krn_verify(s, parts, wrong, strlen(wrong)));

    CHECK(!krn_verify(s, parts, "", 0));                        /* missing */
    CHECK(!krn_verify(s, parts, HDR_SIG, KRN_SIG_HEX_LEN - 1)); /* short prefix */
    CHECK(!krn_verify(s, parts, HDR_SIG, 10));                  /* shorter */
    char longer[KRN_SIG_HEX_LEN + 3];
    snprintf(longer, sizeof longer, "%s00", HDR_SIG);
    CHECK(!krn_verify(s, parts, longer, strlen(longer))); /* too long */

    /* Right signature, other content. */
    krn_bytes other[4] = {B(HDR), B("{}"), B("{}"), B("{\"code\":\"1\"}")};
    CHECK(!krn_verify(s, other, HDR_SIG, strlen(HDR_SIG)));

    /* Signed with another key. */
    krn_signer *s2 = new_signer("another-key");
    if (s2) {
        char sig2[KRN_SIG_HEX_LEN + 1];
        krn_sign(s2, parts, sig2);
        CHECK(strcmp(sig2, HDR_SIG) != 0);
        CHECK(!krn_verify(s, parts, sig2, strlen(sig2)));
        krn_signer_free(s2);
    } else {
        CHECK(0);
    }
    krn_signer_free(s);
}

static void test_empty_key_disables_signing(void) {
    char err[256] = "";
    krn_signer *s = krn_signer_new("", "", 0, err, sizeof err);
    CHECK(s != NULL);
    if (!s) return;
    CHECK(!krn_signer_enabled(s));
    krn_bytes parts[4] = {B(HDR), B("{}"), B("{}"), B("{}")};
    char sig[KRN_SIG_HEX_LEN + 1];
    memset(sig, 'x', sizeof sig);
    krn_sign(s, parts, sig);
    CHECK_STR(sig, "");
    CHECK(krn_verify(s, parts, "", 0));
    krn_signer_free(s);

    /* Empty key with the scheme named is also fine. */
    s = krn_signer_new("hmac-sha256", "", 0, err, sizeof err);
    CHECK(s != NULL);
    if (s) {
        CHECK(!krn_signer_enabled(s));
        krn_signer_free(s);
    }
}

static void test_unsupported_scheme(void) {
    char err[256] = "";
    krn_signer *s = krn_signer_new("hmac-md5", KEY, strlen(KEY), err, sizeof err);
    CHECK(s == NULL);
    CHECK(err[0] != '\0');
    krn_signer_free(s);
}

/* ------------------------------------------------------------------ parsing */

/* A signed message's frames, built by hand: ids..., delimiter, sig, 4 parts, buffers... */
typedef struct {
    krn_bytes f[16];
    size_t n;
    char sig[KRN_SIG_HEX_LEN + 1];
} raw_msg;

static void raw_build(raw_msg *m, const krn_signer *s, const char **ids, size_t nids,
                      const char *header, const char *parent, const char *metadata,
                      const char *content, const char **bufs, size_t nbufs) {
    m->n = 0;
    for (size_t i = 0; i < nids; i++) m->f[m->n++] = B(ids[i]);
    m->f[m->n++] = B(KRN_DELIMITER);
    krn_bytes parts[4] = {B(header), B(parent), B(metadata), B(content)};
    krn_sign(s, parts, m->sig);
    m->f[m->n++] = B(m->sig);
    for (int i = 0; i < 4; i++) m->f[m->n++] = parts[i];
    for (size_t i = 0; i < nbufs; i++) m->f[m->n++] = B(bufs[i]);
}

static const char EXEC_HDR[] =
    "{\"msg_id\":\"abc-123\",\"session\":\"s1\",\"username\":\"u\",\"date\":\"2024-01-01T00:00:00."
    "000000Z\",\"msg_type\":\"execute_request\",\"version\":\"5.4\"}";
static const char EXEC_CONTENT[] = "{\"code\":\"print(1)\",\"silent\":false}";

static void test_parse_well_formed(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    const char *ids[] = {"client-A", "router-B"};
    const char *bufs[] = {"raw-buffer-bytes"};
    raw_msg m;
    raw_build(&m, s, ids, 2, EXEC_HDR, "{\"msg_id\":\"parent-1\"}", "{\"k\":\"v\"}", EXEC_CONTENT,
              bufs, 1);
    krn_msg msg;
    char err[256] = "";
    krn_wire_status st = krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err);
    CHECK(st == KRN_WIRE_OK);
    if (st != KRN_WIRE_OK) {
        fprintf(stderr, "  parse error: %s\n", err);
        krn_msg_clear(&msg);
        krn_signer_free(s);
        return;
    }
    CHECK(msg.nids == 2);
    if (msg.nids == 2) {
        CHECK(msg.ids[0].len == strlen("client-A") &&
              memcmp(msg.ids[0].data, "client-A", msg.ids[0].len) == 0);
        CHECK(msg.ids[1].len == strlen("router-B") &&
              memcmp(msg.ids[1].data, "router-B", msg.ids[1].len) == 0);
        /* Identities are copies, not pointers into the frames. */
        CHECK(msg.ids[0].data != m.f[0].data);
    }
    CHECK_STR(msg.msg_type, "execute_request");
    CHECK_STR(msg.msg_id, "abc-123");
    CHECK(msg.nbuffers == 1);
    CHECK(json_is_object(msg.header));
    CHECK_STR(json_string_value(json_object_get(msg.parent, "msg_id")), "parent-1");
    CHECK_STR(json_string_value(json_object_get(msg.metadata, "k")), "v");
    CHECK_STR(json_string_value(json_object_get(msg.content, "code")), "print(1)");
    CHECK(json_is_false(json_object_get(msg.content, "silent")));
    krn_msg_clear(&msg);
    CHECK(msg.header == NULL && msg.content == NULL && msg.ids == NULL && msg.nids == 0);
    krn_signer_free(s);
}

static void test_parse_no_identities_no_buffers(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    raw_msg m;
    raw_build(&m, s, NULL, 0, EXEC_HDR, "{}", "{}", EXEC_CONTENT, NULL, 0);
    krn_msg msg;
    char err[256] = "";
    CHECK(krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err) == KRN_WIRE_OK);
    CHECK(msg.nids == 0);
    CHECK(msg.nbuffers == 0);
    CHECK_STR(msg.msg_type, "execute_request");
    krn_msg_clear(&msg);
    krn_signer_free(s);
}

static void test_parse_no_delimiter(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    krn_bytes f[] = {B("id"), B("<IDS|MSG"), B(HDR_SIG), B(HDR), B("{}"), B("{}"), B("{}")};
    krn_msg msg;
    char err[256] = "";
    CHECK(krn_wire_parse(f, 7, s, &msg, err, sizeof err) == KRN_WIRE_NO_DELIMITER);
    CHECK(err[0] != '\0');
    krn_msg_clear(&msg);
    CHECK(krn_wire_parse(f, 0, s, &msg, err, sizeof err) == KRN_WIRE_NO_DELIMITER);
    krn_msg_clear(&msg);
    krn_signer_free(s);
}

static void test_parse_too_few_frames(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    krn_bytes f[] = {B("id"), B(KRN_DELIMITER), B(HDR_SIG), B(HDR), B("{}"), B("{}"), B("{}")};
    krn_msg msg;
    char err[256];
    /* The full message parses... */
    err[0] = '\0';
    CHECK(krn_wire_parse(f, 7, s, &msg, err, sizeof err) == KRN_WIRE_OK);
    krn_msg_clear(&msg);
    /* ...and every truncation of it is MISSING_FRAMES (content, metadata, ..., signature). */
    for (size_t n = 2; n < 7; n++) {
        err[0] = '\0';
        krn_wire_status st = krn_wire_parse(f, n, s, &msg, err, sizeof err);
        CHECK(st == KRN_WIRE_MISSING_FRAMES);
        CHECK(err[0] != '\0');
        krn_msg_clear(&msg);
    }
    krn_signer_free(s);
}

static void test_parse_bad_signature(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    krn_msg msg;
    char err[256];
    char wrong[KRN_SIG_HEX_LEN + 1];
    strcpy(wrong, HDR_SIG);
    wrong[0] = wrong[0] == 'd' ? 'e' : 'd';
    const char *sigs[] = {wrong, "", "d24613c9"};
    for (size_t i = 0; i < 3; i++) {
        krn_bytes f[] = {B(KRN_DELIMITER), B(sigs[i]), B(HDR), B("{}"), B("{}"), B("{}")};
        err[0] = '\0';
        CHECK(krn_wire_parse(f, 6, s, &msg, err, sizeof err) == KRN_WIRE_BAD_SIGNATURE);
        CHECK(err[0] != '\0');
        CHECK(msg.header == NULL && msg.content == NULL); /* nothing parsed */
        krn_msg_clear(&msg);
    }
    /* The same frames verify with the right signature, and with signing disabled. */
    krn_bytes good[] = {B(KRN_DELIMITER), B(HDR_SIG), B(HDR), B("{}"), B("{}"), B("{}")};
    CHECK(krn_wire_parse(good, 6, s, &msg, err, sizeof err) == KRN_WIRE_OK);
    krn_msg_clear(&msg);
    /* A signature made with another key does not. */
    krn_signer *other = new_signer("not-the-key");
    if (other) {
        raw_msg m;
        raw_build(&m, other, NULL, 0, HDR, "{}", "{}", "{}", NULL, 0);
        CHECK(krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err) == KRN_WIRE_BAD_SIGNATURE);
        krn_msg_clear(&msg);
        krn_signer_free(other);
    }
    krn_signer_free(s);

    char e2[256] = "";
    krn_signer *off = krn_signer_new("", "", 0, e2, sizeof e2);
    if (off) {
        krn_bytes unsigned_[] = {B(KRN_DELIMITER), B(""), B(HDR), B("{}"), B("{}"), B("{}")};
        CHECK(krn_wire_parse(unsigned_, 6, off, &msg, err, sizeof err) == KRN_WIRE_OK);
        krn_msg_clear(&msg);
        krn_signer_free(off);
    } else {
        CHECK(0);
    }
}

static void test_parse_bad_header(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    const char *headers[] = {
        "{not json",
        "[1,2,3]",
        "\"a string\"",
        "{\"msg_id\":\"1\"}",                              /* no msg_type */
        "{\"msg_type\":\"execute_request\"}",              /* no msg_id */
        "{\"msg_id\":1,\"msg_type\":\"execute_request\"}", /* msg_id not a string */
        "{\"msg_id\":\"1\",\"msg_type\":null}",
        "",
    };
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        raw_msg m;
        raw_build(&m, s, NULL, 0, headers[i], "{}", "{}", "{}", NULL, 0);
        krn_msg msg;
        char err[256] = "";
        krn_wire_status st = krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err);
        CHECK(st == KRN_WIRE_BAD_HEADER);
        if (st != KRN_WIRE_BAD_HEADER)
            fprintf(stderr, "  header %zu (%s) gave status %d\n", i, headers[i], (int)st);
        CHECK(err[0] != '\0');
        krn_msg_clear(&msg);
    }
    krn_signer_free(s);
}

static void check_bad_json(const krn_signer *s, const char *parent, const char *metadata,
                           const char *content, const char *what) {
    const char *ids[] = {"the-client"};
    raw_msg m;
    raw_build(&m, s, ids, 1, EXEC_HDR, parent, metadata, content, NULL, 0);
    krn_msg msg;
    char err[256] = "";
    krn_wire_status st = krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err);
    CHECK(st == KRN_WIRE_BAD_JSON);
    if (st != KRN_WIRE_BAD_JSON) fprintf(stderr, "  %s gave status %d\n", what, (int)st);
    CHECK(err[0] != '\0');
    /* The header (and identities) are kept so that an error reply can be sent. */
    CHECK(json_is_object(msg.header));
    CHECK_STR(msg.msg_type, "execute_request");
    CHECK_STR(msg.msg_id, "abc-123");
    CHECK(msg.nids == 1);
    if (msg.nids == 1)
        CHECK(msg.ids[0].len == strlen("the-client") &&
              memcmp(msg.ids[0].data, "the-client", msg.ids[0].len) == 0);
    krn_msg_clear(&msg);
}

static void test_parse_bad_json_keeps_header(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    check_bad_json(s, "{}", "{}", "{\"code\": ", "truncated content");
    check_bad_json(s, "{}", "{}", "not json at all", "garbage content");
    check_bad_json(s, "{}", "{}", "[\"an\", \"array\"]", "array content");
    check_bad_json(s, "{}", "{}", "", "empty content");
    check_bad_json(s, "{oops", "{}", "{}", "bad parent");
    check_bad_json(s, "{}", "{\"a\":", "{}", "bad metadata");
    krn_signer_free(s);
}

static void test_parse_invalid_utf8(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    check_bad_json(s, "{}", "{}", "{\"code\":\"x = '\xff\xfe'\"}", "invalid UTF-8 content");
    check_bad_json(s, "{}", "{}", "{\"code\":\"\xc3\"}", "truncated UTF-8 sequence");
    check_bad_json(s, "{}", "{}", "{\"code\":\"\xed\xa0\x80\"}", "UTF-8 surrogate");
    /* Valid multi-byte UTF-8 is fine. */
    raw_msg m;
    raw_build(&m, s, NULL, 0, EXEC_HDR, "{}", "{}", "{\"code\":\"x = '\xc3\xa9\xe2\x82\xac'\"}",
              NULL, 0);
    krn_msg msg;
    char err[256] = "";
    CHECK(krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err) == KRN_WIRE_OK);
    CHECK_STR(json_string_value(json_object_get(msg.content, "code")),
              "x = '\xc3\xa9\xe2\x82\xac'");
    krn_msg_clear(&msg);
    /* Invalid UTF-8 in the header is a bad header. */
    raw_build(&m, s, NULL, 0, "{\"msg_id\":\"\xff\",\"msg_type\":\"execute_request\"}", "{}", "{}",
              "{}", NULL, 0);
    CHECK(krn_wire_parse(m.f, m.n, s, &msg, err, sizeof err) == KRN_WIRE_BAD_HEADER);
    krn_msg_clear(&msg);
    krn_signer_free(s);
}

static void test_parse_embedded_nul(void) {
    /* A NUL byte inside a frame must not truncate parsing silently into success. */
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    static const char content[] = "{\"code\":\"1\"}\0{\"x\":";
    krn_bytes parts[4] = {B(EXEC_HDR), B("{}"), B("{}"), {content, sizeof content - 1}};
    char sig[KRN_SIG_HEX_LEN + 1];
    krn_sign(s, parts, sig);
    krn_bytes f[] = {B(KRN_DELIMITER), B(sig), parts[0], parts[1], parts[2], parts[3]};
    krn_msg msg;
    char err[256] = "";
    CHECK(krn_wire_parse(f, 6, s, &msg, err, sizeof err) == KRN_WIRE_BAD_JSON);
    krn_msg_clear(&msg);
    krn_signer_free(s);
}

/* ------------------------------------------------------------------ encoding */

static bool is_uuid4(const char *u) {
    if (strlen(u) != 36) return false;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (u[i] != '-') return false;
        } else if (!isxdigit((unsigned char)u[i]) || isupper((unsigned char)u[i])) {
            return false;
        }
    }
    return u[14] == '4' && strchr("89ab", u[19]) != NULL;
}

static bool is_iso_date(const char *d) {
    /* YYYY-MM-DDTHH:MM:SS.ffffffZ: UTC, six fractional digits, explicit Z. */
    size_t n = strlen(d);
    if (n != 26 && n != 27) return false;
    if (d[n - 1] != 'Z') return false;
    static const char pat[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
    if (n != sizeof pat - 1) return false;
    for (size_t i = 0; i < n; i++) {
        if (pat[i] == 'd') {
            if (!isdigit((unsigned char)d[i])) return false;
        } else if (d[i] != pat[i]) {
            return false;
        }
    }
    int month = (d[5] - '0') * 10 + (d[6] - '0');
    int day = (d[8] - '0') * 10 + (d[9] - '0');
    int hour = (d[11] - '0') * 10 + (d[12] - '0');
    return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23;
}

static void test_uuid4(void) {
    char a[37], b[37];
    for (int i = 0; i < 200; i++) {
        krn_uuid4(a);
        if (!is_uuid4(a)) {
            fprintf(stderr, "  not a uuid4: %s\n", a);
            CHECK(0);
            return;
        }
    }
    CHECK(is_uuid4(a));
    krn_uuid4(b);
    CHECK(is_uuid4(b));
    CHECK(strcmp(a, b) != 0);
    CHECK(!is_uuid4("00000000-0000-0000-0000-000000000000")); /* the checker itself works */
}

static void test_iso_now(void) {
    char d[32];
    krn_iso_now(d);
    CHECK(is_iso_date(d));
    if (!is_iso_date(d)) fprintf(stderr, "  not an ISO date: %s\n", d);
    CHECK(strlen(d) == 27);
    CHECK(d[strlen(d) - 1] == 'Z');
    CHECK(strncmp(d, "20", 2) == 0);
    CHECK(!is_iso_date("2024-01-01T00:00:00.000000")); /* no Z */
    CHECK(!is_iso_date("2024-01-01T00:00:00.000Z"));   /* 3 fractional digits */
}

static void test_header(void) {
    krn_signer *s = new_signer(KEY);
    krn_session sess = {.username = "tester", .signer = s};
    krn_uuid4(sess.session);
    json_t *h = krn_wire_header(&sess, "status");
    CHECK(json_is_object(h));
    CHECK_STR(json_string_value(json_object_get(h, "msg_type")), "status");
    CHECK_STR(json_string_value(json_object_get(h, "version")), KRN_PROTOCOL_VERSION);
    CHECK_STR(json_string_value(json_object_get(h, "version")), "5.4");
    CHECK_STR(json_string_value(json_object_get(h, "session")), sess.session);
    CHECK_STR(json_string_value(json_object_get(h, "username")), "tester");
    const char *id = json_string_value(json_object_get(h, "msg_id"));
    CHECK(id && is_uuid4(id));
    const char *date = json_string_value(json_object_get(h, "date"));
    CHECK(date && is_iso_date(date));
    json_t *h2 = krn_wire_header(&sess, "status");
    CHECK(strcmp(json_string_value(json_object_get(h2, "msg_id")), id ? id : "") != 0);
    json_decref(h);
    json_decref(h2);
    krn_signer_free(s);
}

static void test_encode_parse_round_trip(void) {
    krn_signer *s = new_signer(KEY);
    if (!s) {
        CHECK(0);
        return;
    }
    krn_session sess = {.username = "kernel", .signer = s};
    krn_uuid4(sess.session);
    krn_bytes ids[2] = {B("id-one"), {"id\0two", 7}};
    json_t *parent = json_pack("{s:s, s:s, s:s}", "msg_id", "parent-42", "msg_type",
                               "execute_request", "session", "client-session");
    json_t *content = json_pack("{s:s, s:i, s:s}", "status", "ok", "execution_count", 3, "text",
                                "caf\xc3\xa9 \xe2\x82\xac \"quoted\"\n");
    krn_frames fr;
    int rc = krn_wire_encode(&sess, ids, 2, "execute_reply", parent, json_pack("{s:b}", "x", 1),
                             content, &fr);
    CHECK(rc == 0);
    if (rc) {
        json_decref(parent);
        krn_signer_free(s);
        return;
    }
    CHECK(fr.n == 2 + 6);
    krn_bytes f[16];
    for (size_t i = 0; i < fr.n && i < 16; i++) f[i] = (krn_bytes){fr.data[i], fr.len[i]};
    CHECK(fr.len[2] == strlen(KRN_DELIMITER) && memcmp(fr.data[2], KRN_DELIMITER, fr.len[2]) == 0);
    CHECK(fr.len[3] == KRN_SIG_HEX_LEN);
    /* The signature frame verifies over the four parts. */
    CHECK(krn_verify(s, &f[4], f[3].data, f[3].len));

    krn_msg msg;
    char err[256] = "";
    krn_wire_status st = krn_wire_parse(f, fr.n, s, &msg, err, sizeof err);
    CHECK(st == KRN_WIRE_OK);
    if (st == KRN_WIRE_OK) {
        CHECK(msg.nids == 2);
        if (msg.nids == 2) {
            CHECK(msg.ids[0].len == 6 && memcmp(msg.ids[0].data, "id-one", 6) == 0);
            CHECK(msg.ids[1].len == 7 && memcmp(msg.ids[1].data, "id\0two", 7) == 0);
        }
        CHECK_STR(msg.msg_type, "execute_reply");
        CHECK(msg.msg_id && is_uuid4(msg.msg_id));
        CHECK_STR(json_string_value(json_object_get(msg.header, "session")), sess.session);
        CHECK_STR(json_string_value(json_object_get(msg.header, "version")), "5.4");
        const char *date = json_string_value(json_object_get(msg.header, "date"));
        CHECK(date && is_iso_date(date));
        CHECK(json_equal(msg.parent, parent));
        CHECK_STR(json_string_value(json_object_get(msg.parent, "msg_id")), "parent-42");
        CHECK(json_is_true(json_object_get(msg.metadata, "x")));
        CHECK_STR(json_string_value(json_object_get(msg.content, "status")), "ok");
        CHECK(json_integer_value(json_object_get(msg.content, "execution_count")) == 3);
        CHECK_STR(json_string_value(json_object_get(msg.content, "text")),
                  "caf\xc3\xa9 \xe2\x82\xac \"quoted\"\n");
        CHECK(msg.nbuffers == 0);
    } else {
        fprintf(stderr, "  round trip parse failed: %s\n", err);
    }
    krn_msg_clear(&msg);

    /* Tampering with any signed part breaks verification. */
    char *content_copy = malloc(fr.len[7]);
    if (content_copy) {
        memcpy(content_copy, fr.data[7], fr.len[7]);
        content_copy[1] ^= 1;
        f[7] = (krn_bytes){content_copy, fr.len[7]};
        CHECK(krn_wire_parse(f, fr.n, s, &msg, err, sizeof err) == KRN_WIRE_BAD_SIGNATURE);
        krn_msg_clear(&msg);
        free(content_copy);
    }
    krn_frames_free(&fr);
    CHECK(fr.n == 0);
    json_decref(parent);
    krn_signer_free(s);
}

static void test_encode_defaults_and_unsigned(void) {
    char e[256] = "";
    krn_signer *off = krn_signer_new("", "", 0, e, sizeof e);
    krn_session sess = {.username = NULL, .signer = off};
    krn_uuid4(sess.session);
    krn_frames fr;
    /* Broadcast: no ids, no parent, no metadata. */
    int rc = krn_wire_encode(&sess, NULL, 0, "status", NULL, NULL,
                             json_pack("{s:s}", "execution_state", "idle"), &fr);
    CHECK(rc == 0);
    if (rc == 0) {
        CHECK(fr.n == 6);
        CHECK(fr.len[1] == 0); /* empty signature when signing is off */
        CHECK(fr.len[3] == 2 && memcmp(fr.data[3], "{}", 2) == 0); /* parent {} */
        CHECK(fr.len[4] == 2 && memcmp(fr.data[4], "{}", 2) == 0); /* metadata {} */
        krn_bytes f[6];
        for (size_t i = 0; i < 6; i++) f[i] = (krn_bytes){fr.data[i], fr.len[i]};
        krn_msg msg;
        char err[256] = "";
        CHECK(krn_wire_parse(f, 6, off, &msg, err, sizeof err) == KRN_WIRE_OK);
        CHECK_STR(msg.msg_type, "status");
        CHECK(msg.nids == 0);
        CHECK(json_object_size(msg.parent) == 0);
        const char *user = json_string_value(json_object_get(msg.header, "username"));
        CHECK(user != NULL && user[0] != '\0');
        CHECK_STR(json_string_value(json_object_get(msg.content, "execution_state")), "idle");
        krn_msg_clear(&msg);
        /* A signing kernel rejects this unsigned message. */
        krn_signer *on = new_signer(KEY);
        if (on) {
            CHECK(krn_wire_parse(f, 6, on, &msg, err, sizeof err) == KRN_WIRE_BAD_SIGNATURE);
            krn_msg_clear(&msg);
            krn_signer_free(on);
        }
        krn_frames_free(&fr);
    }
    krn_signer_free(off);
}

int main(void) {
    test_sign_known_vectors();
    test_sign_covers_parts_in_order();
    test_verify();
    test_empty_key_disables_signing();
    test_unsupported_scheme();
    test_parse_well_formed();
    test_parse_no_identities_no_buffers();
    test_parse_no_delimiter();
    test_parse_too_few_frames();
    test_parse_bad_signature();
    test_parse_bad_header();
    test_parse_bad_json_keeps_header();
    test_parse_invalid_utf8();
    test_parse_embedded_nul();
    test_uuid4();
    test_iso_now();
    test_header();
    test_encode_parse_round_trip();
    test_encode_defaults_and_unsigned();
    return unit_finish();
}
