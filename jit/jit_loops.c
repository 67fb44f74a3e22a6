/* jit_loops: prange loops of a cell or function as loop kernels.
 *
 * A loop is found and described once, when its cell or @offload.jit function
 * is prepared (jit_loops_rewrite); its kernel's tree is built at its first
 * launch (jit_loop_kernel), when the values of the names it reads say which
 * are parameters (arrays, numbers) and which are compile-time references.
 * Finding and describing loops works on `ast` nodes through the C API; the
 * kernel's tree is a template of jit/templates/loops.py filled in around the
 * loop's body, then parsed by jit_parse like any @offload.kernel, so errors
 * point at the cell's own lines. */
#include <stdarg.h>
#include <string.h>

#include "jit_builtins.h"
#include "jit_tree.h"

#include <marshal.h> /* after Python.h, which jit.h includes */

#include "jit_loop_files.h" /* loop_files[]: jit/templates/, made by scripts/embed-kernels */

static PyObject *ast_mod; /* the ast module, imported once, never released */

static const char *kind_of(PyObject *node) {
    const char *n = Py_TYPE(node)->tp_name;
    const char *dot = strrchr(n, '.');
    return dot ? dot + 1 : n;
}
static bool is(PyObject *node, const char *kind) {
    return node && strcmp(kind_of(node), kind) == 0;
}

static PyObject *get(PyObject *node, const char *field) {
    return PyObject_GetAttrString(node, field);
}

static long get_long(PyObject *node, const char *field) {
    PyObject *v = get(node, field);
    long r = v && PyLong_Check(v) ? PyLong_AsLong(v) : 0;
    Py_XDECREF(v);
    PyErr_Clear();
    return r;
}

/* Name nodes: their id as UTF-8, or NULL (borrowed from the node's str). */
static const char *name_id(PyObject *node) {
    if (!is(node, "Name")) return NULL;
    PyObject *id = get(node, "id");
    const char *s = id && PyUnicode_Check(id) ? PyUnicode_AsUTF8(id) : NULL;
    Py_XDECREF(id); /* the node keeps the str alive */
    return s;
}

static bool has_ctx(PyObject *node, const char *ctx) {
    PyObject *c = get(node, "ctx");
    bool r = is(c, ctx);
    Py_XDECREF(c);
    PyErr_Clear();
    return r;
}

/* A CompileError at node, with the line and caret from lines. */
typedef struct {
    const char *filename;
    PyObject *lines;
    jit_error *err;
} place;

