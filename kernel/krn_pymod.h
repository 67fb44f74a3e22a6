/* krn_pymod: the built-in module _offload_kernel, the kernel's primitives
 * for Python: OutStream (sys.stdout and sys.stderr), mimebundle, publish,
 * clear_output, input, iopub, parent, set_shell and StdinNotImplementedError.
 * The glue under share/offload_kernel builds display(), the IPython shell
 * and comms on these. GIL held. */
#ifndef KRN_PYMOD_H
#define KRN_PYMOD_H

#include <Python.h>
#include <stdbool.h>

#include "krn_io.h"

PyObject *krn_pymod_init(void); /* for PyImport_AppendInittab */
/* The server's publish and stdin functions (kept; before the first cell). */
void krn_pymod_set_io(const krn_io *io);
/* The request being served: its header is the parent of input_request and
 * of parent(), and allow_stdin says whether input() may ask. Borrowed until
 * the next call (NULL = none). */
void krn_pymod_set_request(const krn_msg *request, bool allow_stdin);
/* IPython's shell (share/offload_kernel/shell.py) once made, else NULL; borrowed. */
PyObject *krn_pymod_shell(void);
/* A new text stream writing to KRN_STDOUT or KRN_STDERR. */
PyObject *krn_pymod_stream(int which);

#endif
