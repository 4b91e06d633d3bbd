//===- GemmEpilogue.h - a GEMM's activation as a Halide expression -*- C++ -*-===//
//
// One definition of each epilogue for the GEMM generators (CPU and CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_HALIDEKERNELS_GEMMEPILOGUE_H
#define XF_LIB_CONVERSION_HALIDEKERNELS_GEMMEPILOGUE_H

#include "xf/Codegen/HalideKernels.h"

#include "Halide.h"

#include <cmath>

namespace mlir::xf {

/// act(a); for SwiGlu the gate's silu (the product with `up` follows).
inline Halide::Expr applyGemmEpilogue(GemmEpilogue epilogue, Halide::Expr a) {
  using namespace Halide;
  switch (epilogue) {
  case GemmEpilogue::None:
    return a;
  case GemmEpilogue::Relu:
    return max(a, 0.f);
  case GemmEpilogue::GeluTanh: {
    // tanh(y) = 1 - 2 / (exp(2y) + 1), saturating when exp overflows or underflows.
    Expr y = float(std::sqrt(2.0 / M_PI)) * (a + 0.044715f * a * a * a);
    Expr tanhY = 1.f - 2.f / (exp(2.f * y) + 1.f);
    return 0.5f * a * (1.f + tanhY);
  }
  case GemmEpilogue::GeluErf:
    return 0.5f * a * (1.f + erf(a * float(1.0 / std::sqrt(2.0))));
  case GemmEpilogue::Silu:
  case GemmEpilogue::SwiGlu:
    // x·σ(x) = x / (1 + e^(−x)): 0 as e^(−x) overflows, x as it underflows.
    return a / (1.f + exp(-a));
  }
  return a;
}

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_HALIDEKERNELS_GEMMEPILOGUE_H
