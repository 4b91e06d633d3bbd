//===- XfScheduleAttrs.cpp - typed kernel schedules -----------------------===//
//
// The verifiers state what any generator needs of a schedule: positive
// sizes, a panel of whole register tiles, and upper bounds that keep the
// unrolled register blocks (and so compile time and code size) bounded.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfScheduleAttrs.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;

#define GET_ATTRDEF_CLASSES
#include "xf/IR/XfAttrDefs.cpp.inc"

void XfDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "xf/IR/XfAttrDefs.cpp.inc"
      >();
}

namespace {
/// `value` must lie in [lo, hi].
LogicalResult inRange(function_ref<InFlightDiagnostic()> emitError, llvm::StringRef attr,
                      llvm::StringRef name, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi)
    return success();
  return emitError() << "#xf." << attr << ": " << name << " = " << value << " is out of range ["
                     << lo << ", " << hi << "]";
}
} // namespace

LogicalResult GemmScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t tileCols, int64_t tileRows, int64_t kBlock,
                                       bool packWeights, int64_t rowsPerTask, int64_t panelCols,
                                       int64_t gemvRowsBelow, int64_t gemvRowsPerPass,
                                       int64_t gemvTasks) {
  auto range = [&](llvm::StringRef name, int64_t v, int64_t lo, int64_t hi) {
    return inRange(emitError, "gemm_schedule", name, v, lo, hi);
  };
  if (failed(range("tile_cols", tileCols, 1, 256)) || failed(range("tile_rows", tileRows, 1, 32)) ||
      failed(range("k_block", kBlock, 1, 1 << 16)) ||
      failed(range("rows_per_task", rowsPerTask, 1, 1 << 20)) ||
      failed(range("panel_cols", panelCols, 0, 1 << 20)) ||
      failed(range("gemv_rows_below", gemvRowsBelow, 0, 64)) ||
      failed(range("gemv_rows_per_pass", gemvRowsPerPass, 1, 64)) ||
      failed(range("gemv_tasks", gemvTasks, 0, 4096)))
    return failure();
  // Every accumulator of the register block is unrolled code.
  if (tileCols * tileRows > 1024)
    return emitError() << "#xf.gemm_schedule: a register tile of tile_rows × tile_cols = "
                       << tileRows << " × " << tileCols << " exceeds 1024 accumulators";
  if (panelCols % tileCols != 0)
    return emitError() << "#xf.gemm_schedule: panel_cols = " << panelCols
                       << " must be a multiple of tile_cols = " << tileCols;
  return success();
}

