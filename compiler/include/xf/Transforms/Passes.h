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

/// The fusion stage as one list (what `xfc --emit=fused` prints).
void buildFusionPipeline(OpPassManager &pm);

} // namespace mlir::xf

#endif // XF_TRANSFORMS_PASSES_H
