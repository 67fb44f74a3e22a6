/* mod_loops: running prange loops -- %%offload cells and @offload.jit.
 *
 * offload._compile_cell turns source into a code object in which every
 * prange loop is a call of offload._loop (jit_loops_rewrite says how); the
 * loops live in a process-wide registry, found again by their text and place
 * when a cell runs twice, so their kernels stay compiled. A LoopContext (one
 * per %%offload cell, one per @offload.jit call) keeps the device copies of the
 * NumPy arrays its loops use -- copied in once, copied back at its end if a
 * loop may have written them -- and, when verbose, reports each step as it
 * happens: a record of it (with its line of text) goes to the on_record hook,
 * which shows the cell's report in a notebook, and the line is printed where
 * no hook showed it. With boundscheck
 * its loops launch with index checks (%%offload --boundscheck,
 * @offload.jit(boundscheck=True)): a loop's kernel is shared by every cell that
 * runs the loop, and the check is part of its specialisation. */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "mod_launch.h"

typedef struct {
    PyObject_HEAD
    jit_loop info;      /* owned references */
    PyObject *filename; /* str */
    PyObject *lines;    /* list of str, the file's line 1 first */
    char name[48];      /* the kernel's: prange_l<line> */
    /* the kernel built for the kinds of values seen last */
    PyObject *refs;     /* tuple: per read, None for a parameter, else the object compiled in */
    PyObject *kernel;   /* Kernel, or NULL */
    jit_loop_form form; /* the kernel's */
    /* the partials' dtypes of a reduction for the argument types seen last */
    jit_type *last; /* [nlast] (PyMem) */
    int nlast;
    PyObject *part_dtypes; /* tuple of numpy.dtype */
    PyObject *kept;        /* list: the partials and results of the last run, for the next */
} mod_loop;

typedef struct mod_loopctx {
    PyObject_HEAD
    ofl_device *device; /* --device, or NULL: compute follows data */
    int verbose;
    PyObject *copies;    /* list of [host array, device array, written, name] */
    PyObject *records;   /* list of dicts: what happened, for summaries */
    PyObject *on_record; /* called with the records after each one; True when it showed them */
    char said[1024];     /* say()'s line, for the record() that follows it */
    const char *show;    /* "llvm", "spirv", "ptx": print each loop kernel's code once; or NULL */
    bool boundscheck;
    PyObject *shown;           /* set of loops already shown */
    struct mod_loopctx *outer; /* the context active before this one (owned while active) */
    bool active;
    ofl_device *announced;
} mod_loopctx;

static PyTypeObject LoopType, LoopCtxType;
static PyObject *registry;       /* list of loops; a loop's ID is its index */
static PyObject *registry_index; /* (line, col, dump of the loop) -> ID */
/* This thread's innermost active context (borrowed: it is on a `with`).
 * Each thread has its own: one shared by all let a second thread's @ol.jit
 * call end a context another thread's loop was using (heap corruption). */
static _Thread_local mod_loopctx *current;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- loops ---- */

static void loop_dealloc(mod_loop *l) {
    jit_loop_clear(&l->info);
    Py_XDECREF(l->filename);
    Py_XDECREF(l->lines);
    Py_XDECREF(l->refs);
    Py_XDECREF(l->kernel);
    Py_XDECREF(l->part_dtypes);
    Py_XDECREF(l->kept);
    PyMem_Free(l->last);
    Py_TYPE(l)->tp_free((PyObject *)l);
}

static PyObject *loop_repr(mod_loop *l) {
    return PyUnicode_FromFormat("<offload prange loop at %U:%d, %d-D>", l->filename, l->info.line,
                                l->info.ndim);
}

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.PrangeLoop",
    .tp_basicsize = sizeof(mod_loop),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A prange loop of a %%offload cell or an @offload.jit function.",
    .tp_dealloc = (destructor)loop_dealloc,
    .tp_repr = (reprfunc)loop_repr,
};

typedef struct {
    PyObject *filename, *lines; /* borrowed */
} found_ctx;

/* jit_loops_rewrite's callback: the loop's ID, the same for the same loop
 * at the same place, so a cell run again reuses its compiled kernels. */
static long found(void *opaque, jit_loop *info) {
    found_ctx *fc = opaque;
    if (!registry) {
        jit_loop_clear(info);
        PyErr_SetString(PyExc_RuntimeError,
                        "offload: prange loops cannot be prepared while the process exits");
        return -1;
    }
    PyObject *ast = PyImport_ImportModule("ast");
    PyObject *dumps = PyList_New(0);
    for (Py_ssize_t i = 0; ast && dumps && i < PyList_GET_SIZE(info->body); i++) {
        PyObject *d = PyObject_CallMethod(ast, "dump", "O", PyList_GET_ITEM(info->body, i));
        if (!d || PyList_Append(dumps, d) < 0) Py_CLEAR(dumps);
        Py_XDECREF(d);
    }
    Py_XDECREF(ast);
    PyObject *key =
        dumps ? Py_BuildValue("(iiON)", info->line, info->col, info->targets, PyList_AsTuple(dumps))
              : NULL;
    Py_XDECREF(dumps);
    long id = -1;
    PyObject *known = key ? PyDict_GetItemWithError(registry_index, key) : NULL;
    if (known) {
        id = PyLong_AsLong(known);
        mod_loop *l = (mod_loop *)PyList_GET_ITEM(registry, id);
        Py_SETREF(l->filename, Py_NewRef(fc->filename)); /* for messages: the latest run's */
        Py_SETREF(l->lines, Py_NewRef(fc->lines));
    } else if (key && !PyErr_Occurred()) {
        mod_loop *l = PyObject_New(mod_loop, &LoopType);
        if (l) {
            memset((char *)l + sizeof(PyObject), 0, sizeof *l - sizeof(PyObject));
            l->info = *info;
            memset(info, 0, sizeof *info); /* the loop's now */
            l->filename = Py_NewRef(fc->filename);
            l->lines = Py_NewRef(fc->lines);
            snprintf(l->name, sizeof l->name, "prange_l%d", l->info.line);
            l->nlast = -1;
            id = (long)PyList_GET_SIZE(registry);
            PyObject *idobj = PyLong_FromLong(id);
            if (!idobj || PyList_Append(registry, (PyObject *)l) < 0 ||
                PyDict_SetItem(registry_index, key, idobj) < 0)
                id = -1;
            Py_XDECREF(idobj);
            Py_DECREF(l);
        }
    }
    jit_loop_clear(info);
    Py_XDECREF(key);
    return id;
}

/* The statements of source (its line 1 is the file's first_line) with prange
 * loops rewritten; lines the file's lines for carets. */
static PyObject *rewrite_source(PyObject *tree, PyObject *stmts, PyObject *filename,
                                PyObject *lines) {
    found_ctx fc = {filename, lines};
    jit_error err;
    if (jit_loops_rewrite(stmts, PyUnicode_AsUTF8(filename), lines, found, &fc, &err) < 0) {
        if (err.msg[0]) mod_raise_jit(&err);
        return NULL;
    }
    PyObject *ast = PyImport_ImportModule("ast");
    PyObject *r = ast ? PyObject_CallMethod(ast, "fix_missing_locations", "O", tree) : NULL;
    Py_XDECREF(ast);
    return r;
}

/* offload._compile_cell(source, filename, first_line): the code of a cell
 * whose prange loops run on devices. */
/* Cells re-run unchanged (a notebook's loop over %%offload cells, %timeit)
 * reuse their rewritten tree: parsing and finding the loops again costs a
 * few hundred microseconds, compiling the tree under this run's file name
 * much less. Keyed by (source, first_line); lives until exit. */
static PyObject *cell_trees;

static PyObject *rewritten_tree(PyObject *source, PyObject *filename, int first_line) {
    PyObject *key = Py_BuildValue("(Oi)", source, first_line);
    PyObject *tree = key ? PyDict_GetItemWithError(cell_trees, key) : NULL;
    if (tree || !key || PyErr_Occurred()) {
        Py_XDECREF(key);
        return Py_XNewRef(tree);
    }
    PyObject *ast = PyImport_ImportModule("ast");
    tree = ast ? PyObject_CallMethod(ast, "parse", "OO", source, filename) : NULL;
    PyObject *moved =
        tree ? PyObject_CallMethod(ast, "increment_lineno", "Oi", tree, first_line - 1) : NULL;
    PyObject *split = PyObject_CallMethod(source, "splitlines", NULL);
    PyObject *lines = PyList_New(0), *done = NULL;
    for (int i = 1; lines && i < first_line; i++) {
        PyObject *e = PyUnicode_FromString("");
        if (!e || PyList_Append(lines, e) < 0) Py_CLEAR(lines);
        Py_XDECREF(e);
    }
    PyObject *stmts = moved ? PyObject_GetAttrString(tree, "body") : NULL;
    if (lines && split && stmts && !PyList_SetSlice(lines, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, split))
        done = rewrite_source(tree, stmts, filename, lines);
    if (!done || PyDict_SetItem(cell_trees, key, tree) < 0) Py_CLEAR(tree);
    Py_XDECREF(done);
    Py_XDECREF(key);
    Py_XDECREF(ast);
    Py_XDECREF(moved);
    Py_XDECREF(split);
    Py_XDECREF(lines);
    Py_XDECREF(stmts);
    return tree;
}

