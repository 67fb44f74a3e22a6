/* jit_lib: the JIT's device library -- functions written in the kernel
 * language that the code generator calls where a kernel computes something
 * the language can say itself (jit/lib/complex.py: complex division, powers
 * and math functions, docs/complex.md; jit/lib/print.py: print's float
 * formatting, docs/float-printing.md).
 *
 * The build embeds the library's files (jit_lib_texts.h, made by
 * scripts/embed-kernels). jit_parse runs a file and parses its functions once
 * per process, at the first kernel that needs it (complex.py: one that names
 * a complex value or type or is launched with a complex argument,
 * jit_lib_load_for; print.py: one that prints), and registers each here under
 * its name. The code generator asks for them by name (jit_cg_call_lib) and
 * compiles each once per process, argument types and target into a module of
 * its own, optimised there; its bitcode is kept here (jit_lib_code) and linked
 * into every kernel module that calls it. So a kernel's own pipeline sees a
 * small function in SSA form, not a fresh generation of it.
 *
 * One parsed function serves every kernel, and jit_infer types a function in
 * place: code generation holds jit_lib_lock from typing a library function
 * to the end of its compile, so that kernels compiling on other threads wait
 * (no device is waited for while it is held). Functions and compiled code are
 * added under the lock and never change or go after. No Python here.
 * Internal to jit/. */
#ifndef JIT_LIB_H
#define JIT_LIB_H

#include <stddef.h>

#include "jit_tree.h"

/* The embedded files: their name ("complex"), text and code (marshalled). */
typedef struct {
    const char *name, *text;
    const unsigned char *code;
    size_t code_size;
} jit_lib_file;
int jit_lib_nfiles(void);
jit_lib_file jit_lib_file_at(int i);

/* Registers f (parsed from the library) under f->name; -1 when full. */
int jit_lib_add(jit_func *f);
/* The function named name (its Python name, "cexp") or the one parsed from
 * the Python function origin; NULL if none. */
jit_func *jit_lib_find(const char *name);
jit_func *jit_lib_find_origin(const void *origin);

/* A library function compiled for one target (jit_cg_call_lib): the
 * bitcode of a module that defines it, already optimised, as sym; and its
 * result type. */
typedef struct {
    char sym[96];
    jit_type ret;
    void *code;
    size_t size;
} jit_lib_code;
/* The compiled function stored under key ("name|target|argument types"),
 * NULL if none; and storing one (the bytes copied), NULL when out of memory.
 * How many are stored names the next one's symbol. Callers hold
 * jit_lib_lock; entries live as long as the process. */
const jit_lib_code *jit_lib_code_find(const char *key);
const jit_lib_code *jit_lib_code_add(const char *key, const char *sym, jit_type ret,
                                     const void *code, size_t size);
int jit_lib_code_count(void);

/* Held while a library function is typed and generated; recursive. */
void jit_lib_lock(void);
void jit_lib_unlock(void);

#endif
