/* jit_loops: prange loops of a cell or function as loop kernels.
 *
 * A loop is found and described once, when its cell or @offload.jit function
 * is prepared (jit_loops_rewrite); its kernel's tree is built at its first
 * launch (jit_loop_kernel), when the values of the names it reads say which
 * are parameters (arrays, numbers) and which are compile-time references.
 * Everything here works on `ast` nodes through the C API; the kernel's tree
 * is then parsed by jit_parse like any @offload.kernel, so errors point at
 * the cell's own lines. */
#include <stdarg.h>
#include <string.h>

#include "jit_builtins.h"
#include "jit_tree.h"

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

/* ---- the loop's kernel ---- */

typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k =
            t->oom ? 0 : vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (t->oom || k < 0) {
            t->oom = true;
            return;
        }
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = (t->cap ? t->cap : 256) * 2 + (size_t)k;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->oom = true;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
}

static const char *str_at(PyObject *tuple, Py_ssize_t i) {
    return PyUnicode_AsUTF8(PyTuple_GET_ITEM(tuple, i));
}

/* The value of dimension d's variable for trip count expression k (text). */
static void put_var(text *t, int ind, const jit_loop *loop, const jit_loop_form *form, int d,
                    const char *k) {
    put(t, "%*s%s = _ofl_s%d + %s", ind, "", str_at(loop->targets, d), d, k);
    put(t, form->unit_steps >> d & 1 ? "\n" : " * _ofl_d%d\n", d);
}

/* The map shape: one work-item per iteration. A body that continues gets
 * one-trip loops to bind the variables, so that `continue` ends the
 * iteration; others plain assignments (Intel's vectoriser masked every load
 * and store of a one-trip loop). */
static void map_text(text *t, const jit_loop *loop, const jit_loop_form *form) {
    int ind = 4;
    for (int d = 0; d < loop->ndim; d++) {
        const char *v = str_at(loop->targets, d);
        char k[64];
        snprintf(k, sizeof k, "_ofl_item.get_id(%d)", d);
        if (!loop->continues) {
            put_var(t, ind, loop, form, d, k);
            continue;
        }
        if (form->unit_steps >> d & 1)
            put(t, "%*sfor %s in range(_ofl_s%d + %s, _ofl_s%d + %s + 1):\n", ind, "", v, d, k, d,
                k);
        else
            put(t, "%*sfor %s in range(_ofl_s%d + %s * _ofl_d%d, _ofl_s%d + %s * _ofl_d%d + 1):\n",
                ind, "", v, d, k, d, d, k, d);
        ind += 4;
    }
    put(t, "%*s_ofl_body\n", ind, "");
}

/* The row's iterations [_ofl_a, _ofl_b) of the last dimension (JIT_LOOP_LANES):
 * whole vectors, then the rest, so that every lane's loop has the same trip
 * count (Intel's vectoriser gathered where they differed). */
static void lanes_row(text *t, int ind, const jit_loop *loop, const jit_loop_form *form) {
    int last = loop->ndim - 1;
    put(t, "%*s_ofl_e = _ofl_a + (_ofl_b - _ofl_a) // %d * %d\n", ind, "", JIT_LOOP_LANES_WIDTH,
        JIT_LOOP_LANES_WIDTH);
    static const char *const spans[2][2] = {{"_ofl_a", "_ofl_e + _ofl_l"}, {"_ofl_e", "_ofl_b"}};
    const char *v = str_at(loop->targets, last);
    for (int part = 0; part < 2; part++) {
        const char *from = spans[part][0], *to = spans[part][1];
        if (form->unit_steps >> last & 1) {
            put(t, "%*sfor %s in range(_ofl_s%d + %s + _ofl_l, _ofl_s%d + %s, %d):\n", ind, "", v,
                last, from, last, to, JIT_LOOP_LANES_WIDTH);
        } else {
            put(t, "%*sfor _ofl_k in range(%s + _ofl_l, %s, %d):\n", ind, "", from, to,
                JIT_LOOP_LANES_WIDTH);
            put_var(t, ind + 4, loop, form, last, "_ofl_k");
        }
        put(t, "%*s_ofl_body\n", ind + 4, "");
    }
}

