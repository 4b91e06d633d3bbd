//===- Reference.h - float64 reference results for sampled rows -*- C++ -*-===//
//
// In: the kernel spec and its float32 inputs (row-major matrices as Halide
// buffers, dim 0 = cols; a bf16 weight passed as its exact float32 values).
// Out: the expected output rows `rows`, all columns, row after row, computed
// in float64 by naive loops written from the math in the headers of
// GemmAlgorithm.cpp and AttentionKernel.cpp, not from their schedules.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_REFERENCE_H
#define XF_TOOLS_XF_TUNE_WORKER_REFERENCE_H

#include "xf/Codegen/HalideKernels.h"

#include "HalideBuffer.h"

#include <vector>

namespace xftune {

using FloatBuffer = Halide::Runtime::Buffer<float>;

/// The rows a check compares: first, last and a few evenly in between, so the
/// reference costs O(K·N) per case however large M is.
std::vector<int> sampleRows(int rows);

/// out = act(x·W + bias) + residual; `bias` / `residual` are unused unless
/// the spec has them.
std::vector<double> referenceGemm(const mlir::xf::GemmKernelSpec &spec, const FloatBuffer &x,
                                  const FloatBuffer &weight, const FloatBuffer &bias,
                                  const FloatBuffer &residual, const std::vector<int> &rows);

/// Multi-head softmax(scale·q·kᵀ | causal mask)·v; a query that sees no key
/// gives zeros.
std::vector<double> referenceAttention(const mlir::xf::AttentionKernelSpec &spec,
                                       const FloatBuffer &q, const FloatBuffer &k,
                                       const FloatBuffer &v, const std::vector<int> &rows);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_REFERENCE_H
