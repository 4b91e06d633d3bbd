//===- PackWeightsAtLoad.cpp - which GEMMs read their weight packed -------===//
//
// A GEMM whose weight is a constant of the model can read it packed once,
// by xf_prepare, in its register tiles' layout, instead of packing each K
// block on every call (docs/pipeline.md, "Host lowering"). Decided here,
// after the schedules (a tuned schedule may not pack), as the mark
// `xf.packed_weight` on the xf.gemm: the host lowering plans the packed
// buffers from it, and the kernel's description (#xf.gemm_kernel `packed`),
// its object key and the tune worker's request carry it from there. The
// dialect verifies each mark (XfDialect.cpp).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

namespace mlir::xf {
#define GEN_PASS_DEF_PACKWEIGHTSATLOAD
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

/// Whether `gemm` can read its weight packed at load: the conditions of the
/// dialect's verifier for `xf.packed_weight`.
bool packsAtLoad(GemmOp gemm) {
  GemmScheduleAttr schedule = gemm.getScheduleAttr();
  return schedule && schedule.getPackWeights() && !gemm.getGpuScheduleAttr() &&
         !isBlockStorage(weightStorageOf(gemm.getWeight())) && isModelConstant(gemm.getWeight());
}

struct PackWeightsAtLoadPass : xf::impl::PackWeightsAtLoadBase<PackWeightsAtLoadPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    UnitAttr mark = UnitAttr::get(&getContext());
    // Not @loss_and_gradients: a training step reads the weights it updates as stored.
    for (llvm::StringRef name : {"forward", "forward_packed"})
      if (auto func = module.lookupSymbol<func::FuncOp>(name))
        func.walk([&](GemmOp gemm) {
          if (packsAtLoad(gemm))
            gemm->setAttr(XfDialect::kPackedWeightAttrName, mark);
        });
  }
};

} // namespace
