//===- MLIRGen.h - from the checked Graph to the xf dialect -----*- C++ -*-===//
//
// Emits one module with one `func.func @forward`: token sequences in, logits
// (`xf.output = "logits"`) or hidden states (`"hidden"`) out. Parameters come
// first, one `xf.parameter` per checkpoint tensor; every op carries the
// FileLineColLoc of the spec text it came from. Transposed weights fold into
// `transpose_weight(s)` / `tied`, and `A·W + b` becomes one `xf.linear`.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_MLIRGEN_H
#define XF_SPEC_MLIRGEN_H

#include "xf/Spec/Graph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace xf::spec {

/// The module for `graph`. It is not verified yet (see Frontend.h).
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const Graph &graph);

} // namespace xf::spec

#endif // XF_SPEC_MLIRGEN_H
