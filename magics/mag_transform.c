/* mag_transform: the cell rewrite for kernels without IPython, and the scan
 * that says when a cell needs IPython (mag_magics.h). */
#include "mag_impl.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *s;
    size_t n, cap;
} strbuf;

static void put(strbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) abort(); /* a cell-sized allocation: nothing sensible to do without it */
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void puts_(strbuf *b, const char *s) { put(b, s, strlen(s)); }

/* A Python string literal holding s[0..n). */
static void put_literal(strbuf *b, const char *s, size_t n) {
    put(b, "'", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '\\' || c == '\'')
            esc[0] = '\\', esc[1] = (char)c, esc[2] = 0;
        else if (c == '\n')
            strcpy(esc, "\\n");
        else if (c == '\r')
            strcpy(esc, "\\r");
        else if (c < 0x20 || c == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", c);
        else
            esc[0] = (char)c, esc[1] = 0;
        puts_(b, esc);
    }
    put(b, "'", 1);
}

static size_t word_len(const char *s) {
    size_t n = 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_') n++;
    return n;
}

/* `name?`, `name??`, `?name`, `??name` with a dotted name, within s[0..len):
 * a help request. Sets the name's span and the detail level (0 or 1). */
static bool help_span(const char *s, size_t len, const char **name, size_t *n, int *detail) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    size_t pre = 0, post = 0;
    while (pre < len && pre < 2 && s[pre] == '?') pre++;
    while (post < len - pre && post < 2 && s[len - 1 - post] == '?') post++;
    if ((pre == 0) == (post == 0) || len - pre - post == 0) return false;
    *name = s + pre;
    *n = len - pre - post;
    for (size_t i = 0; i < *n; i++) {
        unsigned char c = (unsigned char)(*name)[i];
        if (!(isalnum(c) || c == '_' || c == '.' || c >= 0x80)) return false;
    }
    *detail = (int)(pre > post ? pre : post) - 1;
    return !isdigit((unsigned char)(*name)[0]) && (*name)[0] != '.';
}

/* A whole cell that is one help request: the help goes to the pager. */
bool mag_help_request(const char *cell, mag_cell *out) {
    const char *name;
    size_t n;
    int detail;
    const char *text = cell + strspn(cell, " \t\r\n");
    const char *nl = strchr(text, '\n');
    if (nl && nl[strspn(nl, " \t\r\n")]) /* a second non-blank line: not a lone request */
        return false;
    if (!help_span(text, strlen(text), &name, &n, &detail)) return false;
    out->kind = MAG_HELP;
    out->text = strndup(name, n);
    out->detail = detail;
    return true;
}

static void call_line(strbuf *b, const char *line, size_t len) {
    const char *name = line + 1;
    size_t nlen = word_len(name);
    const char *args = mag_skip_blank(name + nlen);
    size_t alen = (size_t)(line + len - args);
    while (alen && (args[alen - 1] == ' ' || args[alen - 1] == '\r')) alen--;
    puts_(b, "__import__('_offload_magics').run_line_magic(");
    put_literal(b, name, nlen);
    puts_(b, ", ");
    put_literal(b, args, alen);
    puts_(b, ")");
}

/* `target = %magic args`, as IPython takes it: the magic's value is
 * assigned. The start of the magic, or NULL when the line is not one (the
 * target may be names, attributes, subscripts and tuples of them). */
static const char *assigned_magic(const char *first, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char ch = first[i];
        if (ch == '=') {
            if (i == 0 || (i + 1 < len && first[i + 1] == '=')) return NULL;
            const char *m = mag_skip_blank(first + i + 1);
            if (m + 1 < first + len && m[0] == '%' && (isalpha((unsigned char)m[1]) || m[1] == '_'))
                return m;
            return NULL;
        }
        if (!isalnum((unsigned char)ch) && !strchr("_., []()*", ch)) return NULL;
    }
    return NULL;
}

/* Does a line begin as only IPython reads it: a magic, a shell escape, a help
 * prefix, autocall escapes, or a doctest or IPython prompt? (Not valid Python, so a
 * false positive costs only the IPython import.) */
