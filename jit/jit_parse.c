/* jit_parse: a Python function's source -> jit_tree.
 *
 * The source comes from linecache (so notebook cells work), with
 * inspect.getsourcelines as the fallback; it is parsed by the `ast` module and
 * walked here. Names are resolved once:
 * anything assigned in the function is a local variable (Python's rule), the
 * rest is looked up in the closure, the globals and the builtins and becomes a
 * constant (numbers) or a compile-time reference (math, numpy dtypes, device
 * functions). Anything else is a CompileError pointing at the construct.
 *
 * Compile-time parameters (`N: ol.constexpr`) arrive as a dict of values and
 * resolve like globals. What Python can compute from compile-time names alone
 * is computed here, by Python: an `if` whose test names no local variable
 * keeps only the branch taken, `for v in ol.static_range(...)` and a loop over
 * a compile-time tuple are unrolled with v bound to each value, and a
 * compile-time tuple's elements and length are constants.
 *
 * A parameter given a tuple of arrays (jit_func_parse's arrays) is a
 * variable per element, named T[k], and T itself a compile-time tuple of
 * stand-ins, one per element: T[k], len(T) and loops over T are then
 * computed as for any compile-time tuple, and a stand-in reads as its
 * element's variable (from_object). */
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jit_builtins.h"
#include "jit_lib.h"
#include "jit_tree.h"

#include <marshal.h> /* after Python.h (jit.h) */

/* ---- arena and errors ---- */

void *jit_arena_alloc(jit_func *f, size_t n) {
    enum { BLOCK = 64 * 1024 };
    n = (n + 15) & ~(size_t)15;
    if (n > BLOCK / 4) {
        /* a long list (a 10,000-term `and`): a block of its own, slipped in
         * before the current one so that filling that one goes on */
        void **nb = realloc(f->blocks, (size_t)(f->nblocks + 1) * sizeof *nb);
        if (!nb) return NULL;
        f->blocks = nb;
        void *big = calloc(1, n);
        if (!big) return NULL;
        if (f->nblocks) {
            f->blocks[f->nblocks] = f->blocks[f->nblocks - 1];
            f->blocks[f->nblocks - 1] = big;
        } else {
            f->blocks[0] = big;
            f->used = BLOCK; /* not a block to fill: the next allocation starts one */
        }
        f->nblocks++;
        return big;
    }
    if (!f->nblocks || f->used + n > BLOCK) {
        void **nb = realloc(f->blocks, (size_t)(f->nblocks + 1) * sizeof *nb);
        if (!nb) return NULL;
        f->blocks = nb;
        if (!(f->blocks[f->nblocks] = malloc(BLOCK))) return NULL;
        f->nblocks++;
        f->used = 0;
    }
    void *p = (char *)f->blocks[f->nblocks - 1] + f->used;
    f->used += n;
    memset(p, 0, n);
    return p;
}

