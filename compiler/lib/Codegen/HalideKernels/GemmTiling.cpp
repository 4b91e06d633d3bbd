//===- GemmTiling.cpp - a GEMM spec's checks and derived sizes ------------===//
//
// Whether a GemmKernelSpec can be built (sizes, schedule, weight storage; on
// the CPU or the CUDA target), and
// the sizes its schedule leaves to the kernel: register tiles per parallel
// column panel, columns per GEMV task.
//
//===----------------------------------------------------------------------===//

#include "GemmTiling.h"

#include <algorithm>

namespace mlir::xf {

static llvm::Error invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error validateGemm(const GemmKernelSpec &spec, int vectorWidth) {
  const GemmSchedule &s = spec.schedule;
  if (spec.name.empty())
    return invalid("gemm kernel: empty function name");
  if (spec.mergeHeads)
    return invalid("gemm kernel '" + spec.name + "': merging key ranges is the CUDA GEMM's");
  if (spec.K <= 0 || spec.N <= 0)
    return invalid("gemm kernel '" + spec.name + "': K and N must be positive, got K=" +
                   llvm::Twine(spec.K) + " N=" + llvm::Twine(spec.N));
  if (s.tileCols <= 0 || s.tileCols % vectorWidth != 0)
    return invalid("gemm kernel '" + spec.name + "': tileCols=" + llvm::Twine(s.tileCols) +
                   " must be a positive multiple of the vector width " + llvm::Twine(vectorWidth));
  if (s.tileRows <= 0 || s.kBlock <= 0 || s.rowsPerTask <= 0 || s.panelCols < 0 ||
      s.gemvRowsBelow < 0 || s.gemvRowsPerPass <= 0 || s.gemvTasks < 0)
    return invalid("gemm kernel '" + spec.name +
                   "': tileRows, kBlock, rowsPerTask, gemvRowsPerPass must be positive, "
                   "panelCols, gemvRowsBelow and gemvTasks non-negative");
  if (spec.bf16Activations && !spec.bf16Weights)
    return invalid("gemm kernel '" + spec.name + "': bf16Activations needs bf16Weights");
  if (spec.prologue != GemmPrologue::None)
    return invalid("gemm kernel '" + spec.name +
                   "': a norm prologue is only in the CUDA GEMM (the CPU keeps its norm kernels)");
  if (spec.bf16Activations && s.kBlock % 2 != 0)
    return invalid("gemm kernel '" + spec.name + "': bf16Activations needs an even kBlock, got " +
                   llvm::Twine(s.kBlock));
  if (spec.weightBlocks != WeightBlocks::None) {
    if (!spec.transposeWeight || spec.K % 32 != 0 || spec.bf16Weights)
      return invalid("gemm kernel '" + spec.name + "': " + weightBlocksName(spec.weightBlocks) +
                     " weight blocks need the [N, K] layout, K a multiple of 32 (got " +
                     llvm::Twine(spec.K) + ") and no bf16Weights");
  }
  if (spec.packedWeight && !canPackWeightAtLoad(spec))
    return invalid("gemm kernel '" + spec.name +
                   "': a weight packed at load needs packWeights and no weight blocks");
  if (s.panelCols % s.tileCols != 0)
    return invalid("gemm kernel '" + spec.name + "': panelCols=" + llvm::Twine(s.panelCols) +
                   " must be a multiple of tileCols=" + llvm::Twine(s.tileCols));
  return llvm::Error::success();
}

llvm::Error validateGemmCuda(const GemmKernelSpec &spec) {
  if (spec.name.empty())
    return invalid("gemm kernel: empty function name");
  if (spec.K <= 0 || spec.N <= 0)
    return invalid("gemm kernel '" + spec.name + "': K and N must be positive, got K=" +
                   llvm::Twine(spec.K) + " N=" + llvm::Twine(spec.N));
  if (spec.weightBlocks != WeightBlocks::None)
    return invalid("gemm kernel '" + spec.name + "': " + weightBlocksName(spec.weightBlocks) +
                   " weight blocks are not supported by the CUDA GEMM");
  if (spec.packedWeight)
    return invalid("gemm kernel '" + spec.name +
                   "': weights packed at load are not supported by the CUDA GEMM");
  if (spec.bf16Activations)
    return invalid("gemm kernel '" + spec.name +
                   "': bf16 activations are not supported by the CUDA GEMM");
  if (spec.mergeHeads &&
      (spec.prologue != GemmPrologue::None || spec.mergeRanges <= 0 ||
       spec.K % spec.mergeHeads != 0 || (spec.transposeWeight && cudaGemvBlockCols(spec) > 32)))
    return invalid("gemm kernel '" + spec.name +
                   "': merging key ranges needs no norm prologue, ranges and heads dividing K, "
                   "and [N, K] weights of at most 1,024 columns");
  return llvm::Error::success();
}

/// Register tiles per parallel column panel: the K block of a panel stays
/// within ~512 KiB (half of a 1-2 MiB L2; it is reused by every row tile of
/// the task), and the panels split evenly over two threads. Of the widths
/// that fit, the widest whose busier thread gets within 2 % of the fewest
/// tiles: with K blocks of 768, 16 tiles make 8 panels of 2, not 6 of 3
/// (which leave one thread 9 tiles and the other 7).
int64_t defaultPanelTiles(const GemmKernelSpec &spec) {
  const GemmSchedule &s = spec.schedule;
  const int64_t tiles = (spec.N + s.tileCols - 1) / s.tileCols;
  const int64_t kBlock = std::min(s.kBlock, spec.K);
  // The panel's K block as the register loop reads it: bf16 where the
  // weight stays bf16 (packed at load, or packed in pairs), else float32.
  const int64_t bytes = spec.bf16Weights && (spec.packedWeight || spec.bf16Activations) ? 2 : 4;
  const int64_t maxTiles =
      std::clamp<int64_t>((512 * 1024 / bytes) / (kBlock * s.tileCols), 1, tiles);
  auto busierThreadTiles = [&](int64_t panelTiles) {
    const int64_t panels = (tiles + panelTiles - 1) / panelTiles;
    return (panels + 1) / 2 * panelTiles;
  };
  int64_t fewest = tiles;
  for (int64_t t = 1; t <= maxTiles; ++t)
    fewest = std::min(fewest, busierThreadTiles(t));
  int64_t best = 1;
  for (int64_t t = 1; t <= maxTiles; ++t)
    if (busierThreadTiles(t) * 50 <= fewest * 51)
      best = t;
  return best;
}

/// Columns per parallel task of the GEMV path. [K, N]: two tasks (one per
/// thread), so that each reads the longest contiguous segment of every row of
/// W. [N, K] (rows of W contiguous): tasks of ~256 KiB of W, so that a thread
/// slowed by other work does not hold the other one up.
int64_t gemvChunkCols(const GemmKernelSpec &spec, int vectorWidth) {
  if (spec.packedWeight) {
    // Whole tiles (contiguous in the packed weight): tasks of ~256 KiB, but
    // at least kGemvStreams tiles each (the streams the GEMV reads at once).
    const int64_t tileCols = spec.schedule.tileCols;
    const int64_t tiles = (spec.N + tileCols - 1) / tileCols;
    const int64_t tileBytes = packedWeightBytes(spec) / tiles;
    int64_t tasks = spec.schedule.gemvTasks;
    if (!tasks) {
      tasks = std::min(tiles * tileBytes / (256 * 1024), tiles / kGemvStreams);
      tasks = std::max<int64_t>(2, tasks + tasks % 2);
    }
    return (tiles + tasks - 1) / tasks * tileCols;
  }
  const int64_t bytesPerCol = spec.weightBlocks != WeightBlocks::None
                                  ? spec.K / 32 * weightBlockBytes(spec.weightBlocks)
                                  : spec.K * (spec.bf16Weights ? 2 : 4);
  int64_t tasks = spec.schedule.gemvTasks ? spec.schedule.gemvTasks : 2;
  if (spec.transposeWeight && !spec.schedule.gemvTasks) {
    tasks = std::max<int64_t>(2, spec.N * bytesPerCol / (256 * 1024));
    tasks += tasks % 2;
  }
  int64_t chunk = (spec.N + tasks - 1) / tasks;
  return std::max<int64_t>(vectorWidth, (chunk + vectorWidth - 1) / vectorWidth * vectorWidth);
}

} // namespace mlir::xf
