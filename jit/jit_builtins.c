/* jit_builtins: the tables of what a kernel may call (jit_builtins.h says
 * who reads them). Rows only; the rules' code is in jit_infer.c and
 * jit_codegen.c. */
#include <stdio.h>
#include <string.h>

#include "jit_builtins.h"

/* NumPy's ufuncs agree with math's functions on a scalar but for errors:
 * where math raises, a kernel gives nan or inf as NumPy does. So one row
 * serves both spellings. numpy's floor/ceil/trunc/rint keep the dtype (math's
 * give ints) and minimum/maximum propagate NaN (min/max do not): rows of
 * their own. */
const jit_builtin jit_builtins[] = {
    {"abs numpy.abs numpy.absolute", 1, 1, TY_ABS, GEN_ABS, NULL, NULL},
    {"min", 2, 8, TY_PROMOTE, GEN_MIN, NULL, NULL},
    {"max", 2, 8, TY_PROMOTE, GEN_MAX, NULL, NULL},
    {"int", 0, 1, TY_WEAK_INT, GEN_CONVERT, NULL, NULL},
    {"float", 0, 1, TY_WEAK_FLOAT, GEN_CONVERT, NULL, NULL},
    {"bool", 0, 1, TY_BOOL, GEN_CONVERT, NULL, NULL},
    {"round", 1, 1, TY_WEAK_INT, GEN_ROUND, "rint", NULL},
    {"len", 1, 1, TY_LEN, GEN_LEN, NULL, NULL},
    {"range", 1, 3, TY_RANGE, GEN_NONE, NULL, NULL},
    {"print", 0, -1, TY_PRINT, GEN_PRINT, NULL, NULL},
    {"math.sin numpy.sin", 1, 1, TY_FLOAT, GEN_MATH, "sin", "csin"},
    {"math.cos numpy.cos", 1, 1, TY_FLOAT, GEN_MATH, "cos", "ccos"},
    {"math.tan numpy.tan", 1, 1, TY_FLOAT, GEN_MATH, "tan", "ctan"},
    {"math.asin numpy.arcsin", 1, 1, TY_FLOAT, GEN_MATH, "asin", "casin"},
    {"math.acos numpy.arccos", 1, 1, TY_FLOAT, GEN_MATH, "acos", "cacos"},
    {"math.atan numpy.arctan", 1, 1, TY_FLOAT, GEN_MATH, "atan", "catan"},
    {"math.atan2 numpy.arctan2", 2, 2, TY_FLOAT, GEN_MATH, "atan2", NULL},
    {"math.sinh numpy.sinh", 1, 1, TY_FLOAT, GEN_MATH, "sinh", "csinh"},
    {"math.cosh numpy.cosh", 1, 1, TY_FLOAT, GEN_MATH, "cosh", "ccosh"},
    {"math.tanh numpy.tanh", 1, 1, TY_FLOAT, GEN_MATH, "tanh", "ctanh"},
    {"math.asinh numpy.arcsinh", 1, 1, TY_FLOAT, GEN_MATH, "asinh", "casinh"},
    {"math.acosh numpy.arccosh", 1, 1, TY_FLOAT, GEN_MATH, "acosh", "cacosh"},
    {"math.atanh numpy.arctanh", 1, 1, TY_FLOAT, GEN_MATH, "atanh", "catanh"},
    {"math.isnan numpy.isnan", 1, 1, TY_BOOL, GEN_ISNAN, NULL, NULL},
    {"math.isinf numpy.isinf", 1, 1, TY_BOOL, GEN_ISINF, NULL, NULL},
    {"math.ceil", 1, 1, TY_INT_OF_FLOAT, GEN_ROUND, "ceil", NULL},
    {"math.floor", 1, 1, TY_INT_OF_FLOAT, GEN_ROUND, "floor", NULL},
    {"math.trunc", 1, 1, TY_INT_OF_FLOAT, GEN_ROUND, "trunc", NULL},
    {"math.fabs numpy.fabs", 1, 1, TY_FLOAT, GEN_MATH, "fabs", NULL},
    {"math.sqrt numpy.sqrt", 1, 1, TY_FLOAT, GEN_MATH, "sqrt", "csqrt"},
    {"math.exp numpy.exp", 1, 1, TY_FLOAT, GEN_MATH, "exp", "cexp"},
    {"math.expm1 numpy.expm1", 1, 1, TY_FLOAT, GEN_MATH, "expm1", "cexpm1"},
    {"math.exp2 numpy.exp2", 1, 1, TY_FLOAT, GEN_MATH, "exp2", NULL},
    {"math.log numpy.log", 1, 1, TY_FLOAT, GEN_MATH, "log", "clog"},
    {"math.log10 numpy.log10", 1, 1, TY_FLOAT, GEN_MATH, "log10", "clog10"},
    {"math.log1p numpy.log1p", 1, 1, TY_FLOAT, GEN_MATH, "log1p", "clog1p"},
    {"math.log2 numpy.log2", 1, 1, TY_FLOAT, GEN_MATH, "log2", "clog2"},
    {"math.copysign numpy.copysign", 2, 2, TY_FLOAT, GEN_MATH, "copysign", NULL},
    {"math.pow", 2, 2, TY_FLOAT, GEN_MATH, "pow", NULL},
    {"math.fmod", 2, 2, TY_FLOAT, GEN_MATH, "fmod", NULL},
    {"math.erf", 1, 1, TY_FLOAT, GEN_MATH, "erf", NULL},
    {"math.erfc", 1, 1, TY_FLOAT, GEN_MATH, "erfc", NULL},
    {"math.gamma", 1, 1, TY_FLOAT, GEN_MATH, "tgamma", NULL},
    {"math.lgamma", 1, 1, TY_FLOAT, GEN_MATH, "lgamma", NULL},
    {"math.ldexp numpy.ldexp", 2, 2, TY_LDEXP, GEN_LDEXP, "ldexp", NULL},
    {"math.hypot numpy.hypot", 2, 2, TY_FLOAT, GEN_MATH, "hypot", NULL},
    {"numpy.floor", 1, 1, TY_SAME, GEN_NP_ROUND, "floor", NULL},
    {"numpy.ceil", 1, 1, TY_SAME, GEN_NP_ROUND, "ceil", NULL},
    {"numpy.trunc", 1, 1, TY_SAME, GEN_NP_ROUND, "trunc", NULL},
    {"numpy.rint", 1, 1, TY_SAME, GEN_NP_ROUND, "rint", "crint"},
    {"numpy.minimum", 2, 2, TY_PROMOTE, GEN_MINIMUM, NULL, NULL},
    {"numpy.maximum", 2, 2, TY_PROMOTE, GEN_MAXIMUM, NULL, NULL},
    {"numpy.isfinite math.isfinite", 1, 1, TY_BOOL, GEN_ISFINITE, NULL, NULL},
    /* complex numbers (math on them: the rows' cx) */
    {"complex", 0, 2, TY_WEAK_COMPLEX, GEN_COMPLEX, NULL, NULL},
    {"numpy.conj numpy.conjugate", 1, 1, TY_SAME, GEN_CONJ, NULL, NULL},
    {"offload.group_barrier", 1, 1, TY_BARRIER, GEN_BARRIER, NULL, NULL},
    {"offload.local_array", 2, 2, TY_LOCAL_ARRAY, GEN_SCRATCH, NULL, NULL},
    {"offload.private_array", 2, 2, TY_PRIVATE_ARRAY, GEN_SCRATCH, NULL, NULL},
    {"offload.AtomicRef", 2, 2, TY_ATOMIC_REF, GEN_ATOMIC_REF, NULL, NULL},
    {"numpy.signbit", 1, 1, TY_BOOL, GEN_SIGNBIT, NULL, NULL},
    {"math.nextafter numpy.nextafter", 2, 2, TY_FLOAT, GEN_MATH, "nextafter", NULL},
    {"math.cbrt numpy.cbrt", 1, 1, TY_FLOAT, GEN_MATH, "cbrt", NULL},
    /* x * y + z rounded once (C's fma; Python 3.13's math.fma): a kernel
     * asks for it, since Python's x * y + z rounds twice and never contracts */
    {"offload.fma math.fma", 3, 3, TY_FLOAT, GEN_MATH, "fma", NULL},
};
const int jit_nbuiltins = sizeof jit_builtins / sizeof *jit_builtins;

