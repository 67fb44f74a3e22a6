/* jit: Python functions to device code -- the JIT's face to the offload module.
 *
 *   jit_func_parse   the function's source (inspect + ast, walked from C) into a
 *                    tree with names resolved; globals and closure numbers are
 *                    read here, once, as numba does at first compile
 *   jit_compile      types the tree for one signature (NEP 50 promotion),
 *                    generates LLVM IR and lowers it for one target: SPIR-V,
 *                    SPIR 1.2 bitcode (via SPIR-V) or PTX; cached in memory by
 *                    the caller and on disk here
 *
 * How a kernel's parameters arrive (the launcher packs them in this order):
 *   for each argument after the item:
 *     array  -> global pointer to its buffer, i64 byte offset of element 0,
 *               i64 shape[ndim], i64 strides[ndim] (bytes)
 *     tuple of arrays (jit_func_parse's arrays) -> each element, in order, as
 *               an array argument of its own
 *     scalar -> its value: the dtype's width; weak int as i64, weak float as
 *               f64 (f32 on a target without fp64), bool as i8; a complex
 *               number by value as <2 x float> / <2 x double> (OpenCL's
 *               float2 / double2: 8 / 16 bytes, real part first), a weak
 *               complex as complex128 (complex64 without fp64)
 *   then i64 range[range_ndim] (the Range the user asked for; the grid may be
 *   larger and the kernel guards the tail);
 *   then, with JIT_BOUNDSCHECK only, a global pointer to the bounds record
 *   (JIT_BOUNDS_WORDS int64s, zeroed before the launch);
 *   then, with JIT_CANCEL only, a global pointer to the cancel flag.
 * Range dimension d is hardware dimension range_ndim-1-d: the last (fastest in
 * SYCL's row-major order) is CUDA x / OpenCL 0. Over an NdRange (JIT_NDRANGE)
 * the item is an NdItem whose ids and sizes come from the hardware; the
 * launcher makes the grid exactly the global size, so nothing is guarded.
 *
 * Called by module/. Parsing (jit_func_parse, jit_func_from_ast, the loop
 * functions) reads Python objects and needs the GIL; jit_compile touches
 * none and runs without it, one compile of a jit_func at a time (it types
 * the function in place). Knows nothing of devices: the caller describes
 * the target. */
#ifndef JIT_H
#define JIT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "jit_backend.h"
#include "jit_types.h"

typedef struct jit_func jit_func;

typedef struct {
    bool compile_error; /* the user's code (CompileError); else an internal failure */
    char filename[512];
    int line, col;  /* 1-based; 0 when not about a place in the source */
    char msg[4096]; /* whole message: place, source line, caret, hint */
} jit_error;

typedef enum { JIT_SPIRV = 1, JIT_SPIR12 = 2, JIT_PTX = 3 } jit_form;

typedef struct {
    jit_form form;
    int sm;        /* PTX: compute capability, e.g. 80 */
    bool fp64;     /* the device computes in float64 */
    bool atomic64; /* the device has 64-bit integer atomics */
    unsigned long long
        local_mem; /* bytes of local memory a work-group may use; 0: no limit (inspection) */
    int max_threads, min_blocks; /* PTX: launch bounds (CUDA's __launch_bounds__): work-items
                                    a group has at most, groups an SM should hold at once;
                                    0 when not given */
    const char *device;          /* identity for the disk cache: name, driver version */
} jit_target;

enum {
    JIT_WANT_LLVM = 1,    /* fill artifact.llvm_text (optimised IR) */
    JIT_WANT_SPIRV = 2,   /* fill artifact.spirv_text (disassembly) */
    JIT_NO_DISK = 4,      /* bypass the disk cache (inspection) */
    JIT_NDRANGE = 8,      /* launched over an NdRange: the item is an NdItem, and the
                             grid is exactly the global size (no tail to guard) */
    JIT_BOUNDSCHECK = 16, /* check every array index against its axis (numba's
                             boundscheck=True), zero steps and negative integer
                             powers known at run time; see the bounds record below */
    JIT_CANCEL = 32,      /* a last parameter: a global pointer to the device's cancel
                             flag (an int32 the host sets; ofl_runtime.h), read on loop
                             back-edges (every 1024th trip, and the first): when set,
                             the work-item returns. Not in kernels with barriers. */
};

