/* launch: device kernels -- @offload.kernel and @offload.device_func, their
 * specialisation and compiling through the JIT, Range/NdRange/Event/
 * DeviceTimer, the packing of a launch's arguments, and prange loops
 * (%%offload cells, @offload.jit). Callers: lib/ (its generated kernels) and
 * module/mod_module.c. Stands on core/ and jit/; names nothing of lib/. */
#ifndef MOD_LAUNCH_H
#define MOD_LAUNCH_H

#include "core/mod_core.h"
#include "jit.h"

/* ---- mod_range.c: Range, NdRange, Event, DeviceTimer ---- */

/* What a launch runs over, in the user's order (the last dimension fastest):
 * a Range, or an NdRange (nd, with its work-group size in local). */
typedef struct {
    int ndim;
    bool nd;
    Py_ssize_t size[3], local[3];
} mod_shape;

/* A Range, an NdRange, or what Range() takes (an int, a tuple) as a shape;
 * TypeError/ValueError otherwise. */
int mod_shape_of(PyObject *o, mod_shape *out);
PyObject *mod_shape_repr(const mod_shape *s);

/* Takes ev; an Event object that waits on it. */
PyObject *mod_event_new(ofl_event *ev, const char *kernel_name);
int mod_range_add_functions(PyObject *module);

/* ---- mod_args.c: a launch's arguments, as jit.h's kernel-argument ABI ----
 * Every launch goes through here: @offload.kernel launches, the module's
 * generated kernels and prange loops. Use: mod_args_init, mod_args_place,
 * mod_args_upload, then (once the kernel is specialised for a.types)
 * mod_args_pack, ofl_launch with a.packed, mod_args_download; mod_args_clear
 * always, also after a failure. */

/* The JIT type of a kernel argument (argument i, for messages): arrays of 1-3
 * dimensions (host NumPy arrays typed as their device copy will be) and
 * numbers; TypeError for anything else. */
int mod_arg_type(PyObject *o, int i, jit_type *t);
/* The canonical numpy.dtype of a JIT dtype. */
PyObject *mod_arg_dtype_borrowed(jit_dtype d);

/* One packed value: a scalar in its type's width, or an int64 of a layout. */
typedef union {
    int64_t i64;
    double f64;
    float f32;
} mod_arg_word;

/* Launches with up to MOD_ARGS_INLINE arguments (nearly all) keep their
 * arrays in the struct, on the caller's stack: a launch costs a few
 * microseconds, and five allocations would be a tenth of that. */
#define MOD_ARGS_INLINE 8

typedef struct {
    PyObject *const *given; /* the caller's objects, borrowed */
    Py_ssize_t n;
    jit_type *types; /* [n] */
    ofl_device *dev; /* mod_args_place's */
    /* [n]: given[i] (borrowed), or where copied[i] an owned device copy of
     * the NumPy array given[i] (mod_args_upload) */
    PyObject **objs;
    bool *copied;
    int ncopied;
    ofl_arg *packed; /* [npacked], pointing into words */
    size_t npacked;
    mod_arg_word *words;
    struct { /* the storage of the arrays above when they fit */
        jit_type types[MOD_ARGS_INLINE];
        PyObject *objs[MOD_ARGS_INLINE];
        bool copied[MOD_ARGS_INLINE];
        mod_arg_word words[8 * MOD_ARGS_INLINE];
        ofl_arg packed[8 * MOD_ARGS_INLINE + 2];
    } in;
} mod_args;

/* Types args (a keeps pointers to them, not references): 0, or -1 with an
 * exception and a cleared. */
int mod_args_init(mod_args *a, PyObject *const *args, Py_ssize_t n);
/* a->dev: the device the arrays live on (compute follows data), else the
 * default; ExecutionPlacementError for two devices. */
int mod_args_place(mod_args *a);
/* Copies the NumPy arrays to a->dev. */
int mod_args_upload(mod_args *a);
/* TypeError unless jf takes a's arguments after the item: the one check of
 * an argument count. */
int mod_args_check_count(const mod_args *a, const jit_func *jf);
/* Packs a->packed in jit.h's order: the arguments, the range's sizes, then
 * bounds (the bounds record, when not NULL) and the cancel flag (when cancel). */
int mod_args_pack(mod_args *a, const mod_shape *range, ofl_buffer *bounds, bool cancel);
/* Results back into the caller's NumPy arrays (this waits for the kernel),
 * said on stderr, naming kernel_name. */
int mod_args_download(mod_args *a, const char *kernel_name);
void mod_args_clear(mod_args *a);

/* ---- mod_constexpr.c: a kernel's compile-time parameters (ol.constexpr) ---- */

typedef struct {
    int nparams;      /* the function's parameters after the item */
    uint64_t bits;    /* bit i: parameter i after the item is compile-time */
    PyObject *names;  /* owned tuple of their names, in order; NULL when there are none */
    PyObject *params; /* owned tuple of every parameter's name after the item */
} mod_constexpr;

/* A launch's run-time arguments at most, each element of a tuple of arrays
 * counted. */
#define MOD_SPREAD_MOST 128

/* Which of pyfunc's parameters are annotated offload.constexpr (among the
 * first 64 after the item). 0, or -1 with an exception. */