bool jit_builtin_spelling(const jit_builtin *b, int k, char *buf, size_t len) {
    const char *s = b->py;
    for (; k > 0 && s; k--)
        if ((s = strchr(s, ' '))) s++;
    if (!s) return false;
    snprintf(buf, len, "%.*s", (int)strcspn(s, " "), s);
    return true;
}

const char *jit_builtin_name(const jit_builtin *b, char *buf, size_t len) {
    size_t n = strcspn(b->py, " ");
    const char *dot = memchr(b->py, '.', n);
    const char *s = dot ? dot + 1 : b->py;
    snprintf(buf, len, "%.*s", (int)(b->py + n - s), s);
    return buf;
}

const jit_builtin *jit_builtin_find(const char *spelling) {
    char s[64];
    for (int i = 0; i < jit_nbuiltins; i++)
        for (int k = 0; jit_builtin_spelling(&jit_builtins[i], k, s, sizeof s); k++)
            if (!strcmp(s, spelling)) return &jit_builtins[i];
    return NULL;
}

#define ITEM (1 << JT_ITEM)
#define NDITEM (1 << JT_NDITEM)
#define GROUP (1 << JT_GROUP)
#define ATOMIC (1 << JT_ATOMIC)

/* One meaning per name: get_local_range is the same query of an NdItem and
 * of its Group. */
