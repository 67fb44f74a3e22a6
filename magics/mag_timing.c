/* mag_timing: %time and %timeit (line and cell forms).
 *
 * Launches are asynchronous, so a host clock read right after a statement
 * sees only the time to queue its kernels. Both magics therefore wait for the
 * devices that kernels were launched on before they read the clock (the host
 * time includes the device work), and both report the device's own time of
 * those launches, summed, beside it. The device time comes from an
 * offload.DeviceTimer held open while they run -- only then does the runtime
 * record launches. The host time is of the same runs (so -n N -r R runs the
 * statement N*R times, no more), and so includes what recording costs: next
 * to nothing on OpenCL, but an event pair per CUDA launch, which makes
 * back-to-back near-empty kernels about 3 us slower each (ofl_runtime.h);
 * %timeit -d leaves launches untimed for such launch-overhead measurements.
 * Without `offload` imported no kernel can run: the host alone is timed. */
#include "mag_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double clock_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* As IPython's _format_time: `digits` significant digits in s, ms, µs or
 * ns; a minute and more as "1min 5s". */
static void format_digits(double s, int digits, char *out, size_t n) {
    if (s >= 60.0) {
        static const struct {
            const char *suffix;
            double len;
        } parts[] = {{"d", 86400}, {"h", 3600}, {"min", 60}, {"s", 1}};
        size_t used = 0;
        out[0] = '\0';
        for (size_t i = 0; i < 4 && used < n; i++) {
            double v = floor(s / parts[i].len);
            if (v > 0) {
                s = fmod(s, parts[i].len);
                used += (size_t)snprintf(out + used, n - used, "%s%.0f%s", used ? " " : "", v,
                                         parts[i].suffix);
            }
            if (s < 1) break;
        }
        return;
    }
    static const char *units[] = {"s", "ms", "\xc2\xb5s", "ns"};
    int order = 3;
    if (s > 0) {
        order = -(int)floor(floor(log10(s)) / 3.0);
        order = order < 0 ? 0 : order > 3 ? 3 : order;
    }
    snprintf(out, n, "%.*g %s", digits, s * pow(1000.0, order), units[order]);
}

static void format_time(double s, char *out, size_t n) { format_digits(s, 3, out, n); }

/* Compile as an expression when possible (its value is the magic's result). */
static PyObject *compile_stmt(const char *code, const char *filename, bool *is_expr) {
    PyObject *c = Py_CompileString(code, filename, Py_eval_input);
    *is_expr = c != NULL;
    if (!c) {
        PyErr_Clear();
        c = Py_CompileString(code, filename, Py_file_input);
    }
    return c;
}

/* ---- the device clock: an offload.DeviceTimer, when offload is imported ---- */

typedef struct {
    PyObject *timer; /* owned; NULL: offload not imported, so no kernel can run */
} devclock;

/* record false: the devices are waited for, their launches not timed. */

