/* jit_compile: the JIT's driver -- infer, generate, lower, cache on disk. */
#include <llvm-c/Analysis.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "offload/ofl_build_key.h"
#include "jit_cache.h"
#include "jit_codegen.h"

const char *jit_build_key(void) { return OFL_BUILD_KEY; }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void jit_signature_str(const jit_type *args, int nargs, int range_ndim, bool nd, char *buf,
                       size_t len) {
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < nargs && n < len; i++) {
        char t[64];
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
                              jit_type_str(args[i], t, sizeof t));
    }
    if (n < len) snprintf(buf + n, len - n, ") over %sRange(%dd)", nd ? "Nd" : "", range_ndim);
}

static void internal(jit_error *err, const char *what, const char *detail) {
    err->compile_error = false;
    err->line = err->col = 0;
    int n = snprintf(err->msg, sizeof err->msg, "%s", what);
    if (detail && *detail && n > 0 && (size_t)n + 2 < sizeof err->msg)
        snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %.3000s", detail);
}

/* float64 on a device without it: refuse before anything reaches the driver. */
static int check_fp64(jit_func *f, jit_node **body, int n, jit_error *err);

static int node_fp64(jit_func *f, jit_node *x, jit_error *err) {
    if (!x) return 0;
    if ((x->type.kind == JT_SCALAR || x->type.kind == JT_ARRAY) &&
        (x->type.dtype == JIT_F64 || x->type.dtype == JIT_C128))
        return jit_error_at(
            err, f, x->line, x->col,
            "this computes in %s, which the device cannot do (it has no fp64 support)\n"
            "Use %s arrays and np.%s(...) constants; Python %s literals "
            "already take the other operand's type.",
            x->type.dtype == JIT_F64 ? "float64" : "complex128",
            x->type.dtype == JIT_F64 ? "float32" : "complex64",
            x->type.dtype == JIT_F64 ? "float32" : "complex64",
            x->type.dtype == JIT_F64 ? "float" : "complex");
    if (node_fp64(f, x->a, err) < 0 || node_fp64(f, x->b, err) < 0 || node_fp64(f, x->c, err) < 0)
        return -1;
    for (int i = 0; i < x->nkids; i++)
        if (node_fp64(f, x->kids[i], err) < 0) return -1;
    return check_fp64(f, x->body, x->nbody, err) < 0 ||
                   check_fp64(f, x->orelse, x->norelse, err) < 0
               ? -1
               : 0;
}

static int check_fp64(jit_func *f, jit_node **body, int n, jit_error *err) {
    for (int i = 0; i < n; i++)
        if (node_fp64(f, body[i], err) < 0) return -1;
    return 0;
}

/* A checked kernel's sites from the disk cache would name the places of
 * whichever process stored it: the key covers the source, not where it sits
 * (a cell's loop moves with the lines above it). Generating the module again
 * numbers the sites as the stored code does (in the order of the accesses)
 * and says where they are now. */
static int bounds_sites_again(jit_func *f, const jit_type *args, int nargs, int range_ndim,
                              const jit_target *t, unsigned flags, jit_artifact *out,
                              jit_error *err) {
    if (!(flags & JIT_BOUNDSCHECK)) return 0;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = NULL;
    int rc = jit_codegen(f, args, nargs, range_ndim, t, flags, ctx, out->entry, &mod,
                         &out->bounds_sites, err);
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return rc;
}

/* The disk cache key: every input of the build. The compiler (offload, the
 * build's key of its sources, LLVM), the signature (argument types with their layouts,
 * range rank, Range or NdRange), the target (launch bounds too) and device, the options
 * (boundscheck), the function's qualified name and symbol (two functions with
 * one body, say a module's vadd and a vadd defined inside a function, are two
 * programs with two entry points), and the hash of the source and of the
 * constants it read. Its length, or -1 when it does not fit. */
static int cache_key(const jit_func *f, const jit_type *args, int nargs, int range_ndim,
                     const jit_target *t, unsigned flags, const char *entry, char *key,
                     size_t len) {
    /* room for every argument: a key cut short would serve one signature another's code */
    char sig[8192];
    jit_signature_str(args, nargs, range_ndim, flags & JIT_NDRANGE, sig, sizeof sig);
    if (strlen(sig) + 1 >= sizeof sig) return -1;
    int n = snprintf(
        key, len,
        "offload %s jit %s llvm %s|%s|form %d sm %d fp64 %d atomic64 %d local %llu bounds %d %d|"
        "%s|%s|%s|name %s|entry %s|",
        PACKAGE_VERSION, OFL_BUILD_KEY, OFFLOAD_LLVM_VERSION, sig, (int)t->form, t->sm,
        (int)t->fp64, (int)t->atomic64, t->local_mem, t->max_threads, t->min_blocks,
        t->device ? t->device : "", (flags & JIT_BOUNDSCHECK) ? "boundscheck" : "",
        (flags & JIT_CANCEL) ? "cancel" : "", f->name, entry);
    if (n < 0 || (size_t)n + sizeof f->source_hash > len) return -1;
    memcpy(key + n, f->source_hash, sizeof f->source_hash);
    return n + (int)sizeof f->source_hash;
}

/* true with out->code filled on a usable hit. An entry without the kernel's
 * symbol cannot serve this build (written under an older key that left the
 * name out, or by another program): a miss, which the store then replaces.
 * Each code form holds the symbol's bytes as they are (PTX text, SPIR-V's
 * OpEntryPoint literal, bitcode's string table). */
