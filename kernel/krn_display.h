/* krn_display: an object to a Jupyter mimebundle, the way IPython's display
 * formatter does: _repr_mimebundle_, then _repr_html_, _repr_markdown_,
 * _repr_svg_, _repr_png_, _repr_jpeg_, _repr_pdf_, _repr_latex_, _repr_json_,
 * _repr_javascript_, and always text/plain from repr(). A method that raises
 * is reported on stderr and skipped. Binary images are base64-encoded.
 * Once IPython's shell exists, its DisplayFormatter does this instead.
 * Used by the displayhook and by display(). GIL held. */
#ifndef KRN_DISPLAY_H
#define KRN_DISPLAY_H

#include <Python.h>

/* New references to two dicts in *data and *metadata; -1 with an exception set. */
int krn_display_format(PyObject *obj, PyObject *include, PyObject *exclude, PyObject **data,
                       PyObject **metadata);

/* From now on format with IPython's DisplayFormatter.format (NULL: the kernel's own). */
void krn_display_use_formatter(PyObject *format);

#endif
