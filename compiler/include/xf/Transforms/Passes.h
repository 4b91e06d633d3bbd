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

/// The fusion stage as one list: `xfc --emit=fused` prints its result
/// without schedules, `--emit=kernels` with them.
void buildFusionPipeline(OpPassManager &pm, bool assignSchedules = true);

} // namespace mlir::xf

#endif // XF_TRANSFORMS_PASSES_H
