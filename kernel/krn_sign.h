/* krn_sign: Jupyter message signatures, HMAC-SHA256 through libcrypto.
 *
 * The signature covers the exact bytes of header, parent_header, metadata
 * and content, in that order. An empty key disables signing (signature "")
 * as the protocol allows. A signer is immutable after creation, so every
 * thread may sign and verify with the same one. */
#ifndef KRN_SIGN_H
#define KRN_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#define KRN_SIG_HEX_LEN 64

typedef struct krn_signer krn_signer;

typedef struct {
    const void *data;
    size_t len;
} krn_bytes;

/* scheme must be "hmac-sha256" (or empty when key is empty). NULL + err on failure. */
krn_signer *krn_signer_new(const char *scheme, const char *key, size_t keylen, char *err,
                           size_t errlen);
void krn_signer_free(krn_signer *signer);
bool krn_signer_enabled(const krn_signer *signer);

/* Writes the lowercase hex digest of the four parts and a NUL (or "" when disabled). */
void krn_sign(const krn_signer *signer, const krn_bytes parts[4], char out[KRN_SIG_HEX_LEN + 1]);

/* Constant-time check of a received hex signature against the four parts. */
bool krn_verify(const krn_signer *signer, const krn_bytes parts[4], const void *sig, size_t siglen);

#endif
