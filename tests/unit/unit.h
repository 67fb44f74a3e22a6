/* unit: the few lines every C unit test under tests/unit shares -- the
 * counters, CHECK macros that report file, line and function, and the closing
 * "N passed, M failed" line that CI reads. Include once, from the test's .c. */
#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "%s:%d: %s: CHECK failed: %s\n", __FILE__, __LINE__, __func__, #cond); \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (a_ && b_ && strcmp(a_, b_) == 0) {                                                     \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "%s:%d: %s: CHECK_STR failed: %s == %s (\"%s\" vs \"%s\")\n",          \
                    __FILE__, __LINE__, __func__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
        }                                                                                          \
    } while (0)

#define CHECK_HAS(text, part)                                                                      \
    do {                                                                                           \
        const char *t_ = (text), *p_ = (part);                                                     \
        if (t_ && p_ && strstr(t_, p_)) {                                                          \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "%s:%d: %s: \"%s\" not found in \"%s\"\n", __FILE__, __LINE__,         \
                    __func__, p_ ? p_ : "(null)", t_ ? t_ : "(null)");                             \
        }                                                                                          \
    } while (0)

/* The closing line and the exit status: non-zero on any failure. */
static int unit_finish(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

#endif