// What a CUDA block can hold: 1024 threads and 48 KiB of static shared
// memory; the GEMV path's thread counts stay within a block too. A thread's
// register tile is unrolled code (both gates of SwiGLU), so it is bounded.
LogicalResult GpuGemmScheduleAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, bool registerTiles, int64_t regTileCols,
    int64_t regTileRows, int64_t regTallRows, int64_t regTallTileRows, int64_t regThreadRows,
    int64_t regUnrollK, int64_t tileCols, int64_t tileRows, int64_t threadCols,
    int64_t threadRows, int64_t sliceK, int64_t gemvCols, int64_t gemvSlices,
    int64_t gemvLaneCols, int64_t regSplitK, int64_t regFillBlocks, int64_t nkThreadRows,
    int64_t batchCols, int64_t batchSlices, int64_t batchLaneCols) {
  auto range = [&](llvm::StringRef name, int64_t v, int64_t lo, int64_t hi) {
    return inRange(emitError, "gpu_gemm_schedule", name, v, lo, hi);
  };
  if (failed(range("reg_tile_cols", regTileCols, 4, 256)) ||
      failed(range("reg_tile_rows", regTileRows, 1, 256)) ||
      failed(range("reg_tall_rows", regTallRows, 1, 1 << 20)) ||
      failed(range("reg_tall_tile_rows", regTallTileRows, 1, 256)) ||
      failed(range("reg_thread_rows", regThreadRows, 1, 16)) ||
      failed(range("reg_unroll_k", regUnrollK, 1, 64)) ||
      failed(range("tile_cols", tileCols, 1, 256)) || failed(range("tile_rows", tileRows, 1, 256)) ||
      failed(range("thread_cols", threadCols, 1, 16)) ||
      failed(range("thread_rows", threadRows, 1, 16)) || failed(range("slice_k", sliceK, 1, 256)) ||
      failed(range("gemv_cols", gemvCols, 1, 1024)) ||
      failed(range("gemv_slices", gemvSlices, 1, 1024)) ||
      failed(range("gemv_lane_cols", gemvLaneCols, 1, 32)) ||
      failed(range("reg_split_k", regSplitK, 1, 16)) ||
      failed(range("reg_fill_blocks", regFillBlocks, 0, 1 << 20)) ||
      failed(range("nk_thread_rows", nkThreadRows, 1, 8)) ||
      failed(range("batch_cols", batchCols, 1, 32)) ||
      failed(range("batch_slices", batchSlices, 1, 1024)) ||
      failed(range("batch_lane_cols", batchLaneCols, 1, 32)))
    return failure();
  auto multiple = [&](llvm::StringRef name, int64_t v, llvm::StringRef ofName,
                      int64_t of) -> LogicalResult {
    if (v % of == 0)
      return success();
    return emitError() << "#xf.gpu_gemm_schedule: " << name << " = " << v
                       << " must be a multiple of " << ofName << " = " << of;
  };
  auto threads = [&](llvm::StringRef what, int64_t count) -> LogicalResult {
    if (count <= 1024)
      return success();
    return emitError() << "#xf.gpu_gemm_schedule: " << what << " needs " << count
                       << " threads a block (at most 1024)";
  };
  // Register path: a thread loads 4 columns as one vector.
  if (failed(multiple("reg_tile_cols", regTileCols, "a thread's columns", 4)) ||
      failed(multiple("reg_tile_rows", regTileRows, "reg_thread_rows", regThreadRows)) ||
      failed(multiple("reg_tall_tile_rows", regTallTileRows, "reg_thread_rows", regThreadRows)) ||
      failed(threads("the register path",
                     regTileCols / 4 * std::max(regTileRows, regTallTileRows) / regThreadRows)))
    return failure();
  // [N, K] register path (only with register_tiles): the block tiles' rows split over threads
  // of nk_thread_rows rows (SwiGLU: half as many rows a thread, so twice the threads).
  if (registerTiles &&
      (failed(multiple("reg_tile_rows", regTileRows, "nk_thread_rows", nkThreadRows)) ||
      failed(multiple("reg_tall_tile_rows", regTallTileRows, "nk_thread_rows", nkThreadRows)) ||
      failed(threads("the [N, K] register path", regTileCols / 4 *
                                                     std::max(regTileRows, regTallTileRows) /
                                                     std::max<int64_t>(1, nkThreadRows / 2)))))
    return failure();
  // Split K: reg_split_k groups of reg_tile_rows / reg_thread_rows rows of threads, then a
  // thread per row for the sum (the block's threads: the larger); the groups' sums in shared
  // memory, SwiGLU's two gates counted.
  if (regSplitK > 1) {
    if (failed(threads("the register path's split K",
                       regTileCols / 4 *
                           std::max(regTileRows, regTileRows / regThreadRows * regSplitK))))
      return failure();
    const int64_t splitBytes = 4 * 2 * regTileCols * regTileRows * regSplitK;
    if (splitBytes > 48 * 1024)
      return emitError() << "#xf.gpu_gemm_schedule: the register path's split K needs "
                         << splitBytes << " bytes of shared memory (at most 49152)";
  }
  // Staged path: the block's threads also copy each slice (x along the
  // slice by tile_rows / thread_rows, W along its contiguous axis).
  if (failed(multiple("tile_cols", tileCols, "thread_cols", threadCols)) ||
      failed(multiple("tile_rows", tileRows, "thread_rows", threadRows)))
    return failure();
  const int64_t threadsX = tileCols / threadCols, threadsY = tileRows / threadRows;
  if (failed(multiple("tile_cols", tileCols, "tile_rows / thread_rows", threadsY)) ||
      failed(multiple("slice_k", sliceK, "tile_rows / thread_rows", threadsY)) ||
      failed(threads("the staged path", std::max(threadsX, sliceK) * threadsY)))
    return failure();
  if (threadCols * threadRows > 64)
    return emitError() << "#xf.gpu_gemm_schedule: a register tile of thread_rows × thread_cols = "
                       << threadRows << " × " << threadCols << " exceeds 64 accumulators";
  // Shared memory, SwiGLU's two gates counted: accumulators, x and W slices.
  const int64_t sharedBytes = 4 * (2 * tileCols * tileRows + sliceK * tileRows + 2 * tileCols * sliceK);
  if (sharedBytes > 48 * 1024)
    return emitError() << "#xf.gpu_gemm_schedule: the staged path's tile and slice need "
                       << sharedBytes << " bytes of shared memory (at most 49152)";
  if (failed(threads("the [K, N] GEMV path", gemvCols * gemvSlices)))
    return failure();
  // Batch GEMV (up to 16 rows): a thread per (column, slice) or (lane, column), then one per
  // (column, row); each thread's 16 rows × 2 gates of sums meet in shared memory.
  constexpr int64_t batchRows = 16;
  if (failed(threads("the [K, N] batch GEMV path",
                     batchCols * std::max(batchSlices, batchRows))) ||
      failed(threads("the [N, K] batch GEMV path", 32 * batchLaneCols)))
    return failure();
  const int64_t batchBytes = 4 * 2 * batchRows * std::max(batchCols * batchSlices, 32 * batchLaneCols);
  if (batchBytes > 48 * 1024)
    return emitError() << "#xf.gpu_gemm_schedule: the batch GEMV path's partial sums need "
                       << batchBytes << " bytes of shared memory (at most 49152)";
  return success();
}

