/* mod_range: offload.Range, offload.NdRange, offload.Event and
 * offload.DeviceTimer -- the shapes of launches, what an asynchronous launch
 * hands back, and the device time of many launches. */
#include "mod_launch.h"

typedef struct {
    PyObject_HEAD
    int ndim;
    Py_ssize_t size[3];
} mod_range;

static PyTypeObject RangeType, NdRangeType;

/* ---- Range ---- */

static PyObject *range_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError,
                        "Range takes 1 to 3 sizes: Range(n), Range(n0, n1), Range(n0, n1, n2)");
        return NULL;
    }
    Py_ssize_t nd = PyTuple_GET_SIZE(args);
    if (nd == 1 && PyTuple_Check(PyTuple_GET_ITEM(args, 0))) { /* Range((n0, n1)) */
        args = PyTuple_GET_ITEM(args, 0);
        nd = PyTuple_GET_SIZE(args);
    }
    if (nd < 1 || nd > 3) {
        PyErr_Format(PyExc_ValueError, "a Range has 1 to 3 dimensions, not %zd", nd);
        return NULL;
    }
    mod_range *r = (mod_range *)type->tp_alloc(type, 0);
    if (!r) return NULL;
    r->ndim = (int)nd;
    for (Py_ssize_t d = 0; d < nd; d++) {
        PyObject *o = PyTuple_GET_ITEM(args, d);
        Py_ssize_t v = PyNumber_Check(o) && !PyFloat_Check(o)
                           ? PyNumber_AsSsize_t(o, PyExc_OverflowError)
                           : -2;
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(r);
            return NULL;
        }
        if (v < 0) {
            Py_DECREF(r);
            PyErr_Format(PyExc_ValueError, "Range sizes are integers >= 0, not %R", o);
            return NULL;
        }
        r->size[d] = v;
    }
    return (PyObject *)r;
}

static PyObject *range_repr(mod_range *r) {
    if (r->ndim == 1) return PyUnicode_FromFormat("Range(%zd)", r->size[0]);
    if (r->ndim == 2) return PyUnicode_FromFormat("Range(%zd, %zd)", r->size[0], r->size[1]);
    return PyUnicode_FromFormat("Range(%zd, %zd, %zd)", r->size[0], r->size[1], r->size[2]);
}

static Py_ssize_t range_len(mod_range *r) { return r->ndim; }
static PyObject *range_item(mod_range *r, Py_ssize_t i) {
    if (i < 0 || i >= r->ndim) {
        PyErr_SetString(PyExc_IndexError, "Range index out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(r->size[i]);
}

static PyObject *range_richcompare(mod_range *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &RangeType))
        Py_RETURN_NOTIMPLEMENTED;
    mod_range *o = (mod_range *)b;
    bool eq = a->ndim == o->ndim && !memcmp(a->size, o->size, sizeof(Py_ssize_t) * (size_t)a->ndim);
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *range_ndim(mod_range *r, void *c) { return PyLong_FromLong(r->ndim); }

static PySequenceMethods range_seq = {.sq_length = (lenfunc)range_len,
                                      .sq_item = (ssizeargfunc)range_item};
static PyGetSetDef range_getset[] = {
    {"ndim", (getter)range_ndim, NULL, "number of dimensions", NULL}, {0}};

static PyTypeObject RangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.Range",
    .tp_basicsize = sizeof(mod_range),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Range(n0[, n1[, n2]]): the work items of a launch, 1 to 3 dimensions, the last the "
              "fastest "
              "(item.get_id(d) ranges over 0..n_d-1). Any sizes: the tail is guarded.",
    .tp_new = range_new,
    .tp_repr = (reprfunc)range_repr,
    .tp_as_sequence = &range_seq,
    .tp_richcompare = (richcmpfunc)range_richcompare,
    .tp_getset = range_getset,
};

/* ---- NdRange ---- */

typedef struct {
    PyObject_HEAD
    mod_shape s; /* nd */
} mod_ndrange;

/* A Range from a Range, an int or a tuple of ints (new reference). */
static PyObject *range_from(PyObject *o) {
    return PyObject_TypeCheck(o, &RangeType) ? Py_NewRef(o)
           : PyTuple_Check(o)                ? PyObject_Call((PyObject *)&RangeType, o, NULL)
                                             : PyObject_CallOneArg((PyObject *)&RangeType, o);
}

