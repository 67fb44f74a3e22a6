/* ofl_runtime: the device runtime -- every device of the machine behind one
 * small C API: discovery, properties, selection by filter string, one
 * in-order profiling queue per device, memory, copies, events, programs and
 * launches.
 *
 * Backends: OpenCL through the ICD loader (every platform and device), and
 * CUDA through the driver API, loaded with dlopen("libcuda.so.1") at first
 * use (no driver = no CUDA devices, never an error; nothing CUDA at link
 * time). An NVIDIA GPU that NVIDIA's OpenCL platform also lists is kept once,
 * as cuda (matched by PCI bus id, else UUID).
 *
 * Knows nothing of Python. Callers: the offload Python module (module/) and
 * the JIT's launcher. Thread-safe: discovery runs once under a lock;
 * each device's queue is used under that device's lock. Errors are values:
 * every fallible call returns 0 or an OFL_ERR_* code and fills an ofl_error. */
#ifndef OFL_RUNTIME_H
#define OFL_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    OFL_OK = 0,
    OFL_ERR_BAD_FILTER,    /* malformed filter string (Python: ValueError) */
    OFL_ERR_NOT_FOUND,     /* no device matches (Python: DeviceNotFoundError) */
    OFL_ERR_OUT_OF_MEMORY, /* the device cannot satisfy an allocation (MemoryError) */
    OFL_ERR_DEVICE,        /* the driver reported a failure (Python: DeviceError) */
    OFL_ERR_INVALID,       /* bad argument: range, size, offset (ValueError) */
    OFL_ERR_INTERRUPTED,   /* a wait gave up: the interrupt check said so (KeyboardInterrupt) */
} ofl_status;

typedef struct {
    ofl_status code;
    char msg[1024]; /* a whole sentence for the user: names device, sizes, fixes */
} ofl_error;

typedef enum { OFL_OPENCL = 1, OFL_CUDA = 2 } ofl_backend;
typedef enum { OFL_CPU = 1, OFL_GPU = 2, OFL_ACCELERATOR = 4, OFL_CUSTOM = 8 } ofl_device_type;

typedef struct ofl_device ofl_device; /* lives until process exit */
typedef struct ofl_buffer ofl_buffer; /* device memory; freed with ofl_free */
typedef struct ofl_event ofl_event;   /* a completed-or-pending command */

typedef struct {
    char name[256], vendor[256];
    char driver_version[128];
    char version[128];    /* "OpenCL 3.0 PoCL ..." or "CUDA 13.0" */
    char il_version[128]; /* CL_DEVICE_IL_VERSION ("" when none; "" for CUDA) */
    char platform[256];   /* OpenCL platform name; "CUDA" */
    ofl_backend backend;
    ofl_device_type type;
    int index;       /* position among devices of the same backend and type */
    char filter[64]; /* canonical filter string: "cuda:gpu:0", "opencl:cpu:0" */
    unsigned max_compute_units;
    size_t max_work_group_size;
    size_t max_work_item_sizes[3];
    uint64_t global_mem_size, local_mem_size, max_mem_alloc_size;
    bool has_fp64, has_fp16, has_atomic64;
    bool has_spir;                    /* cl_khr_spir (SPIR 1.2 bitcode) */
    char pci_bus_id[32];              /* "0000:3b:00.0" or "" */
    int cuda_cc_major, cuda_cc_minor; /* compute capability; 0 for OpenCL */
    int cuda_ordinal;                 /* the driver's number (CuPy's, DLPack's); -1 for OpenCL */
} ofl_device_info;

/* ---- devices ---- */

/* Install prefixes (':'-separated) where pip may have put OpenCL runtimes
 * (the .icd files of PREFIX/etc/OpenCL/vendors, PREFIX/lib): discovery lists their
 * platforms beside the ICD loader's, unless OCL_ICD_VENDORS or
 * OCL_ICD_FILENAMES is set. Call before the first discovery (ofl_icd.c). */
void ofl_set_runtime_prefixes(const char *prefixes);

/* All devices, in order: GPUs first (CUDA, then OpenCL), then CPUs, then others.
 * Discovery happens at the first call; *why_none explains an empty list
 * ("no OpenCL platform (install pocl-opencl-icd ...) and no CUDA driver"); with
 * devices it names the backends that have none, or is "". Either may be NULL. */