/* JIT_BOUNDSCHECK: before each element access the kernel checks every index
 * (after Python's wrap of a negative one: -n..n-1 is valid for a signed index),
 * and two errors Python raises that only the run time knows: a zero step of a
 * `for ... in range(a, b, step)` whose step is not a constant (ValueError
 * "range() arg 3 must not be zero") and an integer `**` whose exponent is not a
 * constant and is negative (NumPy's ValueError "Integers to negative integer
 * powers are not allowed"). Without JIT_BOUNDSCHECK such a loop runs zero times
 * and such a power is 0.
 * The first work-item to find one claims the record with a compare-exchange on
 * the flag's low 32 bits (32-bit atomics exist on every device) and fills it
 * in: the first error recorded wins. What failed is skipped: where no barrier
 * could be waiting for it, the work-item leaves the kernel (as Python stops at
 * the exception), else (barriers, device functions) it goes on with the access
 * redirected to a scratch element, so no memory out of range is touched (the
 * loop running zero times, the power being 0). */
enum {
    JIT_BOUNDS_FLAG,  /* nonzero once an error was recorded */
    JIT_BOUNDS_INDEX, /* the index as written (before the wrap of a negative one);
                         JIT_FAULT_NEG_POWER: the exponent */
    JIT_BOUNDS_AXIS,
    JIT_BOUNDS_SIZE,     /* of that axis */
    JIT_BOUNDS_SITE,     /* the line of jit_artifact.bounds_sites that says where */
    JIT_BOUNDS_UNSIGNED, /* 1 when the index has an unsigned type (INDEX is then a uint64) */
    JIT_BOUNDS_KIND,     /* what went wrong: a jit_fault */
    JIT_BOUNDS_SCRATCH,  /* where a global access that failed goes instead (16 bytes: */
    JIT_BOUNDS_SCRATCH2, /*   a complex128 element) */
    JIT_BOUNDS_WORDS
};

typedef enum {
    JIT_FAULT_INDEX = 0,     /* an index out of range: IndexError */
    JIT_FAULT_ZERO_STEP = 1, /* range() with a zero step: ValueError */
    JIT_FAULT_NEG_POWER = 2, /* integer ** negative integer: ValueError */
} jit_fault;

typedef struct {
    jit_blob code;                /* what the device loads (PTX text is '\0'-terminated) */
    char entry[160];              /* the kernel's symbol */
    char *llvm_text, *spirv_text; /* malloc'ed when asked for, else NULL */
    char *bounds_sites;           /* JIT_BOUNDSCHECK: malloc'ed, one line per check, in code order:
                                     "array 'a' at <cell 3>:4:9" (an index), "at <cell 3>:5:22"
                                     (a range's step, an exponent); else NULL */
    bool disk_hit;
    double ms; /* wall time of jit_compile */
} jit_artifact;

/* With the GIL, before jit_compile: loads the JIT's device library (complex
 * arithmetic and math, jit/lib/complex.py) when an argument type is complex,
 * once per process. The parser loads it itself for a kernel that names a
 * complex value or type; a process whose kernels never meet complex numbers
 * never parses it. 0, or -1 with err set. */
int jit_lib_load_for(const jit_type *types, int ntypes, jit_error *err);

/* NULL with err set (compile_error for the user's mistakes). Keeps no reference
 * to pyfunc (the caller owns it). Kernels take the work item first; device
 * functions return values. consts (a dict, or NULL): the values of the
 * kernel's compile-time parameters (ol.constexpr) by name, which are then
 * not parameters of the device code (jit_func_nparams counts the others);
 * only read while parsing. arrays (a dict, or NULL): the kernel's
 * parameters that take a tuple of arrays, by name, each with the tuple's
 * length; each element is a parameter of the device code in the name's
 * place, and in the kernel T[k] (k compile-time) is element k, len(T) a
 * constant, and a loop over T is unrolled. */
