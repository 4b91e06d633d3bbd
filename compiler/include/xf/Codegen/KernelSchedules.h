//===- KernelSchedules.h - schedule attributes ⇄ generator knobs -*- C++ -*-===//
//
// The typed schedule attributes (#xf.gemm_schedule, #xf.gpu_gemm_schedule,
// #xf.attention_schedule, #xf.gpu_attention_schedule)
// carry exactly the knobs of the Halide generators' schedule structs; these
// are the two directions, field by field, checked by the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_KERNELSCHEDULES_H
#define XF_CODEGEN_KERNELSCHEDULES_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/IR/XfOps.h"

#include <algorithm>

namespace mlir::xf {

inline GemmSchedule gemmScheduleOf(GemmScheduleAttr a) {
  GemmSchedule s;
  s.tileCols = a.getTileCols(), s.tileRows = a.getTileRows(), s.kBlock = a.getKBlock();
  s.packWeights = a.getPackWeights(), s.rowsPerTask = a.getRowsPerTask();
  s.panelCols = a.getPanelCols(), s.gemvRowsBelow = a.getGemvRowsBelow();
  s.gemvRowsPerPass = a.getGemvRowsPerPass(), s.gemvTasks = a.getGemvTasks();
  return s;
}

inline GemmScheduleAttr gemmScheduleAttr(MLIRContext *ctx, const GemmSchedule &s) {
  return GemmScheduleAttr::get(ctx, s.tileCols, s.tileRows, s.kBlock, s.packWeights, s.rowsPerTask,
                               s.panelCols, s.gemvRowsBelow, s.gemvRowsPerPass, s.gemvTasks);
}

inline GpuGemmSchedule gpuGemmScheduleOf(GpuGemmScheduleAttr a) {
  GpuGemmSchedule s;
  s.registerTiles = a.getRegisterTiles(), s.regTileCols = a.getRegTileCols();
  s.regTileRows = a.getRegTileRows(), s.regTallRows = a.getRegTallRows();
  s.regTallTileRows = a.getRegTallTileRows(), s.regThreadRows = a.getRegThreadRows();
  s.regUnrollK = a.getRegUnrollK(), s.tileCols = a.getTileCols(), s.tileRows = a.getTileRows();
  s.threadCols = a.getThreadCols(), s.threadRows = a.getThreadRows(), s.sliceK = a.getSliceK();
  s.gemvCols = a.getGemvCols(), s.gemvSlices = a.getGemvSlices();
  s.gemvLaneCols = a.getGemvLaneCols();
  s.regSplitK = a.getRegSplitK(), s.regFillBlocks = a.getRegFillBlocks();
  s.nkThreadRows = a.getNkThreadRows();
  s.batchCols = a.getBatchCols(), s.batchSlices = a.getBatchSlices();
  s.batchLaneCols = a.getBatchLaneCols();
  return s;
}

inline GpuGemmScheduleAttr gpuGemmScheduleAttr(MLIRContext *ctx, const GpuGemmSchedule &s) {
  return GpuGemmScheduleAttr::get(ctx, s.registerTiles, s.regTileCols, s.regTileRows,
                                  s.regTallRows, s.regTallTileRows, s.regThreadRows,
                                  s.regUnrollK, s.tileCols, s.tileRows, s.threadCols,
                                  s.threadRows, s.sliceK, s.gemvCols, s.gemvSlices,
                                  s.gemvLaneCols, s.regSplitK, s.regFillBlocks,
                                  s.nkThreadRows, s.batchCols, s.batchSlices,
                                  s.batchLaneCols);
}

inline AttentionSchedule attentionScheduleOf(AttentionScheduleAttr a) {
  AttentionSchedule s;
  s.queryBlock = a.getQueryBlock(), s.keyBlock = a.getKeyBlock(), s.rowTile = a.getRowTile();
  s.decodeKeyTile = a.getDecodeKeyTile();
  return s;
}

inline AttentionScheduleAttr attentionScheduleAttr(MLIRContext *ctx, const AttentionSchedule &s) {
  return AttentionScheduleAttr::get(ctx, s.queryBlock, s.keyBlock, s.rowTile, s.decodeKeyTile);
}

inline GpuAttentionSchedule gpuAttentionScheduleOf(GpuAttentionScheduleAttr a) {
  GpuAttentionSchedule s;
  s.queryBlock = a.getQueryBlock(), s.keyBlock = a.getKeyBlock();
  s.decodeKeyBlock = a.getDecodeKeyBlock(), s.decodeBlocks = a.getDecodeBlocks();
  s.decodeBlockHeads = a.getDecodeBlockHeads();
  return s;
}

inline GpuAttentionScheduleAttr gpuAttentionScheduleAttr(MLIRContext *ctx,
                                                         const GpuAttentionSchedule &s) {
  return GpuAttentionScheduleAttr::get(ctx, s.queryBlock, s.keyBlock, s.decodeKeyBlock,
                                       s.decodeBlocks, s.decodeBlockHeads);
}

/// The knobs of a loop kernel (LoopKernels.h), as in #xf.loop_schedule.
struct LoopSchedule {
  int64_t rowsPerTask = 0; // 0: one serial loop
  int64_t vectorBits = 0;  // 0: the target CPU's preferred vector width
  bool operator==(const LoopSchedule &o) const {
    return rowsPerTask == o.rowsPerTask && vectorBits == o.vectorBits;
  }
};

/// Tasks of ~64 KiB of row data: enough to hide the thread pool's wake-up
/// (microseconds) behind each task, small enough that a 128-row prefill of
/// a 768-wide model splits into several tasks per thread.
inline LoopSchedule defaultLoopSchedule(int64_t rowWidth) {
  LoopSchedule s;
  s.rowsPerTask = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, rowWidth));
  return s;
}

inline LoopSchedule loopScheduleOf(LoopScheduleAttr a) {
  LoopSchedule s;
  if (a)
    s.rowsPerTask = a.getRowsPerTask(), s.vectorBits = a.getVectorBits();
  return s;
}

inline LoopScheduleAttr loopScheduleAttr(MLIRContext *ctx, const LoopSchedule &s) {
  return LoopScheduleAttr::get(ctx, s.rowsPerTask, s.vectorBits);
}

} // namespace mlir::xf

#endif // XF_CODEGEN_KERNELSCHEDULES_H