int jit_error_at(jit_error *err, const jit_func *f, int line, int col, const char *fmt, ...) {
    char what[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    err->compile_error = true;
    err->line = line;
    err->col = col;
    snprintf(err->filename, sizeof err->filename, "%s", f->filename);
    /* First line of `what` is the message, the rest a hint after the caret. */
    char *hint = strchr(what, '\n');
    if (hint) *hint++ = '\0';
    int n = snprintf(err->msg, sizeof err->msg, "%s:%d:%d: %s", f->filename, line, col, what);
    int idx = line - f->first_line;
    if (idx >= 0 && idx < f->nlines && n < (int)sizeof err->msg) {
        const char *src = f->lines[idx];
        int indent = 0;
        while (src[indent] == ' ' || src[indent] == '\t') indent++;
        int len = (int)strcspn(src + indent, "\r\n");
        int caret = col - 1 - indent;
        if (caret < 0) caret = 0;
        /* a long line (a generated 2,000-term sum) is shown around the caret */
        enum { WIDE = 160, BEFORE = 60 };
        int from = 0;
        if (len > WIDE && caret > BEFORE) from = caret - BEFORE;
        int shown = len - from > WIDE ? WIDE : len - from;
        const char *pre = from ? "..." : "", *post = from + shown < len ? "..." : "";
        n += snprintf(err->msg + n, sizeof err->msg - (size_t)n, "\n    %s%.*s%s\n    %*s^", pre,
                      shown, src + indent + from, post, caret - from + (int)strlen(pre), "");
    }
    if (hint && n < (int)sizeof err->msg)
        snprintf(err->msg + n, sizeof err->msg - (size_t)n, "\n%s", hint);
    return -1;
}

static int internal_error(jit_error *err, const char *what) {
    err->compile_error = false;
    err->line = err->col = 0;
    err->filename[0] = '\0';
    /* the Python exception that caused it, if any, says more */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    snprintf(err->msg, sizeof err->msg, "%s%s%s", what, s ? ": " : "",
             s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "");
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return -1;
}

/* ---- the walk ---- */

/* The functions being parsed, innermost first: a device function is parsed
 * where it is first called, so a call back into one of these is a cycle
 * (f1 -> f2 -> f1), which would otherwise parse forever. */
typedef struct jit_chain {
    const void *origin;
    const char *name;
    const struct jit_chain *up;
} jit_chain;

typedef struct {
    jit_func *f;
    jit_error *err;
    int line0;  /* file line of the parsed text's line 1, minus 1 */
    int indent; /* columns removed by dedenting */
    PyObject *globals, *builtins, *closure_names, *closure_cells; /* borrowed; builtins a dict */
    EVP_MD_CTX *hash;
    const jit_chain *chain;   /* this function and its callers */
    int depth;                /* of the expression or statement being parsed */
    PyObject *value;          /* the Python number the expression just parsed is, when it is
                                 made of int and float literals only (fold_const); else NULL */
    const jit_node *value_of; /* the node value belongs to (literal_node) */
    PyObject *consts;         /* borrowed: the kernel's compile-time parameters by name, or NULL */
    PyObject *arrays;         /* borrowed: tuple-of-arrays parameters' lengths by name, or NULL */
    PyObject *tuples;         /* owned: each such parameter's name -> its tuple of stand-ins */
    PyObject *slots;          /* owned: a stand-in -> its element's variable number */
    PyObject *bound;          /* owned: the unrolled loops' variables bound now, by name */
    bool in_unrolled;         /* the innermost loop is unrolled: break and continue cannot
                                 leave it */
} parser;

/* The modules a kernel names (REF_MODULE's id indexes these), numpy's dtype
 * classes and the builtins' objects: recognised by identity, looked up once.
 * offload is handed in by the module itself (jit_set_offload_module). */
enum { MOD_MATH, MOD_NUMPY, MOD_OFFLOAD, MOD_BUILTINS, NMODULES };
static const char *const module_names[NMODULES] = {"math", "numpy", "offload", "builtins"};
static PyObject *modules[NMODULES], *numpy_generic, *numpy_dtype;
static PyTypeObject *devfunc_type;
static PyObject *(*devfunc_pyfunc)(PyObject *);
static PyObject *(*builtin_objs)[JIT_MAX_SPELLINGS]; /* by jit_builtins row and spelling */

void jit_set_devfunc_type(PyTypeObject *type, PyObject *(*get_pyfunc)(PyObject *)) {
    devfunc_type = type;
    devfunc_pyfunc = get_pyfunc;
}

void jit_set_offload_module(PyObject *module) { modules[MOD_OFFLOAD] = module; }

/* The JIT's device library (jit_lib.h): the namespaces its files ran in, by
 * which its functions are recognised when they call each other. */
static PyObject *lib_globals[8];
static int nlib_globals;

static bool is_library(PyObject *globals) {
    for (int i = 0; i < nlib_globals; i++)
        if (lib_globals[i] == globals) return true;
    return false;
}

static int init_known(void) {
    if (modules[MOD_MATH]) return 0;
    for (int m = 0; m < NMODULES; m++)
        if (m != MOD_OFFLOAD && !(modules[m] = PyImport_ImportModule(module_names[m]))) return -1;
    if (!(numpy_generic = PyObject_GetAttrString(modules[MOD_NUMPY], "generic")) ||
        !(numpy_dtype = PyObject_GetAttrString(modules[MOD_NUMPY], "dtype")) ||
        !(builtin_objs = calloc((size_t)jit_nbuiltins, sizeof *builtin_objs)))
        return -1;
    for (int b = 0; b < jit_nbuiltins; b++) {
        char sp[64];
        for (int k = 0; jit_builtin_spelling(&jit_builtins[b], k, sp, sizeof sp); k++) {
            char *dot = strchr(sp, '.');
            int m = MOD_BUILTINS;
            if (dot) {
                *dot = '\0';
                for (m = 0; strcmp(module_names[m], sp); m++) {
                }
            }
            /* absent: math.exp2 before Python 3.11, offload when the module did not say */
            if (modules[m] &&
                !(builtin_objs[b][k] = PyObject_GetAttrString(modules[m], dot ? dot + 1 : sp)))
                PyErr_Clear();
        }
    }
    return 0;
}

/* obj's row of jit_builtins, or -1. */
static int builtin_of(PyObject *obj) {
    for (int b = 0; b < jit_nbuiltins; b++)
        for (int k = 0; k < JIT_MAX_SPELLINGS; k++)
            if (builtin_objs[b][k] && obj == builtin_objs[b][k]) return b;
    return -1;
}

/* A numpy.dtype (borrowed) as a jit_dtype, -1 for one kernels do not take. */
static int dtype_code(PyObject *dt) {
    PyObject *kind = dt ? PyObject_GetAttrString(dt, "kind") : NULL;
    PyObject *size = dt ? PyObject_GetAttrString(dt, "itemsize") : NULL;
    int d = kind && size ? jit_dtype_from_numpy(PyUnicode_AsUTF8(kind)[0], (int)PyLong_AsLong(size))
                         : -1;
    Py_XDECREF(kind);
    Py_XDECREF(size);
    PyErr_Clear();
    return d;
}

static const char *node_type(PyObject *node) {
    const char *n = Py_TYPE(node)->tp_name;
    const char *dot = strrchr(n, '.');
    return dot ? dot + 1 : n;
}
static bool is(PyObject *node, const char *type) { return strcmp(node_type(node), type) == 0; }
/* Whether o is an ast node (ast.AST, looked up once for the process). */
static bool is_node(PyObject *o) {
    static PyObject *ast_type;
    if (!ast_type) {
        PyObject *ast = PyImport_ImportModule("ast");
        ast_type = ast ? PyObject_GetAttrString(ast, "AST") : NULL;
        Py_XDECREF(ast);
        if (!ast_type) return PyErr_Clear(), false;
    }
    return PyObject_TypeCheck(o, (PyTypeObject *)ast_type);
}

static long attr_long(PyObject *node, const char *name) {
    PyObject *v = PyObject_GetAttrString(node, name);
    long r = v && v != Py_None ? PyLong_AsLong(v) : 0;
    Py_XDECREF(v);
    PyErr_Clear();
    return r;
}

static void where(parser *p, PyObject *node, int *line, int *col) {
    *line = p->line0 + (int)attr_long(node, "lineno");
    *col = (int)attr_long(node, "col_offset") + p->indent + 1;
}

static int fail(parser *p, PyObject *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(parser *p, PyObject *node, const char *fmt, ...) {
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int line, col;
    where(p, node, &line, &col);
    return jit_error_at(p->err, p->f, line, col, "%s", what);
}

static jit_node *new_node(parser *p, PyObject *src, jit_node_kind kind) {
    jit_node *n = jit_arena_alloc(p->f, sizeof *n);
    if (!n) {
        internal_error(p->err, "out of memory");
        return NULL;
    }
    n->kind = (uint8_t)kind;
    if (src) where(p, src, &n->line, &n->col);
    return n;
}

static char *arena_strdup(jit_func *f, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = jit_arena_alloc(f, n);
    if (d) memcpy(d, s, n);
    return d;
}

static void hash_text(parser *p, const char *s) { EVP_DigestUpdate(p->hash, s, strlen(s) + 1); }

static jit_node *expr(parser *p, PyObject *node);
static int stmts(parser *p, PyObject *list, jit_node ***out, int *count);

/* Converts a Python list of expressions. */
static int expr_list(parser *p, PyObject *list, jit_node ***out, int *count) {
    Py_ssize_t n = PyList_Check(list) ? PyList_GET_SIZE(list) : 0;
    *count = (int)n;
    *out = n ? jit_arena_alloc(p->f, (size_t)n * sizeof **out) : NULL;
    if (n && !*out) return internal_error(p->err, "out of memory");
    for (Py_ssize_t i = 0; i < n; i++)
        if (!((*out)[i] = expr(p, PyList_GET_ITEM(list, i)))) return -1;
    return 0;
}

static jit_node *child(parser *p, PyObject *node, const char *field) {
    PyObject *c = PyObject_GetAttrString(node, field);
    if (!c) {
        internal_error(p->err, "malformed ast");
        return NULL;
    }
    jit_node *r = expr(p, c);
    Py_DECREF(c);
    return r;
}

static int local_index(parser *p, const char *name) {
    for (int i = 0; i < p->f->nvars; i++)
        if (strcmp(p->f->vars[i].name, name) == 0) return i;
    return -1;
}

/* The local variable that name reads here, or -1 when it reads a
 * compile-time value: an unrolled loop's variable hides the local of its
 * name (which Python's scoping made it), anything not local is a global. */
static int local_read(parser *p, const char *name) {
    return p->bound && PyDict_GetItemString(p->bound, name) ? -1 : local_index(p, name);
}

static int add_local(parser *p, const char *name, PyObject *at) {
    if (local_index(p, name) >= 0) return 0;
    if (p->consts && PyDict_GetItemString(p->consts, name))
        return fail(p, at, "'%s' is a compile-time parameter (ol.constexpr) and cannot be assigned",
                    name);
    if (p->tuples && PyDict_GetItemString(p->tuples, name))
        return fail(p, at,
                    "'%s' is a parameter given a tuple of arrays and cannot be assigned\n"
                    "Assign its elements to names of their own: a = %s[0].",
                    name, name);
    jit_func *f = p->f;
    jit_var *nv = realloc(f->vars, (size_t)(f->nvars + 1) * sizeof *nv);
    if (!nv) return internal_error(p->err, "out of memory");
    f->vars = nv;
    nv[f->nvars].name = arena_strdup(f, name);
    nv[f->nvars].in_code = false;
    if (at)
        where(p, at, &nv[f->nvars].line, &nv[f->nvars].col);
    else
        nv[f->nvars].line = nv[f->nvars].col = 0;
    f->nvars++;
    return 0;
}

/* Every name the function stores to is local (Python's scoping rule). */
static int collect_stores(parser *p, PyObject *node) {
    if (PyList_Check(node)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(node); i++)
            if (collect_stores(p, PyList_GET_ITEM(node, i)) < 0) return -1;
        return 0;
    }
    if (is(node, "Name")) {
        PyObject *ctx = PyObject_GetAttrString(node, "ctx");
        bool store = ctx && is(ctx, "Store");
        Py_XDECREF(ctx);
        if (!store) return 0;
        PyObject *id = PyObject_GetAttrString(node, "id");
        int rc = id ? add_local(p, PyUnicode_AsUTF8(id), node) : -1;
        Py_XDECREF(id);
        return rc;
    }
    static const char *const fields[] = {"targets", "target", "elts", "body", "orelse", NULL};
    if (!(is(node, "Assign") || is(node, "AugAssign") || is(node, "AnnAssign") || is(node, "For") ||
          is(node, "While") || is(node, "If") || is(node, "Tuple") || is(node, "List")))
        return 0;
    for (int i = 0; fields[i]; i++) {
        PyObject *c = PyObject_GetAttrString(node, fields[i]);
        if (!c) {
            PyErr_Clear();
            continue;
        }
        int rc = collect_stores(p, c);
        Py_DECREF(c);
        if (rc < 0) return -1;
    }
    return 0;
}

static jit_func *parse_function(PyObject *pyfunc, bool is_kernel, PyObject *consts,
                                PyObject *arrays, const jit_chain *up, jit_error *err);

/* -1 with the error when a call to fn from here closes a cycle of device
 * functions, named from the function called back to it: "f1 -> f2 -> f1". */
static int call_cycle(parser *p, PyObject *at, const void *fn) {
    int n = 0; /* links from here up to fn's */
    const jit_chain *start = p->chain;
    for (; start && start->origin != fn; start = start->up) n++;
    if (!start) return 0;
    char cycle[1024];
    size_t len = 0;
    for (int i = n; i >= 0 && len < sizeof cycle; i--) {
        const jit_chain *c = p->chain;
        for (int k = 0; k < i; k++) c = c->up;
        len += (size_t)snprintf(cycle + len, sizeof cycle - len, "%s -> ", c->name);
    }
    if (len < sizeof cycle) snprintf(cycle + len, sizeof cycle - len, "%s", start->name);
    return fail(p, at,
                "device functions call each other in a cycle: %s\n"
                "Device functions cannot be recursive, directly or through others.",
                cycle);
}

static int load_library(const char *name, jit_error *err);

/* A kernel that names a complex value or type needs the device library's
 * complex.py, one that prints needs print.py (its floats' digits): each
 * file is loaded at the first such kernel of the process, so that a process
 * whose kernels are real, or never print, does not parse it. 0, or -1 with
 * the error set. */
static int need_library(parser *p, const char *name) { return load_library(name, p->err); }

/* A NumPy complex64/complex128 scalar (a weak Python complex is PyComplex). */
static bool is_numpy_complex(PyObject *obj) {
    if (PyComplex_CheckExact(obj) || PyObject_IsInstance(obj, numpy_generic) != 1) {
        PyErr_Clear();
        return false;
    }
    PyObject *dt = PyObject_GetAttrString(obj, "dtype");
    int d = dtype_code(dt);
    Py_XDECREF(dt);
    return d >= 0 && jit_dtype_is_complex((jit_dtype)d);
}

/* obj (a Python complex: weak; a NumPy complex scalar: its dtype) into n. */
static int complex_const(PyObject *obj, jit_node *n) {
    if (PyComplex_CheckExact(obj)) {
        n->type = jit_weak_complex();
    } else {
        PyObject *dt = PyObject_GetAttrString(obj, "dtype");
        n->type = jit_scalar((jit_dtype)dtype_code(dt));
        Py_XDECREF(dt);
    }
    Py_complex z = PyComplex_AsCComplex(obj);
    if (PyErr_Occurred()) return -1;
    n->v.z[0] = z.real;
    n->v.z[1] = z.imag;
    return 0;
}

/* Whether tuple is a parameter's tuple of arrays (tuple_param's stand-ins). */
static bool holds_arrays(parser *p, PyObject *tuple) {
    return p->slots && PyTuple_GET_SIZE(tuple) &&
           PyDict_Contains(p->slots, PyTuple_GET_ITEM(tuple, 0)) == 1;
}

/* A compile-time object (a global, a closure cell, a module attribute) as a node. */
static jit_node *from_object(parser *p, PyObject *at, const char *name, PyObject *obj) {
    jit_node *n = new_node(p, at, N_CONST);
    if (!n) return NULL;
    char note[256];
    PyObject *slot = p->slots && Py_IS_TYPE(obj, &PyBaseObject_Type)
                         ? PyDict_GetItemWithError(p->slots, obj)
                         : NULL;
    if (slot) { /* an element of a tuple of arrays: its variable */
        n->kind = N_VAR;
        n->v.var = (int)PyLong_AsLong(slot);
        p->f->vars[n->v.var].in_code = true;
        return n;
    }
    if (PyBool_Check(obj)) {
        n->type = jit_scalar(JIT_BOOL);
        n->v.i = obj == Py_True;
        snprintf(note, sizeof note, "%s=%d", name, (int)n->v.i);
    } else if (PyLong_Check(obj)) {
        int overflow;
        n->v.i = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow) {
            fail(p, at, "'%s' is an integer too large for 64 bits", name);
            return NULL;
        }
        n->type = jit_weak_int();
        snprintf(note, sizeof note, "%s=%lld", name, (long long)n->v.i);
    } else if (PyFloat_Check(obj)) {
        n->type = jit_weak_float();
        n->v.f = PyFloat_AS_DOUBLE(obj);
        snprintf(note, sizeof note, "%s=%.17g", name, n->v.f);
    } else if (PyComplex_Check(obj) || is_numpy_complex(obj)) {
        if (complex_const(obj, n) < 0) {
            internal_error(p->err, "reading a complex constant");
            return NULL;
        }
        if (need_library(p, "complex") < 0) return NULL;
        snprintf(note, sizeof note, "%s=%s:%.17g%+.17gj", name,
                 jit_type_str(n->type, (char[64]){0}, 64), n->v.z[0], n->v.z[1]);
    } else if (PyObject_IsInstance(obj, numpy_generic) == 1) {
        PyObject *dt = PyObject_GetAttrString(obj, "dtype");
        int d = dtype_code(dt);
        Py_XDECREF(dt);
        if (d < 0) {
            fail(p, at,
                 "'%s' is a NumPy scalar of a type kernels do not support\n"
                 "Kernels use bool, int8-64, uint8-64, float32, float64, complex64 and "
                 "complex128.",
                 name);
            return NULL;
        }
        n->type = jit_scalar((jit_dtype)d);
        PyObject *v = jit_dtype_is_float(d) ? PyNumber_Float(obj) : PyNumber_Long(obj);
        if (!v) {
            internal_error(p->err, "reading a NumPy scalar");
            return NULL;
        }
        if (jit_dtype_is_float(d))
            n->v.f = PyFloat_AS_DOUBLE(v);
        else if (d == JIT_U64)
            n->v.i = (int64_t)PyLong_AsUnsignedLongLong(v);
        else
            n->v.i = PyLong_AsLongLong(v);
        Py_DECREF(v);
        snprintf(note, sizeof note, "%s=%s:%.17g/%lld", name, jit_dtype_name(d), n->v.f,
                 (long long)n->v.i);
    } else {
        n->kind = N_REF;
        snprintf(note, sizeof note, "%s=ref", name);
        if (obj == modules[MOD_MATH] || obj == modules[MOD_NUMPY] ||
            (PyModule_Check(obj) &&
             strcmp(PyModule_GetName(obj) ? PyModule_GetName(obj) : "", "offload") == 0)) {
            PyErr_Clear();
            n->v.ref.kind = REF_MODULE;
            n->v.ref.id = obj == modules[MOD_MATH]    ? MOD_MATH
                          : obj == modules[MOD_NUMPY] ? MOD_NUMPY
                                                      : MOD_OFFLOAD;
        } else if ((PyType_Check(obj) &&
                    PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)numpy_generic)) ||
                   PyObject_TypeCheck(obj, (PyTypeObject *)numpy_dtype)) {
            PyObject *dt = PyObject_CallMethod(modules[MOD_NUMPY], "dtype", "O", obj);
            int d = dtype_code(dt);
            Py_XDECREF(dt);
            if (d < 0) {
                fail(p, at,
                     "'%s' is a NumPy type kernels do not support\n"
                     "Kernels use bool, int8-64, uint8-64, float32, float64, complex64 and "
                     "complex128.",
                     name);
                return NULL;
            }
            if (jit_dtype_is_complex((jit_dtype)d) && need_library(p, "complex") < 0) return NULL;
            n->v.ref.kind = REF_DTYPE;
            n->v.ref.id = (uint8_t)d;
            snprintf(note, sizeof note, "%s=dtype%d", name, d);
        } else if (PyFunction_Check(obj) && is_library(PyFunction_GET_GLOBALS(obj))) {
            /* the JIT's device library calling itself: parsed once, shared, never owned */
            jit_func *callee = jit_lib_find_origin(obj);
            if (!callee) {
                if (call_cycle(p, at, obj) < 0) return NULL;
                if (!(callee = parse_function(obj, false, NULL, NULL, p->chain, p->err)))
                    return NULL;
                if (jit_lib_add(callee) < 0) {
                    jit_func_free(callee);
                    internal_error(p->err, "the JIT's device library has too many functions");
                    return NULL;
                }
            }
            if (p->depth + callee->depth > p->f->depth) p->f->depth = p->depth + callee->depth;
            n->v.ref.kind = REF_DEVFUNC;
            n->v.ref.func = callee;
            EVP_DigestUpdate(p->hash, callee->source_hash, sizeof callee->source_hash);
        } else if (devfunc_type && PyObject_TypeCheck(obj, devfunc_type)) {
            PyObject *fn = devfunc_pyfunc(obj); /* borrowed */
            jit_func *callee = NULL;
            for (int i = 0; i < p->f->ncallees; i++)
                if (p->f->callees[i]->origin == fn) callee = p->f->callees[i];
            if (!callee) {
                if (fn == p->f->origin) {
                    fail(p, at, "'%s' calls itself; device functions cannot be recursive", name);
                    return NULL;
                }
                if (call_cycle(p, at, fn) < 0) return NULL;
                jit_func **nc = realloc(p->f->callees, (size_t)(p->f->ncallees + 1) * sizeof *nc);
                if (!nc) {
                    internal_error(p->err, "out of memory");
                    return NULL;
                }
                p->f->callees = nc;
                if (!(callee = parse_function(fn, false, NULL, NULL, p->chain, p->err)))
                    return NULL;
                nc[p->f->ncallees++] = callee;
            }
            /* the callee's tree is walked from within this call's */
            if (p->depth + callee->depth > p->f->depth) p->f->depth = p->depth + callee->depth;
            n->v.ref.kind = REF_DEVFUNC;
            n->v.ref.func = callee;
            EVP_DigestUpdate(p->hash, callee->source_hash, sizeof callee->source_hash);
        } else if (PyTuple_Check(obj)) {
            fail(p, at,
                 "'%s' is a tuple%s, which a kernel uses at compile time only\n"
                 "Index it with a compile-time index (%s[0]), take len(%s), or loop over it "
                 "(for v in %s: unrolls the loop).",
                 name, holds_arrays(p, obj) ? " of arrays" : "", name, name, name);
            return NULL;
        } else {
            int b = builtin_of(obj);
            if (b < 0) {
                fail(p, at,
                     "'%s' is a %s, which a kernel cannot use\n"
                     "Kernels can read numbers (int, float, bool, NumPy scalars) and tuples of "
                     "them from globals, closures and compile-time parameters (ol.constexpr), "
                     "and call math and NumPy math functions, dtypes (np.float32) and "
                     "@offload.device_func functions.",
                     name, Py_TYPE(obj)->tp_name);
                return NULL;
            }
            if (jit_builtins[b].type == TY_WEAK_COMPLEX && need_library(p, "complex") < 0)
                return NULL;
            if (jit_builtins[b].type == TY_PRINT && need_library(p, "print") < 0) return NULL;
            n->v.ref.kind = REF_BUILTIN;
            n->v.ref.id = (uint8_t)b;
            snprintf(note, sizeof note, "%s=builtin%d", name, b);
        }
    }
    hash_text(p, note);
    return n;
}