ofl_device *const *ofl_devices(size_t *count, const char **why_none);
const ofl_device_info *ofl_device_get_info(const ofl_device *dev);

/* filter = "backend:type:index" with every part optional ("gpu", "cuda",
 * "opencl:cpu", "gpu:1", "cuda:gpu:0", "1"), or a comma list tried in order
 * ("gpu,cpu"). Case-insensitive, spaces ignored around parts. As dpctl's
 * backend:device_type:relative_id:
 *   filter  = term { "," term }
 *   term    = part [ ":" part [ ":" part ] ]   -- parts in the order below
 *   backend = "opencl" | "cuda"
 *   type    = "cpu" | "gpu" | "accelerator" | "accel" | "custom"
 *   index   = digits  -- counts the devices of ofl_devices() that match the
 *                        term's backend and type, from 0 ("gpu:1": the 2nd GPU
 *                        of any backend; "1": the 2nd device)
 * So "gpu:0", "opencl:0" and "0" are good; these are OFL_ERR_BAD_FILTER, with
 * a message naming the fault and the grammar: "" (use NULL for the default),
 * an empty part or entry ("gpu::0", ":0", "gpu:", "gpu,,cpu"), an unknown word
 * ("level_zero", "host", "-1"), parts out of order or repeated ("gpu:opencl",
 * "gpu:cpu"), anything after the index ("0:gpu"). Every term is checked before
 * any is tried ("gpu,bogus" is bad even with a GPU). A term without an index
 * matches the first such device; the first term that matches wins. NULL selects
 * ofl_default_device(). A bad filter or no match lists the devices that exist
 * (and, with none, what to install). */
int ofl_select(const char *filter, ofl_device **out, ofl_error *err);
/* Checks the grammar only (OFL_ERR_BAD_FILTER); no discovery. */
int ofl_filter_check(const char *filter, ofl_error *err);
/* $OFFLOAD_DEVICE if set and not blank, else the first GPU, else the first CPU
 * (else the first device). Errors from $OFFLOAD_DEVICE start "OFFLOAD_DEVICE=". */
int ofl_default_device(ofl_device **out, ofl_error *err);
/* One line per device for error messages: "  opencl:cpu:0   pthread-... (PoCL)",
 * lines joined by '\n' with none at the end; "  (none: why)" with no devices. */
void ofl_describe_devices(char *out, size_t outlen);

/* ---- memory and copies (blocking unless said otherwise) ---- */

/* 0 bytes is fine. More than max_mem_alloc_size (refused before asking the
 * driver) or more than the device has: OFL_ERR_OUT_OF_MEMORY naming the device
 * and the size. The device's context and queue are made at its first use. */
int ofl_alloc(ofl_device *dev, size_t bytes, ofl_buffer **out, ofl_error *err);
void ofl_free(ofl_buffer *buf); /* waits for the device's queue first; NULL ok */
ofl_device *ofl_buffer_device(const ofl_buffer *buf);
size_t ofl_buffer_size(const ofl_buffer *buf);
/* CUDA: the CUdeviceptr, for __cuda_array_interface__ and DLPack; 0 for OpenCL. */
uint64_t ofl_buffer_address(const ofl_buffer *buf);
/* Wraps CUDA device memory that something else allocated (a DLPack producer's
 * CUdeviceptr, valid in dev's primary context) as a buffer of `bytes` bytes, so
 * reads, writes, copies and launches can use it. ofl_free of it waits for the
 * device's queue (queued work may still use the memory) and frees only the
 * ofl_buffer: the memory's owner must outlive it. CUDA only -- OpenCL memory
 * has no address -- else OFL_ERR_INVALID. Opens the device at first use. */
int ofl_buffer_wrap(ofl_device *dev, uint64_t address, size_t bytes, ofl_buffer **out,
                    ofl_error *err);

/* Host memory (bytes > 0) as a buffer of an OpenCL CPU device, which
 * computes in it in place where the driver can (CL_MEM_USE_HOST_PTR; Intel's
 * runtime needs the start page-aligned and the size a multiple of 64, else it
 * keeps a copy); any other device: OFL_ERR_INVALID. The memory must outlive
 * the buffer: ofl_free waits for queued work first. After kernels wrote
 * through it, ofl_buffer_sync_host waits for them (interruptibly) and makes
 * the host memory of that span hold what they wrote (no other byte). */
