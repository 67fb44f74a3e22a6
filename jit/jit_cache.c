/* jit_cache: the on-disk cache of compiled device code (see jit_cache.h).
 *
 * Every function works from the environment as it is at the call and keeps no
 * state between calls: tests and `%env` may move XDG_CACHE_HOME or flip
 * OFFLOAD_CACHE at any time, and with nothing shared there is nothing to lock.
 * The statics are an atomic counter that keeps temp names of one process
 * apart even when the random source fails, and the debug log's sink (set
 * once at start-up). */
#include "jit_cache.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "OFLCACHE"
#define MAGIC_LEN 8
/* Bump when the layout changes; files of another version are misses. */
#define FORMAT_VERSION 1u
#define DIGEST_LEN 32
#define HEX_LEN (2 * DIGEST_LEN)
#define SUFFIX ".oflc"
#define TMP_SUFFIX ".tmp"
/* magic, version, key length, payload length, checksum */
#define OVERHEAD (MAGIC_LEN + 4 + 8 + 8 + DIGEST_LEN)
/* Anything bigger is not something we wrote: refuse before malloc'ing it. */
#define MAX_FILE ((uint64_t)1 << 30)
/* A temp file this old is left over from a crash even if its pid is reused. */
#define STALE_TMP_SECONDS 3600

static atomic_uint tmp_counter;
static void (*log_sink)(const char *line);

static void log_default(const char *line) {
    const char *level = getenv("OFFLOAD_LOG");
    if (!level || strcasecmp(level, "debug") != 0) return;
    char buf[1200];
    int n = snprintf(buf, sizeof buf, "offload: cache: %s\n", line);
    if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
    ssize_t unused = write(2, buf, (size_t)n); /* one write: lines of threads never mix */
    (void)unused;
}

void jit_cache_set_log(void (*log)(const char *line)) { log_sink = log; }

void jit_cache_debug(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    (log_sink ? log_sink : log_default)(line);
}

bool jit_cache_enabled(void) {
    const char *v = getenv("OFFLOAD_CACHE");
    if (!v) return true;
    return !(strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "no") == 0 ||
             strcasecmp(v, "false") == 0);
}

/* The directory, or -1 when there is none (no HOME) or it does not fit: a
 * truncated path would name somebody else's directory. XDG_CACHE_HOME counts
 * only when absolute, as the XDG base directory spec says: a relative one would
 * follow the process's working directory around. */
static int cache_dir(char *buf, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    int len;
    if (xdg && xdg[0] == '/') {
        len = snprintf(buf, n, "%s/offload", xdg);
    } else {
        const char *home = getenv("HOME");
        if (!home || !home[0]) return -1;
        len = snprintf(buf, n, "%s/.cache/offload", home);
    }
    return len < 0 || (size_t)len >= n ? -1 : 0;
}

const char *jit_cache_dir(char *buf, size_t buflen) {
    if (!buf || buflen == 0) return "";
    if (cache_dir(buf, buflen) != 0) buf[0] = '\0';
    return buf;
}

/* mkdir -p: each missing component is made 0700, since compiled code and the
 * source-derived keys are the user's business. Existing ones are left as they are. */
static int make_dirs(const char *path) {
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, path, n + 1);
    while (n > 1 && tmp[n - 1] == '/') tmp[--n] = '\0';
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        /* EEXIST also covers a racing process that made it first. */
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
        *p = c;
        if (c == '\0') break;
    }
    struct stat st;
    return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

