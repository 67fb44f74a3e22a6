/* krn_py: the embedded interpreter -- start-up, running a cell, results,
 * tracebacks, and the calls into the Python glue (krn_py.h). Publishes and
 * reads stdin only through the krn_io the server handed it. */
#include <Python.h>

#include "config.h"
#include "krn_py.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../magics/mag_magics.h"
#include "mod_public.h"
#include "krn_display.h"
#include "krn_history.h"
#include "krn_interrupt.h"
#include "krn_log.h"
#include "krn_pyjson.h"
#include "krn_pymod.h"

#define OUTPUT_CACHE 1000 /* Out[] entries kept, as IPython's cache_size */

static struct {
    PyObject *user_ns; /* __main__.__dict__, borrowed from the module */
    PyObject *in_list, *out_dict;
    PyObject *glue;    /* offload_kernel package or NULL when it failed to import */
    PyObject *compile; /* builtins.compile */
    PyObject *ast_expr, *ast_module, *ast_interactive;
    PyObject *share_dir; /* str: frames from here are the kernel's own */
    const krn_io *io;    /* the server's publish and stdin functions */
    int count;           /* In[] number of the cell running */
    bool quiet;          /* silent cell, or a trailing ';' */
    bool no_ipython;     /* IPython did not import: the kernel's own magics only */
    unsigned long runs;  /* every execution, for unique file names */
    char version[32];
    char *sys_version;
} py;

const char *krn_py_version(void) { return py.version; }
const char *krn_py_sys_version(void) { return py.sys_version ? py.sys_version : ""; }

/* ---- errors ---- */

static bool is_kernel_frame(PyObject *tb) {
    PyFrameObject *frame = ((PyTracebackObject *)tb)->tb_frame;
    PyCodeObject *code = PyFrame_GetCode(frame);
    int starts = PyUnicode_Tailmatch(code->co_filename, py.share_dir, 0, PY_SSIZE_T_MAX, -1);
    Py_DECREF(code);
    return starts == 1;
}

/* Unlink the kernel's own frames (share/ glue) from a traceback chain. */
static PyObject *strip_kernel_frames(PyObject *tb) {
    while (tb && tb != Py_None && is_kernel_frame(tb))
        tb = (PyObject *)((PyTracebackObject *)tb)->tb_next;
    if (!tb || tb == Py_None) return tb;
    for (PyTracebackObject *t = (PyTracebackObject *)tb; t->tb_next;) {
        if (is_kernel_frame((PyObject *)t->tb_next)) {
            PyTracebackObject *skip = t->tb_next;
            Py_XINCREF(skip->tb_next);
            t->tb_next = skip->tb_next;
            Py_DECREF(skip);
        } else {
            t = t->tb_next;
        }
    }
    return tb;
}

/* The pending exception as error content {ename, evalue, traceback}; clears it. */
static json_t *error_content(void) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) PyException_SetTraceback(value, strip_kernel_frames(tb));
    /* A misused magic is the user's typo, not a program failure: no traceback, as IPython. */
    if (value && mag_is_usage_error(value)) PyException_SetTraceback(value, Py_None);
    json_t *lines = json_array();
    PyObject *mod = PyImport_ImportModule("traceback");
    PyObject *stripped = value ? PyException_GetTraceback(value) : NULL;
    PyObject *formatted = mod ? PyObject_CallMethod(mod, "format_exception", "OOO", type, value,
                                                    stripped ? stripped : Py_None)
                              : NULL;
    Py_XDECREF(stripped);
    if (formatted) {
        PyObject *sep = PyUnicode_FromString("");
        PyObject *joined = sep ? PyUnicode_Join(sep, formatted) : NULL;
        PyObject *split = joined ? PyUnicode_Splitlines(joined, 0) : NULL;
        for (Py_ssize_t i = 0; split && i < PyList_GET_SIZE(split); i++)
            json_array_append_new(lines, krn_pyjson_str(PyList_GET_ITEM(split, i)));
        Py_XDECREF(split);
        Py_XDECREF(joined);
        Py_XDECREF(sep);
    }
    PyErr_Clear();
    Py_XDECREF(formatted);
    Py_XDECREF(mod);
    PyObject *name = type ? PyObject_GetAttrString(type, "__name__") : NULL;
    PyObject *str = value ? PyObject_Str(value) : NULL;
    PyErr_Clear();
    json_t *content =
        json_pack("{s:o, s:o, s:o}", "ename", name ? krn_pyjson_str(name) : json_string("Error"),
                  "evalue", str ? krn_pyjson_str(str) : json_string(""), "traceback", lines);
    Py_XDECREF(name);
    Py_XDECREF(str);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return content;
}