/* What a name that is not a local variable stands for at compile time: an
 * unrolled loop's variable, a compile-time parameter, a closure variable, a
 * global or a builtin (Python's order, the unrolled loops innermost).
 * Borrowed; NULL without an exception when it names nothing, or with the
 * error set (a closure variable not set yet). */
static PyObject *static_name(parser *p, PyObject *at, const char *name) {
    PyObject *obj = NULL; /* borrowed */
    if (p->bound && (obj = PyDict_GetItemString(p->bound, name))) return obj;
    if (p->tuples && (obj = PyDict_GetItemString(p->tuples, name))) return obj;
    if (p->consts && (obj = PyDict_GetItemString(p->consts, name))) return obj;
    if (p->closure_names) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(p->closure_names); i++)
            if (strcmp(PyUnicode_AsUTF8(PyTuple_GET_ITEM(p->closure_names, i)), name) == 0) {
                obj = PyCell_GET(PyTuple_GET_ITEM(p->closure_cells, i));
                if (!obj) {
                    fail(p, at, "the closure variable '%s' is not set yet", name);
                    return NULL;
                }
                return obj;
            }
    }
    if (!obj) obj = PyDict_GetItemString(p->globals, name);
    if (!obj) obj = PyDict_GetItemString(p->builtins, name);
    PyErr_Clear();
    return obj;
}

/* A name's node; a Python int or float it stands for is also p->value, so
 * that arithmetic on such names folds as on literals (an ol.local_array's
 * size may be `GROUP * P` of compile-time parameters). */
static jit_node *resolve_global(parser *p, PyObject *at, const char *name) {
    PyObject *obj = static_name(p, at, name);
    if (!obj && !p->err->msg[0]) fail(p, at, "name '%s' is not defined", name);
    jit_node *n = obj ? from_object(p, at, name, obj) : NULL;
    if (n && (PyLong_CheckExact(obj) || PyFloat_CheckExact(obj))) {
        Py_XSETREF(p->value, Py_NewRef(obj));
        p->value_of = n;
    }
    return n;
}

/* ---- compile-time evaluation ---- */

/* Whether every name the expression reads is a compile-time one
 * (static_name's), none a local variable, so that Python can compute it
 * before the kernel runs. */
static bool names_static(parser *p, PyObject *node) {
    if (is(node, "Name")) {
        PyObject *id = PyObject_GetAttrString(node, "id");
        const char *name = id ? PyUnicode_AsUTF8(id) : NULL;
        bool ok = name && local_read(p, name) < 0;
        Py_XDECREF(id);
        PyErr_Clear();
        return ok;
    }
    /* every child node, as ast.walk would find them, without its generator:
     * parsing a library kernel asks this of every compile-time test */
    PyObject *fields = PyObject_GetAttrString((PyObject *)Py_TYPE(node), "_fields");
    bool ok = fields && PyTuple_Check(fields);
    for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(fields); i++) {
        PyObject *v = PyObject_GetAttr(node, PyTuple_GET_ITEM(fields, i));
        if (!v) {
            PyErr_Clear(); /* an optional field left unset */
            continue;
        }
        if (PyList_Check(v)) {
            for (Py_ssize_t j = 0; ok && j < PyList_GET_SIZE(v); j++)
                ok = !is_node(PyList_GET_ITEM(v, j)) || names_static(p, PyList_GET_ITEM(v, j));
        } else if (is_node(v)) {
            ok = names_static(p, v);
        }
        Py_DECREF(v);
    }
    Py_XDECREF(fields);
    PyErr_Clear();
    return ok;
}

/* The value of expression node, computed now by Python when it reads
 * compile-time names only. New reference, or NULL without an exception when
 * it reads a local variable or Python raised computing it (it is then the
 * device's to compute, or to refuse). */
static PyObject *static_value(parser *p, PyObject *node) {
    if (!names_static(p, node)) return NULL;
    PyObject *ns = PyDict_New(), *ast = PyImport_ImportModule("ast"), *code = NULL, *v = NULL;
    int rc = ns && ast ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && p->closure_names && i < PyTuple_GET_SIZE(p->closure_names);
         i++) {
        PyObject *cell = PyCell_GET(PyTuple_GET_ITEM(p->closure_cells, i));
        if (cell) rc = PyDict_SetItem(ns, PyTuple_GET_ITEM(p->closure_names, i), cell);
    }
    if (rc == 0 && p->consts) rc = PyDict_Update(ns, p->consts);
    if (rc == 0 && p->tuples) rc = PyDict_Update(ns, p->tuples);
    if (rc == 0 && p->bound) rc = PyDict_Update(ns, p->bound);
    PyObject *tree = rc == 0 ? PyObject_CallMethod(ast, "Expression", "O", node) : NULL;
    PyObject *compile = PyDict_GetItemString(PyEval_GetBuiltins(), "compile"); /* borrowed */
    if (tree && compile) code = PyObject_CallFunction(compile, "Oss", tree, p->f->filename, "eval");
    if (code) v = PyEval_EvalCode(code, p->globals, ns);
    Py_XDECREF(tree);
    Py_XDECREF(code);
    Py_XDECREF(ast);
    Py_XDECREF(ns);
    if (!v) PyErr_Clear();
    return v;
}

/* The truth of the test of node (an if statement or expression) when Python
 * computes it now: 1 or 0, part of the source hash (the test may read
 * globals, which nothing else hashes); -1 when it is the device's. */
static int static_truth(parser *p, PyObject *node) {
    PyObject *test = PyObject_GetAttrString(node, "test");
    PyObject *v = test ? static_value(p, test) : NULL;
    int truth = v ? PyObject_IsTrue(v) : -1;
    Py_XDECREF(test);
    Py_XDECREF(v);
    PyErr_Clear();
    if (truth >= 0) {
        char note[64];
        snprintf(note, sizeof note, "test %d:%d=%d", (int)attr_long(node, "lineno"),
                 (int)attr_long(node, "col_offset"), truth);
        hash_text(p, note);
    }
    return truth;
}

/* Whether node (a Name or an attribute) is spelled `static_range`, the one
 * spelling compared with offload.static_range itself. */
static bool spelled_static_range(PyObject *node) {
    const char *field = is(node, "Name") ? "id" : is(node, "Attribute") ? "attr" : NULL;
    PyObject *s = field ? PyObject_GetAttrString(node, field) : NULL;
    bool yes = s && PyUnicode_Check(s) && !PyUnicode_CompareWithASCIIString(s, "static_range");
    Py_XDECREF(s);
    PyErr_Clear();
    return yes;
}

/* The values a for loop is unrolled over: those of `ol.static_range(...)`
 * or of a compile-time tuple. A new tuple; NULL without an error for a loop
 * that is not unrolled; NULL with the error set. */
static PyObject *unrolled_values(parser *p, PyObject *loop) {
    PyObject *iter = PyObject_GetAttrString(loop, "iter"), *values = NULL;
    if (!iter) return NULL;
    PyObject *func = is(iter, "Call") ? PyObject_GetAttrString(iter, "func") : NULL;
    if (func && spelled_static_range(func)) {
        PyObject *fv = static_value(p, func);
        PyObject *marker = modules[MOD_OFFLOAD]
                               ? PyObject_GetAttrString(modules[MOD_OFFLOAD], "static_range")
                               : NULL;
        PyErr_Clear();
        if (fv && fv == marker) {
            PyObject *r = static_value(p, iter);
            values = r ? PySequence_Tuple(r) : NULL;
            Py_XDECREF(r);
            if (!values) {
                PyErr_Clear();
                fail(p, iter,
                     "ol.static_range() takes compile-time integers\n"
                     "Use literals, ol.constexpr parameters, globals or an enclosing unrolled "
                     "loop's variable; range() loops over values known at run time.");
            }
        }
        Py_XDECREF(fv);
        Py_XDECREF(marker);
    } else if (!func) {
        PyObject *v = static_value(p, iter);
        if (v && PyTuple_Check(v)) values = Py_NewRef(v);
        Py_XDECREF(v);
    }
    Py_XDECREF(func);
    Py_DECREF(iter);
    return values;
}

/* A compile-time tuple a name stands for (borrowed), or NULL. */
static PyObject *static_tuple(parser *p, PyObject *node) {
    if (!is(node, "Name")) return NULL;
    PyObject *id = PyObject_GetAttrString(node, "id");
    const char *name = id ? PyUnicode_AsUTF8(id) : NULL;
    PyObject *v = NULL;
    if (name && local_read(p, name) < 0) v = static_name(p, node, name);
    Py_XDECREF(id);
    PyErr_Clear();
    return v && PyTuple_Check(v) ? v : NULL;
}

static const struct {
    const char *py;
    jit_op op;
} binops[] = {
    {"Add", OP_ADD},
    {"Sub", OP_SUB},
    {"Mult", OP_MUL},
    {"Div", OP_DIV},
    {"FloorDiv", OP_FLOORDIV},
    {"Mod", OP_MOD},
    {"Pow", OP_POW},
    {"LShift", OP_LSHIFT},
    {"RShift", OP_RSHIFT},
    {"BitAnd", OP_BITAND},
    {"BitOr", OP_BITOR},
    {"BitXor", OP_BITXOR},
    {"USub", OP_NEG},
    {"UAdd", OP_POS},
    {"Invert", OP_INVERT},
    {"Not", OP_NOT},
    {"Eq", OP_EQ},
    {"NotEq", OP_NE},
    {"Lt", OP_LT},
    {"LtE", OP_LE},
    {"Gt", OP_GT},
    {"GtE", OP_GE},
    {"And", OP_AND},
    {"Or", OP_OR},
};

static int op_of(parser *p, PyObject *node, const char *field, PyObject *at) {
    PyObject *o = PyObject_GetAttrString(node, field);
    if (!o) return internal_error(p->err, "malformed ast");
    const char *t = node_type(o);
    Py_DECREF(o);
    for (size_t i = 0; i < sizeof binops / sizeof *binops; i++)
        if (strcmp(binops[i].py, t) == 0) return (int)binops[i].op;
    return fail(p, at,
                "the operator %s is not supported in kernels\n"
                "Kernels support + - * / // %% ** << >> & | ^ ~ and comparisons.",
                strcmp(t, "MatMult") == 0 ? "@"
                : strcmp(t, "Is") == 0    ? "'is'"
                : strcmp(t, "IsNot") == 0 ? "'is not'"
                : strcmp(t, "In") == 0    ? "'in'"
                : strcmp(t, "NotIn") == 0 ? "'not in'"
                                          : t);
}

static const struct {
    const char *py, *what, *hint;
} unsupported[] = {
    {"List", "a list",
     "Kernels work on arrays passed as arguments; use scalars or index an array."},
    {"Dict", "a dict", "Kernels work on numbers and arrays."},
    {"Set", "a set", "Kernels work on numbers and arrays."},
    {"ListComp", "a list comprehension", "Write a for loop over range(...)."},
    {"SetComp", "a set comprehension", "Write a for loop over range(...)."},
    {"DictComp", "a dict comprehension", "Write a for loop over range(...)."},
    {"GeneratorExp", "a generator expression", "Write a for loop over range(...)."},
    {"Lambda", "a lambda", "Use an @offload.device_func function."},
    {"JoinedStr", "an f-string", "Kernels work on numbers and arrays."},
    {"Await", "await", "Kernels are not coroutines."},
    {"Yield", "yield", "Kernels write their results into arrays."},
    {"YieldFrom", "yield from", "Kernels write their results into arrays."},
    {"NamedExpr", "the walrus operator :=", "Assign in a statement of its own."},
    {"Starred", "a starred expression", "Pass arguments one by one."},
    {"Slice", "a slice", "Index single elements (a[i, j]); pass views (a[::2]) as arguments."},
};

