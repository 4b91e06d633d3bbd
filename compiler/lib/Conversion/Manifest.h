//===- Manifest.h - the model description inside the executable -*- C++ -*-===//
//
// `xf_model_manifest` tells libxfrt what the generated code expects: the
// checkpoint tensors in argument order, derived buffers, vocabulary and
// position limits (docs/abi.md).
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_MANIFEST_H
#define XF_LIB_CONVERSION_MANIFEST_H

#include "xf/Codegen/HalideKernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::xf {

struct ManifestInfo {
  struct Parameter {
    std::string name;
    SmallVector<int64_t> shape;
    std::string init;  // "normal" | "ones" | "zeros"
    std::string dtype; // "f32" | "bf16": how the generated code reads it
  };
  /// One kernel call of xf_forward, in call order (the profiler's sites).
  struct Kernel {
    std::string name, kind, op, loc;
    int64_t flopsPerRow = 0;              // × ℓ
    int64_t flopsPerRowPerContextRow = 0; // × ℓ × ℓ_context (attention)
    // Bytes a roofline charges a call: weights once, activations per row,
    // K and V per context row (KernelWork).
    int64_t bytesPerCall = 0, bytesPerRow = 0, bytesPerContextRow = 0;
    bool contextFromSource = false;       // ℓ_context = ℓ_z rather than ℓ
    bool tuned = false;                   // its schedule came from a tuning database
    void setWork(const KernelWork &w) {
      flopsPerRow = int64_t(w.flopsPerRow);
      flopsPerRowPerContextRow = int64_t(w.flopsPerRowPerContextRow);
      bytesPerCall = int64_t(w.weightBytes), bytesPerRow = int64_t(w.bytesPerRow);
      bytesPerContextRow = int64_t(w.bytesPerContextRow);
    }
  };
  std::string model = "model", output = "logits";
  bool encoderDecoder = false;
  int64_t vocab = 0, maxPositions = 0, dOut = 0;
  bool cached = false;        // xf_forward_cached decodes incrementally
  int64_t cachePositions = 0; // its capacity
  std::string device;         // "cuda": the entry points take device addresses (docs/gpu.md)
  bool packed = false;        // xf_forward_packed (and, when cached, xf_forward_cached_packed)
  DictionaryAttr hyperparameters;
  std::vector<Parameter> parameters;
  std::vector<int64_t> derivedBytes;
  std::vector<Kernel> kernels;
};

std::string renderManifest(const ManifestInfo &info);

/// `xf_model_manifest`: a NUL-terminated external constant.
void emitManifestGlobal(ModuleOp module, llvm::StringRef json,
                        llvm::StringRef symbol = "xf_model_manifest");

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_MANIFEST_H