/* A cell's pending exception as error content; *shown when it is in the
 * cell's output already: a UsageError is one stderr line, as IPython shows
 * it. With IPython's shell, IPython formats the traceback (%xmode decides its
 * form) and keeps it for %debug. Clears the exception. */
static json_t *cell_error_content(bool *shown) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    /* As the REPL does: %debug and pdb.pm() look for the last error here. */
    if (type && value && tb &&
        (PySys_SetObject("last_type", type) || PySys_SetObject("last_value", value) ||
         PySys_SetObject("last_traceback", tb)))
        PyErr_Clear();
    PyObject *shell = krn_pymod_shell();
    *shown = false;
    if (!shell || !value) {
        *shown = value && mag_is_usage_error(value);
        if (*shown) PySys_FormatStderr("UsageError: %S\n", value);
        PyErr_Restore(type, value, tb);
        return error_content();
    }
    if (tb) PyException_SetTraceback(value, strip_kernel_frames(tb));
    PyObject *stripped = PyException_GetTraceback(value);
    PyObject *r = PyObject_CallMethod(shell, "error_content", "OOO", type, value,
                                      stripped ? stripped : Py_None);
    Py_XDECREF(stripped);
    PyObject *content;
    int was_shown;
    if (!r || !PyArg_ParseTuple(r, "O!p", &PyDict_Type, &content, &was_shown)) {
        PyErr_Clear(); /* IPython could not format it: the kernel's own format */
        Py_XDECREF(r);
        PyErr_Restore(type, value, tb);
        return error_content();
    }
    json_t *res = krn_pyjson(content);
    *shown = was_shown;
    Py_DECREF(r);
    Py_XDECREF(type);
    Py_DECREF(value);
    Py_XDECREF(tb);
    return res;
}

/* ---- displayhook: the value of a cell's trailing expression ---- */

static int set_user(const char *name, PyObject *value) {
    return PyDict_SetItemString(py.user_ns, name, value);
}

static void remember_output(PyObject *value) {
    PyObject *prev1 = PyDict_GetItemString(py.user_ns, "_");
    PyObject *prev2 = PyDict_GetItemString(py.user_ns, "__");
    if (prev2) set_user("___", prev2);
    if (prev1) set_user("__", prev1);
    set_user("_", value);
    char name[32];
    snprintf(name, sizeof name, "_%d", py.count);
    set_user(name, value);
    PyObject *key = PyLong_FromLong(py.count);
    PyDict_SetItem(py.out_dict, key, value);
    Py_DECREF(key);
    /* Bounded memory: forget the output OUTPUT_CACHE cells back. */
    int old = py.count - OUTPUT_CACHE;
    if (old > 0) {
        key = PyLong_FromLong(old);
        if (PyDict_DelItem(py.out_dict, key)) PyErr_Clear();
        Py_DECREF(key);
        snprintf(name, sizeof name, "_%d", old);
        if (PyDict_DelItemString(py.user_ns, name)) PyErr_Clear();
    }
}