static jit_node *unsupported_expr(parser *p, PyObject *node) {
    const char *t = node_type(node);
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (strcmp(unsupported[i].py, t) == 0) {
            fail(p, node, "%s is not supported in kernels\n%s", unsupported[i].what,
                 unsupported[i].hint);
            return NULL;
        }
    fail(p, node, "this expression (%s) is not supported in kernels", t);
    return NULL;
}

/* A str constant's value (new reference), or NULL (no exception) for any other node. */
static PyObject *const_str(PyObject *node) {
    if (!is(node, "Constant")) return NULL;
    PyObject *v = PyObject_GetAttrString(node, "value");
    if (v && PyUnicode_Check(v)) return v;
    Py_XDECREF(v);
    PyErr_Clear();
    return NULL;
}

static jit_node *str_node(parser *p, PyObject *at, PyObject *str) {
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(str, &len);
    if (!u) {
        internal_error(p->err, "reading a string");
        return NULL;
    }
    if ((size_t)len != strlen(u)) { /* the device's printf stops at a NUL */
        fail(p, at, "a kernel cannot print a string that contains a NUL character");
        return NULL;
    }
    jit_node *n = new_node(p, at, N_STR);
    if (n && !(n->v.name = arena_strdup(p->f, u))) {
        internal_error(p->err, "out of memory");
        return NULL;
    }
    return n;
}

/* print(...) in a kernel: the device prints numbers and constant strings, so
 * strings are kept as N_STR nodes here (the only place a kernel takes them);
 * sep= and end= become the call's b and c (NULL: Python's defaults). */
static jit_node *print_call(parser *p, PyObject *node, jit_node *fn) {
    static const char *const what =
        "\nprint() in a kernel takes numbers, bools and constant strings, "
        "with constant sep= and end= strings.";
    jit_node *n = new_node(p, node, N_CALL);
    PyObject *args = PyObject_GetAttrString(node, "args"),
             *kws = PyObject_GetAttrString(node, "keywords");
    if (!n || !args || !kws || !PyList_Check(args) || !PyList_Check(kws)) {
        Py_XDECREF(args);
        Py_XDECREF(kws);
        if (n) internal_error(p->err, "malformed ast");
        return NULL;
    }
    n->a = fn;
    n->nkids = (int)PyList_GET_SIZE(args);
    n->kids = n->nkids ? jit_arena_alloc(p->f, (size_t)n->nkids * sizeof *n->kids) : NULL;
    int rc = n->nkids && !n->kids ? internal_error(p->err, "out of memory") : 0;
    for (int i = 0; rc == 0 && i < n->nkids; i++) {
        PyObject *a = PyList_GET_ITEM(args, i), *str = const_str(a);
        if (str) {
            n->kids[i] = str_node(p, a, str);
            Py_DECREF(str);
        } else if (is(a, "JoinedStr")) {
            fail(p, a,
                 "f-strings cannot be printed in kernels: the device has no string formatting\n"
                 "Pass the values as separate arguments: print(\"x =\", x, \"y =\", y).");
            n->kids[i] = NULL;
        } else {
            n->kids[i] = expr(p, a);
        }
        if (!n->kids[i]) rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(kws); i++) {
        PyObject *kw = PyList_GET_ITEM(kws, i);
        PyObject *name = PyObject_GetAttrString(kw, "arg"),
                 *value = PyObject_GetAttrString(kw, "value");
        const char *k = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        if (!value) {
            rc = internal_error(p->err, "malformed ast");
        } else if (k && (!strcmp(k, "sep") || !strcmp(k, "end"))) {
            PyObject *str = const_str(value);
            PyObject *c =
                str || !is(value, "Constant") ? NULL : PyObject_GetAttrString(value, "value");
            if (str) {
                jit_node *s = str_node(p, value, str);
                if (!s)
                    rc = -1;
                else if (k[0] == 's')
                    n->b = s;
                else
                    n->c = s;
            } else if (c != Py_None) { /* None means the default, as in Python */
                rc = fail(p, value, "print()'s %s= must be a constant string in a kernel%s", k,
                          what);
            }
            Py_XDECREF(str);
            Py_XDECREF(c);
        } else if (k && !strcmp(k, "flush")) {
            /* ignored: the device's text is written out when the kernel is waited for */
        } else {
            rc = fail(p, kw, "print() in a kernel cannot take %s%s%s",
                      !k                   ? "**kwargs"
                      : !strcmp(k, "file") ? "file=: it writes to the cell's output"
                                           : k,
                      k && strcmp(k, "file") ? "=" : "", what);
        }
        Py_XDECREF(name);
        Py_XDECREF(value);
    }
    Py_DECREF(args);
    Py_DECREF(kws);
    return rc < 0 ? NULL : n;
}

/* Every expression and statement is parsed through here: the nesting is
 * bounded, and recorded for jit_with_stack. */
static int enter(parser *p, PyObject *node) {
    if (p->depth >= JIT_MAX_DEPTH)
        return fail(p, node,
                    "this is nested more than %d levels deep\n"
                    "Split the expression into statements with intermediate variables.",
                    JIT_MAX_DEPTH);
    if (++p->depth > p->f->depth) p->f->depth = p->depth;
    return 0;
}

static jit_node *expr_node(parser *p, PyObject *node);

static int too_big(parser *p, const jit_node *at, PyObject *value);

/* operand: the expression is an operand of an arithmetic operator, which may
 * fold it further (so an int too large for 64 bits may stand, for now). */
static jit_node *expr_as(parser *p, PyObject *node, bool operand) {
    if (enter(p, node) < 0) return NULL;
    Py_CLEAR(p->value);
    jit_node *n = expr_node(p, node);
    p->depth--;
    if (p->value_of != n)
        Py_CLEAR(p->value); /* a call's literal argument is not the call's value */
    if (n && !operand && n->kind == N_CONST && n->op == JIT_CONST_TOO_BIG) {
        too_big(p, n, p->value);
        return NULL;
    }
    return n;
}

static jit_node *expr(parser *p, PyObject *node) { return expr_as(p, node, false); }

/* ---- constants: Python's arithmetic on literals ----
 *
 * Arithmetic on int and float literals is done here, by Python, as CPython's
 * compiler does: `2 ** -1` is 0.5, `10**308 * 10.0` is inf, and an int that
 * ends up too large for the int64 a kernel computes it in (`2**63`,
 * `1 << 70`) is a CompileError instead of wrapping on the device. */

/* Larger ints than this are refused before they are computed (2 ** 10**9);
 * a float holds 1024 bits of exponent, so nothing this large is any use. */
#define JIT_CONST_BITS 8192

static int too_big(parser *p, const jit_node *at, PyObject *value) {
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
    PyErr_Clear();
    int len = text ? (int)strlen(text) : 0;
    int rc = jit_error_at(
        p->err, p->f, at->line, at->col,
        "this integer constant%s%.*s%s does not fit in 64 bits\n"
        "Kernels compute Python ints as int64: use a float (2.0 ** 64) or a NumPy scalar "
        "(np.uint64(...)) for a larger number.",
        text ? " (" : "", len > 40 ? 40 : len, text ? text : "",
        !text      ? ""
        : len > 40 ? "...)"
                   : ")");
    Py_XDECREF(s);
    return rc;
}

/* A literal int or float as a node; p->value gets it. An int too large for
 * 64 bits is a node marked JIT_CONST_TOO_BIG: only further folding may use it. */
static jit_node *literal_node(parser *p, PyObject *at, PyObject *v) {
    jit_node *n;
    int overflow = 0;
    if (PyLong_Check(v)) PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
        if (!(n = new_node(p, at, N_CONST))) return NULL;
        n->type = jit_weak_int();
        n->op = JIT_CONST_TOO_BIG;
    } else if (!(n = from_object(p, at, "literal", v))) {
        return NULL;
    }
    Py_XSETREF(p->value, Py_NewRef(v));
    p->value_of = n;
    return n;
}

static jit_node *operand(parser *p, PyObject *node, const char *field, PyObject **value) {
    PyObject *c = PyObject_GetAttrString(node, field);
    if (!c) {
        internal_error(p->err, "malformed ast");
        return NULL;
    }
    jit_node *r = expr_as(p, c, true);
    Py_DECREF(c);
    *value = p->value;
    p->value = NULL;
    return r;
}

/* An int's bit_length(); -1 after an error. */
static long long int_bits(PyObject *v) {
    PyObject *b = PyObject_CallMethod(v, "bit_length", NULL);
    long long n = b ? PyLong_AsLongLong(b) : -1;
    Py_XDECREF(b);
    return n;
}

static bool plain_number(PyObject *v) {
    return v && !PyBool_Check(v) && (PyLong_Check(v) || PyFloat_Check(v));
}

/* An operand Python may fold: a plain number or a Python complex. */
static bool foldable(PyObject *v) { return plain_number(v) || (v && PyComplex_CheckExact(v)); }

/* Python's l op r (r NULL for a unary op); NULL without an exception when
 * Python would raise (1 // 0, 1.0 << 2, 10.0 ** 400), left to the device's
 * semantics. *huge when an int result would pass JIT_CONST_BITS. */
static PyObject *python_op(int op, PyObject *l, PyObject *r, bool *huge) {
    *huge = false;
    if (PyLong_Check(l) && r && PyLong_Check(r) && (op == OP_POW || op == OP_LSHIFT)) {
        int overflow = 0;
        long long e = PyLong_AsLongLongAndOverflow(r, &overflow);
        long long bits = int_bits(l);
        PyErr_Clear();
        bool big_base = op == OP_LSHIFT ? bits > 0 : bits > 1; /* 0, 1, -1 stay small */
        if (big_base &&
            (overflow > 0 || (e > 0 && (op == OP_POW ? bits * e : bits + e) > JIT_CONST_BITS))) {
            *huge = true;
            return NULL;
        }
    }
    PyObject *v = NULL;
    switch (op) {
    case OP_ADD: v = PyNumber_Add(l, r); break;
    case OP_SUB: v = PyNumber_Subtract(l, r); break;
    case OP_MUL: v = PyNumber_Multiply(l, r); break;
    case OP_DIV: v = PyNumber_TrueDivide(l, r); break;
    case OP_FLOORDIV: v = PyNumber_FloorDivide(l, r); break;
    case OP_MOD: v = PyNumber_Remainder(l, r); break;
    case OP_POW: v = PyNumber_Power(l, r, Py_None); break;
    case OP_LSHIFT: v = PyNumber_Lshift(l, r); break;
    case OP_RSHIFT: v = PyNumber_Rshift(l, r); break;
    case OP_BITAND: v = PyNumber_And(l, r); break;
    case OP_BITOR: v = PyNumber_Or(l, r); break;
    case OP_BITXOR: v = PyNumber_Xor(l, r); break;
    case OP_NEG: v = PyNumber_Negative(l); break;
    case OP_POS: v = PyNumber_Positive(l); break;
    case OP_INVERT: v = PyNumber_Invert(l); break;
    default: break;
    }
    bool complex_in = (l && PyComplex_CheckExact(l)) || (r && PyComplex_CheckExact(r));
    if (!v || !(plain_number(v) || (complex_in && PyComplex_CheckExact(v)))) {
        /* complex from (-1) ** 0.5: not a kernel's; from complex operands it is */
        PyErr_Clear();
        Py_XDECREF(v);
        return NULL;
    }
    if (PyLong_Check(v) && int_bits(v) > JIT_CONST_BITS) {
        *huge = true;
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* n (a BinOp or UnaryOp over operands whose values are lv, rv: NULL when not
 * literals) as one constant when Python can compute it; else n itself, once
 * no operand is an int too large to stand. Takes lv and rv. */
static jit_node *fold_const(parser *p, PyObject *at, jit_node *n, PyObject *lv, PyObject *rv) {
    bool unary = n->kind == N_UNARY, huge = false;
    PyObject *v = NULL;
    if (foldable(lv) && (unary ? n->op != OP_NOT : foldable(rv)))
        v = python_op(n->op, lv, rv, &huge);
    jit_node *r = n;
    if (huge) {
        too_big(p, n, NULL);
        r = NULL;
    } else if (v) {
        r = literal_node(p, at, v);
    } else if (n->a->op == JIT_CONST_TOO_BIG && n->a->kind == N_CONST) {
        too_big(p, n->a, lv);
        r = NULL;
    } else if (!unary && n->b->op == JIT_CONST_TOO_BIG && n->b->kind == N_CONST) {
        too_big(p, n->b, rv);
        r = NULL;
    }
    Py_XDECREF(v);
    Py_XDECREF(lv);
    Py_XDECREF(rv);
    return r;
}

static jit_node *constant_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    PyObject *v = PyObject_GetAttrString(node, "value");
    if (!v) {
        internal_error(p->err, "malformed ast");
        return NULL;
    }
    if (PyBool_Check(v)) {
        n = from_object(p, node, "literal", v);
    } else if (PyLong_Check(v) || PyFloat_Check(v) || PyComplex_CheckExact(v)) {
        n = literal_node(p, node, v);
    } else {
        fail(p, node,
             "%s constants are not supported in kernels\nKernels work on numbers and arrays.",
             v == Py_None         ? "None"
             : PyUnicode_Check(v) ? "string"
                                  : Py_TYPE(v)->tp_name);
    }
    Py_DECREF(v);
    return n;
}

static jit_node *name_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    PyObject *id = PyObject_GetAttrString(node, "id");
    const char *name = id ? PyUnicode_AsUTF8(id) : "?";
    int var = local_read(p, name);
    if (var >= 0) {
        if ((n = new_node(p, node, N_VAR))) n->v.var = var;
        p->f->vars[var].in_code = true;
    } else {
        n = resolve_global(p, node, name);
    }
    Py_XDECREF(id);
    return n;
}

