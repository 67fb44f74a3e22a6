/* ofl_util: the error and string helpers every file of the runtime uses for
 * its messages. The bottom of offload/: it calls no other file here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"

int ofl_fail(ofl_error *err, ofl_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void ofl_append(ofl_error *err, const char *fmt, ...) {
    if (!err) return;
    size_t used = strlen(err->msg);
    if (used + 1 >= sizeof err->msg) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
    va_end(ap);
}

const char *ofl_size_str(uint64_t bytes, char *buf, size_t len) {
    static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, u++;
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

const char *ofl_type_word(ofl_device_type type) {
    switch (type) {
    case OFL_CPU: return "cpu";
    case OFL_GPU: return "gpu";
    case OFL_ACCELERATOR: return "accelerator";
    case OFL_CUSTOM: return "custom";
    }
    return "?";
}

const char *ofl_backend_word(ofl_backend backend) {
    return backend == OFL_CUDA ? "cuda" : backend == OFL_OPENCL ? "opencl" : "?";
}

void ofl_append_log(ofl_error *err, const char *intro, const char *log) {
    if (!err) return;
    while (*log == ' ' || *log == '\n' || *log == '\r' || *log == '\t') log++;
    size_t n = strlen(log);
    while (n && (log[n - 1] == ' ' || log[n - 1] == '\n' || log[n - 1] == '\r')) n--;
    if (n == 0) {
        ofl_append(err, " (the driver gave no log)");
        return;
    }
    /* the first lines hold the first error, the one worth reading: keep the
     * head and say where it was cut */
    size_t used = strlen(err->msg), intro_len = strlen(intro);
    size_t room = sizeof err->msg - 1 - used;
    if (room < intro_len + 16) return;
    if (intro_len + n > room) {
        static const char cut[] = " [...]";
        n = room - intro_len - (sizeof cut - 1);
        ofl_append(err, "%s%.*s%s", intro, (int)n, log, cut);
    } else {
        ofl_append(err, "%s%.*s", intro, (int)n, log);
    }
}

int ofl_build_timeout(double *seconds, ofl_error *err) {
    const char *v = getenv("OFFLOAD_BUILD_TIMEOUT");
    *seconds = OFL_BUILD_TIMEOUT_DEFAULT;
    if (!v || !v[0]) return 0;
    char *end = NULL;
    double s = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(s) || s <= 0) {
        return ofl_fail(err, OFL_ERR_INVALID,
                        "OFFLOAD_BUILD_TIMEOUT=%.40s is not a number of seconds above 0 (it bounds "
                        "each build of a kernel; unset, %g)",
                        v, (double)OFL_BUILD_TIMEOUT_DEFAULT);
    }
    *seconds = s;
    return 0;
}