/* sizes from an int, a tuple of ints or a Range, into v; the count, or -1 */
static int sizes_of(PyObject *o, const char *what, Py_ssize_t v[3]) {
    PyObject *r = range_from(o);
    if (!r) {
        PyObject *type, *val, *tb;
        PyErr_Fetch(&type, &val, &tb);
        PyErr_Format(PyExc_ValueError, "NdRange's %s size: %S", what, val ? val : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(val);
        Py_XDECREF(tb);
        return -1;
    }
    mod_range *rr = (mod_range *)r;
    int nd = rr->ndim;
    memcpy(v, rr->size, sizeof rr->size);
    Py_DECREF(r);
    return nd;
}

static PyObject *ndrange_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"global_range", "local_range", NULL};
    PyObject *g, *l;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:NdRange", kwlist, &g, &l)) return NULL;
    mod_shape s = {.nd = true};
    int gn = sizes_of(g, "global", s.size), ln = gn < 0 ? -1 : sizes_of(l, "local", s.local);
    if (gn < 0 || ln < 0) return NULL;
    if (gn != ln)
        return PyErr_Format(PyExc_ValueError,
                            "an NdRange's global and local sizes have the same number of "
                            "dimensions: %d and %d here",
                            gn, ln);
    s.ndim = gn;
    for (int d = 0; d < s.ndim; d++) {
        if (s.local[d] == 0)
            return PyErr_Format(PyExc_ValueError,
                                "the local size is 0 in dimension %d: a work-group has at "
                                "least one work-item in every dimension",
                                d);
        if (s.size[d] % s.local[d])
            return PyErr_Format(
                PyExc_ValueError,
                "the global size %zd is not a multiple of the local size %zd "
                "in dimension %d\nRound the global size up to %zd and guard the tail in the "
                "kernel, or use a Range, which needs no work-groups.",
                s.size[d], s.local[d], d, (s.size[d] / s.local[d] + 1) * s.local[d]);
    }
    mod_ndrange *r = (mod_ndrange *)type->tp_alloc(type, 0);
    if (r) r->s = s;
    return (PyObject *)r;
}

static PyObject *sizes_tuple(int nd, const Py_ssize_t *v) {
    PyObject *t = PyTuple_New(nd);
    for (int d = 0; t && d < nd; d++) {
        PyObject *x = PyLong_FromSsize_t(v[d]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, d, x);
    }
    return t;
}

PyObject *mod_shape_repr(const mod_shape *s) {
    PyObject *g = sizes_tuple(s->ndim, s->size), *l = s->nd ? sizes_tuple(s->ndim, s->local) : NULL;
    PyObject *r = NULL;
    if (g && s->nd && l)
        r = PyUnicode_FromFormat("NdRange(%R, %R)", g, l);
    else if (g && !s->nd)
        r = PyUnicode_FromFormat("Range%R", g);
    Py_XDECREF(g);
    Py_XDECREF(l);
    return r;
}

static PyObject *ndrange_repr(mod_ndrange *r) { return mod_shape_repr(&r->s); }

static PyObject *ndrange_part(mod_ndrange *r, void *local) {
    PyObject *t = sizes_tuple(r->s.ndim, local ? r->s.local : r->s.size);
    PyObject *range = t ? PyObject_Call((PyObject *)&RangeType, t, NULL) : NULL;
    Py_XDECREF(t);
    return range;
}

static PyObject *ndrange_ndim(mod_ndrange *r, void *c) { return PyLong_FromLong(r->s.ndim); }

static PyObject *ndrange_richcompare(mod_ndrange *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &NdRangeType))
        Py_RETURN_NOTIMPLEMENTED;
    const mod_shape *x = &a->s, *y = &((mod_ndrange *)b)->s;
    size_t n = sizeof(Py_ssize_t) * (size_t)x->ndim;
    bool eq = x->ndim == y->ndim && !memcmp(x->size, y->size, n) && !memcmp(x->local, y->local, n);
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyGetSetDef ndrange_getset[] = {
    {"global_range", (getter)ndrange_part, NULL, "the work-items of the launch, a Range", NULL},
    {"local_range", (getter)ndrange_part, NULL, "the work-items of one work-group, a Range",
     (void *)1},
    {"ndim", (getter)ndrange_ndim, NULL, "number of dimensions", NULL},
    {0},
};

static PyTypeObject NdRangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.NdRange",
    .tp_basicsize = sizeof(mod_ndrange),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "NdRange(global, local): work-items in work-groups of `local` (each an int, a tuple or a "
        "Range, 1 to 3 dimensions, the last the fastest). The kernel's item is an NdItem; "
        "global must be a multiple of local in every dimension.",
    .tp_new = ndrange_new,
    .tp_repr = (reprfunc)ndrange_repr,
    .tp_richcompare = (richcmpfunc)ndrange_richcompare,
    .tp_getset = ndrange_getset,
};

int mod_shape_of(PyObject *o, mod_shape *out) {
    if (PyObject_TypeCheck(o, &NdRangeType)) {
        *out = ((mod_ndrange *)o)->s;
        return 0;
    }
    PyObject *r = range_from(o);
    if (!r) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "a launch needs an offload.Range or offload.NdRange, not %s",
                         Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    mod_range *rr = (mod_range *)r;
    *out = (mod_shape){.ndim = rr->ndim};
    memcpy(out->size, rr->size, sizeof rr->size);
    Py_DECREF(r);
    return 0;
}

