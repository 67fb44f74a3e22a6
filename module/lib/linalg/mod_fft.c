/* mod_fft: offload.fft, the array API 2024.12 FFT extension (issue 23) -- a
 * submodule that mod_fft_add_module makes (called from mod_lib_add_functions).
 *
 * The transforms (the table TRANSFORMS, one dispatcher) run where the array
 * lives: on CPU devices whose memory the host addresses, NumPy's pocketfft
 * (numpy.fft, which keeps float32 and complex64 in NumPy 2) on a host copy,
 * the result copied back (mod_la_host_call, shared with mod_la.c); on CUDA
 * devices cuFFT through mod_la_vendor_fft (mod_vendor_fft), which transforms
 * the last 1-3 dimensions of a C-contiguous array: the axes are moved last,
 * the input padded or cut to n or s, C2C transforms done in chunks of three
 * axes and a real transform's own axis alone, the scale of norm applied by
 * multiplying, and the axes moved back (vendor_transform; tests/test_fft.py
 * runs it on CPU devices with NumPy standing in for cuFFT, see mod_la_path);
 * other devices get a NotImplementedError. fftfreq, rfftfreq, fftshift and
 * ifftshift are plain array work (arange, concat, roll) on any device.
 *
 * Input dtypes follow the standard where NumPy is laxer: integer and boolean
 * arrays are a TypeError (never float64 behind the user's back); complex
 * transforms take real floating-point input as NumPy does (float32 becomes
 * complex64); rfft, rfftn and ihfft take real input only. */
#include "lib/linalg/mod_linalg.h"
#include "lib/elementwise/mod_elementwise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    PyMethodDef def; /* name, doc; the function is fft_dispatch */
    bool nd;         /* takes s and axes, not n and axis */
    char kind;       /* 'c' C2C, 'r' real to complex (rfft), 'i' complex to real (irfft) */
    bool inverse;
    bool hermitian; /* hfft: irfft of the conjugate; ihfft: the conjugate of rfft */
} fft_fn;

static PyObject *fft_dispatch(PyObject *self, PyObject *args, PyObject *kw);
#define FFT(name, sig, doc)                                                                        \
    { name, MOD_KWFUNC(fft_dispatch), name sig "\n--\n\n" doc }
#define ONE "(x, /, *, n=None, axis=-1, norm='backward')"
#define ND "(x, /, *, s=None, axes=None, norm='backward')"

static fft_fn TRANSFORMS[] = {
    {FFT("fft", ONE, "The discrete Fourier transform along axis, x padded or cut to n."), false,
     'c', false, false},
    {FFT("ifft", ONE, "The inverse of fft."), false, 'c', true, false},
    {FFT("fftn", ND, "The n-dimensional discrete Fourier transform over axes, sizes s."), true, 'c',
     false, false},
    {FFT("ifftn", ND, "The inverse of fftn."), true, 'c', true, false},
    {FFT("rfft", ONE, "The transform of a real x: the n // 2 + 1 non-negative frequencies."), false,
     'r', false, false},
    {FFT("irfft", ONE, "The inverse of rfft: a real result of n (default 2 * (m - 1))."), false,
     'i', true, false},
    {FFT("rfftn", ND, "rfft over the last of axes, fft over the others."), true, 'r', false, false},
    {FFT("irfftn", ND, "The inverse of rfftn."), true, 'i', true, false},
    {FFT("hfft", ONE, "The transform of a Hermitian-symmetric signal (its first half): real."),
     false, 'i', false, true},
    {FFT("ihfft", ONE, "The inverse of hfft."), false, 'r', true, true},
};

/* ---- the vendor path: cuFFT over the last dimensions ---- */

typedef struct {
    int nd, naxes;
    int axes[MOD_MAXDIMS];
    Py_ssize_t s[MOD_MAXDIMS]; /* the logical sizes (a real transform's: its real side) */
    double scale;              /* applied to the unnormalised result */
} fft_plan;

static PyObject *int_tuple_of(int n, const int *v) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *o = PyLong_FromLong(v[i]);
        if (!o)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

