/* mag_offload: the %%offload cell magic -- the cell runs as Python, its prange
 * loops as device kernels (offload._compile_cell), inside one
 * offload.LoopContext that reports each step as it happens. The report is one
 * display, shown at the first step and updated in place: the steps' lines,
 * then a summary table. Lines printed beside it would land above and below
 * it as the cell's own output interleaves. --boundscheck makes the context
 * launch every loop with index checks; --records NAME leaves the steps'
 * records (the context's list of dicts) in the variable NAME, as %%capture
 * leaves its output, so that a notebook can chart them. */
#include "mag_impl.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: %%%%offload [--device FILTER] [--quiet] [--show llvm|spirv|ptx] [--boundscheck] "
    "[--records NAME]";

typedef struct {
    char device[128];
    bool quiet, boundscheck;
    char show[16];
    char records[128]; /* a variable name, or "" */
} options;

/* "--device F" and "--device=F" */
static int parse(const char *args, options *o) {
    memset(o, 0, sizeof *o);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", args);
    char *save = NULL;
    for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        char *value = strchr(t, '=');
        if (value) *value++ = '\0';
        if (!strcmp(t, "--quiet") && !value) {
            o->quiet = true;
        } else if (!strcmp(t, "--device") || !strcmp(t, "--show")) {
            if (!value) value = strtok_r(NULL, " \t", &save);
            if (!value) return PyErr_Format(mag_UsageError, "%s needs a value; %s", t, usage), -1;
            snprintf(t[2] == 'd' ? o->device : o->show,
                     t[2] == 'd' ? sizeof o->device : sizeof o->show, "%s", value);
            if (t[2] == 's' && strcmp(value, "llvm") && strcmp(value, "spirv") &&
                strcmp(value, "ptx"))
                return PyErr_Format(mag_UsageError, "--show takes llvm, spirv or ptx, not '%s'",
                                    value),
                       -1;
        } else if (!strcmp(t, "--records")) {
            if (!value) value = strtok_r(NULL, " \t", &save);
            PyObject *name = value ? PyUnicode_FromString(value) : NULL;
            int ok = name && PyUnicode_IsIdentifier(name);
            Py_XDECREF(name);
            PyErr_Clear();
            if (!ok)
                return PyErr_Format(mag_UsageError, "--records needs a variable name, not '%s'; %s",
                                    value ? value : "", usage),
                       -1;
            snprintf(o->records, sizeof o->records, "%s", value);
        } else if (!strcmp(t, "--boundscheck") && !value) {
            o->boundscheck = true;
        } else {
            return PyErr_Format(mag_UsageError, "unknown option '%s'; %s", t, usage), -1;
        }
    }
    return 0;
}

/* ---- the summary table ---- */

static const char *str_of(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key);
    return v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : "";
}

static double num_of(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key);
    return v ? PyFloat_AsDouble(v) : 0;
}

