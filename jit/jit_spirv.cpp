// jit_spirv: the only C++ in offload -- a thin extern "C" shim over the
// SPIRV-LLVM-Translator library, whose API is C++ only. Everything else about
// SPIR-V (validation, disassembly, error wording) lives in C.
//
// No C++ exception or LLVM object crosses this file's boundary: callers get
// malloc'ed bytes and a message.

#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm-c/Core.h>

#include <LLVMSPIRVLib/LLVMSPIRVLib.h>

extern "C" {
#include "jit_backend.h"
}

namespace {

void jit_set_err(char *err, size_t errlen, const char *what, const std::string &msg) {
    if (err && errlen)
        snprintf(err, errlen, "%s: %s", what, msg.empty() ? "(no message)" : msg.c_str());
}

// malloc'ed copy, so the C side frees it with free() like every other blob.
int jit_take(const std::string &bytes, jit_blob *out, char *err, size_t errlen) {
    out->data = malloc(bytes.size() ? bytes.size() : 1);
    if (!out->data) {
        jit_set_err(err, errlen, "SPIR-V", "out of memory");
        return -1;
    }
    memcpy(out->data, bytes.data(), bytes.size());
    out->size = bytes.size();
    return 0;
}

// SPIR-V 1.0 is what every OpenCL SPIR-V consumer takes (OpenCL 2.1+ and
// cl_khr_il_program); no extensions, so the module never needs one a driver
// lacks. OpenCL 1.2 built-in names on the way back: that is what SPIR 1.2
// consumers (PoCL) link against. llvm.fmuladd stays a multiply and an add:
// the translator's default, OpenCL's mad(), may be computed with less
// precision, and results must match NumPy's.
SPIRV::TranslatorOpts jit_opts() {
    SPIRV::TranslatorOpts opts(SPIRV::VersionNumber::SPIRV_1_0);
    opts.setDesiredBIsRepresentation(SPIRV::BIsRepresentation::OpenCL12);
    opts.setReplaceLLVMFmulAddWithOpenCLMad(false);
    return opts;
}

} // namespace

extern "C" int jit_spirv_write(LLVMModuleRef m, jit_blob *spirv, char *err, size_t errlen) {
    spirv->data = nullptr;
    spirv->size = 0;
    llvm::Module *mod = llvm::unwrap(m);
    std::ostringstream os;
    std::string msg;
    if (!llvm::writeSpirv(mod, jit_opts(), os, msg)) {
        jit_set_err(err, errlen, "LLVM IR -> SPIR-V translation failed (a compiler bug)", msg);
        return -1;
    }
    return jit_take(os.str(), spirv, err, errlen);
}

extern "C" int jit_spirv_to_spir12(const jit_blob *spirv, jit_blob *bitcode, char *err,
                                   size_t errlen) {
    bitcode->data = nullptr;
    bitcode->size = 0;
    // SPIR 1.2 is typed-pointer IR; a context of its own keeps the caller's
    // (opaque-pointer) context untouched and makes the call thread-safe.
    llvm::LLVMContext ctx;
#if LLVM_VERSION_MAJOR < 17
    ctx.setOpaquePointers(false);
#endif
    std::istringstream is(std::string(static_cast<const char *>(spirv->data), spirv->size));
    llvm::Module *mod = nullptr;
    std::string msg;
    if (!llvm::readSpirv(ctx, jit_opts(), is, mod, msg) || !mod) {
        jit_set_err(err, errlen, "SPIR-V -> SPIR 1.2 translation failed (a compiler bug)", msg);
        delete mod;
        return -1;
    }
    std::unique_ptr<llvm::Module> owner(mod);
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    llvm::WriteBitcodeToFile(*owner, os);
    os.flush();
    return jit_take(bytes, bitcode, err, errlen);
}
