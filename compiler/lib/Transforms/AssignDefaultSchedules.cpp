//===- AssignDefaultSchedules.cpp - a schedule on every kernel ------------===//
//
// Schedules live on the kernel ops as typed attributes so that
// `--emit=kernels` shows exactly what each kernel will be compiled with.
// The defaults follow the target's vector unit (HalideKernels.h:
// defaultGemmSchedule, defaultAttentionSchedule); loop kernels get tasks of
// ~64 KiB of rows (KernelSchedules.h: defaultLoopSchedule). Schedules already present
// (from the tuning database or written by hand) are kept but must fit the
// target: a register tile of whole vectors. CUDA targets' GEMMs and attentions also get
// the GPU schedule (HalideKernels.h: defaultGpuGemmSchedule, GpuAttentionSchedule's defaults).
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::xf {
#define GEN_PASS_DEF_ASSIGNDEFAULTSCHEDULES
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

struct AssignDefaultSchedulesPass
    : xf::impl::AssignDefaultSchedulesBase<AssignDefaultSchedulesPass> {
  using AssignDefaultSchedulesBase::AssignDefaultSchedulesBase;

  void runOnOperation() override {
    const int64_t lanes = vectorWidth, registers = vectorRegisters;
    if (lanes < 1 || lanes > 64 || registers < 8 || registers > 64) {
      getOperation().emitError() << "xf-assign-schedules: vector-width " << lanes
                                 << " and vector-registers " << registers
                                 << " do not describe a vector unit";
      return signalPassFailure();
    }
    VectorShape shape{lanes, registers};
    MLIRContext *ctx = &getContext();
    WalkResult result = getOperation().walk([&](Operation *op) {
      if (auto gemm = dyn_cast<GemmOp>(op)) {
        if (!gemm.getScheduleAttr()) {
          int64_t k = cast<RankedTensorType>(gemm.getInput().getType()).getDimSize(1);
          // A weight in blocks (xf-assign-weight-storage) gets the block default.
          WeightBlocks blocks = weightBlocksOf(weightStorageOf(gemm.getWeight()));
          gemm.setScheduleAttr(gemmScheduleAttr(ctx, defaultGemmSchedule(shape, k, blocks)));
        }
        int64_t tileCols = gemm.getScheduleAttr().getTileCols();
        if (tileCols % lanes != 0) {
          gemm.emitOpError() << "schedule tile_cols = " << tileCols
                             << " is not a multiple of the target's vector width (" << lanes
                             << " float32 lanes)";
          return WalkResult::interrupt();
        }
        if (cuda && !gemm.getGpuScheduleAttr()) {
          auto attn = gemm.getInput().getDefiningOp<AttentionOp>();
          int64_t n = cast<ShapedType>(gemm.getResult().getType()).getDimSize(1);
          gemm.setGpuScheduleAttr(gpuGemmScheduleAttr(
              ctx, defaultGpuGemmSchedule(n, gemm.getTransposeWeight(),
                                          /*mayMergeRanges=*/attn && attn->hasOneUse())));
        }
        if (!cuda && gemm.getGpuScheduleAttr()) {
          gemm.emitOpError() << "has a gpu_schedule, but the target is not CUDA";
          return WalkResult::interrupt();
        }
      }
      if (isLoopKernelOp(op) && !loopScheduleAttrOf(op)) {
        auto type = cast<ShapedType>(op->getResult(0).getType());
        op->setAttr(XfDialect::kLoopScheduleAttrName,
                    loopScheduleAttr(ctx, defaultLoopSchedule(type.getShape().back())));
      }
      if (auto attn = dyn_cast<AttentionOp>(op)) {
        if (!attn.getScheduleAttr())
          attn.setScheduleAttr(attentionScheduleAttr(ctx, defaultAttentionSchedule(shape)));
        if (cuda && !attn.getGpuScheduleAttr())
          attn.setGpuScheduleAttr(gpuAttentionScheduleAttr(ctx, GpuAttentionSchedule()));
        if (!cuda && attn.getGpuScheduleAttr()) {
          attn.emitOpError() << "has a gpu_schedule, but the target is not CUDA";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