static void to_hex(const unsigned char *d, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

static int sha256(const void *data, size_t n, unsigned char out[DIGEST_LEN]) {
    unsigned int len = 0;
    /* EVP_Digest rejects a NULL pointer even for zero bytes; "" hashes the same. */
    if (!EVP_Digest(n ? data : "", n, out, &len, EVP_sha256(), NULL) || len != DIGEST_LEN)
        return -1;
    return 0;
}

/* The entry's path: <dir>/<hex sha256 of key>.oflc. Also leaves the directory in
 * dir (when non-NULL) and the hex name in hex (when non-NULL) for the caller. */
static int entry_path(const void *key, size_t keylen, char *path, size_t n, char *dir, size_t dirn,
                      char *hex) {
    char d[PATH_MAX];
    unsigned char md[DIGEST_LEN];
    char h[HEX_LEN + 1];
    if (cache_dir(d, sizeof d) != 0 || sha256(key, keylen, md) != 0) return -1;
    to_hex(md, sizeof md, h);
    int len = snprintf(path, n, "%s/%s" SUFFIX, d, h);
    if (len < 0 || (size_t)len >= n) return -1;
    if (dir && (size_t)snprintf(dir, dirn, "%s", d) >= dirn) return -1;
    if (hex) memcpy(hex, h, sizeof h);
    return 0;
}

/* Fixed little-endian fields, so a cache on a shared home directory means the
 * same thing to every machine that reads it. */
static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int write_all(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (w == 0) /* no progress and no errno: give up rather than spin */
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0 when all n bytes came, 1 when the file ended first, -1 on a read error. */
static int read_all(int fd, void *buf, size_t n) {
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) return 1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Unlinks path only if it is still the file we read (same inode): between our
 * open and now another process may have renamed a good entry over the bad one,
 * and deleting that would throw away a fresh compile. */
static void remove_bad(const char *path, const struct stat *was) {
    struct stat now;
    if (stat(path, &now) == 0 && now.st_dev == was->st_dev && now.st_ino == was->st_ino)
        unlink(path);
}

enum check { ENTRY_OK, ENTRY_CORRUPT, ENTRY_OTHER };

/* ENTRY_OK with *off / *len locating the payload; ENTRY_CORRUPT for a file that
 * cannot be what a store wrote; ENTRY_OTHER for a sound file that is simply not
 * ours to use (another format version, or another key whose SHA-256 collides). */
static enum check check_entry(const unsigned char *f, size_t size, const void *key, size_t keylen,
                              size_t *off, size_t *len) {
    if (size < OVERHEAD || memcmp(f, MAGIC, MAGIC_LEN) != 0) return ENTRY_CORRUPT;
    /* Another version may lay out the rest differently, so nothing after the
     * version field can be judged; the next store replaces it. */
    if (get_u32(f + MAGIC_LEN) != FORMAT_VERSION) return ENTRY_OTHER;
    size_t pos = MAGIC_LEN + 4;
    uint64_t klen = get_u64(f + pos);
    pos += 8;
    /* Compare against what remains, never add to the untrusted length. */
    if (klen > size - OVERHEAD) return ENTRY_CORRUPT;
    const unsigned char *fkey = f + pos;
    pos += (size_t)klen;
    uint64_t plen = get_u64(f + pos);
    pos += 8;
    if (plen != size - OVERHEAD - klen) return ENTRY_CORRUPT;
    unsigned char md[DIGEST_LEN];
    if (sha256(f, size - DIGEST_LEN, md) != 0 || memcmp(md, f + size - DIGEST_LEN, DIGEST_LEN) != 0)
        return ENTRY_CORRUPT;
    if (klen != keylen || (keylen && memcmp(fkey, key, keylen) != 0)) return ENTRY_OTHER;
    *off = pos;
    *len = (size_t)plen;
    return ENTRY_OK;
}

int jit_cache_load(const void *key, size_t keylen, void **data, size_t *size) {
    char path[PATH_MAX];
    if (!data || !size || (!key && keylen) || !jit_cache_enabled()) return 0;
    if (entry_path(key, keylen, path, sizeof path, NULL, 0, NULL) != 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    unsigned char *f = NULL;
    int hit = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) goto out;
    if ((uint64_t)st.st_size > MAX_FILE || (size_t)st.st_size < OVERHEAD) {
        jit_cache_debug("%s: %lld bytes cannot be an entry (truncated?): removed, rebuilding", path,
                        (long long)st.st_size);
        remove_bad(path, &st);
        goto out;
    }
    size_t fsize = (size_t)st.st_size;
    f = malloc(fsize);
    if (!f) goto out;
    int r = read_all(fd, f, fsize);
    if (r != 0) {
        /* Only a file shorter than fstat said is bad (truncated in place after
         * the rename); EIO and friends say nothing about its contents. */
        if (r > 0) {
            jit_cache_debug("%s: shorter than its size (truncated): removed, rebuilding", path);
            remove_bad(path, &st);
        }
        goto out;
    }
    size_t off = 0, len = 0;
    switch (check_entry(f, fsize, key, keylen, &off, &len)) {
    case ENTRY_CORRUPT:
        jit_cache_debug("%s: corrupt (bad header, lengths or checksum): removed, rebuilding", path);
        remove_bad(path, &st);
        goto out;
    case ENTRY_OTHER:
        jit_cache_debug("%s: another format version or key: rebuilding", path);
        goto out;
    case ENTRY_OK: break;
    }
    /* Move the payload to the front and keep the one allocation; +1 so a
     * zero-length hit still hands back a non-NULL pointer. */
    memmove(f, f + off, len);
    unsigned char *shrunk = realloc(f, len ? len : 1);
    *data = shrunk ? shrunk : f;
    *size = len;
    f = NULL;
    hit = 1;
out:
    free(f);
    close(fd);
    return hit;
}

/* A temp name no other writer can pick: the pid separates processes (which
 * may share a seeded generator after fork), the counter separates threads, and
 * the random part separates pid namespaces sharing one home directory. */
static void tmp_name(char *out, size_t n, const char *dir, const char *hex) {
    unsigned char r[8] = {0};
    if (RAND_bytes(r, sizeof r) != 1) {
        uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
        put_u64(r, t);
    }
    uint64_t v = get_u64(r) ^ ((uint64_t)atomic_fetch_add(&tmp_counter, 1) << 40);
    snprintf(out, n, "%s/%s.%ld.%016llx" TMP_SUFFIX, dir, hex, (long)getpid(),
             (unsigned long long)v);
}

int jit_cache_store(const void *key, size_t keylen, const void *data, size_t size) {
    if (!jit_cache_enabled()) return 0;
    if ((!key && keylen) || (!data && size)) return -1;
    /* Refuse what load would refuse, rather than write a file nobody can read. */
    if (keylen > MAX_FILE - OVERHEAD || size > MAX_FILE - OVERHEAD - keylen) return -1;
    char path[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 128];
    char hex[HEX_LEN + 1];
    if (entry_path(key, keylen, path, sizeof path, dir, sizeof dir, hex) != 0) return -1;
    if (make_dirs(dir) != 0) return -1;

    int fd = -1;
    for (int tries = 0; tries < 8 && fd < 0; tries++) {
        tmp_name(tmp, sizeof tmp, dir, hex);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST && errno != EINTR) return -1;
    }
    if (fd < 0) return -1;

    unsigned char head[MAGIC_LEN + 4 + 8], plen[8], md[DIGEST_LEN];
    memcpy(head, MAGIC, MAGIC_LEN);
    put_u32(head + MAGIC_LEN, FORMAT_VERSION);
    put_u64(head + MAGIC_LEN + 4, keylen);
    put_u64(plen, size);

    /* Hash while writing: the payload can be megabytes, not worth a copy. */
    int rc = -1;
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) goto fail;
    if (!EVP_DigestUpdate(ctx, head, sizeof head) || !EVP_DigestUpdate(ctx, key, keylen) ||
        !EVP_DigestUpdate(ctx, plen, sizeof plen) || !EVP_DigestUpdate(ctx, data, size) ||
        !EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != DIGEST_LEN)
        goto fail;
    if (write_all(fd, head, sizeof head) != 0 || write_all(fd, key, keylen) != 0 ||
        write_all(fd, plen, sizeof plen) != 0 || write_all(fd, data, size) != 0 ||
        write_all(fd, md, sizeof md) != 0)
        goto fail;
    /* No fsync: a file torn by a crash fails its checksum and is just a miss,
     * which is cheaper than a disk flush on every compile. close can still
     * report a deferred write error (NFS), so it is checked. */
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) goto fail;
    /* rename is atomic: readers see the old entry or the new one, never half;
     * with concurrent writers the last rename wins. */
    if (rename(tmp, path) != 0) goto fail;
    rc = 0;
