/* krn_history: the session's inputs and outputs in memory, and the answers to
 * history_request (krn_history.h). */
#include "krn_history.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int line;
    char *input;
    char *output; /* NULL: the line showed no result */
} entry;

static struct {
    entry *v;
    size_t n, cap;
} hist;

void krn_history_add(int line, const char *input) {
    if (hist.n == hist.cap) {
        size_t cap = hist.cap ? hist.cap * 2 : 256;
        entry *grown = realloc(hist.v, cap * sizeof *grown);
        if (!grown) return;
        hist.v = grown, hist.cap = cap;
    }
    hist.v[hist.n++] = (entry){line, strdup(input), NULL};
}

void krn_history_set_output(int line, const char *text) {
    if (!text) return;
    for (size_t i = hist.n; i-- > 0;)
        if (hist.v[i].line == line) {
            free(hist.v[i].output);
            hist.v[i].output = strdup(text);
            return;
        }
}

static json_t *row(const entry *e, bool output) {
    json_t *src = json_string(e->input);
    if (!src) src = json_string("");
    if (output) src = json_pack("[o, s?]", src, e->output);
    return json_pack("[i, i, o]", KRN_HISTORY_SESSION, e->line, src);
}

static int int_field(const json_t *obj, const char *key, int fallback) {
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : fallback;
}

/* Is an earlier-listed row (newer, since we walk backwards) the same input? */
static bool seen_input(json_t *rows, const char *input) {
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        json_t *src = json_array_get(r, 2);
        if (json_is_array(src)) src = json_array_get(src, 0);
        if (strcmp(json_string_value(src), input) == 0) return true;
    }
    return false;
}

/* Newest-first walk keeping at most n (n <= 0: all) matching rows, then oldest first. */
static json_t *collect_tail(const char *pattern, int n, bool unique, bool output) {
    json_t *rows = json_array();
    for (size_t i = hist.n; i-- > 0 && (n <= 0 || json_array_size(rows) < (size_t)n);) {
        const entry *e = &hist.v[i];
        if (pattern && fnmatch(pattern, e->input, 0) != 0) continue;
        if (unique && seen_input(rows, e->input)) continue;
        json_array_insert_new(rows, 0, row(e, output));
    }
    return rows;
}

json_t *krn_history_reply(const json_t *req) {
    json_t *type = json_object_get(req, "hist_access_type");
    const char *kind = json_is_string(type) ? json_string_value(type) : "tail";
    bool output = json_is_true(json_object_get(req, "output"));
    json_t *rows;
    if (strcmp(kind, "tail") == 0) {
        rows = collect_tail(NULL, int_field(req, "n", 10), false, output);
    } else if (strcmp(kind, "search") == 0) {
        json_t *pat = json_object_get(req, "pattern");
        const char *pattern = json_is_string(pat) ? json_string_value(pat) : "*";
        rows = collect_tail(pattern, int_field(req, "n", 0),
                            json_is_true(json_object_get(req, "unique")), output);
    } else if (strcmp(kind, "range") == 0) {
        int session = int_field(req, "session", 0);
        int start = int_field(req, "start", 1), stop = int_field(req, "stop", 0);
        rows = json_array();
        /* Only this session exists: 0, its number, or -0 relative all name it. */
        if (session == 0 || session == KRN_HISTORY_SESSION)
            for (size_t i = 0; i < hist.n; i++)
                if (hist.v[i].line >= start && (stop <= 0 || hist.v[i].line < stop))
                    json_array_append_new(rows, row(&hist.v[i], output));
    } else {
        return json_pack("{s:s, s:s, s:s, s:[], s:[]}", "status", "error", "ename", "ValueError",
                         "evalue", "hist_access_type must be tail, range or search", "traceback",
                         "history");
    }
    return json_pack("{s:s, s:o}", "status", "ok", "history", rows);
}

void krn_history_free(void) {
    for (size_t i = 0; i < hist.n; i++) {
        free(hist.v[i].input);
        free(hist.v[i].output);
    }
    free(hist.v);
    memset(&hist, 0, sizeof hist);
}