static PyObject *compile_cell(PyObject *self, PyObject *args) {
    PyObject *source, *filename;
    int first_line = 1;
    if (!PyArg_ParseTuple(args, "UU|i", &source, &filename, &first_line)) return NULL;
    if (first_line < 1) first_line = 1;
    PyObject *tree = rewritten_tree(source, filename, first_line);
    PyObject *compile =
        tree ? PyDict_GetItemString(PyEval_GetBuiltins(), "compile") : NULL; /* borrowed */
    PyObject *code = compile ? PyObject_CallFunction(compile, "OOs", tree, filename, "exec") : NULL;
    Py_XDECREF(tree);
    return code;
}

/* ---- contexts ---- */

/* A step is said, then recorded: say() words it, record() files the words
 * with the step's facts. */
static void say(mod_loopctx *c, const char *fmt, ...) {
    if (!c->verbose) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->said, sizeof c->said, fmt, ap);
    va_end(ap);
}

/* The step's record: kind and key/value pairs (Py_BuildValue format), and the
 * said line as "text". A notebook's hook shows the lines and the table as one
 * display updated in place; printing them too would split the report around
 * it, so the line is printed only where no hook showed it. */
static void record(mod_loopctx *c, const char *fmt, ...) {
    if (!c->verbose) return;
    va_list ap;
    va_start(ap, fmt);
    PyObject *d = Py_VaBuildValue(fmt, ap);
    va_end(ap);
    PyObject *text = PyUnicode_DecodeUTF8(c->said, (Py_ssize_t)strlen(c->said), "replace");
    if (!d || !text || PyDict_SetItemString(d, "text", text) < 0 ||
        PyList_Append(c->records, d) < 0)
        PyErr_Clear();
    Py_XDECREF(d);
    Py_XDECREF(text);
    int shown = 0;
    if (c->on_record) { /* its failure is not the loop's */
        PyObject *r = PyObject_CallOneArg(c->on_record, c->records);
        shown = r ? PyObject_IsTrue(r) : 0;
        if (!r) PyErr_WriteUnraisable(c->on_record);
        if (shown < 0) PyErr_Clear(), shown = 0;
        Py_XDECREF(r);
    }
    if (!shown) PySys_FormatStdout("%s\n", c->said);
    c->said[0] = '\0';
}

static void format_bytes(double b, char *out, size_t n) {
    if (b >= 1e9)
        snprintf(out, n, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(out, n, "%.2f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(out, n, "%.1f kB", b / 1e3);
    else
        snprintf(out, n, "%.0f B", b);
}

static Py_ssize_t nbytes(PyObject *arr) {
    PyObject *nb = PyObject_GetAttrString(arr, "nbytes");
    Py_ssize_t r = nb ? PyLong_AsSsize_t(nb) : 0;
    Py_XDECREF(nb);
    PyErr_Clear();
    return r;
}

static void announce(mod_loopctx *c, ofl_device *dev) {
    if (c->announced == dev) return;
    c->announced = dev;
    const ofl_device_info *in = ofl_device_get_info(dev);
    say(c, "offload: device %s (%s)", in->filter, in->name);
    record(c, "{s:s,s:s,s:s}", "kind", "device", "device", in->filter, "name", in->name);
}

/* The device copy of host NumPy array for dev, made at its first use in the
 * context (borrowed: the context keeps it). */
static PyObject *device_copy(mod_loopctx *c, PyObject *host, ofl_device *dev, bool written,
                             PyObject *name) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(c->copies); i++) {
        PyObject *e = PyList_GET_ITEM(c->copies, i);
        PyObject *d = PyList_GET_ITEM(e, 1);
        if (PyList_GET_ITEM(e, 0) == host && mod_array_device((mod_array *)d) == dev) {
            if (written) PyList_SetItem(e, 2, Py_NewRef(Py_True));
            return d;
        }
    }
    announce(c, dev);
    double t0 = now();
    bool in_place; /* a CPU device: nothing to copy */
    PyObject *d = mod_array_for_device(host, dev, &in_place);
    if (!d) return NULL;
    ofl_error err;
    int rc = 0;
    if (c->verbose && !in_place) { /* so the time is the copy's */
        Py_BEGIN_ALLOW_THREADS
        rc = ofl_synchronize(dev, &err);
        Py_END_ALLOW_THREADS
    }
    if (rc != 0) {
        Py_DECREF(d);
        return mod_raise(&err);
    }
    double s = now() - t0;
    PyObject *e = Py_BuildValue("[OOOO]", host, d, written ? Py_True : Py_False, name);
    Py_DECREF(d);
    if (!e || PyList_Append(c->copies, e) < 0) {
        Py_XDECREF(e);
        return NULL;
    }
    Py_DECREF(e);
    if (in_place) {
        say(c, "offload: '%s' used in place by %s (a CPU device: no copy)", PyUnicode_AsUTF8(name),
            ofl_device_get_info(dev)->filter);
        record(c, "{s:s,s:O,s:n}", "kind", "in place", "name", name, "bytes", nbytes(host));
        return d;
    }
    char size[32];
    double b = (double)nbytes(host);
    format_bytes(b, size, sizeof size);
    say(c, "offload: copied '%s' to %s: %s in %.2f ms (%.1f GB/s)", PyUnicode_AsUTF8(name),
        ofl_device_get_info(dev)->filter, size, s * 1e3, s > 0 ? b / s / 1e9 : 0.0);
    record(c, "{s:s,s:O,s:n,s:d}", "kind", "copy in", "name", name, "bytes", (Py_ssize_t)b, "ms",
           s * 1e3);
    return d;
}

/* The context's end: written NumPy arrays get their device copies back. */
static int finish(mod_loopctx *c) {
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(c->copies) && rc == 0; i++) {
        PyObject *e = PyList_GET_ITEM(c->copies, i);
        if (PyList_GET_ITEM(e, 2) != Py_True) continue;
        mod_array *dev_arr = (mod_array *)PyList_GET_ITEM(e, 1);
        if (mod_array_is_in_place(dev_arr)) { /* the kernels wrote the host's memory */
            rc = mod_array_sync_host(dev_arr);
            continue;
        }
        double t0 = now();
        PyObject *host = mod_array_asnumpy(dev_arr);
        rc = host ? PyObject_SetItem(PyList_GET_ITEM(e, 0), Py_Ellipsis, host) : -1;
        Py_XDECREF(host);
        double s = now() - t0;
        char size[32];
        double b = (double)nbytes(PyList_GET_ITEM(e, 0));
        format_bytes(b, size, sizeof size);
        PyObject *name = PyList_GET_ITEM(e, 3);
        if (rc == 0) {
            say(c, "offload: copied '%s' back: %s in %.2f ms (%.1f GB/s)", PyUnicode_AsUTF8(name),
                size, s * 1e3, s > 0 ? b / s / 1e9 : 0.0);
            record(c, "{s:s,s:O,s:n,s:d}", "kind", "copy out", "name", name, "bytes", (Py_ssize_t)b,
                   "ms", s * 1e3);
        }
    }
    PyList_SetSlice(c->copies, 0, PY_SSIZE_T_MAX, NULL);
    return rc;
}

/* A quiet context on dev (NULL: where the arrays are). New reference. */
static mod_loopctx *ctx_make(PyTypeObject *type, ofl_device *dev, bool boundscheck) {
    mod_loopctx *c = (mod_loopctx *)type->tp_alloc(type, 0);
    if (!c) return NULL;
    c->device = dev;
    c->boundscheck = boundscheck;
    c->shown = PySet_New(NULL);
    c->copies = PyList_New(0);
    c->records = PyList_New(0);
    if (!c->copies || !c->records || !c->shown) Py_CLEAR(c);
    return c;
}

static PyObject *ctx_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"device", "verbose", "on_record", "show", "boundscheck", NULL};
    PyObject *device = Py_None, *on_record = Py_None;
    int verbose = 0, boundscheck = 0;
    const char *show = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OpOzp:LoopContext", names, &device, &verbose,
                                     &on_record, &show, &boundscheck))
        return NULL;
    static const char *const forms[] = {"llvm", "spirv", "ptx"};
    const char *form = NULL;
    for (int i = 0; show && i < 3; i++)
        if (!strcmp(show, forms[i])) form = forms[i];
    if (show && !form)
        return PyErr_Format(PyExc_ValueError, "show= takes 'llvm', 'spirv' or 'ptx', not '%s'",
                            show);
    ofl_device *dev = NULL;
    if (device != Py_None && mod_device_resolve(device, &dev) < 0) return NULL;
    mod_loopctx *c = ctx_make(type, dev, boundscheck);
    if (!c) return NULL;
    c->verbose = verbose;
    c->on_record = on_record != Py_None ? Py_NewRef(on_record) : NULL;
    c->show = form;
    return (PyObject *)c;
}