static int fail_at(place *pl, PyObject *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(place *pl, PyObject *node, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int nlines = (int)PyList_GET_SIZE(pl->lines);
    char **lines = calloc((size_t)nlines + 1, sizeof *lines);
    for (int i = 0; lines && i < nlines; i++)
        lines[i] = (char *)PyUnicode_AsUTF8(PyList_GET_ITEM(pl->lines, i));
    jit_func where = {.filename = (char *)pl->filename,
                      .lines = lines,
                      .first_line = 1,
                      .nlines = lines ? nlines : 0};
    jit_error_at(pl->err, &where, (int)get_long(node, "lineno"),
                 (int)get_long(node, "col_offset") + 1, "%s", what);
    free(lines);
    return -1;
}

static bool is_prange(PyObject *iter) {
    if (!is(iter, "Call")) return false;
    PyObject *fn = get(iter, "func");
    bool r = false;
    if (is(fn, "Name")) {
        const char *id = name_id(fn);
        r = id && strcmp(id, "prange") == 0;
    } else if (is(fn, "Attribute")) {
        PyObject *attr = get(fn, "attr");
        r = attr && PyUnicode_Check(attr) && PyUnicode_CompareWithASCIIString(attr, "prange") == 0;
        Py_XDECREF(attr);
    }
    Py_XDECREF(fn);
    return r;
}

/* Every node under root, breadth first (ast.walk); new list or NULL. */
static PyObject *walk(PyObject *root) {
    PyObject *gen = PyObject_CallMethod(ast_mod, "walk", "O", root);
    PyObject *all = gen ? PySequence_List(gen) : NULL;
    Py_XDECREF(gen);
    return all;
}

static PyObject *walk_list(PyObject *stmts) {
    PyObject *all = PyList_New(0);
    for (Py_ssize_t i = 0; all && i < PyList_GET_SIZE(stmts); i++) {
        PyObject *part = walk(PyList_GET_ITEM(stmts, i));
        if (!part || PyList_SetSlice(all, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, part) < 0) Py_CLEAR(all);
        Py_XDECREF(part);
    }
    return all;
}

/* ---- checking a loop's body ---- */

/* break and return end a sequential loop early; in a prange every iteration
 * runs anyway, so they are refused rather than silently ignored. Nested
 * loops may break; nested functions are not kernel code. */
static int check_body(place *pl, PyObject *stmts, bool in_inner_loop, jit_loop *loop) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i);
        if (is(s, "Continue") && !in_inner_loop) loop->continues = true;
        if (is(s, "Break") && !in_inner_loop)
            return fail_at(pl, s,
                           "'break' in a prange loop: its iterations run in parallel, so none can "
                           "end the others\nUse a plain range loop for a search that stops early.");
        if (is(s, "Return"))
            return fail_at(
                pl, s,
                "'return' inside a prange loop\nA prange body runs once per iteration on "
                "the device; compute into arrays and return after the loop.");
        static const char *const fields[] = {"body", "orelse", "finalbody", NULL};
        bool inner = in_inner_loop || is(s, "For") || is(s, "While");
        if (is(s, "FunctionDef") || is(s, "ClassDef") || is(s, "AsyncFunctionDef")) continue;
        for (int f = 0; fields[f]; f++) {
            PyObject *sub = get(s, fields[f]);
            if (!sub) {
                PyErr_Clear();
                continue;
            }
            int rc = PyList_Check(sub) ? check_body(pl, sub, inner, loop) : 0;
            Py_DECREF(sub);
            if (rc < 0) return -1;
        }
    }
    return 0;
}

/* ---- names: reads, reductions, writes ---- */

/* The reduction an assignment statement makes of its target, or 0. */
static char reduction_form(PyObject *stmt, const char **target) {
    *target = NULL;
    if (is(stmt, "AugAssign")) {
        PyObject *t = get(stmt, "target"), *op = get(stmt, "op");
        *target = name_id(t);
        char r = is(op, "Add") || is(op, "Sub") ? JIT_RED_ADD : is(op, "Mult") ? JIT_RED_MUL : 0;
        Py_XDECREF(t);
        Py_XDECREF(op);
        return *target ? r : 0;
    }
    if (!is(stmt, "Assign")) return 0;
    PyObject *targets = get(stmt, "targets"), *value = get(stmt, "value");
    char r = 0;
    if (targets && PyList_GET_SIZE(targets) == 1 &&
        (*target = name_id(PyList_GET_ITEM(targets, 0)))) {
        const char *s = *target;
        if (is(value, "BinOp")) {
            PyObject *l = get(value, "left"), *rt = get(value, "right"), *op = get(value, "op");
            const char *ln = name_id(l), *rn = name_id(rt);
            bool left = ln && strcmp(ln, s) == 0, right = rn && strcmp(rn, s) == 0;
            if ((left || right) && (is(op, "Add") || is(op, "Mult")))
                r = is(op, "Add") ? JIT_RED_ADD : JIT_RED_MUL;
            else if (left && is(op, "Sub"))
                r = JIT_RED_ADD;
            Py_XDECREF(l);
            Py_XDECREF(rt);
            Py_XDECREF(op);
        } else if (is(value, "Call")) {
            PyObject *fn = get(value, "func"), *args = get(value, "args"),
                     *kw = get(value, "keywords");
            const char *f = name_id(fn);
            if (f && (!strcmp(f, "min") || !strcmp(f, "max")) && args &&
                PyList_GET_SIZE(args) == 2 && kw && PyList_GET_SIZE(kw) == 0) {
                const char *a = name_id(PyList_GET_ITEM(args, 0)),
                           *b = name_id(PyList_GET_ITEM(args, 1));
                if ((a && !strcmp(a, s)) || (b && !strcmp(b, s)))
                    r = f[1] == 'i' ? JIT_RED_MIN : JIT_RED_MAX;
            }
            Py_XDECREF(fn);
            Py_XDECREF(args);
            Py_XDECREF(kw);
        }
    }
    Py_XDECREF(targets);
    Py_XDECREF(value);
    PyErr_Clear();
    return r;
}