static PyObject *displayhook(PyObject *self, PyObject *value) {
    if (value == Py_None || py.quiet) Py_RETURN_NONE;
    /* Builtins '_' must not shadow gettext-style code: IPython keeps it in the namespace. */
    PyObject *data, *md;
    if (krn_display_format(value, NULL, NULL, &data, &md)) return NULL;
    remember_output(value);
    if (PyDict_Size(data) ==
        0) { /* its formatter failed and said so: nothing to show, as IPython */
        Py_DECREF(data);
        Py_DECREF(md);
        Py_RETURN_NONE;
    }
    PyObject *text = PyDict_GetItemString(data, "text/plain");
    if (text && PyUnicode_Check(text)) {
        json_t *utf8 = krn_pyjson_str(text); /* lone surrogates replaced */
        krn_history_set_output(py.count, json_string_value(utf8));
        json_decref(utf8);
    }
    json_t *content = json_pack("{s:i, s:o, s:o}", "execution_count", py.count, "data",
                                krn_pyjson(data), "metadata", krn_pyjson(md));
    Py_DECREF(data);
    Py_DECREF(md);
    Py_BEGIN_ALLOW_THREADS
    py.io->publish("execute_result", NULL, content);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef displayhook_def = {"displayhook", displayhook, METH_O,
                                      "Show the value of a cell's last expression."};

/* ---- running a cell ---- */

static void register_source(PyObject *filename, const char *code) {
    /* linecache entries with mtime None are never invalidated: tracebacks and
     * inspect.getsource see cell code for as long as the kernel lives. */
    PyObject *linecache = PyImport_ImportModule("linecache");
    PyObject *cache = linecache ? PyObject_GetAttrString(linecache, "cache") : NULL;
    PyObject *src = PyUnicode_FromString(code);
    PyObject *lines = src ? PyObject_CallMethod(src, "splitlines", "O", Py_True) : NULL;
    PyObject *entry =
        lines ? Py_BuildValue("(nOOO)", PyUnicode_GET_LENGTH(src), Py_None, lines, filename) : NULL;
    if (cache && entry) PyDict_SetItem(cache, filename, entry);
    PyErr_Clear();
    Py_XDECREF(entry);
    Py_XDECREF(lines);
    Py_XDECREF(src);
    Py_XDECREF(cache);
    Py_XDECREF(linecache);
}

/* A trailing ';' hides the result, as in IPython. */
static bool ends_with_semicolon(const char *code) {
    size_t n = strlen(code);
    while (n && (code[n - 1] == ' ' || code[n - 1] == '\t' || code[n - 1] == '\n' ||
                 code[n - 1] == '\r'))
        n--;
    return n && code[n - 1] == ';';
}

static int run_code(PyObject *code) {
    PyObject *res = PyEval_EvalCode(code, py.user_ns, py.user_ns);
    Py_XDECREF(res);
    return res ? 0 : -1;
}

/* Compile the cell as `exec` for all but a trailing expression, which runs as
 * `single` so that its value reaches the displayhook. */
static int run_source(const char *source, PyObject *filename) {
    PyCompilerFlags flags = {.cf_flags = PyCF_ONLY_AST, .cf_feature_version = PY_MINOR_VERSION};
    PyObject *tree = Py_CompileStringObject(source, filename, Py_file_input, &flags, -1);
    if (!tree) return -1;
    PyObject *body = PyObject_GetAttrString(tree, "body");
    int rc = -1;
    if (!body || !PyList_Check(body)) goto done;
    Py_ssize_t n = PyList_GET_SIZE(body);
    PyObject *last = n ? PyList_GET_ITEM(body, n - 1) : NULL;
    PyObject *head = tree, *tail = NULL;
    Py_INCREF(head);
    if (last && PyObject_IsInstance(last, py.ast_expr) == 1) {
        PyObject *rest = PyList_GetSlice(body, 0, n - 1);
        PyObject *one = PyList_New(1);
        Py_INCREF(last);
        PyList_SET_ITEM(one, 0, last);
        Py_DECREF(head);
        head = rest ? PyObject_CallFunction(py.ast_module, "ON", rest, PyList_New(0)) : NULL;
        tail = PyObject_CallFunction(py.ast_interactive, "O", one);
        Py_XDECREF(rest);
        Py_DECREF(one);
        if (!head || !tail) goto fail_parts;
    }
    PyObject *code = PyObject_CallFunction(py.compile, "OOs", head, filename, "exec");
    rc = code ? run_code(code) : -1;
    Py_XDECREF(code);
    if (rc == 0 && tail) {
        code = PyObject_CallFunction(py.compile, "OOs", tail, filename, "single");
        rc = code ? run_code(code) : -1;
        Py_XDECREF(code);
    }
fail_parts:
    Py_XDECREF(head);
    Py_XDECREF(tail);
done:
    Py_XDECREF(body);
    Py_DECREF(tree);
    return rc;
}

static void record_input(const char *code) {
    PyObject *src = PyUnicode_FromString(code);
    if (!src) {
        PyErr_Clear();
        return;
    }
    PyList_Append(py.in_list, src);
    /* As IPython: _i, _ii, _iii are the three previous inputs, _i00 this one. */
    const char *shift[] = {"_iii", "_ii", "_i", "_i00"};
    for (int k = 0; k < 3; k++) {
        PyObject *newer = PyDict_GetItemString(py.user_ns, shift[k + 1]);
        if (newer) set_user(shift[k], newer);
    }
    set_user("_i00", src);
    char name[32];
    snprintf(name, sizeof name, "_i%d", py.count);
    set_user(name, src);
    Py_DECREF(src);
    krn_history_add(py.count, code);
}

static PyObject *call_glue(const char *fn, const char *fmt, ...) {
    if (!py.glue) {
        PyErr_SetString(PyExc_RuntimeError, "the offload_kernel glue package did not import");
        return NULL;
    }
    PyObject *f = PyObject_GetAttrString(py.glue, fn);
    if (!f) return NULL;
    va_list ap;
    va_start(ap, fmt);
    PyObject *args = Py_VaBuildValue(fmt, ap);
    va_end(ap);
    PyObject *res = args ? PyObject_CallObject(f, args) : NULL;
    Py_XDECREF(args);
    Py_DECREF(f);
    return res;
}

/* obj? and obj??: the help text goes to the pager payload. */
static json_t *help_payload(const char *expr, int detail) {
    PyObject *text = call_glue("help_text", "(siO)", expr, detail, py.user_ns);
    json_t *payload = json_array();
    if (text && PyUnicode_Check(text)) {
        json_array_append_new(payload, json_pack("{s:s, s:{s:o}, s:i}", "source", "page", "data",
                                                 "text/plain", krn_pyjson_str(text), "start", 0));
    } else if (text) {
        PySys_WriteStdout("Object `%.200s` not found.\n", expr);
    } else {
        PyErr_Print();
    }
    Py_XDECREF(text);
    return payload;
}

static void after_cell(void) {
    /* Figures left open at the end of a cell show inline, as in IPython. */
    PyObject *modules = PyImport_GetModuleDict();
    if (PyDict_GetItemString(modules, "matplotlib.pyplot")) {
        PyObject *r = call_glue("post_execute", "()");
        if (!r) PyErr_Print();
        Py_XDECREF(r);
    }
}

/* A one-line cell that begins with a name bound nowhere (`pwd`, `cd lab`,
 * `ls -la`) or with a %macro's name: IPython's prefilter may make it a magic
 * call or run the macro, so IPython's transformers must see it. Other bound
 * names and keywords never are. */
static bool automagic_candidate(const char *code) {
    const char *p = code + strspn(code, " \t");
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_') n++;
    const char *after = p + n;
    if (n == 0 || isdigit((unsigned char)p[0]) || strchr(after, '\n') != NULL ||
        !(*after == '\0' || *after == ' ' || *after == '\t'))
        return false;
    PyObject *name = PyUnicode_FromStringAndSize(p, (Py_ssize_t)n);
    if (!name) {
        PyErr_Clear();
        return false;
    }
    PyObject *kw = PyImport_ImportModule("keyword");
    PyObject *is_kw = kw ? PyObject_CallMethod(kw, "iskeyword", "O", name) : NULL;
    PyObject *value = PyDict_GetItemWithError(py.user_ns, name); /* borrowed */
    /* A %macro's name alone runs the macro, as IPython's prefilter does. */
    bool macro = value && strcmp(Py_TYPE(value)->tp_name, "Macro") == 0;
    bool bound = is_kw != Py_False || value || PyDict_Contains(PyEval_GetBuiltins(), name) != 0;
    PyErr_Clear();
    Py_XDECREF(is_kw);
    Py_XDECREF(kw);
    Py_DECREF(name);
    return macro || !bound;
}

/* IPython's shell, made now when the cell needs IPython and it is installed;
 * NULL without it (the kernel's own rewrite serves then). Borrowed. */
static PyObject *shell_for(bool needs_ipython) {
    PyObject *shell = krn_pymod_shell();
    if (shell || !needs_ipython || py.no_ipython) return shell;
    PyObject *r = call_glue("start_shell", "()");
    if (!r) {
        krn_log(KRN_LOG_WARN, "IPython's shell could not be made; IPython syntax is unavailable");
        PyErr_Print();
    }
    py.no_ipython = !r || r == Py_None;
    Py_XDECREF(r);
    return krn_pymod_shell();
}

/* Records the cell in In and the history. With IPython's shell, the shell
 * does it (its history feeds %history, %rerun, ...), also fires
 * pre_execute/pre_run_cell, and returns the cell through IPython's
 * transformers when `transform`. Else NULL: the kernel's own rewrite serves. */
static char *begin_cell(const krn_exec_request *req, PyObject *shell, bool transform) {
    if (!shell) {
        if (req->store_history) record_input(req->code);
        return NULL;
    }
    if (req->store_history) krn_history_add(req->count, req->code);
    PyObject *text = PyObject_CallMethod(
        shell, "begin_cell", "siOOO", req->code, req->count, req->silent ? Py_True : Py_False,
        req->store_history ? Py_True : Py_False, transform ? Py_True : Py_False);
    const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    char *res = utf8 ? strdup(utf8) : NULL;
    Py_XDECREF(text);
    if (!res) { /* IPython failed before the cell ran: show why, run it as it is */
        PyErr_Print();
        res = strdup(req->code);
    }
    return res;
}

/* post_execute/post_run_cell, and the payloads the cell left (%load's next
 * input, the pager). Keeps a pending exception pending. */
static void finish_cell(PyObject *shell, json_t *payload) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *items = PyObject_CallMethod(shell, "end_cell", "O", value ? value : Py_None);
    if (items) {
        json_t *list = krn_pyjson(items);
        json_array_extend(payload, list);
        json_decref(list);
        Py_DECREF(items);
    } else {
        PyErr_Print(); /* an event handler failed: IPython prints it and goes on, too */
    }
    PyErr_Restore(type, value, tb);
}