static void ctx_dealloc(mod_loopctx *c) {
    Py_XDECREF(c->copies);
    Py_XDECREF(c->records);
    Py_XDECREF(c->on_record);
    Py_XDECREF(c->shown);
    Py_XDECREF(c->outer);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *ctx_enter(mod_loopctx *c, PyObject *unused) {
    if (c->active) return PyErr_Format(PyExc_RuntimeError, "this LoopContext is already active");
    c->outer = current ? (mod_loopctx *)Py_NewRef(current) : NULL;
    current = c;
    c->active = true;
    return Py_NewRef(c);
}

static PyObject *ctx_exit(mod_loopctx *c, PyObject *args) {
    if (!c->active) Py_RETURN_FALSE;
    current = c->outer; /* borrowed again: it is still on its own `with` */
    Py_CLEAR(c->outer);
    c->active = false;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int rc = finish(c);
    if (rc < 0 && PyTuple_Check(args) && PyTuple_GET_SIZE(args) &&
        PyTuple_GET_ITEM(args, 0) != Py_None) {
        PyErr_Clear(); /* the body's own exception says more */
        rc = 0;
    }
    PyErr_Restore(type, value, tb);
    if (rc < 0) return NULL;
    Py_RETURN_FALSE;
}

static PyMethodDef ctx_methods[] = {
    {"__enter__", (PyCFunction)ctx_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)ctx_exit, METH_VARARGS, NULL},
    {NULL},
};

static PyObject *ctx_records(mod_loopctx *c, void *unused) { return Py_NewRef(c->records); }

static PyGetSetDef ctx_getset[] = {
    {"records", (getter)ctx_records, NULL,
     "what happened: a dict per device choice, copy, compile and launch", NULL},
    {NULL},
};

static PyTypeObject LoopCtxType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.LoopContext",
    .tp_basicsize = sizeof(mod_loopctx),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "LoopContext(device=None, verbose=False, on_record=None, show=None, boundscheck=False): "
        "the\n"
        "prange loops run inside share device copies of the NumPy arrays they use (copied back at "
        "the\n"
        "end when written); verbose reports each step: its record (its line as 'text') goes to\n"
        "on_record(records), and the line is printed unless on_record returned True (it showed "
        "them);\n"
        "boundscheck checks every array index of their kernels (an IndexError for the first out "
        "of\n"
        "range). %%offload cells and @offload.jit calls run in one.",
    .tp_new = ctx_new,
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_methods = ctx_methods,
    .tp_getset = ctx_getset,
};

/* ---- running a loop ---- */

static bool is_number(PyObject *o) {
    return PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
           mod_is_numpy_scalar(o);
}

/* The loop's kernel for these kinds of values: refs[i] None for a parameter. */
/* Direct access i of the loop (jit_loop.direct): its array's name, number of
 * indices, axis and the dimension whose variable indexes it. */
static void direct_at(const jit_loop *info, Py_ssize_t i, const char **arr, Py_ssize_t *nidx,
                      Py_ssize_t *axis, int *dim) {
    PyObject *t = PyTuple_GET_ITEM(info->direct, i);
    *arr = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0));
    *nidx = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 1));
    *axis = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 2));
    *dim = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 3));
}

/* The Kernel of def (an ast.FunctionDef named name), its other names
 * resolved through globals; a loop's (l and form given) assumes the direct
 * accesses form proved in range. New reference, or NULL with an exception. */
static PyObject *kernel_from_def(PyObject *def, PyObject *globals, PyObject *filename,
                                 PyObject *lines, const char *name, const mod_loop *l,
                                 const jit_loop_form *form) {
    /* a Python function of the kernel, for the Kernel's name and py_func */
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
    PyObject *ast = PyImport_ImportModule("ast"), *pyfunc = NULL;
    PyObject *mod = ast ? PyObject_CallMethod(ast, "Module", "[O][]", def) : NULL;
    PyObject *compile = PyDict_GetItemString(builtins, "compile");
    PyObject *code = mod ? PyObject_CallFunction(compile, "OOs", mod, filename, "exec") : NULL;
    PyObject *ns = code ? PyDict_New() : NULL;
    if (ns && PyDict_SetItemString(ns, "__builtins__", builtins) == 0) {
        PyObject *r = PyEval_EvalCode(code, ns, ns);
        Py_XDECREF(r);
        if (r) pyfunc = Py_XNewRef(PyDict_GetItemString(ns, name));
    }
    Py_XDECREF(ast);
    Py_XDECREF(mod);
    Py_XDECREF(code);
    Py_XDECREF(ns);
    if (!pyfunc) return NULL;
    jit_error err;
    jit_func *jf = jit_func_from_ast(def, globals, PyUnicode_AsUTF8(filename), lines, 1, &err);
    if (!jf) {
        Py_DECREF(pyfunc);
        mod_raise_jit(&err);
        return NULL;
    }
    for (Py_ssize_t i = 0; l && i < PyTuple_GET_SIZE(l->info.direct); i++) {
        const char *arr;
        Py_ssize_t nidx, axis;
        int dim;
        if (!(form->in_range >> i & 1)) continue;
        direct_at(&l->info, i, &arr, &nidx, &axis, &dim);
        jit_func_assume_in_range(jf, arr, (int)axis,
                                 PyUnicode_AsUTF8(PyTuple_GET_ITEM(l->info.targets, dim)));
    }
    PyObject *k = mod_kernel_from_parsed(pyfunc, jf);
    Py_DECREF(pyfunc);
    return k;
}

static int build_kernel(mod_loop *l, PyObject *refs, const jit_loop_form *form) {
    PyObject *params = PyList_New(0), *globals = PyDict_New();
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
    PyObject *range = builtins ? PyDict_GetItemString(builtins, "range") : NULL;
    PyObject *offload = PyImport_ImportModule("offload");
    PyObject *prange = offload ? PyObject_GetAttrString(offload, "prange") : NULL;
    PyObject *def = NULL;
    int rc = -1;
    if (!params || !globals || !range || !prange ||
        PyDict_SetItemString(globals, "__builtins__", builtins) < 0 ||
        PyDict_SetItemString(globals, "_ofl_ol", offload) < 0) /* the template's */
        goto out;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(refs); i++) {
        PyObject *name = PyTuple_GET_ITEM(l->info.reads, i), *ref = PyTuple_GET_ITEM(refs, i);
        /* a prange nested in the loop runs sequentially inside its kernel */
        int r = ref == Py_None ? PyList_Append(params, name)
                               : PyDict_SetItem(globals, name, ref == prange ? range : ref);
        if (r < 0) goto out;
    }
    PyObject *ptuple = PyList_AsTuple(params);
    def = ptuple ? jit_loop_kernel(&l->info, ptuple, form, l->name) : NULL;
    Py_XDECREF(ptuple);
    if (!def) goto out;
    PyObject *k = kernel_from_def(def, globals, l->filename, l->lines, l->name, l, form);
    if (!k) goto out;
    Py_XSETREF(l->kernel, k);
    Py_XSETREF(l->refs, Py_NewRef(refs));
    l->form = *form;
    l->nlast = -1;
    rc = 0;
out:
    Py_XDECREF(params);
    Py_XDECREF(globals);
    Py_XDECREF(offload);
    Py_XDECREF(prange);
    Py_XDECREF(def);
    return rc;
}

static bool same_refs(PyObject *a, PyObject *b) {
    if (!a || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++)
        if (PyTuple_GET_ITEM(a, i) != PyTuple_GET_ITEM(b, i)) return false;
    return true;
}

/* The dtypes of a reduction's partials: the types the kernel gives its
 * accumulators for these arguments (partials typed float64 meanwhile: they
 * are only stored to). Kept in l for the argument types seen last. */
