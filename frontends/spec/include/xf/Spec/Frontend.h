//===- Frontend.h - spec file to verified xf module -------------*- C++ -*-===//
//
// The frontend as one call for drivers (xfc, the fuzzer): parse, check,
// elaborate, emit xf, verify. Each step reports through a DiagnosticEngine
// and returns null on failure; nothing here exits or asserts on bad input.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_FRONTEND_H
#define XF_SPEC_FRONTEND_H

#include "xf/Spec/AST.h"
#include "xf/Spec/Diagnostics.h"
#include "xf/Spec/Sema.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace xf::spec {

/// Spec files larger than this are rejected before lexing.
constexpr size_t kMaxSpecBytes = 16 << 20;

/// The dialects the frontend emits (xf, func).
void registerFrontendDialects(mlir::DialectRegistry &registry);

/// Sema, MLIRGen and the MLIR verifier over a parsed module. A verifier
/// failure is a compiler bug, but it is still reported as a located error.
mlir::OwningOpRef<mlir::ModuleOp> buildXfModule(mlir::MLIRContext &context,
                                                const ModuleAST &module,
                                                llvm::StringRef fileName,
                                                const SemaOptions &options,
                                                DiagnosticEngine &diags);

} // namespace xf::spec

#endif // XF_SPEC_FRONTEND_H
