//===- XfDialect.cpp - the xf dialect -------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfOps.h"

using namespace mlir;
using namespace mlir::xf;

#include "xf/IR/XfDialect.cpp.inc"

void XfDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "xf/IR/XfOps.cpp.inc"
      >();
  registerAttributes();
}

bool mlir::xf::isLoopKernelOp(Operation *op) {
  return isa<TokenEmbedOp, PositionalEmbedOp, SinusoidalEmbedOp, AddOp, ReluOp, GeluOp, SoftmaxOp,
             LayerNormOp, RmsNormOp, SiluOp, MulOp, ScaleOp, RopeOp>(op);
}

LoopScheduleAttr mlir::xf::loopScheduleAttrOf(Operation *op) {
  return op->getAttrOfType<LoopScheduleAttr>(XfDialect::kLoopScheduleAttrName);
}

LogicalResult XfDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (attr.getName() != kLoopScheduleAttrName)
    return success();
  if (!isa<LoopScheduleAttr>(attr.getValue()))
    return op->emitError() << "'" << kLoopScheduleAttrName
                           << "' must be a #xf.loop_schedule, not " << attr.getValue();
  if (!isLoopKernelOp(op))
    return op->emitError() << "'" << kLoopScheduleAttrName << "' is only for ops lowered to "
                           << "loop kernels (norms, softmax, embeddings, elementwise), not '"
                           << op->getName() << "'";
  return success();
}
