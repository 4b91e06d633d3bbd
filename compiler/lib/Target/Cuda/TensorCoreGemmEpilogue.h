//===- TensorCoreGemmEpilogue.h - the tensor-core GEMM's epilogue -*- C++ -*-===//
//
// Bias, activation (SwiGLU: silu(gate) · up) and residual on a pair of out columns, as MLIR
// text: applied by `<name>_tc` / `_tc32` to their accumulators (TensorCoreGemmSource.cpp)
// and, after split-K, by the reduction kernel `<name>_tc_reduce` to the sums of the
// partials (docs/gpu.md, "Split-K").
//
//===----------------------------------------------------------------------===//

#ifndef XF_TARGET_CUDA_TENSORCOREGEMMEPILOGUE_H
#define XF_TARGET_CUDA_TENSORCOREGEMMEPILOGUE_H

#include "TensorCoreKernelText.h"

#include "xf/Codegen/HalideKernels.h"
#include "xf/Target/TensorCoreGemm.h"

#include <functional>

namespace mlir::xf::tc {

/// act(sum + bias) + residual of out's columns `col`, `col` + 1 (a vector<2xf32>) in `row`;
/// `sum(gate)` gives the raw sums of a gate (SwiGLU's gate 0 and up 1, else only 0). Reads
/// the kernel's %bias and %res (row stride %rs).
std::string epiloguePair(Writer &w, const GemmKernelSpec &spec, const std::string &row,
                         const std::string &col, const std::function<std::string(int)> &sum);

/// A GEMM kernel's gpu.func `entry` (the tensor-core and fp32 FMA kernels alike): its
/// parameters — split-K's (`split`: x, W, the partials as %out, then `more`, M, the row
/// strides of x and W, K and a range's K) or the whole GEMM's (x, W, bias, residual, out,
/// `more`, M, the row strides of x, W, the residual and out, K), W of element `weight` —
/// its shared tiles `workgroup` (none: "", the tiles are views of dynamic shared memory that
/// `body` opens with), `threads` threads, at most `maxRegisters`, and `body`.
std::string gemmKernelFunction(const std::string &entry, const char *weight, bool split,
                               const std::string &more, const std::string &workgroup,
                               const std::string &body, int maxRegisters, int threads = kTcThreads);

/// Stores the columns below N of `row`'s pair at `col` (a column tail): the pair's epilogue
/// (`pair()`) where col < N, each of its columns below N stored alone (out's rows may then be
/// of any length: no pair alignment).
void storeColumns(Writer &w, const GemmKernelSpec &spec, const std::string &row,
                  const std::string &col, const std::function<std::string()> &pair);

/// Stores `row`'s pair at `col` of a thread's sums (`sum(gate)`: the pair's raw sums of a gate),
/// as the tensor-core and fp32 FMA kernels' tiles do: through the epilogue into out — a column
/// tail's by storeColumns, and where `pastN` (a wide tile's last, N an odd multiple of 64) only
/// a pair below N — or, with `partialsRow0` (split-K: z · M), raw into the [S][M][gates · N]
/// partials, each gate's where its weights' columns are.
void storeSumPair(Writer &w, const GemmKernelSpec &spec, bool pastN, const std::string &row,
                  const std::string &col, const std::function<std::string(int)> &sum,
                  const std::string &partialsRow0);

/// `<entry>_reduce` (`<name>_tc_reduce`, `<name>_fma_reduce`), split-K's second kernel: a block of
/// kTcThreads per kTcReduceRows rows × 64 columns, a thread per pair of columns, sums the %s
/// partials [S][M][cols] (%p) of its pair in the order z = 0, 1, .., S − 1 (results independent of
/// the split blocks' order) and stores the epilogue of the sums into out.
std::string splitReductionFunction(const GemmKernelSpec &spec, llvm::StringRef entry);

} // namespace mlir::xf::tc

#endif // XF_TARGET_CUDA_TENSORCOREGEMMEPILOGUE_H