/* x with axis padded with zeros or cut to m elements (x: a new reference, stolen) */
static PyObject *resize(PyObject *x, int axis, Py_ssize_t m) {
    mod_array *a = (mod_array *)x;
    Py_ssize_t have = a->shape[axis];
    if (have == m) return x;
    PyObject *key = PyTuple_New(a->nd), *stop = PyLong_FromSsize_t(m < have ? m : have);
    PyObject *r = NULL;
    for (int d = 0; key && stop && d < a->nd; d++) {
        PyObject *sl = PySlice_New(NULL, d == axis ? stop : NULL, NULL);
        if (!sl)
            Py_CLEAR(key);
        else
            PyTuple_SET_ITEM(key, d, sl);
    }
    Py_XDECREF(stop);
    if (key && m < have) {
        r = PyObject_GetItem(x, key);
    } else if (key) {
        Py_ssize_t shape[MOD_MAXDIMS];
        memcpy(shape, a->shape, sizeof(Py_ssize_t) * a->nd);
        shape[axis] = m;
        r = mod_kit_call("zeros", Py_BuildValue("(N)", mod_int_tuple(a->nd, shape)),
                         Py_BuildValue("{s:O,s:N}", "dtype", a->dtype, "device",
                                       mod_device_new(mod_array_device(a))));
        if (r && PyObject_SetItem(r, key, x) < 0) Py_CLEAR(r);
    }
    Py_XDECREF(key);
    Py_DECREF(x);
    return r;
}

static Py_ssize_t elements(PyObject *x) {
    mod_array *a = (mod_array *)x;
    Py_ssize_t n = 1;
    for (int d = 0; d < a->nd; d++) n *= a->shape[d];
    return n;
}

/* What a transform of no elements gives (cuFFT takes no empty batch): zeros
 * of the result's shape and dtype */
static PyObject *nothing(PyObject *x, int kind, Py_ssize_t last_n) {
    mod_array *a = (mod_array *)x;
    Py_ssize_t shape[MOD_MAXDIMS];
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * a->nd);
    const char *dtype = mod_dtype_name(a->dtype);
    if (kind == MOD_FFT_R2C) {
        shape[a->nd - 1] = shape[a->nd - 1] / 2 + 1;
        dtype = a->itemsize == 4 ? "complex64" : "complex128";
    } else if (kind == MOD_FFT_C2R) {
        shape[a->nd - 1] = last_n;
        dtype = a->itemsize == 8 ? "float32" : "float64";
    }
    return mod_kit_call(
        "zeros", Py_BuildValue("(N)", mod_int_tuple(a->nd, shape)),
        Py_BuildValue("{s:s,s:N}", "dtype", dtype, "device", mod_device_new(mod_array_device(a))));
}

/* mod_vendor_fft over the given axes of x (stolen), moved last and back */
static PyObject *vendor_over(PyObject *x, int k, const int *axes, int kind, bool inverse,
                             Py_ssize_t last_n) {
    int nd = ((mod_array *)x)->nd, last[3];
    for (int i = 0; i < k; i++) last[i] = nd - k + i;
    PyObject *src = int_tuple_of(k, axes), *dst = int_tuple_of(k, last);
    PyObject *moved =
        src && dst ? mod_kit_call("moveaxis", PyTuple_Pack(3, x, src, dst), NULL) : NULL;
    /* mod_vendor_fft copies a view it cannot read in place (and what C2R consumes) */
    PyObject *t = !moved ? NULL
                  : elements(moved)
                      ? mod_la_vendor_fft((mod_array *)moved, k, kind, inverse, last_n)
                      : nothing(moved, kind, last_n);
    PyObject *r = t ? mod_kit_call("moveaxis", PyTuple_Pack(3, t, dst, src), NULL) : NULL;
    Py_XDECREF(src);
    Py_XDECREF(dst);
    Py_XDECREF(moved);
    Py_XDECREF(t);
    Py_DECREF(x);
    return r;
}

/* C2C over axes (x stolen), three at a time: the transform is separable */
static PyObject *c2c(PyObject *x, int n, const int *axes, bool inverse) {
    for (int i = 0; x && i < n; i += 3)
        x = vendor_over(x, n - i < 3 ? n - i : 3, axes + i, MOD_FFT_C2C, inverse, 0);
    return x;
}

