//===- GemmPrologue.h - a row norm of x inside the CUDA GEMM ----*- C++ -*-===//
//
// The CUDA GEMM's prologue (GemmKernelSpec::prologue, xf-fuse-norm-into-gemm):
// x's rows normalised — LayerNorm or RMSNorm, γ and β — as the product reads
// them, so the norm takes no launch of its own. Each thread block recomputes
// the statistics of the rows it reads (from L2: 3 KB a row of 768 floats)
// before its tiles: `lanes` strided partial sums per row in shared memory,
// then one thread per row adds them (the device norm kernel's two passes:
// the mean, then Σ (x − mean)²). The GEMV path and the tile paths each have
// their own statistics, sized to their blocks.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_GEMMPROLOGUE_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_GEMMPROLOGUE_H

#include "KernelPipelines.h"

namespace mlir::xf {

struct GemmInputs;

/// One path's row statistics: partial(l, m) over k ≡ l (mod lanes), then
/// mean(m) and rstd(m) = 1 / sqrt(var + ε) (var = mean(x²) for RMSNorm).
/// Rows past M read row M − 1.
struct GemmRowNorm {
  int lanes = 0;
  Halide::Var l{"l"}, m{"m"};
  Halide::Func sumPart, sum, mean, squarePart, squares, rstd;
  Halide::RVar sumTerms, squareTerms; // a lane's terms (the partials' updates)
  bool center = false;                // LayerNorm (else mean = 0)
};

/// How a path's block computes the statistics: `lanes` threads a row (the
/// block's inner thread dimension), each thread `rowsPerThread` rows, so the
/// block keeps the thread shape its product has.
struct GemmRowNormShape {
  int lanes, rowsPerThread;
};
/// The GEMV path's (`gemv`) or the tile paths' shape under spec.gpuSchedule.
GemmRowNormShape cudaRowNormShape(const GemmKernelSpec &spec, bool gemv, bool registerTiles);

/// A batch GEMV's shape (4 < M <= 16, GemmScheduleCuda.cpp): `lanes` partial sums a row laid
/// over `laneThreads` of the block's inner threads × lanes / laneThreads of its outer ones,
/// each thread `rowsPerThread` rows, the rows' statistics by outer threads; the block keeps
/// the thread shape its product has.
struct GemmBatchRowNormShape {
  int lanes, laneThreads, rowsPerThread;
};
GemmBatchRowNormShape cudaBatchRowNormShape(const GemmKernelSpec &spec, int rows);

/// The statistics of x's rows for one path (names prefixed by `path`).
GemmRowNorm defineGemmRowNorm(const GemmKernelSpec &spec, const GemmInputs &in,
                              const std::string &path, int lanes);
/// x(k, m) normalised by `norm` (k inside [0, K); m any row: x's row is clamped).
Halide::Expr normalizedX(const GemmKernelSpec &spec, const GemmInputs &in, const GemmRowNorm &norm,
                         Halide::Expr k, Halide::Expr m);

/// Computes `norm` per thread block of `out` (at its block loop `blockVar`):
/// lanes × ⌈rows / rowsPerThread⌉ threads, each summing rowsPerThread rows;
/// `rows` bounds m to [0, rows) where nonzero (the GEMV path's 4 rows).
void scheduleGemmRowNormCuda(GemmRowNorm &norm, Halide::Func out, Halide::Var blockVar,
                             int rowsPerThread, int rows);
/// Computes a batch GEMV's `norm` of `rows` rows per thread block of `out` in `shape`.
void scheduleBatchRowNormCuda(GemmRowNorm &norm, Halide::Func out, Halide::Var blockVar,
                              const GemmBatchRowNormShape &shape, int rows);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_GEMMPROLOGUE_H
