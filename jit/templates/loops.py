"""The kernels prange loops become (docs/loops.md), in the kernel language,
one template per shape of jit_loop_form (jit/jit.h). At a loop's first launch
jit/jit_loops.c has jit/templates/expand.py make its kernel from one of them:
the template's tree with what varies filled in, and the loop's own body (its
nodes keeping the cell's places) where `_ofl_body` stands. The file is never
run as kernels; it is read as a tree.

Names in capitals are placeholders, filled in at expansion as a library
kernel's compile-time parameters are at its specialisation:
  I0 I1 I2   the loop's variables, outermost first; IL the last one's
  L          the last dimension's number (_ofl_sL: its start)
  NDIM       the number of dimensions, 1 to 3
  UNIT_LAST  whether the last dimension steps by 1
  UNROLLED   whether the body may be copied (jit_loop.unrollable)
  WIDTH      lanes of a CPU run, and copies of the body (JIT_LOOP_LANES_WIDTH)
  LANES      work-items per row of a GPU nest (jit_loop_form.lanes)
  GROUP      work-items per work-group of a GPU reduction (JIT_LOOP_GROUP)
A capital inside a longer name is filled in too: _ofl_p_RED is reduction
RED's partials.

In a signature, a placeholder stands for a run of parameters, in the order
jit_loop_kernel's contract gives:
  PARAMS     the loop's values (arrays, numbers)
  STEPS      _ofl_s0, _ofl_d0, _ofl_s1, _ofl_d1, ...: start and step per dimension
  TRIPS      _ofl_n0, _ofl_n1, ...: trip count per dimension
  PARTIALS   _ofl_p_RED per reduction: a partial per work-item
  INITIALS   _ofl_i_RED per min or max reduction: its value before the loop

What is repeated or chosen at expansion:
  for RED, OP in REDUCTIONS:   once per reduction: its name, its operator
                               ('add', 'mul', 'min', 'max')
  for U in COPIES:             once per copy of the body, 0 to WIDTH - 1
  for U, V in COPY_TREE:       the copies' pairs folded as a tree: (0, 8), ...,
                               (7, 15), (0, 4), ..., (0, 1)
  for H in GROUP_HALVES:       the work-group's tree: 128, 64, ..., 1
  if NDIM == 3: ...            an `if` that reads only placeholders: the branch
                               it takes
  initial(A)                   a call of a function of this file: its body,
                               its capitals bound to the arguments
  _ofl_body                    the loop's body
  _ofl_body(RED=_ofl_uU_RED)   the body with each reduction renamed
A dimension that steps by 1 is compiled as such: `x * _ofl_dD` is `x` there.
"""


# ---- the map shape: one work-item per iteration ----------------------------


def map(_ofl_item, PARAMS, STEPS):
    I0 = _ofl_s0 + _ofl_item.get_id(0) * _ofl_d0
    if NDIM >= 2:
        I1 = _ofl_s1 + _ofl_item.get_id(1) * _ofl_d1
    if NDIM == 3:
        I2 = _ofl_s2 + _ofl_item.get_id(2) * _ofl_d2
    _ofl_body


# A body that continues gets one-trip loops to bind the variables, so that
# `continue` ends the iteration; others plain assignments (Intel's vectoriser
# masked every load and store of a one-trip loop).
def map_continue(_ofl_item, PARAMS, STEPS):
    for I0 in range(_ofl_s0 + _ofl_item.get_id(0) * _ofl_d0,
                    _ofl_s0 + _ofl_item.get_id(0) * _ofl_d0 + 1):
        if NDIM == 1:
            _ofl_body
        else:
            for I1 in range(_ofl_s1 + _ofl_item.get_id(1) * _ofl_d1,
                            _ofl_s1 + _ofl_item.get_id(1) * _ofl_d1 + 1):
                if NDIM == 2:
                    _ofl_body
                else:
                    for I2 in range(_ofl_s2 + _ofl_item.get_id(2) * _ofl_d2,
                                    _ofl_s2 + _ofl_item.get_id(2) * _ofl_d2 + 1):
                        _ofl_body


# ---- the run shapes: a reduction on a CPU device ---------------------------
#
# Run r takes the flat iterations [r * _ofl_c, min(r * _ofl_c + _ofl_c,
# _ofl_total)), a row (of the last dimension) at a time, so that the outer
# dimensions' variables are found by one division per row. lanes' runs are
# work-groups, acc's work-items. A row is walked by a `for`, not a `while`: a
# short `for` has no cancel check on its back edge.


