/* mag_kernels: %kernels, the table of compiled kernels -- one row per
 * specialisation from offload.kernel_table(), shown as one display with an
 * HTML table and the same table as text (what a console or a log shows). */
#include "mag_impl.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { NAME, SIGNATURE, TARGET, CODE, COMPILE, LAUNCHES, DEVICE, MEMORY, DISK, NCOLS };

static const char *const heads[NCOLS] = {"kernel",     "signature",   "target",
                                         "code bytes", "compile ms",  "launches",
                                         "device ms",  "memory hits", "disk hit"};
static const bool numeric[NCOLS] = {
    [CODE] = true, [COMPILE] = true, [LAUNCHES] = true, [DEVICE] = true, [MEMORY] = true};

#define CELL 600 /* a signature is at most 511 bytes */

typedef char row[NCOLS][CELL];

/* 1,234,567 */
static void with_commas(unsigned long long v, char *out, size_t n) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", v), o = 0;
    for (int i = 0; i < len && (size_t)o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

static const char *str_item(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key); /* borrowed */
    const char *s = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!s) PyErr_Clear();
    return s ? s : "?";
}

static unsigned long long int_item(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key);
    unsigned long long x = v && PyLong_Check(v) ? PyLong_AsUnsignedLongLong(v) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        x = 0;
    }
    return x;
}

/* -1 where the key is missing or None */
static double float_item(PyObject *d, const char *key) {
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || v == Py_None) return -1;
    double x = PyFloat_AsDouble(v);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return x;
}

/* A row's cells from one of kernel_table()'s dicts; true when some of its
 * launches went untimed. */
static bool fill_row(PyObject *d, char (*cells)[CELL]) {
    snprintf(cells[NAME], CELL, "%s", str_item(d, "name"));
    snprintf(cells[SIGNATURE], CELL, "%s", str_item(d, "signature"));
    snprintf(cells[TARGET], CELL, "%s", str_item(d, "target"));
    with_commas(int_item(d, "code_size"), cells[CODE], CELL);
    snprintf(cells[COMPILE], CELL, "%.1f", float_item(d, "compile_ms"));
    unsigned long long launches = int_item(d, "launches"), timed = int_item(d, "timed_launches");
    with_commas(launches, cells[LAUNCHES], CELL);
    double ms = float_item(d, "device_ms");
    if (ms < 0)
        snprintf(cells[DEVICE], CELL, "-");
    else if (timed < launches)
        snprintf(cells[DEVICE], CELL, "%.4g (%llu timed)", ms, timed);
    else
        snprintf(cells[DEVICE], CELL, "%.4g", ms);
    with_commas(int_item(d, "memory_hits"), cells[MEMORY], CELL);
    PyObject *disk = PyDict_GetItemString(d, "disk_hit");
    snprintf(cells[DISK], CELL, "%s", disk && PyObject_IsTrue(disk) == 1 ? "yes" : "no");
    PyErr_Clear();
    return timed < launches;
}

