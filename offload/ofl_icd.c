/* ofl_icd: OpenCL runtimes that pip installed, found without the user
 * registering them. Called by ofl_opencl.c's discovery only.
 *
 * A wheel such as intel-opencl-rt puts its library in PREFIX/lib and an .icd
 * file in PREFIX/etc/OpenCL/vendors, but no ICD loader looks there, and pip
 * does not run the conda script that would write the real path into that file
 * (it names /opt/anaconda1anaconda2anaconda3/...). So for each prefix handed
 * in (the module gives the Python's install prefixes) each .icd file's library
 * is opened -- as written if that exists, else as PREFIX/lib/<its basename> --
 * and asked for its platforms through the ICD entry point every vendor library
 * exports. Their objects carry the vendor's dispatch table, so the loader's
 * entry points (clGetDeviceIDs, ...) serve them like any registered platform.
 * A library that does not load leaves a note that names what is missing.
 * OCL_ICD_VENDORS or OCL_ICD_FILENAMES set turns this search off: whoever
 * sets them has said which runtimes to see. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ofl_backend.h"

typedef cl_int (*icd_get_platforms_fn)(cl_uint, cl_platform_id *, cl_uint *);
typedef void *(*ext_address_fn)(const char *);

static char prefixes[4096];

void ofl_set_runtime_prefixes(const char *list) {
    snprintf(prefixes, sizeof prefixes, "%s", list ? list : "");
}

/* The pip package that provides a library the Intel runtime needs. */
static const char *package_of(const char *missing) {
    static const struct {
        const char *lib, *package;
    } known[] = {
        {"libsvml", "intel-cmplr-lib-rt"},
        {"libimf", "intel-cmplr-lib-rt"},
        {"libirng", "intel-cmplr-lib-rt"},
        {"libintlc", "intel-cmplr-lib-rt"},
        {"libirc", "intel-cmplr-lib-rt"},
        {"libtbb", "tbb"},
        {"libhwloc", "tbb"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strncmp(missing, known[i].lib, strlen(known[i].lib)) == 0) return known[i].package;
    return NULL;
}

/* "libsvml.so: cannot open shared object file: ..." -> a sentence naming the
 * library and, where known, the package to install. */
static void note_failure(const char *path, const char *why, char *note, size_t notelen) {
    char missing[128] = "";
    const char *colon = why ? strchr(why, ':') : NULL;
    if (colon && strstr(why, "cannot open shared object file"))
        snprintf(missing, sizeof missing, "%.*s", (int)(colon - why), why);
    const char *pkg = missing[0] ? package_of(missing) : NULL;
    size_t used = strlen(note);
    if (used >= notelen) return;
    if (pkg)
        snprintf(note + used, notelen - used,
                 "%s%s cannot load: %s is missing (pip install %s into this Python)",
                 used ? "; " : "", path, missing, pkg);
    else
        snprintf(note + used, notelen - used, "%s%s cannot load: %s", used ? "; " : "", path,
                 why ? why : "unknown error");
}

/* The library an .icd file names, resolved against its prefix; "" if none. */
static void icd_library(const char *prefix, const char *icd, char *out, size_t outlen) {
    char line[PATH_MAX] = "";
    FILE *f = fopen(icd, "r");
    out[0] = '\0';
    if (!f) return;
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) return;
    if (line[0] == '/' && access(line, R_OK) == 0) {
        snprintf(out, outlen, "%s", line);
        return;
    }
    const char *base = strrchr(line, '/');
    int n = snprintf(out, outlen, "%s/lib/%s", prefix, base ? base + 1 : line);
    if (n < 0 || (size_t)n >= outlen || access(out, R_OK) != 0) out[0] = '\0';
}

static bool seen_before(char (*paths)[PATH_MAX], size_t n, const char *path) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(paths[i], path) == 0) return true;
    return false;
}

cl_uint ofl_icd_library_platforms(void *lib, cl_platform_id *ps, cl_uint np, cl_uint max) {
    /* Loaders ask for the entry point through the library's own
     * clGetExtensionFunctionAddress: Intel's does not export it by name. */
    ext_address_fn ext = (ext_address_fn)dlsym(lib, "clGetExtensionFunctionAddress");
    void *sym = ext ? ext("clIcdGetPlatformIDsKHR") : NULL;
    icd_get_platforms_fn get =
        (icd_get_platforms_fn)(sym ? sym : dlsym(lib, "clIcdGetPlatformIDsKHR"));
    cl_uint n = 0;
    if (!get || get(0, NULL, &n) != CL_SUCCESS || n == 0) return np;
    cl_platform_id *mine = calloc(n, sizeof *mine);
    if (mine && get(n, mine, NULL) == CL_SUCCESS) {
        for (cl_uint i = 0; i < n && np < max; i++) {
            bool dup = false;
            for (cl_uint j = 0; j < np && !dup; j++) dup = ps[j] == mine[i];
            if (!dup) ps[np++] = mine[i];
        }
    }
    free(mine);
    return np;
}

cl_uint ofl_icd_add_platforms(cl_platform_id *ps, cl_uint np, cl_uint max, char *note,
                              size_t notelen) {
    enum { MAX_LIBS = 16 };
    if (getenv("OCL_ICD_VENDORS") || getenv("OCL_ICD_FILENAMES")) return np;
    char(*opened)[PATH_MAX] = calloc(MAX_LIBS, PATH_MAX);
    size_t nopened = 0;
    char list[sizeof prefixes];
    snprintf(list, sizeof list, "%s", prefixes);
    for (char *save = NULL, *prefix = strtok_r(list, ":", &save); opened && prefix;
         prefix = strtok_r(NULL, ":", &save)) {
        char dir[PATH_MAX];
        int n = snprintf(dir, sizeof dir, "%s/etc/OpenCL/vendors", prefix);
        DIR *d = n > 0 && (size_t)n < sizeof dir ? opendir(dir) : NULL;
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".icd") != 0) continue;
            char icd[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
            if (snprintf(icd, sizeof icd, "%s/%s", dir, e->d_name) >= (int)sizeof icd) continue;
            icd_library(prefix, icd, path, sizeof path);
            if (!path[0] || !realpath(path, real) || seen_before(opened, nopened, real) ||
                nopened == MAX_LIBS)
                continue;
            snprintf(opened[nopened++], PATH_MAX, "%s", real);
            /* RTLD_LOCAL: its symbols (clGetPlatformIDs, ...) must not shadow
             * the loader's. It stays open for the life of the process. */
            void *lib = dlopen(real, RTLD_NOW | RTLD_LOCAL);
            if (!lib)
                note_failure(real, dlerror(), note, notelen);
            else
                np = ofl_icd_library_platforms(lib, ps, np, max);
        }
        if (d) closedir(d);
    }
    free(opened);
    return np;
}
