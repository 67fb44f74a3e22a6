/* krn_log: the Jupyter kernel's own diagnostics.
 *
 * Lines go to the stderr the process was started with (saved before output
 * capture takes over fd 2), so they reach the frontend's log, never a cell.
 * OFFLOAD_LOG=error|warn|info|debug picks the level (default warn).
 * Any thread may call; each line is written with one write(2). */
#ifndef KRN_LOG_H
#define KRN_LOG_H

typedef enum { KRN_LOG_ERROR, KRN_LOG_WARN, KRN_LOG_INFO, KRN_LOG_DEBUG } krn_log_level;

void krn_log_init(void);
/* Keep logging to the original stderr after fd 2 is redirected: call before. */
void krn_log_keep_stderr(void);
int krn_log_enabled(krn_log_level level);
void krn_log(krn_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