jit_func *jit_func_parse(PyObject *pyfunc, bool is_kernel, PyObject *consts, PyObject *arrays,
                         jit_error *err);
void jit_func_free(jit_func *f);
const char *jit_func_name(const jit_func *f);
int jit_func_nparams(const jit_func *f); /* including the item for a kernel */
/* The device function behind an @ol.device_func object, parsed at its first
 * use (the module registers how to recognise them). */
void jit_set_devfunc_type(PyTypeObject *type, PyObject *(*get_pyfunc)(PyObject *));
/* The offload module, whose kernel-only functions (offload.group_barrier, ...)
 * kernels call; kept borrowed (a module lives as long as its process). */
void jit_set_offload_module(PyObject *module);

/* args: the types of the arguments after the item. */
int jit_compile(jit_func *f, const jit_type *args, int nargs, int range_ndim, const jit_target *t,
                unsigned flags, jit_artifact *out, jit_error *err);
void jit_artifact_free(jit_artifact *a);

/* What identifies this build's compiler in the disk cache's keys: a hash of
 * the sources of the JIT and the runtime, made by the build
 * (offload/ofl_build_key.h), so that a changed compiler never serves an entry
 * an older one wrote. 16 hex digits. */
const char *jit_build_key(void);

/* "(float32, array(float32, 1d, C)) over Range(1d)"; nd: NdRange */
void jit_signature_str(const jit_type *args, int nargs, int range_ndim, bool nd, char *buf,
                       size_t len);

/* ---- prange loops (jit_loops.c): %%offload cells and @offload.jit ----
 *
 * jit_loops_rewrite finds each `for v in prange(...)` in a list of statements
 * (nested pranges with nothing between them make one loop of up to 3
 * dimensions) and replaces it by a statement that hands the loop to the
 * module at run time:
 *     [r1, r2 =] __import__('offload')._loop(ID, (start, stop, step, ...), (names...))
 * where names are the loop's reads followed by its reductions. At its first
 * launch the module asks jit_loop_kernel for a kernel over the loop's body
 * (ast, keeping the cell's lines), with the reads that hold values (arrays,
 * numbers) as parameters and the rest (math, device functions) resolved
 * through a globals dict at compile time. */
typedef enum {
    JIT_RED_ADD = '+',
    JIT_RED_MUL = '*',
    JIT_RED_MIN = 'm',
    JIT_RED_MAX = 'M'
} jit_reduction;

typedef struct {
    int line, col;        /* of the outermost for */
    int ndim;             /* 1-3 */
    PyObject *targets;    /* tuple of str: the loop variables, outermost first */
    PyObject *body;       /* list: the innermost loop's statements (ast) */
    PyObject *reads;      /* tuple of str: names read and never assigned in the body */
    PyObject *reductions; /* tuple of str: names updated by s += / s *= / s = min(s, ..) / max */
    char red_ops[32];     /* a jit_reduction per reduction */
    PyObject *writes;     /* frozenset of str: reads whose arrays the body may write */
    /* tuple of (array, number of indices, axis, dimension): the accesses
     * a[..., v, ...] of a read a whose index on axis is dimension's loop
     * variable v, which the body never assigns -- in range on every trip when
     * v's range is, which the module checks before a launch */
    PyObject *direct;
    bool continues;  /* the body has a `continue` of the prange loop itself */
    bool unrollable; /* small, and no `continue`: JIT_LOOP_ACC and JIT_LOOP_STRIDE may copy it */
} jit_loop;

/* Called once per loop found; returns the loop's ID (>= 0), or -1 with a
 * Python exception. The loop is the callback's to keep (jit_loop_clear). */
typedef long (*jit_loop_found)(void *ctx, jit_loop *loop);

