/* jit_builtins: the names a kernel calls that are not its own -- one table
 * each for functions (Python builtins, math.*, numpy.*, offload.*), methods
 * (of the item, the NdItem, its Group, an AtomicRef) and array attributes.
 *
 * A function's row holds every Python spelling of it, its arity, the rule
 * jit_infer types it by and the rule jit_codegen builds it by; jit_parse
 * resolves the spellings to Python objects, jit_loops asks which calls are
 * pure. Adding a builtin is a row (and a rule, when none fits). The rules
 * are enums, not functions, so that this file stays below the stages that
 * read it. Data only: no Python, no LLVM. Internal to jit/. */
#ifndef JIT_BUILTINS_H
#define JIT_BUILTINS_H

#include "jit_types.h"

/* How jit_infer types a call. The rules before TY_LEN take numbers; the
 * others check their own arguments. */
typedef enum {
    TY_FLOAT,        /* the float type of the arguments' promotion (jit_float_of) */
    TY_SAME,         /* the argument's type: numpy's rounding keeps integers */
    TY_PROMOTE,      /* the arguments' promotion */
    TY_ABS,          /* the argument's type; bool -> int64 */
    TY_INT_OF_FLOAT, /* a weak int for a float, else the argument's type: math's rounding */
    TY_WEAK_INT,
    TY_WEAK_FLOAT,
    TY_WEAK_COMPLEX, /* complex(re, im): a Python complex; its arguments real */
    TY_BOOL,
    TY_LDEXP, /* the float type of the first; the second an integer */
    TY_LEN,
    TY_RANGE,
    TY_PRINT,
    TY_BARRIER,
    TY_LOCAL_ARRAY,
    TY_PRIVATE_ARRAY,
    TY_ATOMIC_REF,
} jit_type_rule;

/* How jit_codegen builds a call; fn names the math function where one is used. */
typedef enum {
    GEN_MATH,    /* fn on the arguments converted to the result's float type */
    GEN_CONVERT, /* int() float() bool(): the argument converted, or zero */
    GEN_COMPLEX, /* complex(re, im) */
    GEN_CONJ,    /* numpy.conj: the complex conjugate; a real number itself */
    GEN_ABS,
    GEN_MIN,
    GEN_MAX,
    GEN_MINIMUM,
    GEN_MAXIMUM,  /* NumPy's: NaN wins */
    GEN_ROUND,    /* fn on a float, then converted to the result type */
    GEN_NP_ROUND, /* fn in the result's type */
    GEN_ISNAN,
    GEN_ISINF,
    GEN_ISFINITE,
    GEN_SIGNBIT, /* the sign bit of a float (of -0.0 and -nan too); x < 0 of an integer */
    GEN_LDEXP,
    GEN_LEN,
    GEN_PRINT,
    GEN_BARRIER,
    GEN_SCRATCH /* local and private arrays */,
    GEN_ATOMIC_REF,
    GEN_NONE, /* range(): only a for loop takes it, and builds the loop */
} jit_gen_rule;

typedef struct {
    const char *py;          /* its spellings, space-separated: "math.asin numpy.arcsin" (a
                                bare name is a Python builtin); the first names it in errors */
    signed char lo, hi;      /* arity; hi -1: any */
    unsigned char type, gen; /* jit_type_rule, jit_gen_rule */
    const char *fn;          /* the C math function (jit_target_math) */
    const char *cx;          /* on a complex argument: the function of the JIT's device
                                library (jit/lib/complex.py) that computes it, or NULL
                                (none, or built in jit_cg_complex) */
} jit_builtin;

/* A node's v.ref.id indexes this. The order is part of the source hash (the
 * disk cache key): append rows. */
extern const jit_builtin jit_builtins[];
extern const int jit_nbuiltins;
#define JIT_MAX_SPELLINGS 3

/* The row with this exact spelling ("min", "math.floor"), or NULL. */
const jit_builtin *jit_builtin_find(const char *spelling);
/* Spelling k of b (k < JIT_MAX_SPELLINGS) into buf: "numpy.arcsin"; false past the last. */
bool jit_builtin_spelling(const jit_builtin *b, int k, char *buf, size_t len);
/* The name errors show: the first spelling without its module ("asin"). */
const char *jit_builtin_name(const jit_builtin *b, char *buf, size_t len);

/* What a method does: a query of the work item (the rows with one argument
 * take the dimension; those with none and an `over` query are the linear id
 * over that range), or an atomic operation. */
typedef enum {
    Q_NONE,
    Q_ITEM_ID,
    Q_ITEM_RANGE,
    Q_GLOBAL_ID,
    Q_GLOBAL_RANGE,
    Q_LOCAL_ID,
    Q_LOCAL_RANGE,
    Q_GROUP_ID,
    Q_GROUP_RANGE,
    Q_GROUP,
    A_LOAD,
    A_STORE,
    A_EXCHANGE,
    A_COMPARE_EXCHANGE,
    A_ADD,
    A_SUB,
    A_MIN,
    A_MAX,
    A_AND,
    A_OR,
    A_XOR, /* fetch_*: from A_AND on integers only */
} jit_method_op;

typedef struct {
    const char *name;
    unsigned short self; /* the receivers that have it: bits 1 << jit_kind */
    signed char nargs;
    unsigned char op, over; /* jit_method_op */
} jit_method;

/* The method name of a receiver of kind self, or NULL. */
const jit_method *jit_method_find(jit_kind self, const char *name);

/* The attributes of an array. */
typedef enum { ATTR_SHAPE, ATTR_NDIM, ATTR_SIZE } jit_attr;
/* name's jit_attr, or -1. */
int jit_attr_find(const char *name);

#endif