int mod_constexpr_of(PyObject *pyfunc, mod_constexpr *out);
void mod_constexpr_clear(mod_constexpr *c);
/* A launch's nargs arguments: the compile-time ones into values, the others
 * into rest (*nrest of them, at most MOD_SPREAD_MOST), in order, a tuple
 * given to a run-time parameter spread into its elements (borrowed).
 * lens[i]: 1 + the length of argument i's tuple so spread, else 0. values
 * and lens have room for nargs. TypeError, naming pyfunc, for a count that is
 * not c->nparams or a tuple holding anything but arrays. */
int mod_constexpr_split(const mod_constexpr *c, PyObject *pyfunc, PyObject *const *args,
                        Py_ssize_t nargs, PyObject **rest, Py_ssize_t *nrest, PyObject **values,
                        unsigned char *lens);
/* The tuples of arrays that lens (mod_constexpr_split's) says, as the dict
 * jit_func_parse takes: parameter name -> length. */
PyObject *mod_constexpr_arrays(const mod_constexpr *c, const unsigned char *lens);
/* Whether two compile-time values make the same kernel. */
bool mod_constexpr_same(PyObject *a, PyObject *b);
/* values (a tuple, in c->names' order) as the dict jit_func_parse takes. */
PyObject *mod_constexpr_dict(const mod_constexpr *c, PyObject *values);
/* "N=4, DT=float32, op=add" into out (for signatures). */
void mod_constexpr_describe(const mod_constexpr *c, PyObject *values, char *out, size_t len);
int mod_constexpr_add_functions(PyObject *module);

/* ---- mod_kernel.c: Kernel, DeviceFunction, specialisation, launch ---- */

int mod_kernel_add_functions(PyObject *module);

/* Whether o is a Kernel (@offload.kernel's). */
bool mod_kernel_check(PyObject *o);
/* A Kernel over an already parsed function (takes jf); pyfunc names it. */
PyObject *mod_kernel_from_parsed(PyObject *pyfunc, jit_func *jf);
/* Launches as kernel[range](*args) does; an Event when want_event, else None. */
PyObject *mod_kernel_launch(PyObject *kernel, const mod_shape *range, PyObject *const *args,
                            Py_ssize_t nargs, bool want_event);
/* The same, with index checks when boundscheck (the kernel's own setting
 * counts too): waits for the launch; an index out of range is an IndexError. */
PyObject *mod_kernel_launch_checked(PyObject *kernel, const mod_shape *range, PyObject *const *args,
                                    Py_ssize_t nargs, bool want_event, bool boundscheck);
/* The module's own kernels (array operations): indices right by
 * construction, so never checked unless a launch asks. */
void mod_kernel_trusted(PyObject *kernel);
/* A module kernel whose loops are bounded by its arrays' sizes and that a
 * CPU device must vectorise: no cancel checks, whose conditional load on
 * every back edge Intel's CPU compiler turns into per-lane branches (a
 * float32 max of 2**24: 7.0 ms with them, 1.8 without). An interrupt still
 * returns control at once; the kernel finishes on its own. */
void mod_kernel_runs_to_end(PyObject *kernel);
/* Its launch bounds (jit_target's), before its first launch. */
void mod_kernel_launch_bounds(PyObject *kernel, int max_threads, int min_blocks);
/* jit_var_type on the kernel's parsed function, under the lock its compiles
 * take (other threads may be compiling it); var must outlive the call. */
int mod_kernel_var_type(PyObject *kernel, const jit_type *args, int nargs, int range_ndim, bool nd,
                        const char *var, jit_type *out, jit_error *err);

/* What a kernel has done so far (Kernel.stats, in C). */
typedef struct {
    long compiles, memory_hits, disk_hits;
    unsigned long long launches;
    double compile_ms; /* the JIT's, summed over the loaded specialisations */
} mod_kernel_stats;
void mod_kernel_get_stats(PyObject *kernel, mod_kernel_stats *out);

/* A jit_error as offload.CompileError (or DeviceError for internal ones). */
void mod_raise_jit(const jit_error *err);

/* ---- mod_library.c: the library's device code (module/kernels/, Python files) ---- */

/* Name in the library's kernel file file ("reduce" for reduce.py): a Kernel,
 * a DeviceFunction, ... Borrowed (the file's module lives for the process),
 * or NULL with an exception. */
PyObject *mod_library_get(const char *file, const char *name);
/* The value of an int constant of file, whose kernels are sized by it (a
 * tile's work-items, say), for C's plans to read rather than repeat: >= 0,
 * or -1 with an exception. */
Py_ssize_t mod_library_int(const char *file, const char *name);
/* Launches file's kernel name over range with the arguments that fmt, a
 * Py_BuildValue format of one item per parameter, makes of the rest ("O"
 * for arrays, dtypes and device functions, borrowed; "n" for Py_ssize_t;
 * "i" for int; "d" for double); waits as mod_kernel_launch does. 0, or -1
 * with an exception. */
int mod_library_launch(const char *file, const char *name, const mod_shape *range, const char *fmt,
                       ...);
int mod_library_add_functions(PyObject *module);

/* ---- mod_loops.c: prange, @offload.jit, LoopContext ---- */

int mod_loops_add_functions(PyObject *module);

#endif
