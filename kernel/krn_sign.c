/* krn_sign: HMAC-SHA256 message signatures through libcrypto (krn_sign.h). */
#include "krn_sign.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct krn_signer {
    EVP_MAC *mac;
    EVP_MAC_CTX *keyed; /* initialised with the key; duplicated per message */
};

krn_signer *krn_signer_new(const char *scheme, const char *key, size_t keylen, char *err,
                           size_t errlen) {
    krn_signer *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (keylen == 0) return s;
    if (!scheme || strcmp(scheme, "hmac-sha256") != 0) {
        snprintf(err, errlen, "unsupported signature_scheme '%s' (only hmac-sha256)",
                 scheme ? scheme : "");
        free(s);
        return NULL;
    }
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    s->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    s->keyed = s->mac ? EVP_MAC_CTX_new(s->mac) : NULL;
    if (!s->keyed || !EVP_MAC_init(s->keyed, (const unsigned char *)key, keylen, params)) {
        snprintf(err, errlen, "libcrypto could not set up HMAC-SHA256");
        krn_signer_free(s);
        return NULL;
    }
    return s;
}

void krn_signer_free(krn_signer *s) {
    if (!s) return;
    EVP_MAC_CTX_free(s->keyed);
    EVP_MAC_free(s->mac);
    free(s);
}

bool krn_signer_enabled(const krn_signer *s) { return s && s->keyed; }

static bool digest_parts(const krn_signer *s, const krn_bytes parts[4], unsigned char out[32]) {
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup(s->keyed);
    bool ok = ctx != NULL;
    for (int i = 0; ok && i < 4; i++) ok = EVP_MAC_update(ctx, parts[i].data, parts[i].len);
    size_t outlen = 0;
    ok = ok && EVP_MAC_final(ctx, out, &outlen, 32) && outlen == 32;
    EVP_MAC_CTX_free(ctx);
    return ok;
}

void krn_sign(const krn_signer *s, const krn_bytes parts[4], char out[KRN_SIG_HEX_LEN + 1]) {
    static const char hex[] = "0123456789abcdef";
    unsigned char mac[32];
    out[0] = '\0';
    if (!krn_signer_enabled(s) || !digest_parts(s, parts, mac)) return;
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[KRN_SIG_HEX_LEN] = '\0';
}

bool krn_verify(const krn_signer *s, const krn_bytes parts[4], const void *sig, size_t siglen) {
    if (!krn_signer_enabled(s)) return true;
    char expected[KRN_SIG_HEX_LEN + 1];
    krn_sign(s, parts, expected);
    if (expected[0] == '\0' || siglen != KRN_SIG_HEX_LEN) return false;
    return CRYPTO_memcmp(expected, sig, KRN_SIG_HEX_LEN) == 0;
}
