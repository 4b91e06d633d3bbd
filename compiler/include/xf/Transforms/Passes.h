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

/// The fusion stage as one list: `xfc --emit=fused` prints its result.
void buildFusionPipeline(OpPassManager &pm);

/// How kernels get their schedules: the tuning database's where it has an
/// entry (when `tuning.db` is set), defaults for the target's vector unit
/// elsewhere.
struct KernelScheduleOptions {
  ApplyTuningDatabaseOptions tuning;
  AssignDefaultSchedulesOptions defaults;
};

/// Fusion, then a schedule on every kernel: `xfc --emit=kernels` and later.
void buildKernelPipeline(OpPassManager &pm, const KernelScheduleOptions &options);

} // namespace mlir::xf

#endif // XF_TRANSFORMS_PASSES_H