static jit_node *op_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    bool unary = is(node, "UnaryOp");
    int op = op_of(p, node, "op", node);
    if (op < 0 || !(n = new_node(p, node, unary ? N_UNARY : N_BINOP))) return NULL;
    n->op = (uint8_t)op;
    PyObject *lv = NULL, *rv = NULL;
    if (!(n->a = operand(p, node, unary ? "operand" : "left", &lv)) ||
        (!unary && !(n->b = operand(p, node, "right", &rv)))) {
        Py_XDECREF(lv);
        return NULL;
    }
    return fold_const(p, node, n, lv, rv); /* takes lv, rv */
}

static jit_node *boolop_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    int op = op_of(p, node, "op", node);
    PyObject *vals = PyObject_GetAttrString(node, "values");
    if (op < 0 || !vals || !(n = new_node(p, node, N_BOOLOP))) {
        Py_XDECREF(vals);
        return NULL;
    }
    n->op = (uint8_t)op;
    int rc = expr_list(p, vals, &n->kids, &n->nkids);
    Py_DECREF(vals);
    return rc < 0 ? NULL : n;
}

static jit_node *compare_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    PyObject *ops = PyObject_GetAttrString(node, "ops");
    PyObject *cmps = PyObject_GetAttrString(node, "comparators");
    if (!ops || !cmps || !(n = new_node(p, node, N_COMPARE))) goto cmp_done;
    Py_ssize_t k = PyList_GET_SIZE(ops);
    n->nkids = (int)k + 1;
    n->kids = jit_arena_alloc(p->f, (size_t)n->nkids * sizeof *n->kids);
    n->ops = jit_arena_alloc(p->f, (size_t)k);
    if (!(n->kids[0] = child(p, node, "left"))) {
        n = NULL;
        goto cmp_done;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *o = PyList_GET_ITEM(ops, i);
        const char *t = node_type(o);
        int op = -1;
        for (size_t j = 0; j < sizeof binops / sizeof *binops; j++)
            if (strcmp(binops[j].py, t) == 0 && binops[j].op >= OP_EQ && binops[j].op <= OP_GE)
                op = (int)binops[j].op;
        PyObject *v = op < 0 ? static_value(p, node) : NULL; /* `OP is max`: compile-time */
        if (v) {
            n = from_object(p, node, "comparison", v);
            Py_DECREF(v);
            goto cmp_done;
        }
        if (op < 0) {
            fail(p, node,
                 "the comparison '%s' is not supported in kernels\n"
                 "Kernels compare numbers with == != < <= > >=; 'is' compares compile-time "
                 "values (ol.constexpr parameters, globals).",
                 strcmp(t, "Is") == 0      ? "is"
                 : strcmp(t, "IsNot") == 0 ? "is not"
                 : strcmp(t, "In") == 0    ? "in"
                                           : "not in");
            n = NULL;
            goto cmp_done;
        }
        n->ops[i] = (uint8_t)op;
        if (!(n->kids[i + 1] = expr(p, PyList_GET_ITEM(cmps, i)))) {
            n = NULL;
            goto cmp_done;
        }
    }
cmp_done:
    Py_XDECREF(ops);
    Py_XDECREF(cmps);
    return n;
}

static jit_node *ifexp_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    int truth = static_truth(p, node);
    if (truth >= 0) /* decided at compile time: the other operand need not compile */
        return child(p, node, truth ? "body" : "orelse");
    if (!(n = new_node(p, node, N_IFEXP))) return NULL;
    return (n->a = child(p, node, "test")) && (n->b = child(p, node, "body")) &&
                   (n->c = child(p, node, "orelse"))
               ? n
               : NULL;
}

static jit_node *call_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    jit_node *fn = child(p, node, "func");
    if (!fn) return NULL;
    if (fn->kind == N_REF && fn->v.ref.kind == REF_BUILTIN &&
        jit_builtins[fn->v.ref.id].type == TY_PRINT)
        return print_call(p, node, fn);
    PyObject *kw = PyObject_GetAttrString(node, "keywords");
    if (kw && PyList_GET_SIZE(kw) > 0) {
        PyObject *k0 = PyList_GET_ITEM(kw, 0);
        Py_DECREF(kw);
        fail(p, k0,
             "keyword arguments are not supported in kernel calls\nPass arguments by position.");
        return NULL;
    }
    Py_XDECREF(kw);
    PyObject *args = PyObject_GetAttrString(node, "args");
    PyObject *tuple = fn->kind == N_REF && fn->v.ref.kind == REF_BUILTIN &&
                              jit_builtins[fn->v.ref.id].type == TY_LEN && args &&
                              PyList_GET_SIZE(args) == 1
                          ? static_tuple(p, PyList_GET_ITEM(args, 0))
                          : NULL;
    if (tuple) { /* len() of a compile-time tuple */
        Py_DECREF(args);
        PyObject *len = PyLong_FromSsize_t(PyTuple_GET_SIZE(tuple));
        n = len ? literal_node(p, node, len) : NULL;
        Py_XDECREF(len);
        return n;
    }
    if (!args || !(n = new_node(p, node, N_CALL))) {
        Py_XDECREF(args);
        return NULL;
    }
    n->a = fn;
    int rc = expr_list(p, args, &n->kids, &n->nkids);
    Py_DECREF(args);
    return rc < 0 ? NULL : n;
}

static jit_node *attribute_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    jit_node *obj = child(p, node, "value");
    PyObject *attr = PyObject_GetAttrString(node, "attr");
    if (!obj || !attr) {
        Py_XDECREF(attr);
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(attr);
    if (obj->kind == N_REF && obj->v.ref.kind == REF_MODULE) {
        PyObject *mod = modules[obj->v.ref.id];
        PyObject *val = mod ? PyObject_GetAttrString(mod, name) : NULL;
        if (!val) {
            PyErr_Clear();
            fail(p, node, "%s.%s does not exist", module_names[obj->v.ref.id], name);
        } else {
            char full[128];
            snprintf(full, sizeof full, "%s.%s", module_names[obj->v.ref.id], name);
            n = from_object(p, node, full, val);
            Py_DECREF(val);
        }
        Py_DECREF(attr);
        return n;
    }
    if ((n = new_node(p, node, N_ATTR))) {
        n->a = obj;
        n->v.name = arena_strdup(p->f, name);
    }
    Py_DECREF(attr);
    return n;
}

/* T[k] of a compile-time tuple T and index k: the element, a constant. */
static jit_node *tuple_element(parser *p, PyObject *node, PyObject *tuple) {
    PyObject *v = static_value(p, node);
    bool arrays = holds_arrays(p, tuple);
    PyObject *sl = !v && arrays ? PyObject_GetAttrString(node, "slice") : NULL;
    PyObject *k = sl ? static_value(p, sl) : NULL;
    Py_XDECREF(sl);
    if (k && PyLong_Check(k)) {
        fail(p, node, "index %lld is out of range: this tuple holds %zd arrays",
             PyLong_AsLongLong(k), PyTuple_GET_SIZE(tuple));
        Py_DECREF(k);
        return NULL;
    }
    Py_XDECREF(k);
    PyErr_Clear();
    if (!v && arrays) {
        fail(p, node,
             "a tuple of arrays takes compile-time indices\n"
             "Index it with literals, ol.constexpr parameters or an unrolled loop's variable "
             "(for k in ol.static_range(len(t)): ... t[k][i] ...).");
        return NULL;
    }
    if (!v) {
        fail(p, node,
             "a compile-time tuple takes compile-time indices\n"
             "Index it with literals, ol.constexpr parameters or an unrolled loop's variable "
             "(for i in ol.static_range(len(t)): ... t[i] ...).");
        return NULL;
    }
    jit_node *n = from_object(p, node, "element", v);
    Py_DECREF(v);
    return n;
}

static jit_node *subscript_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    PyObject *of = PyObject_GetAttrString(node, "value");
    PyObject *tuple = of ? static_tuple(p, of) : NULL; /* borrowed */
    Py_XDECREF(of);
    if (tuple) return tuple_element(p, node, tuple);
    PyObject *sl = PyObject_GetAttrString(node, "slice");
    if (!sl || !(n = new_node(p, node, N_INDEX)) || !(n->a = child(p, node, "value"))) {
        Py_XDECREF(sl);
        return NULL;
    }
    int rc;
    if (is(sl, "Tuple")) {
        PyObject *elts = PyObject_GetAttrString(sl, "elts");
        rc = elts ? expr_list(p, elts, &n->kids, &n->nkids) : -1;
        Py_XDECREF(elts);
    } else {
        n->nkids = 1;
        n->kids = jit_arena_alloc(p->f, sizeof *n->kids);
        rc = (n->kids[0] = expr(p, sl)) ? 0 : -1;
    }
    Py_DECREF(sl);
    return rc < 0 ? NULL : n;
}

static jit_node *tuple_expr(parser *p, PyObject *node) {
    jit_node *n = NULL;
    PyObject *elts = PyObject_GetAttrString(node, "elts");
    if (!elts || !(n = new_node(p, node, N_TUPLE))) {
        Py_XDECREF(elts);
        return NULL;
    }
    int rc = expr_list(p, elts, &n->kids, &n->nkids);
    Py_DECREF(elts);
    return rc < 0 ? NULL : n;
}

/* The expressions a kernel may write, by their ast class. */
static const struct {
    const char *py;
    jit_node *(*parse)(parser *, PyObject *);
} exprs[] = {
    {"Constant", constant_expr},   {"Name", name_expr},     {"BinOp", op_expr},
    {"UnaryOp", op_expr},          {"BoolOp", boolop_expr}, {"Compare", compare_expr},
    {"IfExp", ifexp_expr},         {"Call", call_expr},     {"Attribute", attribute_expr},
    {"Subscript", subscript_expr}, {"Tuple", tuple_expr},
};

static jit_node *expr_node(parser *p, PyObject *node) {
    const char *t = node_type(node);
    for (size_t i = 0; i < sizeof exprs / sizeof *exprs; i++)
        if (!strcmp(exprs[i].py, t)) return exprs[i].parse(p, node);
    return unsupported_expr(p, node);
}

static const struct {
    const char *py, *what, *hint;
} unsupported_stmts[] = {
    {"Try", "try/except", "Kernels cannot raise or catch exceptions."},
    {"TryStar", "try/except*", "Kernels cannot raise or catch exceptions."},
    {"Raise", "raise", "Kernels cannot raise exceptions; write an error flag into an array."},
    {"With", "a with statement", "Kernels have no context managers."},
    {"AsyncWith", "async with", "Kernels are not coroutines."},
    {"AsyncFor", "async for", "Kernels are not coroutines."},
    {"FunctionDef", "a nested function", "Define an @offload.device_func at module level."},
    {"AsyncFunctionDef", "a nested function", "Define an @offload.device_func at module level."},
    {"ClassDef", "a class definition", "Kernels work on numbers and arrays."},
    {"Delete", "del", "Kernel variables live until the kernel returns."},
    {"Global", "a global statement",
     "Kernels read globals at compile time and cannot assign them."},
    {"Nonlocal", "a nonlocal statement",
     "Kernels read closure variables at compile time and cannot assign them."},
    {"Import", "import", "Import at module level; kernels can use math and numpy dtypes."},
    {"ImportFrom", "import", "Import at module level; kernels can use math and numpy dtypes."},
    {"Assert", "assert", "Kernels cannot raise exceptions."},
    {"Match", "match", "Use if/elif/else."},
};

static int target_ok(parser *p, jit_node *t, PyObject *at) {
    if (t->kind == N_VAR || t->kind == N_INDEX) return 0;
    if (t->kind == N_TUPLE) {
        for (int i = 0; i < t->nkids; i++)
            if (t->kids[i]->kind == N_TUPLE || target_ok(p, t->kids[i], at) < 0) {
                if (t->kids[i]->kind == N_TUPLE)
                    return jit_error_at(p->err, p->f, t->kids[i]->line, t->kids[i]->col,
                                        "nested tuple assignment is not supported in kernels");
                return -1;
            }
        return 0;
    }
    return jit_error_at(p->err, p->f, t->line, t->col,
                        "cannot assign to this in a kernel\nAssign to local variables or array "
                        "elements (a[i] = ...).");
}

