/* jit_types: the types of the kernel language and NumPy 2's promotion rules.
 *
 * A value is a scalar of one of NumPy's dtypes, a weak scalar (a Python int,
 * float or complex literal or argument: NEP 50 -- it takes the other operand's
 * type where that is as wide a kind; complex64 and complex128 are the
 * complex dtypes), an
 * array (dtype, 1-3 dims, layout), or one of the compile-time things a kernel
 * names: the work item, a tuple (shapes), a module, a function, a dtype.
 * Used by every stage of the JIT; plain values, no allocation. */
#ifndef JIT_TYPES_H
#define JIT_TYPES_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    JIT_BOOL,
    JIT_I8,
    JIT_I16,
    JIT_I32,
    JIT_I64,
    JIT_U8,
    JIT_U16,
    JIT_U32,
    JIT_U64,
    JIT_F32,
    JIT_F64,
    JIT_C64,  /* complex64: two float32, real first (NumPy's layout) */
    JIT_C128, /* complex128: two float64 */
    JIT_NDTYPES
} jit_dtype;

typedef enum {
    JT_UNKNOWN = 0,  /* not yet inferred */
    JT_SCALAR,       /* dtype */
    JT_WEAK_INT,     /* a Python int: int64 underneath */
    JT_WEAK_FLOAT,   /* a Python float: float64 underneath */
    JT_ARRAY,        /* dtype, ndim, layout */
    JT_ITEM,         /* a Range kernel's first parameter; ndim = the range's */
    JT_NDITEM,       /* an NdRange kernel's first parameter; ndim = the range's */
    JT_GROUP,        /* nd_item.get_group(); ndim */
    JT_ATOMIC,       /* ol.AtomicRef(array, index): dtype, space */
    JT_TUPLE,        /* of ints: a.shape (ndim entries, weak ints) */
    JT_NONE,         /* the value of a call that returns nothing */
    JT_WEAK_COMPLEX, /* a Python complex literal or argument: complex128 underneath */
} jit_kind;

typedef enum { JIT_LAYOUT_ANY = 0, JIT_LAYOUT_C = 1 } jit_layout;

/* Where an array's elements live: arguments are global; ol.local_array is
 * shared by a work-group; ol.private_array belongs to one work-item. */
typedef enum { JIT_GLOBAL = 0, JIT_LOCAL = 1, JIT_PRIVATE = 2 } jit_space;

typedef struct {
    unsigned char kind;   /* jit_kind */
    unsigned char dtype;  /* JT_SCALAR, JT_ARRAY */
    unsigned char ndim;   /* JT_ARRAY, JT_ITEM, JT_TUPLE */
    unsigned char layout; /* JT_ARRAY */
    unsigned char space;  /* JT_ARRAY, JT_ATOMIC: jit_space */
} jit_type;

jit_type jit_scalar(jit_dtype d);
jit_type jit_weak_int(void);
jit_type jit_weak_float(void);
jit_type jit_weak_complex(void);
jit_type jit_array(jit_dtype d, int ndim, jit_layout layout);
bool jit_type_eq(jit_type a, jit_type b);

bool jit_dtype_is_int(jit_dtype d); /* signed or unsigned, not bool */
bool jit_dtype_is_signed(jit_dtype d);
bool jit_dtype_is_float(jit_dtype d); /* float32, float64 (not complex) */
bool jit_dtype_is_complex(jit_dtype d);
/* complex64 -> float32, complex128 -> float64 (the type of each part). */
jit_dtype jit_complex_part(jit_dtype d);
/* float32 -> complex64, float64 -> complex128. */
jit_dtype jit_complex_of(jit_dtype part);
int jit_dtype_bits(jit_dtype d); /* bool: 8 (as stored) */
int jit_dtype_size(jit_dtype d);
const char *jit_dtype_name(jit_dtype d); /* "float32" */
/* From a NumPy dtype's kind ('b' 'i' 'u' 'f' 'c') and itemsize; -1 if none. */
int jit_dtype_from_numpy(char kind, int itemsize);

bool jit_is_number(jit_type t); /* scalar or weak */
/* The dtype a number is computed in: weak int -> int64, weak float -> float64,
 * weak complex -> complex128. */
jit_dtype jit_concrete(jit_type t);
/* Inexact: float or complex, scalar or weak (what ints and bools are not). */
bool jit_is_floating(jit_type t);
bool jit_is_complex(jit_type t); /* complex64, complex128 or a weak complex */
/* The real type of a complex number's parts (weak complex -> weak float); a
 * real number's own type. */
jit_type jit_real_of(jit_type t);
bool jit_is_integral(jit_type t); /* ints, weak ints (not bool) */

/* numpy.result_type for two numbers under NEP 50 (weak scalars defer). */
jit_type jit_promote(jit_type a, jit_type b);
/* The type of a / b (true division): floats stay, ints go to float64. */
jit_type jit_true_divide(jit_type a, jit_type b);
/* A floating type for math.*: float32 stays, ints and weak go to float64 (weak float stays weak).
 */
jit_type jit_float_of(jit_type t);

/* "float32", "int (weak)", "array(float32, 2d, C)", "item(2d)" into buf. */
const char *jit_type_str(jit_type t, char *buf, size_t len);

#endif
