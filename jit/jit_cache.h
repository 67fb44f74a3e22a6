/* jit_cache: compiled device code kept on disk between processes, under
 * $XDG_CACHE_HOME/offload (default ~/.cache/offload), one file per entry.
 *
 * The caller builds the key: any bytes that identify the artifact (source hash,
 * argument types, target, compiler version, device). The file name is the
 * SHA-256 of the key; the file holds the key again, the payload and a SHA-256 of
 * both, so a collision, a truncated or a corrupt file is a miss (and the bad
 * file is removed), never wrong code. Entries are written to a temporary file in
 * the same directory and renamed into place, so concurrent processes never see
 * half an entry and the last writer wins. OFFLOAD_CACHE=0 (or "off", "no",
 * "false") turns the cache off: every load misses and stores do nothing.
 * An unwritable directory is not an error: the cache just stays empty.
 *
 * Called by the JIT's driver (jit_compile.c) only. Thread-safe. Knows nothing
 * of Python or LLVM. */
#ifndef JIT_CACHE_H
#define JIT_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* false when OFFLOAD_CACHE turns the cache off (read at every call: cheap). */
bool jit_cache_enabled(void);
/* The directory entries go to (created at the first store), e.g. for %kernels and
 * error messages. XDG_CACHE_HOME counts only when absolute (XDG spec). Never NULL:
 * "" when there is no cache (neither XDG_CACHE_HOME nor HOME) or buf is too small,
 * since a truncated path would name another directory. */
const char *jit_cache_dir(char *buf, size_t buflen);
/* 1 and *data (malloc'ed, caller frees; non-NULL even for 0 bytes) / *size on a
 * hit; 0 on a miss. A corrupt entry is removed on the way; an entry of another
 * format version or of a colliding key is left for the next store to replace. */
int jit_cache_load(const void *key, size_t keylen, void **data, size_t *size);
/* 0 when stored (or the cache is off); -1 when it could not be written, including
 * when there is no cache directory (ignored by callers: the cache is an
 * optimisation). The file is 0600, new directories 0700. */
int jit_cache_store(const void *key, size_t keylen, const void *data, size_t size);
/* Where the cache's debug lines go (a corrupt entry removed, a hit without
 * the kernel asked for): one line, no newline. The default writes
 * "offload: cache: <line>" to stderr, only when OFFLOAD_LOG=debug; the Jupyter
 * kernel points it at its log (stderr there is a cell's output). NULL puts
 * the default back. Set it before any thread uses the cache. */
void jit_cache_set_log(void (*log)(const char *line));
/* Formats a line for the sink above. */
void jit_cache_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Removes every entry (tests/unit/test_jit_cache.c), whatever OFFLOAD_CACHE
 * says, and temp files whose writer died; returns how many entries (0 when there
 * is no directory, -1 when it cannot be read). */
int jit_cache_clear(void);

#endif
