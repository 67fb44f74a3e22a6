/* The offload Python module as the Jupyter kernel (kernel/) sees it: its init
 * function and the interrupt hooks. Everything else stays inside module/,
 * whose rooms are core/ (arrays, devices, errors), launch/ (kernels, loops)
 * and lib/ (the generated-kernel array library), tied together by
 * mod_module.c. */
#ifndef MOD_PUBLIC_H
#define MOD_PUBLIC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The module's init (single-phase: one instance per process); the kernel
 * registers it with PyImport_AppendInittab("offload", PyInit_offload). */
PyMODINIT_FUNC PyInit_offload(void);
/* From the kernel's SIGINT handler (async-signal-safe): device waits end at
 * their next poll, even when the Python-level signal was taken on the way. */
void mod_request_interrupt(void);
/* At the end of a cell: an interrupt that no wait took (it stopped the cell's
 * Python between two device calls) stops the work queued on the devices all
 * the same. */
void mod_end_interrupt(void);
/* Where the module's debug lines (the JIT's disk cache: hits, misses,
 * rebuilt entries) go instead of stderr, which is a cell's output inside the
 * kernel. Set before any thread compiles. */
void mod_set_debug_log(void (*log)(const char *line));

#endif
