/* jit_lib: the registry of the JIT's device library (jit_lib.h). */
#include "jit_lib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_lib_texts.h"

int jit_lib_nfiles(void) { return (int)(sizeof jit_lib_texts / sizeof *jit_lib_texts); }

jit_lib_file jit_lib_file_at(int i) {
    return (jit_lib_file){jit_lib_texts[i].name, jit_lib_texts[i].text, jit_lib_texts[i].code,
                          jit_lib_texts[i].code_size};
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock;

static void make_lock(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &a);
    pthread_mutexattr_destroy(&a);
}

void jit_lib_lock(void) {
    pthread_once(&once, make_lock);
    pthread_mutex_lock(&lock);
}

void jit_lib_unlock(void) { pthread_mutex_unlock(&lock); }

/* Filled by the parser (with the GIL), a file at a time, while other threads
 * may compile: reads and writes hold the lock. */
static jit_func *funcs[64];
static int nfuncs;

int jit_lib_add(jit_func *f) {
    jit_lib_lock();
    int rc = nfuncs == (int)(sizeof funcs / sizeof *funcs) ? -1 : 0;
    if (rc == 0) funcs[nfuncs++] = f;
    jit_lib_unlock();
    return rc;
}

jit_func *jit_lib_find(const char *name) {
    jit_func *f = NULL;
    jit_lib_lock();
    for (int i = 0; i < nfuncs && !f; i++)
        if (!strcmp(funcs[i]->name, name)) f = funcs[i];
    jit_lib_unlock();
    return f;
}

jit_func *jit_lib_find_origin(const void *origin) {
    jit_func *f = NULL;
    jit_lib_lock();
    for (int i = 0; i < nfuncs && !f; i++)
        if (funcs[i]->origin == origin) f = funcs[i];
    jit_lib_unlock();
    return f;
}

/* The compiled functions, newest first: a handful per process (one per
 * library function, argument types and target a kernel used). */
typedef struct code_entry {
    struct code_entry *next;
    char *key;
    jit_lib_code code;
} code_entry;
static code_entry *codes;
static int ncodes;

const jit_lib_code *jit_lib_code_find(const char *key) {
    for (code_entry *e = codes; e; e = e->next)
        if (!strcmp(e->key, key)) return &e->code;
    return NULL;
}

const jit_lib_code *jit_lib_code_add(const char *key, const char *sym, jit_type ret,
                                     const void *code, size_t size) {
    code_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->key = strdup(key);
    e->code.code = malloc(size ? size : 1);
    if (!e->key || !e->code.code) {
        free(e->key);
        free(e->code.code);
        free(e);
        return NULL;
    }
    snprintf(e->code.sym, sizeof e->code.sym, "%s", sym);
    e->code.ret = ret;
    memcpy(e->code.code, code, size);
    e->code.size = size;
    e->next = codes;
    codes = e;
    ncodes++;
    return &e->code;
}

int jit_lib_code_count(void) { return ncodes; }