static PyObject *scaled(PyObject *x, double scale) { /* x stolen */
    if (!x || scale == 1.0) return x;
    PyObject *f = PyFloat_FromDouble(scale);
    PyObject *r = f ? PyNumber_Multiply(x, f) : NULL;
    Py_XDECREF(f);
    Py_DECREF(x);
    return r;
}

/* The transform from mod_la_vendor_fft's (cuFFT's) pieces. x is a new reference, stolen. */
static PyObject *vendor_transform(const fft_fn *f, PyObject *x, const fft_plan *p) {
    int k = p->naxes, lastaxis = p->axes[k - 1];
    if (f->kind == 'c') {
        for (int i = 0; x && i < k; i++) x = resize(x, p->axes[i], p->s[i]);
        return scaled(x ? c2c(x, k, p->axes, f->inverse) : NULL, p->scale);
    }
    if (f->kind == 'r') { /* R2C along the last axis, then C2C over the others */
        for (int i = 0; x && i < k; i++) x = resize(x, p->axes[i], p->s[i]);
        if (x) x = vendor_over(x, 1, &lastaxis, MOD_FFT_R2C, false, 0);
        return scaled(x ? c2c(x, k - 1, p->axes, false) : NULL, p->scale);
    }
    /* C2R: C2C (inverse) over all but the last axis, then C2R along it */
    for (int i = 0; x && i < k - 1; i++) x = resize(x, p->axes[i], p->s[i]);
    if (x) x = c2c(x, k - 1, p->axes, true);
    if (x) x = resize(x, lastaxis, p->s[k - 1] / 2 + 1);
    if (x) x = vendor_over(x, 1, &lastaxis, MOD_FFT_C2R, true, p->s[k - 1]);
    return scaled(x, p->scale);
}

/* axes, sizes and scale as NumPy reads n/axis or s/axes and norm; 0 or -1 */
static int make_plan(const fft_fn *f, const mod_array *a, PyObject *kw, fft_plan *p) {
    PyObject *s_o = kw ? PyDict_GetItemString(kw, f->nd ? "s" : "n") : NULL;
    PyObject *ax_o = kw ? PyDict_GetItemString(kw, f->nd ? "axes" : "axis") : NULL;
    PyObject *norm = kw ? PyDict_GetItemString(kw, "norm") : NULL; /* all borrowed */
    if (s_o == Py_None) s_o = NULL;
    if (ax_o == Py_None) ax_o = NULL;
    const char *fn = f->def.ml_name;
    p->nd = a->nd;
    PyObject *s_fast = NULL, *ax_fast = NULL;
    if (f->nd && s_o && !(s_fast = PySequence_Fast(s_o, "fft: s is a sequence of ints"))) return -1;
    if (f->nd && ax_o && !(ax_fast = PySequence_Fast(ax_o, "fft: axes is a sequence of ints"))) {
        Py_XDECREF(s_fast);
        return -1;
    }
    int rc = 0;
    if (!f->nd) {
        p->naxes = 1;
        rc = ax_o ? mod_kit_axis(ax_o, a->nd, NULL, &p->axes[0]) : 0;
        if (!ax_o) p->axes[0] = a->nd - 1;
    } else if (ax_fast) {
        p->naxes = (int)PySequence_Fast_GET_SIZE(ax_fast);
        for (int i = 0; rc == 0 && i < p->naxes && i < MOD_MAXDIMS; i++)
            rc = mod_kit_axis(PySequence_Fast_GET_ITEM(ax_fast, i), a->nd, NULL, &p->axes[i]);
    } else { /* all axes, or the last len(s) */
        p->naxes = s_fast ? (int)PySequence_Fast_GET_SIZE(s_fast) : a->nd;
        for (int i = 0; i < p->naxes; i++) p->axes[i] = a->nd - p->naxes + i;
    }
    if (rc == 0 && s_fast && PySequence_Fast_GET_SIZE(s_fast) != p->naxes) {
        PyErr_SetString(PyExc_ValueError, "Shape and axes have different lengths.");
        rc = -1;
    } else if (rc == 0 && (p->naxes < 1 || p->naxes > a->nd)) {
        PyErr_Format(PyExc_ValueError, "%s: %d axes for an array of %d dimensions", fn, p->naxes,
                     a->nd);
        rc = -1;
    }
    double n_total = 1;
    for (int i = 0; rc == 0 && i < p->naxes; i++) {
        Py_ssize_t m = a->shape[p->axes[i]];
        bool last = i == p->naxes - 1;
        PyObject *given = !f->nd ? s_o : s_fast ? PySequence_Fast_GET_ITEM(s_fast, i) : NULL;
        if (given && given != Py_None) {
            m = PyNumber_AsSsize_t(given, PyExc_OverflowError);
            if (m == -1 && PyErr_Occurred()) rc = -1;
        } else if (last && f->kind == 'i') {
            m = 2 * (m - 1);
        }
        if (rc == 0 && m < 1) {
            PyErr_Format(PyExc_ValueError, "Invalid number of FFT data points (%zd) specified.", m);
            rc = -1;
        }
        p->s[i] = m;
        n_total *= (double)m;
    }
    Py_XDECREF(s_fast);
    Py_XDECREF(ax_fast);
    if (rc < 0) return -1;
    /* the transform's own direction: hfft (made of irfft) scales as a forward one */
    bool inverse = f->inverse;
    if (!norm || !PyUnicode_CompareWithASCIIString(norm, "backward"))
        p->scale = inverse ? 1.0 / n_total : 1.0;
    else if (!PyUnicode_CompareWithASCIIString(norm, "ortho"))
        p->scale = 1.0 / sqrt(n_total);
    else if (!PyUnicode_CompareWithASCIIString(norm, "forward"))
        p->scale = inverse ? 1.0 : 1.0 / n_total;
    else {
        PyErr_Format(PyExc_ValueError,
                     "Invalid norm value %R; should be \"backward\", \"ortho\" or \"forward\".",
                     norm);
        return -1;
    }
    return 0;
}

