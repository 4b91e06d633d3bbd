//===- FunctionDeclarations.h - external functions the host code calls -*- C++ -*-===//
//
// The host module calls functions it does not define (libxfrt's, the Halide pipelines and
// runtime): each is declared once, private, at the end of the module, the first time a call
// site needs it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_FUNCTIONDECLARATIONS_H
#define XF_CODEGEN_FUNCTIONDECLARATIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// `name` in `module`, declared private with `type` at the module's end if it is not there.
inline func::FuncOp declareFunction(ModuleOp module, Location loc, llvm::StringRef name,
                                    FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(top, loc, name, type);
  fn.setPrivate();
  return fn;
}

} // namespace mlir::xf

#endif // XF_CODEGEN_FUNCTIONDECLARATIONS_H