int ofl_buffer_wrap_host(ofl_device *dev, void *host, size_t bytes, ofl_buffer **out,
                         ofl_error *err);
int ofl_buffer_sync_host(ofl_buffer *buf, size_t offset, size_t bytes, ofl_error *err);
void *ofl_buffer_host(const ofl_buffer *buf); /* the memory wrap_host was given, else NULL */
/* n buffers of one CPU device, each mapped whole into the host's address
 * space (out[i]) after the queue drains, for host code to read (and where
 * write[i], write) in place; 0, or an error (nothing mapped) on other
 * devices. Unmap each before the device uses it again: the unmap makes the
 * host's writes the device's. */
int ofl_buffers_map(ofl_buffer *const *bufs, const bool *write, void **out, int n, ofl_error *err);
int ofl_buffer_unmap(ofl_buffer *buf, void *p, ofl_error *err);

int ofl_write(ofl_buffer *dst, size_t offset, const void *src, size_t bytes, ofl_error *err);
int ofl_read(ofl_buffer *src, size_t offset, void *dst, size_t bytes, ofl_error *err);
/* Any two buffers: same device directly; two GPUs peer to peer (direct where
 * the pair can reach each other's memory); other pairs through the host.
 * Overlapping regions of one buffer copy as memmove does. */
int ofl_copy(ofl_buffer *dst, size_t dst_offset, ofl_buffer *src, size_t src_offset, size_t bytes,
             ofl_error *err);

/* Waits for everything queued on the device; reports a failure of queued work. */
int ofl_synchronize(ofl_device *dev, ofl_error *err);
/* ofl_synchronize of every device opened so far (those that may have queued
 * work); reports the first failure, after waiting for the others. */
int ofl_synchronize_all(ofl_error *err);

/* ---- dense math on CUDA devices (ofl_cuda_math.c) ----
 *
 * cuBLAS, cuSOLVER and cuFFT, opened with dlopen at first use: the system's
 * CUDA libraries, else the pip wheels (nvidia-cublas-cu12, nvidia-cusolver-cu12,
 * nvidia-cufft-cu12, or CUDA 13's nvidia/cu13) under the directories
 * ofl_math_search names. Nothing links to them. Every call queues on the
 * device's stream like a launch, workspaces come from the device's memory
 * pool, and none waits for the device. Matrices are column-major, as the
 * libraries take them: the caller turns row-major arrays into transposes.
 * A stack of `batch` matrices lies `stride` elements apart. */
typedef enum { OFL_MATH_F32, OFL_MATH_F64, OFL_MATH_C64, OFL_MATH_C128 } ofl_math_type;
typedef enum { OFL_CUBLAS, OFL_CUSOLVER, OFL_CUFFT } ofl_math_lib;
typedef struct {
    ofl_buffer *buf;
    size_t offset;  /* bytes */
    int64_t ld;     /* leading dimension, elements */
    int64_t stride; /* elements from one matrix of the stack to the next */
} ofl_matrix;

/* Directories (':'-separated, copied) holding nvidia/<lib>/lib or nvidia/cu13/lib;
 * libraries not found before are looked for again. */
void ofl_math_search(const char *dirs);
/* Whether lib opens (at its first call, then remembered); false with *why
 * (static text) naming what to install. */
bool ofl_math_available(ofl_math_lib lib, const char **why);
/* The file lib was opened from, or NULL where it does not open. */
const char *ofl_math_path(ofl_math_lib lib);
/* c = op(a) op(b) for each of batch, op transposing where ta/tb (conjugate
 * transposing complex); tf32 lets float32 use TF32 tensor cores. */
int ofl_math_gemm(ofl_device *dev, ofl_math_type t, bool ta, bool tb, int64_t m, int64_t n,
                  int64_t k, ofl_matrix a, ofl_matrix b, ofl_matrix c, int64_t batch, bool tf32,
                  ofl_error *err);