static PyObject *vendor_fft(const fft_fn *f, mod_array *a, const fft_plan *p) {
    PyObject *x = Py_NewRef((PyObject *)a);
    if (f->kind != 'r' && mod_dtype_name(a->dtype)[0] != 'c') { /* real into a complex transform */
        PyObject *name = PyUnicode_FromString(a->itemsize == 4 ? "complex64" : "complex128");
        PyObject *dt = name ? mod_dtype_new(name) : NULL;
        Py_SETREF(x, dt ? mod_ops_copy(a, dt) : NULL);
        Py_XDECREF(name);
        Py_XDECREF(dt);
    }
    if (x && f->hermitian && f->kind == 'i')
        Py_SETREF(x, mod_kit_call("conj", PyTuple_Pack(1, x), NULL));
    PyObject *r = x ? vendor_transform(f, x, p) : NULL;
    if (r && f->hermitian && f->kind == 'r') {
        PyObject *cr = mod_kit_call("conj", PyTuple_Pack(1, r), NULL);
        Py_SETREF(r, cr);
    }
    return r;
}

static PyObject *fft_dispatch(PyObject *self, PyObject *args, PyObject *kw) {
    const fft_fn *f = PyCapsule_GetPointer(self, "offload.fft");
    if (!f) return NULL;
    const char *name = f->def.ml_name;
    char fn[32];
    snprintf(fn, sizeof fn, "fft.%s", name);
    if (PyTuple_GET_SIZE(args) != 1)
        return PyErr_Format(PyExc_TypeError, "%s() takes 1 positional argument but %zd were given",
                            name, PyTuple_GET_SIZE(args));
    const char *known[3] = {f->nd ? "s" : "n", f->nd ? "axes" : "axis", "norm"};
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (kw && PyDict_Next(kw, &pos, &key, &value)) {
        bool ok = false;
        for (int i = 0; i < 3; i++) ok |= PyUnicode_CompareWithASCIIString(key, known[i]) == 0;
        if (!ok)
            return PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%S'",
                                name, key);
    }
    mod_array *a = mod_kit_array_arg(PyTuple_GET_ITEM(args, 0), fn);
    if (!a) return NULL;
    const char *dt = mod_dtype_name(a->dtype);
    bool real = !strncmp(dt, "float", 5), complex = dt[0] == 'c';
    if (!real && !complex)
        return PyErr_Format(PyExc_TypeError,
                            "offload.%s needs a floating-point array, not %s: convert it with "
                            "offload.astype",
                            fn, dt);
    if (f->kind == 'r' && complex)
        return PyErr_Format(PyExc_TypeError, "offload.%s needs a real floating-point array, not %s",
                            fn, dt);
    if (a->nd == 0)
        return PyErr_Format(PyExc_ValueError,
                            "offload.%s needs an array of one or more "
                            "dimensions, not a 0-d array",
                            fn);
    /* read on every path, so that each raises the same errors for the same arguments */
    fft_plan p;
    if (make_plan(f, a, kw, &p) < 0) return NULL;
    ofl_device *dev = mod_array_device(a);
    switch (mod_la_path(dev, fn)) {
    case MOD_LA_HOST: return mod_la_host_call(dev, "numpy.fft", name, args, kw);
    case MOD_LA_VENDOR: return vendor_fft(f, a, &p);
    default: return NULL;
    }
}

