/* jit_tree: the JIT's typed tree -- a Python function after parsing.
 *
 * jit_parse.c builds it from the function's `ast` (names resolved: locals are
 * variable numbers, globals and closure cells become constants or compile-time
 * references); jit_infer.c fills in every node's type for one signature;
 * jit_codegen.c turns it into LLVM IR. Nodes live in the function's arena and
 * die with it. Internal to jit/. */
#ifndef JIT_TREE_H
#define JIT_TREE_H

#include <stdint.h>

#include "jit.h"
#include "jit_types.h"

typedef enum {
    /* expressions */
    N_CONST,   /* v.i / v.f / v.z, type set by the parser (weak, bool or a global's dtype);
                  op JIT_CONST_TOO_BIG while parsing: an int literal past 64 bits,
                  which only Python arithmetic on it may use (jit_parse.c) */
    N_VAR,     /* v.var */
    N_REF,     /* a compile-time thing: v.ref */
    N_BINOP,   /* a op b */
    N_UNARY,   /* op a */
    N_COMPARE, /* kids[0] ops[0] kids[1] ops[1] kids[2] ... (chained) */
    N_BOOLOP,  /* kids joined by op (OP_AND / OP_OR), short-circuit */
    N_IFEXP,   /* b if a else c */
    N_CALL,    /* a(kids...) */
    N_ATTR,    /* a.v.name */
    N_INDEX,   /* a[kids...] */
    N_TUPLE,   /* (kids...) */
    N_STR, /* a constant string, v.name (UTF-8): only print()'s arguments, sep (b) and end (c) */
    /* statements */
    S_ASSIGN,    /* kids (targets) = a; a target is N_VAR, N_INDEX or N_TUPLE of them */
    S_AUGASSIGN, /* a op= b */
    S_EXPR,      /* a */
    S_IF,        /* if a: body else: orelse */
    S_FOR,       /* for a (N_VAR) in range(kids...): body */
    S_WHILE,     /* while a: body */
    S_BREAK,
    S_CONTINUE,
    S_RETURN, /* return [a] */
    S_PASS,
} jit_node_kind;

#define JIT_CONST_TOO_BIG 1

typedef enum {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_FLOORDIV,
    OP_MOD,
    OP_POW,
    OP_LSHIFT,
    OP_RSHIFT,
    OP_BITAND,
    OP_BITOR,
    OP_BITXOR,
    OP_NEG,
    OP_POS,
    OP_INVERT,
    OP_NOT,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_AND,
    OP_OR,
} jit_op;

/* Things a kernel can name that are not values. */
typedef enum {
    REF_MODULE,  /* math, numpy, offload: only for attribute access */
    REF_BUILTIN, /* v.ref.id: a row of jit_builtins (jit_builtins.h) */
    REF_DTYPE,   /* np.float32 / ol.float32 used as a cast */
    REF_DEVFUNC, /* an @ol.device_func: v.ref.func */
} jit_ref_kind;

typedef struct jit_func jit_func;
typedef struct jit_node jit_node;

struct jit_node {
    uint8_t kind, op;
    int line, col; /* 1-based, in the file */
    jit_type type; /* set by jit_infer */
    jit_node *a, *b, *c;
    jit_node **kids;
    int nkids;
    uint8_t *ops; /* N_COMPARE: nkids - 1 operators */
    jit_node **body, **orelse;
    int nbody, norelse;
    union {
        int64_t i;
        double f;
        double z[2]; /* a complex N_CONST: real (aliasing f), imaginary */
        int var;
        const char *name;
        struct {
            uint8_t kind, id; /* jit_ref_kind; builtin row, jit_dtype or module (0 math, 1 numpy, 2
                                 offload) */
            jit_func *func;
        } ref;
    } v;
};

typedef struct {
    const char *name;
    int line, col; /* first assignment, for error messages */
    bool in_code;  /* a node names it: a variable assigned only in code that a
                      compile-time decision dropped does not */
} jit_var;

struct jit_func {
    const void *origin;    /* the Python function parsed: an identity compared while
                              parsing (recursion, shared callees), never dereferenced,
                              so the Kernel that owns the function is all that holds it */
    char *name, *filename; /* malloc'ed */
    char **lines;          /* the file's lines of this function, for carets */
    int first_line, nlines;
    int nparams; /* variables 0..nparams-1 are the parameters */
    jit_var *vars;
    int nvars;
    jit_node **body;
    int nbody;
    bool is_kernel;
    unsigned char source_hash[32]; /* SHA-256 of the source and the constants read */
    /* arena */
    void **blocks;
    int nblocks;
    size_t used;
    jit_type *var_types; /* set by jit_infer for the signature being compiled */
    jit_func **callees;  /* device functions named, parsed once (owned) */
    int ncallees;
    int depth; /* the deepest nesting of statements and expressions,
                  callees' included (jit_with_stack) */
    /* jit_func_assume_in_range: accesses the caller proved in range */
    struct jit_in_range {
        int arr, axis, idx; /* array variable arr's axis indexed by variable idx */
    } in_range[16];
    int nin_range;
};

/* Nesting deeper than this is a CompileError: CPython 3.11 itself compiles
 * about 3,000 levels (`a + 1 + 1 ...` with ~2,990 terms) under its default
 * recursion limit, and ast.parse about as many. */
#define JIT_MAX_DEPTH 10000

/* jit_parse.c */
void *jit_arena_alloc(jit_func *f, size_t n); /* zeroed */
int jit_error_at(jit_error *err, const jit_func *f, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* jit_stack.c: fn(arg) on a stack with room for code nested depth levels
 * deep (this thread's when that is shallow). fn must not touch Python. Its
 * result, or -1 with err set when no such thread can be had. */
int jit_with_stack(int depth, int (*fn)(void *), void *arg, jit_error *err);

/* jit_flow.c: a CompileError at the first read of a variable that some path
 * reaches unassigned (Python's UnboundLocalError, at compile time). */
int jit_check_assigned(jit_func *f, jit_error *err);

/* jit_infer.c: types every node for these parameter types (the kernel's item
 * first); ret gets the return type of a device function. */
int jit_infer(jit_func *f, const jit_type *params, jit_type *ret, jit_error *err);

#endif
