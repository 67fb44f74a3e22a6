/* ofl_filter: device filter strings (the grammar is in ofl_runtime.h),
 * selection of a device by filter, and the default device. Parsing never
 * triggers discovery, so a bad filter is reported before any driver loads. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ofl_backend.h"

#define GRAMMAR                                                                                    \
    "A filter is backend:type:index, each part optional but in that order (\"gpu\", "              \
    "\"opencl:cpu\", \"cuda:gpu:0\", \"gpu:1\", \"1\"), or a comma list tried in "                 \
    "order (\"gpu,cpu\"); backends: opencl, cuda; types: cpu, gpu, accelerator "                   \
    "(accel), custom; index: a number counting from 0."

typedef struct {
    int backend; /* 0: any */
    int type;    /* 0: any */
    int index;   /* -1: the first */
} term;

typedef struct {
    const char *word;
    int backend, type;
} word;

static const word words[] = {
    {"opencl", OFL_OPENCL, 0},
    {"cuda", OFL_CUDA, 0},
    {"cpu", 0, OFL_CPU},
    {"gpu", 0, OFL_GPU},
    {"accelerator", 0, OFL_ACCELERATOR},
    {"accel", 0, OFL_ACCELERATOR},
    {"custom", 0, OFL_CUSTOM},
};

/* The text [s, e) without the spaces around it. */
static void trim(const char **s, const char **e) {
    while (*s < *e && isspace((unsigned char)**s)) (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1])) (*e)--;
}

static int bad(ofl_error *err, const char *filter, const char *reason) {
    return ofl_fail(err, OFL_ERR_BAD_FILTER, "bad device filter \"%.100s\": %s. %s", filter, reason,
                    GRAMMAR);
}

/* fmt has one "%.*s" for the offending word [s, s + n). */
static int bad_word(ofl_error *err, const char *filter, const char *fmt, const char *s, int n) {
    char reason[160];
    snprintf(reason, sizeof reason, fmt, n > 60 ? 60 : n, s);
    return bad(err, filter, reason);
}

/* One part: a backend word, a type word or an index. stage says which parts
 * may still come (0: any, 1: type or index, 2: index only, 3: none). */
static int parse_part(const char *s, const char *e, term *t, int *stage, const char *filter,
                      ofl_error *err) {
    int n = (int)(e - s);
    if (n == 0) return bad(err, filter, "an empty part beside a ':' (leave the part out instead)");
    if (*stage == 3) /* the index came */
        return bad_word(err, filter, "nothing may follow the index (\"%.*s\" does)", s, n);
    if (isdigit((unsigned char)*s)) {
        long v = 0;
        for (const char *p = s; p < e; p++) {
            if (!isdigit((unsigned char)*p))
                return bad_word(err, filter, "\"%.*s\" is not a backend, a device type or an index",
                                s, n);
            v = v * 10 + (*p - '0');
            if (v > 1000000) return bad_word(err, filter, "the index \"%.*s\" is too large", s, n);
        }
        t->index = (int)v;
        *stage = 3;
        return 0;
    }
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        const word *w = &words[i];
        if (strlen(w->word) != (size_t)n || strncasecmp(w->word, s, (size_t)n) != 0) continue;
        if (w->backend && *stage > 0)
            return bad_word(err, filter,
                            t->backend ? "two backends (\"%.*s\" is the second)"
                                       : "the backend \"%.*s\" must come first",
                            s, n);
        if (w->type && *stage > 1)
            return bad_word(err, filter,
                            t->type ? "two device types (\"%.*s\" is the second)"
                                    : "the device type \"%.*s\" must come before the index",
                            s, n);
        if (w->backend) t->backend = w->backend, *stage = 1;
        if (w->type) t->type = w->type, *stage = 2;
        return 0;
    }
    return bad_word(err, filter, "\"%.*s\" is not a backend, a device type or an index", s, n);
}

/* One comma-separated alternative [s, e). */
static int parse_term(const char *s, const char *e, term *t, const char *filter, ofl_error *err) {
    *t = (term){0, 0, -1};
    const char *ts = s, *te = e;
    trim(&ts, &te);
    if (ts == te) return bad(err, filter, "an empty entry in the comma list");
    int stage = 0;
    for (const char *p = s;; p++) {
        if (p == e || *p == ':') {
            const char *ps = s, *pe = p;
            trim(&ps, &pe);
            int rc = parse_part(ps, pe, t, &stage, filter, err);
            if (rc) return rc;
            if (p == e) return 0;
            s = p + 1;
        }
    }
}