static const jit_method methods[] = {
    {"get_id", ITEM, 1, Q_ITEM_ID, 0},
    {"get_range", ITEM, 1, Q_ITEM_RANGE, 0},
    {"get_linear_id", ITEM, 0, Q_ITEM_ID, Q_ITEM_RANGE},
    {"get_global_id", NDITEM, 1, Q_GLOBAL_ID, 0},
    {"get_local_id", NDITEM, 1, Q_LOCAL_ID, 0},
    {"get_global_range", NDITEM, 1, Q_GLOBAL_RANGE, 0},
    {"get_local_range", NDITEM | GROUP, 1, Q_LOCAL_RANGE, 0},
    {"get_group", NDITEM, 0, Q_GROUP, 0},
    {"get_global_linear_id", NDITEM, 0, Q_GLOBAL_ID, Q_GLOBAL_RANGE},
    {"get_local_linear_id", NDITEM, 0, Q_LOCAL_ID, Q_LOCAL_RANGE},
    {"get_group_id", GROUP, 1, Q_GROUP_ID, 0},
    {"get_group_range", GROUP, 1, Q_GROUP_RANGE, 0},
    {"get_group_linear_id", GROUP, 0, Q_GROUP_ID, Q_GROUP_RANGE},
    {"fetch_add", ATOMIC, 1, A_ADD, 0},
    {"fetch_sub", ATOMIC, 1, A_SUB, 0},
    {"fetch_min", ATOMIC, 1, A_MIN, 0},
    {"fetch_max", ATOMIC, 1, A_MAX, 0},
    {"fetch_and", ATOMIC, 1, A_AND, 0},
    {"fetch_or", ATOMIC, 1, A_OR, 0},
    {"fetch_xor", ATOMIC, 1, A_XOR, 0},
    {"exchange", ATOMIC, 1, A_EXCHANGE, 0},
    {"load", ATOMIC, 0, A_LOAD, 0},
    {"store", ATOMIC, 1, A_STORE, 0},
    {"compare_exchange", ATOMIC, 2, A_COMPARE_EXCHANGE, 0},
};

const jit_method *jit_method_find(jit_kind self, const char *name) {
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if ((methods[i].self & (1 << self)) && !strcmp(methods[i].name, name)) return &methods[i];
    return NULL;
}

int jit_attr_find(const char *name) {
    static const char *const attrs[] = {
        [ATTR_SHAPE] = "shape", [ATTR_NDIM] = "ndim", [ATTR_SIZE] = "size"};
    for (int i = 0; i < (int)(sizeof attrs / sizeof *attrs); i++)
        if (!strcmp(attrs[i], name)) return i;
    return -1;
}
