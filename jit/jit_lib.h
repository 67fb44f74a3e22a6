/* jit_lib: the JIT's device library -- functions written in the kernel
 * language that the code generator calls where a kernel computes something
 * the language can say itself (jit/lib/complex.py: complex division, powers
 * and math functions; docs/complex.md).
 *
 * The build embeds the library's files (jit_lib_texts.h, made by
 * scripts/embed-kernels). jit_parse runs them and parses every function once
 * per process, at the first kernel that names a complex value or type or is
 * launched with a complex argument (jit_lib_load_for), and registers each here
 * under its name; the code generator asks for them by name and generates
 * each one a kernel calls as it does a device function (jit_cg_devfn): once
 * per kernel and argument types, always inlined. So a library function is
 * parsed once, and compiled with each kernel that uses it, as the kernel's
 * own device functions are; what is cached per target is the kernel.
 *
 * One parsed function serves every kernel, and jit_infer types a function in
 * place: code generation holds jit_lib_lock from typing a library function
 * to the end of its body, so that kernels compiling on other threads wait.
 * The registry is filled (with the GIL, by the parser) before any compile
 * reads it and never changes after. No Python here. Internal to jit/. */
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

/* Held while a library function is typed and generated; recursive. */
void jit_lib_lock(void);
void jit_lib_unlock(void);

#endif
