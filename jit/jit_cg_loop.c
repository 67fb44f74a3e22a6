/* jit_cg_loop: while loops and for loops over a range -- Python's trip
 * count, JIT_CANCEL's checks, copies unrolled for PTX; jit_cg_hoist may run
 * a loop in two versions. Called by jit_cg_stmt. */

#include <llvm-c/DebugInfo.h>

#include "jit_cg.h"

/* What keeps a loop's body from being generated twice (see short_loop):
 * inner loops (the copies would multiply) and scratch arrays (one per site). */
bool jit_cg_stops_versioning(const jit_node *n) {
    return n->kind == S_FOR || n->kind == S_WHILE ||
           (n->kind == N_REF && n->v.ref.kind == REF_BUILTIN &&
            jit_builtins[n->v.ref.id].gen == GEN_SCRATCH);
}

/* What keeps a loop from being unrolled (see unroll_copies). */
static bool stops_unrolling(const jit_node *n) {
    return n->kind == S_FOR || n->kind == S_WHILE || n->kind == S_BREAK || n->kind == S_CONTINUE ||
           jit_cg_is_barrier(n);
}

/* ---- JIT_CANCEL: ending a runaway kernel (jit.h) ----
 * A loop's back-edge counts its trips in a counter of its own (one trip, one
 * step: the count cannot step over the period), and every period-th trip
 * reads the host's flag, volatile so that it is read each
 * time; when set, the function returns at once (a kernel's work-item ends; a
 * device function returns to its caller, whose loops check too). The flag is
 * host memory on a GPU: each read is a bus crossing, so a work-item whose
 * loops are short never reads it (reading on the first trip made a pairwise
 * distance kernel 1000x slower on an H100). A `while` loop may never end (the
 * beginner's missing `k += 1`): every 1024 trips. A `for` over a range ends,
 * unless the range is huge: every 65536. Not where a barrier could wait for a
 * work-item that left (cg_module.cancel_checks). */
#define CANCEL_EVERY_WHILE 1024
#define CANCEL_EVERY_FOR 65536

static LLVMValueRef cancel_counter(cg *c) {
    LLVMValueRef n = jit_cg_entry_alloca(c, c->m->i32, "cancel.n");
    LLVMBuilderRef tmp = LLVMCreateBuilderInContext(c->m->tg.ctx);
    LLVMValueRef next = LLVMGetNextInstruction(n);
    if (next)
        LLVMPositionBuilderBefore(tmp, next);
    else
        LLVMPositionBuilderAtEnd(tmp, LLVMGetEntryBasicBlock(c->fn));
    LLVMBuildStore(tmp, LLVMConstInt(c->m->i32, 0, 0), n);
    LLVMDisposeBuilder(tmp);
    return n;
}

/* At a loop's back-edge, where the builder is; leaves it on the way on.
 * period: a power of two. */
static void cancel_check(cg *c, unsigned period) {
    if (!c->m->cancel_checks || !c->cancel_flag) return;
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef i32 = c->m->i32;
    LLVMValueRef ctr = cancel_counter(c);
    LLVMValueRef k = LLVMBuildAdd(b, LLVMBuildLoad2(b, i32, ctr, ""), LLVMConstInt(i32, 1, 0), "");
    LLVMBuildStore(b, k, ctr);
    LLVMValueRef due =
        LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, k, LLVMConstInt(i32, period - 1, 0), ""),
                      LLVMConstInt(i32, 0, 0), "");
    LLVMBasicBlockRef look = jit_cg_block(c, "cancel.look"), on = jit_cg_block(c, "cancel.on");
    LLVMBuildCondBr(b, due, look, on);
    LLVMPositionBuilderAtEnd(b, look);
    LLVMValueRef flag = LLVMBuildLoad2(b, i32, c->cancel_flag, "cancel.flag");
    LLVMSetVolatile(flag, 1);
    LLVMSetAlignment(flag, 4);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, flag, LLVMConstInt(i32, 0, 0), ""), c->ret_block,
                    on);
    LLVMPositionBuilderAtEnd(b, on);
}

/* ---- unrolling (PTX) ----
 * A grid-stride loop streams: each work-item should have several loads in
 * flight. LLVM 15's NVPTX tuning unrolls a loop of unknown trip count only
 * while the copies stay under 75 instructions (two copies of a dozen
 * statements), and it consumes an llvm.loop.unroll.count hint in its early
 * full-unroll pass, with an exit test between the copies. So the copies are
 * made here: an innermost loop of a runtime count, with no barrier, break or
 * continue and a small body, runs UNROLL_COPIES bodies per trip and then the
 * rest one at a time; jit_ptx.c then lets the copies' loads go first. A 256-bin
 * histogram went from 41.2 to 36.6 us on an H100 (numba-cuda 36.9). */
#define UNROLL_COPIES 4
#define UNROLL_MAX_NODES                                                                           \
    96 /* of the body's tree: beyond, the copies cost more compile time than they win */

