/* jit_print: the parts of print()'s bools and floats that the kernel
 * language cannot say, built in LLVM IR.
 *
 * Bools are a %s into a table of words. Floats are the shortest digits that
 * read back as the same value, laid out as repr() does for float64 and as
 * NumPy's str() for float32, in six printf conversions "%s%.0ld%s%.0ld%s%.0ld"
 * (a %.0 conversion of 0 prints nothing, which drops the parts a form lacks).
 * The algorithm that finds the digits and the form is the device library's
 * float_repr (jit/lib/print.py), which jit_cg_print calls; it stays out of
 * C because the language says it. What stays here, and why:
 *   - x's bits (jit_print_float_bits): the language has no cast that
 *     reinterprets a float as an integer, and the algorithm starts from the
 *     exponent and mantissa fields;
 *   - the strings (jit_print_float_parts): float_repr gives words and point
 *     slots as indices, and a %s takes an address in the constant table
 *     built here; the language has no strings.
 * The algorithm and the layout: docs/float-printing.md
 *
 * Called by jit_cg_print.c (jit_codegen.h); builds through jit_target.c. */
#include <stdint.h>
#include <string.h>

#include "jit_codegen.h"

/* In jit/lib/print.py's order (its W_ constants), then True and False. */
enum {
    PW_EMPTY,
    PW_MINUS,
    PW_ZERO,
    PW_MZERO,
    PW_INF,
    PW_MINF,
    PW_NAN,
    PW_EP,
    PW_EP0,
    PW_EM,
    PW_EM0,
    PW_TRUE,
    PW_FALSE,
    PW_NWORDS
};
static const char *const print_words[PW_NWORDS] = {"",   "-",   "0",  "-0",  "inf",  "-inf", "nan",
                                                   "e+", "e+0", "e-", "e-0", "True", "False"};
/* Every word in a slot of WORD_SIZE bytes, so that an index is an address by
 * one multiply-add; after the words, the point slots: slot s is "." and s-1
 * zeros (slot 0 is ""). Nothing points at byte 0 (see jit_target_const_bytes). */
enum { WORD_SIZE = 8, POINT_SLOTS = 19, POINT_SIZE = 20, POINTS_AT = 1 + PW_NWORDS * WORD_SIZE };

static LLVMValueRef words_table(jit_tgt *t) {
    if (t->print_words) return t->print_words;
    char buf[POINTS_AT + POINT_SLOTS * POINT_SIZE] = {0};
    for (int i = 0; i < PW_NWORDS; i++)
        memcpy(buf + 1 + i * WORD_SIZE, print_words[i], strlen(print_words[i]) + 1);
    for (int s = 1; s < POINT_SLOTS; s++) {
        char *slot = buf + POINTS_AT + (size_t)s * POINT_SIZE;
        slot[0] = '.';
        memset(slot + 1, '0', (size_t)s - 1);
    }
    return t->print_words = jit_target_const_bytes(t, "ofl_print_words", buf, sizeof buf);
}

/* The address of byte at + size * index of the table (index an i64). */
static LLVMValueRef table_at(jit_tgt *t, long long at, long long size, LLVMValueRef index) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(t->ctx);
    LLVMValueRef off = LLVMBuildAdd(
        t->b, LLVMConstInt(i64, (unsigned long long)at, 0),
        LLVMBuildMul(t->b, index, LLVMConstInt(i64, (unsigned long long)size, 0), ""), "");
    return LLVMBuildGEP2(t->b, LLVMInt8TypeInContext(t->ctx), words_table(t), &off, 1, "");
}

LLVMValueRef jit_print_bool(jit_tgt *t, LLVMValueRef v) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(t->ctx);
    LLVMValueRef w =
        LLVMBuildSelect(t->b, v, LLVMConstInt(i64, PW_TRUE, 0), LLVMConstInt(i64, PW_FALSE, 0), "");
    return table_at(t, 1, WORD_SIZE, w);
}

LLVMValueRef jit_print_float_bits(jit_tgt *t, LLVMValueRef x, bool f32) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(t->ctx);
    if (!f32) return LLVMBuildBitCast(t->b, x, i64, "");
    LLVMValueRef f = LLVMBuildFPTrunc(t->b, x, LLVMFloatTypeInContext(t->ctx), "");
    return LLVMBuildZExt(t->b, LLVMBuildBitCast(t->b, f, LLVMInt32TypeInContext(t->ctx), ""), i64,
                         "");
}

void jit_print_float_parts(jit_tgt *t, LLVMValueRef parts[6], LLVMValueRef out[6]) {
    for (int i = 0; i < 6; i++)
        out[i] = i == 2  ? table_at(t, POINTS_AT, POINT_SIZE, parts[i])
                 : i % 2 ? parts[i]
                         : table_at(t, 1, WORD_SIZE, parts[i]);
}