/* Calls that cannot write their array arguments: builtins and math/numpy
 * functions. Anything else (device functions, AtomicRef) may. */
static bool call_may_write(PyObject *call) {
    PyObject *fn = get(call, "func");
    bool may = true;
    if (is(fn, "Name")) {
        const char *id = name_id(fn);
        may = !id || !jit_builtin_find(id); /* a Python builtin's spelling is bare */
    } else if (is(fn, "Attribute")) {
        PyObject *attr = get(fn, "attr");
        may = attr && PyUnicode_Check(attr) &&
              PyUnicode_CompareWithASCIIString(attr, "AtomicRef") == 0;
        Py_XDECREF(attr);
    }
    Py_XDECREF(fn);
    return may;
}

static int add_name(PyObject *list, const char *s) {
    PyObject *u = PyUnicode_FromString(s);
    int rc = u && !PySequence_Contains(list, u) ? PyList_Append(list, u) : (u ? 0 : -1);
    Py_XDECREF(u);
    return rc;
}

static bool in_list(PyObject *list, const char *s) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        if (PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(list, i), s) == 0) return true;
    return false;
}

/* The dimension whose loop variable name is, or -1. */
static int target_dim(const jit_loop *loop, const char *name) {
    for (Py_ssize_t d = 0; name && d < PyTuple_GET_SIZE(loop->targets); d++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(loop->targets, d), name) == 0)
            return (int)d;
    return -1;
}

/* jit_loop.direct: from every Subscript among nodes (reads, stores: lists of
 * the names the body reads and assigns). */
static PyObject *direct_accesses(const jit_loop *loop, PyObject *nodes, PyObject *stores,
                                 PyObject *reads) {
    PyObject *found = PyList_New(0);
    for (Py_ssize_t i = 0; found && i < PyList_GET_SIZE(nodes); i++) {
        PyObject *n = PyList_GET_ITEM(nodes, i);
        if (!is(n, "Subscript")) continue;
        PyObject *v = get(n, "value"), *sl = get(n, "slice");
        const char *arr = v ? name_id(v) : NULL;
        PyObject *elts = sl && is(sl, "Tuple") ? get(sl, "elts") : NULL;
        Py_ssize_t nidx = elts ? PyList_GET_SIZE(elts) : 1;
        for (Py_ssize_t k = 0; arr && in_list(reads, arr) && k < nidx && k < 3; k++) {
            const char *ix = name_id(elts ? PyList_GET_ITEM(elts, k) : sl);
            int d = target_dim(loop, ix);
            if (d < 0 || in_list(stores, ix)) continue;
            PyObject *t = Py_BuildValue("(snni)", arr, nidx, k, d);
            if (!t || (!PySequence_Contains(found, t) && PyList_Append(found, t) < 0))
                Py_CLEAR(found);
            Py_XDECREF(t);
        }
        Py_XDECREF(v);
        Py_XDECREF(sl);
        Py_XDECREF(elts);
    }
    PyErr_Clear();
    PyObject *direct = found ? PyList_GetSlice(found, 0, 16) : NULL; /* jit_loop_form's bits */
    PyObject *tuple = direct ? PyList_AsTuple(direct) : NULL;
    Py_XDECREF(found);
    Py_XDECREF(direct);
    return tuple;
}

