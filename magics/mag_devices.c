/* mag_devices: %lsplatform, %devices and %device, thin layers over the
 * offload module. A listing is one display (text/plain and text/html
 * together), so a notebook shows it once and a console reads the text. */
#include "mag_impl.h"

#include <stdbool.h>
#include <string.h>

/* offload module, new reference. */
static PyObject *offload_module(void) { return PyImport_ImportModule("offload"); }

/* Outside the kernel (no display()) the text is printed instead. */
static int show(PyObject *bundle) {
    int rc = mag_display(bundle, NULL, false);
    if (rc != 0) return rc < 0 ? -1 : 0;
    PyObject *text = PyDict_GetItemString(bundle, "text/plain"); /* borrowed */
    if (text) PySys_FormatStdout("%U", text);
    return 0;
}

/* %lsplatform [-v|-vv] */
PyObject *mag_lsplatform(PyObject *ns, const char *args, const char *body) {
    const char *a = mag_skip_blank(args);
    int verbosity = 0;
    if (strncmp(a, "-vv", 3) == 0)
        verbosity = 2, a += 3;
    else if (strncmp(a, "-v", 2) == 0)
        verbosity = 1, a += 2;
    if (*mag_skip_blank(a)) return PyErr_Format(mag_UsageError, "usage: %%lsplatform [-v|-vv]");
    PyObject *ofl = offload_module();
    if (!ofl) return NULL;
    PyObject *bundle = PyObject_CallMethod(ofl, "_lsplatform_bundle", "i", verbosity);
    int rc = bundle ? show(bundle) : -1;
    Py_XDECREF(bundle);
    Py_DECREF(ofl);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *attr_str(PyObject *obj, const char *name) {
    PyObject *v = PyObject_GetAttrString(obj, name);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    Py_XDECREF(v);
    return s;
}

static int append(PyObject *list, const char *s) {
    PyObject *piece = PyUnicode_FromString(s);
    int rc = piece ? PyList_Append(list, piece) : -1;
    Py_XDECREF(piece);
    return rc;
}

/* Names and filters come from drivers; markup in them must stay text. */
static void escape(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; *s && k + 6 < n; s++) {
        const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : NULL;
        if (e)
            k += (size_t)snprintf(out + k, n - k, "%s", e);
        else
            out[k++] = *s;
    }
    out[k] = '\0';
}

/* One row of %devices, appended to text and to html. */
static int device_row(PyObject *dev, PyObject *deflt, PyObject *text, PyObject *html) {
    PyObject *filter = attr_str(dev, "filter_string"), *name = attr_str(dev, "name");
    PyObject *cus = PyObject_GetAttrString(dev, "max_compute_units");
    PyObject *mem = PyObject_GetAttrString(dev, "global_mem_size");
    PyObject *fp64 = PyObject_GetAttrString(dev, "has_fp64");
    const char *f = filter ? PyUnicode_AsUTF8(filter) : NULL;
    const char *n = name ? PyUnicode_AsUTF8(name) : NULL;
    int rc = -1;
    if (f && n && cus && mem && fp64) {
        bool is_default = PyObject_RichCompareBool(dev, deflt, Py_EQ) == 1;
        double gib = PyLong_AsDouble(mem) / (1024.0 * 1024 * 1024);
        long units = PyLong_AsLong(cus);
        const char *f64 = PyObject_IsTrue(fp64) ? "yes" : "no";
        char line[1024], ef[256], en[512];
        snprintf(line, sizeof line, "%s %-16s %6ld %8.1f  %-4s  %s\n", is_default ? "*" : " ", f,
                 units, gib, f64, n);
        rc = append(text, line);
        escape(f, ef, sizeof ef);
        escape(n, en, sizeof en);
        snprintf(line, sizeof line,
                 "<tr><td>%s</td><td style=\"white-space:nowrap\"><code>%s</code></td><td>%ld</td>"
                 "<td style=\"white-space:nowrap\">%.1f GiB</td><td>%s</td>"
                 "<td style=\"text-align:left\">%s</td></tr>",
                 is_default ? "&#9733;" : "", ef, units, gib, f64, en);
        rc = rc ? rc : append(html, line);
    }
    Py_XDECREF(filter);
    Py_XDECREF(name);
    Py_XDECREF(cus);
    Py_XDECREF(mem);
    Py_XDECREF(fp64);
    return rc;
}