static jit_node *stmt_node(parser *p, PyObject *node);

static jit_node *stmt(parser *p, PyObject *node) {
    if (enter(p, node) < 0) return NULL;
    jit_node *n = stmt_node(p, node);
    p->depth--;
    return n;
}

static jit_node *assign_stmt(parser *p, PyObject *node, jit_node_kind kind) {
    jit_node *n = NULL;
    bool ann = is(node, "AnnAssign");
    PyObject *targets = ann ? NULL : PyObject_GetAttrString(node, "targets");
    if (!(n = new_node(p, node, kind))) {
        Py_XDECREF(targets);
        return NULL;
    }
    if (ann) {
        PyObject *v = PyObject_GetAttrString(node, "value");
        bool has = v && v != Py_None;
        Py_XDECREF(v);
        if (!has) {
            n->kind = S_PASS;
            return n;
        } /* a bare annotation does nothing */
        n->nkids = 1;
        n->kids = jit_arena_alloc(p->f, sizeof *n->kids);
        if (!(n->kids[0] = child(p, node, "target"))) return NULL;
    } else {
        int rc = expr_list(p, targets, &n->kids, &n->nkids);
        Py_XDECREF(targets);
        if (rc < 0) return NULL;
    }
    for (int i = 0; i < n->nkids; i++)
        if (target_ok(p, n->kids[i], node) < 0) return NULL;
    return (n->a = child(p, node, "value")) ? n : NULL;
}

static jit_node *augassign_stmt(parser *p, PyObject *node, jit_node_kind kind) {
    jit_node *n = NULL;
    int op = op_of(p, node, "op", node);
    if (op < 0 || !(n = new_node(p, node, kind))) return NULL;
    n->op = (uint8_t)op;
    if (!(n->a = child(p, node, "target")) || !(n->b = child(p, node, "value"))) return NULL;
    if (n->a->kind == N_TUPLE) {
        jit_error_at(p->err, p->f, n->a->line, n->a->col,
                     "augmented assignment to a tuple is not valid");
        return NULL;
    }
    return target_ok(p, n->a, node) < 0 ? NULL : n;
}

static jit_node *expr_stmt(parser *p, PyObject *node, jit_node_kind kind) {
    jit_node *n = NULL;
    PyObject *v = PyObject_GetAttrString(node, "value");
    bool docstring = v && is(v, "Constant");
    if (docstring) {
        PyObject *c = PyObject_GetAttrString(v, "value");
        docstring = c && PyUnicode_Check(c);
        Py_XDECREF(c);
    }
    Py_XDECREF(v);
    if (!(n = new_node(p, node, docstring ? S_PASS : kind))) return NULL;
    return docstring || (n->a = child(p, node, "value")) ? n : NULL;
}

/* Compile-time code is an `if` on a constant true, which the device's
 * compiler drops: statements kept from an `if` decided here, or an unrolled
 * loop's copies of its body. */
static jit_node *static_block(parser *p, PyObject *at) {
    jit_node *n = new_node(p, at, S_IF);
    if (n && !(n->a = from_object(p, at, "static", Py_True))) n = NULL;
    return n;
}

/* An `if` whose test Python computes now: only the branch taken is parsed
 * (the other may be written for other compile-time values, and need not
 * compile for these). NULL without an error when the test is not
 * compile-time. */
static jit_node *static_if(parser *p, PyObject *node, PyObject *body, PyObject *orelse,
                           bool *done) {
    int truth = static_truth(p, node);
    if (truth < 0) return NULL;
    *done = true;
    jit_node *n = static_block(p, node);
    return n && stmts(p, truth ? body : orelse, &n->body, &n->nbody) == 0 ? n : NULL;
}

/* `v = value` (after an unrolled loop, whose variable keeps its last value
 * as in Python; 0 when it ran no time, so that v has a type). */
static jit_node *bind_after(parser *p, PyObject *at, const char *name, PyObject *value) {
    jit_node *n = new_node(p, at, S_ASSIGN);
    jit_node **kids = n ? jit_arena_alloc(p->f, sizeof *kids) : NULL;
    PyObject *zero = value ? NULL : PyLong_FromLong(0);
    if (!kids || !(kids[0] = new_node(p, at, N_VAR)) ||
        !(n->a = from_object(p, at, name, value ? value : zero)))
        n = NULL;
    Py_XDECREF(zero);
    if (!n) return NULL;
    n->kids = kids;
    n->nkids = 1;
    kids[0]->v.var = local_index(p, name);
    p->f->vars[kids[0]->v.var].in_code = true;
    return n;
}

/* A loop unrolled over values (a tuple): the body once per value, with the
 * loop's variable bound to it as a constant, then assigned the last. */
enum { JIT_MAX_UNROLLED = 4096 }; /* statements an unrolled loop may make */
static jit_node *unrolled_for(parser *p, PyObject *node, PyObject *body, PyObject *values) {
    PyObject *target = PyObject_GetAttrString(node, "target");
    PyObject *id = target && is(target, "Name") ? PyObject_GetAttrString(target, "id") : NULL;
    Py_XDECREF(target);
    Py_ssize_t count = PyTuple_GET_SIZE(values), per = PyList_GET_SIZE(body);
    jit_node *n = NULL;
    if (!id) {
        fail(p, node,
             "the loop variable must be a plain name\nWrite: for i in ol.static_range(...):");
    } else if (count * per > JIT_MAX_UNROLLED) {
        fail(p, node,
             "unrolling this loop makes %zd statements, more than the %d a kernel may unroll\n"
             "Use range() for long loops.",
             count * per, JIT_MAX_UNROLLED);
    } else if ((p->bound || (p->bound = PyDict_New())) && (n = static_block(p, node))) {
        n->nbody = (int)(count * per) + 1;
        n->body = jit_arena_alloc(p->f, (size_t)n->nbody * sizeof *n->body);
        PyObject *outer = PyDict_GetItemWithError(p->bound, id); /* a shadowed binding */
        Py_XINCREF(outer);
        bool was = p->in_unrolled;
        p->in_unrolled = true;
        for (Py_ssize_t k = 0; n && k < count; k++) {
            jit_node **copy;
            int ncopy;
            if (PyDict_SetItem(p->bound, id, PyTuple_GET_ITEM(values, k)) < 0 ||
                stmts(p, body, &copy, &ncopy) < 0)
                n = NULL;
            else if (ncopy)
                memcpy(n->body + k * per, copy, sizeof *copy * (size_t)ncopy);
        }
        p->in_unrolled = was;
        /* a loop over nothing bound nothing to take back */
        if (count && (outer ? PyDict_SetItem(p->bound, id, outer) : PyDict_DelItem(p->bound, id)))
            n = NULL;
        Py_XDECREF(outer);
        if (n && !(n->body[n->nbody - 1] =
                       bind_after(p, node, PyUnicode_AsUTF8(id),
                                  count ? PyTuple_GET_ITEM(values, count - 1) : NULL)))
            n = NULL;
        char note[64];
        snprintf(note, sizeof note, "unrolled %d:%d=%zd", (int)attr_long(node, "lineno"),
                 (int)attr_long(node, "col_offset"), count);
        hash_text(p, note);
    }
    if (!n && !p->err->msg[0]) internal_error(p->err, "unrolling a loop");
    Py_XDECREF(id);
    return n;
}

static jit_node *block_stmt(parser *p, PyObject *node, jit_node_kind kind) {
    jit_node *n = NULL;
    PyObject *orelse = PyObject_GetAttrString(node, "orelse");
    PyObject *body = PyObject_GetAttrString(node, "body");
    if (!orelse || !body) goto done;
    if (kind != S_IF && PyList_GET_SIZE(orelse) > 0) {
        fail(p, node, "%s-else is not supported in kernels\nUse a flag variable set before break.",
             kind == S_FOR ? "for" : "while");
        goto done;
    }
    bool decided = false;
    if (kind == S_IF && ((n = static_if(p, node, body, orelse, &decided)) || decided)) goto done;
    if (kind == S_FOR) {
        PyObject *values = unrolled_values(p, node);
        if (values || p->err->msg[0]) {
            n = values ? unrolled_for(p, node, body, values) : NULL;
            Py_XDECREF(values);
            goto done;
        }
    }
    if (!(n = new_node(p, node, kind))) goto done;
    if (kind == S_FOR) {
        PyObject *target = PyObject_GetAttrString(node, "target");
        PyObject *iter = PyObject_GetAttrString(node, "iter");
        jit_node *call = iter ? expr(p, iter) : NULL;
        const jit_builtin *range = call && call->kind == N_CALL && call->a->kind == N_REF &&
                                           call->a->v.ref.kind == REF_BUILTIN
                                       ? &jit_builtins[call->a->v.ref.id]
                                       : NULL;
        if (call && (!range || range->type != TY_RANGE)) {
            jit_error_at(p->err, p->f, call->line, call->col,
                         "kernels can only loop over range(...)\n"
                         "Write: for i in range(len(a)): ... a[i] ...");
            call = NULL;
        } else if (call && (call->nkids < range->lo || call->nkids > range->hi)) {
            jit_error_at(p->err, p->f, call->line, call->col,
                         "range() takes %d to %d arguments, not %d", range->lo, range->hi,
                         call->nkids);
            call = NULL;
        }
        n->a = call && target ? expr(p, target) : NULL;
        if (n->a && n->a->kind != N_VAR) {
            jit_error_at(p->err, p->f, n->a->line, n->a->col,
                         "the loop variable must be a plain name\nWrite: for i in range(...):");
            n->a = NULL;
        }
        if (n->a) {
            n->kids = call->kids;
            n->nkids = call->nkids;
        }
        Py_XDECREF(target);
        Py_XDECREF(iter);
        if (!n->a) {
            n = NULL;
            goto done;
        }
    } else if (!(n->a = child(p, node, "test"))) {
        n = NULL;
        goto done;
    }
    bool was = p->in_unrolled;
    if (kind != S_IF) p->in_unrolled = false; /* break and continue leave this loop */
    if (stmts(p, body, &n->body, &n->nbody) < 0 ||
        (kind == S_IF && stmts(p, orelse, &n->orelse, &n->norelse) < 0))
        n = NULL;
    p->in_unrolled = was;
done:
    Py_XDECREF(orelse);
    Py_XDECREF(body);
    return n;
}

static jit_node *return_stmt(parser *p, PyObject *node, jit_node_kind kind) {
    jit_node *n = NULL;
    PyObject *v = PyObject_GetAttrString(node, "value");
    if (!v || !(n = new_node(p, node, kind))) {
        Py_XDECREF(v);
        return NULL;
    }
    if (v != Py_None && !(n->a = expr(p, v))) n = NULL;
    Py_DECREF(v);
    if (n && n->a && p->f->is_kernel) {
        jit_error_at(p->err, p->f, n->a->line, n->a->col,
                     "a kernel cannot return a value\nWrite results into an array argument; "
                     "@offload.device_func functions may return values.");
        return NULL;
    }
    return n;
}

static jit_node *bare_stmt(parser *p, PyObject *node, jit_node_kind kind) {
    if ((kind == S_BREAK || kind == S_CONTINUE) && p->in_unrolled) {
        fail(p, node,
             "%s cannot leave a loop unrolled at compile time (ol.static_range, a tuple)\n"
             "Use an if around the rest of the body, or range() for a loop that stops early.",
             kind == S_BREAK ? "break" : "continue");
        return NULL;
    }
    return new_node(p, node, kind);
}

/* The statements a kernel may write, by their ast class. */
static const struct {
    const char *py;
    jit_node_kind kind;
    jit_node *(*parse)(parser *, PyObject *, jit_node_kind);
} stmt_kinds[] = {
    {"Assign", S_ASSIGN, assign_stmt},
    {"AnnAssign", S_ASSIGN, assign_stmt},
    {"AugAssign", S_AUGASSIGN, augassign_stmt},
    {"Expr", S_EXPR, expr_stmt},
    {"If", S_IF, block_stmt},
    {"While", S_WHILE, block_stmt},
    {"For", S_FOR, block_stmt},
    {"Break", S_BREAK, bare_stmt},
    {"Continue", S_CONTINUE, bare_stmt},
    {"Pass", S_PASS, bare_stmt},
    {"Return", S_RETURN, return_stmt},
};

static jit_node *stmt_node(parser *p, PyObject *node) {
    const char *t = node_type(node);
    for (size_t i = 0; i < sizeof stmt_kinds / sizeof *stmt_kinds; i++)
        if (!strcmp(stmt_kinds[i].py, t)) return stmt_kinds[i].parse(p, node, stmt_kinds[i].kind);
    for (size_t i = 0; i < sizeof unsupported_stmts / sizeof *unsupported_stmts; i++)
        if (!strcmp(unsupported_stmts[i].py, t)) {
            fail(p, node, "%s is not supported in kernels\n%s", unsupported_stmts[i].what,
                 unsupported_stmts[i].hint);
            return NULL;
        }
    fail(p, node, "this statement (%s) is not supported in kernels", t);
    return NULL;
}