static int partial_dtypes(mod_loop *l, PyObject *argv, Py_ssize_t first_partial, ofl_device *dev) {
    int nargs = (int)PyList_GET_SIZE(argv);
    Py_ssize_t nred = PyTuple_GET_SIZE(l->info.reductions);
    jit_type *types = PyMem_Calloc((size_t)nargs + 1, sizeof *types);
    if (!types) return PyErr_NoMemory(), -1;
    for (int i = 0; i < nargs; i++) {
        if (i >= first_partial && i < first_partial + nred)
            types[i] = jit_array(JIT_F64, 1, JIT_LAYOUT_C);
        else if (mod_arg_type(PyList_GET_ITEM(argv, i), i, &types[i]) < 0)
            goto fail;
    }
    if (l->nlast == nargs && !memcmp(types, l->last, sizeof *types * (size_t)nargs)) {
        PyMem_Free(types);
        return 0;
    }
    PyObject *dts = PyTuple_New(nred);
    if (!dts) goto fail;
    for (Py_ssize_t r = 0; r < nred; r++) {
        jit_type t;
        jit_error err;
        if (mod_kernel_var_type(l->kernel, types, nargs, 1,
                                l->form.shape == JIT_LOOP_LANES || l->form.shape == JIT_LOOP_STRIDE,
                                PyUnicode_AsUTF8(PyTuple_GET_ITEM(l->info.reductions, r)), &t,
                                &err) < 0) {
            Py_DECREF(dts);
            mod_raise_jit(&err);
            goto fail;
        }
        jit_dtype d = t.kind == JT_WEAK_INT ? JIT_I64
                      : t.kind == JT_WEAK_FLOAT
                          ? (ofl_device_get_info(dev)->has_fp64 ? JIT_F64 : JIT_F32)
                          : (jit_dtype)t.dtype;
        PyObject *dt = mod_arg_dtype_borrowed(d);
        if (!dt) {
            Py_DECREF(dts);
            PyErr_Format(PyExc_TypeError, "a reduction of %s values", jit_dtype_name(d));
            goto fail;
        }
        PyTuple_SET_ITEM(dts, r, Py_NewRef(dt));
    }
    Py_XSETREF(l->part_dtypes, dts);
    PyMem_Free(l->last);
    l->last = types;
    l->nlast = nargs;
    return 0;
fail:
    PyMem_Free(types);
    return -1;
}

/* A reduction's work-items: on a GPU enough to fill it twice over (and
 * whole work-groups), each accumulating many iterations privately
 * (JIT_LOOP_STRIDE); on a CPU device four runs per
 * core (JIT_LOOP_LANES, JIT_LOOP_ACC, as the library's CPU reductions: each
 * run one task of the device's), each at least RUN_MIN iterations, which
 * costs its task more than it gains below that. *per: the iterations of a
 * run, or the stride. The partials (one per work-item) are combined on the
 * host (a CPU's) or by a second kernel (a GPU's). */
#define RUN_MIN 4096
/* ... and at most RUN_MAX: a run's loop of more than 65,536 trips (16
 * iterations a trip) runs in its copy with the cancel check (jit_codegen.c),
 * whose branch stops the vectorisers (Intel: a float32 sum of 2**24 in 8
 * runs 52 ms, NumPy 6.7). */
#define RUN_MAX (16 * 32768)
static Py_ssize_t reduction_items(ofl_device *dev, const jit_loop_form *form,
                                  const mod_shape *trips, Py_ssize_t total, Py_ssize_t *per) {
    jit_loop_shape shape = form->shape;
    const ofl_device_info *in = ofl_device_get_info(dev);
    Py_ssize_t units = in->max_compute_units ? in->max_compute_units : 1;
    if (shape == JIT_LOOP_LANES || shape == JIT_LOOP_ACC) {
        const Py_ssize_t W = shape == JIT_LOOP_LANES ? JIT_LOOP_LANES_WIDTH : 1,
                         align = 4 * JIT_LOOP_LANES_WIDTH;
        Py_ssize_t runs = (total + RUN_MIN - 1) / RUN_MIN;
        if (runs > 4 * units) runs = 4 * units;
        if (runs < (total + RUN_MAX - 1) / RUN_MAX) runs = (total + RUN_MAX - 1) / RUN_MAX;
        if (runs < 1) runs = 1;
        Py_ssize_t c = (total + runs - 1) / runs; /* whole vectors in each run but the last */
        c = c ? (c + align - 1) / align * align : align;
        *per = c;
        return (total + c - 1) / c * W;
    }
    /* an H200's 2^26 float32 sum: 97 us with 1024 work-items a unit, 81
     * with 2048 (CuPy 86); by rows (a nest), 92 with 2048 and 84 with 4096 */
    int nd = trips->ndim;
    const Py_ssize_t G = JIT_LOOP_GROUP, most = units * (nd > 1 ? 4096 : 2048);
    /* no more than the loop has work for: a nest's rows, `lanes` work-items
     * each; 16 iterations a work-item of a flat loop (each work-item's
     * partial costs the group's tree a store and loads) */
    Py_ssize_t work = nd > 1 && trips->size[nd - 1] ? total / trips->size[nd - 1] * form->lanes
                                                    : (total + 15) / 16;
    Py_ssize_t w = (work + G - 1) / G * G;
    w = w < G ? G : w > most ? most : w;
    *per = w;
    return w;
}

/* ---- a GPU's combine ----
 * On a GPU a reduction's partials (one per work-group of the loop's kernel)
 * are combined there, by a second kernel of one work-group (the library's
 * reduce.combine_strided, given the operator, the partials' dtype and the
 * group size), so that the host reads back one value per reduction: reading
 * the partials and combining them on the host cost a loop 0.18 ms. */

/* reduce.py's device function for reduction op. Borrowed. */
static PyObject *combine_op(char op) {
    return mod_library_get("reduce", op == JIT_RED_ADD   ? "add"
                                     : op == JIT_RED_MUL ? "multiply"
                                     : op == JIT_RED_MIN ? "minimum"
                                                         : "maximum");
}

/* The group size of the combine on dev: up to 1024, a power of two. */
static Py_ssize_t combine_group(ofl_device *dev) {
    size_t most = ofl_device_get_info(dev)->max_work_group_size;
    Py_ssize_t G = 1024;
    while (G > 1 && (size_t)G > most) G /= 2;
    return G;
}

/* The reductions' partials (a NumPy array) folded into one NumPy scalar:
 * the one element itself, or NumPy's <op>.reduce (bound once: looking the
 * method up was a third of a small loop's host time). Borrowed reducers
 * live for the process. New reference. */
static PyObject *fold_partials(char op, PyObject *partials) {
    if (PyObject_Size(partials) == 1) return PySequence_GetItem(partials, 0);
    static PyObject *reducers[4];
    int which = op == JIT_RED_ADD ? 0 : op == JIT_RED_MUL ? 1 : op == JIT_RED_MIN ? 2 : 3;
    if (!reducers[which]) {
        static const char *const ufuncs[4] = {"add", "multiply", "minimum", "maximum"};
        PyObject *uf = PyObject_GetAttrString(mod_numpy_borrowed(), ufuncs[which]);
        reducers[which] = uf ? PyObject_GetAttrString(uf, "reduce") : NULL;
        Py_XDECREF(uf);
        if (!reducers[which]) return NULL;
    }
    return PyObject_CallOneArg(reducers[which], partials);
}

/* init (op) the partials: the reduction's value after the loop. */
static PyObject *combine(char op, PyObject *init, PyObject *partials) {
    PyObject *part = fold_partials(op, partials);
    if (!part) return NULL;
    PyObject *r;
    if (op == JIT_RED_ADD)
        r = PyNumber_Add(init, part);
    else if (op == JIT_RED_MUL)
        r = PyNumber_Multiply(init, part);
    else
        r = PyObject_CallFunction(
            PyDict_GetItemString(PyEval_GetBuiltins(), op == JIT_RED_MIN ? "min" : "max"), "OO",
            init, part);
    Py_DECREF(part);
    return r;
}

/* --show: the loop kernel's code, printed once per context. */
static int show_code(mod_loopctx *c, mod_loop *l, const mod_shape *shape, PyObject *const *argv,
                     int na) {
    int seen = PySet_Contains(c->shown, (PyObject *)l);
    if (seen) return seen < 0 ? -1 : 0;
    if (PySet_Add(c->shown, (PyObject *)l) < 0) return -1;
    PyObject *offload = PyImport_ImportModule("offload");
    PyObject *Range = offload ? PyObject_GetAttrString(offload, "Range") : NULL;
    PyObject *sizes = PyTuple_New(shape->ndim);
    for (int d = 0; sizes && d < shape->ndim; d++)
        PyTuple_SET_ITEM(sizes, d, PyLong_FromSsize_t(shape->size[d]));
    PyObject *range = Range && sizes ? PyObject_Call(Range, sizes, NULL) : NULL;
    PyObject *pos = PyTuple_New(na);
    for (int i = 0; pos && i < na; i++) PyTuple_SET_ITEM(pos, i, Py_NewRef(argv[i]));
    PyObject *kw = range ? Py_BuildValue("{s:O,s:O}", "range", range, "boundscheck",
                                         c->boundscheck ? Py_True : Py_False)
                         : NULL;
    char method[32];
    snprintf(method, sizeof method, "inspect_%s", c->show);
    PyObject *fn = PyObject_GetAttrString(l->kernel, method);
    PyObject *text = fn && pos && kw ? PyObject_Call(fn, pos, kw) : NULL;
    if (text)
        PySys_FormatStdout("offload: %s of the loop at line %d:\n%U\n", c->show, l->info.line,
                           text);
    Py_XDECREF(offload);
    Py_XDECREF(Range);
    Py_XDECREF(sizes);
    Py_XDECREF(range);
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    Py_XDECREF(fn);
    int rc = text ? 0 : -1;
    Py_XDECREF(text);
    return rc;
}

