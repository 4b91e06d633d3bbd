//===- FusionPipeline.cpp - the fusion stage as one list ------------------===//

#include "xf/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

void mlir::xf::buildFusionPipeline(OpPassManager &pm, bool assignSchedules) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createDecomposeMultiHeadAttention());
  fn.addPass(createFuseQkvProjections());
  fn.addPass(createFuseGemmEpilogue());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  if (assignSchedules)
    fn.addPass(createAssignDefaultSchedules());
}
