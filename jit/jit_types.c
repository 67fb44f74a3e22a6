/* jit_types: NumPy 2 promotion (NEP 50) for the kernel language, complex
 * dtypes and Python complex numbers included. */
#include "jit_types.h"

#include <stdio.h>

static const struct {
    const char *name;
    int bits;
} dtypes[JIT_NDTYPES] = {
    [JIT_BOOL] = {"bool", 8},         [JIT_I8] = {"int8", 8},      [JIT_I16] = {"int16", 16},
    [JIT_I32] = {"int32", 32},        [JIT_I64] = {"int64", 64},   [JIT_U8] = {"uint8", 8},
    [JIT_U16] = {"uint16", 16},       [JIT_U32] = {"uint32", 32},  [JIT_U64] = {"uint64", 64},
    [JIT_F32] = {"float32", 32},      [JIT_F64] = {"float64", 64}, [JIT_C64] = {"complex64", 64},
    [JIT_C128] = {"complex128", 128},
};

jit_type jit_scalar(jit_dtype d) { return (jit_type){JT_SCALAR, (unsigned char)d, 0, 0, 0}; }
jit_type jit_weak_int(void) { return (jit_type){JT_WEAK_INT, JIT_I64, 0, 0, 0}; }
jit_type jit_weak_float(void) { return (jit_type){JT_WEAK_FLOAT, JIT_F64, 0, 0, 0}; }
jit_type jit_weak_complex(void) { return (jit_type){JT_WEAK_COMPLEX, JIT_C128, 0, 0, 0}; }
jit_type jit_array(jit_dtype d, int ndim, jit_layout layout) {
    return (jit_type){JT_ARRAY, (unsigned char)d, (unsigned char)ndim, (unsigned char)layout,
                      JIT_GLOBAL};
}

bool jit_type_eq(jit_type a, jit_type b) {
    return a.kind == b.kind && a.dtype == b.dtype && a.ndim == b.ndim && a.layout == b.layout &&
           a.space == b.space;
}

bool jit_dtype_is_int(jit_dtype d) { return d >= JIT_I8 && d <= JIT_U64; }
bool jit_dtype_is_signed(jit_dtype d) { return d >= JIT_I8 && d <= JIT_I64; }
bool jit_dtype_is_float(jit_dtype d) { return d == JIT_F32 || d == JIT_F64; }
bool jit_dtype_is_complex(jit_dtype d) { return d == JIT_C64 || d == JIT_C128; }
jit_dtype jit_complex_part(jit_dtype d) { return d == JIT_C64 ? JIT_F32 : JIT_F64; }
jit_dtype jit_complex_of(jit_dtype part) { return part == JIT_F32 ? JIT_C64 : JIT_C128; }
int jit_dtype_bits(jit_dtype d) { return dtypes[d].bits; }
int jit_dtype_size(jit_dtype d) { return dtypes[d].bits / 8; }
const char *jit_dtype_name(jit_dtype d) { return d < JIT_NDTYPES ? dtypes[d].name : "?"; }

int jit_dtype_from_numpy(char kind, int itemsize) {
    for (int d = 0; d < JIT_NDTYPES; d++) {
        char k = d == JIT_BOOL             ? 'b'
                 : jit_dtype_is_float(d)   ? 'f'
                 : jit_dtype_is_complex(d) ? 'c'
                 : jit_dtype_is_signed(d)  ? 'i'
                                           : 'u';
        if (k == kind && jit_dtype_size(d) == itemsize) return d;
    }
    return -1;
}

bool jit_is_number(jit_type t) {
    return t.kind == JT_SCALAR || t.kind == JT_WEAK_INT || t.kind == JT_WEAK_FLOAT ||
           t.kind == JT_WEAK_COMPLEX;
}
jit_dtype jit_concrete(jit_type t) { return (jit_dtype)t.dtype; }
bool jit_is_floating(jit_type t) {
    return t.kind == JT_WEAK_FLOAT || t.kind == JT_WEAK_COMPLEX ||
           (t.kind == JT_SCALAR && (jit_dtype_is_float(t.dtype) || jit_dtype_is_complex(t.dtype)));
}
bool jit_is_complex(jit_type t) {
    return t.kind == JT_WEAK_COMPLEX || (t.kind == JT_SCALAR && jit_dtype_is_complex(t.dtype));
}
jit_type jit_real_of(jit_type t) {
    if (t.kind == JT_WEAK_COMPLEX) return jit_weak_float();
    if (t.kind == JT_SCALAR && jit_dtype_is_complex(t.dtype))
        return jit_scalar(jit_complex_part(t.dtype));
    return t;
}
bool jit_is_integral(jit_type t) {
    return t.kind == JT_WEAK_INT || (t.kind == JT_SCALAR && jit_dtype_is_int(t.dtype));
}

static jit_dtype int_of(bool is_signed, int bits) {
    static const jit_dtype s[] = {JIT_I8, JIT_I16, JIT_I32, JIT_I64};
    static const jit_dtype u[] = {JIT_U8, JIT_U16, JIT_U32, JIT_U64};
    int i = bits <= 8 ? 0 : bits <= 16 ? 1 : bits <= 32 ? 2 : 3;
    return is_signed ? s[i] : u[i];
}

static jit_dtype promote_dtypes(jit_dtype a, jit_dtype b);