/* The loop's ranges as the user wrote them, "prange(n) x prange(a, b)": the
 * launch's own grid (a grid-stride Range for reductions) means little to them. */
static PyObject *user_ranges(const Py_ssize_t *start, const Py_ssize_t *stop,
                             const Py_ssize_t *step, int nd) {
    PyObject *parts = PyList_New(0), *sep = PyUnicode_FromString(" x "), *joined = NULL;
    for (int d = 0; parts && sep && d < nd; d++) {
        PyObject *p =
            step[d] != 1 ? PyUnicode_FromFormat("prange(%zd, %zd, %zd)", start[d], stop[d], step[d])
            : start[d] != 0 ? PyUnicode_FromFormat("prange(%zd, %zd)", start[d], stop[d])
                            : PyUnicode_FromFormat("prange(%zd)", stop[d]);
        if (!p || PyList_Append(parts, p) < 0) Py_CLEAR(parts);
        Py_XDECREF(p);
    }
    if (parts && sep) joined = PyUnicode_Join(sep, parts);
    Py_XDECREF(parts);
    Py_XDECREF(sep);
    return joined;
}

/* One run of a loop: what its steps share. */
typedef struct {
    mod_loopctx *c;
    mod_loop *l;
    PyObject *values; /* owned: the loop's reads, then its reductions' values (elements_of_0d) */
    Py_ssize_t nreads, nred;
    Py_ssize_t start[3], stop[3], step[3], total; /* as the user's ranges say */
    jit_loop_form form;                           /* of the kernel for this run */
    mod_shape shape; /* the launch's: the ranges, or Range(w) for a reduction */
    ofl_device *dev;
    PyObject *argv;           /* list: the kernel's arguments, in jit_loop_kernel's order (owned) */
    Py_ssize_t first_partial; /* argv's index of the reductions' partials */
    PyObject *outs;           /* JIT_LOOP_STRIDE: tuple, per reduction its combined value (a
                                 1-element array; owned), or NULL */
    Py_ssize_t bytes;         /* of the arrays the loop uses, for the bandwidth said */
} loop_run_state;

/* Appends o (a new reference, or NULL after a failure) to list; steals o. */
static int append_new(PyObject *list, PyObject *o) {
    int rc = o ? PyList_Append(list, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/* Dimension d's range from three ints of moderate size, as range() counts
 * it, without making one (a small loop's host time); false where range()
 * must judge (other types, a zero step, huge values). */
static bool plain_range(loop_run_state *r, PyObject *ranges, int d) {
    Py_ssize_t v[3];
    for (int k = 0; k < 3; k++) {
        PyObject *o = PyTuple_GET_ITEM(ranges, 3 * d + k);
        int overflow;
        long long x = PyLong_CheckExact(o) ? PyLong_AsLongLongAndOverflow(o, &overflow) : 0;
        if (!PyLong_CheckExact(o) || overflow || x > (1LL << 60) || x < -(1LL << 60)) return false;
        v[k] = (Py_ssize_t)x;
    }
    Py_ssize_t start = v[0], stop = v[1], step = v[2], n;
    if (step == 0) return false;
    n = step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
    r->start[d] = start, r->stop[d] = stop, r->step[d] = step;
    r->shape.size[d] = n > 0 ? n : 0;
    return true;
}

/* The ranges (start, stop, step per dimension) as Python's range() reads them. */
static int run_ranges(loop_run_state *r, PyObject *ranges) {
    PyObject *range = PyDict_GetItemString(PyEval_GetBuiltins(), "range"); /* borrowed */
    r->shape = (mod_shape){.ndim = r->l->info.ndim};
    r->total = 1;
    for (int d = 0; d < r->shape.ndim; d++) {
        if (plain_range(r, ranges, d)) {
            r->total *= r->shape.size[d];
            continue;
        }
        PyObject *slice = PyTuple_GetSlice(ranges, 3 * d, 3 * d + 3);
        PyObject *rg = slice ? PyObject_Call(range, slice, NULL) : NULL;
        Py_XDECREF(slice);
        if (!rg) return -1;
        PyObject *st = PyObject_GetAttrString(rg, "start"),
                 *sp = PyObject_GetAttrString(rg, "step");
        PyObject *so = PyObject_GetAttrString(rg, "stop");
        r->shape.size[d] = PyObject_Length(rg);
        r->start[d] = st ? PyLong_AsSsize_t(st) : -1;
        r->stop[d] = so ? PyLong_AsSsize_t(so) : -1;
        r->step[d] = sp ? PyLong_AsSsize_t(sp) : -1;
        Py_XDECREF(st);
        Py_XDECREF(so);
        Py_XDECREF(sp);
        Py_DECREF(rg);
        if (PyErr_Occurred()) return -1;
        r->total *= r->shape.size[d];
    }
    return 0;
}

/* The device: --device, else where the device arrays live, else the default. */
static int run_place(loop_run_state *r) {
    const mod_loop *l = r->l;
    ofl_device *dev = r->c->device;
    Py_ssize_t dev_from = -1;
    for (Py_ssize_t i = 0; i < r->nreads; i++) {
        PyObject *v = PyTuple_GET_ITEM(r->values, i);
        if (!mod_array_check(v)) continue;
        ofl_device *d = mod_array_device((mod_array *)v);
        if (!dev) dev = d, dev_from = i;
        if (d == dev) continue;
        const char *other =
            dev_from >= 0 ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(l->info.reads, dev_from)) : NULL;
        if (other)
            PyErr_Format(mod_ExecutionPlacementError,
                         "the prange loop at line %d uses '%s' on %s and '%s' on %s; "
                         "move one with .to_device(...)",
                         l->info.line, other, ofl_device_get_info(dev)->filter,
                         PyUnicode_AsUTF8(PyTuple_GET_ITEM(l->info.reads, i)),
                         ofl_device_get_info(d)->filter);
        else
            PyErr_Format(mod_ExecutionPlacementError,
                         "the prange loop at line %d runs on %s (--device), and '%s' "
                         "lives on %s; move it with .to_device(...)",
                         l->info.line, ofl_device_get_info(dev)->filter,
                         PyUnicode_AsUTF8(PyTuple_GET_ITEM(l->info.reads, i)),
                         ofl_device_get_info(d)->filter);
        return -1;
    }
    if (!dev && mod_device_default(&dev) < 0) return -1;
    r->dev = dev;
    announce(r->c, dev);
    return 0;
}

/* jit_loop_form.in_range: the loop's direct accesses (jit_loop.direct) whose
 * index stays in range on every trip, so that the kernel need not check them
 * (nor wrap negative indices): a check per element is a branch per element,
 * which kept CPU compilers from vectorising the loops. vals: the reads'
 * values as the kernel gets them. */
static unsigned in_range(const loop_run_state *r, PyObject *const *vals) {
    const jit_loop *info = &r->l->info;
    unsigned bits = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(info->direct); i++) {
        const char *arr;
        Py_ssize_t nidx, axis, a = -1;
        int d;
        direct_at(info, i, &arr, &nidx, &axis, &d);
        for (Py_ssize_t k = 0; k < r->nreads && a < 0; k++)
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(info->reads, k), arr) == 0) a = k;
        if (a < 0 || !vals[a] || !mod_array_check(vals[a])) continue;
        const mod_array *x = (const mod_array *)vals[a];
        if (x->nd != nidx) continue; /* a view, not an element */
        Py_ssize_t n = r->shape.size[d], first = r->start[d], last = first + (n - 1) * r->step[d];
        Py_ssize_t lo = first < last ? first : last, hi = first < last ? last : first;
        if (n == 0 || (lo >= 0 && hi < x->shape[axis])) bits |= 1u << i;
    }
    return bits;
}

/* How the loop's kernel walks (jit_loop_form): a map, or a reduction in the
 * form that the device's compiler makes vectors of. */
static jit_loop_shape reduction_shape(const loop_run_state *r) {
    if (!r->nred) return JIT_LOOP_MAP;
    if (ofl_device_get_info(r->dev)->type != OFL_CPU) return JIT_LOOP_STRIDE;
    return mod_device_cpu_lanes(r->dev) || !r->l->info.unrollable ? JIT_LOOP_LANES : JIT_LOOP_ACC;
}

/* The reads: arrays (NumPy ones copied in) and numbers are the kernel's
 * parameters, the rest compiled in -- a new set of those is a new kernel.
 * Then each dimension's start and step. */
