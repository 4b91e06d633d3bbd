//===- KernelSchedules.h - schedule attributes ⇄ generator knobs -*- C++ -*-===//
//
// The typed schedule attributes (#xf.gemm_schedule, #xf.attention_schedule)
// carry exactly the knobs of the Halide generators' schedule structs; these
// are the two directions, field by field, checked by the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_KERNELSCHEDULES_H
#define XF_CONVERSION_KERNELSCHEDULES_H

#include "xf/Conversion/HalideKernels.h"
#include "xf/IR/XfOps.h"

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

inline AttentionSchedule attentionScheduleOf(AttentionScheduleAttr a) {
  AttentionSchedule s;
  s.queryBlock = a.getQueryBlock(), s.keyBlock = a.getKeyBlock(), s.rowTile = a.getRowTile();
  s.decodeKeyTile = a.getDecodeKeyTile();
  return s;
}

inline AttentionScheduleAttr attentionScheduleAttr(MLIRContext *ctx, const AttentionSchedule &s) {
  return AttentionScheduleAttr::get(ctx, s.queryBlock, s.keyBlock, s.rowTile, s.decodeKeyTile);
}

} // namespace mlir::xf

#endif // XF_CONVERSION_KERNELSCHEDULES_H
