/* Unit tests for offload/ofl_runtime.h: the device filter grammar, selection
 * against the devices this machine has (no GPU needed: the checks adapt to
 * what ofl_devices() lists), the default device and OFFLOAD_DEVICE, and
 * memory round trips, copies, events and out-of-memory on the default device.
 *
 * Prints "N passed, M failed" as its last line; exits non-zero on any failure. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"
#include "ofl_runtime.h"
#include "unit.h"

static ofl_device *const *devs;
static size_t ndevs;

static ofl_device *first_of(int backend, int type) {
    for (size_t i = 0; i < ndevs; i++) {
        const ofl_device_info *in = ofl_device_get_info(devs[i]);
        if ((!backend || (int)in->backend == backend) && (!type || (int)in->type == type))
            return devs[i];
    }
    return NULL;
}

static void test_grammar(void) {
    static const char *good[] = {
        "gpu",        "cpu",           "cuda",    "opencl",    "opencl:cpu",
        "cuda:gpu:0", "gpu:1",         "gpu,cpu", "1",         "0",
        "gpu:0",      "opencl:0",      "cuda:0",  " GPU : 0 ", "OpenCL:CPU:0",
        "accel",      "accelerator:0", "custom",  "cuda:cpu",  "opencl:gpu:2, cpu ,0",
        "gpu:999999", "Cuda:Gpu",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        ofl_error err = {0};
        int rc = ofl_filter_check(good[i], &err);
        if (rc) fprintf(stderr, "  good filter \"%s\" refused: %s\n", good[i], err.msg);
        CHECK(rc == 0);
    }
    /* each bad filter, with a word its message must contain */
    static const char *bad[][2] = {
        {"", "empty"},
        {"   ", "empty"},
        {"gpu::0", "empty part"},
        {":0", "empty part"},
        {"gpu:", "empty part"},
        {"gpu,,cpu", "empty entry"},
        {"gpu,", "empty entry"},
        {",gpu", "empty entry"},
        {"gpux", "\"gpux\""},
        {"level_zero", "\"level_zero\""},
        {"host", "\"host\""},
        {"gpu:-1", "\"-1\""},
        {"gpu:1x", "\"1x\""},
        {"g pu", "\"g pu\""},
        {"0:gpu", "follow the index"},
        {"gpu:opencl", "must come first"},
        {"opencl:cuda", "two backends"},
        {"gpu:cpu", "two device types"},
        {"0:1", "follow the index"},
        {"opencl:gpu:0:1", "follow the index"},
        {"gpu:99999999999", "too large"},
        {"gpu,cpu,bogus", "\"bogus\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ofl_error err = {0};
        int rc = ofl_filter_check(bad[i][0], &err);
        if (rc != OFL_ERR_BAD_FILTER) fprintf(stderr, "  bad filter \"%s\" accepted\n", bad[i][0]);
        CHECK(rc == OFL_ERR_BAD_FILTER);
        CHECK(err.code == OFL_ERR_BAD_FILTER);
        CHECK_HAS(err.msg, bad[i][1]);
        CHECK_HAS(err.msg, "backend:type:index");
    }
    ofl_error err = {0};
    CHECK(ofl_filter_check(NULL, &err) == OFL_ERR_BAD_FILTER);
    CHECK(ofl_filter_check("gpu", NULL) == 0); /* err may be NULL */
    CHECK(ofl_filter_check("gpu::", NULL) == OFL_ERR_BAD_FILTER);
    /* a very long filter is quoted, not overflowed */
    char longf[3000];
    memset(longf, 'x', sizeof longf - 1);
    longf[sizeof longf - 1] = '\0';
    CHECK(ofl_filter_check(longf, &err) == OFL_ERR_BAD_FILTER);
    CHECK(strlen(err.msg) < sizeof err.msg);
}

