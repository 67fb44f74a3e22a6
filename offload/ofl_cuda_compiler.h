/* ofl_cuda_compiler: each CUDA device's compiler thread, where the driver
 * turns PTX into machine code. Owns the thread and the warm-up it starts
 * with; ofl_cuda.c is its only caller. ofl_cuda_compiler.c says why. */
#ifndef OFL_CUDA_COMPILER_H
#define OFL_CUDA_COMPILER_H

#include "ofl_backend.h"

/* Starts dev's compiler thread, which warms itself up at once; the first call
 * per device only. At the device's open, with its lock held. Without a thread
 * (none could be made) loads simply run on the caller's thread. */
void ofl_cuda_compiler_start(ofl_device *dev);

/* Loads PTX text (ending in '\0') into dev's current context: on the compiler
 * thread once it is warm, else on this one. The driver's error log goes to
 * log[loglen]. Inside enter/leave (the lock held, the context pushed). */
CUresult ofl_cuda_load_ptx(ofl_device *dev, CUmodule *mod, const char *ptx, char *log,
                           size_t loglen);

#endif