static int run_cell(const krn_exec_request *req, const char *text) {
    char name[48];
    if (req->store_history)
        snprintf(name, sizeof name, "<cell %d>", req->count);
    else
        snprintf(name, sizeof name, "<cell %d.%lu>", req->count, py.runs);
    PyObject *filename = PyUnicode_FromString(name);
    if (!filename) return -1;
    register_source(filename, req->code);
    mag_set_cell_filename(filename);
    krn_interrupt_run_begins();
    int rc = run_source(text, filename);
    krn_interrupt_run_ends();
    mag_set_cell_filename(NULL);
    Py_DECREF(filename);
    return rc;
}

/* %pdb on: the error shows, then the post-mortem debugger runs (its prompts
 * are input_requests). True when it did, with the error published. */
static bool post_mortem(PyObject *shell, const json_t *error) {
    PyObject *on = PyObject_GetAttrString(shell, "call_pdb");
    bool debug = on && PyObject_IsTrue(on) == 1;
    Py_XDECREF(on);
    PyErr_Clear();
    if (!debug) return false;
    py.io->publish("error", NULL, json_deep_copy(error));
    krn_interrupt_run_begins();
    PyObject *r = PyObject_CallMethod(shell, "debugger", "(O)", Py_True);
    krn_interrupt_run_ends();
    if (!r) PyErr_Print();
    Py_XDECREF(r);
    return true;
}