def lanes(_ofl_item, PARAMS, STEPS, TRIPS, _ofl_c, _ofl_total, PARTIALS, INITIALS):
    for RED, OP in REDUCTIONS:
        initial(RED)
    _ofl_l = _ofl_item.get_local_id(0)
    _ofl_t = _ofl_item.get_group().get_group_id(0) * _ofl_c
    _ofl_hi = min(_ofl_t + _ofl_c, _ofl_total)
    if NDIM == 1:
        _ofl_a = _ofl_t
        _ofl_b = _ofl_hi
        lanes_row()
    else:
        for _ofl_row in range(_ofl_t // _ofl_nL, (_ofl_hi + _ofl_nL - 1) // _ofl_nL):
            _ofl_a = max(_ofl_t - _ofl_row * _ofl_nL, 0)
            _ofl_b = min(_ofl_hi - _ofl_row * _ofl_nL, _ofl_nL)
            outer_of_row()
            lanes_row()
    for RED, OP in REDUCTIONS:
        _ofl_p_RED[_ofl_item.get_global_id(0)] = RED


# The row's iterations [_ofl_a, _ofl_b): lane _ofl_l takes every WIDTH-th,
# first over the row's whole vectors, then the rest, so that every lane's
# loop has the same trip count (Intel's vectoriser gathered where they
# differed).
def lanes_row():
    _ofl_e = _ofl_a + (_ofl_b - _ofl_a) // WIDTH * WIDTH
    if UNIT_LAST:
        for IL in range(_ofl_sL + _ofl_a + _ofl_l, _ofl_sL + _ofl_e + _ofl_l, WIDTH):
            _ofl_body
        for IL in range(_ofl_sL + _ofl_e + _ofl_l, _ofl_sL + _ofl_b, WIDTH):
            _ofl_body
    else:
        for _ofl_k in range(_ofl_a + _ofl_l, _ofl_e + _ofl_l, WIDTH):
            IL = _ofl_sL + _ofl_k * _ofl_dL
            _ofl_body
        for _ofl_k in range(_ofl_e + _ofl_l, _ofl_b, WIDTH):
            IL = _ofl_sL + _ofl_k * _ofl_dL
            _ofl_body


# Copy U of the body takes iteration _ofl_k + U and accumulates into its own
# variables; after the run they are folded pairwise into the reduction.
# (mod_loops.c takes this shape only where the last dimension steps by 1.)
def acc(_ofl_item, PARAMS, STEPS, TRIPS, _ofl_c, _ofl_total, PARTIALS, INITIALS):
    for RED, OP in REDUCTIONS:
        initial(RED)
    for RED, OP in REDUCTIONS:
        for U in COPIES:
            initial(_ofl_uU_RED)
    _ofl_t = _ofl_item.get_id(0) * _ofl_c
    _ofl_hi = min(_ofl_t + _ofl_c, _ofl_total)
    if NDIM == 1:
        _ofl_a = _ofl_t
        _ofl_b = _ofl_hi
        acc_row()
    else:
        for _ofl_row in range(_ofl_t // _ofl_nL, (_ofl_hi + _ofl_nL - 1) // _ofl_nL):
            _ofl_a = max(_ofl_t - _ofl_row * _ofl_nL, 0)
            _ofl_b = min(_ofl_hi - _ofl_row * _ofl_nL, _ofl_nL)
            outer_of_row()
            acc_row()
    for RED, OP in REDUCTIONS:
        for U, V in COPY_TREE:
            fold(_ofl_uU_RED, _ofl_uV_RED)
        fold(RED, _ofl_u0_RED)
    for RED, OP in REDUCTIONS:
        _ofl_p_RED[_ofl_item.get_id(0)] = RED


def acc_row():
    _ofl_e = _ofl_a + (_ofl_b - _ofl_a) // WIDTH * WIDTH
    for _ofl_k in range(_ofl_sL + _ofl_a, _ofl_sL + _ofl_e, WIDTH):
        for U in COPIES:
            IL = _ofl_k + U
            _ofl_body(RED=_ofl_uU_RED)
    for IL in range(_ofl_sL + _ofl_e, _ofl_sL + _ofl_b):
        _ofl_body


# The outer dimensions' variables of row _ofl_row (of the last dimension).
def outer_of_row():
    if NDIM == 2:
        I0 = _ofl_s0 + _ofl_row * _ofl_d0
    if NDIM == 3:
        _ofl_r0 = _ofl_row // _ofl_n1
        I0 = _ofl_s0 + _ofl_r0 * _ofl_d0
        I1 = _ofl_s1 + (_ofl_row - _ofl_r0 * _ofl_n1) * _ofl_d1


# ---- the stride shape: a reduction on a GPU --------------------------------
#
# A flat loop: work-item w takes the iterations w, w + _ofl_c, ... A nest:
# groups of LANES work-items take rows (of the last dimension) grid-stride,
# each lane every LANES-th iteration of the row, so that a row's loads are one
# coalesced walk; the outer variables cost one division per row. Walking the
# flattened nest instead (indices stepped with carries) made a 2-D sum of
# 2^26 float32 on an H200 3x slower than the flat loop (253 us against 81);
# rows take 84.


def stride(_ofl_item, PARAMS, STEPS, TRIPS, _ofl_c, _ofl_total, PARTIALS, INITIALS):
    for RED, OP in REDUCTIONS:
        initial(RED)
    if NDIM == 1:
        _ofl_r = _ofl_item.get_global_id(0)
        if UNROLLED:
            stride_copies()
        for _ofl_t in range(_ofl_r, _ofl_total, _ofl_c):
            I0 = _ofl_s0 + _ofl_t * _ofl_d0
            _ofl_body
    else:
        _ofl_t = _ofl_item.get_global_id(0)
        if NDIM == 2:
            for _ofl_row in range(_ofl_t // LANES, _ofl_n0, _ofl_c // LANES):
                stride_row()
        else:
            for _ofl_row in range(_ofl_t // LANES, _ofl_n0 * _ofl_n1, _ofl_c // LANES):
                stride_row()
    group_tree()


# A flat loop's work-groups first walk tiles of WIDTH * GROUP iterations,
# grid-stride: work-item l of a group takes l, l + GROUP, ... of its tile,
# each copy of the body into accumulators of its own, so that WIDTH loads are
# in flight at once and a group's loads stay in one stretch of memory (one
# accumulator walking grid-stride, which LLVM unrolled by 4, took the H200's
# float32 sum of 2^26 to 0.8 of CuPy's). What is left after the whole tiles
# goes one iteration at a time.
def stride_copies():
    for RED, OP in REDUCTIONS:
        for U in COPIES:
            initial(_ofl_uU_RED)
    _ofl_tiles = _ofl_total // (WIDTH * GROUP)
    for _ofl_q in range(_ofl_item.get_group().get_group_id(0), _ofl_tiles, _ofl_c // GROUP):
        _ofl_b = _ofl_q * (WIDTH * GROUP) + _ofl_item.get_local_id(0)
        for U in COPIES:
            I0 = _ofl_s0 + (_ofl_b + U * GROUP) * _ofl_d0
            _ofl_body(RED=_ofl_uU_RED)
    _ofl_r += _ofl_tiles * (WIDTH * GROUP)
    for RED, OP in REDUCTIONS:
        for U, V in COPY_TREE:
            fold(_ofl_uU_RED, _ofl_uV_RED)
        fold(RED, _ofl_u0_RED)


def stride_row():
    outer_of_row()
    for _ofl_k in range(_ofl_t % LANES, _ofl_nL, LANES):
        IL = _ofl_sL + _ofl_k * _ofl_dL
        _ofl_body


# The work-group's partials combined into its first work-item's: a tree
# through the partials array (global memory: the accumulators' types are
# known only once the kernel is typed), so that the device's second kernel
# reads one partial per group.
def group_tree():
    _ofl_g = _ofl_item.get_global_id(0)
    _ofl_l = _ofl_item.get_local_id(0)
    for RED, OP in REDUCTIONS:
        _ofl_p_RED[_ofl_g] = RED
    for H in GROUP_HALVES:
        _ofl_ol.group_barrier(_ofl_item.get_group())
        if _ofl_l < H:
            for RED, OP in REDUCTIONS:
                _ofl_a_RED = _ofl_p_RED[_ofl_g]
                _ofl_v_RED = _ofl_p_RED[_ofl_g + H]
                combine(_ofl_a_RED, _ofl_v_RED)
                _ofl_p_RED[_ofl_g] = _ofl_a_RED


# ---- the operators ---------------------------------------------------------


# An accumulator's first value: the operator's identity, or (min, max) the
# reduction's value before the loop.
def initial(A):
    if OP == "add":
        A = 0
    elif OP == "mul":
        A = 1
    else:
        A = _ofl_i_RED


# A = A (op) B, as the reduction's own statement would.
def fold(A, B):
    if OP == "add":
        A += B
    elif OP == "mul":
        A *= B
    elif OP == "min":
        A = min(A, B)
    else:
        A = max(A, B)


# A = A (op) V as the work-group's combine does it: min and max keep a NaN, as
# NumPy's minimum and maximum do (and module/kernels/reduce.py's).
def combine(A, V):
    if OP == "add":
        A = A + V
    elif OP == "mul":
        A = A * V
    elif OP == "min":
        A = V if (V < A) | (V != V) else A
    else:
        A = V if (V > A) | (V != V) else A
