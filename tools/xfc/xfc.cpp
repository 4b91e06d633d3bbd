//===- xfc.cpp - the xf compiler driver -----------------------------------===//
//
// xfc FILE --emit=STAGE [-o OUT] [-D NAME=VALUE]...
// Reads a spec, runs the frontend, then the pass pipeline that reaches the
// requested stage, and prints that stage. Later stages (fused, kernels,
// halide, llvm, asm, obj, exe) are further cases of `Emit` and of
// `buildPipeline`.
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/Frontend.h"
#include "xf/Spec/Parser.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;
using namespace xf::spec;

namespace {
enum class Emit { AST, Xf };

cl::OptionCategory xfcCategory("xfc options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<spec.xf>"),
                                   cl::init("-"), cl::cat(xfcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(xfcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Xf),
    cl::values(clEnumValN(Emit::AST, "ast", "the parsed syntax tree"),
               clEnumValN(Emit::Xf, "xf", "the xf dialect (default)")),
    cl::cat(xfcCategory));
cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Override a hyperparameter (repeatable): -D L=2 or -DL=2"),
            cl::value_desc("NAME=VALUE"), cl::cat(xfcCategory));
} // namespace

/// The passes from the xf dialect to `action`'s stage.
static void buildPipeline(Emit action, mlir::PassManager &pm) {
  switch (action) {
  case Emit::AST:
  case Emit::Xf:
    return; // the frontend's own output
  }
}

static mlir::LogicalResult emit(Emit action, const ModuleAST &ast,
                                llvm::StringRef fileName,
                                DiagnosticEngine &diags,
                                llvm::raw_ostream &os) {
  if (action == Emit::AST) {
    dump(ast, os);
    return mlir::success();
  }
  mlir::DialectRegistry registry;
  registerFrontendDialects(registry);
  mlir::MLIRContext context(registry);
  SemaOptions options;
  options.defines.assign(defines.begin(), defines.end());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildXfModule(context, ast, fileName, options, diags);
  if (!module)
    return mlir::failure();
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  buildPipeline(action, pm);
  if (mlir::failed(pm.run(*module)))
    return mlir::failure();
  module->print(os);
  return mlir::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv,
                              "xfc: compiles a transformer written as the "
                              "algorithm boxes of Phuong & Hutter\n");

  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &message);
  if (!input) {
    llvm::errs() << "xfc: error: " << message << "\n";
    return 1;
  }
  if (input->getBufferSize() > kMaxSpecBytes) {
    llvm::errs() << "xfc: error: '" << inputFilename
                 << "' is larger than a spec may be (16 MiB)\n";
    return 1;
  }
  llvm::StringRef fileName =
      inputFilename == "-" ? llvm::StringRef("<stdin>") : inputFilename;
  DiagnosticEngine diags(input->getBuffer(), fileName, llvm::errs());
  std::unique_ptr<ModuleAST> ast =
      parseSpec(input->getBuffer(), fileName, diags);
  if (!ast)
    return 1;

  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &message);
  if (!output) {
    llvm::errs() << "xfc: error: " << message << "\n";
    return 1;
  }
  if (mlir::failed(emit(emitAction, *ast, fileName, diags, output->os())))
    return 1;
  output->keep();
  return 0;
}
