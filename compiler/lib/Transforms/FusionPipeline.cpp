//===- FusionPipeline.cpp - the fusion stage as one list ------------------===//

#include "xf/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

void mlir::xf::buildFusionPipeline(OpPassManager &pm, const FusionOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createDecomposeMultiHeadAttention());
  fn.addPass(createFuseQkvProjections());
  // CUDA too (xfc: with fp32 GEMMs; the tensor-core attention has no rotation):
  // with a KV cache the append rotates the new keys (one launch for K and V, as
  // without rope), and each attention block rotates its query rows once into
  // shared memory, so the two rope launches a layer go (docs/gpu.md).
  if (options.ropeIntoAttention)
    fn.addPass(createFuseRopeIntoAttention());
  fn.addPass(createFuseGemmEpilogue());
  // CUDA: a norm launched on its own before each QKV / MLP-up GEMM is two of
  // GPT-2's 8 launches a layer at decode; the GEMM's prologue recomputes its
  // rows' statistics per block instead (docs/gpu.md, "Kernel launches per
  // step"). The CPU's norm kernel is cheaper than recomputing per tile.
  if (options.normIntoGemm)
    fn.addPass(createFuseNormIntoGemm());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
}

void mlir::xf::buildKernelPipeline(OpPassManager &pm, const KernelScheduleOptions &options) {
  buildFusionPipeline(pm, options.fusion);
  // After fusion: the storage rules read the xf.gemm ops it makes. Before the
  // schedules: a tuning key and a default schedule depend on the storage.
  pm.addPass(createAssignWeightStorage(options.storage));
  OpPassManager &fn = pm.nest<func::FuncOp>();
  if (!options.tuning.db.empty())
    fn.addPass(createApplyTuningDatabase(options.tuning));
  fn.addPass(createAssignDefaultSchedules(options.defaults));
  // After the schedules: whether a GEMM packs its weight is its schedule's choice.
  if (options.packWeightsAtLoad)
    pm.addPass(createPackWeightsAtLoad());
}
