/* Unit tests for jit/jit_cache.h: round trips, misses, corrupt, truncated,
 * colliding and foreign-version files, OFFLOAD_CACHE, where the directory is
 * and what happens when it cannot be written, clear, and concurrent writers
 * (threads and processes) never showing half an entry.
 *
 * XDG_CACHE_HOME and HOME point into a fresh mkdtemp directory before anything
 * else, so the test never reads or clears the real cache; the directory is
 * removed at the end. The file names are computed here with EVP on their own,
 * so a wrong name in jit_cache.c shows up as a failure, not as a consistent bug.
 *
 * Prints "N passed, M failed" as its last line; exits non-zero on any failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw, utimensat, mkdtemp */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jit_cache.h"
#include "unit.h"

/* Sized so every path built from them provably fits in PATH_MAX. */
static char root[1024]; /* the mkdtemp directory */
static char xdg[1040];  /* root/xdg: XDG_CACHE_HOME */
static char home[1040]; /* root/home: HOME */
static char dir[1056];  /* xdg/offload: where entries must go */

/* ---- helpers ---------------------------------------------------------------- */

static void entry_file(const void *key, size_t keylen, char *out, size_t n) {
    unsigned char md[32];
    unsigned int len = 0;
    char hex[65];
    if (!EVP_Digest(keylen ? key : "", keylen, md, &len, EVP_sha256(), NULL) || len != 32) {
        fprintf(stderr, "EVP_Digest failed\n");
        abort();
    }
    for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", md[i]);
    snprintf(out, n, "%s/%s.oflc", dir, hex);
}

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Entries in the cache directory other than . and ..; -1 when it can't be read. */
static int count_files(void) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