static void test_devices(void) {
    const char *why = NULL;
    devs = ofl_devices(&ndevs, &why);
    CHECK(why != NULL);
    printf("devices (%zu):\n", ndevs);
    char list[4096];
    ofl_describe_devices(list, sizeof list);
    printf("%s\n", list);
    if (why && why[0]) printf("notes: %s\n", why);
    size_t n2;
    CHECK(ofl_devices(&n2, NULL) == devs && n2 == ndevs); /* discovered once */

    int last_rank = -1;
    for (size_t i = 0; i < ndevs; i++) {
        const ofl_device_info *in = ofl_device_get_info(devs[i]);
        CHECK(in->name[0] && in->vendor[0] && in->version[0] && in->platform[0]);
        CHECK(in->max_compute_units > 0 && in->max_work_group_size > 0);
        CHECK(in->max_work_item_sizes[0] > 0 && in->global_mem_size > 0);
        CHECK(in->max_mem_alloc_size > 0 && in->max_mem_alloc_size <= in->global_mem_size);
        CHECK_HAS(list, in->filter);
        /* GPUs, then CPUs, then others; CUDA before OpenCL within GPUs */
        int rank = (in->type == OFL_GPU   ? 0
                    : in->type == OFL_CPU ? 2
                                          : 4) +
                   (in->backend == OFL_OPENCL);
        CHECK(rank >= last_rank);
        last_rank = rank;
        /* the canonical filter names it, and selects it */
        char expect[64];
        int index = 0;
        for (size_t j = 0; j < i; j++) {
            const ofl_device_info *o = ofl_device_get_info(devs[j]);
            index += o->backend == in->backend && o->type == in->type;
        }
        snprintf(expect, sizeof expect, "%s:%s:%d", in->backend == OFL_CUDA ? "cuda" : "opencl",
                 in->type == OFL_GPU           ? "gpu"
                 : in->type == OFL_CPU         ? "cpu"
                 : in->type == OFL_ACCELERATOR ? "accelerator"
                                               : "custom",
                 index);
        CHECK(strcmp(in->filter, expect) == 0 && in->index == index);
        ofl_device *d = NULL;
        ofl_error err = {0};
        CHECK(ofl_select(in->filter, &d, &err) == 0 && d == devs[i]);
        /* an NVIDIA GPU is listed once: no two devices share a PCI address */
        for (size_t j = 0; j < i; j++) {
            const ofl_device_info *o = ofl_device_get_info(devs[j]);
            if (in->pci_bus_id[0] && in->type == OFL_GPU && o->type == OFL_GPU)
                CHECK(strcmp(in->pci_bus_id, o->pci_bus_id) != 0);
        }
        if (in->backend == OFL_CUDA) {
            CHECK(in->cuda_cc_major >= 3 && in->pci_bus_id[0] && in->has_fp64);
            CHECK(in->max_mem_alloc_size == in->global_mem_size);
        }
        printf("  %s: %s | %s | %s | driver %s | il \"%s\" | %u CUs | wg %zu | "
               "items %zu,%zu,%zu | mem %llu | local %llu | maxalloc %llu | fp64 %d fp16 %d "
               "atom64 %d spir %d | pci \"%s\" | cc %d.%d\n",
               in->filter, in->name, in->vendor, in->version, in->driver_version, in->il_version,
               in->max_compute_units, in->max_work_group_size, in->max_work_item_sizes[0],
               in->max_work_item_sizes[1], in->max_work_item_sizes[2],
               (unsigned long long)in->global_mem_size, (unsigned long long)in->local_mem_size,
               (unsigned long long)in->max_mem_alloc_size, in->has_fp64, in->has_fp16,
               in->has_atomic64, in->has_spir, in->pci_bus_id, in->cuda_cc_major,
               in->cuda_cc_minor);
    }
    CHECK(ofl_device_get_info(NULL) == NULL);
}