/* LAPACK's, per matrix of a stack, in place, through cuSOLVER. info: one
 * int32 per matrix (LAPACK's info), which the caller reads back. piv: n int32
 * per matrix; tau: min(m, n) elements per matrix; w, s: real, n or min(m, n)
 * per matrix. */
int ofl_math_getrf(ofl_device *dev, ofl_math_type t, int64_t n, ofl_matrix a, ofl_buffer *piv,
                   ofl_buffer *info, int64_t batch, ofl_error *err);
int ofl_math_getrs(ofl_device *dev, ofl_math_type t, bool trans, int64_t n, int64_t nrhs,
                   ofl_matrix lu, ofl_buffer *piv, ofl_matrix b, ofl_buffer *info, int64_t batch,
                   ofl_error *err);
int ofl_math_potrf(ofl_device *dev, ofl_math_type t, bool upper, int64_t n, ofl_matrix a,
                   ofl_buffer *info, int64_t batch, ofl_error *err);
/* eigenvalues ascending into w (n per matrix); eigenvectors over a if vectors */
int ofl_math_syevd(ofl_device *dev, ofl_math_type t, bool vectors, bool upper, int64_t n,
                   ofl_matrix a, ofl_matrix w, ofl_buffer *info, int64_t batch, ofl_error *err);
/* m >= n (cuSOLVER's rule): singular values into s; u (m x m, or m x n when
 * !full) and vt (n x n) when uv; a is destroyed. */
int ofl_math_gesvd(ofl_device *dev, ofl_math_type t, bool uv, bool full, int64_t m, int64_t n,
                   ofl_matrix a, ofl_matrix s, ofl_matrix u, ofl_matrix vt, ofl_buffer *info,
                   int64_t batch, ofl_error *err);
int ofl_math_geqrf(ofl_device *dev, ofl_math_type t, int64_t m, int64_t n, ofl_matrix a,
                   ofl_matrix tau, ofl_buffer *info, int64_t batch, ofl_error *err);
/* the first n columns of Q (m x n, k reflectors) over a, from geqrf's a and tau */
int ofl_math_orgqr(ofl_device *dev, ofl_math_type t, int64_t m, int64_t n, int64_t k, ofl_matrix a,
                   ofl_matrix tau, ofl_buffer *info, int64_t batch, ofl_error *err);
/* Unnormalised FFTs of batch contiguous signals of shape n[0..rank-1] (rank
 * 1-3, C order), plans cached per device. OFL_FFT_C2C: complex t in and out,
 * inverse the +1 sign; R2C: real t in (F32/F64), complex out with the last
 * dimension n/2+1; C2R: complex in (consumed: cuFFT overwrites it), real out.
 * t names the precision: F32/C64 single, F64/C128 double. */
typedef enum { OFL_FFT_C2C, OFL_FFT_R2C, OFL_FFT_C2R } ofl_fft_kind;
int ofl_math_fft(ofl_device *dev, ofl_fft_kind kind, ofl_math_type t, bool inverse, int rank,
                 const int64_t *n, int64_t batch, ofl_buffer *in, size_t in_offset, ofl_buffer *out,
                 size_t out_offset, ofl_error *err);

/* ---- interrupts and cancellation (ofl_wait.c) ----
 *
 * Every wait for a device (ofl_synchronize*, ofl_read, ofl_write, ofl_copy,
 * ofl_event_wait, ofl_timing_totals; not ofl_free) polls the device and calls
 * the interrupt check between polls, every 20 ms. When the check returns
 * nonzero (the module's: a pending SIGINT, which it turns into
 * KeyboardInterrupt), the wait sets the device's cancel flag, gives the
 * queued work up to about 1 s to notice it and end, clears the flag once the
 * queue is empty, and returns OFL_ERR_INTERRUPTED. Work that was still
 * running then keeps the flag set: the next launch on that device waits for
 * it (interruptibly) before clearing the flag.
 *
 * The cancel flag is a 32-bit word the host writes and kernels read: host
 * memory the device maps (CUDA), or a buffer over host memory (OpenCL CPU
 * devices, whose memory the host addresses). The JIT passes it to kernels
 * compiled with JIT_CANCEL, which check it on loop back-edges and end the
 * work-item when it is set. An OpenCL GPU gets a flag that is never set: an
 * interrupt returns control, but its kernel runs on. */
