/* ofl_cuda_compiler: each CUDA device's two compiler threads, where the
 * driver turns PTX into machine code: one loads each program quickly for its
 * first launches, the other (the tuner) then builds it fully. Owns the
 * threads, their warm-up and the tuner's queue; ofl_cuda.c is its only
 * caller. ofl_cuda_compiler.c says why. */
#ifndef OFL_CUDA_COMPILER_H
#define OFL_CUDA_COMPILER_H

#include "ofl_backend.h"

/* Starts dev's compiler threads, the first of which warms itself up at once;
 * the first call per device only. At the device's open, with its lock held.
 * Without threads (none could be made) loads run on the caller's thread, at
 * the driver's full optimisation level. */
void ofl_cuda_compiler_start(ofl_device *dev);

/* Loads PTX text (ending in '\0') into prog's device's current context, for
 * prog. When the tuner can follow up, the load is at the driver's lowest
 * optimisation level and prog's full build is queued for the tuner, which
 * sets prog->h.cu.tuned_* when done (ofl_cuda_forget undoes the queuing).
 * The driver's error log goes to log[loglen]. Inside enter/leave (the lock
 * held, the context pushed), after prog->generation is set. */
CUresult ofl_cuda_load_ptx(ofl_program *prog, CUmodule *mod, const char *ptx, char *log,
                           size_t loglen);

/* Takes prog off the tuner's queue, or waits for the tuner to finish it:
 * afterwards the tuner holds no reference to prog. Before prog is freed. */
void ofl_cuda_forget(ofl_program *prog);

#endif