static int devclock_sync(devclock *c) {
    PyObject *r = c->timer ? PyObject_CallMethod(c->timer, "sync", NULL) : Py_NewRef(Py_None);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* Opens the clock and waits for work queued before, which the first timed
 * run must not pay for. */
static int devclock_open(devclock *c, bool record) {
    c->timer = NULL;
    PyObject *ofl = PyDict_GetItemString(PyImport_GetModuleDict(), "offload"); /* borrowed */
    PyObject *cls = ofl ? PyObject_GetAttrString(ofl, "DeviceTimer") : NULL;
    if (!cls) { /* not imported, or something else called offload */
        PyErr_Clear();
        return 0;
    }
    c->timer = PyObject_CallFunction(cls, "O", record ? Py_True : Py_False);
    Py_DECREF(cls);
    return c->timer ? devclock_sync(c) : -1;
}

/* Device seconds and launches since the last lap (0 and 0 without offload). */
static int devclock_lap(devclock *c, double *secs, unsigned long long *launches) {
    *secs = 0, *launches = 0;
    if (!c->timer) return 0;
    PyObject *r = PyObject_CallMethod(c->timer, "lap", NULL);
    int ok = r && PyArg_ParseTuple(r, "dK", secs, launches);
    Py_XDECREF(r);
    return ok ? 0 : -1;
}

/* Keeps any exception set: closing must not hide the statement's. */
static void devclock_close(devclock *c) {
    if (!c->timer) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *r = PyObject_CallMethod(c->timer, "close", NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
    PyErr_Restore(type, value, tb);
    Py_CLEAR(c->timer);
}

/* ---- %time ---- */

PyObject *mag_time(PyObject *ns, const char *args, const char *body) {
    bool is_expr;
    PyObject *code = compile_stmt(body ? body : args, "<timed>", &is_expr);
    if (!code) return NULL;
    devclock dc;
    if (devclock_open(&dc, true) < 0) {
        Py_DECREF(code);
        return NULL;
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double w0 = now_s();
    PyObject *res = PyEval_EvalCode(code, ns, ns);
    if (res && devclock_sync(&dc) < 0) Py_CLEAR(res);
    double wall = now_s() - w0;
    getrusage(RUSAGE_SELF, &r1);
    double dsecs;
    unsigned long long launches;
    if (res && devclock_lap(&dc, &dsecs, &launches) < 0) Py_CLEAR(res);
    devclock_close(&dc);
    Py_DECREF(code);
    if (!res) return NULL;
    double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                  (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6;
    double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    char u[32], s[32], t[32], w[32], d[32];
    format_time(user, u, sizeof u);
    format_time(sys, s, sizeof s);
    format_time(user + sys, t, sizeof t);
    format_time(wall, w, sizeof w);
    PySys_WriteStdout("CPU times: user %s, sys: %s, total: %s\nWall time: %s\n", u, s, t, w);
    if (launches) {
        format_time(dsecs, d, sizeof d);
        PySys_WriteStdout("Device time: %s (%llu kernel launch%s, summed)\n", d, launches,
                          launches == 1 ? "" : "es");
    }
    if (is_expr) return res;
    Py_DECREF(res);
    Py_RETURN_NONE;
}

/* ---- %timeit ---- */

typedef struct {
    long loops, repeat; /* loops 0: choose, as IPython does */
    bool quiet, result, host_only;
    clockid_t clock;  /* -t: the wall clock, -c: CPU time, else monotonic */
    int digits;       /* -p: significant digits shown */
    const char *rest; /* the statement (line form) or the setup (cell form) */
} timeit_opts;

/* A number after -n, -r or -p: positive (zero too for -p). */
static int opt_number(char f, const char *v, char **end, long *x) {
    errno = 0;
    *x = strtol(v, end, 10);
    const char *what = f == 'n' ? "loops per run" : f == 'r' ? "runs" : "significant digits";
    if (*end != v && !errno && (*x > 0 || (f == 'p' && *x == 0)) &&
        (!**end || isspace((unsigned char)**end)))
        return 0;
    char given[40];
    snprintf(given, sizeof given, "%.*s", (int)strcspn(v, " \t\r\n"), v);
    if (given[0])
        PyErr_Format(mag_UsageError,
                     "%%timeit: -%c takes a number of %s, a positive whole number, not '%s'", f,
                     what, given);
    else
        PyErr_Format(mag_UsageError, "%%timeit: -%c needs a number of %s (a positive whole number)",
                     f, what);
    return -1;
}

/* IPython's options -n N -r R -t -c -p P -q -o, and -d, in IPython's getopt
 * style: -n10, -n 10, -qo. */
static int parse_opts(const char *args, timeit_opts *o) {
    *o = (timeit_opts){.repeat = 7, .clock = CLOCK_MONOTONIC, .digits = 3};
    const char *p = mag_skip_blank(args);
    while (p[0] == '-' && isalpha((unsigned char)p[1])) {
        for (p++; isalpha((unsigned char)*p); p++) {
            char f = *p;
            if (f == 'q') {
                o->quiet = true;
            } else if (f == 'o') {
                o->result = true;
            } else if (f == 'd') {
                o->host_only = true;
            } else if (f == 't' || f == 'c') {
                o->clock = f == 't' ? CLOCK_REALTIME : CLOCK_PROCESS_CPUTIME_ID;
            } else if (f == 'n' || f == 'r' || f == 'p') {
                char *end;
                long x;
                if (opt_number(f, mag_skip_blank(p + 1), &end, &x) < 0) return -1;
                if (f == 'p')
                    o->digits = x > 17 ? 17 : (int)x;
                else
                    *(f == 'n' ? &o->loops : &o->repeat) = x;
                p = end - 1; /* the value ends this group of flags */
                break;
            } else {
                PyErr_Format(
                    mag_UsageError,
                    "%%timeit: unknown option -%c; it takes -n N (loops per run), "
                    "-r R (runs), -t (wall clock), -c (CPU time), -p P (significant digits), "
                    "-q (print nothing), -o (return the result), -d (host time only: "
                    "launches not timed on the device)",
                    f);
                return -1;
            }
        }
        p = mag_skip_blank(p + (*p ? 1 : 0));
    }
    o->rest = p;
    return 0;
}

/* One run: setup (untimed), then `loops` runs of code and the wait for the
 * devices, timed on the host; then the device time and launches of the run. */
static int run_once(PyObject *code, PyObject *setup, PyObject *ns, devclock *dc, clockid_t clock,
                    long loops, double *host, double *dev, unsigned long long *launches) {
    if (setup) {
        PyObject *r = PyEval_EvalCode(setup, ns, ns);
        if (!r) return -1;
        Py_DECREF(r);
    }
    double t0 = clock_s(clock);
    for (long i = 0; i < loops; i++) {
        PyObject *r = PyEval_EvalCode(code, ns, ns);
        if (!r) return -1;
        Py_DECREF(r);
    }
    if (devclock_sync(dc) < 0) return -1;
    *host = clock_s(clock) - t0;
    return devclock_lap(dc, dev, launches);
}

typedef struct {
    double mean, std, best, worst;
} stats;

static stats stats_of(const double *v, long n) {
    stats s = {0, 0, v[0], v[0]};
    for (long i = 0; i < n; i++) {
        s.mean += v[i] / (double)n;
        s.best = v[i] < s.best ? v[i] : s.best;
        s.worst = v[i] > s.worst ? v[i] : s.worst;
    }
    for (long i = 0; i < n; i++) s.std += (v[i] - s.mean) * (v[i] - s.mean) / (double)n;
    s.std = sqrt(s.std);
    return s;
}

/* 1,234,567 */
static void with_commas(long v, char *out, size_t n) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%ld", v), o = 0;
    for (int i = 0; i < len && (size_t)o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
}

/* A Python list of v[i] * scale. */
static PyObject *float_list(const double *v, long n, double scale) {
    PyObject *l = PyList_New(n);
    for (long i = 0; l && i < n; i++) {
        PyObject *f = PyFloat_FromDouble(v[i] * scale);
        if (!f)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, i, f);
    }
    return l;
}

/* The class of what %timeit -o returns, made at its first use. */
static PyObject *result_class(void) {
    static PyObject *cls; /* owned for the process */
    if (cls) return cls;
    static const char src[] =
        "class TimeitResult:\n"
        "    '''What %timeit -o returns. IPython's attributes: loops, repeat, all_runs (seconds of "
        "each run\n"
        "    of `loops` loops, the devices waited for), timings (per loop), best, worst, average, "
        "stdev\n"
        "    (per loop), compile_time; and the device's own time of the kernels launched, summed:\n"
        "    device_all_runs, device_timings, device_best, device_worst, device_average, "
        "device_stdev\n"
        "    (None when no kernel was launched), launches_per_loop.'''\n"
        "    def __init__(self, text, **attrs):\n"
        "        self._text = text\n"
        "        self.__dict__.update(attrs)\n"
        "    def __str__(self):\n"
        "        return self._text\n"
        "    def __repr__(self):\n"
        "        line = [l for l in self._text.splitlines() if ' per loop (' in l]\n"
        "        return '<TimeitResult : ' + (line[0] if line else '') + '>'\n";
    PyObject *g = Py_BuildValue("{s:s,s:O}", "__name__", "_offload_magics", "__builtins__",
                                PyEval_GetBuiltins());
    PyObject *r = g ? PyRun_String(src, Py_file_input, g, g) : NULL;
    if (r) cls = Py_XNewRef(PyDict_GetItemString(g, "TimeitResult"));
    Py_XDECREF(r);
    Py_XDECREF(g);
    return cls;
}

static PyObject *make_result(const char *text, const timeit_opts *o, double compile_time,
                             const double *host, const double *dev, unsigned long long launches) {
    PyObject *cls = result_class();
    if (!cls) return NULL;
    long n = o->repeat;
    double per = 1.0 / (double)o->loops;
    stats h = stats_of(host, n), d = stats_of(dev, n);
    PyObject *dv = launches ? NULL : Py_None; /* device attributes without device work */
    PyObject *kw =
        Py_BuildValue("{s:l,s:l,s:N,s:N,s:d,s:d,s:d,s:d,s:d,s:N,s:N,s:N,s:N,s:N,s:N,s:d}", "loops",
                      o->loops, "repeat", n, "all_runs", float_list(host, n, 1.0), "timings",
                      float_list(host, n, per), "best", h.best * per, "worst", h.worst * per,
                      "average", h.mean * per, "stdev", h.std * per, "compile_time", compile_time,
                      "device_all_runs", dv ? Py_NewRef(dv) : float_list(dev, n, 1.0),
                      "device_timings", dv ? Py_NewRef(dv) : float_list(dev, n, per), "device_best",
                      dv ? Py_NewRef(dv) : PyFloat_FromDouble(d.best * per), "device_worst",
                      dv ? Py_NewRef(dv) : PyFloat_FromDouble(d.worst * per), "device_average",
                      dv ? Py_NewRef(dv) : PyFloat_FromDouble(d.mean * per), "device_stdev",
                      dv ? Py_NewRef(dv) : PyFloat_FromDouble(d.std * per), "launches_per_loop",
                      (double)launches / (double)n * per);
    PyObject *args = kw ? Py_BuildValue("(s)", text) : NULL;
    PyObject *res = args ? PyObject_Call(cls, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return res;
}

/* What %timeit prints (IPython's line first), into out. */
static void report(const timeit_opts *o, const double *host, const double *dev,
                   unsigned long long launches, char *out, size_t n) {
    double per = 1.0 / (double)o->loops;
    stats h = stats_of(host, o->repeat), d = stats_of(dev, o->repeat);
    char m[32], sd[32], best[32], loops[32];
    format_digits(h.mean * per, o->digits, m, sizeof m);
    format_digits(h.std * per, o->digits, sd, sizeof sd);
    format_digits(h.best * per, o->digits, best, sizeof best);
    with_commas(o->loops, loops, sizeof loops);
    size_t used = 0;
    if (h.worst > 4 * h.best && h.best > 0 && h.worst * per > 1e-6) /* as IPython warns */
        used +=
            (size_t)snprintf(out, n,
                             "The slowest run took %.2f times longer than the fastest. This could "
                             "mean that an intermediate result is being cached.\n",
                             h.worst / h.best);
    used += (size_t)snprintf(
        out + used, n - used,
        "%s \xc2\xb1 %s per loop (mean \xc2\xb1 std. dev. of %ld run%s, %s loop%s each), "
        "best %s\n",
        m, sd, o->repeat, o->repeat == 1 ? "" : "s", loops, o->loops == 1 ? "" : "s", best);
    if (used >= n || o->host_only) return;
    if (!launches) {
        snprintf(out + used, n - used, "no device time: no kernel was launched\n");
        return;
    }
    double per_loop = (double)launches / (double)o->repeat * per;
    format_digits(d.mean * per, o->digits, m, sizeof m);
    format_digits(d.std * per, o->digits, sd, sizeof sd);
    format_digits(d.best * per, o->digits, best, sizeof best);
    snprintf(out + used, n - used,
             "device %s \xc2\xb1 %s per loop, best %s (%.3g kernel launch%s per loop)\n", m, sd,
             best, per_loop, per_loop == 1 ? "" : "es");
}

/* %timeit [-n N] [-r R] [-t|-c] [-p P] [-q] [-o] [-d] stmt, and %%timeit [options] [setup] with
 * the statement below: R runs of N loops each, the devices waited for at the
 * end of each run. N chosen as IPython does when not given: the first power
 * of ten whose run takes 0.2 s. The garbage collector is off meanwhile, as
 * in IPython. */
PyObject *mag_timeit(PyObject *ns, const char *args, const char *body) {
    timeit_opts o;
    if (parse_opts(args, &o) < 0) return NULL;
    const char *stmt = body ? body : o.rest;
    if (!stmt[strspn(stmt, " \t\r\n")])
        return PyErr_Format(mag_UsageError, "%%timeit: nothing to time%s",
                            body ? " below the %%timeit line" : "");
    bool is_expr;
    double c0 = now_s();
    PyObject *code = compile_stmt(stmt, "<timeit>", &is_expr);
    double compile_time = now_s() - c0;
    PyObject *setup = code && body && *mag_skip_blank(o.rest)
                          ? Py_CompileString(o.rest, "<timeit-setup>", Py_file_input)
                          : NULL;
    double *host = PyMem_Calloc((size_t)o.repeat * 2, sizeof *host);
    PyObject *result = NULL;
    devclock dc = {NULL};
    int gc_was = -1;
    if (!code || (body && *mag_skip_blank(o.rest) && !setup) || !host) {
        if (!host) PyErr_NoMemory();
        goto done;
    }
    double *dev = host + o.repeat;
    if (devclock_open(&dc, !o.host_only) < 0) goto done;
    gc_was = PyGC_Disable();
    unsigned long long launches = 0, n;
    double secs, dsecs;
    if (o.loops == 0) {
        for (int p = 0; p < 10; p++) {
            o.loops = (long)pow(10, p);
            if (run_once(code, setup, ns, &dc, o.clock, o.loops, &secs, &dsecs, &n) < 0) goto done;
            if (secs >= 0.2) break;
        }
    }
    for (long r = 0; r < o.repeat; r++) {
        if (run_once(code, setup, ns, &dc, o.clock, o.loops, &host[r], &dev[r], &n) < 0) goto done;
        launches += n;
    }
    char text[1024];
    report(&o, host, dev, launches, text, sizeof text);
    if (!o.quiet) PySys_FormatStdout("%s", text);
    result =
        o.result ? make_result(text, &o, compile_time, host, dev, launches) : Py_NewRef(Py_None);
done:
    if (gc_was == 1) PyGC_Enable();
    devclock_close(&dc);
    PyMem_Free(host);
    Py_XDECREF(setup);
    Py_XDECREF(code);
    return result;
}
