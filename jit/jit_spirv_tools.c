/* jit_spirv_tools: SPIRV-Tools' C API (libspirv.h) -- the validator that
 * every SPIR-V module passes before a driver sees it, and the disassembler
 * behind --show spirv. A driver given invalid SPIR-V tends to crash or to
 * compute garbage; the validator names the instruction instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv-tools/libspirv.h>

#include "jit_backend.h"

/* OpenCL 1.2 full profile with cl_khr_il_program: the oldest environment
 * that takes SPIR-V 1.0 kernels, so it checks what the oldest consumer
 * accepts (Addresses, Int8, Int16, Int64, Float64 are all allowed there).
 * SPIRV-Tools knows no OpenCL extensions, though: it refuses Int64Atomics
 * (cl_khr_int64_base_atomics, which int64 AtomicRef needs) in every OpenCL
 * environment. A module it refuses for a capability alone is therefore
 * checked again against the core SPIR-V 1.0 rules (JIT_SPV_ENV_CORE); the
 * runtime checks the device's extensions before it loads such a module. */
#define JIT_SPV_ENV SPV_ENV_OPENCL_1_2
#define JIT_SPV_ENV_CORE SPV_ENV_UNIVERSAL_1_0

static int jit_words(const jit_blob *spirv, char *err, size_t errlen) {
    if (!spirv || !spirv->data || spirv->size < 20 || spirv->size % 4 != 0) {
        snprintf(err, errlen,
                 "not a SPIR-V module: %zu bytes (needs a 5-word header and "
                 "whole 32-bit words)",
                 spirv ? spirv->size : (size_t)0);
        return -1;
    }
    return 0;
}

static void jit_spv_message(const char *what, spv_result_t rc, spv_diagnostic diag, char *err,
                            size_t errlen) {
    if (diag && diag->error)
        snprintf(err, errlen, "%s: %s", what, diag->error);
    else
        snprintf(err, errlen, "%s (SPIRV-Tools error %d)", what, (int)rc);
    /* SPIRV-Tools puts the offending instruction on a line of its own; ours
     * are one line. */
    size_t n = strlen(err);
    while (n && (err[n - 1] == '\n' || err[n - 1] == ' ')) err[--n] = '\0';
    for (char *c = err; *c; c++)
        if (*c == '\n') *c = ' ';
}

static spv_result_t jit_validate_in(spv_target_env env, const jit_blob *spirv, char *err,
                                    size_t errlen) {
    spv_context ctx = spvContextCreate(env);
    if (!ctx) {
        snprintf(err, errlen, "SPIRV-Tools: cannot create a validator context");
        return SPV_ERROR_INTERNAL;
    }
    spv_const_binary_t bin = {(const uint32_t *)spirv->data, spirv->size / 4};
    spv_diagnostic diag = NULL;
    spv_result_t rc = spvValidate(ctx, &bin, &diag);
    if (rc != SPV_SUCCESS) jit_spv_message("invalid SPIR-V", rc, diag, err, errlen);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return rc;
}

int jit_spirv_validate(const jit_blob *spirv, char *err, size_t errlen) {
    if (jit_words(spirv, err, errlen)) return -1;
    spv_result_t rc = jit_validate_in(JIT_SPV_ENV, spirv, err, errlen);
    if (rc == SPV_ERROR_INVALID_CAPABILITY)
        rc = jit_validate_in(JIT_SPV_ENV_CORE, spirv, err, errlen);
    return rc == SPV_SUCCESS ? 0 : -1;
}

int jit_spirv_disassemble(const jit_blob *spirv, jit_blob *text, char *err, size_t errlen) {
    text->data = NULL;
    text->size = 0;
    if (jit_words(spirv, err, errlen)) return -1;
    spv_context ctx = spvContextCreate(JIT_SPV_ENV);
    if (!ctx) {
        snprintf(err, errlen, "SPIRV-Tools: cannot create a disassembler context");
        return -1;
    }
    spv_text out = NULL;
    spv_diagnostic diag = NULL;
    uint32_t opts = SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT;
    spv_result_t rc =
        spvBinaryToText(ctx, (const uint32_t *)spirv->data, spirv->size / 4, opts, &out, &diag);
    int status = -1;
    if (rc != SPV_SUCCESS || !out) {
        jit_spv_message("cannot disassemble SPIR-V", rc, diag, err, errlen);
    } else if (!(text->data = malloc(out->length + 1))) {
        snprintf(err, errlen, "out of memory for the SPIR-V disassembly");
    } else {
        memcpy(text->data, out->str, out->length);
        ((char *)text->data)[out->length] = '\0';
        text->size = out->length;
        status = 0;
    }
    spvTextDestroy(out);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return status;
}