/* The same for JIT_LOOP_ACC: copy u of the body (placeholder _ofl_body<u>)
 * takes iteration k + u, with its own accumulators; the rest one by one. */
static void acc_row(text *t, int ind, const jit_loop *loop) {
    int last = loop->ndim - 1, W = JIT_LOOP_LANES_WIDTH;
    const char *v = str_at(loop->targets, last);
    put(t, "%*s_ofl_e = _ofl_a + (_ofl_b - _ofl_a) // %d * %d\n", ind, "", W, W);
    put(t, "%*sfor _ofl_k in range(_ofl_s%d + _ofl_a, _ofl_s%d + _ofl_e, %d):\n", ind, "", last,
        last, W);
    for (int u = 0; u < W; u++)
        put(t, "%*s%s = _ofl_k + %d\n%*s_ofl_body%d\n", ind + 4, "", v, u, ind + 4, "", u);
    put(t, "%*sfor %s in range(_ofl_s%d + _ofl_e, _ofl_s%d + _ofl_b):\n%*s_ofl_body\n", ind, "", v,
        last, last, ind + 4, "");
}

/* An accumulator's first value: the operator's identity, or (min, max) the
 * reduction's initial value. */
static void put_initial(text *t, int ind, const char *var, char op, const char *name) {
    if (op == JIT_RED_ADD || op == JIT_RED_MUL)
        put(t, "%*s%s = %d\n", ind, "", var, op == JIT_RED_MUL);
    else
        put(t, "%*s%s = _ofl_i_%s\n", ind, "", var, name);
}

/* acc = acc op other, as the reduction's own statement would. */
static void put_fold(text *t, int ind, const char *acc, char op, const char *other) {
    if (op == JIT_RED_ADD || op == JIT_RED_MUL)
        put(t, "%*s%s %s= %s\n", ind, "", acc, op == JIT_RED_ADD ? "+" : "*", other);
    else
        put(t, "%*s%s = %s(%s, %s)\n", ind, "", acc, op == JIT_RED_MIN ? "min" : "max", acc, other);
}

/* The run shapes: run r takes the flat iterations [r * _ofl_c,
 * min(r * _ofl_c + _ofl_c, _ofl_total)), a row (of the last dimension) at a
 * time, so that the outer dimensions' variables are found by one division
 * per row; a row is lanes_row's or acc_row's. JIT_LOOP_LANES runs are
 * work-groups, JIT_LOOP_ACC runs work-items. */
static void runs_text(text *t, const jit_loop *loop, const jit_loop_form *form) {
    int nd = loop->ndim, last = nd - 1, W = JIT_LOOP_LANES_WIDTH;
    bool acc = form->shape == JIT_LOOP_ACC;
    Py_ssize_t nred = PyTuple_GET_SIZE(loop->reductions);
    if (acc) {
        for (Py_ssize_t r = 0; r < nred; r++)
            for (int u = 0; u < W; u++) {
                char var[300];
                snprintf(var, sizeof var, "_ofl_u%d_%s", u, str_at(loop->reductions, r));
                put_initial(t, 4, var, loop->red_ops[r], str_at(loop->reductions, r));
            }
        put(t, "    _ofl_t = _ofl_item.get_id(0) * _ofl_c\n");
    } else {
        put(t, "    _ofl_l = _ofl_item.get_local_id(0)\n"
               "    _ofl_t = _ofl_item.get_group().get_group_id(0) * _ofl_c\n");
    }
    put(t, "    _ofl_hi = min(_ofl_t + _ofl_c, _ofl_total)\n");
    int ind = 4;
    if (nd == 1) {
        put(t, "    _ofl_a = _ofl_t\n    _ofl_b = _ofl_hi\n");
    } else { /* a for, not a while: a short for has no cancel check on its back edge */
        put(t,
            "    for _ofl_row in range(_ofl_t // _ofl_n%d, (_ofl_hi + _ofl_n%d - 1) // _ofl_n%d):\n"
            "        _ofl_a = max(_ofl_t - _ofl_row * _ofl_n%d, 0)\n"
            "        _ofl_b = min(_ofl_hi - _ofl_row * _ofl_n%d, _ofl_n%d)\n",
            last, last, last, last, last, last);
        ind = 8;
        if (nd == 3) {
            put(t, "        _ofl_r0 = _ofl_row // _ofl_n1\n");
            put_var(t, ind, loop, form, 0, "_ofl_r0");
            put_var(t, ind, loop, form, 1, "(_ofl_row - _ofl_r0 * _ofl_n1)");
        } else {
            put_var(t, ind, loop, form, 0, "_ofl_row");
        }
    }
    if (acc)
        acc_row(t, ind, loop);
    else
        lanes_row(t, ind, loop, form);
    /* the copies' accumulators pairwise, then into the reduction */
    for (Py_ssize_t r = 0; acc && r < nred; r++) {
        const char *s = str_at(loop->reductions, r);
        char a[300], b[300];
        for (int h = W / 2; h > 0; h /= 2)
            for (int u = 0; u < h; u++) {
                snprintf(a, sizeof a, "_ofl_u%d_%s", u, s);
                snprintf(b, sizeof b, "_ofl_u%d_%s", u + h, s);
                put_fold(t, 4, a, loop->red_ops[r], b);
            }
        snprintf(a, sizeof a, "_ofl_u0_%s", s);
        put_fold(t, 4, s, loop->red_ops[r], a);
    }
}