/* Columns on a terminal: code points, not bytes. */
static size_t width(const char *s) {
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void put(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s);
    if (!*buf) return;
    if (*len + n + 1 > *cap) {
        size_t c = *cap * 2 > *len + n + 1 ? *cap * 2 : *len + n + 1;
        char *b = realloc(*buf, c);
        if (!b) {
            free(*buf);
            *buf = NULL;
            return;
        }
        *buf = b, *cap = c;
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

static void put_pad(char **buf, size_t *len, size_t *cap, const char *s, size_t w, bool right) {
    size_t have = width(s);
    for (size_t i = have; right && i < w; i++) put(buf, len, cap, " ");
    put(buf, len, cap, s);
    for (size_t i = have; !right && i < w; i++) put(buf, len, cap, " ");
}

static void put_escaped(char **buf, size_t *len, size_t *cap, const char *s) {
    char one[2] = {0};
    for (; *s; s++) {
        switch (*s) {
        case '<': put(buf, len, cap, "&lt;"); break;
        case '>': put(buf, len, cap, "&gt;"); break;
        case '&': put(buf, len, cap, "&amp;"); break;
        case '"': put(buf, len, cap, "&quot;"); break;
        default: one[0] = *s; put(buf, len, cap, one);
        }
    }
}

static const char note[] =
    "device ms: the device time of the launches made under %time, %timeit or an open "
    "offload.DeviceTimer, summed; other launches are not timed.";

/* The text and HTML tables, new strings (NULL without memory). */
static void render(row *rows, size_t n, bool untimed, char **text, char **html) {
    size_t w[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        w[c] = width(heads[c]);
        for (size_t r = 0; r < n; r++) w[c] = width(rows[r][c]) > w[c] ? width(rows[r][c]) : w[c];
    }
    size_t tl = 0, tc = 1024, hl = 0, hc = 1024;
    *text = malloc(tc), *html = malloc(hc);
    if (*text) (*text)[0] = '\0';
    if (*html) (*html)[0] = '\0';
    for (size_t r = 0; r <= n; r++) {
        for (int c = 0; c < NCOLS; c++) {
            put_pad(text, &tl, &tc, r ? rows[r - 1][c] : heads[c], c == NCOLS - 1 ? 0 : w[c],
                    numeric[c]);
            put(text, &tl, &tc, c == NCOLS - 1 ? "\n" : "  ");
        }
    }
    if (untimed) {
        put(text, &tl, &tc, note);
        put(text, &tl, &tc, "\n");
    }
    put(html, &hl, &hc, "<table><thead><tr>");
    for (int c = 0; c < NCOLS; c++) {
        put(html, &hl, &hc, "<th>");
        put(html, &hl, &hc, heads[c]);
        put(html, &hl, &hc, "</th>");
    }
    put(html, &hl, &hc, "</tr></thead><tbody>");
    for (size_t r = 0; r < n; r++) {
        put(html, &hl, &hc, "<tr>");
        for (int c = 0; c < NCOLS; c++) {
            put(html, &hl, &hc,
                c == NAME || c == SIGNATURE ? "<td><code>"
                : numeric[c]                ? "<td style=\"text-align:right\">"
                                            : "<td>");
            put_escaped(html, &hl, &hc, rows[r][c]);
            put(html, &hl, &hc, c == NAME || c == SIGNATURE ? "</code></td>" : "</td>");
        }
        put(html, &hl, &hc, "</tr>");
    }
    put(html, &hl, &hc, "</tbody></table>");
    if (untimed) {
        put(html, &hl, &hc, "<p><small>");
        put_escaped(html, &hl, &hc, note);
        put(html, &hl, &hc, "</small></p>");
    }
}

/* One display_data with both forms; printed where there is no display(). */
static int show(const char *text, const char *html) {
    PyObject *bundle = Py_BuildValue("{s:s,s:s}", "text/plain", text, "text/html", html);
    int rc = bundle ? mag_display(bundle, NULL, false) : -1;
    Py_XDECREF(bundle);
    if (rc == 0) PySys_FormatStdout("%s", text);
    return rc < 0 ? -1 : 0;
}

/* %kernels: every kernel compiled in this process and still alive. */
PyObject *mag_kernels(PyObject *ns, const char *args, const char *body) {
    if (*mag_skip_blank(args))
        return PyErr_Format(mag_UsageError,
                            "%%kernels takes no arguments (it lists every compiled kernel)");
    /* without offload imported nothing was compiled; importing it costs NumPy's import */
    PyObject *ofl = PyDict_GetItemString(PyImport_GetModuleDict(), "offload"); /* borrowed */
    PyObject *table = ofl ? PyObject_CallMethod(ofl, "kernel_table", NULL) : PyList_New(0);
    if (!table) return NULL;
    if (!PyList_Check(table)) {
        Py_DECREF(table);
        return PyErr_Format(PyExc_TypeError, "offload.kernel_table() did not return a list");
    }
    Py_ssize_t n = PyList_GET_SIZE(table);
    if (n == 0) {
        Py_DECREF(table);
        PySys_WriteStdout("No kernels compiled yet in this process.\n");
        Py_RETURN_NONE;
    }
    row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) {
        Py_DECREF(table);
        return PyErr_NoMemory();
    }
    bool untimed = false;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(table, i);
        if (PyDict_Check(d)) untimed |= fill_row(d, rows[i]);
    }
    Py_DECREF(table);
    char *text, *html;
    render(rows, (size_t)n, untimed, &text, &html);
    free(rows);
    int rc = text && html ? show(text, html) : (PyErr_NoMemory(), -1);
    free(text);
    free(html);
    if (rc) return NULL;
    Py_RETURN_NONE;
}