static int analyse(jit_loop *loop) {
    PyObject *nodes = walk_list(loop->body);
    PyObject *loads = PyList_New(0), *stores = PyList_New(0), *written = PyList_New(0),
             *reds = PyList_New(0);
    PyObject *not_red = PyList_New(0);
    int rc = -1;
    if (!nodes || !loads || !stores || !written || !reds || !not_red) goto out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes); i++) {
        PyObject *n = PyList_GET_ITEM(nodes, i);
        const char *id = name_id(n);
        if (id) {
            if (add_name(has_ctx(n, "Load") ? loads : stores, id) < 0) goto out;
            continue;
        }
        if (is(n, "Subscript") &&
            has_ctx(n, "Store")) { /* a[i] = / a[i] += : the array is written */
            PyObject *v = get(n, "value");
            while (v && is(v, "Subscript")) {
                PyObject *inner = get(v, "value");
                Py_DECREF(v);
                v = inner;
            }
            const char *arr = v ? name_id(v) : NULL;
            int r = arr ? add_name(written, arr) : 0;
            Py_XDECREF(v);
            if (r < 0) goto out;
        } else if (is(n, "Call") && call_may_write(n)) {
            PyObject *args = get(n, "args");
            for (Py_ssize_t a = 0; args && a < PyList_GET_SIZE(args); a++) {
                const char *arr = name_id(PyList_GET_ITEM(args, a));
                if (arr && add_name(written, arr) < 0) {
                    Py_DECREF(args);
                    goto out;
                }
            }
            Py_XDECREF(args);
        }
    }
    /* A name is a reduction when every store to it is one reduction form with
     * one operator (and it is not a loop variable); any other store makes it
     * private to the iteration. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes); i++) {
        PyObject *n = PyList_GET_ITEM(nodes, i);
        const char *t;
        char op = reduction_form(n, &t);
        if (!t) continue;
        Py_ssize_t k;
        for (k = 0; k < PyList_GET_SIZE(reds); k++)
            if (PyUnicode_CompareWithASCIIString(PyList_GET_ITEM(reds, k), t) == 0) break;
        if (!op || (k < PyList_GET_SIZE(reds) && loop->red_ops[k] != op) ||
            k >= (Py_ssize_t)sizeof loop->red_ops) {
            if (add_name(not_red, t) < 0) goto out;
        } else if (k == PyList_GET_SIZE(reds)) {
            if (add_name(reds, t) < 0) goto out;
            loop->red_ops[k] = op;
        }
    }
    /* every Name store of a reduction must be one of its reduction statements */
    PyObject *final_reds = PyList_New(0);
    char ops[sizeof loop->red_ops] = {0};
    for (Py_ssize_t k = 0; final_reds && k < PyList_GET_SIZE(reds); k++) {
        const char *t = PyUnicode_AsUTF8(PyList_GET_ITEM(reds, k));
        long stores_of = 0, forms = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes); i++) {
            PyObject *n = PyList_GET_ITEM(nodes, i);
            const char *id = name_id(n), *rt;
            if (id && !strcmp(id, t) && !has_ctx(n, "Load")) stores_of++;
            if (reduction_form(n, &rt) && rt && !strcmp(rt, t)) forms++;
        }
        bool target = false;
        for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(loop->targets); d++)
            target |= PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(loop->targets, d), t) == 0;
        if (!in_list(not_red, t) && stores_of == forms && !target) {
            ops[PyList_GET_SIZE(final_reds)] = loop->red_ops[k];
            if (add_name(final_reds, t) < 0) Py_CLEAR(final_reds);
        }
    }
    if (!final_reds) goto out;
    memcpy(loop->red_ops, ops, sizeof ops);
    /* reads: loaded, never stored (reductions are passed separately) */
    PyObject *reads = PyList_New(0);
    for (Py_ssize_t i = 0; reads && i < PyList_GET_SIZE(loads); i++) {
        const char *s = PyUnicode_AsUTF8(PyList_GET_ITEM(loads, i));
        bool target = false;
        for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(loop->targets); d++)
            target |= PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(loop->targets, d), s) == 0;
        if (!target && !in_list(stores, s) && add_name(reads, s) < 0) Py_CLEAR(reads);
    }
    if (reads) {
        loop->reads = PyList_AsTuple(reads);
        loop->reductions = PyList_AsTuple(final_reds);
        loop->writes = PyFrozenSet_New(written);
        loop->direct = direct_accesses(loop, nodes, stores, reads);
        rc = loop->reads && loop->reductions && loop->writes && loop->direct ? 0 : -1;
    }
    Py_XDECREF(reads);
    Py_DECREF(final_reds);