/* The stride shape (docs/loops.md). A flat loop: work-item w takes the
 * iterations w, w + _ofl_c, ... A nest: groups of form->lanes work-items
 * take rows (of the last dimension) grid-stride, each lane every lanes-th
 * iteration of the row, so that a row's loads are one coalesced walk; the
 * outer variables cost one division per row. Walking the flattened nest
 * instead (indices stepped with carries) made a 2-D sum of 2^26 float32 on
 * an H200 3x slower than the flat loop (253 us against 81); rows take 84. */
static void stride_text(text *t, const jit_loop *loop, const jit_loop_form *form) {
    int nd = loop->ndim, last = nd - 1;
    unsigned L = form->lanes ? form->lanes : 1;
    if (nd == 1) {
        put(t, "    for _ofl_t in range(_ofl_item.get_global_id(0), _ofl_total, _ofl_c):\n");
        put_var(t, 8, loop, form, 0, "_ofl_t");
        put(t, "        _ofl_body\n");
        return;
    }
    put(t,
        "    _ofl_t = _ofl_item.get_global_id(0)\n"
        "    for _ofl_row in range(_ofl_t // %u, %s, _ofl_c // %u):\n",
        L, nd == 2 ? "_ofl_n0" : "_ofl_n0 * _ofl_n1", L);
    if (nd == 3) {
        put(t, "        _ofl_r0 = _ofl_row // _ofl_n1\n");
        put_var(t, 8, loop, form, 0, "_ofl_r0");
        put_var(t, 8, loop, form, 1, "(_ofl_row - _ofl_r0 * _ofl_n1)");
    } else {
        put_var(t, 8, loop, form, 0, "_ofl_row");
    }
    put(t, "        for _ofl_k in range(_ofl_t %% %u, _ofl_n%d, %u):\n", L, last, L);
    put_var(t, 12, loop, form, last, "_ofl_k");
    put(t, "            _ofl_body\n");
}

/* a = a (op) v as the work-group's combine does it: min and max keep a NaN,
 * as NumPy's minimum and maximum do (and reduce.py's). */
static void put_step(text *t, int ind, char op, const char *a, const char *v) {
    if (op == JIT_RED_ADD || op == JIT_RED_MUL)
        put(t, "%*s%s = %s %c %s\n", ind, "", a, a, op == JIT_RED_ADD ? '+' : '*', v);
    else
        put(t, "%*s%s = %s if (%s %c %s) | (%s != %s) else %s\n", ind, "", a, v, v,
            op == JIT_RED_MIN ? '<' : '>', a, v, v, a);
}

/* The stride shape's work-group combine: a tree through the partials array
 * (global memory: the accumulators' types are known only once the kernel is
 * typed), so that the device's second kernel reads one partial per group. */