typedef int (*ofl_interrupt_fn)(void);
void ofl_set_interrupt_check(ofl_interrupt_fn fn); /* NULL: waits are not interruptible */
/* An interrupt is asked for: the next poll of any wait ends it, without
 * waiting for the check (which needs the GIL, and a pending SIGINT that some
 * code took and cleared on the way is gone). Async-signal-safe; the wait
 * that ends takes the request. */
void ofl_request_interrupt(void);
/* Whether one was asked for and no wait took it; forgets it. */
bool ofl_take_interrupt(void);
/* The interrupt came while no wait ran (between two device calls): the work
 * queued on every device is told to stop all the same. The next wait or
 * launch there waits for it to end, then clears the flag. */
void ofl_cancel_queued(void);
/* True where the device runs in this process's address space (OpenCL CPU
 * devices: PoCL, Intel's CPU runtime): a wild index there takes the process
 * down, so the module checks indices by default. */
bool ofl_device_in_process(const ofl_device *dev);

/* ---- events ---- */

int ofl_event_wait(ofl_event *ev, ofl_error *err);
/* Seconds between start and end on the device clock (after a wait); negative
 * when the device gave no timestamps. */
double ofl_event_elapsed(ofl_event *ev);
void ofl_event_release(ofl_event *ev);

/* ---- programs and launches ---- */

/* The form a device takes device code in: SPIR-V where the OpenCL device lists
 * an IL version, else SPIR 1.2 bitcode where it has cl_khr_spir, PTX for CUDA;
 * OFL_BIN_NONE when it takes none of them (the JIT cannot target it). */
typedef enum { OFL_BIN_NONE = 0, OFL_BIN_SPIRV, OFL_BIN_SPIR12, OFL_BIN_PTX } ofl_binary_kind;
ofl_binary_kind ofl_device_binary_kind(const ofl_device *dev);

/* One kernel entry point loaded on one device: an OpenCL program + cl_kernel,
 * or a CUmodule + CUfunction. */
typedef struct ofl_program ofl_program;

/* Builds `bin` (size bytes; PTX text need not end with '\0') for dev and finds
 * the kernel `entry`. A build failure is OFL_ERR_DEVICE with the driver's build
 * log (ptxas's messages for PTX) in the message; an `entry` the binary lacks,
 * or a kind the device does not take, is OFL_ERR_INVALID naming it. Opens the
 * device at first use. An OpenCL build runs without the device's lock (PoCL
 * takes about a second); a CUDA build holds it. */
int ofl_program_build(ofl_device *dev, ofl_binary_kind kind, const void *bin, size_t size,
                      const char *entry, ofl_program **out, ofl_error *err);
void ofl_program_release(ofl_program *prog); /* NULL ok */
ofl_device *ofl_program_device(const ofl_program *prog);
/* The largest work-group this kernel can be launched with on its device. */
size_t ofl_program_max_work_group_size(const ofl_program *prog);
/* True when the device's compiler crashed building it and it was built
 * again with the compiler's vectorizer off (ofl_buildproc.c): it runs right,
 * but scalar. */
bool ofl_program_vectorizer_off(const ofl_program *prog);
/* True once the device's context was reset after a kernel's fault (CUDA):
 * the program died with the context, so launches of it are refused
 * (OFL_ERR_DEVICE, saying the program is stale); release it and build it
 * again. Buffers of that context are lost the same way: reads, writes, copies
 * and launches refuse them, and ofl_free only forgets them. Recent CUDA
 * drivers (580) keep a fault for the life of the process, so no reset can
 * help there: the device is then lost, and every call on it fails at once
 * with OFL_ERR_DEVICE saying to restart the process. */
bool ofl_program_is_stale(const ofl_program *prog);

/* A kernel argument: a buffer (passed as the device pointer / cl_mem; the
 * kernel adds any offset itself), or `size` bytes of plain value. */
typedef struct {
    const ofl_buffer *buffer; /* non-NULL: a buffer argument */
    const void *value;        /* else: the value's bytes */
    size_t size;
} ofl_arg;

