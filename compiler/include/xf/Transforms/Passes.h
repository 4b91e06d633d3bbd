//===- Passes.h - xf dialect passes -----------------------------*- C++ -*-===//

#ifndef XF_TRANSFORMS_PASSES_H
#define XF_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include "xf/IR/XfDialect.h"

namespace mlir::xf {

#define GEN_PASS_DECL
#include "xf/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "xf/Transforms/Passes.h.inc"

/// What the fusion stage may fold, by target.
struct FusionOptions {
  /// xf-fuse-rope-attention: only kernels with a rotation prologue (the CPU
  /// attention; see FusionPipeline.cpp for CUDA).
  bool ropeIntoAttention = true;
  /// xf-fuse-norm-into-gemm: only the CUDA build's fp32 GEMMs, whose
  /// Halide algorithm has the norm prologue (FusionPipeline.cpp).
  bool normIntoGemm = false;
};

/// The fusion stage as one list: `xfc --emit=fused` prints its result.
void buildFusionPipeline(OpPassManager &pm, const FusionOptions &options = {});

/// How weights are stored (`storage`: xfc's weight options, and the GEMMs'
/// input precision), then how kernels get their schedules: the tuning
/// database's where it has an entry (when `tuning.db` is set), defaults for
/// the target's vector unit elsewhere; then which GEMMs read their weight
/// packed at load (`packWeightsAtLoad`: xfc's --pack-weights=load on a CPU).
struct KernelScheduleOptions {
  FusionOptions fusion;
  AssignWeightStorageOptions storage;
  ApplyTuningDatabaseOptions tuning;
  AssignDefaultSchedulesOptions defaults;
  bool packWeightsAtLoad = true;
};

/// Fusion, each weight's storage, a schedule on every kernel, the weights
/// packed at load: `xfc --emit=kernels` and later.
void buildKernelPipeline(OpPassManager &pm, const KernelScheduleOptions &options);

} // namespace mlir::xf

#endif // XF_TRANSFORMS_PASSES_H