/* ---- plain array work ---- */

/* the sample frequencies, k / (d * n) for k in [0, m) (and [-(n // 2), 0) for fftfreq) */
static PyObject *freq(PyObject *args, PyObject *kw, bool real) {
    static char *kwlist[] = {"", "d", "dtype", "device", NULL};
    Py_ssize_t n;
    double d = 1.0;
    PyObject *dtype_o = Py_None, *device_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, real ? "n|$dOO:rfftfreq" : "n|$dOO:fftfreq", kwlist,
                                     &n, &d, &dtype_o, &device_o))
        return NULL;
    if (n < 1) return PyErr_Format(PyExc_ValueError, "fftfreq: n must be positive, not %zd", n);
    ofl_device *dev;
    if (mod_device_resolve(device_o, &dev) < 0) return NULL;
    PyObject *dtype =
        dtype_o == Py_None
            ? Py_XNewRef(mod_dtype_find_borrowed('f', ofl_device_get_info(dev)->has_fp64 ? 8 : 4))
            : mod_dtype_new(dtype_o);
    if (!dtype) return NULL;
    if (strncmp(mod_dtype_name(dtype), "float", 5)) {
        PyErr_Format(PyExc_ValueError, "fftfreq: dtype must be a real floating-point type, not %s",
                     mod_dtype_name(dtype));
        Py_DECREF(dtype);
        return NULL;
    }
    PyObject *device = mod_device_new(dev), *parts[2] = {NULL, NULL}, *k = NULL;
    Py_ssize_t bounds[2][2] = {{0, real ? n / 2 + 1 : (n - 1) / 2 + 1}, {-(n / 2), 0}};
    int nparts = real || n / 2 == 0 ? 1 : 2;
    for (int i = 0; device && i < nparts; i++)
        if (!(parts[i] =
                  mod_kit_call("arange", Py_BuildValue("(nn)", bounds[i][0], bounds[i][1]),
                               Py_BuildValue("{s:O,s:O}", "dtype", dtype, "device", device))))
            goto out;
    k = nparts == 1 ? Py_NewRef(parts[0])
                    : mod_kit_call("concat", Py_BuildValue("([OO])", parts[0], parts[1]), NULL);
out:
    Py_XDECREF(device);
    Py_XDECREF(parts[0]);
    Py_XDECREF(parts[1]);
    Py_DECREF(dtype);
    return k ? scaled(k, 1.0 / ((double)n * d)) : NULL;
}

static PyObject *f_fftfreq(PyObject *self, PyObject *args, PyObject *kw) {
    return freq(args, kw, false);
}
static PyObject *f_rfftfreq(PyObject *self, PyObject *args, PyObject *kw) {
    return freq(args, kw, true);
}

/* roll by half of each axis: fftshift moves the zero frequency to the
 * middle (d // 2 forward), ifftshift undoes it (d // 2 back). */