static void bytes_str(double b, char *out, size_t n) {
    if (b <= 0)
        snprintf(out, n, "-");
    else if (b >= 1e9)
        snprintf(out, n, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(out, n, "%.2f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(out, n, "%.1f kB", b / 1e3);
    else
        snprintf(out, n, "%.0f B", b);
}

/* One row per record: step, what, bytes, ms, note. */
static void row_of(PyObject *r, char cells[5][160]) {
    const char *kind = str_of(r, "kind");
    double ms = num_of(r, "ms"), b = num_of(r, "bytes");
    PyErr_Clear();
    snprintf(cells[0], 160, "%s", kind);
    bytes_str(b, cells[2], 160);
    snprintf(cells[3], 160, "%.3f", ms);
    cells[4][0] = '\0';
    if (!strcmp(kind, "device")) {
        snprintf(cells[1], 160, "%s (%s)", str_of(r, "device"), str_of(r, "name"));
        snprintf(cells[3], 160, "-");
    } else if (!strcmp(kind, "compile")) {
        snprintf(cells[1], 160, "loop at line %ld", PyLong_AsLong(PyDict_GetItemString(r, "line")));
        snprintf(cells[4], 160, "JIT %.1f ms, %s", num_of(r, "jit_ms"),
                 PyDict_GetItemString(r, "cache_hit") == Py_True ? "disk cache hit" : "cache miss");
    } else if (!strcmp(kind, "launch")) {
        PyObject *range = PyDict_GetItemString(r, "range");
        PyObject *rs = range ? PyObject_Str(range) : NULL;
        snprintf(cells[1], 160, "loop at line %ld over %s",
                 PyLong_AsLong(PyDict_GetItemString(r, "line")), rs ? PyUnicode_AsUTF8(rs) : "?");
        Py_XDECREF(rs);
        snprintf(cells[4], 160, "%.1f GB/s on the device", ms > 0 ? b / ms / 1e6 : 0.0);
    } else {
        snprintf(cells[1], 160, "%s", str_of(r, "name"));
        snprintf(cells[4], 160, "%.1f GB/s", ms > 0 ? b / ms / 1e6 : 0.0);
    }
    PyErr_Clear();
}

static void html_escape(PyObject *out, const char *s) {
    for (; *s; s++) {
        const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : NULL;
        char one[2] = {*s, 0};
        PyObject *piece = PyUnicode_FromString(e ? e : one);
        if (piece) PyList_Append(out, piece);
        Py_XDECREF(piece);
    }
}

static void append(PyObject *out, const char *s) {
    PyObject *piece = PyUnicode_FromString(s);
    if (piece) PyList_Append(out, piece);
    Py_XDECREF(piece);
}

/* {"text/html": ..., "text/plain": ...} of the records: their lines, then the table. */
static PyObject *summary_bundle(PyObject *records) {
    static const char *const head[5] = {"step", "what", "bytes", "ms", ""};
    static const bool left[5] = {true, true, false, false, true}; /* numbers line up on the right */
    PyObject *html = PyList_New(0), *text = PyList_New(0);
    if (!html || !text) goto fail;
    /* the look of stream output, which these lines were before they joined the table */
    append(html,
           "<pre style=\"font-family:var(--jp-code-font-family, monospace); "
           "font-size:var(--jp-code-font-size, 13px); white-space:pre-wrap; word-break:normal; "
           "overflow-wrap:anywhere; margin:0 0 0.5em 0\">");
    int wide = 44;
    char cells[5][160];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (!PyDict_Check(r)) continue;
        const char *said = str_of(r, "text");
        html_escape(html, said);
        append(html, "\n");
        append(text, said);
        append(text, "\n");
        row_of(r, cells);
        wide = (int)strlen(cells[1]) > wide ? (int)strlen(cells[1]) : wide;
    }
    append(html, "</pre><table><thead><tr>");
    append(text, "\n");
    for (int i = 0; i < 5; i++) {
        append(html, left[i] ? "<th style=\"text-align:left\">" : "<th>");
        append(html, head[i]);
        append(html, "</th>");
    }
    append(html, "</tr></thead><tbody>");
    char line[1024];
    snprintf(line, sizeof line, "%-9s %-*s %10s %10s  %s\n", head[0], wide, head[1], head[2],
             head[3], head[4]);
    append(text, line);
    double device_ms = 0, copy_ms = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        if (!PyDict_Check(r)) continue;
        row_of(r, cells);
        const char *kind = cells[0];
        if (!strcmp(kind, "launch")) device_ms += num_of(r, "ms");
        if (!strncmp(kind, "copy", 4)) copy_ms += num_of(r, "ms");
        append(html, "<tr>");
        for (int c = 0; c < 5; c++) {
            append(html, left[c] ? "<td style=\"text-align:left\">" : "<td>");
            html_escape(html, cells[c]);
            append(html, "</td>");
        }
        append(html, "</tr>");
        snprintf(line, sizeof line, "%-9s %-*s %10s %10s  %s\n", cells[0], wide, cells[1], cells[2],
                 cells[3], cells[4]);
        append(text, line);
    }
    snprintf(line, sizeof line, "total: %.3f ms in loops on the device, %.3f ms copying", device_ms,
             copy_ms);
    append(html, "</tbody></table><p>");
    append(html, line);
    append(html, "</p>");
    append(text, line);
    PyObject *empty = PyUnicode_FromString("");
    PyObject *h = empty ? PyUnicode_Join(empty, html) : NULL,
             *t = empty ? PyUnicode_Join(empty, text) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(html);
    Py_DECREF(text);
    PyObject *bundle = h && t ? Py_BuildValue("{s:N,s:N}", "text/html", h, "text/plain", t) : NULL;
    if (!bundle) {
        Py_XDECREF(h);
        Py_XDECREF(t);
    }
    return bundle;
fail:
    Py_XDECREF(html);
    Py_XDECREF(text);
    return NULL;
}

/* The context's on_record: self is [display_id, shown]. Shows the report the
 * first time and updates it after that (update_display_data). False where
 * there is no display(), so that the context prints the lines instead. */
static PyObject *on_record(PyObject *self, PyObject *records) {
    PyObject *bundle = summary_bundle(records);
    int rc =
        bundle ? mag_display(bundle, PyList_GET_ITEM(self, 0), PyList_GET_ITEM(self, 1) == Py_True)
               : -1;
    Py_XDECREF(bundle);
    if (rc == 1) PyList_SetItem(self, 1, Py_NewRef(Py_True));
    return rc < 0 ? NULL : PyBool_FromLong(rc == 1);
}

