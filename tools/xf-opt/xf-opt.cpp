//===- xf-opt.cpp - mlir-opt with the xf dialect and passes ---------------===//
//
// Runs any pass pipeline on any .mlir file that uses the xf dialect together
// with the upstream dialects xf lowers to.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "xf/IR/XfDialect.h"
#ifdef XF_HAVE_TRANSFORMS
#include "xf/Conversion/Passes.h"
#include "xf/Transforms/Passes.h"
#endif

int main(int argc, char **argv) {
  mlir::registerAllPasses();
#ifdef XF_HAVE_TRANSFORMS
  mlir::xf::registerXfPasses();
  mlir::xf::registerXfConversionPasses();
#endif
  mlir::DialectRegistry registry;
  registry.insert<mlir::xf::XfDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "xf optimizer driver\n", registry));
}