/* Rewrites stmts (a list, in place). lines: the file's lines (a list of str,
 * line 1 first) for the carets of errors. 0, or -1 with err set (or a Python
 * exception when err->msg is empty). */
int jit_loops_rewrite(PyObject *stmts, const char *filename, PyObject *lines, jit_loop_found found,
                      void *ctx, jit_error *err);
void jit_loop_clear(jit_loop *loop);

/* How a loop's kernel walks its iterations (docs/loops.md):
 * - JIT_LOOP_MAP: one work-item per iteration (a Range of the loop's shape).
 * - JIT_LOOP_LANES: a reduction on a CPU device. Each work-group (a run) takes
 *   one contiguous block of the iterations, flattened in C order; its
 *   JIT_LOOP_LANES_WIDTH work-items take neighbouring iterations of each row
 *   of the block, so a vectorising compiler makes one vector of them, and
 *   each accumulates privately. Rows are found once per row, not per element.
 * - JIT_LOOP_STRIDE: a reduction on a GPU, in work-groups of
 *   JIT_LOOP_GROUP. A flat loop is walked grid-stride; a nest by rows, groups
 *   of `lanes` work-items walking a row together, rows grid-stride. Each
 *   work-item accumulates privately, then each work-group combines its
 *   partials into its first work-item's (a tree through the partials array).
 * unit_steps: bit d set when dimension d steps by 1, compiled in so that
 * neighbouring iterations are seen to touch neighbouring elements. */
typedef enum { JIT_LOOP_MAP, JIT_LOOP_LANES, JIT_LOOP_ACC, JIT_LOOP_STRIDE } jit_loop_shape;
enum { JIT_LOOP_LANES_WIDTH = 16, JIT_LOOP_GROUP = 256 };

typedef struct {
    jit_loop_shape shape;
    unsigned unit_steps;
    unsigned in_range; /* bit k: loop->direct[k] is in range on every trip */
    unsigned lanes;    /* JIT_LOOP_STRIDE nests: work-items per row, a power of two <= 32 */
} jit_loop_form;

/* The loop's kernel as an ast.FunctionDef named name: the template of
 * form->shape in jit/templates/loops.py, filled in around the loop's body by
 * jit/templates/expand.py (docs/loops.md). Its parameters: the item,
 * params (a tuple of str), then per dimension start and step; for the
 * reduction shapes then per dimension the trip count, the iterations per run
 * (JIT_LOOP_LANES, JIT_LOOP_ACC) or the number of work-items (JIT_LOOP_STRIDE), the total
 * trip count, one partials array per reduction (a partial per work-item;
 * JIT_LOOP_STRIDE leaves its group's in its first work-item's) and the
 * initial values of min/max reductions (the templates' signatures spell
 * this order: PARAMS, STEPS, TRIPS, ...). New reference, or NULL with a
 * Python exception. */
PyObject *jit_loop_kernel(const jit_loop *loop, PyObject *params, const jit_loop_form *form,
                          const char *name);

/* A kernel from an ast.FunctionDef (such as jit_loop_kernel's); globals
 * resolves the names that are not parameters. lines as for jit_loops_rewrite. */
jit_func *jit_func_from_ast(PyObject *def, PyObject *globals, const char *filename, PyObject *lines,
                            int first_line, jit_error *err);

/* Tells the kernel f that wherever variable index indexes axis axis of array
 * parameter array, the index is in range and not negative: the caller proved
 * it for every value the kernel gives index (a prange loop's variable, which
 * its body never assigns: mod_loops.c checks the ranges on the host). Such
 * accesses are then neither checked nor wrapped. Part of f's source hash.
 * 0, or -1 when f has no such names (nothing is assumed). */
int jit_func_assume_in_range(jit_func *f, const char *array, int axis, const char *index);

/* The type jit_infer gives local variable var for these argument types. */
int jit_var_type(jit_func *f, const jit_type *args, int nargs, int range_ndim, bool nd,
                 const char *var, jit_type *out, jit_error *err);

#endif