/* A complex dtype with any other: the complex of the promotion of its part
 * with the other's real type (complex64 with int32 is complex128, as float32
 * with int32 is float64). */
static jit_dtype promote_complex(jit_dtype a, jit_dtype b) {
    jit_dtype pa = jit_dtype_is_complex(a) ? jit_complex_part(a) : a,
              pb = jit_dtype_is_complex(b) ? jit_complex_part(b) : b;
    jit_dtype p = promote_dtypes(pa, pb);
    return jit_complex_of(p == JIT_F32 ? JIT_F32 : JIT_F64);
}

/* numpy.promote_types for two dtypes. */
static jit_dtype promote_dtypes(jit_dtype a, jit_dtype b) {
    if (a == b) return a;
    if (a == JIT_BOOL) return b;
    if (b == JIT_BOOL) return a;
    if (jit_dtype_is_complex(a) || jit_dtype_is_complex(b)) return promote_complex(a, b);
    bool fa = jit_dtype_is_float(a), fb = jit_dtype_is_float(b);
    if (fa && fb) return JIT_F64;
    if (fa || fb) { /* float32 holds integers of up to 16 bits exactly */
        jit_dtype f = fa ? a : b, i = fa ? b : a;
        return f == JIT_F32 && jit_dtype_bits(i) <= 16 ? JIT_F32 : JIT_F64;
    }
    bool sa = jit_dtype_is_signed(a), sb = jit_dtype_is_signed(b);
    int ba = jit_dtype_bits(a), bb = jit_dtype_bits(b);
    if (sa == sb) return int_of(sa, ba > bb ? ba : bb);
    int sbits = sa ? ba : bb, ubits = sa ? bb : ba;
    if (ubits < sbits) return int_of(true, sbits);
    if (ubits == 64) return JIT_F64; /* NumPy: int64 with uint64 is float64 */
    return int_of(true, ubits * 2);
}

jit_type jit_promote(jit_type a, jit_type b) {
    bool wa = a.kind != JT_SCALAR, wb = b.kind != JT_SCALAR;
    if (!wa && !wb) return jit_scalar(promote_dtypes(a.dtype, b.dtype));
    if (wa && wb) /* two Python numbers: complex wins, then float */
        return a.kind == JT_WEAK_COMPLEX || b.kind == JT_WEAK_COMPLEX ? jit_weak_complex()
               : a.kind == JT_WEAK_FLOAT || b.kind == JT_WEAK_FLOAT   ? jit_weak_float()
                                                                      : jit_weak_int();
    jit_type strong = wa ? b : a, weak = wa ? a : b;
    if (weak.kind == JT_WEAK_INT) return strong.dtype == JIT_BOOL ? jit_scalar(JIT_I64) : strong;
    if (weak.kind == JT_WEAK_FLOAT)
        return jit_dtype_is_float(strong.dtype) || jit_dtype_is_complex(strong.dtype)
                   ? strong
                   : jit_scalar(JIT_F64);
    /* a Python complex: float32 -> complex64, integers and bools -> complex128 */
    if (jit_dtype_is_complex(strong.dtype)) return strong;
    return jit_scalar(strong.dtype == JIT_F32 ? JIT_C64 : JIT_C128);
}

jit_type jit_true_divide(jit_type a, jit_type b) {
    jit_type t = jit_promote(a, b);
    if (t.kind == JT_WEAK_INT) return jit_weak_float();
    if (t.kind == JT_SCALAR && !jit_dtype_is_float(t.dtype) && !jit_dtype_is_complex(t.dtype))
        return jit_scalar(JIT_F64);
    return t;
}

jit_type jit_float_of(jit_type t) {
    if (jit_is_complex(t)) return t;
    if (t.kind == JT_WEAK_FLOAT || t.kind == JT_WEAK_INT) return jit_weak_float();
    if (t.kind == JT_SCALAR && t.dtype == JIT_F32) return t;
    return jit_scalar(JIT_F64);
}

static const char *const space_word[] = {"", "local ", "private "};

const char *jit_type_str(jit_type t, char *buf, size_t len) {
    switch ((jit_kind)t.kind) {
    case JT_SCALAR: snprintf(buf, len, "%s", jit_dtype_name(t.dtype)); break;
    case JT_WEAK_INT: snprintf(buf, len, "int"); break;
    case JT_WEAK_FLOAT: snprintf(buf, len, "float"); break;
    case JT_WEAK_COMPLEX: snprintf(buf, len, "complex"); break;
    case JT_ARRAY:
        snprintf(buf, len, "%sarray(%s, %dd, %s)", space_word[t.space], jit_dtype_name(t.dtype),
                 t.ndim, t.layout == JIT_LAYOUT_C ? "C" : "A");
        break;
    case JT_ITEM: snprintf(buf, len, "Item(%dd)", t.ndim); break;
    case JT_NDITEM: snprintf(buf, len, "NdItem(%dd)", t.ndim); break;
    case JT_GROUP: snprintf(buf, len, "Group(%dd)", t.ndim); break;
    case JT_ATOMIC:
        snprintf(buf, len, "%sAtomicRef(%s)", space_word[t.space], jit_dtype_name(t.dtype));
        break;
    case JT_TUPLE: snprintf(buf, len, "tuple of %d ints", t.ndim); break;
    case JT_NONE: snprintf(buf, len, "None"); break;
    default: snprintf(buf, len, "unknown"); break;
    }
    return buf;
}
