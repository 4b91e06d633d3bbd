//===- AssignDefaultSchedules.cpp - a schedule on every kernel ------------===//
//
// Schedules live on the kernel ops as a `schedule` dictionary so that
// `--emit=kernels` shows exactly what each kernel will be compiled with.
// The defaults follow docs/bench.md: a 48×8 register block with the weight
// panel packed per K block, and 64-row parallel tasks; attention streams
// 64-key blocks past 64-query blocks.
//
//===----------------------------------------------------------------------===//

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

DictionaryAttr defaultGemmSchedule(Builder &b, GemmOp op) {
  int64_t k = cast<RankedTensorType>(op.getInput().getType()).getDimSize(1);
  return b.getDictionaryAttr({
      b.getNamedAttr("tile_cols", b.getI64IntegerAttr(48)),
      b.getNamedAttr("tile_rows", b.getI64IntegerAttr(8)),
      b.getNamedAttr("k_block", b.getI64IntegerAttr(std::min<int64_t>(k, 256))),
      b.getNamedAttr("pack_weights", b.getBoolAttr(true)),
      b.getNamedAttr("rows_per_task", b.getI64IntegerAttr(64)),
  });
}

DictionaryAttr defaultAttentionSchedule(Builder &b) {
  return b.getDictionaryAttr({
      b.getNamedAttr("query_block", b.getI64IntegerAttr(64)),
      b.getNamedAttr("key_block", b.getI64IntegerAttr(64)),
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
