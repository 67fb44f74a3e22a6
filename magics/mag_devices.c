/* mag_devices: %lsplatform, %devices and %device, thin layers over the
 * offload module (printing goes through the cell's streams; notebooks also
 * get an HTML table). */
#include "mag_impl.h"

#include <stdbool.h>
#include <string.h>

/* offload module, new reference. */
static PyObject *offload_module(void) { return PyImport_ImportModule("offload"); }

/* Outside the kernel (no display) the printed text was enough. */
static int show_html(PyObject *html)
{
    PyObject *bundle = Py_BuildValue("{s:O}", "text/html", html);
    int rc = bundle ? mag_display(bundle, NULL, false) : -1;
    Py_XDECREF(bundle);
    return rc < 0 ? -1 : 0;
}

/* %lsplatform [-v|-vv] */
PyObject *mag_lsplatform(PyObject *ns, const char *args, const char *body)
{
    const char *a = mag_skip_blank(args);
    int verbosity = 0;
    if (strncmp(a, "-vv", 3) == 0)
        verbosity = 2, a += 3;
    else if (strncmp(a, "-v", 2) == 0)
        verbosity = 1, a += 2;
    if (*mag_skip_blank(a))
        return PyErr_Format(mag_UsageError, "usage: %%lsplatform [-v|-vv]");
    PyObject *ofl = offload_module();
    if (!ofl)
        return NULL;
    PyObject *r = PyObject_CallMethod(ofl, "lsplatform", "i", verbosity);
    PyObject *html = r ? PyObject_CallMethod(ofl, "_lsplatform_html", "i", verbosity) : NULL;
    int rc = html ? show_html(html) : -1;
    Py_XDECREF(html);
    Py_XDECREF(r);
    Py_DECREF(ofl);
    if (rc)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *attr_str(PyObject *obj, const char *name)
{
    PyObject *v = PyObject_GetAttrString(obj, name);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    Py_XDECREF(v);
    return s;
}

/* One row of %devices, as text on stdout and as an HTML row appended to html. */
static int device_row(PyObject *dev, PyObject *deflt, PyObject *html)
{
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
        char line[1024];
        snprintf(line, sizeof line, "%s %-16s %6ld %8.1f  %-4s  %s\n", is_default ? "*" : " ", f,
                 units, gib, f64, n);
        PySys_FormatStdout("%s", line);
        snprintf(line, sizeof line,
                 "<tr><td>%s</td><td><code>%s</code></td><td>%ld</td><td>%.1f GiB</td>"
                 "<td>%s</td><td>%s</td></tr>",
                 is_default ? "&#9733;" : "", f, units, gib, f64, n);
        PyObject *row = PyUnicode_FromString(line);
        rc = row ? PyList_Append(html, row) : -1;
        Py_XDECREF(row);
    }
    Py_XDECREF(filter);
    Py_XDECREF(name);
    Py_XDECREF(cus);
    Py_XDECREF(mem);
    Py_XDECREF(fp64);
    return rc;
}

/* %devices: every device with its filter string and key properties; * marks the default. */
PyObject *mag_devices(PyObject *ns, const char *args, const char *body)
{
    PyObject *ofl = offload_module();
    PyObject *devs = ofl ? PyObject_CallMethod(ofl, "get_devices", NULL) : NULL;
    PyObject *html = PyList_New(0);
    PyObject *result = NULL;
    if (!devs || !html)
        goto done;
    if (PyList_GET_SIZE(devs) == 0) { /* lsplatform says why and what to install */
        result = PyObject_CallMethod(ofl, "lsplatform", NULL);
        goto done;
    }
    PyObject *deflt = PyObject_CallMethod(ofl, "default_device", NULL);
    if (!deflt) { /* a bad OFFLOAD_DEVICE is no reason to hide the list */
        PyErr_Clear();
        deflt = Py_NewRef(Py_None);
    }
    PySys_WriteStdout("  %-16s %6s %8s  %-4s  %s\n", "filter", "units", "mem GiB", "fp64", "name");
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(devs); i++)
        rc = device_row(PyList_GET_ITEM(devs, i), deflt, html);
    Py_DECREF(deflt);
    PyObject *sep = rc ? NULL : PyUnicode_FromString("");
    PyObject *rows = sep ? PyUnicode_Join(sep, html) : NULL;
    PyObject *table = rows ? PyUnicode_FromFormat(
        "<table><tr><th>default</th><th>filter</th><th>compute units</th><th>memory</th>"
        "<th>fp64</th><th>name</th></tr>%U</table>", rows) : NULL;
    if (table && show_html(table) == 0)
        result = Py_NewRef(Py_None);
    Py_XDECREF(table);
    Py_XDECREF(rows);
    Py_XDECREF(sep);
done:
    Py_XDECREF(devs);
    Py_XDECREF(html);
    Py_XDECREF(ofl);
    return result;
}

/* %device [FILTER]: show, or set, the session's default device. */
PyObject *mag_device(PyObject *ns, const char *args, const char *body)
{
    PyObject *ofl = offload_module();
    if (!ofl)
        return NULL;
    const char *filter = mag_skip_blank(args);
    PyObject *r = Py_NewRef(Py_None);
    if (*filter) {
        Py_DECREF(r);
        r = PyObject_CallMethod(ofl, "set_default_device", "s", filter);
    }
    PyObject *dev = r ? PyObject_CallMethod(ofl, "default_device", NULL) : NULL;
    PyObject *name = dev ? attr_str(dev, "name") : NULL;
    if (name)
        PySys_FormatStdout("default device: %R  %U\n", dev, name);
    Py_XDECREF(name);
    Py_XDECREF(dev);
    Py_XDECREF(r);
    Py_DECREF(ofl);
    if (!name)
        return NULL;
    Py_RETURN_NONE;
}
