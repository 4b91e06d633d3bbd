//===- FusionPipeline.cpp - the fusion stage as one list ------------------===//

#include "xf/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

void mlir::xf::buildFusionPipeline(OpPassManager &pm, const FusionOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createDecomposeMultiHeadAttention());
  fn.addPass(createFuseQkvProjections());
  // The CUDA attention (AttentionKernelCuda.cpp) has no rotation prologue:
  // it stages K per thread block, so each of the H / H_kv query heads' blocks
  // that share a K/V head would recompute the f64 sine and cosine that keep
  // positions in the thousands exact (slow double-precision transcendentals
  // on the GPU), where the separate device rope kernel computes them once per
  // row. xfc leaves the xf.rope ops as they are for --target cuda.
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
  OpPassManager &fn = pm.nest<func::FuncOp>();
  if (!options.tuning.db.empty())
    fn.addPass(createApplyTuningDatabase(options.tuning));
  fn.addPass(createAssignDefaultSchedules(options.defaults));
}