static bool ipython_line(const char *first, size_t len) {
    if (len == 0) return false;
    if (strchr("%!?/,;", first[0])) return true;
    if ((len >= 3 && strncmp(first, ">>>", 3) == 0) || (len >= 4 && strncmp(first, "In [", 4) == 0))
        return true; /* a pasted doctest or IPython session: IPython strips the prompts */
    size_t end = len;
    while (end && isspace((unsigned char)first[end - 1])) end--;
    return end && first[end - 1] == '?' && first[0] != '#';
}

/* `x = !cmd`: IPython's assignment of a shell command's output. */
static bool assigned_shell(const char *first, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char ch = first[i];
        if (ch == '=') return i > 0 && i + 1 < len && *mag_skip_blank(first + i + 1) == '!';
        if (!isalnum((unsigned char)ch) && !strchr("_., []()*", ch)) return false;
    }
    return false;
}

bool mag_needs_ipython(const char *cell) {
    const char *body = cell + strspn(cell, "\r\n");
    if (*body == ' ' || *body == '\t')
        return true; /* IPython removes a cell's common indentation */
    if (!strpbrk(cell, "%!?/,;>["))
        return false; /* the common case: nothing IPython would change */
    for (const char *line = cell; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *first = mag_skip_blank(line);
        size_t rest = (size_t)(line + len - first);
        if (ipython_line(first, rest) || assigned_magic(first, rest) || assigned_shell(first, rest))
            return true;
        if (!nl) break;
        line = nl + 1;
    }
    return false;
}

int mag_transform(const char *cell, mag_cell *out) {
    memset(out, 0, sizeof *out);
    if (!strpbrk(cell, "%?!")) { /* the common case: plain Python */
        out->text = strdup(cell);
        return 0;
    }
    if (mag_help_request(cell, out)) return 0;
    strbuf b = {0};
    out->kind = MAG_CODE;
    if (cell[0] == '%' && cell[1] == '%') {
        const char *nl = strchr(cell, '\n');
        const char *name = cell + 2;
        size_t nlen = word_len(name);
        const char *args = mag_skip_blank(name + nlen);
        size_t alen = nl ? (size_t)(nl - args) : strlen(args);
        const char *body = nl ? nl + 1 : "";
        puts_(&b, "__import__('_offload_magics').run_cell_magic(");
        put_literal(&b, name, nlen);
        puts_(&b, ", ");
        put_literal(&b, args, alen);
        puts_(&b, ", ");
        put_literal(&b, body, strlen(body));
        puts_(&b, ")\n");
        out->text = b.s;
        return 0;
    }
    bool in_triple = false;
    for (const char *line = cell; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *first = mag_skip_blank(line);
        const char *name;
        size_t nlen;
        int detail;
        const char *magic = NULL;
        if (!in_triple && first < line + len && first[0] == '%' &&
            (isalpha((unsigned char)first[1]) || first[1] == '_')) {
            put(&b, line, (size_t)(first - line));
            call_line(&b, first, (size_t)(line + len - first));
        } else if (!in_triple &&
                   (first[0] == '!' || assigned_shell(first, (size_t)(line + len - first)))) {
            put(&b, line, (size_t)(first - line));
            puts_(&b, "__import__('_offload_magics').needs_ipython('!cmd shell commands')");
        } else if (!in_triple && (magic = assigned_magic(first, (size_t)(line + len - first)))) {
            put(&b, line, (size_t)(magic - line));
            call_line(&b, magic, (size_t)(line + len - magic));
        } else if (!in_triple &&
                   help_span(first, (size_t)(line + len - first), &name, &nlen, &detail)) {
            put(&b, line, (size_t)(first - line));
            puts_(&b, "__import__('_offload_magics').run_line_magic(");
            puts_(&b, detail ? "'pinfo2', " : "'pinfo', ");
            put_literal(&b, name, nlen);
            puts_(&b, ")");
        } else {
            put(&b, line, len);
        }
        /* Lines inside a triple-quoted string are data, not magics. */
        for (const char *q = line; q + 2 < line + len; q++)
            if ((q[0] == '"' || q[0] == '\'') && q[1] == q[0] && q[2] == q[0]) {
                in_triple = !in_triple;
                q += 2;
            }
        if (!nl) break;
        put(&b, "\n", 1);
        line = nl + 1;
    }
    out->text = b.s ? b.s : strdup("");
    return 0;
}

void mag_cell_clear(mag_cell *cell) {
    free(cell->text);
    cell->text = NULL;
}
