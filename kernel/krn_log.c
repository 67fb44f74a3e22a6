/* krn_log: the kernel's diagnostics to the stderr it started with (krn_log.h). */
#include "krn_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static krn_log_level max_level = KRN_LOG_WARN;
static int log_fd = 2;

void krn_log_init(void) {
    static const char *names[] = {"error", "warn", "info", "debug"};
    const char *env = getenv("OFFLOAD_LOG");
    if (!env) return;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(env, names[i]) == 0) max_level = (krn_log_level)i;
}

void krn_log_keep_stderr(void) {
    int fd = dup(2);
    if (fd >= 0) log_fd = fd;
}

int krn_log_enabled(krn_log_level level) { return level <= max_level; }

void krn_log(krn_log_level level, const char *fmt, ...) {
    static const char *tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    if (level > max_level) return;
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "[offload %02d:%02d:%02d.%03ld %s] ", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, tags[level]);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t unused = write(log_fd, line, (size_t)n);
    (void)unused;
}