static PyObject *shift(PyObject *args, PyObject *kw, bool inverse) {
    static char *kwlist[] = {"", "axes", NULL};
    PyObject *x, *axes_o = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, inverse ? "O|$O:ifftshift" : "O|$O:fftshift", kwlist,
                                     &x, &axes_o))
        return NULL;
    const char *fn = inverse ? "fft.ifftshift" : "fft.fftshift";
    mod_array *a = mod_kit_array_arg(x, fn);
    if (!a) return NULL;
    int axes[MOD_MAXDIMS], n = 0;
    if (axes_o == Py_None) {
        for (n = 0; n < a->nd; n++) axes[n] = n;
    } else if (PyIndex_Check(axes_o)) {
        if (mod_kit_axis(axes_o, a->nd, NULL, &axes[0]) < 0) return NULL;
        n = 1;
    } else {
        PyObject *fast = PySequence_Fast(axes_o, "fftshift: axes is an int or a sequence of ints");
        if (!fast) return NULL;
        n = (int)PySequence_Fast_GET_SIZE(fast);
        int rc = n > MOD_MAXDIMS ? -1 : 0;
        if (rc) PyErr_SetString(PyExc_ValueError, "fftshift: too many axes");
        for (int i = 0; rc == 0 && i < n; i++)
            rc = mod_kit_axis(PySequence_Fast_GET_ITEM(fast, i), a->nd, NULL, &axes[i]);
        Py_DECREF(fast);
        if (rc < 0) return NULL;
    }
    if (n == 0) return mod_ops_copy(a, NULL);
    PyObject *shifts = PyTuple_New(n), *axt = int_tuple_of(n, axes);
    for (int i = 0; shifts && i < n; i++) {
        Py_ssize_t h = a->shape[axes[i]] / 2;
        PyObject *o = PyLong_FromSsize_t(inverse ? -h : h);
        if (!o)
            Py_CLEAR(shifts);
        else
            PyTuple_SET_ITEM(shifts, i, o);
    }
    if (!shifts || !axt) {
        Py_XDECREF(shifts);
        Py_XDECREF(axt);
        return NULL;
    }
    return mod_kit_call("roll", Py_BuildValue("(ON)", x, shifts),
                        Py_BuildValue("{s:N}", "axis", axt));
}

static PyObject *f_fftshift(PyObject *self, PyObject *args, PyObject *kw) {
    return shift(args, kw, false);
}
static PyObject *f_ifftshift(PyObject *self, PyObject *args, PyObject *kw) {
    return shift(args, kw, true);
}

static PyMethodDef functions[] = {
    {"fftfreq", MOD_KWFUNC(f_fftfreq),
     "fftfreq(n, /, *, d=1.0, dtype=None, device=None)\n--\n\n"
     "The sample frequencies of fft's result for n samples spaced d apart: [0, 1, ..., "
     "-(n // 2), ..., -1] / (d * n), on device in dtype (None: the device's default float)."},
    {"rfftfreq", MOD_KWFUNC(f_rfftfreq),
     "rfftfreq(n, /, *, d=1.0, dtype=None, device=None)\n--\n\n"
     "The sample frequencies of rfft's result: [0, 1, ..., n // 2] / (d * n)."},
    {"fftshift", MOD_KWFUNC(f_fftshift),
     "fftshift(x, /, *, axes=None)\n--\n\n"
     "x rolled so that the zero frequency is in the middle of each of axes (None: all)."},
    {"ifftshift", MOD_KWFUNC(f_ifftshift),
     "ifftshift(x, /, *, axes=None)\n--\n\nThe inverse of fftshift."},
    {NULL},
};

int mod_fft_add_module(PyObject *module) {
    PyObject *m = PyModule_New("offload.fft");
    if (!m) return -1;
    PyObject *modname = PyUnicode_FromString("offload.fft");
    int rc = modname && PyModule_AddFunctions(m, functions) == 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof TRANSFORMS / sizeof TRANSFORMS[0]; i++) {
        PyObject *cap = PyCapsule_New(&TRANSFORMS[i], "offload.fft", NULL);
        PyObject *f = cap ? PyCFunction_NewEx(&TRANSFORMS[i].def, cap, modname) : NULL;
        rc = f ? PyModule_AddObjectRef(m, TRANSFORMS[i].def.ml_name, f) : -1;
        Py_XDECREF(cap);
        Py_XDECREF(f);
    }
    if (rc == 0) rc = mod_kit_add_submodule(module, "fft", m);
    Py_XDECREF(modname);
    Py_DECREF(m);
    return rc;
}