static int run_params(loop_run_state *r) {
    mod_loop *l = r->l;
    r->form = (jit_loop_form){.shape = reduction_shape(r)};
    for (int d = 0; d < r->shape.ndim; d++)
        if (r->step[d] == 1) r->form.unit_steps |= 1u << d;
    if (r->form.shape == JIT_LOOP_ACC && !(r->form.unit_steps >> (r->shape.ndim - 1) & 1))
        r->form.shape = JIT_LOOP_LANES;
    if (r->form.shape == JIT_LOOP_STRIDE && r->shape.ndim > 1) /* a row's lanes: up to a warp */
        for (r->form.lanes = 1;
             r->form.lanes < 32 && r->form.lanes < r->shape.size[r->shape.ndim - 1];)
            r->form.lanes *= 2;
    PyObject *refs = PyTuple_New(r->nreads);
    PyObject **vals = PyMem_Calloc((size_t)r->nreads + 1, sizeof *vals); /* borrowed */
    if (!refs || !vals) {
        Py_XDECREF(refs);
        PyMem_Free(vals);
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < r->nreads && rc == 0; i++) {
        PyObject *v = PyTuple_GET_ITEM(r->values, i), *name = PyTuple_GET_ITEM(l->info.reads, i);
        bool host = mod_is_numpy_array(v);
        if (host) {
            int written = PySet_Contains(l->info.writes, name);
            if (written < 0 || !(v = device_copy(r->c, v, r->dev, written,
                                                 name))) { /* v borrowed: the context keeps it */
                rc = -1;
                break;
            }
        }
        if (host || mod_array_check(v)) r->bytes += nbytes(v);
        bool param = host || mod_array_check(v) || is_number(v);
        PyTuple_SET_ITEM(refs, i, Py_NewRef(param ? Py_None : v));
        if (param) rc = PyList_Append(r->argv, v);
        vals[i] = v;
    }
    if (rc == 0) r->form.in_range = in_range(r, vals);
    if (rc == 0 && (!same_refs(l->refs, refs) || memcmp(&l->form, &r->form, sizeof r->form)))
        rc = build_kernel(l, refs, &r->form);
    Py_DECREF(refs);
    PyMem_Free(vals);
    for (int d = 0; d < r->shape.ndim && rc == 0; d++)
        if (append_new(r->argv, PyLong_FromSsize_t(r->start[d])) < 0 ||
            append_new(r->argv, PyLong_FromSsize_t(r->step[d])) < 0)
            rc = -1;
    return rc;
}

/* An array of n elements of dtype on dev, for a reduction's partials or its
 * result (slot says which): the one kept from the loop's last run where it
 * fits and nothing else holds it (a run in another thread makes its own),
 * else a new one, kept for the next run. An allocation is a driver call per
 * array and run otherwise. New reference. */
static PyObject *scratch(mod_loop *l, Py_ssize_t slot, ofl_device *dev, PyObject *dtype,
                         Py_ssize_t n) {
    if (!l->kept && !(l->kept = PyList_New(0))) return NULL;
    while (PyList_GET_SIZE(l->kept) <= slot)
        if (PyList_Append(l->kept, Py_None) < 0) return NULL;
    PyObject *old = PyList_GET_ITEM(l->kept, slot);
    if (mod_array_check(old) && Py_REFCNT(old) == 1) {
        const mod_array *a = (const mod_array *)old;
        if (mod_array_device((mod_array *)a) == dev && a->dtype == dtype && a->nd == 1 &&
            a->shape[0] == n)
            return Py_NewRef(old);
    }
    PyObject *made = mod_array_new_empty(dev, dtype, 1, &n);
    if (made && PyList_SetItem(l->kept, slot, Py_NewRef(made)) < 0) Py_CLEAR(made);
    return made;
}

/* A reduction's kernel takes the trip counts, the iterations per run or the
 * stride, the total, the partials (one per work-item, per reduction) and the
 * min/max reductions' initial values. */
static int run_partials(loop_run_state *r) {
    const mod_loop *l = r->l;
    Py_ssize_t per, w = reduction_items(r->dev, &r->form, &r->shape, r->total, &per);
    for (int d = 0; d < r->shape.ndim; d++)
        if (append_new(r->argv, PyLong_FromSsize_t(r->shape.size[d])) < 0) return -1;
    if (append_new(r->argv, PyLong_FromSsize_t(per)) < 0 ||
        append_new(r->argv, PyLong_FromSsize_t(r->total)) < 0)
        return -1;
    r->first_partial = PyList_GET_SIZE(r->argv);
    for (Py_ssize_t i = 0; i < r->nred; i++) /* typed below */
        if (PyList_Append(r->argv, Py_None) < 0) return -1;
    for (Py_ssize_t i = 0; i < r->nred; i++)
        if ((l->info.red_ops[i] == JIT_RED_MIN || l->info.red_ops[i] == JIT_RED_MAX) &&
            PyList_Append(r->argv, PyTuple_GET_ITEM(r->values, r->nreads + i)) < 0)
            return -1;
    if (partial_dtypes(r->l, r->argv, r->first_partial, r->dev) < 0) return -1;
    for (Py_ssize_t i = 0; i < r->nred; i++) {
        PyObject *p = scratch(r->l, 2 * i, r->dev, PyTuple_GET_ITEM(l->part_dtypes, i), w);
        if (!p || PyList_SetItem(r->argv, r->first_partial + i, p) < 0) return -1; /* steals p */
    }
    r->shape = (mod_shape){.ndim = 1, .size = {w}};
    if (r->form.shape == JIT_LOOP_LANES)
        r->shape.nd = true, r->shape.local[0] = JIT_LOOP_LANES_WIDTH;
    if (r->form.shape != JIT_LOOP_STRIDE) return 0;
    r->shape.nd = true, r->shape.local[0] = JIT_LOOP_GROUP;
    if (!(r->outs = PyTuple_New(r->nred))) return -1;
    for (Py_ssize_t i = 0; i < r->nred; i++) {
        PyObject *o = scratch(r->l, 2 * i + 1, r->dev, PyTuple_GET_ITEM(l->part_dtypes, i), 1);
        if (!o) return -1;
        PyTuple_SET_ITEM(r->outs, i, o);
    }
    return 0;
}

/* JIT_LOOP_STRIDE: each reduction's partials, one per work-group (its
 * first work-item's), combined on the device. */
static int run_combines(loop_run_state *r) {
    Py_ssize_t G = combine_group(r->dev);
    mod_shape range = {.ndim = 1, .nd = true, .size = {G}, .local = {G}};
    PyObject *n = PyLong_FromSsize_t(r->shape.size[0] / JIT_LOOP_GROUP),
             *S = PyLong_FromLong(JIT_LOOP_GROUP), *g = PyLong_FromSsize_t(G);
    PyObject *k = mod_library_get("reduce", "combine_strided");
    int rc = n && S && g && k ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < r->nred; i++) {
        PyObject *op = combine_op(r->l->info.red_ops[i]);
        PyObject *args[] = {
            PyList_GET_ITEM(r->argv, r->first_partial + i), n, S, PyTuple_GET_ITEM(r->outs, i), op,
            PyTuple_GET_ITEM(r->l->part_dtypes, i),         g};
        PyObject *ev = op ? mod_kernel_launch(k, &range, args, 7, false) : NULL;
        rc = ev ? 0 : -1;
        Py_XDECREF(ev);
    }
    Py_XDECREF(n);
    Py_XDECREF(S);
    Py_XDECREF(g);
    return rc;
}

/* verbose: a launch that compiled says so (its host time is the JIT's and
 * the device's build). */
static void log_compile(const loop_run_state *r, const mod_kernel_stats *before, double host_ms) {
    mod_kernel_stats after;
    mod_kernel_get_stats(r->l->kernel, &after);
    long compiles = after.compiles - before->compiles, disk = after.disk_hits - before->disk_hits;
    double ms = after.compile_ms - before->compile_ms;
    if (!compiles && !disk) return;
    say(r->c, "offload: compiled the loop at line %d for %s in %.1f ms (JIT %.1f ms; %s)",
        r->l->info.line, ofl_device_get_info(r->dev)->filter, host_ms, ms,
        disk ? "disk cache hit" : "cache miss");
    record(r->c, "{s:s,s:i,s:d,s:d,s:O}", "kind", "compile", "line", r->l->info.line, "ms", host_ms,
           "jit_ms", ms, "cache_hit", disk ? Py_True : Py_False);
}

/* verbose: the launch's device and host time; waits for ev. */
static void log_launch(const loop_run_state *r, const mod_kernel_stats *before, double host_ms,
                       PyObject *ev) {
    PyObject *el = PyObject_GetAttrString(ev, "elapsed"); /* waits */
    double dev_s = el ? PyFloat_AsDouble(el) : 0;
    Py_XDECREF(el);
    log_compile(r, before, host_ms);
    PyObject *where = user_ranges(r->start, r->stop, r->step, r->l->info.ndim),
             *grid = mod_shape_repr(&r->shape);
    say(r->c,
        "offload: ran the loop at line %d over %s: %.3f ms on the device (%.1f GB/s), %.3f ms on "
        "the host",
        r->l->info.line, where ? PyUnicode_AsUTF8(where) : "?", dev_s * 1e3,
        dev_s > 0 ? (double)r->bytes / dev_s / 1e9 : 0.0, host_ms);
    record(r->c, "{s:s,s:i,s:O,s:O,s:d,s:n}", "kind", "launch", "line", r->l->info.line, "range",
           where ? where : Py_None, "grid", grid ? grid : Py_None, "ms", dev_s * 1e3, "bytes",
           r->bytes);
    Py_XDECREF(where);
    Py_XDECREF(grid);
    PyErr_Clear(); /* what went wrong here is the report's, not the loop's */
}