out:
    Py_XDECREF(nodes);
    Py_XDECREF(loads);
    Py_XDECREF(stores);
    Py_XDECREF(written);
    Py_XDECREF(reds);
    Py_XDECREF(not_red);
    return rc;
}

/* Bodies of more ast nodes than this are not copied JIT_LOOP_LANES_WIDTH
 * times (JIT_LOOP_ACC): the copies would cost more compile time than the
 * vectors win. A sum is 7 nodes, a dot product 12. */
#define ACC_MAX_NODES 60

/* ---- finding loops ---- */

/* ast.<cls>(**kw); steals nothing. */
static PyObject *make(const char *cls, PyObject *kw) {
    PyObject *type = PyObject_GetAttrString(ast_mod, cls);
    PyObject *empty = PyTuple_New(0);
    PyObject *n = type && empty && kw ? PyObject_Call(type, empty, kw) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(empty);
    Py_XDECREF(kw);
    return n;
}

static PyObject *make_ctx(const char *ctx) { return make(ctx, PyDict_New()); }

/* The (start, stop, step) expressions of a prange call, appended to out. */
static int range_exprs(place *pl, PyObject *call, PyObject *out) {
    PyObject *args = get(call, "args"), *kw = get(call, "keywords");
    Py_ssize_t n = args ? PyList_GET_SIZE(args) : 0;
    int rc = -1;
    if (!args || !kw) goto out;
    if (PyList_GET_SIZE(kw) || n < 1 || n > 3) {
        fail_at(pl, call, "prange takes 1 to 3 positional arguments, as range does");
        goto out;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args); i++)
        if (is(PyList_GET_ITEM(args, i), "Starred")) {
            fail_at(pl, PyList_GET_ITEM(args, i),
                    "prange(*args) is not supported\nPass start, stop and step.");
            goto out;
        }
    PyObject *zero = make("Constant", Py_BuildValue("{s:i}", "value", 0));
    PyObject *one = make("Constant", Py_BuildValue("{s:i}", "value", 1));
    if (zero && one) {
        PyObject *start = n == 1 ? zero : PyList_GET_ITEM(args, 0);
        PyObject *stop = n == 1 ? PyList_GET_ITEM(args, 0) : PyList_GET_ITEM(args, 1);
        PyObject *step = n == 3 ? PyList_GET_ITEM(args, 2) : one;
        rc = PyList_Append(out, start) || PyList_Append(out, stop) || PyList_Append(out, step) ? -1
                                                                                               : 0;
    }
    Py_XDECREF(zero);
    Py_XDECREF(one);
out:
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return rc;
}

/* Does any Name under node read one of the targets so far? */
static int reads_any(PyObject *node, PyObject *targets) {
    PyObject *nodes = walk(node);
    if (!nodes) return -1;
    int r = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes) && !r; i++) {
        const char *id = name_id(PyList_GET_ITEM(nodes, i));
        r = id && in_list(targets, id);
    }
    Py_DECREF(nodes);
    return r;
}

static PyObject *names_tuple(PyObject *names, const char *ctx) {
    PyObject *elts = PyList_New(0);
    for (Py_ssize_t i = 0; elts && i < PyTuple_GET_SIZE(names); i++) {
        PyObject *n = make("Name", Py_BuildValue("{s:O,s:N}", "id", PyTuple_GET_ITEM(names, i),
                                                 "ctx", make_ctx(ctx)));
        if (!n || PyList_Append(elts, n) < 0) Py_CLEAR(elts);
        Py_XDECREF(n);
    }
    return elts ? make("Tuple", Py_BuildValue("{s:N,s:N}", "elts", elts, "ctx", make_ctx(ctx)))
                : NULL;
}

