//===- WeightBlocksGgml.h - a GEMM's block layout as a ggml type -*- C++ -*-===//
//
// The block layouts the GEMM kernels read in place (WeightBlocks) are ggml's
// block types; the runtime names them in the manifest and dequantizes them
// (xfrt/GgmlType.h). One mapping for the compiler and the tuning worker.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_WEIGHTBLOCKSGGML_H
#define XF_CODEGEN_WEIGHTBLOCKSGGML_H

#include "xf/Codegen/HalideKernels.h"
#include "xfrt/GgmlType.h"

namespace mlir::xf {

/// F32 for None (a plain float32 weight).
inline xfrt::GgmlType ggmlTypeOf(WeightBlocks blocks) {
  switch (blocks) {
  case WeightBlocks::Q8_0:
    return xfrt::GgmlType::Q8_0;
  case WeightBlocks::Q4_0:
    return xfrt::GgmlType::Q4_0;
  case WeightBlocks::Q4_1:
    return xfrt::GgmlType::Q4_1;
  case WeightBlocks::None:
    break;
  }
  return xfrt::GgmlType::F32;
}

} // namespace mlir::xf

#endif // XF_CODEGEN_WEIGHTBLOCKSGGML_H
