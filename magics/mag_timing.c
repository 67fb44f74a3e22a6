/* mag_timing: %time and %timeit (line and cell forms), timed on the host. */
#include "mag_impl.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

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

PyObject *mag_time(PyObject *ns, const char *args, const char *body)
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
PyObject *mag_timeit(PyObject *ns, const char *args, const char *body)
{
    long loops = 0, repeat = 7;
    const char *p = mag_skip_blank(args);
    while (p[0] == '-' && (p[1] == 'n' || p[1] == 'r')) {
        char *end;
        long v = strtol(p + 2, &end, 10);
        if (end == p + 2 || v <= 0)
            return PyErr_Format(mag_UsageError, "%%timeit: -%c needs a positive number", p[1]);
        if (p[1] == 'n')
            loops = v;
        else
            repeat = v;
        p = mag_skip_blank(end);
    }
    const char *stmt = body ? body : p;
    if (!*mag_skip_blank(stmt))
        return PyErr_Format(mag_UsageError, "%%timeit: nothing to time");
    bool is_expr;
    PyObject *code = compile_stmt(stmt, "<timeit>", &is_expr);
    if (!code)
        return NULL;
    double secs = 0;
    int rc = 0;
    if (body && *mag_skip_blank(p)) { /* %%timeit setup-line: the line runs once first */
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