/* The statement that replaces the loop: [reductions =] offload._loop(id, ranges, values). */
static PyObject *replacement(PyObject *reads, PyObject *reductions, long id, PyObject *ranges,
                             PyObject *for_node) {
    PyObject *tree =
        PyObject_CallMethod(ast_mod, "parse", "s", "__import__('offload')._loop(0, (), ())");
    PyObject *body = tree ? get(tree, "body") : NULL;
    PyObject *call = body ? get(PyList_GET_ITEM(body, 0), "value") : NULL;
    PyObject *args = call ? get(call, "args") : NULL;
    PyObject *values = PySequence_Concat(reads, reductions);
    PyObject *stmt = NULL;
    if (!args || !values) goto out;
    PyObject *idc = make("Constant", Py_BuildValue("{s:l}", "value", id));
    PyObject *rt =
        make("Tuple", Py_BuildValue("{s:O,s:N}", "elts", ranges, "ctx", make_ctx("Load")));
    PyObject *vt = names_tuple(values, "Load");
    if (idc && rt && vt && !PyList_SetItem(args, 0, idc) && !PyList_SetItem(args, 1, rt) &&
        !PyList_SetItem(args, 2, vt)) {
        idc = rt = vt = NULL; /* stolen by the list */
        if (PyTuple_GET_SIZE(reductions)) {
            PyObject *targets = names_tuple(reductions, "Store");
            stmt = targets ? make("Assign",
                                  Py_BuildValue("{s:[N],s:O}", "targets", targets, "value", call))
                           : NULL;
        } else {
            stmt = make("Expr", Py_BuildValue("{s:O}", "value", call));
        }
    }
    Py_XDECREF(idc);
    Py_XDECREF(rt);
    Py_XDECREF(vt);
    if (stmt) {
        PyObject *r = PyObject_CallMethod(ast_mod, "copy_location", "OO", stmt, for_node);
        PyObject *r2 = r ? PyObject_CallMethod(ast_mod, "fix_missing_locations", "O", stmt) : NULL;
        if (!r2) Py_CLEAR(stmt);
        Py_XDECREF(r);
        Py_XDECREF(r2);
    }
out:
    Py_XDECREF(tree);
    Py_XDECREF(body);
    Py_XDECREF(call);
    Py_XDECREF(args);
    Py_XDECREF(values);
    return stmt;
}

/* for_node is a prange loop: describe it and return its replacement. */
static PyObject *take_loop(place *pl, PyObject *for_node, jit_loop_found found, void *ctx) {
    jit_loop loop = {0};
    loop.line = (int)get_long(for_node, "lineno");
    loop.col = (int)get_long(for_node, "col_offset") + 1;
    PyObject *targets = PyList_New(0), *ranges = PyList_New(0), *result = NULL;
    PyObject *node = Py_NewRef(for_node);
    if (!targets || !ranges) goto out;
    for (;;) {
        PyObject *target = get(node, "target"), *iter = get(node, "iter"),
                 *orelse = get(node, "orelse");
        const char *id = target ? name_id(target) : NULL;
        int rc = 0;
        if (!id)
            rc = fail_at(pl, target ? target : node,
                         "a prange loop's variable must be a single name");
        else if (orelse && PyList_GET_SIZE(orelse))
            rc = fail_at(pl, node, "a prange loop cannot have an 'else' clause");
        else if (add_name(targets, id) < 0 || range_exprs(pl, iter, ranges) < 0)
            rc = -1;
        Py_XDECREF(target);
        Py_XDECREF(iter);
        Py_XDECREF(orelse);
        if (rc < 0) goto out;
        loop.ndim++;
        PyObject *body = get(node, "body");
        if (!body) goto out;
        /* a prange directly inside, alone, whose range does not depend on the
         * outer variables, adds a dimension */
        PyObject *inner = PyList_GET_SIZE(body) == 1 ? PyList_GET_ITEM(body, 0) : NULL;
        PyObject *inner_iter = inner && is(inner, "For") ? get(inner, "iter") : NULL;
        int dep = inner_iter && is_prange(inner_iter) && loop.ndim < 3
                      ? reads_any(inner_iter, targets)
                      : 1;
        Py_XDECREF(inner_iter);
        if (dep < 0) {
            Py_DECREF(body);
            goto out;
        }
        if (dep) {
            loop.body = body;
            break;
        }
        Py_SETREF(node, Py_NewRef(inner));
        Py_DECREF(body);
    }
    if (check_body(pl, loop.body, false, &loop) < 0) goto out;
    if (!(loop.targets = PyList_AsTuple(targets)) || analyse(&loop) < 0) goto out;
    PyObject *all = walk_list(loop.body);
    if (!all) goto out;
    loop.unrollable = !loop.continues && PyList_GET_SIZE(all) <= ACC_MAX_NODES;
    Py_DECREF(all);
    /* the callback takes the loop (and frees it when it knew the loop already) */
    PyObject *reads = Py_NewRef(loop.reads), *reds = Py_NewRef(loop.reductions);
    long id = found(ctx, &loop);
    memset(&loop, 0, sizeof loop);
    if (id >= 0) result = replacement(reads, reds, id, ranges, for_node);
    Py_DECREF(reads);
    Py_DECREF(reds);
out:
    jit_loop_clear(&loop);
    Py_XDECREF(targets);
    Py_XDECREF(ranges);
    Py_XDECREF(node);
    return result;
}

