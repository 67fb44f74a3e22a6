/* jit_flow: reads of variables that may not be assigned yet.
 *
 * Python raises UnboundLocalError when a read finds a local unassigned; a
 * kernel cannot raise, and would read whatever the register held. So a read
 * that some path reaches without an assignment is a CompileError at the read
 * -- stricter than Python, which raises only when that path is taken.
 *
 * The walk carries the set of definitely assigned variables (a bitset); a
 * path that ends (return, break, continue) carries "everything", the identity
 * of the intersection taken where paths join. A loop may run zero times, so
 * after it only what was assigned before it counts -- except a `while True`,
 * left only by its breaks, and a range of constant bounds that is not empty. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_tree.h"

typedef struct {
    jit_func *f;
    jit_error *err;
    int words;        /* uint64_t words in a set */
    uint64_t *breaks; /* the innermost loop's: intersection of the sets at its breaks */
} flow;

static uint64_t *set_new(flow *fl) { return malloc((size_t)fl->words * sizeof(uint64_t)); }
static void set_all(flow *fl, uint64_t *s) { memset(s, 0xff, (size_t)fl->words * sizeof *s); }
static void set_copy(flow *fl, uint64_t *d, const uint64_t *s) {
    memcpy(d, s, (size_t)fl->words * sizeof *s);
}
static void set_and(flow *fl, uint64_t *d, const uint64_t *s) {
    for (int i = 0; i < fl->words; i++) d[i] &= s[i];
}
static bool has(const uint64_t *s, int v) { return s[v / 64] >> (v % 64) & 1; }
static void add(uint64_t *s, int v) { s[v / 64] |= (uint64_t)1 << (v % 64); }

static int oom(flow *fl) {
    fl->err->compile_error = false;
    snprintf(fl->err->msg, sizeof fl->err->msg, "out of memory");
    return -1;
}

/* Every variable read in x is in s. Iterative over the left spine, so a long
 * `a + b + c + ...` takes no stack per term. */
static int reads(flow *fl, const jit_node *x, const uint64_t *s) {
    for (; x; x = x->a) {
        if (x->kind == N_VAR && !has(s, x->v.var))
            return jit_error_at(
                fl->err, fl->f, x->line, x->col,
                "'%s' is read here, but on some path to here it is not assigned yet\n"
                "Python would raise UnboundLocalError there: assign it before the branch or "
                "loop that does.",
                fl->f->vars[x->v.var].name);
        if (reads(fl, x->b, s) < 0 || reads(fl, x->c, s) < 0) return -1;
        for (int i = 0; i < x->nkids; i++)
            if (reads(fl, x->kids[i], s) < 0) return -1;
    }
    return 0;
}

/* An assignment target: a name is assigned; an element's array and indices are read. */
static int store(flow *fl, const jit_node *t, uint64_t *s) {
    if (t->kind == N_VAR) {
        add(s, t->v.var);
        return 0;
    }
    if (t->kind == N_TUPLE) {
        for (int i = 0; i < t->nkids; i++)
            if (store(fl, t->kids[i], s) < 0) return -1;
        return 0;
    }
    return reads(fl, t, s);
}

static int block(flow *fl, jit_node **body, int n, uint64_t *s);

/* A range of constant bounds with at least one value: its body runs. */
static bool runs_once(const jit_node *loop) {
    int64_t v[3] = {0, 0, 1};
    int n = loop->nkids;
    for (int i = 0; i < n; i++) {
        const jit_node *k = loop->kids[i];
        if (k->kind != N_CONST || k->type.kind != JT_WEAK_INT) return false;
        v[n == 1 ? 1 : i] = k->v.i;
    }
    return v[2] > 0 ? v[0] < v[1] : v[2] < 0 && v[0] > v[1];
}

static bool always_true(const jit_node *cond) {
    return cond->kind == N_CONST &&
           (cond->type.kind == JT_WEAK_FLOAT ? cond->v.f != 0 : cond->v.i != 0);
}

static int loop(flow *fl, const jit_node *n, uint64_t *s) {
    uint64_t *in = set_new(fl), *brk = set_new(fl), *outer = fl->breaks;
    if (!in || !brk) {
        free(in);
        free(brk);
        return oom(fl);
    }
    set_copy(fl, in, s);
    set_all(fl, brk);
    if (n->kind == S_FOR) add(s, n->a->v.var);
    fl->breaks = brk;
    int rc = block(fl, n->body, n->nbody, s);
    fl->breaks = outer;
    if (rc == 0) {
        if (n->kind == S_WHILE && always_true(n->a)) {
            set_copy(fl, s, brk); /* left only by a break */
        } else if (n->kind == S_FOR && runs_once(n)) {
            set_and(fl, s, brk); /* the body ran: its end, or a break */
        } else {
            set_copy(fl, s, in); /* perhaps zero times */
        }
    }
    free(in);
    free(brk);
    return rc;
}

static int stmt(flow *fl, const jit_node *n, uint64_t *s) {
    switch ((jit_node_kind)n->kind) {
    case S_ASSIGN:
        if (reads(fl, n->a, s) < 0) return -1;
        for (int i = 0; i < n->nkids; i++)
            if (store(fl, n->kids[i], s) < 0) return -1;
        return 0;
    case S_AUGASSIGN:
        if (reads(fl, n->b, s) < 0 || reads(fl, n->a, s) < 0) return -1;
        return store(fl, n->a, s);
    case S_EXPR: return reads(fl, n->a, s);
    case S_IF: {
        if (reads(fl, n->a, s) < 0) return -1;
        if (n->a->kind == N_CONST) /* one branch always runs (jit_parse's compile-time code) */
            return always_true(n->a) ? block(fl, n->body, n->nbody, s)
                                     : block(fl, n->orelse, n->norelse, s);
        uint64_t *other = set_new(fl);
        if (!other) return oom(fl);
        set_copy(fl, other, s);
        int rc = block(fl, n->body, n->nbody, s);
        if (rc == 0) rc = block(fl, n->orelse, n->norelse, other);
        if (rc == 0) set_and(fl, s, other);
        free(other);
        return rc;
    }
    case S_FOR:
        for (int i = 0; i < n->nkids; i++)
            if (reads(fl, n->kids[i], s) < 0) return -1;
        return loop(fl, n, s);
    case S_WHILE:
        if (reads(fl, n->a, s) < 0) return -1;
        return loop(fl, n, s);
    case S_BREAK:
        if (fl->breaks) set_and(fl, fl->breaks, s);
        set_all(fl, s);
        return 0;
    case S_CONTINUE: set_all(fl, s); return 0;
    case S_RETURN:
        if (n->a && reads(fl, n->a, s) < 0) return -1;
        set_all(fl, s);
        return 0;
    default: return 0;
    }
}

static int block(flow *fl, jit_node **body, int n, uint64_t *s) {
    for (int i = 0; i < n; i++)
        if (stmt(fl, body[i], s) < 0) return -1;
    return 0;
}

int jit_check_assigned(jit_func *f, jit_error *err) {
    flow fl = {.f = f, .err = err, .words = f->nvars / 64 + 1};
    uint64_t *s = set_new(&fl);
    if (!s) return oom(&fl);
    memset(s, 0, (size_t)fl.words * sizeof *s);
    for (int v = 0; v < f->nparams; v++) add(s, v);
    int rc = block(&fl, f->body, f->nbody, s);
    free(s);
    return rc;
}
