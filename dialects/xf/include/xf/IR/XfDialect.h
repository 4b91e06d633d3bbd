//===- XfDialect.h - the xf dialect -----------------------------*- C++ -*-===//

#ifndef XF_IR_XFDIALECT_H
#define XF_IR_XFDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "xf/IR/XfDialect.h.inc"

#endif // XF_IR_XFDIALECT_H