static PyObject *joined(PyObject *list) {
    PyObject *sep = PyUnicode_FromString("");
    PyObject *s = sep ? PyUnicode_Join(sep, list) : NULL;
    Py_XDECREF(sep);
    return s;
}

/* %devices: every device with its filter string and key properties; * marks the default. */
PyObject *mag_devices(PyObject *ns, const char *args, const char *body) {
    PyObject *ofl = offload_module();
    PyObject *devs = ofl ? PyObject_CallMethod(ofl, "get_devices", NULL) : NULL;
    PyObject *text = PyList_New(0), *html = PyList_New(0), *bundle = NULL;
    int rc = -1;
    if (!devs || !text || !html) goto done;
    if (PyList_GET_SIZE(devs) == 0) { /* lsplatform says why and what to install */
        bundle = PyObject_CallMethod(ofl, "_lsplatform_bundle", NULL);
        rc = bundle ? show(bundle) : -1;
        goto done;
    }
    PyObject *deflt = PyObject_CallMethod(ofl, "default_device", NULL);
    if (!deflt) { /* a bad OFFLOAD_DEVICE is no reason to hide the list */
        PyErr_Clear();
        deflt = Py_NewRef(Py_None);
    }
    char head[256];
    snprintf(head, sizeof head, "  %-16s %6s %8s  %-4s  %s\n", "filter", "units", "mem GiB", "fp64",
             "name");
    rc = append(text, head);
    rc = rc ? rc
            : append(html, "<table><thead><tr><th>default</th><th>filter</th><th>compute units</th>"
                           "<th>memory</th><th>fp64</th><th style=\"text-align:left\">name</th>"
                           "</tr></thead><tbody>");
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(devs); i++)
        rc = device_row(PyList_GET_ITEM(devs, i), deflt, text, html);
    Py_DECREF(deflt);
    rc = rc ? rc : append(html, "</tbody></table>");
    PyObject *t = rc ? NULL : joined(text), *h = t ? joined(html) : NULL;
    bundle = h ? Py_BuildValue("{s:N,s:N}", "text/plain", t, "text/html", h) : NULL;
    if (!bundle) {
        Py_XDECREF(t);
        Py_XDECREF(h);
    }
    rc = bundle ? show(bundle) : -1;
done:
    Py_XDECREF(bundle);
    Py_XDECREF(devs);
    Py_XDECREF(text);
    Py_XDECREF(html);
    Py_XDECREF(ofl);
    return rc ? NULL : Py_NewRef(Py_None);
}

/* %device [FILTER]: show, or set, the session's default device. */
PyObject *mag_device(PyObject *ns, const char *args, const char *body) {
    PyObject *ofl = offload_module();
    if (!ofl) return NULL;
    const char *filter = mag_skip_blank(args);
    PyObject *r = Py_NewRef(Py_None);
    if (*filter) {
        Py_DECREF(r);
        r = PyObject_CallMethod(ofl, "set_default_device", "s", filter);
    }
    PyObject *dev = r ? PyObject_CallMethod(ofl, "default_device", NULL) : NULL;
    PyObject *name = dev ? attr_str(dev, "name") : NULL;
    if (name) PySys_FormatStdout("default device: %R  %U\n", dev, name);
    Py_XDECREF(name);
    Py_XDECREF(dev);
    Py_XDECREF(r);
    Py_DECREF(ofl);
    if (!name) return NULL;
    Py_RETURN_NONE;
}