LogicalResult AttentionScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                            int64_t queryBlock, int64_t keyBlock, int64_t rowTile,
                                            int64_t decodeKeyTile) {
  auto range = [&](llvm::StringRef name, int64_t v, int64_t lo, int64_t hi) {
    return inRange(emitError, "attention_schedule", name, v, lo, hi);
  };
  if (failed(range("query_block", queryBlock, 1, 4096)) ||
      failed(range("key_block", keyBlock, 1, 1024)) || failed(range("row_tile", rowTile, 1, 16)) ||
      failed(range("decode_key_tile", decodeKeyTile, 1, 16)))
    return failure();
  if (keyBlock * rowTile > 4096)
    return emitError() << "#xf.attention_schedule: a score tile of row_tile × key_block = "
                       << rowTile << " × " << keyBlock << " exceeds 4096 accumulators";
  return success();
}

LogicalResult LoopScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t rowsPerTask, int64_t vectorBits) {
  if (failed(inRange(emitError, "loop_schedule", "rows_per_task", rowsPerTask, 0, 1 << 20)))
    return failure();
  if (vectorBits != 0 && vectorBits != 128 && vectorBits != 256 && vectorBits != 512)
    return emitError() << "#xf.loop_schedule: vector_bits = " << vectorBits
                       << " is not 0 (the target's choice), 128, 256 or 512";
  return success();
}

// A CUDA block's 1,024 threads: the prefill path's 32 column threads × query_block rows and its
// key_block × query_block scores; the range pass's 32 × 4 rows × decode_block_heads threads
// and its decode_key_block × 4 rows × heads scores. Sizes past these limits are code no GPU
// launches.
LogicalResult GpuAttentionScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                               int64_t queryBlock, int64_t keyBlock,
                                               int64_t decodeKeyBlock, int64_t decodeBlocks,
                                               int64_t decodeBlockHeads) {
  auto range = [&](llvm::StringRef name, int64_t v, int64_t lo, int64_t hi) {
    return inRange(emitError, "gpu_attention_schedule", name, v, lo, hi);
  };
  if (failed(range("query_block", queryBlock, 1, 32)) ||
      failed(range("key_block", keyBlock, 1, 256)) ||
      failed(range("decode_key_block", decodeKeyBlock, 1, 256)) ||
      failed(range("decode_blocks", decodeBlocks, 1, 1 << 16)) ||
      failed(range("decode_block_heads", decodeBlockHeads, 1, 8)))
    return failure();
  if (keyBlock * queryBlock > 1024)
    return emitError() << "#xf.gpu_attention_schedule: key_block × query_block = " << keyBlock
                       << " × " << queryBlock << " score threads exceed a block's 1024";
  if (decodeKeyBlock * 4 * decodeBlockHeads > 1024)
    return emitError() << "#xf.gpu_attention_schedule: decode_key_block × 4 rows × "
                          "decode_block_heads = "
                       << decodeKeyBlock << " × 4 × " << decodeBlockHeads
                       << " score threads exceed a block's 1024";
  return success();
}
