//===- XfOps.h - xf operations ----------------------------------*- C++ -*-===//

#ifndef XF_IR_XFOPS_H
#define XF_IR_XFOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfScheduleAttrs.h"

#define GET_OP_CLASSES
#include "xf/IR/XfOps.h.inc"

namespace mlir::xf {
/// Whether the host lowering turns `op` into a loop kernel (scf loops over
/// rows) rather than a Halide kernel: the ops that take #xf.loop_schedule.
bool isLoopKernelOp(Operation *op);
/// The op's #xf.loop_schedule, or null.
LoopScheduleAttr loopScheduleAttrOf(Operation *op);
/// How `tensor` is stored: its defining op's `xf.weight_storage`
/// (xf-assign-weight-storage), f32 where it has none.
WeightStorage weightStorageOf(Value tensor);
/// Ops whose result is a constant of the model when all their operands are
/// (parameters and what is sliced, joined, transposed or gathered from them).
bool isConstantOp(Operation *op);
/// Whether `tensor` is a constant of the model: an xf.parameter, or made by
/// isConstantOp ops from parameters alone (the host lowering's derived weights).
bool isModelConstant(Value tensor);
/// Whether `op` carries `xf.bf16_inputs` / `xf.packed_weight` (XfDialect.td).
bool hasBf16Inputs(Operation *op);
bool hasPackedWeight(Operation *op);
/// Whether `storage` is one of ggml's block types (q8_0, q4_0, q4_1).
inline bool isBlockStorage(WeightStorage storage) {
  return storage != WeightStorage::f32 && storage != WeightStorage::bf16;
}
} // namespace mlir::xf

#endif // XF_IR_XFOPS_H
