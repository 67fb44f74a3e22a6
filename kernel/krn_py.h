/* krn_py: the embedded CPython that runs notebook cells.
 *
 * Owns the interpreter, the user namespace (__main__), In/Out and the
 * _ __ ___ variables, tracebacks, and the calls into the Python glue under
 * share/offload_kernel (completion, inspection, is_complete, displays).
 * Called by the request handlers on the main thread, with the GIL held. */
#ifndef KRN_PY_H
#define KRN_PY_H

#include <jansson.h>
#include <stdbool.h>

#include "krn_io.h"
#include "krn_wire.h"

/* Starts the interpreter, which publishes and reads stdin through io (kept);
 * returns holding the GIL. */
int krn_py_init(const krn_io *io, char *err, size_t errlen);
void krn_py_finalize(void);
/* "3.11.7" and the long sys.version, valid after init. */
const char *krn_py_version(void);
const char *krn_py_sys_version(void);

typedef struct {
    const char *code;
    int count;          /* the In[] number of this cell */
    bool silent;        /* no output, no history, no displayhook */
    bool store_history; /* record in In/history and Out */
} krn_exec_request;

typedef struct {
    bool ok;
    json_t *error;    /* {ename, evalue, traceback} when !ok; owned */
    bool error_shown; /* the cell's output has the error already: publish no `error` */
    json_t *payload;  /* array of payload dicts; owned */
} krn_exec_result;

void krn_py_execute(const krn_exec_request *req, krn_exec_result *out);
/* user_expressions of an execute_request: name -> mimebundle or error. */
json_t *krn_py_user_expressions(const json_t *expressions);

json_t *krn_py_complete(const char *code, int cursor_pos);
json_t *krn_py_inspect(const char *code, int cursor_pos, int detail_level);
json_t *krn_py_is_complete(const char *code);

/* A comm_open/comm_msg/comm_close from the frontend, to the comm manager of
 * the `comm` package (ipywidgets); false when none is loaded. */
bool krn_py_comm(const krn_msg *msg);
/* comm_info_reply's comms for a comm_info_request content. */
json_t *krn_py_comm_info(const json_t *request);

#endif