/* Checks the whole filter, then calls fn on each alternative in order until
 * it returns true. */
static int each_term(const char *filter, ofl_error *err, bool (*fn)(const term *t, void *arg),
                     void *arg) {
    if (!filter) return ofl_fail(err, OFL_ERR_BAD_FILTER, "no device filter given. %s", GRAMMAR);
    const char *s = filter, *e = filter + strlen(filter);
    trim(&s, &e);
    if (s == e) return ofl_fail(err, OFL_ERR_BAD_FILTER, "the device filter is empty. %s", GRAMMAR);
    for (int pass = 0; pass < (fn ? 2 : 1); pass++) {
        for (s = filter;; s = e + 1) {
            e = strchr(s, ',');
            if (!e) e = s + strlen(s);
            term t;
            int rc = parse_term(s, e, &t, filter, err);
            if (rc) return rc;
            if (pass == 1 && fn(&t, arg)) return 0; /* found */
            if (!*e) break;
        }
    }
    return 0;
}

int ofl_filter_check(const char *filter, ofl_error *err) {
    return each_term(filter, err, NULL, NULL);
}

/* ---- selection ---- */

typedef struct {
    ofl_device *found;
    bool wants_cuda, wants_gpu;
} search;

static bool match(const term *t, void *arg) {
    search *s = arg;
    size_t n;
    ofl_device *const *devs = ofl_devices(&n, NULL);
    s->wants_cuda |= t->backend == OFL_CUDA;
    s->wants_gpu |= t->type == OFL_GPU;
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        const ofl_device_info *in = &devs[i]->info;
        if (t->backend && (int)in->backend != t->backend) continue;
        if (t->type && (int)in->type != t->type) continue;
        if (t->index < 0 || seen++ == t->index) {
            s->found = devs[i];
            return true;
        }
    }
    return false;
}

static bool has_type(ofl_device_type type) {
    size_t n;
    ofl_device *const *devs = ofl_devices(&n, NULL);
    for (size_t i = 0; i < n; i++)
        if (devs[i]->info.type == type) return true;
    return false;
}

static void append_devices(ofl_error *err) {
    char list[768];
    ofl_describe_devices(list, sizeof list);
    ofl_append(err, " Devices here:\n%s", list);
}

int ofl_select(const char *filter, ofl_device **out, ofl_error *err) {
    *out = NULL;
    if (!filter) return ofl_default_device(out, err);
    search s = {0};
    int rc = each_term(filter, err, match, &s);
    if (rc == OFL_ERR_BAD_FILTER) {
        append_devices(err);
        return rc;
    }
    if (s.found) {
        *out = s.found;
        return 0;
    }
    size_t n;
    const char *why;
    ofl_devices(&n, &why);
    if (n == 0)
        return ofl_fail(err, OFL_ERR_NOT_FOUND, "no device matches \"%.100s\": %s", filter, why);
    ofl_fail(err, OFL_ERR_NOT_FOUND, "no device matches \"%.100s\".", filter);
    append_devices(err);
    const char *cuda_note = ofl_backend_note(OFL_CUDA);
    if (s.wants_cuda && cuda_note[0])
        ofl_append(err, "\nCUDA: %s.", cuda_note);
    else if (s.wants_gpu && !has_type(OFL_GPU))
        ofl_append(err,
                   "\nNo GPU found%s%s. For a GPU install its driver: the NVIDIA "
                   "driver for CUDA, intel-opencl-icd for Intel GPUs.",
                   cuda_note[0] ? "; CUDA: " : "", cuda_note);
    return OFL_ERR_NOT_FOUND;
}

int ofl_default_device(ofl_device **out, ofl_error *err) {
    *out = NULL;
    const char *env = getenv("OFFLOAD_DEVICE");
    bool blank = true;
    for (const char *p = env; p && *p; p++) blank &= isspace((unsigned char)*p) != 0;
    if (!blank) { /* OFFLOAD_DEVICE= (empty) means unset, as shells write it */
        int rc = ofl_select(env, out, err);
        if (rc && err) {
            ofl_error inner = *err;
            ofl_fail(err, (ofl_status)rc, "OFFLOAD_DEVICE=%.100s: %s", env, inner.msg);
        }
        return rc;
    }
    size_t n;
    const char *why;
    ofl_device *const *devs = ofl_devices(&n, &why);
    if (n == 0) return ofl_fail(err, OFL_ERR_NOT_FOUND, "no devices: %s", why);
    *out = devs[0]; /* the order is GPUs, then CPUs, then others */
    return 0;
}
