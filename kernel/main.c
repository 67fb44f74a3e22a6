/* offload-kernel: a Jupyter kernel for Python, written in C.
 *
 *   offload-kernel -f CONNECTION_FILE
 *
 * Jupyter clients start it through the kernelspec "offload". */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "mod_public.h"
#include "krn_conn.h"
#include "krn_log.h"
#include "krn_server.h"

static int usage(FILE *to, int status) {
    fprintf(to,
            "usage: offload-kernel -f CONNECTION_FILE\n"
            "A Jupyter kernel for Python that offloads to devices (offload %s).\n"
            "Environment: OFFLOAD_LOG=error|warn|info|debug\n",
            PACKAGE_VERSION);
    return status;
}

/* The JIT's disk cache logs here, not to fd 2: that is a cell's stderr. */
static void log_cache_line(const char *line) { krn_log(KRN_LOG_DEBUG, "cache: %s", line); }

int main(int argc, char **argv) {
    const char *conn_file = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--connection-file") == 0) &&
            i + 1 < argc)
            conn_file = argv[++i];
        else if (strncmp(argv[i], "--connection-file=", 18) == 0)
            conn_file = argv[i] + 18;
        else if (strcmp(argv[i], "--version") == 0)
            return printf("offload-kernel %s\n", PACKAGE_VERSION) < 0;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage(stdout, 0);
        else
            return usage(stderr, 2);
    }
    if (!conn_file) return usage(stderr, 2);

    /* glibc reads the time zone once, on the first localtime call, under a
     * lock of its own; doing it here, before any thread, keeps the log's and
     * Python's later localtime calls read-only. */
    tzset();
    krn_log_init();
    krn_log_keep_stderr();
    mod_set_debug_log(log_cache_line);
    krn_conn conn;
    char err[512];
    if (krn_conn_load(conn_file, &conn, err, sizeof err)) {
        krn_log(KRN_LOG_ERROR, "%s", err);
        return 1;
    }
    int status = krn_server_run(&conn);
    krn_conn_clear(&conn);
    return status;
}