void krn_py_execute(const krn_exec_request *req, krn_exec_result *out) {
    out->ok = true;
    out->error = NULL;
    out->error_shown = false;
    out->payload = json_array();
    py.count = req->count;
    py.quiet = req->silent || ends_with_semicolon(req->code);
    py.runs++;

    mag_cell cell = {0};
    bool help = mag_help_request(req->code, &cell); /* obj? is the kernel's inspector's */
    bool needs_ipython = !help && (mag_needs_ipython(req->code) || automagic_candidate(req->code));
    PyObject *shell =
        Py_XNewRef(shell_for(needs_ipython)); /* %reset may drop the shell's last ref */
    char *text = begin_cell(req, shell, needs_ipython);
    int rc = 0;
    if (help) {
        json_decref(out->payload);
        out->payload = help_payload(cell.text, cell.detail);
    } else if (text) {
        rc = run_cell(req, text);
    } else {
        mag_transform(req->code, &cell);
        rc = run_cell(req, cell.text);
    }
    free(text);
    mag_cell_clear(&cell);
    if (shell) finish_cell(shell, out->payload);
    if (rc) {
        out->ok = false;
        out->error = cell_error_content(&out->error_shown);
        if (!out->error_shown && shell && !req->silent)
            out->error_shown = post_mortem(shell, out->error);
    }
    Py_XDECREF(shell);
    after_cell();
    /* A Ctrl-C that landed just as the cell finished must not hit the next one. */
    if (PyErr_CheckSignals()) PyErr_Clear();
    mod_end_interrupt();
}