static int rewrite(place *pl, PyObject *stmts, jit_loop_found found, void *ctx) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i);
        if (is(s, "For")) {
            PyObject *iter = get(s, "iter");
            bool pr = iter && is_prange(iter);
            Py_XDECREF(iter);
            if (pr) {
                PyObject *call = take_loop(pl, s, found, ctx);
                if (!call || PyList_SetItem(stmts, i, call) < 0) return -1;
                continue;
            }
        }
        if (is(s, "FunctionDef") || is(s, "AsyncFunctionDef") || is(s, "ClassDef")) continue;
        static const char *const fields[] = {"body",     "orelse", "finalbody",
                                             "handlers", "cases",  NULL};
        for (int f = 0; fields[f]; f++) {
            PyObject *sub = get(s, fields[f]);
            if (!sub) {
                PyErr_Clear();
                continue;
            }
            int rc = 0;
            if (PyList_Check(sub) &&
                (f == 3 || f == 4)) { /* except handlers and match cases have bodies */
                for (Py_ssize_t h = 0; h < PyList_GET_SIZE(sub) && rc == 0; h++) {
                    PyObject *hb = get(PyList_GET_ITEM(sub, h), "body");
                    rc = hb && PyList_Check(hb) ? rewrite(pl, hb, found, ctx) : -1;
                    Py_XDECREF(hb);
                }
            } else if (PyList_Check(sub)) {
                rc = rewrite(pl, sub, found, ctx);
            }
            Py_DECREF(sub);
            if (rc < 0) return -1;
        }
    }
    return 0;
}

int jit_loops_rewrite(PyObject *stmts, const char *filename, PyObject *lines, jit_loop_found found,
                      void *ctx, jit_error *err) {
    memset(err, 0, sizeof *err);
    if (!ast_mod && !(ast_mod = PyImport_ImportModule("ast"))) return -1;
    place pl = {filename, lines, err};
    return rewrite(&pl, stmts, found, ctx);
}

void jit_loop_clear(jit_loop *loop) {
    Py_CLEAR(loop->targets);
    Py_CLEAR(loop->body);
    Py_CLEAR(loop->reads);
    Py_CLEAR(loop->reductions);
    Py_CLEAR(loop->writes);
    Py_CLEAR(loop->direct);
}

/* ---- the loop's kernel ----
 *
 * The kernels are written in the kernel language, one template per shape, in
 * jit/templates/loops.py; jit/templates/expand.py fills one in for a loop and
 * form, on trees. Both are built in (scripts/embed-kernels), so the module
 * needs no file beside it. The expansion is Python, as it is a walk over
 * `ast` nodes that copies, renames and repeats them, which through the C API
 * would be mostly reference counting. */

