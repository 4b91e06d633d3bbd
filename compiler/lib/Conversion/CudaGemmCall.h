//===- CudaGemmCall.h - a tensor-core GEMM's split-K partials -*- C++ -*-===//
//
// On the GPU with --gpu-matmul=tf32|bf16 a GEMM the tensor cores take is called with one
// more buffer than its Halide ABI: the device scratch its launcher may split K into
// ([S][M][cols] partial sums, then a reduction; TensorCoreLaunch.cpp, docs/gpu.md
// "Split-K"), sized by tensorCoreSplitPartialFloats for the most rows that may split.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_CUDAGEMMCALL_H
#define XF_LIB_CONVERSION_CUDAGEMMCALL_H

#include "xf/Codegen/HalideCalls.h"
#include "xf/Codegen/HalideKernels.h"
#include "xf/Conversion/LowerToHost.h"

namespace mlir::xf {

/// Whether the GEMM `spec` runs on tensor cores and so takes the partials buffer.
bool takesSplitKPartials(const HostOptions &options, const GemmKernelSpec &spec);

/// The partials as the GEMM's last buffer: tensorCoreSplitPartialFloats(spec) floats from the
/// device address `partials` (one dimension).
HalideBufferArg splitKPartialsArg(OpBuilder &b, Location loc, const GemmKernelSpec &spec,
                                  Value partials);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_CUDAGEMMCALL_H
