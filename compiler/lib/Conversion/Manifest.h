//===- Manifest.h - the model description inside the executable -*- C++ -*-===//
//
// `xf_model_manifest` tells libxfrt what the generated code expects: the
// checkpoint tensors in argument order, derived buffers, vocabulary and
// position limits, the kernel call sites (docs/abi.md). Its schema is the
// runtime's xfrt::Manifest, which the host lowering fills
// (HostLowering::describeModel) and xfrt::renderManifest writes.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_MANIFEST_H
#define XF_LIB_CONVERSION_MANIFEST_H

#include "xf/Codegen/HalideKernels.h"
#include "xfrt/Manifest.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// What a roofline charges a call of the kernel at `site`: FLOPs per row
/// (and per context row), weights once, activations per row, K and V per
/// context row.
void setKernelWork(xfrt::KernelSpec &site, const KernelWork &work);

/// `xf_model_manifest`: a NUL-terminated external constant.
void emitManifestGlobal(ModuleOp module, llvm::StringRef json,
                        llvm::StringRef symbol = "xf_model_manifest");

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_MANIFEST_H