static int run_launch(loop_run_state *r) {
    mod_kernel_stats before;
    mod_kernel_get_stats(r->l->kernel, &before);
    double t0 = now();
    PyObject *ev =
        mod_kernel_launch_checked(r->l->kernel, &r->shape, PySequence_Fast_ITEMS(r->argv),
                                  PyList_GET_SIZE(r->argv), r->c->verbose, r->c->boundscheck);
    if (!ev) return -1;
    if (r->c->verbose) log_launch(r, &before, (now() - t0) * 1e3, ev);
    Py_DECREF(ev);
    if (r->outs && run_combines(r) < 0) return -1;
    return r->c->show ? show_code(r->c, r->l, &r->shape, PySequence_Fast_ITEMS(r->argv),
                                  (int)PyList_GET_SIZE(r->argv))
                      : 0;
}

/* The reductions' new values: their partials combined with the values they had. */
static PyObject *run_results(const loop_run_state *r) {
    PyObject *result = PyTuple_New(r->nred);
    for (Py_ssize_t i = 0; result && i < r->nred; i++) {
        PyObject *init = PyTuple_GET_ITEM(r->values, r->nreads + i), *v;
        if (r->total == 0) {
            v = Py_NewRef(init);
        } else {
            PyObject *host = mod_array_asnumpy(
                (mod_array *)(r->outs ? PyTuple_GET_ITEM(r->outs, i)
                                      : PyList_GET_ITEM(r->argv, r->first_partial + i)));
            v = host ? combine(r->l->info.red_ops[i], init, host) : NULL;
            Py_XDECREF(host);
        }
        if (!v)
            Py_CLEAR(result);
        else
            PyTuple_SET_ITEM(result, i, v);
    }
    return result;
}

/* A 0-D array among a loop's values (`m = x[0]` of an offload array, as of
 * CuPy's) stands for its element, as NumPy's x[0] would: kernels take arrays
 * of 1 to 3 dimensions. values itself, or a new tuple with each such array
 * read back as a NumPy scalar of its dtype. New reference. */
static PyObject *elements_of_0d(PyObject *values) {
    PyObject *out = Py_NewRef(values), *none = PyTuple_New(0);
    for (Py_ssize_t i = 0; out && none && i < PyTuple_GET_SIZE(values); i++) {
        PyObject *v = PyTuple_GET_ITEM(values, i), *host = NULL;
        if (mod_array_check(v) && ((mod_array *)v)->nd == 0)
            host = mod_array_asnumpy((mod_array *)v);
        else if (mod_is_numpy_array(v) && PyObject_Length(v) < 0) /* only 0-D has no len() */
            PyErr_Clear(), host = Py_NewRef(v);
        else
            continue;
        PyObject *elem = host ? PyObject_GetItem(host, none) : NULL;
        Py_XDECREF(host);
        if (out == values)
            Py_SETREF(out, elem ? PyTuple_GetSlice(values, 0, PY_SSIZE_T_MAX) : NULL);
        if (!elem || !out) {
            Py_XDECREF(elem);
            Py_CLEAR(out);
            break;
        }
        Py_SETREF(PyTuple_GET_ITEM(out, i), elem); /* out is a new tuple of ours */
    }
    Py_XDECREF(none);
    return out;
}

/* offload._loop(id, ranges, values): runs prange loop id over ranges (start,
 * stop, step per dimension) with values (its reads, then its reductions);
 * returns the reductions' new values. */
static PyObject *loop_run(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3 || !PyLong_Check(args[0]) || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]))
        return PyErr_Format(PyExc_TypeError,
                            "offload._loop(id, ranges, values) runs a prange loop");
    long id = PyLong_AsLong(args[0]);
    if (!registry || id < 0 || id >= PyList_GET_SIZE(registry))
        return PyErr_Format(PyExc_ValueError, "no prange loop %ld%s", id,
                            registry ? "" : " (the process is exiting)");
    mod_loop *l = (mod_loop *)PyList_GET_ITEM(registry, id);
    Py_ssize_t nreads = PyTuple_GET_SIZE(l->info.reads),
               nred = PyTuple_GET_SIZE(l->info.reductions);
    if (PyTuple_GET_SIZE(args[2]) != nreads + nred || PyTuple_GET_SIZE(args[1]) != 3 * l->info.ndim)
        return PyErr_Format(PyExc_TypeError, "offload._loop: loop %ld takes %zd values", id,
                            nreads + nred);
    loop_run_state r = {.l = l, .values = elements_of_0d(args[2]), .nreads = nreads, .nred = nred};
    mod_loopctx *temp =
        NULL; /* a loop run outside any cell or @offload.jit call: a context of its own */
    PyObject *result = NULL;
    if (r.values && ((r.c = current) || (r.c = temp = ctx_make(&LoopCtxType, NULL, false))) &&
        (r.argv = PyList_New(0)) && run_ranges(&r, args[1]) == 0 && run_place(&r) == 0 &&
        run_params(&r) == 0 && (!r.nred || run_partials(&r) == 0) &&
        (r.total == 0 || run_launch(&r) == 0))
        result = run_results(&r);
    Py_XDECREF(r.argv);
    Py_XDECREF(r.outs);
    Py_XDECREF(r.values);
    if (temp) { /* a failed loop wrote nothing worth copying back */
        if (result && finish(temp) < 0) Py_CLEAR(result);
        Py_DECREF(temp);
    }
    return result;
}

/* offload.prange(...): range, for the host; a device loop in %%offload cells
 * and @offload.jit functions. */
static PyObject *prange(PyObject *self, PyObject *args) {
    return PyObject_Call(PyDict_GetItemString(PyEval_GetBuiltins(), "range"), args, NULL);
}

/* ---- @offload.jit ---- */

typedef struct {
    PyObject_HEAD
    PyObject *pyfunc;   /* the user's function */
    PyObject *compiled; /* it again with its prange loops rewritten, or NULL */
    bool boundscheck;   /* its loops check indices */
} mod_jitfn;

static PyTypeObject JitFnType;

/* The function compiled again from its source, prange loops rewritten, with
 * the same globals (so later definitions are seen) and no decorators. */
static PyObject *jit_prepare(PyObject *pyfunc) {
    PyObject *closure = PyObject_GetAttrString(pyfunc, "__closure__");
    bool nested = closure && closure != Py_None;
    Py_XDECREF(closure);
    if (nested)
        return PyErr_Format(PyExc_TypeError,
                            "offload.jit: %R uses variables of an enclosing function; "
                            "define it at module level (or in a notebook cell)",
                            pyfunc);
    PyObject *inspect = PyImport_ImportModule("inspect"), *ast = PyImport_ImportModule("ast");
    PyObject *textwrap = PyImport_ImportModule("textwrap"),
             *linecache = PyImport_ImportModule("linecache");
    PyObject *src = inspect ? PyObject_CallMethod(inspect, "getsourcelines", "O", pyfunc) : NULL;
    PyObject *code_obj = PyObject_GetAttrString(pyfunc, "__code__");
    PyObject *filename = code_obj ? PyObject_GetAttrString(code_obj, "co_filename") : NULL;
    PyObject *name = PyObject_GetAttrString(pyfunc, "__name__");
    PyObject *globals = PyObject_GetAttrString(pyfunc, "__globals__");
    PyObject *joined = NULL, *text = NULL, *tree = NULL, *moved = NULL, *body = NULL, *stmts = NULL,
             *lines = NULL;
    PyObject *done = NULL, *code = NULL, *ran = NULL, *fn = NULL, *newname = NULL;
    if (!src || !ast || !textwrap || !linecache || !filename || !name || !globals) goto out;
    PyObject *empty = PyUnicode_FromString("");
    joined = empty ? PyUnicode_Join(empty, PyTuple_GET_ITEM(src, 0)) : NULL;
    Py_XDECREF(empty);
    text = joined ? PyObject_CallMethod(textwrap, "dedent", "O", joined) : NULL;
    tree = text ? PyObject_CallMethod(ast, "parse", "OO", text, filename) : NULL;
    moved = tree ? PyObject_CallMethod(ast, "increment_lineno", "On", tree,
                                       PyLong_AsSsize_t(PyTuple_GET_ITEM(src, 1)) - 1)
                 : NULL;
    body = moved ? PyObject_GetAttrString(tree, "body") : NULL;
    PyObject *def = body && PyList_GET_SIZE(body) == 1 ? PyList_GET_ITEM(body, 0) : NULL;
    newname = PyUnicode_FromFormat("_offload_jit_%U", name);
    PyObject *nodecor = PyList_New(0);
    int rc =
        def && newname && nodecor ? PyObject_SetAttrString(def, "decorator_list", nodecor) : -1;
    Py_XDECREF(nodecor);
    if (rc < 0 || PyObject_SetAttrString(def, "name", newname) < 0) goto out;
    stmts = PyObject_GetAttrString(def, "body");
    lines = stmts ? PyObject_CallMethod(linecache, "getlines", "O", filename) : NULL;
    done = lines ? rewrite_source(tree, stmts, filename, lines) : NULL;
    PyObject *compile = PyDict_GetItemString(PyEval_GetBuiltins(), "compile");
    code = done ? PyObject_CallFunction(compile, "OOs", tree, filename, "exec") : NULL;
    ran = code ? PyEval_EvalCode(code, globals, globals) : NULL;
    if (ran) { /* the def bound the new name in the user's globals: take it back out */
        fn = PyDict_GetItemWithError(globals, newname);
        Py_XINCREF(fn);
        if (fn && PyDict_DelItem(globals, newname) < 0) Py_CLEAR(fn);
        if (fn) {
            PyObject *qual = PyObject_GetAttrString(pyfunc, "__qualname__");
            if (!qual || PyObject_SetAttrString(fn, "__name__", name) < 0 ||
                PyObject_SetAttrString(fn, "__qualname__", qual) < 0)
                Py_CLEAR(fn);
            Py_XDECREF(qual);
        }
    }
out:
    if (!fn && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "offload.jit: cannot read the source of %R", pyfunc);
    Py_XDECREF(inspect);
    Py_XDECREF(ast);
    Py_XDECREF(textwrap);
    Py_XDECREF(linecache);
    Py_XDECREF(src);
    Py_XDECREF(code_obj);
    Py_XDECREF(filename);
    Py_XDECREF(name);
    Py_XDECREF(globals);
    Py_XDECREF(joined);
    Py_XDECREF(text);
    Py_XDECREF(tree);
    Py_XDECREF(moved);
    Py_XDECREF(body);
    Py_XDECREF(stmts);
    Py_XDECREF(lines);
    Py_XDECREF(done);
    Py_XDECREF(code);
    Py_XDECREF(ran);
    Py_XDECREF(newname);
    return fn;
}