static int stmts(parser *p, PyObject *list, jit_node ***out, int *count) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    *count = (int)n;
    *out = n ? jit_arena_alloc(p->f, (size_t)n * sizeof **out) : NULL;
    if (n && !*out) return internal_error(p->err, "out of memory");
    for (Py_ssize_t i = 0; i < n; i++)
        if (!((*out)[i] = stmt(p, PyList_GET_ITEM(list, i)))) return -1;
    return 0;
}

/* ---- the function ---- */

/* Parameter a, named name, given a tuple of n arrays: a variable per
 * element, named name[k], and the name a tuple of stand-ins for them. */
static int tuple_param(parser *p, PyObject *a, const char *name, Py_ssize_t n) {
    if ((!p->tuples && !(p->tuples = PyDict_New())) || (!p->slots && !(p->slots = PyDict_New())))
        return internal_error(p->err, "out of memory");
    PyObject *stand = PyTuple_New(n);
    int rc = stand ? 0 : internal_error(p->err, "out of memory");
    for (Py_ssize_t k = 0; rc == 0 && k < n; k++) {
        char element[300];
        snprintf(element, sizeof element, "%s[%zd]", name, k);
        if ((rc = add_local(p, element, a)) < 0) break;
        PyObject *o = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
        PyObject *var = PyLong_FromLong(p->f->nvars - 1);
        if (!o || !var || PyDict_SetItem(p->slots, o, var) < 0)
            rc = internal_error(p->err, "out of memory");
        Py_XDECREF(var);
        if (o) PyTuple_SET_ITEM(stand, k, o);
    }
    if (rc == 0 && PyDict_SetItemString(p->tuples, name, stand) < 0)
        rc = internal_error(p->err, "out of memory");
    Py_XDECREF(stand);
    char note[320];
    snprintf(note, sizeof note, "%s: %zd arrays", name, n);
    hash_text(p, note);
    return rc;
}

/* Parameter a, named name: a local variable, a tuple of arrays' elements
 * (tuple_param), or a compile-time parameter (ol.constexpr), which the
 * caller's consts resolve like a global. */
static int param(parser *p, PyObject *a, const char *name) {
    if (p->consts && PyDict_GetItemString(p->consts, name)) return 0;
    PyObject *len = p->arrays ? PyDict_GetItemString(p->arrays, name) : NULL;
    if (len) return tuple_param(p, a, name, PyLong_AsSsize_t(len));
    PyObject *ann = PyObject_GetAttrString(a, "annotation");
    PyObject *v = ann && ann != Py_None ? static_value(p, ann) : NULL;
    PyObject *marker = v && modules[MOD_OFFLOAD]
                           ? PyObject_GetAttrString(modules[MOD_OFFLOAD], "constexpr")
                           : NULL;
    bool is_constexpr = v && v == marker;
    Py_XDECREF(ann);
    Py_XDECREF(v);
    Py_XDECREF(marker);
    PyErr_Clear();
    if (is_constexpr)
        return fail(p, a,
                    "'%s' of %s '%s' is a compile-time parameter (ol.constexpr), which only "
                    "kernels take\nPass the value as an ordinary argument, or read it from a "
                    "global.",
                    name, p->f->is_kernel ? "kernel" : "device function", p->f->name);
    return add_local(p, name, a);
}

static int parse_def(parser *p, PyObject *def) {
    jit_func *f = p->f;
    PyObject *args = PyObject_GetAttrString(def, "args");
    if (!args) return internal_error(p->err, "malformed ast");
    static const char *const bad[] = {"posonlyargs", "kwonlyargs", "defaults", NULL};
    for (int i = 0; bad[i]; i++) {
        PyObject *l = PyObject_GetAttrString(args, bad[i]);
        Py_ssize_t n = l ? PyList_GET_SIZE(l) : 0;
        Py_XDECREF(l);
        if (n) {
            Py_DECREF(args);
            return fail(p, def,
                        "'%s': %s are not supported for kernels\nUse plain positional parameters.",
                        f->name,
                        i == 2   ? "default values"
                        : i == 0 ? "positional-only parameters"
                                 : "keyword-only parameters");
        }
    }
    PyObject *va = PyObject_GetAttrString(args, "vararg"),
             *kw = PyObject_GetAttrString(args, "kwarg");
    bool star = (va && va != Py_None) || (kw && kw != Py_None);
    Py_XDECREF(va);
    Py_XDECREF(kw);
    if (star) {
        Py_DECREF(args);
        return fail(p, def, "'%s': *args and **kwargs are not supported for kernels", f->name);
    }
    PyObject *params = PyObject_GetAttrString(args, "args");
    Py_DECREF(args);
    for (Py_ssize_t i = 0; params && i < PyList_GET_SIZE(params); i++) {
        PyObject *a = PyList_GET_ITEM(params, i);
        PyObject *name = PyObject_GetAttrString(a, "arg");
        int rc = name ? param(p, a, PyUnicode_AsUTF8(name)) : -1;
        Py_XDECREF(name);
        if (rc < 0) {
            Py_DECREF(params);
            return -1;
        }
    }
    Py_XDECREF(params);
    f->nparams = f->nvars;
    if (f->is_kernel && f->nparams == 0)
        return fail(p, def,
                    "kernel '%s' has no parameters\n"
                    "A kernel's first parameter is the work item: def %s(item, ...):",
                    f->name, f->name);
    PyObject *body = PyObject_GetAttrString(def, "body");
    int rc = body ? collect_stores(p, body) : -1;
    if (rc == 0) rc = stmts(p, body, &f->body, &f->nbody);
    Py_XDECREF(body);
    return rc;
}

/* Resolves names through globals (and its __builtins__) and parses def. */
static int parse_with(parser *p, PyObject *def, PyObject *globals) {
    p->globals = globals;
    p->builtins = PyDict_GetItemString(globals, "__builtins__");
    /* __builtins__ is the builtins module in __main__, its dict elsewhere */
    if (p->builtins && PyModule_Check(p->builtins)) p->builtins = PyModule_GetDict(p->builtins);
    if (!p->builtins || !PyDict_Check(p->builtins)) p->builtins = PyEval_GetBuiltins();
    return parse_def(p, def);
}

/* Leading blanks of a line; -1 for one that holds no code (blank, comment). */
static int code_indent(const char *line) {
    int n = 0;
    while (line[n] == ' ' || line[n] == '\t') n++;
    return line[n] == '\0' || line[n] == '\n' || line[n] == '\r' || line[n] == '#' ? -1 : n;
}

static bool starts_def(const char *line) {
    line += strspn(line, " \t");
    return !strncmp(line, "def ", 4) || !strncmp(line, "async def ", 10);
}

/* The function's lines straight from linecache: from co_firstlineno (the first
 * decorator) to the last code line before one indented no deeper than the def.
 * inspect.getsourcelines finds the end with the tokenizer instead, whose
 * regular expressions cost a process ~6 ms the first time -- a third of the
 * first kernel's compile. A block this cuts short (a multi-line string or
 * bracket reaching back to the def's column) does not parse, and then inspect
 * decides. A new list, or NULL (no exception set) to let inspect try. */
static PyObject *block_lines(PyObject *pyfunc, PyObject *code, const char *filename,
                             int *first_line) {
    PyObject *result = NULL, *all = NULL;
    PyObject *linecache = PyImport_ImportModule("linecache");
    PyObject *globals = PyObject_GetAttrString(pyfunc, "__globals__");
    PyObject *firstno = PyObject_GetAttrString(code, "co_firstlineno");
    long first = firstno ? PyLong_AsLong(firstno) : -1;
    if (!linecache || !globals || first < 1) goto out;
    PyObject *r = PyObject_CallMethod(linecache, "checkcache", "s", filename); /* an edited file */
    Py_XDECREF(r);
    all = r ? PyObject_CallMethod(linecache, "getlines", "sO", filename, globals) : NULL;
    if (!all || !PyList_Check(all) || PyList_GET_SIZE(all) < first) goto out;
    Py_ssize_t n = PyList_GET_SIZE(all), at = first - 1, end = at, def = -1;
    int base = -1;
    for (Py_ssize_t i = at; i < n; i++) {
        const char *line = PyUnicode_AsUTF8(PyList_GET_ITEM(all, i));
        if (!line) goto out;
        int indent = code_indent(line);
        if (def < 0) { /* decorators, then the def line */
            if (indent < 0) continue;
            if (base < 0) base = indent;
            if (starts_def(line)) def = i;
            end = i + 1;
        } else if (indent >= 0) {
            if (indent <= base) break;
            end = i + 1;
        }
    }
    if (def < 0) goto out;
    result = PyList_GetSlice(all, at, end);
    *first_line = (int)first;
out:
    PyErr_Clear();
    Py_XDECREF(linecache);
    Py_XDECREF(globals);
    Py_XDECREF(firstno);
    Py_XDECREF(all);
    return result;
}

/* The same through inspect.getsourcelines; NULL (no exception set) when it
 * cannot find them either. */
static PyObject *inspect_lines(PyObject *pyfunc, int *first_line) {
    PyObject *inspect = PyImport_ImportModule("inspect");
    PyObject *found = inspect ? PyObject_CallMethod(inspect, "getsourcelines", "O", pyfunc) : NULL;
    PyObject *lines = NULL;
    if (found && PyTuple_Check(found) && PyTuple_GET_SIZE(found) == 2) {
        lines = Py_NewRef(PyTuple_GET_ITEM(found, 0));
        *first_line = (int)PyLong_AsLong(PyTuple_GET_ITEM(found, 1));
    }
    PyErr_Clear();
    Py_XDECREF(inspect);
    Py_XDECREF(found);
    return lines;
}

static void free_lines(jit_func *f) {
    for (int i = 0; i < f->nlines; i++) free(f->lines[i]);
    free(f->lines);
    f->lines = NULL;
    f->nlines = 0;
}

/* lines (a list of str) into f->lines, and dedented by the first line's
 * indentation (a method or a nested function) as one string for ast.parse.
 * NULL without memory. */
static char *dedent_lines(jit_func *f, PyObject *lines, int *indent) {
    f->nlines = (int)PyList_GET_SIZE(lines);
    if (!(f->lines = calloc((size_t)f->nlines + 1, sizeof *f->lines))) return NULL;
    size_t total = 0;
    for (int i = 0; i < f->nlines; i++) {
        const char *l = PyUnicode_AsUTF8(PyList_GET_ITEM(lines, i));
        if (!l || !(f->lines[i] = strdup(l))) return NULL;
        total += strlen(f->lines[i]) + 1;
    }
    const char *l0 = f->nlines ? f->lines[0] : "";
    *indent = 0;
    while (l0[*indent] == ' ' || l0[*indent] == '\t') (*indent)++;
    char *src = malloc(total + 1), *w = src;
    if (!src) return NULL;
    for (int i = 0; i < f->nlines; i++) {
        const char *l = f->lines[i];
        int k = 0;
        while (k < *indent && (l[k] == ' ' || l[k] == '\t')) k++;
        size_t len = strlen(l + k);
        memcpy(w, l + k, len);
        w += len;
        if (len == 0 || w[-1] != '\n') *w++ = '\n';
    }
    *w = '\0';
    return src;
}

/* The function's source, found, dedented and parsed by ast: the tree (new
 * reference) and src (malloc'ed, what was parsed), f->lines and
 * f->first_line filled. NULL with err set. */
static PyObject *parse_source(jit_func *f, PyObject *pyfunc, PyObject *code, int *indent,
                              char **src, jit_error *err) {
    PyObject *ast = PyImport_ImportModule("ast");
    if (!ast) {
        internal_error(err, "cannot import ast");
        return NULL;
    }
    PyObject *tree = NULL;
    bool found = false;
    for (int attempt = 0; attempt < 2 && !tree; attempt++) {
        int first = 1;
        PyObject *lines = attempt ? inspect_lines(pyfunc, &first)
                                  : block_lines(pyfunc, code, f->filename, &first);
        if (!lines) continue;
        found = true;
        free_lines(f);
        free(*src);
        *src = PyList_Check(lines) ? dedent_lines(f, lines, indent) : NULL;
        Py_DECREF(lines);
        f->first_line = first < 1 ? 1 : first;
        if (!*src) {
            internal_error(err, "out of memory");
            break;
        }
        tree = PyObject_CallMethod(ast, "parse", "s", *src);
        if (!tree && attempt == 0) PyErr_Clear(); /* cut short: ask inspect */
    }
    Py_DECREF(ast);
    if (tree || err->msg[0]) return tree;
    PyErr_Clear();
    if (found) {
        internal_error(err, "cannot parse the kernel's source");
        return NULL;
    }
    err->compile_error = true;
    err->line = err->col = 0;
    snprintf(err->filename, sizeof err->filename, "%s", f->filename);
    snprintf(
        err->msg, sizeof err->msg,
        "cannot find the source of '%s' (%s): kernels are compiled from their Python source\n"
        "Define the function in a file or a notebook cell (not with exec or in the plain REPL).",
        f->name, f->filename);
    return NULL;
}

