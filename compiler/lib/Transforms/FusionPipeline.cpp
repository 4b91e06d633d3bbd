//===- FusionPipeline.cpp - the fusion stage as one list ------------------===//

#include "xf/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

void mlir::xf::buildFusionPipeline(OpPassManager &pm) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createDecomposeMultiHeadAttention());
  fn.addPass(createFuseQkvProjections());
  fn.addPass(createFuseGemmEpilogue());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
}

void mlir::xf::buildKernelPipeline(OpPassManager &pm, const KernelScheduleOptions &options) {
  buildFusionPipeline(pm);
  OpPassManager &fn = pm.nest<func::FuncOp>();
  if (!options.tuning.db.empty())
    fn.addPass(createApplyTuningDatabase(options.tuning));
  fn.addPass(createAssignDefaultSchedules(options.defaults));
}
