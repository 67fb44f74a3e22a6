/* jit_stack: room for the recursive walks of deeply nested code.
 *
 * The JIT's walks (infer, codegen) and LLVM's and the SPIR-V translator's
 * recurse once per level of nesting, so `a + 1.0 + 1.0 + ...` with a few
 * thousand terms -- which CPython compiles -- overflows a thread's usual 8 MiB.
 * The parser bounds the nesting (JIT_MAX_DEPTH); a function that nests deeply
 * is then compiled on a thread whose stack is sized for it, while the caller
 * waits. Nothing run there may touch Python: the caller keeps the GIL. */
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "jit_tree.h"

/* Below this depth the caller's stack is plenty. A level takes 3 to 6 KiB
 * (measured with 9,000-term sums and `and`s: jit_infer's expression walk
 * is most of it); a quarter of that again is left for LLVM's and the
 * translator's own recursion. */
#define JIT_SHALLOW 200
#define JIT_STACK_PER_LEVEL (16 * 1024)
#define JIT_STACK_BASE (16u << 20)

/* Set on the threads made here: what runs on them has room already. */
static _Thread_local bool jit_on_deep_stack;

typedef struct {
    int (*fn)(void *);
    void *arg;
    int rc;
} jit_deep_call;

static void *jit_deep_main(void *p) {
    jit_deep_call *c = p;
    jit_on_deep_stack = true;
    c->rc = c->fn(c->arg);
    return NULL;
}

int jit_with_stack(int depth, int (*fn)(void *), void *arg, jit_error *err) {
    if (depth < JIT_SHALLOW || jit_on_deep_stack) return fn(arg);
    if (depth > JIT_MAX_DEPTH) depth = JIT_MAX_DEPTH;
    size_t size =
        JIT_STACK_BASE + (size_t)depth * JIT_STACK_PER_LEVEL; /* reserved, touched as used */
    jit_deep_call c = {fn, arg, -1};
    pthread_attr_t attr;
    pthread_t th;
    int e = pthread_attr_init(&attr);
    if (!e) e = pthread_attr_setstacksize(&attr, size);
    if (!e) e = pthread_create(&th, &attr, jit_deep_main, &c);
    pthread_attr_destroy(&attr);
    if (e) {
        err->compile_error = false;
        err->line = err->col = 0;
        snprintf(
            err->msg, sizeof err->msg,
            "cannot start a thread with %zu MiB of stack to compile code nested %d levels deep: %s",
            size >> 20, depth, strerror(e));
        return -1;
    }
    pthread_join(th, NULL);
    return c.rc;
}
