/* jit_cg_print: print() as the device's printf.
 *
 * One printf per print() call, so that the lines of different work-items do
 * not interleave mid-line (CUDA interleaves the separate calls of a warp).
 * The format is constant -- strings, sep and end are part of it -- and every
 * value is a conversion of fixed shape: ints in decimal, bools and floats as
 * jit_print.c lays them out. Called by jit_cg_call. */
#include <stdio.h>
#include <stdlib.h>

#include "jit_cg.h"

/* A print()'s format and arguments as they are gathered. */
typedef struct {
    jit_error *err;
    const jit_func *f;
    char *fmt;
    size_t len, cap;
    LLVMValueRef args[64];
    int nargs;
} print_buf;

static int fmt_add(print_buf *pb, const char *s, bool escape) {
    for (; *s; s++) {
        if (pb->len + 3 > pb->cap) { /* room for "%%" and the final '\0' */
            size_t cap = pb->cap ? pb->cap * 2 : 128;
            char *g = realloc(pb->fmt, cap);
            if (!g) return jit_error_at(pb->err, pb->f, 0, 0, "out of memory");
            pb->fmt = g;
            pb->cap = cap;
        }
        if (escape && *s == '%') pb->fmt[pb->len++] = '%';
        pb->fmt[pb->len++] = *s;
    }
    return 0;
}

/* A float printf can take without a double-double formatter: OpenCL devices
 * without float64 get "%.9g" of the float (it reads back as the same float32). */
static bool plain_float(cg *c) { return !c->m->target->fp64 && !c->m->tg.ptx; }

/* One value's conversion and arguments, promoted as C varargs are. */
static int print_value(cg *c, print_buf *pb, jit_node *k) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef v = jit_cg_expr(c, k);
    if (!v) return -1;
    jit_dtype d = jit_cg_dt_of(c, k->type);
    const char *l64 =
        c->m->tg.ptx ? "ll" : "l"; /* OpenCL C's long is 64 bits, and it has no long long */
    char conv[48];
    if (d == JIT_BOOL) {
        pb->args[pb->nargs++] = jit_print_bool(&c->m->tg, v);
        return fmt_add(pb, "%s", false);
    }
    if (jit_dtype_is_int(d)) {
        bool sg = jit_dtype_is_signed(d), wide = jit_dtype_bits(d) == 64;
        if (!wide) v = sg ? LLVMBuildSExt(b, v, c->m->i32, "") : LLVMBuildZExt(b, v, c->m->i32, "");
        pb->args[pb->nargs++] = v;
        snprintf(conv, sizeof conv, "%%%s%c", wide ? l64 : "", sg ? 'd' : 'u');
        return fmt_add(pb, conv, false);
    }
    if (plain_float(c)) {
        pb->args[pb->nargs++] = v;
        return fmt_add(pb, "%.9g", false);
    }
    bool f32 = d == JIT_F32;
    if (f32) v = LLVMBuildFPExt(b, v, c->m->f64, "");
    /* float_repr(x, bits, single, out): the digits and the form (jit_print.c
     * says what stays in C) */
    LLVMValueRef parts = jit_cg_entry_alloca(c, LLVMArrayType(c->m->i64, 6), "print.parts");
    jit_type at[4] = {jit_scalar(JIT_F64), jit_scalar(JIT_I64), jit_scalar(JIT_I64),
                      jit_array(JIT_I64, 1, JIT_LAYOUT_C)};
    at[3].space = JIT_PRIVATE;
    LLVMValueRef lv[7] = {v,
                          jit_print_float_bits(&c->m->tg, v, f32),
                          jit_cg_i64c(c, f32),
                          parts,
                          jit_cg_i64c(c, 0),
                          jit_cg_i64c(c, 6),
                          jit_cg_i64c(c, 8)};
    jit_type ret;
    /* called, not inlined: printing is a slow path, and the function is
     * large; each kernel that prints then only links it */
    if (!jit_cg_call_lib(c, k, "float_repr", at, lv, 4, false, &ret)) return -1;
    LLVMValueRef got[6];
    for (int i = 0; i < 6; i++) {
        LLVMValueRef ix[2] = {jit_cg_i64c(c, 0), jit_cg_i64c(c, i)};
        got[i] = LLVMBuildLoad2(
            b, c->m->i64, LLVMBuildGEP2(b, LLVMArrayType(c->m->i64, 6), parts, ix, 2, ""), "");
    }
    jit_print_float_parts(&c->m->tg, got, pb->args + pb->nargs);
    pb->nargs += 6;
    snprintf(conv, sizeof conv, "%%s%%.0%sd%%s%%.0%sd%%s%%.0%sd", l64, l64, l64);
    return fmt_add(pb, conv, false);
}

LLVMValueRef jit_cg_emit_print(cg *c, jit_node *n) {
    print_buf pb = {.err = c->m->err, .f = c->f};
    const char *sep = n->b ? n->b->v.name : " ", *end = n->c ? n->c->v.name : "\n";
    int limit = c->m->tg.ptx ? 32 : 63; /* CUDA's printf takes at most 32 values */
    int rc = 0;
    for (int i = 0; i < n->nkids && rc == 0; i++) {
        jit_node *k = n->kids[i];
        if (i && (rc = fmt_add(&pb, sep, true)) < 0) break;
        if (k->kind == N_STR) {
            rc = fmt_add(&pb, k->v.name, true);
            continue;
        }
        if (pb.nargs + (jit_is_floating(k->type) && !plain_float(c) ? 6 : 1) > limit) {
            rc = jit_cg_fail(
                c, k,
                "this print() passes more than %d values to the device's printf (an int or a bool "
                "takes 1, a float 6)\nSplit it into several print() calls.",
                limit);
            break;
        }
        rc = print_value(c, &pb, k);
    }
    if (rc == 0) rc = fmt_add(&pb, end, true);
    if (rc == 0 && pb.len) { /* print(end="") prints nothing */
        pb.fmt[pb.len] = '\0';
        if (jit_target_printf(&c->m->tg, pb.fmt, pb.args, pb.nargs) < 0)
            rc = jit_cg_fail(c, n, "out of memory");
    }
    free(pb.fmt);
    return rc < 0 ? NULL : jit_cg_no_value(c);
}