static bool disk_load(const char *key, size_t klen, jit_artifact *out) {
    if (jit_cache_load(key, klen, &out->code.data, &out->code.size) != 1) return false;
    if (memmem(out->code.data, out->code.size, out->entry, strlen(out->entry))) return true;
    jit_cache_debug("an entry for %s lacks the kernel's symbol: rebuilding", out->entry);
    jit_blob_free(&out->code);
    return false;
}

static int compile_typed(jit_func *f, const jit_type *args, int nargs, int range_ndim,
                         const jit_target *t, unsigned flags, jit_artifact *out, jit_error *err);

typedef struct {
    jit_func *f;
    const jit_type *args;
    int nargs, range_ndim;
    const jit_target *t;
    unsigned flags;
    jit_artifact *out;
    jit_error *err;
} compile_call;

static int compile_main(void *arg) {
    compile_call *c = arg;
    return compile_typed(c->f, c->args, c->nargs, c->range_ndim, c->t, c->flags, c->out, c->err);
}

int jit_compile(jit_func *f, const jit_type *args, int nargs, int range_ndim, const jit_target *t,
                unsigned flags, jit_artifact *out, jit_error *err) {
    double t0 = now_ms();
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    /* everything from here walks the tree, as do LLVM and the translator the IR */
    compile_call c = {f, args, nargs, range_ndim, t, flags, out, err};
    int rc = jit_with_stack(f->depth, compile_main, &c, err);
    out->ms = now_ms() - t0;
    return rc;
}

/* jit_compile on a stack with room for f's nesting. */
static int compile_typed(jit_func *f, const jit_type *args, int nargs, int range_ndim,
                         const jit_target *t, unsigned flags, jit_artifact *out, jit_error *err) {
    if (nargs + 1 != f->nparams) {
        err->compile_error = true;
        snprintf(err->msg, sizeof err->msg, "%s() takes %d argument%s after the item, got %d",
                 f->name, f->nparams - 1, f->nparams == 2 ? "" : "s", nargs);
        return -1;
    }
    if (range_ndim < 1 || range_ndim > 3) {
        internal(err, "a Range has 1 to 3 dimensions", NULL);
        return -1;
    }
    jit_type params[257];
    if (nargs > 256) {
        internal(err, "too many arguments", NULL);
        return -1;
    }
    params[0] =
        (jit_type){(flags & JIT_NDRANGE) ? JT_NDITEM : JT_ITEM, 0, (unsigned char)range_ndim, 0, 0};
    memcpy(params + 1, args, sizeof *args * (size_t)nargs);
    if (jit_infer(f, params, NULL, err) < 0) return -1;
    if (!t->fp64 && check_fp64(f, f->body, f->nbody, err) < 0) return -1;
    snprintf(out->entry, sizeof out->entry, "ofl_%s", f->name);
    jit_symbol_sanitize(out->entry);

    char key[10240];
    int klen = cache_key(f, args, nargs, range_ndim, t, flags, out->entry, key, sizeof key);
    if (klen < 0) {
        internal(err, "signature too long", NULL);
        return -1;
    }
    bool want_text = flags & (JIT_WANT_LLVM | JIT_WANT_SPIRV);
    if (!want_text && !(flags & JIT_NO_DISK) && disk_load(key, (size_t)klen, out)) {
        if (bounds_sites_again(f, args, nargs, range_ndim, t, flags, out, err) < 0) {
            jit_artifact_free(out);
            return -1;
        }
        out->disk_hit = true;
        return 0;
    }

    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = NULL;
    char msg[3000];
    int rc = -1;
    if (jit_codegen(f, args, nargs, range_ndim, t, flags, ctx, out->entry, &mod, &out->bounds_sites,
                    err) < 0)
        goto done;
    char *verr = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &verr)) {
        internal(err, "offload generated invalid LLVM IR (a compiler bug; please report it)", verr);
        LLVMDisposeMessage(verr);
        goto done;
    }
    LLVMDisposeMessage(verr);
    if (flags & JIT_WANT_LLVM) {
        if (jit_optimize(mod, msg, sizeof msg) < 0) {
            internal(err, "LLVM optimisation failed", msg);
            goto done;
        }
        char *ir = LLVMPrintModuleToString(mod);
        out->llvm_text = strdup(ir);
        LLVMDisposeMessage(ir);
    }
    if (t->form == JIT_PTX) {
        if (jit_emit_ptx(mod, jit_ptx_sm(t->sm), &out->code, msg, sizeof msg) < 0) {
            internal(err, "PTX generation failed", msg);
            goto done;
        }
    } else {
        jit_blob spirv = {0};
        if (jit_emit_spirv(mod, &spirv, msg, sizeof msg) < 0) {
            internal(err, "SPIR-V generation failed", msg);
            goto done;
        }
        jit_blob text = {0};
        if ((flags & JIT_WANT_SPIRV) && jit_spirv_disassemble(&spirv, &text, msg, sizeof msg) == 0)
            out->spirv_text = text.data;
        if (t->form == JIT_SPIR12) {
            int r = jit_spirv_to_spir12(&spirv, &out->code, msg, sizeof msg);
            jit_blob_free(&spirv);
            if (r < 0) {
                internal(err, "SPIR-V to SPIR 1.2 translation failed", msg);
                goto done;
            }
        } else {
            out->code = spirv;
        }
    }
    if (!want_text && !(flags & JIT_NO_DISK))
        jit_cache_store(key, (size_t)klen, out->code.data, out->code.size);
    rc = 0;
done:
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    if (rc < 0) jit_artifact_free(out);
    return rc;
}

void jit_artifact_free(jit_artifact *a) {
    jit_blob_free(&a->code);
    free(a->llvm_text);
    free(a->spirv_text);
    free(a->bounds_sites);
    a->llvm_text = a->spirv_text = a->bounds_sites = NULL;
}
