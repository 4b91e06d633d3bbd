//===- Frontend.cpp - spec file to verified xf module ---------------------===//

#include "xf/Spec/Frontend.h"
#include "xf/Spec/MLIRGen.h"

#include "xf/IR/XfDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/Path.h"

using namespace xf::spec;

void xf::spec::registerFrontendDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::xf::XfDialect, mlir::func::FuncDialect>();
}

/// Where an MLIR diagnostic points, as a spec Location.
static Location toLocation(mlir::Location loc, llvm::StringRef fileName) {
  Location l{std::make_shared<std::string>(fileName.str()), 1, 1};
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc)) {
    l.line = int(file.getLine());
    l.col = int(file.getColumn());
  }
  return l;
}

mlir::OwningOpRef<mlir::ModuleOp>
xf::spec::buildXfModule(mlir::MLIRContext &context, const ModuleAST &module,
                        llvm::StringRef fileName, const SemaOptions &options,
                        DiagnosticEngine &diags) {
  std::optional<Graph> graph =
      analyze(module, llvm::sys::path::stem(fileName), options, diags);
  if (!graph)
    return nullptr;
  context.loadDialect<mlir::xf::XfDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> result = mlirGen(context, *graph);
  bool verified;
  {
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
        diags.error(toLocation(d.getLocation(), fileName),
                    "internal compiler error, the generated xf IR does not "
                    "verify: " +
                        d.str());
      return mlir::success();
    });
    verified = result && mlir::succeeded(mlir::verify(*result));
  }
  if (!verified)
    return nullptr;
  return result;
}
