#include "mag_magics.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ---- the cell rewrite ---- */

typedef struct {
    char *s;
    size_t n, cap;
} strbuf;

static void put(strbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown)
            abort(); /* a cell-sized allocation: nothing sensible to do without it */
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void puts_(strbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A Python string literal holding s[0..n). */
static void put_literal(strbuf *b, const char *s, size_t n)
{
    put(b, "'", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '\\' || c == '\'')
            esc[0] = '\\', esc[1] = (char)c, esc[2] = 0;
        else if (c == '\n')
            strcpy(esc, "\\n");
        else if (c == '\r')
            strcpy(esc, "\\r");
        else if (c < 0x20 || c == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", c);
        else
            esc[0] = (char)c, esc[1] = 0;
        puts_(b, esc);
    }
    put(b, "'", 1);
}

static size_t word_len(const char *s)
{
    size_t n = 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_')
        n++;
    return n;
}

static const char *skip_blank(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* `name?`, `name??`, `?name`, `??name` with a dotted name, within s[0..len):
 * a help request. Sets the name's span and the detail level (0 or 1). */
static bool help_span(const char *s, size_t len, const char **name, size_t *n, int *detail)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    size_t pre = 0, post = 0;
    while (pre < len && pre < 2 && s[pre] == '?')
        pre++;
    while (post < len - pre && post < 2 && s[len - 1 - post] == '?')
        post++;
    if ((pre == 0) == (post == 0) || len - pre - post == 0)
        return false;
    *name = s + pre;
    *n = len - pre - post;
    for (size_t i = 0; i < *n; i++) {
        unsigned char c = (unsigned char)(*name)[i];
        if (!(isalnum(c) || c == '_' || c == '.' || c >= 0x80))
            return false;
    }
    *detail = (int)(pre > post ? pre : post) - 1;
    return !isdigit((unsigned char)(*name)[0]) && (*name)[0] != '.';
}

/* A whole cell that is one help request: the help goes to the pager. */
static bool help_request(const char *cell, mag_cell *out)
{
    const char *name;
    size_t n;
    int detail;
    const char *text = cell + strspn(cell, " \t\r\n");
    const char *nl = strchr(text, '\n');
    if (nl && nl[strspn(nl, " \t\r\n")]) /* a second non-blank line: not a lone request */
        return false;
    if (!help_span(text, strlen(text), &name, &n, &detail))
        return false;
    out->kind = MAG_HELP;
    out->text = strndup(name, n);
    out->detail = detail;
    return true;
}

static void call_line(strbuf *b, const char *line, size_t len)
{
    const char *name = line + 1;
    size_t nlen = word_len(name);
    const char *args = skip_blank(name + nlen);
    size_t alen = (size_t)(line + len - args);
    while (alen && (args[alen - 1] == ' ' || args[alen - 1] == '\r'))
        alen--;
    puts_(b, "__import__('_offload_magics').run_line_magic(");
    put_literal(b, name, nlen);
    puts_(b, ", ");
    put_literal(b, args, alen);
    puts_(b, ")");
}

int mag_transform(const char *cell, mag_cell *out)
{
    memset(out, 0, sizeof *out);
    if (!strchr(cell, '%') && !strchr(cell, '?')) { /* the common case: plain Python */
        out->text = strdup(cell);
        return 0;
    }
    if (help_request(cell, out))
        return 0;
    strbuf b = {0};
    out->kind = MAG_CODE;
    if (cell[0] == '%' && cell[1] == '%') {
        const char *nl = strchr(cell, '\n');
        const char *name = cell + 2;
        size_t nlen = word_len(name);
        const char *args = skip_blank(name + nlen);
        size_t alen = nl ? (size_t)(nl - args) : strlen(args);
        const char *body = nl ? nl + 1 : "";
        puts_(&b, "__import__('_offload_magics').run_cell_magic(");
        put_literal(&b, name, nlen);
        puts_(&b, ", ");
        put_literal(&b, args, alen);
        puts_(&b, ", ");
        put_literal(&b, body, strlen(body));
        puts_(&b, ")\n");
        out->text = b.s;
        return 0;
    }
    bool in_triple = false;
    for (const char *line = cell; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *first = skip_blank(line);
        const char *name;
        size_t nlen;
        int detail;
        if (!in_triple && first < line + len && first[0] == '%' &&
            (isalpha((unsigned char)first[1]) || first[1] == '_')) {
            put(&b, line, (size_t)(first - line));
            call_line(&b, first, (size_t)(line + len - first));
        } else if (!in_triple && help_span(first, (size_t)(line + len - first), &name, &nlen, &detail)) {
            put(&b, line, (size_t)(first - line));
            puts_(&b, "__import__('_offload_magics').run_line_magic(");
            puts_(&b, detail ? "'pinfo2', " : "'pinfo', ");
            put_literal(&b, name, nlen);
            puts_(&b, ")");
        } else {
            put(&b, line, len);
        }
        /* Lines inside a triple-quoted string are data, not magics. */
        for (const char *q = line; q + 2 < line + len; q++)
            if ((q[0] == '"' || q[0] == '\'') && q[1] == q[0] && q[2] == q[0]) {
                in_triple = !in_triple;
                q += 2;
            }
        if (!nl)
            break;
        put(&b, "\n", 1);
        line = nl + 1;
    }
    out->text = b.s ? b.s : strdup("");
    return 0;
}

void mag_cell_clear(mag_cell *cell)
{
    free(cell->text);
    cell->text = NULL;
}

/* ---- the magics ---- */

typedef PyObject *(*magic_fn)(PyObject *ns, const char *args, const char *body);

static PyObject *UsageError;

static double now_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 3 significant digits in the best unit, as IPython prints times. */
static void format_time(double s, char *out, size_t n)
{
    static const char *units[] = {"s", "ms", "\xc2\xb5s", "ns"};
    int u = 0;
    while (u < 3 && s < 1.0 && s > 0) {
        s *= 1000;
        u++;
    }
    snprintf(out, n, "%.3g %s", s, units[u]);
}

/* Compile as an expression when possible (its value is the magic's result). */
static PyObject *compile_stmt(const char *code, const char *filename, bool *is_expr)
{
    PyObject *c = Py_CompileString(code, filename, Py_eval_input);
    *is_expr = c != NULL;
    if (!c) {
        PyErr_Clear();
        c = Py_CompileString(code, filename, Py_file_input);
    }
    return c;
}

static PyObject *magic_time(PyObject *ns, const char *args, const char *body)
{
    bool is_expr;
    PyObject *code = compile_stmt(body ? body : args, "<timed>", &is_expr);
    if (!code)
        return NULL;
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double w0 = now_s(CLOCK_MONOTONIC);
    PyObject *res = PyEval_EvalCode(code, ns, ns);
    double wall = now_s(CLOCK_MONOTONIC) - w0;
    getrusage(RUSAGE_SELF, &r1);
    Py_DECREF(code);
    if (!res)
        return NULL;
    double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                  (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6;
    double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    char u[32], s[32], t[32], w[32];
    format_time(user, u, sizeof u);
    format_time(sys, s, sizeof s);
    format_time(user + sys, t, sizeof t);
    format_time(wall, w, sizeof w);
    PySys_WriteStdout("CPU times: user %s, sys: %s, total: %s\nWall time: %s\n", u, s, t, w);
    if (is_expr)
        return res;
    Py_DECREF(res);
    Py_RETURN_NONE;
}

/* Seconds for `loops` runs of code. */
static int time_loops(PyObject *code, PyObject *ns, long loops, double *secs)
{
    double t0 = now_s(CLOCK_MONOTONIC);
    for (long i = 0; i < loops; i++) {
        PyObject *r = PyEval_EvalCode(code, ns, ns);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    *secs = now_s(CLOCK_MONOTONIC) - t0;
    return 0;
}

/* %timeit [-n N] [-r R] stmt : mean ± std of R runs of N loops. */
static PyObject *magic_timeit(PyObject *ns, const char *args, const char *body)
{
    long loops = 0, repeat = 7;
    const char *p = skip_blank(args);
    while (p[0] == '-' && (p[1] == 'n' || p[1] == 'r')) {
        char *end;
        long v = strtol(p + 2, &end, 10);
        if (end == p + 2 || v <= 0)
            return PyErr_Format(UsageError, "%%timeit: -%c needs a positive number", p[1]);
        if (p[1] == 'n')
            loops = v;
        else
            repeat = v;
        p = skip_blank(end);
    }
    const char *stmt = body ? body : p;
    if (!*skip_blank(stmt))
        return PyErr_Format(UsageError, "%%timeit: nothing to time");
    bool is_expr;
    PyObject *code = compile_stmt(stmt, "<timeit>", &is_expr);
    if (!code)
        return NULL;
    double secs = 0;
    int rc = 0;
    if (body && *skip_blank(p)) { /* %%timeit setup-line: the line runs once first */
        PyObject *r = PyRun_String(p, Py_file_input, ns, ns);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    if (rc == 0 && loops == 0) /* as IPython: 1, 2, 5, 10, ... until a run takes 0.2 s */
        for (long base = 1; rc == 0; base *= 10) {
            for (int k = 0; k < 3 && rc == 0; k++) {
                loops = base * (k == 0 ? 1 : k == 1 ? 2 : 5);
                rc = time_loops(code, ns, loops, &secs);
                if (secs >= 0.2)
                    goto calibrated;
            }
        }
calibrated:
    if (rc) {
        Py_DECREF(code);
        return NULL;
    }
    double sum = 0, sumsq = 0;
    for (long i = 0; i < repeat; i++) {
        if (time_loops(code, ns, loops, &secs)) {
            Py_DECREF(code);
            return NULL;
        }
        double per = secs / (double)loops;
        sum += per;
        sumsq += per * per;
    }
    Py_DECREF(code);
    double mean = sum / (double)repeat;
    double var = sumsq / (double)repeat - mean * mean;
    char m[32], sd[32];
    format_time(mean, m, sizeof m);
    format_time(var > 0 ? sqrt(var) : 0, sd, sizeof sd);
    PySys_WriteStdout("%s \xc2\xb1 %s per loop (mean \xc2\xb1 std. dev. of %ld run%s, %ld loop%s each)\n", m,
                      sd, repeat, repeat == 1 ? "" : "s", loops, loops == 1 ? "" : "s");
    Py_RETURN_NONE;
}

static PyObject *magic_lsmagic(PyObject *ns, const char *args, const char *body);

/* %matplotlib [inline]: figures show in the cell (the default here anyway). */
static PyObject *magic_matplotlib(PyObject *ns, const char *args, const char *body)
{
    const char *gui = skip_blank(args);
    size_t n = strlen(gui);
    while (n && isspace((unsigned char)gui[n - 1]))
        n--;
    if (n && !(n == 6 && strncmp(gui, "inline", 6) == 0))
        return PyErr_Format(UsageError, "%%matplotlib %.*s: this kernel shows figures inline only; "
                                        "use %%matplotlib inline", (int)n, gui);
    PyObject *mpl = PyImport_ImportModule("matplotlib");
    PyObject *r = mpl ? PyObject_CallMethod(mpl, "use", "s", "module://offload_kernel.mpl_inline") : NULL;
    Py_XDECREF(mpl);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* %pinfo / %pinfo2 (what `obj?` / `obj??` become inside a longer cell): print the help. */
static PyObject *pinfo(PyObject *ns, const char *expr, int detail)
{
    PyObject *glue = PyImport_ImportModule("offload_kernel");
    PyObject *text = glue ? PyObject_CallMethod(glue, "help_text", "siO", expr, detail, ns) : NULL;
    Py_XDECREF(glue);
    if (!text)
        return NULL;
    if (PyUnicode_Check(text))
        PySys_FormatStdout("%U\n", text);
    else
        PySys_FormatStdout("Object `%s` not found.\n", expr);
    Py_DECREF(text);
    Py_RETURN_NONE;
}

static PyObject *magic_pinfo(PyObject *ns, const char *args, const char *body) { return pinfo(ns, args, 0); }
static PyObject *magic_pinfo2(PyObject *ns, const char *args, const char *body) { return pinfo(ns, args, 1); }

static const struct magic {
    const char *name;
    bool line, cell;
    magic_fn fn;
    const char *help;
} magics[] = {
    {"lsmagic", true, false, magic_lsmagic, "list the magics"},
    {"matplotlib", true, false, magic_matplotlib, "show matplotlib figures inline (the default)"},
    {"pinfo", true, false, magic_pinfo, "help on an object (what obj? runs)"},
    {"pinfo2", true, false, magic_pinfo2, "help with source (what obj?? runs)"},
    {"time", true, true, magic_time, "run once and print CPU and wall time"},
    {"timeit", true, true, magic_timeit, "time many runs: mean \xc2\xb1 std (-n loops, -r runs)"},
};
#define NMAGICS (sizeof magics / sizeof magics[0])

static PyObject *magic_lsmagic(PyObject *ns, const char *args, const char *body)
{
    PySys_WriteStdout("Available line magics:\n");
    for (size_t i = 0; i < NMAGICS; i++)
        if (magics[i].line)
            PySys_WriteStdout("  %%%-10s %s\n", magics[i].name, magics[i].help);
    PySys_WriteStdout("\nAvailable cell magics:\n");
    for (size_t i = 0; i < NMAGICS; i++)
        if (magics[i].cell)
            PySys_WriteStdout("  %%%%%-9s %s\n", magics[i].name, magics[i].help);
    PySys_WriteStdout("\nHelp on any object: obj? (obj?? adds its source).\n");
    Py_RETURN_NONE;
}

const char *const *mag_names(void)
{
    static const char *names[NMAGICS + 1];
    for (size_t i = 0; i < NMAGICS; i++)
        names[i] = magics[i].name;
    return names;
}

static PyObject *unknown_magic(const char *name, bool cell)
{
    char known[512] = "";
    size_t n = 0;
    for (size_t i = 0; i < NMAGICS && n < sizeof known - 32; i++)
        if (cell ? magics[i].cell : magics[i].line)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s%s", n ? ", " : "",
                                  cell ? "%%" : "%", magics[i].name);
    return PyErr_Format(UsageError, "%s magic function `%s%s` not found. Known %s magics: %s",
                        cell ? "Cell" : "Line", cell ? "%%" : "%", name, cell ? "cell" : "line", known);
}

static PyObject *run_magic(PyObject *args, bool cell)
{
    const char *name, *line, *body = NULL;
    if (cell ? !PyArg_ParseTuple(args, "sss", &name, &line, &body)
             : !PyArg_ParseTuple(args, "ss", &name, &line))
        return NULL;
    PyObject *main_mod = PyImport_AddModule("__main__");
    PyObject *ns = main_mod ? PyModule_GetDict(main_mod) : NULL;
    if (!ns)
        return NULL;
    for (size_t i = 0; i < NMAGICS; i++)
        if (strcmp(magics[i].name, name) == 0 && (cell ? magics[i].cell : magics[i].line))
            return magics[i].fn(ns, line, body);
    return unknown_magic(name, cell);
}

static PyObject *run_line_magic(PyObject *self, PyObject *args) { return run_magic(args, false); }
static PyObject *run_cell_magic(PyObject *self, PyObject *args) { return run_magic(args, true); }

static PyMethodDef methods[] = {
    {"run_line_magic", run_line_magic, METH_VARARGS, "run_line_magic(name, line)"},
    {"run_cell_magic", run_cell_magic, METH_VARARGS, "run_cell_magic(name, line, body)"},
    {NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_offload_magics",
    .m_doc = "Magics of the offload kernel.",
    .m_size = -1,
    .m_methods = methods,
};

int mag_is_usage_error(PyObject *exc) { return UsageError && PyObject_TypeCheck(exc, (PyTypeObject *)UsageError); }

PyObject *mag_module_init(void)
{
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    UsageError = PyErr_NewExceptionWithDoc("_offload_magics.UsageError",
                                           "A magic was misused or does not exist.",
                                           PyExc_Exception, NULL);
    if (!UsageError || PyModule_AddObjectRef(m, "UsageError", UsageError)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
