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
/// pass's textual options, which stay at their defaults), handing what the rest of the build
/// needs besides the host module — the Halide kernels' specs and the
/// manifest — to `*program` (its `module` and `siteOps` stay empty: the
/// module is the one the pass ran on, and the ops the sites named are gone).
std::unique_ptr<Pass> createLowerToHostPass(const HostOptions &options, HostProgram *program);

} // namespace mlir::xf

#endif // XF_CONVERSION_PASSES_H