static PyObject *expand_kernel; /* expand.py's kernel(), loaded once, never released */

/* expand.py run as a module of its own, given loops.py's text: its kernel
 * function, a new reference, or NULL with a Python exception. */
static PyObject *load_expander(void) {
    size_t expand = 0, templates = 0, n = sizeof loop_files / sizeof *loop_files;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(loop_files[i].name, "expand")) expand = i;
        if (!strcmp(loop_files[i].name, "loops")) templates = i;
    }
    PyObject *ns = PyDict_New(), *code = NULL, *done = NULL, *fn = NULL;
    PyObject *text = PyUnicode_FromString(loop_files[templates].text);
    PyObject *modname = PyUnicode_FromString("offload.jit.templates.expand");
    if (ns && text && modname && PyDict_SetItemString(ns, "__name__", modname) == 0 &&
        PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) == 0 &&
        (code = PyMarshal_ReadObjectFromString((const char *)loop_files[expand].code,
                                               (Py_ssize_t)loop_files[expand].code_size)))
        done = PyEval_EvalCode(code, ns, ns);
    if (done && PyDict_SetItemString(ns, "TEMPLATES", text) == 0 &&
        !(fn = Py_XNewRef(PyDict_GetItemString(ns, "kernel"))))
        PyErr_SetString(PyExc_SystemError, "offload: jit/templates/expand.py has no kernel()");
    Py_XDECREF(ns);
    Py_XDECREF(text);
    Py_XDECREF(modname);
    Py_XDECREF(code);
    Py_XDECREF(done);
    return fn;
}

PyObject *jit_loop_kernel(const jit_loop *loop, PyObject *params, const jit_loop_form *form,
                          const char *name) {
    static const char *const shapes[] = {
        [JIT_LOOP_MAP] = "map",
        [JIT_LOOP_LANES] = "lanes",
        [JIT_LOOP_ACC] = "acc",
        [JIT_LOOP_STRIDE] = "stride",
    };
    if (!expand_kernel) {
        PyObject *fn = load_expander();
        if (!fn) return NULL;
        if (expand_kernel) /* loading ran Python: another thread may have been first */
            Py_DECREF(fn);
        else
            expand_kernel = fn;
    }
    PyObject *ops = PyUnicode_FromStringAndSize(loop->red_ops, PyTuple_GET_SIZE(loop->reductions));
    if (!ops) return NULL;
    return PyObject_CallFunction(expand_kernel, "ssOOONIIOOOiiii", shapes[form->shape], name,
                                 params, loop->targets, loop->reductions, ops, form->unit_steps,
                                 form->lanes, loop->continues ? Py_True : Py_False,
                                 loop->unrollable ? Py_True : Py_False, loop->body, loop->line,
                                 loop->col - 1, (int)JIT_LOOP_LANES_WIDTH, (int)JIT_LOOP_GROUP);
}

int jit_var_type(jit_func *f, const jit_type *args, int nargs, int range_ndim, bool nd,
                 const char *var, jit_type *out, jit_error *err) {
    memset(err, 0, sizeof *err);
    jit_type params[257];
    if (nargs + 1 != f->nparams || nargs > 256) {
        snprintf(err->msg, sizeof err->msg, "%s: %d arguments for %d parameters", f->name, nargs,
                 f->nparams - 1);
        return -1;
    }
    params[0] = (jit_type){nd ? JT_NDITEM : JT_ITEM, 0, (unsigned char)range_ndim, 0, 0};
    memcpy(params + 1, args, sizeof *args * (size_t)nargs);
    if (jit_infer(f, params, NULL, err) < 0) return -1;
    for (int v = 0; v < f->nvars; v++)
        if (!strcmp(f->vars[v].name, var)) {
            *out = f->var_types[v];
            return 0;
        }
    snprintf(err->msg, sizeof err->msg, "%s has no variable '%s'", f->name, var);
    return -1;
}