static int unroll_copies(cg *c, const jit_node *loop, LLVMValueRef trips) {
    if (!c->m->tg.ptx || LLVMIsConstant(trips)) return 1;
    int size = 0;
    for (int i = 0; i < loop->nbody; i++) {
        if (jit_cg_count_nodes(loop->body[i], stops_unrolling, 0)) return 1;
        size += jit_cg_count_nodes(loop->body[i], NULL, 0);
    }
    return size <= UNROLL_MAX_NODES ? UNROLL_COPIES : 1;
}

/* !llvm.loop !{<self>, !{!"llvm.loop.unroll.disable"}} on a loop's back edge. */
static void never_unroll(cg *c, LLVMValueRef latch) {
    LLVMContextRef ctx = c->m->tg.ctx;
    LLVMMetadataRef disable = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef self = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(ctx, &disable, 1)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id); /* frees the temporary */
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}

/* While counter < end: copies times { the loop variable = start + counter * step;
 * the body; counter += 1 }. Leaves the builder after the loop, where break
 * also goes. A remainder (of fewer than UNROLL_COPIES trips) is not for LLVM
 * to unroll again. */
static int range_loop(cg *c, const jit_node *n, LLVMTypeRef t, LLVMValueRef ctr, LLVMValueRef end,
                      LLVMValueRef start, LLVMValueRef step, int copies, bool remainder) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef one = LLVMConstInt(t, 1, 0);
    LLVMBasicBlockRef cb = jit_cg_block(c, "for.cond"), bb = jit_cg_block(c, "for.body"),
                      inc = jit_cg_block(c, "for.inc"), done = jit_cg_block(c, "for.end");
    LLVMBuildBr(b, cb);
    LLVMPositionBuilderAtEnd(b, cb);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, LLVMBuildLoad2(b, t, ctr, ""), end, ""), bb,
                    done);
    LLVMPositionBuilderAtEnd(b, bb);
    if (c->nloops >= 64) return jit_cg_fail(c, n, "loops nest too deeply");
    for (int j = 0; j < copies; j++) {
        if (j) LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, t, ctr, ""), one, ""), ctr);
        LLVMValueRef k = LLVMBuildLoad2(b, t, ctr, "");
        LLVMBuildStore(b, LLVMBuildAdd(b, start, LLVMBuildMul(b, k, step, ""), ""),
                       c->vars[n->a->v.var]);
        c->brk[c->nloops] = done;
        c->cont[c->nloops++] = inc;
        int rc = jit_cg_stmts(c, n->body, n->nbody);
        c->nloops--;
        if (rc < 0) return -1;
    }
    LLVMBuildBr(b, inc);
    LLVMPositionBuilderAtEnd(b, inc);
    LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, t, ctr, ""), one, ""), ctr);
    cancel_check(c, CANCEL_EVERY_FOR);
    LLVMValueRef latch = LLVMBuildBr(b, cb);
    if (remainder) never_unroll(c, latch);
    LLVMPositionBuilderAtEnd(b, done);
    return 0;
}

/* The loop's copies: unrolled on PTX, and without the cancel check where the
 * loop is short (below). Leaves the builder after the loop. */
int jit_cg_range_loops(cg *c, const jit_node *n, const range_trips *r) {
    LLVMBuilderRef b = c->m->b;
    LLVMTypeRef t = r->t;
    LLVMValueRef ctr = r->ctr, count = r->count, start = r->start, step = r->step;
    int copies = unroll_copies(c, n, count);
    if (copies > 1) { /* no break in its body: the copies' loop only ever exits to the rest */
        LLVMValueRef whole =
            LLVMBuildSub(b, count, LLVMBuildURem(b, count, LLVMConstInt(t, copies, 0), ""), "");
        if (range_loop(c, n, t, ctr, whole, start, step, copies, false) < 0) return -1;
    }
    if (copies == 1 && c->m->cancel_checks && c->cancel_flag &&
        jit_cg_count_nodes(n, jit_cg_stops_versioning, 0) == 1) {
        /* An innermost loop shorter than the cancel check's period would
         * never read the flag, yet the check's branch and early exit keep
         * a CPU compiler from vectorising it (Intel's runtime: a pairwise
         * distance 1.9x slower): such a loop runs in a copy without it. */
        LLVMBasicBlockRef shrt = jit_cg_block(c, "for.short"), lng = jit_cg_block(c, "for.long"),
                          join = jit_cg_block(c, "for.join");
        LLVMBuildCondBr(
            b, LLVMBuildICmp(b, LLVMIntULT, count, LLVMConstInt(t, CANCEL_EVERY_FOR, 0), ""), shrt,
            lng);
        LLVMPositionBuilderAtEnd(b, shrt);
        c->m->cancel_checks = false;
        int rc = range_loop(c, n, t, ctr, count, start, step, 1, false);
        c->m->cancel_checks = true;
        if (rc < 0) return -1;
        LLVMBuildBr(b, join);
        LLVMPositionBuilderAtEnd(b, lng);
        if (range_loop(c, n, t, ctr, count, start, step, 1, false) < 0) return -1;
        LLVMBuildBr(b, join);
        LLVMPositionBuilderAtEnd(b, join);
        return 0;
    }
    return range_loop(c, n, t, ctr, count, start, step, 1, copies > 1);
}