/* Queues prog over ndim (1..3) hardware dimensions, dimension 0 the fastest
 * (CUDA x, OpenCL dimension 0). local == NULL: the runtime picks the work-group
 * size for the device (CUDA: 256, 32x8, 32x4x2; OpenCL: 256, 16x16, 16x4x4;
 * never more than the kernel allows, shrunk where the global size is small)
 * and rounds each global[d] up to a multiple of it (the kernel guards the
 * tail); otherwise global[d] must be a multiple of local[d], and the group
 * within the kernel's limit (else OFL_ERR_INVALID giving the sizes). A global
 * size of 0 queues nothing (the event, if asked for, still completes). More
 * groups than CUDA's grid takes (2^31-1 in dimension 0, 65535 in 1 and 2) is
 * OFL_ERR_INVALID. Every buffer must live on the program's device (else
 * OFL_ERR_INVALID naming both devices). A wrong argument count is
 * OFL_ERR_INVALID where the driver tells the kernel's (OpenCL, CUDA 12.4+), and
 * so is a value of the wrong size where it tells those (CUDA 12.4+).
 * Asynchronous: returns once queued; allocates nothing for up to 64 arguments
 * without ev_out. ev_out non-NULL: an event with device timestamps around the
 * launch (ofl_event_release it). A launch that fails to queue is OFL_ERR_DEVICE
 * naming the kernel and the device; a fault while it runs surfaces at the next
 * wait on that device (ofl_synchronize, ofl_read, ofl_event_wait) as
 * OFL_ERR_DEVICE naming the last kernel launched ("kernel 'k' failed on
 * cuda:gpu:0: ..."). */
int ofl_launch(ofl_program *prog, unsigned ndim, const size_t global[], const size_t *local,
               const ofl_arg *args, size_t nargs, ofl_event **ev_out, ofl_error *err);
/* The kernel argument that points at dev's cancel flag, for kernels compiled
 * with JIT_CANCEL (see "interrupts" above). Opens the device. */
int ofl_cancel_arg(ofl_device *dev, ofl_arg *out, ofl_error *err);

/* ---- device time of launches ----
 *
 * For %time, %timeit and %kernels: the device's own time of each launch,
 * summed. Off by default, because it is not free. On OpenCL a launch then
 * keeps the kernel command's profiling event (the queue profiles anyway:
 * about 0.1 us more on PoCL). On CUDA it records an event pair around the
 * launch, which the GPU processes too: back-to-back launches of a near-empty
 * kernel went from 4.5 to 7.7 us each on an H100 (driver 580), the host
 * waiting on the full queue, and reusing the events instead of making them
 * saved nothing. A kernel of tens of microseconds does not notice. Event pairs
 * are the driver API's only way to a kernel's own time (CUPTI would be another
 * library to load). So timing runs only while a caller asks for it
 * (ofl_timing_start/stop nest: a process-wide count, any thread); while off,
 * a launch pays an atomic load for it and a flag for ofl_synchronize_launched.
 *
 * While on, every successful ofl_launch (of any thread, on any device) is
 * recorded: its event is kept with its program until it is collected.
 * Records are collected by ofl_timing_totals and by the release of their
 * program (both wait for the launches), and, finished ones only, by a launch
 * that finds 65536 more on its device (a bound on the events held that never
 * makes a launch wait). Collecting one reads its device time into its
 * program's totals and into the process's. */
void ofl_timing_start(void);
void ofl_timing_stop(void);
/* Collects every record (waiting for those launches to finish) and gives the
 * process's totals since it started: device nanoseconds and the number of
 * launches timed (a launch whose device gave no timestamps counts in neither).
 * Subtract two calls' totals to time what ran between them. A failure of the
 * recorded work (a kernel's fault) is reported once, as ofl_synchronize would
 * (the totals are filled all the same). Either pointer may be NULL. */
int ofl_timing_totals(uint64_t *ns, uint64_t *launches, ofl_error *err);
/* The totals of prog's collected launches (0 and 0 when none were timed). */
void ofl_program_device_time(const ofl_program *prog, uint64_t *ns, uint64_t *launches);
/* Waits for every device that ofl_launch queued work on (timed or not) since
 * the last call, so that a host clock read after it includes that work;
 * devices without launches since then are left alone. Reports the first
 * failure, after waiting for the others. */
int ofl_synchronize_launched(ofl_error *err);

#endif