json_t *krn_py_user_expressions(const json_t *expressions) {
    json_t *result = json_object();
    const char *name;
    json_t *expr;
    json_object_foreach((json_t *)expressions, name, expr) {
        if (!json_is_string(expr)) continue;
        PyObject *value =
            PyRun_String(json_string_value(expr), Py_eval_input, py.user_ns, py.user_ns);
        PyObject *data, *md;
        if (value && krn_display_format(value, NULL, NULL, &data, &md) == 0) {
            json_object_set_new(result, name,
                                json_pack("{s:s, s:o, s:o}", "status", "ok", "data",
                                          krn_pyjson(data), "metadata", krn_pyjson(md)));
            Py_DECREF(data);
            Py_DECREF(md);
        } else {
            json_t *err = error_content();
            json_object_set_new(err, "status", json_string("error"));
            json_object_set_new(result, name, err);
        }
        Py_XDECREF(value);
    }
    return result;
}

/* ---- completion, inspection, is_complete: delegated to the glue ---- */

static json_t *glue_reply(PyObject *res, json_t *fallback) {
    if (res && PyDict_Check(res)) {
        json_decref(fallback);
        fallback = krn_pyjson(res);
    } else {
        json_t *err = error_content();
        krn_log(KRN_LOG_WARN, "glue failed: %s: %s",
                json_string_value(json_object_get(err, "ename")),
                json_string_value(json_object_get(err, "evalue")));
        json_decref(err);
    }
    Py_XDECREF(res);
    if (!json_object_get(fallback, "status")) /* is_complete's status is its answer */
        json_object_set_new(fallback, "status", json_string("ok"));
    return fallback;
}

json_t *krn_py_complete(const char *code, int cursor_pos) {
    PyObject *names = PyList_New(0);
    for (const char *const *m = mag_names(); *m; m++) {
        PyObject *s = PyUnicode_FromString(*m);
        PyList_Append(names, s);
        Py_DECREF(s);
    }
    PyObject *res = call_glue("complete", "(siOO)", code, cursor_pos, py.user_ns, names);
    Py_DECREF(names);
    return glue_reply(res, json_pack("{s:[], s:i, s:i, s:{}}", "matches", "cursor_start",
                                     cursor_pos, "cursor_end", cursor_pos, "metadata"));
}