static void test_select(void) {
    ofl_device *d, *gpu = first_of(0, OFL_GPU), *cpu = first_of(0, OFL_CPU);
    ofl_device *cuda = first_of(OFL_CUDA, 0), *clcpu = first_of(OFL_OPENCL, OFL_CPU);
    ofl_error err = {0};

    if (clcpu) {
        CHECK(ofl_select("opencl:cpu:0", &d, &err) == 0 && d == clcpu);
        CHECK(ofl_select("  OPENCL : cpu ", &d, &err) == 0 && d == clcpu);
        CHECK(ofl_select("opencl:cpu:7,opencl:cpu", &d, &err) == 0 && d == clcpu);
    }
    if (cpu) CHECK(ofl_select("cpu", &d, &err) == 0 && d == cpu);
    if (gpu || cpu) CHECK(ofl_select("gpu,cpu", &d, &err) == 0 && d == (gpu ? gpu : cpu));
    if (ndevs) CHECK(ofl_select("0", &d, &err) == 0 && d == devs[0]);
    if (gpu) {
        CHECK(ofl_select("gpu", &d, &err) == 0 && d == gpu);
        CHECK(ofl_select("gpu:0", &d, &err) == 0 && d == gpu);
    } else {
        CHECK(ofl_select("gpu", &d, &err) == OFL_ERR_NOT_FOUND && d == NULL);
        CHECK(err.code == OFL_ERR_NOT_FOUND);
        CHECK_HAS(err.msg, "\"gpu\"");
        CHECK_HAS(err.msg, ndevs ? "Devices here" : "pocl-opencl-icd");
        if (ndevs) CHECK_HAS(err.msg, ofl_device_get_info(devs[0])->filter);
        CHECK_HAS(err.msg, "intel-opencl-icd");
        printf("no GPU message: %s\n", err.msg);
    }
    if (cuda) {
        CHECK(ofl_select("cuda", &d, &err) == 0 && d == cuda);
        CHECK(ofl_select("cuda:gpu:0", &d, &err) == 0 && d == cuda);
    } else {
        CHECK(ofl_select("cuda", &d, &err) == OFL_ERR_NOT_FOUND);
        CHECK_HAS(err.msg, "CUDA");
        printf("no CUDA message: %s\n", err.msg);
    }
    /* an index past the end, and a backend:type that does not exist */
    CHECK(ofl_select("999", &d, &err) == OFL_ERR_NOT_FOUND && d == NULL);
    CHECK_HAS(err.msg, "\"999\"");
    CHECK(ofl_select("cuda:cpu", &d, &err) == OFL_ERR_NOT_FOUND);
    CHECK(ofl_select("custom", &d, &err) == OFL_ERR_NOT_FOUND || first_of(0, OFL_CUSTOM));
    /* a bad filter through ofl_select lists the devices too */
    CHECK(ofl_select("gpu::0", &d, &err) == OFL_ERR_BAD_FILTER && d == NULL);
    CHECK_HAS(err.msg, "backend:type:index");
    if (ndevs) CHECK_HAS(err.msg, ofl_device_get_info(devs[0])->filter);
    printf("bad filter message: %s\n", err.msg);
}

static void test_default(void) {
    ofl_device *d;
    ofl_error err = {0};
    char *saved = getenv("OFFLOAD_DEVICE") ? strdup(getenv("OFFLOAD_DEVICE")) : NULL;

    unsetenv("OFFLOAD_DEVICE");
    int rc = ofl_default_device(&d, &err);
    if (ndevs) {
        CHECK(rc == 0 && d == devs[0]);
        ofl_device *gpu = first_of(0, OFL_GPU), *cpu = first_of(0, OFL_CPU);
        if (gpu || cpu) CHECK(d == (gpu ? gpu : cpu));
        CHECK(ofl_select(NULL, &d, &err) == 0 && d == devs[0]);
    } else {
        CHECK(rc == OFL_ERR_NOT_FOUND);
        CHECK_HAS(err.msg, "pocl-opencl-icd");
    }
    setenv("OFFLOAD_DEVICE", "  ", 1); /* blank: as if unset */
    CHECK(ofl_default_device(&d, &err) == rc);
    setenv("OFFLOAD_DEVICE", "bogus", 1);
    CHECK(ofl_default_device(&d, &err) == OFL_ERR_BAD_FILTER && d == NULL);
    CHECK_HAS(err.msg, "OFFLOAD_DEVICE=bogus");
    CHECK_HAS(err.msg, "\"bogus\"");
    setenv("OFFLOAD_DEVICE", "cuda:cpu:3", 1);
    CHECK(ofl_default_device(&d, &err) == OFL_ERR_NOT_FOUND);
    CHECK_HAS(err.msg, "OFFLOAD_DEVICE=cuda:cpu:3");
    if (ndevs) {
        const ofl_device *last = devs[ndevs - 1];
        setenv("OFFLOAD_DEVICE", ofl_device_get_info(last)->filter, 1);
        CHECK(ofl_default_device(&d, &err) == 0 && d == last);
        setenv("OFFLOAD_DEVICE", "custom:5, cpu, gpu", 1);
        ofl_device *cpu = first_of(0, OFL_CPU);
        if (cpu) CHECK(ofl_default_device(&d, &err) == 0 && d == cpu);
    }
    if (saved)
        setenv("OFFLOAD_DEVICE", saved, 1);
    else
        unsetenv("OFFLOAD_DEVICE");
    free(saved);
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 131 + seed + (i >> 8));
}

