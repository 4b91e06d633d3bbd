//===- AssignDefaultSchedules.cpp - a schedule on every kernel ------------===//
//
// Schedules live on the kernel ops as a `schedule` dictionary so that
// `--emit=kernels` shows exactly what each kernel will be compiled with.
// The defaults follow docs/bench.md: a 48×8 register block with the weight
// panel packed per K block, parallel over column panels × row blocks;
// attention streams 64-key blocks past 64-query blocks.
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/HalideKernels.h"
#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::xf {
#define GEN_PASS_DEF_ASSIGNDEFAULTSCHEDULES
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

// The generators' own defaults (HalideKernels.h) are the measured good
// schedule; the IR spells every field out so nothing is implicit.
DictionaryAttr defaultGemmSchedule(Builder &b, GemmOp op) {
  int64_t k = cast<RankedTensorType>(op.getInput().getType()).getDimSize(1);
  GemmSchedule s;
  return b.getDictionaryAttr({
      b.getNamedAttr("tile_cols", b.getI64IntegerAttr(s.tileCols)),
      b.getNamedAttr("tile_rows", b.getI64IntegerAttr(s.tileRows)),
      b.getNamedAttr("k_block", b.getI64IntegerAttr(std::min<int64_t>(k, s.kBlock))),
      b.getNamedAttr("pack_weights", b.getBoolAttr(s.packWeights)),
      b.getNamedAttr("rows_per_task", b.getI64IntegerAttr(s.rowsPerTask)),
      b.getNamedAttr("panel_cols", b.getI64IntegerAttr(s.panelCols)),
      b.getNamedAttr("gemv_rows_below", b.getI64IntegerAttr(s.gemvRowsBelow)),
  });
}

DictionaryAttr defaultAttentionSchedule(Builder &b) {
  AttentionSchedule s;
  return b.getDictionaryAttr({
      b.getNamedAttr("query_block", b.getI64IntegerAttr(s.queryBlock)),
      b.getNamedAttr("key_block", b.getI64IntegerAttr(s.keyBlock)),
  });
}

struct AssignDefaultSchedulesPass
    : xf::impl::AssignDefaultSchedulesBase<AssignDefaultSchedulesPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      if (auto gemm = dyn_cast<GemmOp>(op); gemm && !gemm.getScheduleAttr())
        gemm.setScheduleAttr(defaultGemmSchedule(b, gemm));
      if (auto attn = dyn_cast<AttentionOp>(op); attn && !attn.getScheduleAttr())
        attn.setScheduleAttr(defaultAttentionSchedule(b));
    });
  }
};

} // namespace
