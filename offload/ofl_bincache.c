/* ofl_bincache: built program binaries on disk, so that a new process loads
 * what an earlier one built instead of building it again. Called by
 * ofl_opencl.c for the builds it gets back from offload-clbuild (Intel's CPU
 * runtime: CL_PROGRAM_BINARIES), which it loads with
 * clCreateProgramWithBinary (1-2 ms) where a build took 0.1 s or more and a
 * helper process to start (some 50 ms, 220 MB).
 *
 * An entry is keyed by the SHA-256 of what decides the binary: the SPIR-V's
 * bytes, the device's name, its driver version, its platform's version and
 * the build options; a new driver or device is a miss, never a foreign
 * binary. It lives beside the JIT's SPIR-V cache, under the same rules (the
 * runtime does not call the JIT; jit/jit_cache.c keeps those rules there):
 * $XDG_CACHE_HOME/offload (an absolute XDG_CACHE_HOME, else
 * ~/.cache/offload), here in bin/, and nothing at all where OFFLOAD_CACHE is
 * 0, off, no or false. A file is written whole under a name of its own and
 * renamed into place, so a reader sees a whole entry or none; one that does
 * not check out (its magic, its key, the SHA-256 of its bytes) is deleted
 * and is a miss, and a binary the driver then refuses is deleted by the
 * caller (ofl_bincache_drop). Nothing here keeps state between calls but a
 * counter that keeps one process's temporary names apart. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ofl_backend.h"

#define MAGIC "OFLBIN01"
#define MAGIC_LEN 8
#define DIGEST 32
/* magic, flags (u32), payload length (u64), the key, the payload's SHA-256 */
#define HEADER (MAGIC_LEN + 4 + 8 + DIGEST + DIGEST)
#define MOST ((uint64_t)1 << 30) /* larger is not ours: refused before malloc'ing it */

static atomic_uint tmp_counter;

static bool enabled(void) {
    const char *v = getenv("OFFLOAD_CACHE");
    return !v || !(strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0 ||
                   strcasecmp(v, "false") == 0);
}

/* <cache>/offload/bin into buf; false where there is no such place. */
static bool bin_dir(char *buf, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    if (xdg && xdg[0] == '/')
        len = snprintf(buf, n, "%s/offload/bin", xdg);
    else if (home && home[0])
        len = snprintf(buf, n, "%s/.cache/offload/bin", home);
    else
        return false;
    return len > 0 && (size_t)len < n;
}

static bool entry_path(const ofl_binkey *k, char *buf, size_t n) {
    char dir[PATH_MAX], hex[2 * DIGEST + 1];
    if (!bin_dir(dir, sizeof dir)) return false;
    for (int i = 0; i < DIGEST; i++) snprintf(hex + 2 * i, 3, "%02x", k->digest[i]);
    int len = snprintf(buf, n, "%s/%s.oflb", dir, hex);
    return len > 0 && (size_t)len < n;
}

static bool sha256(const void *data, size_t n, unsigned char out[DIGEST]) {
    unsigned int len = 0;
    return EVP_Digest(n ? data : "", n, out, &len, EVP_sha256(), NULL) && len == DIGEST;
}

bool ofl_bincache_key(ofl_binkey *k, const void *src, size_t n, const char *const parts[],
                      size_t nparts) {
    if (!enabled()) return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
              EVP_DigestUpdate(ctx, MAGIC, MAGIC_LEN);
    /* each part with its NUL, so that no two lists hash alike */
    for (size_t i = 0; ok && i < nparts; i++)
        ok = EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1);
    ok = ok && EVP_DigestUpdate(ctx, n ? src : "", n) && EVP_DigestFinal_ex(ctx, k->digest, &len) &&
         len == DIGEST;
    EVP_MD_CTX_free(ctx);
    return ok;
}

static bool read_all(int fd, void *buf, size_t n) {
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r, n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

unsigned char *ofl_bincache_load(const ofl_binkey *k, size_t *n, uint32_t *flags) {
    char path[PATH_MAX];
    if (!enabled() || !entry_path(k, path, sizeof path)) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL; /* a miss */
    unsigned char h[HEADER], md[DIGEST];
    unsigned char *bin = NULL;
    uint64_t len = 0;
    bool ok = read_all(fd, h, sizeof h) && memcmp(h, MAGIC, MAGIC_LEN) == 0 &&
              memcmp(h + MAGIC_LEN + 12, k->digest, DIGEST) == 0;
    if (ok) len = get_u64(h + MAGIC_LEN + 4);
    ok = ok && len > 0 && len < MOST && (bin = malloc(len)) != NULL && read_all(fd, bin, len);
    unsigned char extra;
    ok = ok && read(fd, &extra, 1) == 0 && sha256(bin, len, md) &&
         memcmp(md, h + MAGIC_LEN + 12 + DIGEST, DIGEST) == 0;
    close(fd);
    if (!ok) {
        free(bin);
        unlink(path); /* torn, foreign or corrupt: built again and written anew */
        return NULL;
    }
    *n = len;
    *flags = (uint32_t)h[MAGIC_LEN] | (uint32_t)h[MAGIC_LEN + 1] << 8 |
             (uint32_t)h[MAGIC_LEN + 2] << 16 | (uint32_t)h[MAGIC_LEN + 3] << 24;
    return bin;
}

/* mkdir -p, each new directory 0700: compiled code is the user's business */
static bool make_dirs(const char *path) {
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return false;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
        *p = c;
        if (c == '\0') break;
    }
    return true;
}

void ofl_bincache_store(const ofl_binkey *k, const void *bin, size_t n, uint32_t flags) {
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 64];
    unsigned char h[HEADER];
    if (!enabled() || n == 0 || n >= MOST || !bin_dir(dir, sizeof dir) ||
        !entry_path(k, path, sizeof path) || !make_dirs(dir) ||
        !sha256(bin, n, h + MAGIC_LEN + 12 + DIGEST))
        return; /* a cache that cannot be written costs the next process a build, no more */
    memcpy(h, MAGIC, MAGIC_LEN);
    for (int i = 0; i < 4; i++) h[MAGIC_LEN + i] = (unsigned char)(flags >> (8 * i));
    put_u64(h + MAGIC_LEN + 4, n);
    memcpy(h + MAGIC_LEN + 12, k->digest, DIGEST);
    int len = snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(),
                       atomic_fetch_add(&tmp_counter, 1));
    if (len < 0 || (size_t)len >= sizeof tmp) return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return;
    bool ok = write_all(fd, h, sizeof h) && write_all(fd, bin, n);
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

void ofl_bincache_drop(const ofl_binkey *k) {
    char path[PATH_MAX];
    if (entry_path(k, path, sizeof path)) unlink(path);
}