/* alloc, write, read, copy, ranges, events and free on one device */
static void round_trip(ofl_device *dev) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    enum { N = 1 << 20 };
    unsigned char *host = malloc(N), *back = malloc(N), *want = malloc(N);
    ofl_buffer *a = NULL, *b = NULL, *z = NULL;
    ofl_error err = {0};
    printf("round trip on %s\n", in->filter);

    CHECK(ofl_alloc(dev, N, &a, &err) == 0 && a);
    CHECK(ofl_alloc(dev, N, &b, &err) == 0 && b);
    if (!a || !b) {
        fprintf(stderr, "  alloc: %s\n", err.msg);
        goto out;
    }
    CHECK(ofl_buffer_size(a) == N && ofl_buffer_device(a) == dev);
    CHECK(in->backend == OFL_CUDA ? ofl_buffer_address(a) != 0 : ofl_buffer_address(a) == 0);
    fill(host, N, 7);
    CHECK(ofl_write(a, 0, host, N, &err) == 0);
    memset(back, 0, N);
    CHECK(ofl_read(a, 0, back, N, &err) == 0 && memcmp(back, host, N) == 0);

    /* partial, at offsets */
    CHECK(ofl_write(a, 1000, "offload", 7, &err) == 0);
    char word[8] = {0};
    CHECK(ofl_read(a, 1000, word, 7, &err) == 0 && strcmp(word, "offload") == 0);
    memcpy(host + 1000, "offload", 7);

    /* device to device, whole and partial */
    CHECK(ofl_copy(b, 0, a, 0, N, &err) == 0);
    CHECK(ofl_read(b, 0, back, N, &err) == 0 && memcmp(back, host, N) == 0);
    CHECK(ofl_copy(b, 10, a, 5000, 300, &err) == 0);
    memcpy(want, host, N);
    memcpy(want + 10, host + 5000, 300);
    CHECK(ofl_read(b, 0, back, N, &err) == 0 && memcmp(back, want, N) == 0);

    /* overlapping regions of one buffer copy like memmove, both ways */
    memcpy(want, host, N);
    memmove(want + 100, want, N / 2);
    CHECK(ofl_copy(a, 100, a, 0, N / 2, &err) == 0);
    CHECK(ofl_read(a, 0, back, N, &err) == 0 && memcmp(back, want, N) == 0);
    memmove(want, want + 3, N / 2);
    CHECK(ofl_copy(a, 0, a, 3, N / 2, &err) == 0);
    CHECK(ofl_read(a, 0, back, N, &err) == 0 && memcmp(back, want, N) == 0);

    /* ranges */
    CHECK(ofl_write(a, N - 3, host, 4, &err) == OFL_ERR_INVALID);
    CHECK_HAS(err.msg, in->filter);
    CHECK(ofl_read(a, N + 1, back, 0, &err) == OFL_ERR_INVALID);
    CHECK(ofl_read(a, (size_t)-1, back, 2, &err) == OFL_ERR_INVALID);
    CHECK(ofl_copy(b, 1, a, 0, N, &err) == OFL_ERR_INVALID);
    CHECK(ofl_write(a, N, host, 0, &err) == 0); /* empty at the end: fine */
    CHECK(ofl_write(a, 0, NULL, 1, &err) == OFL_ERR_INVALID);

    /* zero-size buffers exist */
    CHECK(ofl_alloc(dev, 0, &z, &err) == 0 && z && ofl_buffer_size(z) == 0);
    CHECK(ofl_write(z, 0, host, 0, &err) == 0);
    CHECK(ofl_write(z, 0, host, 1, &err) == OFL_ERR_INVALID);

    /* events time queued work on the device clock */
    ofl_event *ev = NULL;
    CHECK(ofl_event_begin(dev, &ev, &err) == 0 && ev);
    CHECK(ofl_copy(b, 0, a, 0, N, &err) == 0);
    CHECK(ofl_event_end(ev, &err) == 0);
    CHECK(ofl_event_wait(ev, &err) == 0);
    double t = ofl_event_elapsed(ev);
    printf("  event: %.6f s for a 1 MiB device copy\n", t);
    CHECK(t >= 0 && t < 10);
    ofl_event_release(ev);
    ofl_event_release(NULL);
    CHECK(ofl_event_elapsed(NULL) < 0);

    CHECK(ofl_synchronize(dev, &err) == 0);
out:
    ofl_free(a);
    ofl_free(b);
    ofl_free(z);
    ofl_free(NULL);
    free(host), free(back), free(want);
}

