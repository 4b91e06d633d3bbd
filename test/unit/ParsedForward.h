//===- ParsedForward.h - an xf module written out by hand, for unit tests -*- C++ -*-===//

#ifndef XF_TEST_UNIT_PARSEDFORWARD_H
#define XF_TEST_UNIT_PARSEDFORWARD_H

#include "xf/IR/XfDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <iterator>
#include <memory>
#include <string>

namespace xftest {

/// Parses `text` (func and xf ops); `diagnostics` collects every message,
/// one per line, from parsing and from what the test runs on the module.
struct ParsedForward {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string diagnostics;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;

  explicit ParsedForward(llvm::StringRef text) {
    context.loadDialect<mlir::func::FuncDialect, mlir::xf::XfDialect>();
    handler =
        std::make_unique<mlir::ScopedDiagnosticHandler>(&context, [this](mlir::Diagnostic &d) {
          diagnostics += d.str() + "\n";
          return mlir::success();
        });
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  }
  mlir::func::FuncOp forward() { return module->lookupSymbol<mlir::func::FuncOp>("forward"); }
  /// The result of the i-th op of @forward's body.
  mlir::Value result(unsigned i) {
    return std::next(forward().getBody().front().begin(), i)->getResult(0);
  }
  mlir::Operation *op(unsigned i) { return &*std::next(forward().getBody().front().begin(), i); }
};

} // namespace xftest

#endif // XF_TEST_UNIT_PARSEDFORWARD_H