static PyObject *jitfn_call(mod_jitfn *j, PyObject *args, PyObject *kw) {
    if (!j->compiled && !(j->compiled = jit_prepare(j->pyfunc))) return NULL;
    PyObject *ctx = (PyObject *)ctx_make(&LoopCtxType, NULL, j->boundscheck);
    if (!ctx) return NULL;
    PyObject *entered = ctx_enter((mod_loopctx *)ctx, NULL);
    Py_XDECREF(entered);
    PyObject *r = entered ? PyObject_Call(j->compiled, args, kw) : NULL;
    PyObject *exit_args = Py_BuildValue("(OOO)", r ? Py_None : Py_True, Py_None, Py_None);
    PyObject *ex = entered && exit_args ? ctx_exit((mod_loopctx *)ctx, exit_args) : NULL;
    Py_XDECREF(exit_args);
    if (!ex) Py_CLEAR(r);
    Py_XDECREF(ex);
    Py_DECREF(ctx);
    return r;
}

static int jitfn_traverse(mod_jitfn *j, visitproc visit, void *arg) {
    Py_VISIT(j->pyfunc);
    Py_VISIT(j->compiled);
    return 0;
}

static void jitfn_dealloc(mod_jitfn *j) {
    PyObject_GC_UnTrack(j);
    Py_XDECREF(j->pyfunc);
    Py_XDECREF(j->compiled);
    Py_TYPE(j)->tp_free((PyObject *)j);
}

static PyObject *jitfn_repr(mod_jitfn *j) {
    return PyUnicode_FromFormat("<offload.jit %R>", j->pyfunc);
}
static PyObject *jitfn_py_func(mod_jitfn *j, void *c) { return Py_NewRef(j->pyfunc); }
static PyObject *jitfn_attr(mod_jitfn *j, void *c) { return PyObject_GetAttrString(j->pyfunc, c); }
static PyObject *jitfn_boundscheck(mod_jitfn *j, void *c) {
    return PyBool_FromLong(j->boundscheck);
}

static PyGetSetDef jitfn_getset[] = {
    {"py_func", (getter)jitfn_py_func, NULL, "the Python function", NULL},
    {"__wrapped__", (getter)jitfn_py_func, NULL, "the Python function", NULL},
    {"boundscheck", (getter)jitfn_boundscheck, NULL, "whether its loops check every index", NULL},
    {"__name__", (getter)jitfn_attr, NULL, NULL, "__name__"},
    {"__doc__", (getter)jitfn_attr, NULL, NULL, "__doc__"},
    {NULL},
};

static PyTypeObject JitFnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.JitFunction",
    .tp_basicsize = sizeof(mod_jitfn),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A function whose prange loops run on a device (see offload.jit).",
    .tp_traverse = (traverseproc)jitfn_traverse,
    .tp_dealloc = (destructor)jitfn_dealloc,
    .tp_call = (ternaryfunc)jitfn_call,
    .tp_repr = (reprfunc)jitfn_repr,
    .tp_getset = jitfn_getset,
};

/* self: Py_True for a function whose loops check indices. */
static PyObject *jit_with(PyObject *self, PyObject *pyfunc) {
    if (!PyFunction_Check(pyfunc))
        return PyErr_Format(PyExc_TypeError, "use @offload.jit above a def");
    mod_jitfn *j = PyObject_GC_New(mod_jitfn, &JitFnType);
    if (!j) return NULL;
    j->pyfunc = Py_NewRef(pyfunc);
    j->compiled = NULL;
    j->boundscheck = self == Py_True;
    PyObject_GC_Track(j);
    return (PyObject *)j;
}

static PyMethodDef jit_with_def = {"jit", jit_with, METH_O,
                                   "Make the function's prange loops run on a device."};

/* @offload.jit, @offload.jit(boundscheck=True), offload.jit(f, boundscheck=True) */
static PyObject *jit_decorator(PyObject *self, PyObject *const *args, Py_ssize_t n,
                               PyObject *kwnames) {
    int bounds = 0;
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(name, "boundscheck"))
            return PyErr_Format(PyExc_TypeError, "offload.jit() takes boundscheck=, not %R=", name);
        if ((bounds = PyObject_IsTrue(args[n + i])) < 0) return NULL;
    }
    if (n > 1)
        return PyErr_Format(PyExc_TypeError,
                            "use @offload.jit or @offload.jit(boundscheck=True) above a def");
    PyObject *flag = bounds ? Py_True : Py_False;
    return n == 1 ? jit_with(flag, args[0]) : PyCFunction_New(&jit_with_def, flag);
}

static PyMethodDef functions[] = {
    {"prange", prange, METH_VARARGS,
     "prange([start,] stop[, step])\n\nrange, whose loop runs on a device in %%offload cells and "
     "@offload.jit "
     "functions: each iteration is a work-item; nested pranges give up to 3 dimensions; s += ..., "
     "s *= ..., "
     "s = min(s, ...) and s = max(s, ...) are reductions."},
    {"jit", (PyCFunction)(void (*)(void))jit_decorator, METH_FASTCALL | METH_KEYWORDS,
     "@offload.jit\ndef f(...): ...\n\nf runs as Python, except its prange loops, which run on a "
     "device: "
     "the device of the offload arrays they use, else the default. NumPy arrays are copied to it "
     "once per "
     "call and back at its end if a loop may write them.\n"
     "@offload.jit(boundscheck=True): the loops check every array index, as numba's boundscheck; "
     "the first "
     "out of range raises IndexError naming the index, axis, size, array and place."},
    {"_loop", (PyCFunction)(void (*)(void))loop_run, METH_FASTCALL,
     "_loop(id, ranges, values): a prange loop (internal)"},
    {"_compile_cell", compile_cell, METH_VARARGS,
     "_compile_cell(source, filename, first_line=1): the code of source with its prange loops on "
     "devices"},
    {NULL},
};

/* The registry keeps loops for the process; at exit they go with everything
 * else, so their kernels release their device programs like any other. */
static PyObject *release_loops(PyObject *self, PyObject *unused) {
    Py_CLEAR(registry_index);
    Py_CLEAR(registry);
    Py_CLEAR(cell_trees);
    Py_RETURN_NONE;
}

static PyMethodDef release_def = {"_release_loops", release_loops, METH_NOARGS, NULL};

int mod_loops_add_functions(PyObject *module) {
    if (PyType_Ready(&LoopType) < 0 || PyType_Ready(&LoopCtxType) < 0 ||
        PyType_Ready(&JitFnType) < 0)
        return -1;
    if (!registry && (!(registry = PyList_New(0)) || !(registry_index = PyDict_New()) ||
                      !(cell_trees = PyDict_New())))
        return -1;
    if (PyModule_AddObjectRef(module, "LoopContext", (PyObject *)&LoopCtxType) < 0) return -1;
    if (mod_atexit(&release_def) < 0) return -1;
    return PyModule_AddFunctions(module, functions);
}
