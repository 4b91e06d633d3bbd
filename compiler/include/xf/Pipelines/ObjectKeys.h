//===- ObjectKeys.h - what determines each object of an executable -*- C++ -*-===//
//
// The cache key of an object is a text naming everything its bytes depend
// on: the xf version, the versions of the libraries that generate code
// (Halide, LLVM), the identity of xf's own generator sources (a digest taken
// at build time, so a rebuilt xfc with a changed generator never reuses an
// object an older one compiled), the target, and the object's own inputs
// (a kernel's spec and schedule, the host code's IR). ObjectCache stores an
// object under the SHA-256 of its key.
//
//===----------------------------------------------------------------------===//

#ifndef XF_PIPELINES_OBJECTKEYS_H
#define XF_PIPELINES_OBJECTKEYS_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/Pipelines/ObjectCache.h"

#include "mlir/IR/MLIRContext.h"

#include <string>

namespace mlir::xf {

/// Digests of the generators' sources, written at build time by
/// cmake/CodeGeneratorIdentity.cmake: the Halide kernel generators
/// (compiler/lib/Codegen/HalideKernels, HalideKernels.h) and the host code
/// generator (HostToLLVM.cpp, EmitObject.cpp).
extern const char *const kKernelGeneratorIdentity;
extern const char *const kHostCodegenIdentity;

/// `halideTarget` is the concrete kernel target string (halideTargetString:
/// "host" resolved to this machine's features, with no_runtime). A GEMM's and an
/// attention's key is its name and its kernel description's text.
std::string gemmObjectKey(MLIRContext *ctx, const GemmKernelSpec &spec,
                          llvm::StringRef halideTarget);
std::string attentionObjectKey(MLIRContext *ctx, const AttentionKernelSpec &spec,
                               llvm::StringRef halideTarget);
std::string deviceLoopObjectKey(const DeviceLoopKernelSpec &spec, llvm::StringRef halideTarget);
std::string halideRuntimeObjectKey(llvm::StringRef halideTarget);

/// The host object: `hostModule` is the host module's text (without
/// locations), compiled at `optLevel` for this machine's CPU and features.
std::string hostObjectKey(llvm::StringRef hostModule, int optLevel);

ObjectDigest digestOf(llvm::StringRef key);

} // namespace mlir::xf

#endif // XF_PIPELINES_OBJECTKEYS_H