static void group_tree_text(text *t, const jit_loop *loop) {
    Py_ssize_t nred = PyTuple_GET_SIZE(loop->reductions);
    put(t, "    _ofl_g = _ofl_item.get_global_id(0)\n"
           "    _ofl_l = _ofl_item.get_local_id(0)\n");
    for (Py_ssize_t r = 0; r < nred; r++)
        put(t, "    _ofl_p_%s[_ofl_g] = %s\n", str_at(loop->reductions, r),
            str_at(loop->reductions, r));
    for (int h = JIT_LOOP_GROUP / 2; h > 0; h /= 2) {
        put(t, "    _ofl_ol.group_barrier(_ofl_item.get_group())\n    if _ofl_l < %d:\n", h);
        for (Py_ssize_t r = 0; r < nred; r++) {
            const char *s = str_at(loop->reductions, r);
            char a[300], v[300];
            snprintf(a, sizeof a, "_ofl_a_%s", s), snprintf(v, sizeof v, "_ofl_v_%s", s);
            put(t, "        %s = _ofl_p_%s[_ofl_g]\n        %s = _ofl_p_%s[_ofl_g + %d]\n", a, s, v,
                s, h);
            put_step(t, 8, loop->red_ops[r], a, v);
            put(t, "        _ofl_p_%s[_ofl_g] = %s\n", s, a);
        }
    }
}

/* The kernel's source around a placeholder statement `_ofl_body`, which the
 * loop's body replaces (its nodes keep the cell's places). */
static void kernel_text(text *t, const jit_loop *loop, PyObject *params, const jit_loop_form *form,
                        const char *name) {
    int nd = loop->ndim;
    Py_ssize_t nred = PyTuple_GET_SIZE(loop->reductions);
    put(t, "def %s(_ofl_item", name);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(params); i++) put(t, ", %s", str_at(params, i));
    for (int d = 0; d < nd; d++) put(t, ", _ofl_s%d, _ofl_d%d", d, d);
    if (form->shape == JIT_LOOP_MAP) {
        put(t, "):\n");
        map_text(t, loop, form);
        return;
    }
    for (int d = 0; d < nd; d++) put(t, ", _ofl_n%d", d);
    put(t, ", _ofl_c, _ofl_total");
    for (Py_ssize_t r = 0; r < nred; r++) put(t, ", _ofl_p_%s", str_at(loop->reductions, r));
    for (Py_ssize_t r = 0; r < nred; r++)
        if (loop->red_ops[r] == JIT_RED_MIN || loop->red_ops[r] == JIT_RED_MAX)
            put(t, ", _ofl_i_%s", str_at(loop->reductions, r));
    put(t, "):\n");
    for (Py_ssize_t r = 0; r < nred; r++)
        put_initial(t, 4, str_at(loop->reductions, r), loop->red_ops[r],
                    str_at(loop->reductions, r));
    if (form->shape == JIT_LOOP_STRIDE) {
        stride_text(t, loop, form);
        group_tree_text(t, loop);
        return;
    }
    runs_text(t, loop, form);
    const char *id =
        form->shape == JIT_LOOP_LANES ? "_ofl_item.get_global_id(0)" : "_ofl_item.get_id(0)";
    for (Py_ssize_t r = 0; r < nred; r++)
        put(t, "    _ofl_p_%s[%s] = %s\n", str_at(loop->reductions, r), id,
            str_at(loop->reductions, r));
}

/* Puts every node of the template at the loop's place. */
static int place_template(PyObject *def, const jit_loop *loop) {
    PyObject *nodes = walk(def);
    if (!nodes) return -1;
    PyObject *line = PyLong_FromLong(loop->line), *col = PyLong_FromLong(loop->col - 1);
    int rc = line && col ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(nodes); i++) {
        PyObject *n = PyList_GET_ITEM(nodes, i);
        if (!PyObject_HasAttrString(n, "lineno")) continue;
        rc = PyObject_SetAttrString(n, "lineno", line) ||
                     PyObject_SetAttrString(n, "end_lineno", line) ||
                     PyObject_SetAttrString(n, "col_offset", col) ||
                     PyObject_SetAttrString(n, "end_col_offset", col)
                 ? -1
                 : 0;
    }
    Py_XDECREF(line);
    Py_XDECREF(col);
    Py_DECREF(nodes);
    return rc;
}

/* Replaces every placeholder in stmts (and in the bodies of its loops):
 * _ofl_body by bodies[0], _ofl_body<u> by bodies[u + 1]. The number
 * replaced, or -1. Placeholders of one kind share their body's nodes, which
 * parsing only reads. */