static void out_of_memory(ofl_device *dev) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    ofl_buffer *buf = (ofl_buffer *)1;
    ofl_error err = {0};
    CHECK(ofl_alloc(dev, (size_t)1 << 50, &buf, &err) == OFL_ERR_OUT_OF_MEMORY && !buf);
    CHECK(err.code == OFL_ERR_OUT_OF_MEMORY);
    CHECK_HAS(err.msg, in->filter);
    CHECK_HAS(err.msg, in->name);
    CHECK_HAS(err.msg, "1.0 PiB");
    printf("oversize message: %s\n", err.msg);
    /* just above the single-allocation limit: refused before the driver */
    CHECK(ofl_alloc(dev, in->max_mem_alloc_size + 1, &buf, &err) == OFL_ERR_OUT_OF_MEMORY);
    CHECK_HAS(err.msg, "max_mem_alloc_size");
    CHECK(ofl_alloc(NULL, 1, &buf, &err) == OFL_ERR_INVALID);
    if (in->backend == OFL_CUDA) {
        /* within max_mem_alloc_size (= total memory), but the context holds
         * some: the driver's own out-of-memory, with what is free */
        CHECK(ofl_alloc(dev, in->global_mem_size, &buf, &err) == OFL_ERR_OUT_OF_MEMORY);
        CHECK_HAS(err.msg, in->filter);
        CHECK_HAS(err.msg, "free of");
        printf("driver out-of-memory message: %s\n", err.msg);
    }
}

/* between two different devices, through the host */
static void cross_device(ofl_device *d1, ofl_device *d2) {
    enum { N = 100000 };
    unsigned char host[N], back[N];
    ofl_buffer *a = NULL, *b = NULL;
    ofl_error err = {0};
    fill(host, N, 3);
    CHECK(ofl_alloc(d1, N, &a, &err) == 0 && ofl_alloc(d2, N, &b, &err) == 0);
    if (a && b) {
        CHECK(ofl_write(a, 0, host, N, &err) == 0);
        CHECK(ofl_copy(b, 0, a, 0, N, &err) == 0);
        CHECK(ofl_read(b, 0, back, N, &err) == 0 && memcmp(back, host, N) == 0);
    }
    ofl_free(a);
    ofl_free(b);
}

/* several threads on one device's queue at once */
static void *worker(void *arg) {
    ofl_device *dev = arg;
    unsigned char host[4096], back[4096];
    bool ok = true;
    for (int r = 0; r < 50 && ok; r++) {
        ofl_buffer *buf = NULL;
        ofl_error err;
        fill(host, sizeof host, (unsigned)r);
        ok = ofl_alloc(dev, sizeof host, &buf, &err) == 0 &&
             ofl_write(buf, 0, host, sizeof host, &err) == 0 &&
             ofl_read(buf, 0, back, sizeof back, &err) == 0 && memcmp(host, back, sizeof host) == 0;
        ofl_free(buf);
    }
    return ok ? arg : NULL;
}

static void threads(ofl_device *dev) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, dev);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        CHECK(r == dev);
    }
}

static void test_helpers(void) {
    char b[32];
    CHECK(strcmp(ofl_size_str(0, b, sizeof b), "0 bytes") == 0);
    CHECK(strcmp(ofl_size_str(1023, b, sizeof b), "1023 bytes") == 0);
    CHECK(strcmp(ofl_size_str(1536, b, sizeof b), "1.5 KiB") == 0);
    CHECK(strcmp(ofl_size_str((uint64_t)80 << 30, b, sizeof b), "80.0 GiB") == 0);
    CHECK(strcmp(ofl_size_str((uint64_t)1 << 50, b, sizeof b), "1.0 PiB") == 0);
    CHECK(strcmp(ofl_size_str(UINT64_MAX, b, sizeof b), "16.0 EiB") == 0);
    const char *why = NULL;
    bool cuda = ofl_cuda_load(&why);
    CHECK(cuda || (why && why[0]));
    if (!cuda) printf("CUDA: %s\n", why);
}

int main(void) {
    test_grammar();
    test_helpers();
    test_devices();
    test_select();
    test_default();
    ofl_device *dev = NULL;
    ofl_error err = {0};
    unsetenv("OFFLOAD_DEVICE");
    if (ofl_default_device(&dev, &err) == 0) {
        round_trip(dev);
        out_of_memory(dev);
        threads(dev);
        for (size_t i = 0; i < ndevs; i++)
            if (devs[i] != dev) {
                round_trip(devs[i]);
                out_of_memory(devs[i]);
                cross_device(dev, devs[i]);
            }
    } else {
        printf("no device for the memory tests: %s\n", err.msg);
    }
    return unit_finish();
}
