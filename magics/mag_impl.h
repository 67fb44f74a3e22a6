/* mag_impl: what the files of magics/ share. Internal to magics/. */
#ifndef MAG_IMPL_H
#define MAG_IMPL_H

#include <stdbool.h>

#include "mag_magics.h"

/* A magic: ns is the user namespace, args the rest of the % line, body the
 * cell below a %% line (NULL for line magics). New reference or NULL. */
typedef PyObject *(*mag_fn)(PyObject *ns, const char *args, const char *body);

extern PyObject *mag_UsageError; /* _offload_magics.UsageError */

const char *mag_skip_blank(const char *s);

/* display(bundle, raw=True) through the kernel's display(), with display_id
 * (and update=True to replace what was shown under it) unless NULL. 1 when
 * shown, 0 where there is no display() (outside the kernel), -1 with an
 * exception. */
int mag_display(PyObject *bundle, PyObject *display_id, bool update);

PyObject *mag_time(PyObject *ns, const char *args, const char *body);
PyObject *mag_timeit(PyObject *ns, const char *args, const char *body);
PyObject *mag_offload(PyObject *ns, const char *args, const char *body);
PyObject *mag_lsplatform(PyObject *ns, const char *args, const char *body);
PyObject *mag_devices(PyObject *ns, const char *args, const char *body);
PyObject *mag_device(PyObject *ns, const char *args, const char *body);
PyObject *mag_kernels(PyObject *ns, const char *args, const char *body);

#endif
