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
#include "xf/IR/XfEnums.h.inc"
#include "xf/IR/XfScheduleAttrs.h"

#define GET_OP_CLASSES
#include "xf/IR/XfOps.h.inc"

#endif // XF_IR_XFOPS_H
