/* offload-clbuild: the process in which an OpenCL compiler builds SPIR-V
 * apart from the notebook's process (ofl_buildproc.c starts it and says why).
 * It links the ICD loader and ofl_icd.c, which finds the platforms of the
 * vendor library named by argv[1] as the parent did, without the loader's
 * registry (a pip-installed runtime is not in it).
 *
 * argv[2] is the name of the device to build for. Requests come on fd 0, as
 * a 64-bit byte count and that much SPIR-V; each answer goes to fd 1 as a
 * 32-bit OpenCL status, a 64-bit byte count and the bytes: the program binary
 * when the status is CL_SUCCESS, else the build log. It exits at end of input
 * or on a short write (status 1), at once with status 3 where it finds no
 * such device, and dies as the compiler does: its parent tells a crash from
 * its exit status. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ofl_backend.h"

static bool io_all(int fd, void *buf, size_t n, bool writing) {
    char *p = buf;
    while (n > 0) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k, n -= (size_t)k;
    }
    return true;
}

static bool answer(cl_int status, const void *bytes, uint64_t n) {
    int32_t st = status;
    return io_all(1, &st, sizeof st, true) && io_all(1, &n, sizeof n, true) &&
           io_all(1, (void *)bytes, n, true);
}

/* posix_spawn passes every descriptor the parent left open without
 * close-on-exec (a notebook's sockets, a test's pipes); holding them would
 * keep a port bound or a pipe open after the parent is gone. */
static void close_inherited(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    int mine = dirfd(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != mine) close(fd);
    }
    closedir(d);
}

static cl_device_id find_device(const char *runtime, const char *want) {
    void *lib = dlopen(runtime, RTLD_NOW | RTLD_LOCAL);
    cl_platform_id ps[16];
    cl_uint np = lib ? ofl_icd_library_platforms(lib, ps, 0, 16) : 0;
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id ds[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS) continue;
        for (cl_uint j = 0; j < nd && j < 16; j++) {
            char name[256] = "";
            clGetDeviceInfo(ds[j], CL_DEVICE_NAME, sizeof name, name, NULL);
            if (strcmp(name, want) == 0) return ds[j];
        }
    }
    return NULL;
}

/* One build: the binary, or the status and the log that says why not. */
static bool build(cl_context ctx, cl_device_id d, const void *il, size_t size) {
    cl_int rc;
    cl_program p = clCreateProgramWithIL(ctx, il, size, &rc);
    if (!p) return answer(rc, "", 0);
    rc = clBuildProgram(p, 1, &d, "", NULL, NULL);
    size_t n = 0;
    unsigned char *out = NULL;
    if (rc == CL_SUCCESS) {
        rc = clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
        out = rc == CL_SUCCESS ? malloc(n ? n : 1) : NULL;
        if (rc == CL_SUCCESS && !out) rc = CL_OUT_OF_HOST_MEMORY;
        if (out) rc = clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof out, &out, NULL);
    } else if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
               (out = malloc(n + 1)) != NULL) {
        if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, out, NULL) != CL_SUCCESS) n = 0;
    } else {
        n = 0;
    }
    bool ok = answer(rc, out ? out : (unsigned char *)"", out ? n : 0);
    free(out);
    clReleaseProgram(p);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s RUNTIME-LIBRARY DEVICE-NAME (offload starts it)\n", argv[0]);
        return 2;
    }
    close_inherited();
    /* No PR_SET_PDEATHSIG: it fires when the thread that started us ends,
     * and any Python thread may have. End of input says the parent is gone. */
    signal(SIGINT, SIG_IGN); /* an interrupt is for the notebook's code, not its compiler */
    cl_device_id d = find_device(argv[1], argv[2]);
    cl_context ctx = d ? clCreateContext(NULL, 1, &d, NULL, NULL, NULL) : NULL;
    if (!ctx) return 3; /* the parent then builds in its own process, as without us */
    for (uint64_t size; io_all(0, &size, sizeof size, false);) {
        void *il = malloc(size ? size : 1);
        bool ok = il && io_all(0, il, size, false);
        if (ok) ok = build(ctx, d, il, size);
        free(il);
        if (!ok) return 1;
    }
    return 0;
}