static int spit(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int rc = fwrite(buf, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

/* Load and compare with want/wantlen; 1 on a hit with exactly those bytes. */
static int load_is(const char *key, const void *want, size_t wantlen) {
    void *data = NULL;
    size_t size = 12345;
    if (jit_cache_load(key, strlen(key), &data, &size) != 1) return 0;
    int ok = data != NULL && size == wantlen && (wantlen == 0 || memcmp(data, want, wantlen) == 0);
    free(data);
    return ok;
}

static int misses(const char *key) {
    void *data = NULL;
    size_t size = 0;
    int rc = jit_cache_load(key, strlen(key), &data, &size);
    if (rc == 1) free(data);
    return rc == 0;
}

static int store(const char *key, const void *data, size_t size) {
    return jit_cache_store(key, strlen(key), data, size);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    if (flag == FTW_D || flag == FTW_DP || flag == FTW_DNR) chmod(path, 0700);
    return remove(path);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_enabled(void) {
    unsetenv("OFFLOAD_CACHE");
    CHECK(jit_cache_enabled());
    static const char *off[] = {"0", "off", "OFF", "Off", "no", "NO", "false", "False", "FALSE"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        setenv("OFFLOAD_CACHE", off[i], 1);
        if (jit_cache_enabled())
            fprintf(stderr, "  OFFLOAD_CACHE=%s did not turn the cache off\n", off[i]);
        CHECK(!jit_cache_enabled());
    }
    static const char *on[] = {"1", "on", "yes", "true", "", "00", "offf", "nope"};
    for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
        setenv("OFFLOAD_CACHE", on[i], 1);
        if (!jit_cache_enabled())
            fprintf(stderr, "  OFFLOAD_CACHE=%s turned the cache off\n", on[i]);
        CHECK(jit_cache_enabled());
    }
    unsetenv("OFFLOAD_CACHE");
}

static void test_dir(void) {
    char buf[PATH_MAX], want[PATH_MAX];
    CHECK_STR(jit_cache_dir(buf, sizeof buf), dir);
    CHECK(jit_cache_dir(buf, sizeof buf) == buf);

    /* a relative XDG_CACHE_HOME is ignored (XDG spec): HOME/.cache */
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    snprintf(want, sizeof want, "%s/.cache/offload", home);
    CHECK_STR(jit_cache_dir(buf, sizeof buf), want);
    unsetenv("XDG_CACHE_HOME");
    CHECK_STR(jit_cache_dir(buf, sizeof buf), want);

    /* a store without XDG_CACHE_HOME makes HOME/.cache/offload, each new level 0700 */
    CHECK(store("home key", "h", 1) == 0);
    CHECK(load_is("home key", "h", 1));
    struct stat st;
    char cache[PATH_MAX];
    snprintf(cache, sizeof cache, "%s/.cache", home);
    CHECK(stat(cache, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK(stat(want, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK(jit_cache_clear() == 1);

    /* neither: no cache at all, and nothing crashes */
    char *saved = strdup(getenv("HOME"));
    unsetenv("HOME");
    CHECK_STR(jit_cache_dir(buf, sizeof buf), "");
    CHECK(store("no home", "x", 1) == -1);
    CHECK(misses("no home"));
    CHECK(jit_cache_clear() == 0);
    setenv("HOME", saved, 1);
    free(saved);
    setenv("XDG_CACHE_HOME", xdg, 1);

    /* too small a buffer: "" rather than a truncated path */
    char tiny[8] = "junk";
    CHECK_STR(jit_cache_dir(tiny, sizeof tiny), "");
    CHECK(jit_cache_dir(NULL, 0) != NULL);
}

static void test_roundtrip(void) {
    static const char payload[] = "\x7f"
                                  "ELF device code\0with a NUL inside";
    size_t n = sizeof payload - 1;
    CHECK(misses("roundtrip"));
    CHECK(store("roundtrip", payload, n) == 0);
    CHECK(load_is("roundtrip", payload, n));
    CHECK(load_is("roundtrip", payload, n)); /* a hit does not consume the entry */

    char path[PATH_MAX];
    entry_file("roundtrip", 9, path, sizeof path);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(count_files() == 1); /* no temp file left behind */

    /* the documented layout, byte for byte */
    size_t fn = 0;
    unsigned char *f = slurp(path, &fn);
    CHECK(f && fn == 8 + 4 + 8 + 9 + 8 + n + 32);
    if (f && fn == 8 + 4 + 8 + 9 + 8 + n + 32) {
        CHECK(memcmp(f, "OFLCACHE", 8) == 0);
        CHECK(f[12] == 9 && f[13] == 0 && f[19] == 0);
        CHECK(memcmp(f + 20, "roundtrip", 9) == 0);
        CHECK(f[29] == n && f[30] == 0);
        CHECK(memcmp(f + 37, payload, n) == 0);
        unsigned char md[32];
        unsigned int len = 0;
        CHECK(EVP_Digest(f, fn - 32, md, &len, EVP_sha256(), NULL) && len == 32);
        CHECK(memcmp(md, f + fn - 32, 32) == 0);
    }
    free(f);

    /* the last store wins */
    CHECK(store("roundtrip", "second", 6) == 0);
    CHECK(load_is("roundtrip", "second", 6));
    CHECK(count_files() == 1);
    CHECK(jit_cache_clear() == 1);
}

static void test_keys(void) {
    CHECK(store("key A", "payload A", 9) == 0);
    CHECK(store("key B", "payload B!", 10) == 0);
    CHECK(load_is("key A", "payload A", 9));
    CHECK(load_is("key B", "payload B!", 10));
    CHECK(count_files() == 2);
    CHECK(misses("key C"));
    CHECK(misses("key a"));
    CHECK(misses(""));
    /* binary keys: NULs inside and a prefix are different keys */
    const char k1[] = {'x', 0, 'y'}, k2[] = {'x', 0, 'z'};
    CHECK(jit_cache_store(k1, 3, "one", 3) == 0);
    CHECK(jit_cache_store(k2, 3, "two", 3) == 0);
    void *d = NULL;
    size_t n = 0;
    CHECK(jit_cache_load(k1, 3, &d, &n) == 1 && n == 3 && memcmp(d, "one", 3) == 0);
    free(d);
    d = NULL;
    CHECK(jit_cache_load(k2, 3, &d, &n) == 1 && n == 3 && memcmp(d, "two", 3) == 0);
    free(d);
    d = NULL;
    CHECK(jit_cache_load(k1, 1, &d, &n) == 0);
    CHECK(jit_cache_clear() == 4);
    CHECK(misses("key A"));
}

static void test_large(void) {
    size_t n = 3u << 20;
    unsigned char *big = malloc(n);
    CHECK(big && RAND_bytes(big, (int)n) == 1);
    if (!big) return;
    CHECK(store("large", big, n) == 0);
    CHECK(load_is("large", big, n));
    char path[PATH_MAX];
    entry_file("large", 5, path, sizeof path);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n + 8 + 4 + 8 + 5 + 8 + 32);
    free(big);
    CHECK(jit_cache_clear() == 1);
}

static void test_empty(void) {
    CHECK(store("empty payload", NULL, 0) == 0);
    CHECK(store("empty payload 2", "", 0) == 0);
    void *d = NULL;
    size_t n = 99;
    CHECK(jit_cache_load("empty payload", 13, &d, &n) == 1 && d != NULL && n == 0);
    free(d);
    CHECK(load_is("empty payload 2", "", 0));
    /* the empty key is a key like any other */
    CHECK(jit_cache_store("", 0, "k", 1) == 0);
    CHECK(load_is("", "k", 1));
    CHECK(jit_cache_clear() == 3);
    /* bad arguments are refused, not dereferenced */
    CHECK(jit_cache_store(NULL, 4, "x", 1) == -1);
    CHECK(jit_cache_store("k", 1, NULL, 4) == -1);
    CHECK(jit_cache_load(NULL, 4, &d, &n) == 0);
    CHECK(jit_cache_load("k", 1, NULL, &n) == 0);
    CHECK(count_files() == 0);
}

/* Store, then flip a bit at off (from the end when negative) or truncate to
 * truncate_to bytes (when >= 0): the load must miss and remove the file. */
static void corrupt_case(const char *what, long off, int truncate_to) {
    const char *key = "corrupt me";
    unsigned char payload[1000];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (unsigned char)(i * 7);
    CHECK(store(key, payload, sizeof payload) == 0);
    char path[PATH_MAX];
    entry_file(key, strlen(key), path, sizeof path);
    size_t fn = 0;
    unsigned char *f = slurp(path, &fn);
    CHECK(f != NULL);
    if (!f) return;
    if (truncate_to >= 0) {
        CHECK(truncate(path, truncate_to) == 0);
    } else {
        size_t at = off >= 0 ? (size_t)off : fn + (size_t)off;
        f[at] ^= 0x20;
        CHECK(spit(path, f, fn) == 0);
    }
    free(f);
    int missed = misses(key), gone = !exists(path);
    if (!missed || !gone) fprintf(stderr, "  %s: missed=%d removed=%d\n", what, missed, gone);
    CHECK(missed);
    CHECK(gone);
    /* and the next store heals it */
    CHECK(store(key, payload, sizeof payload) == 0);
    CHECK(load_is(key, payload, sizeof payload));
    CHECK(jit_cache_clear() == 1);
}

static void test_corrupt(void) {
    corrupt_case("magic", 0, -1);
    corrupt_case("key length", 12, -1);
    corrupt_case("key", 22, -1);
    corrupt_case("payload length", 8 + 4 + 8 + 10 + 1, -1);
    corrupt_case("payload", 500, -1);
    corrupt_case("payload end", -33, -1);
    corrupt_case("checksum", -1, -1);
    corrupt_case("truncated by one", 0, 8 + 4 + 8 + 10 + 8 + 1000 + 31);
    corrupt_case("truncated to the header", 0, 10);
    corrupt_case("truncated to nothing", 0, 0);

    /* a huge key length must not be trusted (nor overflow a size check) */
    const char *key = "huge length";
    CHECK(store(key, "abc", 3) == 0);
    char path[PATH_MAX];
    entry_file(key, strlen(key), path, sizeof path);
    size_t fn = 0;
    unsigned char *f = slurp(path, &fn);
    if (f) {
        memset(f + 12, 0xff, 8);
        CHECK(spit(path, f, fn) == 0);
        CHECK(misses(key));
        CHECK(!exists(path));
    }
    free(f);
    CHECK(count_files() == 0);
}

/* A sound file under the wrong name (what a SHA-256 collision would look like)
 * is a miss but not corrupt: it stays. */
static void test_collision(void) {
    CHECK(store("owner", "owner's code", 12) == 0);
    char a[PATH_MAX], b[PATH_MAX];
    entry_file("owner", 5, a, sizeof a);
    entry_file("intruder", 8, b, sizeof b);
    size_t n = 0;
    unsigned char *f = slurp(a, &n);
    CHECK(f && spit(b, f, n) == 0);
    free(f);
    CHECK(misses("intruder"));
    CHECK(exists(b));
    CHECK(load_is("owner", "owner's code", 12));
    CHECK(store("intruder", "mine", 4) == 0);
    CHECK(load_is("intruder", "mine", 4));
    CHECK(jit_cache_clear() == 2);
}

/* Another format version with a valid checksum: a miss, left in place (a newer
 * offload may share the directory), replaced by the next store. */
static void test_version(void) {
    CHECK(store("versioned", "v1 code", 7) == 0);
    char path[PATH_MAX];
    entry_file("versioned", 9, path, sizeof path);
    size_t n = 0;
    unsigned char *f = slurp(path, &n);
    CHECK(f != NULL);
    if (!f) return;
    f[8] = 99;
    unsigned int len = 0;
    CHECK(EVP_Digest(f, n - 32, f + n - 32, &len, EVP_sha256(), NULL));
    CHECK(spit(path, f, n) == 0);
    free(f);
    CHECK(misses("versioned"));
    CHECK(exists(path));
    CHECK(store("versioned", "v1 again", 8) == 0);
    CHECK(load_is("versioned", "v1 again", 8));
    CHECK(jit_cache_clear() == 1);
}

static void test_disabled(void) {
    CHECK(store("kept", "kept", 4) == 0);
    static const char *off[] = {"0", "off", "No", "FALSE"};
    for (size_t i = 0; i < sizeof off / sizeof *off; i++) {
        setenv("OFFLOAD_CACHE", off[i], 1);
        CHECK(misses("kept"));
        CHECK(store("while off", "x", 1) == 0);
        CHECK(count_files() == 1);
    }
    unsetenv("OFFLOAD_CACHE");
    CHECK(load_is("kept", "kept", 4));
    CHECK(misses("while off"));
    /* clear is explicit and works whatever OFFLOAD_CACHE says */
    setenv("OFFLOAD_CACHE", "0", 1);
    CHECK(jit_cache_clear() == 1);
    unsetenv("OFFLOAD_CACHE");
    CHECK(count_files() == 0);
}

static void test_unwritable(void) {
    /* XDG_CACHE_HOME is a regular file: the directory can't be made (root too) */
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/not-a-dir", root);
    CHECK(spit(file, "x", 1) == 0);
    setenv("XDG_CACHE_HOME", file, 1);
    CHECK(store("nowhere", "x", 1) == -1);
    CHECK(misses("nowhere"));
    CHECK(jit_cache_clear() == 0);
    setenv("XDG_CACHE_HOME", xdg, 1);
    unlink(file);

    if (geteuid() == 0) {
        printf("skip: unwritable directory checks (root ignores permissions)\n");
        return;
    }
    CHECK(store("before", "before", 6) == 0);
    CHECK(chmod(dir, 0500) == 0);
    CHECK(store("read-only", "x", 1) == -1);
    CHECK(misses("read-only"));
    CHECK(load_is("before", "before", 6)); /* still readable */
    CHECK(count_files() == 1);             /* and no temp file got through */
    /* a corrupt entry that can't be removed is still just a miss */
    char path[PATH_MAX];
    entry_file("before", 6, path, sizeof path);
    CHECK(chmod(dir, 0700) == 0);
    CHECK(truncate(path, 5) == 0);
    CHECK(chmod(dir, 0500) == 0);
    CHECK(misses("before"));
    CHECK(exists(path));
    CHECK(jit_cache_clear() == 0);
    CHECK(chmod(dir, 0700) == 0);
    CHECK(jit_cache_clear() == 1);
}

/* ---- concurrency -------------------------------------------------------------- */

#define WRITERS 4
#define SHAPES 3
#define ROUNDS 200

/* Payload shape (w, k): a size of its own and bytes that say who wrote them,
 * so a reader can tell a complete payload from a mix of two. */
static size_t shape_size(int w, int k) { return 100 + (size_t)w * 30011 + (size_t)k * 7919; }

static unsigned char *shape(int w, int k, size_t *n) {
    *n = shape_size(w, k);
    unsigned char *p = malloc(*n);
    if (!p) abort();
    p[0] = (unsigned char)w;
    p[1] = (unsigned char)k;
    for (size_t j = 2; j < *n; j++) p[j] = (unsigned char)(j * 31 + (size_t)w * 7 + (size_t)k * 13);
    return p;
}

/* 1 when data/size is exactly one of the payloads a writer stores. */
static int is_whole(const unsigned char *data, size_t size) {
    if (size < 2 || data[0] >= WRITERS || data[1] >= SHAPES) return 0;
    size_t n;
    unsigned char *want = shape(data[0], data[1], &n);
    int ok = n == size && memcmp(want, data, n) == 0;
    free(want);
    return ok;
}

/* 0 when every load this round saw a whole payload and every store succeeded. */
static int hammer(int w, const char *key, int rounds) {
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        size_t n;
        unsigned char *p = shape(w, r % SHAPES, &n);
        if (jit_cache_store(key, strlen(key), p, n) != 0) bad++;
        free(p);
        void *d = NULL;
        size_t dn = 0;
        if (jit_cache_load(key, strlen(key), &d, &dn) == 1) {
            if (!is_whole(d, dn)) bad++;
            free(d);
        } else {
            bad++; /* somebody's complete entry is always there once one store is done */
        }
    }
    return bad;
}

static void test_processes(void) {
    const char *key = "shared by processes";
    pid_t kids[WRITERS];
    fflush(NULL);
    for (int w = 0; w < WRITERS; w++) {
        kids[w] = fork();
        CHECK(kids[w] >= 0);
        if (kids[w] == 0) _exit(hammer(w, key, ROUNDS) ? 1 : 0);
    }
    int running = WRITERS, hits = 0, half = 0;
    int status[WRITERS];
    for (int w = 0; w < WRITERS; w++) status[w] = -1;
    while (running > 0) {
        void *d = NULL;
        size_t n = 0;
        if (jit_cache_load(key, strlen(key), &d, &n) == 1) {
            hits++;
            if (!is_whole(d, n)) half++;
            free(d);
        }
        for (int w = 0; w < WRITERS; w++) {
            int st;
            if (status[w] == -1 && kids[w] > 0 && waitpid(kids[w], &st, WNOHANG) == kids[w]) {
                status[w] = st;
                running--;
            } else if (kids[w] < 0 && status[w] == -1) {
                status[w] = 1;
                running--;
            }
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        if (!(WIFEXITED(status[w]) && WEXITSTATUS(status[w]) == 0))
            fprintf(stderr, "  writer %d saw a bad load or a failed store (status %d)\n", w,
                    status[w]);
        CHECK(WIFEXITED(status[w]) && WEXITSTATUS(status[w]) == 0);
    }
    if (half) fprintf(stderr, "  parent saw %d partial payloads in %d hits\n", half, hits);
    CHECK(half == 0);
    void *d = NULL;
    size_t n = 0;
    CHECK(jit_cache_load(key, strlen(key), &d, &n) == 1 && is_whole(d, n));
    free(d);
    CHECK(count_files() == 1); /* every temp file renamed or removed */
    CHECK(jit_cache_clear() == 1);
}

struct worker {
    int w, bad;
};

static void *thread_main(void *arg) {
    struct worker *wk = arg;
    char own[32];
    snprintf(own, sizeof own, "thread %d", wk->w);
    wk->bad = hammer(wk->w, "shared by threads", ROUNDS / 4) + hammer(wk->w, own, ROUNDS / 8);
    return NULL;
}

static void test_threads(void) {
    pthread_t th[WRITERS];
    struct worker wk[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        wk[w] = (struct worker){.w = w, .bad = -1};
        CHECK(pthread_create(&th[w], NULL, thread_main, &wk[w]) == 0);
    }
    for (int w = 0; w < WRITERS; w++) {
        pthread_join(th[w], NULL);
        CHECK(wk[w].bad == 0);
    }
    CHECK(count_files() == 1 + WRITERS);
    CHECK(jit_cache_clear() == 1 + WRITERS);
}

/* ---- clear -------------------------------------------------------------------- */

static void tmp_path(char *out, size_t n, long pid) {
    snprintf(out, n, "%s/%064d.%ld.0123456789abcdef.tmp", dir, 0, pid);
}

static void test_clear(void) {
    CHECK(jit_cache_clear() == 0); /* empty: nothing to count */
    for (int i = 0; i < 5; i++) {
        char key[32];
        snprintf(key, sizeof key, "clear %d", i);
        CHECK(store(key, key, strlen(key)) == 0);
    }
    CHECK(count_files() == 5);

    /* a temp file whose writer is dead: a child that has exited and been reaped */
    fflush(NULL);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    CHECK(dead > 0 && waitpid(dead, NULL, 0) == dead);
    char stale[PATH_MAX], live[PATH_MAX], old[PATH_MAX];
    tmp_path(stale, sizeof stale, (long)dead);
    CHECK(spit(stale, "half", 4) == 0);
    /* one of a live writer (us): it may be renamed any moment, so it stays... */
    tmp_path(live, sizeof live, (long)getpid());
    CHECK(spit(live, "half", 4) == 0);
    /* ...unless it is hours old, when the pid can't be its writer any more */
    snprintf(old, sizeof old, "%s/%064d.%ld.fedcba9876543210.tmp", dir, 1, (long)getpid());
    CHECK(spit(old, "half", 4) == 0);
    struct timespec ts[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
    CHECK(utimensat(AT_FDCWD, old, ts, 0) == 0);
    /* a file that is not ours is not touched */
    char other[PATH_MAX];
    snprintf(other, sizeof other, "%s/notes.txt", dir);
    CHECK(spit(other, "mine", 4) == 0);

    CHECK(jit_cache_clear() == 5);
    CHECK(!exists(stale));
    CHECK(!exists(old));
    CHECK(exists(live));
    CHECK(exists(other));
    CHECK(misses("clear 0"));
    unlink(live);
    unlink(other);
    CHECK(count_files() == 0);
    CHECK(jit_cache_clear() == 0);
}

int main(void) {
    const char *tmpdir = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/offload-cache-test-XXXXXX",
             tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(xdg, sizeof xdg, "%s/xdg", root);
    snprintf(home, sizeof home, "%s/home", root);
    snprintf(dir, sizeof dir, "%s/offload", xdg);
    if (mkdir(home, 0700) != 0) {
        perror("mkdir");
        return 1;
    }
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    unsetenv("OFFLOAD_CACHE");

    test_enabled();
    test_dir();
    test_roundtrip();
    test_keys();
    test_large();
    test_empty();
    test_corrupt();
    test_collision();
    test_version();
    test_disabled();
    test_unwritable();
    test_processes();
    test_threads();
    test_clear();

    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return unit_finish();
}