json_t *krn_py_inspect(const char *code, int cursor_pos, int detail_level) {
    PyObject *res = call_glue("inspect", "(siiO)", code, cursor_pos, detail_level, py.user_ns);
    return glue_reply(res, json_pack("{s:b, s:{}, s:{}}", "found", 0, "data", "metadata"));
}

json_t *krn_py_is_complete(const char *code) {
    PyObject *res = call_glue("is_complete", "(s)", code);
    return glue_reply(res, json_pack("{s:s}", "status", "unknown"));
}

/* ---- comms: delegated to the glue (share/offload_kernel/comms.py) ---- */

bool krn_py_comm(const krn_msg *msg) {
    json_t *j = json_object();
    json_object_set(j, "header", msg->header);
    json_object_set_new(j, "parent_header", msg->parent ? json_incref(msg->parent) : json_object());
    json_object_set_new(j, "metadata", msg->metadata ? json_incref(msg->metadata) : json_object());
    json_object_set(j, "content", msg->content);
    json_object_set_new(j, "buffers", json_array());
    PyObject *m = krn_pyjson_to_py(j);
    json_decref(j);
    PyObject *r = m ? call_glue("comm_message", "(sO)", msg->msg_type, m) : NULL;
    Py_XDECREF(m);
    if (!r) PyErr_Print();
    bool handled = r == Py_True;
    Py_XDECREF(r);
    return handled;
}

json_t *krn_py_comm_info(const json_t *request) {
    json_t *target = json_object_get(request, "target_name");
    PyObject *r =
        call_glue("comm_info", "(s)", json_is_string(target) ? json_string_value(target) : NULL);
    json_t *comms = r && PyDict_Check(r) ? krn_pyjson(r) : json_object();
    if (!r) PyErr_Print();
    Py_XDECREF(r);
    return comms;
}

/* ---- start-up ---- */

static const char *share_dir(void) {
    const char *env = getenv("OFFLOAD_SHARE_DIR");
    return env && *env ? env : OFFLOAD_PKGDATADIR;
}

static int setup_namespace(void) {
    PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
    if (!main_mod) return -1;
    py.user_ns = PyModule_GetDict(main_mod);
    py.in_list = Py_BuildValue("[s]", "");
    py.out_dict = PyDict_New();
    if (!py.in_list || !py.out_dict || set_user("In", py.in_list) || set_user("Out", py.out_dict) ||
        set_user("_", Py_None) || set_user("__", Py_None) || set_user("___", Py_None) ||
        set_user("_i", PyList_GET_ITEM(py.in_list, 0)))
        return -1;
    return 0;
}

static int setup_sys(void) {
    PyObject *out = krn_pymod_stream(KRN_STDOUT), *err = krn_pymod_stream(KRN_STDERR);
    PyObject *hook = PyCFunction_New(&displayhook_def, NULL);
    int rc = (!out || !err || !hook || PySys_SetObject("stdout", out) ||
              PySys_SetObject("stderr", err) || PySys_SetObject("displayhook", hook))
                 ? -1
                 : 0;
    Py_XDECREF(out);
    Py_XDECREF(err);
    Py_XDECREF(hook);
    if (rc) return -1;
    /* '' first, as in every Python REPL and kernel: modules beside the notebook import. */
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    PyObject *cwd = PyUnicode_FromString("");
    py.share_dir = PyUnicode_FromString(share_dir());
    int bad = !path || !cwd || !py.share_dir || PyList_Insert(path, 0, cwd) ||
              PyList_Append(path, py.share_dir);
    Py_XDECREF(cwd);
    if (bad) return -1;
    PyObject *builtins = PyEval_GetBuiltins();
    py.compile = PyDict_GetItemString(builtins, "compile");
    Py_XINCREF(py.compile);
    PyObject *ast = PyImport_ImportModule("_ast");
    if (!ast || !py.compile) return -1;
    py.ast_expr = PyObject_GetAttrString(ast, "Expr");
    py.ast_module = PyObject_GetAttrString(ast, "Module");
    py.ast_interactive = PyObject_GetAttrString(ast, "Interactive");
    Py_DECREF(ast);
    return py.ast_expr && py.ast_module && py.ast_interactive ? 0 : -1;
}