static int splice(PyObject *stmts, PyObject *const *bodies, int nbodies) {
    int done = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i);
        if (is(s, "Expr")) {
            PyObject *v = get(s, "value");
            const char *id = v ? name_id(v) : NULL;
            int which = -1;
            if (id && !strncmp(id, "_ofl_body", 9))
                which = id[9] ? (int)strtol(id + 9, NULL, 10) + 1 : 0;
            Py_XDECREF(v);
            if (which >= 0 && which < nbodies) {
                if (PyList_SetSlice(stmts, i, i + 1, bodies[which]) < 0) return -1;
                i += PyList_GET_SIZE(bodies[which]) - 1;
                done++;
            }
        } else if (is(s, "For") || is(s, "While")) {
            PyObject *sub = get(s, "body");
            int r = sub ? splice(sub, bodies, nbodies) : -1;
            Py_XDECREF(sub);
            if (r < 0) return -1;
            done += r;
        }
    }
    return done;
}

/* A copy of the loop's body whose reductions accumulate into copy u's own
 * accumulators (JIT_LOOP_ACC). New list, or NULL. */
static PyObject *renamed_body(const jit_loop *loop, int u) {
    PyObject *copy_mod = PyImport_ImportModule("copy");
    PyObject *body = copy_mod ? PyObject_CallMethod(copy_mod, "deepcopy", "O", loop->body) : NULL;
    PyObject *nodes = body ? walk_list(body) : NULL;
    Py_XDECREF(copy_mod);
    for (Py_ssize_t i = 0; nodes && i < PyList_GET_SIZE(nodes); i++) {
        PyObject *n = PyList_GET_ITEM(nodes, i);
        const char *id = name_id(n);
        bool red = false;
        for (Py_ssize_t r = 0; id && r < PyTuple_GET_SIZE(loop->reductions); r++)
            red |= PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(loop->reductions, r), id) == 0;
        PyObject *to = red ? PyUnicode_FromFormat("_ofl_u%d_%s", u, id) : NULL;
        if (red && (!to || PyObject_SetAttrString(n, "id", to) < 0)) Py_CLEAR(body);
        Py_XDECREF(to);
    }
    if (!nodes) Py_CLEAR(body);
    Py_XDECREF(nodes);
    return body;
}

/* The one function definition of a template's text (t is freed): a new
 * reference, or NULL with a Python exception. */
static PyObject *parsed_def(text *t) {
    if (!ast_mod && !(ast_mod = PyImport_ImportModule("ast"))) {
        free(t->s);
        return NULL;
    }
    if (t->oom) {
        free(t->s);
        return PyErr_NoMemory();
    }
    PyObject *tree = PyObject_CallMethod(ast_mod, "parse", "s", t->s);
    free(t->s);
    PyObject *body = tree ? get(tree, "body") : NULL;
    PyObject *def = body && PyList_GET_SIZE(body) == 1 ? Py_NewRef(PyList_GET_ITEM(body, 0)) : NULL;
    Py_XDECREF(tree);
    Py_XDECREF(body);
    return def;
}

PyObject *jit_loop_kernel(const jit_loop *loop, PyObject *params, const jit_loop_form *form,
                          const char *name) {
    text t = {0};
    kernel_text(&t, loop, params, form, name);
    PyObject *def = parsed_def(&t);
    PyObject *stmts = def ? get(def, "body") : NULL;
    PyObject *bodies[1 + JIT_LOOP_LANES_WIDTH] = {NULL};
    int nbodies = form->shape == JIT_LOOP_ACC ? 1 + JIT_LOOP_LANES_WIDTH : 1;
    bool made = (bodies[0] = PyList_GetSlice(loop->body, 0, PY_SSIZE_T_MAX)) != NULL;
    for (int u = 1; made && u < nbodies; u++)
        made = (bodies[u] = renamed_body(loop, u - 1)) != NULL;
    if (!stmts || !made || place_template(def, loop) < 0 || splice(stmts, bodies, nbodies) < 1)
        Py_CLEAR(def);
    if (!def && !PyErr_Occurred())
        PyErr_SetString(PyExc_SystemError, "offload: a prange loop's kernel template");
    Py_XDECREF(stmts);
    for (int u = 0; u < nbodies; u++) Py_XDECREF(bodies[u]);
    return def;
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