fail:
    EVP_MD_CTX_free(ctx);
    if (fd >= 0) close(fd);
    if (rc != 0) unlink(tmp);
    return rc;
}

static int ends_with(const char *s, size_t n, const char *suffix) {
    size_t m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* A temp file of ours (<64 hex>.<pid>.<16 hex>.tmp) whose writer is gone: its
 * pid no longer exists, or it is old enough that a reused pid can't be its
 * writer. Live writers' files are left alone, or their rename would fail. */
static int stale_tmp(int dfd, const char *name, size_t n) {
    if (!ends_with(name, n, TMP_SUFFIX) || n < HEX_LEN + 1) return 0;
    for (size_t i = 0; i < HEX_LEN; i++)
        if (!isxdigit((unsigned char)name[i])) return 0;
    if (name[HEX_LEN] != '.') return 0;
    char *end;
    errno = 0;
    long pid = strtol(name + HEX_LEN + 1, &end, 10);
    if (errno || pid <= 0 || *end != '.' || end == name + HEX_LEN + 1) return 0;
    const char *r = end + 1;
    for (int i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)r[i])) return 0;
    if (strcmp(r + 16, TMP_SUFFIX) != 0) return 0;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (time(NULL) - st.st_mtime > STALE_TMP_SECONDS) return 1;
    return pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int jit_cache_clear(void) {
    char dir[PATH_MAX];
    if (cache_dir(dir, sizeof dir) != 0) return 0;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    int dfd = dirfd(d), count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > strlen(SUFFIX) && ends_with(e->d_name, n, SUFFIX)) {
            /* A concurrent clear may win the race: count only what we removed. */
            if (unlinkat(dfd, e->d_name, 0) == 0) count++;
        } else if (stale_tmp(dfd, e->d_name, n)) {
            unlinkat(dfd, e->d_name, 0);
        }
    }
    closedir(d);
    return count;
}