static PyMethodDef on_record_def = {"offload_summary", on_record, METH_O, NULL};

/* --quiet --records: the context records every step, and this hook says each
 * was shown, so that nothing is. */
static PyObject *keep_quiet(PyObject *self, PyObject *records) {
    (void)self, (void)records;
    Py_RETURN_TRUE;
}

static PyMethodDef keep_quiet_def = {"offload_records_only", keep_quiet, METH_O, NULL};

static PyObject *running_cell; /* set by the kernel around each cell; owned */

void mag_set_cell_filename(PyObject *filename) { Py_XSETREF(running_cell, Py_XNewRef(filename)); }

/* The name the running cell was compiled under ("<cell 3>"), for messages: the
 * kernel's word for it (the magic may be called through IPython's frames),
 * else the calling frame's file (offload's %%offload outside the kernel). */
static PyObject *cell_filename(void) {
    if (running_cell) return Py_NewRef(running_cell);
    PyFrameObject *frame = PyEval_GetFrame(); /* borrowed: the cell's, which called the magic */
    PyCodeObject *code = frame ? PyFrame_GetCode(frame) : NULL;
    PyObject *name = code ? Py_NewRef(code->co_filename) : PyUnicode_FromString("<offload cell>");
    Py_XDECREF(code);
    return name;
}

PyObject *mag_offload(PyObject *ns, const char *args, const char *body) {
    options o;
    if (parse(args, &o) < 0) return NULL;
    PyObject *offload = PyImport_ImportModule("offload");
    PyObject *filename = cell_filename();
    PyObject *code = offload && filename
                         ? PyObject_CallMethod(offload, "_compile_cell", "sOi", body, filename, 2)
                         : NULL;
    PyObject *state = NULL, *hook = NULL, *ctx = NULL, *result = NULL;
    if (!code) goto out;
    bool verbose = !o.quiet || o.records[0];
    if (!o.quiet) {
        static unsigned long cells;
        PyObject *id = PyUnicode_FromFormat("offload-summary-%d-%lu", (int)getpid(), ++cells);
        state = id ? Py_BuildValue("[NO]", id, Py_False) : NULL;
        hook = state ? PyCFunction_New(&on_record_def, state) : NULL;
        if (!hook) goto out;
    } else if (verbose && !(hook = PyCFunction_New(&keep_quiet_def, NULL))) {
        goto out;
    }
    PyObject *ctor = PyObject_GetAttrString(offload, "LoopContext");
    PyObject *kw =
        Py_BuildValue("{s:z,s:O,s:O,s:z,s:O}", "device", o.device[0] ? o.device : NULL, "verbose",
                      verbose ? Py_True : Py_False, "on_record", hook ? hook : Py_None, "show",
                      o.show[0] ? o.show : NULL, "boundscheck", o.boundscheck ? Py_True : Py_False);
    PyObject *none = PyTuple_New(0);
    ctx = ctor && kw && none ? PyObject_Call(ctor, none, kw) : NULL;
    Py_XDECREF(ctor);
    Py_XDECREF(kw);
    Py_XDECREF(none);
    if (!ctx) goto out;
    PyObject *entered = PyObject_CallMethod(ctx, "__enter__", NULL);
    if (!entered) goto out;
    Py_DECREF(entered);
    PyObject *ran = PyEval_EvalCode(code, ns, ns);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *exited = PyObject_CallMethod(ctx, "__exit__", "OOO", type ? type : Py_None,
                                           value ? value : Py_None, tb ? tb : Py_None);
    if (type) {
        Py_XDECREF(exited);
        PyErr_Restore(type, value, tb);
    } else if (exited) {
        Py_DECREF(exited);
        result = Py_NewRef(Py_None);
    }
    Py_XDECREF(ran);
    if (o.records[0]) { /* also after an error: the steps that ran say where it stopped */
        PyErr_Fetch(&type, &value, &tb);
        PyObject *records = PyObject_GetAttrString(ctx, "records");
        if (!records || PyDict_SetItemString(ns, o.records, records) < 0) Py_CLEAR(result);
        Py_XDECREF(records);
        if (type) PyErr_Restore(type, value, tb); /* the cell's error outranks ours */
    }
out:
    Py_XDECREF(offload);
    Py_XDECREF(filename);
    Py_XDECREF(code);
    Py_XDECREF(state);
    Py_XDECREF(hook);
    Py_XDECREF(ctx);
    return result;
}