static jit_func *parse_function(PyObject *pyfunc, bool is_kernel, PyObject *consts,
                                PyObject *arrays, const jit_chain *up, jit_error *err) {
    if (init_known() < 0) {
        internal_error(err, "cannot import math/numpy");
        return NULL;
    }
    jit_func *f = calloc(1, sizeof *f);
    if (!f) {
        internal_error(err, "out of memory");
        return NULL;
    }
    f->origin = pyfunc;
    f->is_kernel = is_kernel;
    jit_chain link = {.origin = pyfunc, .name = "?", .up = up};
    parser p = {.f = f, .err = err, .chain = &link, .consts = consts, .arrays = arrays};
    PyObject *tree = NULL, *code = NULL;
    char *src = NULL;
    int rc = -1;
    PyObject *qual = PyObject_GetAttrString(pyfunc, "__qualname__");
    f->name = strdup(qual && PyUnicode_Check(qual) ? PyUnicode_AsUTF8(qual) : "kernel");
    if (f->name) link.name = f->name;
    Py_XDECREF(qual);
    PyErr_Clear();
    code = PyObject_GetAttrString(pyfunc, "__code__");
    if (!code) {
        PyErr_Clear();
        snprintf(err->msg, sizeof err->msg, "offload.kernel needs a Python function, not %s",
                 Py_TYPE(pyfunc)->tp_name);
        err->compile_error = false;
        goto out;
    }
    PyObject *fn = PyObject_GetAttrString(code, "co_filename");
    f->filename = strdup(fn ? PyUnicode_AsUTF8(fn) : "<unknown>");
    Py_XDECREF(fn);
    if (!(tree = parse_source(f, pyfunc, code, &p.indent, &src, err))) goto out;
    p.line0 = f->first_line - 1;
    p.hash = EVP_MD_CTX_new();
    EVP_DigestInit_ex(p.hash, EVP_sha256(), NULL);
    EVP_DigestUpdate(p.hash, src, strlen(src));
    PyObject *body = PyObject_GetAttrString(tree, "body");
    PyObject *def = body && PyList_GET_SIZE(body) ? PyList_GET_ITEM(body, 0) : NULL;
    if (!def || !is(def, "FunctionDef")) {
        Py_XDECREF(body);
        snprintf(err->msg, sizeof err->msg, "'%s' is not a plain function (def ...)%s", f->name,
                 def && is(def, "AsyncFunctionDef") ? ": async functions cannot be kernels" : "");
        err->compile_error = true;
        goto out;
    }
    PyObject *globals = PyObject_GetAttrString(pyfunc, "__globals__");
    Py_XDECREF(globals); /* the function keeps it alive */
    /* co_freevars is a new tuple on every access (3.11+): hold it */
    PyObject *freevars = PyObject_GetAttrString(code, "co_freevars");
    PyObject *cells = PyObject_GetAttrString(pyfunc, "__closure__");
    p.closure_cells = cells && cells != Py_None ? cells : NULL;
    p.closure_names = p.closure_cells ? freevars : NULL;
    rc = globals ? parse_with(&p, def, globals)
                 : internal_error(err, "the function has no __globals__");
    Py_XDECREF(freevars);
    Py_XDECREF(cells);
    Py_DECREF(body);
    unsigned len = 0;
    EVP_DigestFinal_ex(p.hash, f->source_hash, &len);
out:
    if (p.hash) EVP_MD_CTX_free(p.hash);
    Py_CLEAR(p.value);
    Py_CLEAR(p.bound);
    Py_CLEAR(p.tuples);
    Py_CLEAR(p.slots);
    free(src);
    Py_XDECREF(tree);
    Py_XDECREF(code);
    if (rc < 0) {
        jit_func_free(f);
        return NULL;
    }
    return f;
}

/* Runs the library file lf as the module offload.jit.NAME (its lines in
 * linecache as offload/jit/NAME.py, where the parser reads them) and parses
 * each function it defines that is not parsed yet. */
static int load_library_file(jit_lib_file lf, jit_error *err) {
    char path[128], modname[128];
    snprintf(path, sizeof path, "offload/jit/%s.py", lf.name);
    snprintf(modname, sizeof modname, "offload.jit.%s", lf.name);
    PyObject *ns = PyDict_New(), *mname = PyUnicode_FromString(modname), *text = NULL,
             *lines = NULL, *linecache = NULL, *cache = NULL, *entry = NULL, *code = NULL,
             *done = NULL;
    int rc = -1;
    if (ns && mname && PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) == 0 &&
        PyDict_SetItemString(ns, "__name__", mname) == 0 &&
        (text = PyUnicode_FromString(lf.text)) &&
        (lines = PyObject_CallMethod(text, "splitlines", "O", Py_True)) &&
        (linecache = PyImport_ImportModule("linecache")) &&
        (cache = PyObject_GetAttrString(linecache, "cache")) &&
        (entry = Py_BuildValue("(nOOs)", PyUnicode_GET_LENGTH(text), Py_None, lines, path)) &&
        PyDict_SetItemString(cache, path, entry) == 0 &&
        (code = PyMarshal_ReadObjectFromString((const char *)lf.code, (Py_ssize_t)lf.code_size)) &&
        (done = PyEval_EvalCode(code, ns, ns)) &&
        nlib_globals < (int)(sizeof lib_globals / sizeof *lib_globals)) {
        lib_globals[nlib_globals++] = ns; /* kept for the process, as the functions are */
        Py_INCREF(ns);
        rc = 0;
    }
    if (rc < 0) internal_error(err, "cannot load the JIT's device library");
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (rc == 0 && PyDict_Next(ns, &pos, &key, &value)) {
        if (!PyFunction_Check(value) || PyFunction_GET_GLOBALS(value) != ns ||
            jit_lib_find_origin(value))
            continue;
        jit_func *f = parse_function(value, false, NULL, NULL, NULL, err);
        if (!f)
            rc = -1;
        else if (jit_lib_add(f) < 0) {
            jit_func_free(f);
            rc = internal_error(err, "the JIT's device library has too many functions");
        }
    }
    Py_XDECREF(ns);
    Py_XDECREF(mname);
    Py_XDECREF(text);
    Py_XDECREF(lines);
    Py_XDECREF(linecache);
    Py_XDECREF(cache);
    Py_XDECREF(entry);
    Py_XDECREF(code);
    Py_XDECREF(done);
    return rc;
}

/* The library file name ("complex", "print"), loaded at the first kernel
 * of the process that needs it (need_library, jit_lib_load_for): once per
 * process (a failure is kept and reported again); a library function parsed
 * by this very load finds it under way. With the GIL; a thread that finds
 * another one loading (which may let the GIL go) waits for it. */
static int load_library(const char *name, jit_error *err) {
    enum { MAX_FILES = 8 };
    static int state[MAX_FILES]; /* 0 not yet, 1 loading, 2 loaded, 3 failed */
    static unsigned long loader[MAX_FILES];
    static jit_error failure[MAX_FILES];
    int i = 0;
    while (i < jit_lib_nfiles() && strcmp(jit_lib_file_at(i).name, name)) i++;
    if (i == jit_lib_nfiles() || i >= MAX_FILES)
        return internal_error(err, "the JIT's device library has no such file");
    while (state[i] == 1 && loader[i] != PyThread_get_thread_ident()) {
        Py_BEGIN_ALLOW_THREADS
        usleep(1000);
        Py_END_ALLOW_THREADS
    }
    if (state[i] == 3) *err = failure[i];
    if (state[i]) return state[i] == 3 ? -1 : 0;
    state[i] = 1;
    loader[i] = PyThread_get_thread_ident();
    int rc = load_library_file(jit_lib_file_at(i), err);
    if (rc < 0) failure[i] = *err;
    state[i] = rc < 0 ? 3 : 2;
    return rc;
}

int jit_lib_load_for(const jit_type *types, int ntypes, jit_error *err) {
    memset(err, 0, sizeof *err);
    for (int i = 0; i < ntypes; i++)
        if ((types[i].kind == JT_SCALAR || types[i].kind == JT_ARRAY) &&
            jit_dtype_is_complex((jit_dtype)types[i].dtype))
            return init_known() < 0 ? internal_error(err, "cannot import math/numpy")
                                    : load_library("complex", err);
    return 0;
}

jit_func *jit_func_parse(PyObject *pyfunc, bool is_kernel, PyObject *consts, PyObject *arrays,
                         jit_error *err) {
    memset(err, 0, sizeof *err);
    if (init_known() < 0) {
        internal_error(err, "cannot import math/numpy");
        return NULL;
    }
    return parse_function(pyfunc, is_kernel, consts, arrays, NULL, err);
}

jit_func *jit_func_from_ast(PyObject *def, PyObject *globals, const char *filename, PyObject *lines,
                            int first_line, jit_error *err) {
    memset(err, 0, sizeof *err);
    if (init_known() < 0) {
        internal_error(err, "cannot import math/numpy");
        return NULL;
    }
    jit_func *f = calloc(1, sizeof *f);
    if (!f) {
        internal_error(err, "out of memory");
        return NULL;
    }
    f->origin = def;
    f->is_kernel = true;
    f->filename = strdup(filename);
    f->first_line = first_line;
    f->nlines = (int)PyList_GET_SIZE(lines);
    f->lines = calloc((size_t)f->nlines + 1, sizeof *f->lines);
    for (int i = 0; f->lines && i < f->nlines; i++)
        f->lines[i] = strdup(PyUnicode_AsUTF8(PyList_GET_ITEM(lines, i)));
    parser p = {.f = f, .err = err}; /* line0 0, indent 0: the tree's places are the file's */
    PyObject *name = PyObject_GetAttrString(def, "name");
    f->name = strdup(name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "loop");
    Py_XDECREF(name);
    /* the code depends on the tree, not on where it sits: dump without places */
    PyObject *ast = PyImport_ImportModule("ast");
    PyObject *dump = ast ? PyObject_CallMethod(ast, "dump", "O", def) : NULL;
    Py_XDECREF(ast);
    int rc = -1;
    if (!dump || !f->lines || !f->filename) {
        internal_error(err, "cannot read the loop's tree");
    } else {
        p.hash = EVP_MD_CTX_new();
        EVP_DigestInit_ex(p.hash, EVP_sha256(), NULL);
        hash_text(&p, PyUnicode_AsUTF8(dump));
        rc = parse_with(&p, def, globals);
        unsigned len = 0;
        EVP_DigestFinal_ex(p.hash, f->source_hash, &len);
        EVP_MD_CTX_free(p.hash);
        Py_CLEAR(p.value);
        Py_CLEAR(p.bound);
    }
    Py_XDECREF(dump);
    if (rc < 0) {
        jit_func_free(f);
        return NULL;
    }
    return f;
}

void jit_func_free(jit_func *f) {
    if (!f) return;
    for (int i = 0; i < f->ncallees; i++) jit_func_free(f->callees[i]);
    free(f->callees);
    for (int i = 0; i < f->nblocks; i++) free(f->blocks[i]);
    free(f->blocks);
    for (int i = 0; f->lines && i < f->nlines; i++) free(f->lines[i]);
    free(f->lines);
    free(f->vars);
    free(f->var_types);
    free(f->name);
    free(f->filename);
    free(f);
}

static int var_named(const jit_func *f, const char *name, int below) {
    for (int v = 0; v < below; v++)
        if (!strcmp(f->vars[v].name, name)) return v;
    return -1;
}

int jit_func_assume_in_range(jit_func *f, const char *array, int axis, const char *index) {
    int arr = var_named(f, array, f->nparams), idx = var_named(f, index, f->nvars);
    if (arr < 0 || idx < 0 || axis < 0 || axis > 2 ||
        f->nin_range == (int)(sizeof f->in_range / sizeof f->in_range[0]))
        return -1;
    f->in_range[f->nin_range++] = (struct jit_in_range){arr, axis, idx};
    /* a kernel that assumes more is another kernel */
    char what[128];
    int n = snprintf(what, sizeof what, "%d:%d:%d", arr, axis, idx);
    unsigned char both[sizeof f->source_hash + sizeof what];
    memcpy(both, f->source_hash, sizeof f->source_hash);
    memcpy(both + sizeof f->source_hash, what, (size_t)n);
    unsigned len = 0;
    EVP_Digest(both, sizeof f->source_hash + (size_t)n, f->source_hash, &len, EVP_sha256(), NULL);
    return 0;
}

const char *jit_func_name(const jit_func *f) { return f->name; }
int jit_func_nparams(const jit_func *f) { return f->nparams; }
