//===- Passes.h - xf → host code --------------------------------*- C++ -*-===//

#ifndef XF_CONVERSION_PASSES_H
#define XF_CONVERSION_PASSES_H

#include "xf/Conversion/LowerToHost.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::xf {

#define GEN_PASS_DECL
#include "xf/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "xf/Conversion/Passes.h.inc"

/// xf-lower-to-host under `options` (used as given: not read back from the
/// pass's textual options, which stay at their defaults).
std::unique_ptr<Pass> createLowerToHostPass(const HostOptions &options);

} // namespace mlir::xf

#endif // XF_CONVERSION_PASSES_H