/* ---- Event ---- */

typedef struct {
    PyObject_HEAD
    ofl_event *ev;  /* owned */
    PyObject *name; /* the kernel's, for messages */
    bool waited;
} mod_event;

static int event_wait_(mod_event *e) {
    if (e->waited) return 0;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_event_wait(e->ev, &err);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        mod_raise(&err);
        return -1;
    }
    e->waited = true;
    return 0;
}

static PyObject *event_wait(mod_event *e, PyObject *unused) {
    if (event_wait_(e) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *event_elapsed(mod_event *e, void *c) {
    if (event_wait_(e) < 0) return NULL;
    double s = ofl_event_elapsed(e->ev);
    if (s < 0) Py_RETURN_NONE; /* the device gave no timestamps */
    return PyFloat_FromDouble(s);
}

static void event_dealloc(mod_event *e) {
    ofl_event_release(e->ev);
    Py_XDECREF(e->name);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *event_repr(mod_event *e) {
    return PyUnicode_FromFormat("<offload.Event of kernel %S%s>", e->name,
                                e->waited ? ", complete" : "");
}

static PyMethodDef event_methods[] = {
    {"wait", (PyCFunction)event_wait, METH_NOARGS,
     "wait()\n\nBlock until the kernel has finished; raises "
     "DeviceError if it failed."},
    {0},
};
static PyGetSetDef event_getset[] = {
    {"elapsed", (getter)event_elapsed, NULL,
     "seconds the kernel ran, from device timestamps (waits first)", NULL},
    {0},
};

static PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.Event",
    .tp_basicsize = sizeof(mod_event),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A queued kernel launch: wait() and elapsed (seconds on the device).",
    .tp_dealloc = (destructor)event_dealloc,
    .tp_repr = (reprfunc)event_repr,
    .tp_methods = event_methods,
    .tp_getset = event_getset,
};

PyObject *mod_event_new(ofl_event *ev, const char *kernel_name) {
    mod_event *e = PyObject_New(mod_event, &EventType);
    if (!e) {
        ofl_event_release(ev);
        return NULL;
    }
    e->ev = ev;
    e->waited = false;
    e->name = PyUnicode_FromString(kernel_name);
    if (!e->name) {
        Py_DECREF(e);
        return NULL;
    }
    return (PyObject *)e;
}

/* ---- DeviceTimer ----
 *
 * The device time of launches, summed: what %time and %timeit report. The
 * runtime records launches only while some timer records (ofl_runtime.h says
 * what that costs), so a timer is opened for the span it measures and closed
 * after; one that does not record only waits for the devices. */

typedef struct {
    PyObject_HEAD
    bool open, recording;
    uint64_t base_ns, base_n; /* the runtime's totals at the last lap */
    uint64_t ns, n;           /* summed over the laps so far */
} mod_timer;

/* The runtime's totals, with the GIL released: they wait for timed launches. */
static int timing_totals(uint64_t *ns, uint64_t *n) {
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_timing_totals(ns, n, &err);
    Py_END_ALLOW_THREADS
    if (rc) {
        mod_raise(&err);
        return -1;
    }
    return 0;
}

static int timer_init(mod_timer *t, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"record", NULL};
    int record = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:DeviceTimer", kwlist, &record)) return -1;
    if (t->open) return 0;
    t->open = true;
    t->recording = record;
    t->ns = t->n = 0;
    if (!record) return 0;
    ofl_timing_start();
    /* launches recorded for another timer before this one began are not its */
    return timing_totals(&t->base_ns, &t->base_n);
}

static void timer_close_(mod_timer *t) {
    if (t->open && t->recording) ofl_timing_stop();
    t->open = t->recording = false;
}

static void timer_dealloc(mod_timer *t) {
    timer_close_(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *timer_sync(mod_timer *t, PyObject *unused) {
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_synchronize_launched(&err);
    Py_END_ALLOW_THREADS
    if (rc) return mod_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *timer_lap(mod_timer *t, PyObject *unused) {
    if (!t->open) return PyErr_Format(PyExc_ValueError, "this DeviceTimer is closed");
    uint64_t ns = t->base_ns, n = t->base_n;
    if (t->recording && timing_totals(&ns, &n) < 0) return NULL;
    uint64_t dns = ns - t->base_ns, dn = n - t->base_n;
    t->base_ns = ns, t->base_n = n;
    t->ns += dns, t->n += dn;
    return Py_BuildValue("(dK)", (double)dns * 1e-9, (unsigned long long)dn);
}

static PyObject *timer_close(mod_timer *t, PyObject *unused) {
    timer_close_(t);
    Py_RETURN_NONE;
}

static PyObject *timer_enter(mod_timer *t, PyObject *unused) {
    if (!t->open) return PyErr_Format(PyExc_ValueError, "this DeviceTimer is closed");
    return Py_NewRef(t);
}

/* Waits for the block's launches and takes the last lap, unless the block
 * raised: then its exception is the one to see. */
static PyObject *timer_exit(mod_timer *t, PyObject *args) {
    PyObject *r = Py_NewRef(Py_None);
    if (t->open && PyTuple_GET_SIZE(args) > 0 && PyTuple_GET_ITEM(args, 0) == Py_None) {
        Py_SETREF(r, timer_sync(t, NULL));
        if (r) Py_SETREF(r, timer_lap(t, NULL));
        if (r) Py_SETREF(r, Py_NewRef(Py_None));
    }
    timer_close_(t);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static PyObject *timer_seconds(mod_timer *t, void *c) {
    return PyFloat_FromDouble((double)t->ns * 1e-9);
}
static PyObject *timer_launches(mod_timer *t, void *c) { return PyLong_FromUnsignedLongLong(t->n); }
static PyObject *timer_is_open(mod_timer *t, void *c) { return PyBool_FromLong(t->open); }
static PyObject *timer_recording(mod_timer *t, void *c) { return PyBool_FromLong(t->recording); }

static PyObject *timer_repr(mod_timer *t) {
    char s[32];
    snprintf(s, sizeof s, "%.6g", (double)t->ns * 1e-9);
    return PyUnicode_FromFormat("<offload.DeviceTimer %s: %s s over %llu launch%s>",
                                t->open ? "open" : "closed", s, (unsigned long long)t->n,
                                t->n == 1 ? "" : "es");
}

static PyMethodDef timer_methods[] = {
    {"sync", (PyCFunction)timer_sync, METH_NOARGS,
     "sync()\n\nWait for every device that kernels were launched on since the last sync (by "
     "anyone), so "
     "that a host clock read next includes their work. Raises DeviceError if that work failed."},
    {"lap", (PyCFunction)timer_lap, METH_NOARGS,
     "lap() -> (seconds, launches)\n\nWait for the launches timed since the last lap (or the "
     "start) and "
     "return their device time summed, and how many there were."},
    {"close", (PyCFunction)timer_close, METH_NOARGS,
     "close()\n\nStop timing (laps not taken are lost)."},
    {"__enter__", (PyCFunction)timer_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)timer_exit, METH_VARARGS, NULL},
    {0},
};

static PyGetSetDef timer_getset[] = {
    {"seconds", (getter)timer_seconds, NULL, "device seconds summed over the laps taken", NULL},
    {"launches", (getter)timer_launches, NULL, "launches timed over the laps taken", NULL},
    {"open", (getter)timer_is_open, NULL, "whether it is still open", NULL},
    {"recording", (getter)timer_recording, NULL,
     "whether it times launches (record=True, and open)", NULL},
    {0},
};

static PyTypeObject TimerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.DeviceTimer",
    .tp_basicsize = sizeof(mod_timer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "DeviceTimer(record=True): while open, every kernel launch (any kernel, device or thread) "
        "is "
        "timed on its device, and lap() sums those times.\n\n"
        "    with offload.DeviceTimer() as t:\n"
        "        saxpy[offload.Range(n)](2.0, x, y)\n"
        "    t.seconds, t.launches   # device time summed, and how many launches\n\n"
        "Leaving the block waits for its launches. Open timers share one record: each sees every "
        "launch made while it is open. Timing is not free: an OpenCL launch keeps its profiling "
        "event, a CUDA launch records an event pair, which the GPU processes too (back-to-back "
        "near-empty kernels went from 4.5 to 7.7 us each on an H100); a kernel of tens of "
        "microseconds does not notice. record=False times nothing: sync() still waits for the "
        "devices launched on, and lap() gives (0.0, 0).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)timer_init,
    .tp_dealloc = (destructor)timer_dealloc,
    .tp_repr = (reprfunc)timer_repr,
    .tp_methods = timer_methods,
    .tp_getset = timer_getset,
};

int mod_range_add_functions(PyObject *module) {
    if (PyType_Ready(&RangeType) < 0 || PyType_Ready(&NdRangeType) < 0 ||
        PyType_Ready(&EventType) < 0 || PyType_Ready(&TimerType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Range", (PyObject *)&RangeType) < 0 ||
                   PyModule_AddObjectRef(module, "NdRange", (PyObject *)&NdRangeType) < 0 ||
                   PyModule_AddObjectRef(module, "Event", (PyObject *)&EventType) < 0 ||
                   PyModule_AddObjectRef(module, "DeviceTimer", (PyObject *)&TimerType) < 0
               ? -1
               : 0;
}
