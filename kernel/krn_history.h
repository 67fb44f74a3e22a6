/* krn_history: the inputs (and text outputs) of this kernel session, for
 * history_request (tail, range, search) and the In list. In memory, per
 * process: a restart starts a new session. Main thread only. */
#ifndef KRN_HISTORY_H
#define KRN_HISTORY_H

#include <jansson.h>
#include <stdbool.h>

#define KRN_HISTORY_SESSION 1

void krn_history_add(int line, const char *input);
/* text/plain of the line's execute_result; replaces an earlier one. */
void krn_history_set_output(int line, const char *text);
/* Content of a history_reply (status + history) for a history_request content. */
json_t *krn_history_reply(const json_t *request);
void krn_history_free(void);

#endif