static void load_glue(void) {
    py.glue = PyImport_ImportModule("offload_kernel");
    PyObject *r = py.glue ? PyObject_CallMethod(py.glue, "install", "O", py.user_ns) : NULL;
    if (!r) {
        krn_log(KRN_LOG_ERROR,
                "offload_kernel glue unavailable (share dir %s): completion, "
                "inspection and display() are degraded",
                share_dir());
        PyErr_Print();
    }
    Py_XDECREF(r);
}

/* Python processes the kernel starts (Dask's workers, multiprocessing's
 * spawn, `!python3 script.py`) import offload as a plain extension module,
 * not the one built into this binary: the kernelspec names its directory
 * (the build tree's python/, or site-packages once installed), and it goes
 * after whatever PYTHONPATH the user has, for the children to inherit. */
static void export_module_dir(void) {
    const char *dir = getenv("OFFLOAD_MODULE_DIR"), *path = getenv("PYTHONPATH");
    if (!dir || !*dir) return;
    if (!path || !*path) {
        setenv("PYTHONPATH", dir, 1);
        return;
    }
    size_t n = strlen(dir);
    for (const char *p = path; p; p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL)
        if (strncmp(p, dir, n) == 0 && (p[n] == ':' || p[n] == '\0')) return;
    char *joined = malloc(strlen(path) + n + 2);
    if (!joined) return;
    sprintf(joined, "%s:%s", path, dir);
    setenv("PYTHONPATH", joined, 1);
    free(joined);
}

int krn_py_init(const krn_io *io, char *err, size_t errlen) {
    py.io = io;
    export_module_dir();
    krn_pymod_set_io(io);
    if (PyImport_AppendInittab("_offload_kernel", krn_pymod_init) ||
        PyImport_AppendInittab("_offload_magics", mag_module_init) ||
        PyImport_AppendInittab("offload", PyInit_offload)) {
        snprintf(err, errlen, "cannot register built-in modules");
        return -1;
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.parse_argv = 0;
    config.install_signal_handlers = 1;
    char *argv[] = {""};
    PyStatus st = PyConfig_SetBytesString(&config, &config.executable, OFFLOAD_PYTHON_EXECUTABLE);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(&config, &config.program_name, OFFLOAD_PYTHON_EXECUTABLE);
    if (!PyStatus_Exception(st)) st = PyConfig_SetBytesArgv(&config, 1, argv);
    if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(err, errlen, "cannot start Python (%s): %s", OFFLOAD_PYTHON_EXECUTABLE,
                 st.err_msg ? st.err_msg : "unknown error");
        return -1;
    }
    if (krn_interrupt_init(err, errlen)) return -1;

    snprintf(py.version, sizeof py.version, "%d.%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION,
             PY_MICRO_VERSION);
    py.sys_version = strdup(Py_GetVersion());
    if (setup_namespace() || setup_sys()) {
        PyErr_Print();
        snprintf(err, errlen, "cannot set up the Python namespace");
        return -1;
    }
    load_glue();
    return 0;
}

void krn_py_finalize(void) {
    Py_CLEAR(py.glue);
    Py_CLEAR(py.compile);
    Py_CLEAR(py.ast_expr);
    Py_CLEAR(py.ast_module);
    Py_CLEAR(py.ast_interactive);
    Py_CLEAR(py.share_dir);
    Py_CLEAR(py.in_list);
    Py_CLEAR(py.out_dict);
    if (Py_FinalizeEx() < 0) krn_log(KRN_LOG_WARN, "Python finalization reported an error");
    free(py.sys_version);
    py.sys_version = NULL;
}
