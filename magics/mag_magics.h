/* mag_magics: IPython-style magics of the offload kernel.
 *
 * mag_transform rewrites a cell before it is compiled: a line `%name args`
 * becomes a call of _offload_magics.run_line_magic (line numbers are kept), a
 * first line `%%name args` turns the whole cell into one run_cell_magic call,
 * and `obj?` / `obj??` becomes a help request. That rewrite serves kernels
 * without IPython; with IPython, its transformers do it and these magics are
 * registered in IPython's MagicsManager. The magics themselves live in
 * the built-in module _offload_magics, so they run as ordinary Python and
 * print through the kernel's streams. Called by kernel/ with the GIL held. */
#ifndef MAG_MAGICS_H
#define MAG_MAGICS_H

#include <Python.h>
#include <stdbool.h>

typedef enum { MAG_CODE, MAG_HELP } mag_kind;

typedef struct {
    mag_kind kind;
    char *text; /* Python source (MAG_CODE) or the expression to explain (MAG_HELP); owned */
    int detail; /* MAG_HELP: 0 for obj?, 1 for obj?? */
} mag_cell;

int mag_transform(const char *cell, mag_cell *out);
/* A cell that is one `obj?` / `obj??`: fills out (MAG_HELP) and says true. */
bool mag_help_request(const char *cell, mag_cell *out);
/* Would IPython's input transformers change this cell? (Then the kernel
 * hands it to them, when IPython is installed.) */
bool mag_needs_ipython(const char *cell);
void mag_cell_clear(mag_cell *cell);

/* The file name of the cell now running (NULL when none), for %%offload's
 * messages: the kernel sets it around each cell. */
void mag_set_cell_filename(PyObject *filename);

/* Every magic name without percent signs, NULL-terminated (for completion). */
const char *const *mag_names(void);

PyObject *mag_module_init(void);
/* Is exc a UsageError (a misused or unknown magic)? */
int mag_is_usage_error(PyObject *exc); /* _offload_magics, for PyImport_AppendInittab */

#endif