int jit_cg_while(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    LLVMBasicBlockRef cb = jit_cg_block(c, "while.cond"), bb = jit_cg_block(c, "while.body"),
                      done = jit_cg_block(c, "while.end");
    LLVMBuildBr(b, cb);
    LLVMPositionBuilderAtEnd(b, cb);
    cancel_check(c, CANCEL_EVERY_WHILE); /* here, where continue comes back too */
    LLVMValueRef cond = jit_cg_truth(c, n->a);
    if (!cond) return -1;
    LLVMBuildCondBr(b, cond, bb, done);
    LLVMPositionBuilderAtEnd(b, bb);
    if (c->nloops >= 64) return jit_cg_fail(c, n, "loops nest too deeply");
    c->brk[c->nloops] = done;
    c->cont[c->nloops++] = cb;
    int rc = jit_cg_stmts(c, n->body, n->nbody);
    c->nloops--;
    if (rc < 0) return -1;
    LLVMBuildBr(b, cb);
    LLVMPositionBuilderAtEnd(b, done);
    return 0;
}

/* Python's trip count, computed once: a loop of a known count (a counter
 * from 0) is one LLVM unrolls and vectorises whatever the step's sign, and
 * it cannot overflow past stop. Assigning the loop variable in the body
 * does not change the iteration. */
static LLVMValueRef trip_count(cg *c, LLVMTypeRef t, bool sg, LLVMValueRef start, LLVMValueRef stop,
                               LLVMValueRef step) {
    LLVMBuilderRef b = c->m->b;
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
    LLVMValueRef pos = LLVMBuildICmp(b, sg ? LLVMIntSGT : LLVMIntNE, step, zero, "");
    LLVMValueRef neg =
        sg ? LLVMBuildICmp(b, LLVMIntSLT, step, zero, "") : LLVMConstInt(c->m->i1, 0, 0);
    LLVMValueRef mag = sg ? LLVMBuildSelect(b, neg, LLVMBuildNeg(b, step, ""), step, "") : step;
    mag = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, mag, zero, ""), one, mag, "");
    LLVMValueRef lo = LLVMBuildSelect(b, neg, stop, start, ""),
                 hi = LLVMBuildSelect(b, neg, start, stop, "");
    LLVMValueRef runs =
        LLVMBuildAnd(b, LLVMBuildICmp(b, sg ? LLVMIntSLT : LLVMIntULT, lo, hi, ""),
                     LLVMBuildOr(b, pos, neg, ""), ""); /* range(..., 0) runs nothing */
    LLVMValueRef count = LLVMBuildAdd(
        b, LLVMBuildUDiv(b, LLVMBuildSub(b, LLVMBuildSub(b, hi, lo, ""), one, ""), mag, ""), one,
        "");
    return LLVMBuildSelect(b, runs, count, zero, "trips");
}

/* for v in range(...): the arguments in the loop variable's type, then the
 * loop (jit_cg_hoist's, which runs range_loops). */
int jit_cg_for(cg *c, jit_node *n) {
    LLVMBuilderRef b = c->m->b;
    jit_type lt_ = c->f->var_types[n->a->v.var];
    LLVMTypeRef t = jit_cg_ltype(c, lt_);
    bool sg = jit_dtype_is_signed(jit_cg_dt_of(c, lt_));
    LLVMValueRef args[3];
    for (int i = 0; i < n->nkids; i++) {
        LLVMValueRef v = jit_cg_expr(c, n->kids[i]);
        if (!v) return -1;
        args[i] = jit_cg_conv(c, v, n->kids[i]->type, lt_);
    }
    LLVMValueRef start = n->nkids > 1 ? args[0] : LLVMConstInt(t, 0, 0);
    LLVMValueRef stop = n->nkids > 1 ? args[1] : args[0];
    LLVMValueRef step = n->nkids > 2 ? args[2] : LLVMConstInt(t, 1, 0);
    if (c->m->bc &&
        !LLVMIsAConstantInt(step) && /* Python's ValueError (a constant 0 is a CompileError) */
        jit_cg_fault_check(c, n->kids[2],
                           LLVMBuildICmp(b, LLVMIntEQ, step, LLVMConstInt(t, 0, 0), ""),
                           JIT_FAULT_ZERO_STEP, NULL) < 0)
        return -1;
    LLVMValueRef count = trip_count(c, t, sg, start, stop, step);
    LLVMValueRef ctr = jit_cg_entry_alloca(c, t, "range.k");
    LLVMBuildStore(b, LLVMConstInt(t, 0, 0), ctr);
    range_trips trips = {t, sg, ctr, count, start, step};
    return jit_cg_hoisted_loops(c, n, &trips);
}
