//===- xfc.cpp - the xf compiler driver -----------------------------------===//
//
// xfc FILE --emit=STAGE [-o OUT] [-D NAME=VALUE]...
// Reads a spec, runs the frontend, then the pass pipeline that reaches the
// requested stage, and prints that stage. Later stages (fused, kernels,
// halide, llvm, asm, obj, exe) are further cases of `Emit` and of
// `buildPipeline`.
//
//===----------------------------------------------------------------------===//

#include "xf/Pipelines/Pipelines.h"
#include "xf/Spec/Frontend.h"
#include "xf/Spec/Parser.h"
#include "xf/Target/EmitObject.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Transforms/Passes.h"
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
enum class Emit { AST, Xf, Fused, Kernels, Host, Halide, LLVM, Asm, Obj, Exe };

cl::OptionCategory xfcCategory("xfc options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<spec.xf>"),
                                   cl::init("-"), cl::cat(xfcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(xfcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Xf),
    cl::values(
        clEnumValN(Emit::AST, "ast", "the parsed syntax tree"),
        clEnumValN(Emit::Xf, "xf", "the xf dialect (default without -o)"),
        clEnumValN(Emit::Fused, "fused", "xf after MHA decomposition and fusion"),
        clEnumValN(Emit::Kernels, "kernels", "fused kernels with their schedules"),
        clEnumValN(Emit::Host, "host", "the host function, buffers and loop kernels"),
        clEnumValN(Emit::Halide, "halide", "each Halide pipeline's loop nest"),
        clEnumValN(Emit::LLVM, "llvm", "optimized LLVM IR of the host code"),
        clEnumValN(Emit::Asm, "asm", "assembly of the host code"),
        clEnumValN(Emit::Obj, "obj", "object file of the host code (needs -o)"),
        clEnumValN(Emit::Exe, "exe", "a linked executable (default with -o)")),
    cl::cat(xfcCategory));
cl::opt<unsigned> optLevel("O", cl::Prefix, cl::init(3),
                           cl::desc("Optimization level of the host code, 0-3 (default 3)"),
                           cl::cat(xfcCategory));
cl::opt<std::string> target("target", cl::init("host"),
                            cl::desc("Halide target for the kernels (default: host)"),
                            cl::value_desc("halide-target"), cl::cat(xfcCategory));
enum class WeightType { F32, BF16 };
cl::opt<WeightType> weightType(
    "weight-type", cl::init(WeightType::F32),
    cl::desc("How GEMM weights and embedding tables are kept in memory"),
    cl::values(clEnumValN(WeightType::F32, "f32", "float32, as in the checkpoint (default)"),
               clEnumValN(WeightType::BF16, "bf16",
                          "bfloat16: half the memory traffic; products still in float32")),
    cl::cat(xfcCategory));
cl::opt<bool> bf16GemmInputs(
    "bf16-gemm-inputs", cl::init(false),
    cl::desc("With --weight-type=bf16: also round multi-row GEMM inputs to bfloat16 (AVX-512 "
             "BF16 dot products; float32 sums). Faster prefill, bfloat16-level accuracy"),
    cl::cat(xfcCategory));
cl::opt<bool> keepTemps("keep-temps", cl::init(false),
                        cl::desc("Keep the intermediate object files"),
                        cl::cat(xfcCategory));
cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Override a hyperparameter (repeatable): -D L=2 or -DL=2"),
            cl::value_desc("NAME=VALUE"), cl::cat(xfcCategory));
} // namespace

/// The passes from the xf dialect to `action`'s stage.
static mlir::LogicalResult buildPipeline(Emit action, mlir::PassManager &pm) {
  switch (action) {
  case Emit::AST:
  case Emit::Xf:
    return mlir::success(); // the frontend's own output
  case Emit::Fused:
    mlir::xf::buildFusionPipeline(pm);
    return mlir::success();
  default:
    break;
  }
  llvm::Expected<mlir::xf::VectorShape> shape = mlir::xf::vectorShapeOf(target);
  if (!shape) {
    llvm::errs() << "xfc: error: " << llvm::toString(shape.takeError()) << "\n";
    return mlir::failure();
  }
  mlir::xf::KernelScheduleOptions options;
  options.defaults.vectorWidth = shape->floatsPerVector;
  options.defaults.vectorRegisters = shape->registers;
  mlir::xf::buildKernelPipeline(pm, options);
  return mlir::success();
}

static mlir::LogicalResult report(llvm::Error error) {
  if (!error)
    return mlir::success();
  llvm::errs() << "xfc: error: " << llvm::toString(std::move(error)) << "\n";
  return mlir::failure();
}

/// The stages after fusion: host code, Halide kernels, LLVM, objects.
static mlir::LogicalResult emitBackend(Emit action, mlir::ModuleOp fused,
                                       llvm::raw_ostream &os) {
  mlir::xf::HostOptions hostOptions;
  hostOptions.bf16Weights = weightType == WeightType::BF16;
  hostOptions.bf16Activations = bf16GemmInputs;
  if (bf16GemmInputs && !hostOptions.bf16Weights) {
    llvm::errs() << "xfc: error: --bf16-gemm-inputs needs --weight-type=bf16\n";
    return mlir::failure();
  }
  mlir::FailureOr<mlir::xf::HostProgram> program = mlir::xf::lowerToHost(fused, hostOptions);
  if (mlir::failed(program))
    return mlir::failure();
  mlir::xf::CodegenOptions options;
  options.target = target;
  options.optLevel = std::min(optLevel.getValue(), 3u);
  options.keepIntermediates = keepTemps;
  switch (action) {
  case Emit::Host:
    program->module->print(os);
    return mlir::success();
  case Emit::Halide: {
    auto text = mlir::xf::describeKernels(*program, options);
    if (!text)
      return report(text.takeError());
    os << *text;
    return mlir::success();
  }
  case Emit::Exe:
    return report(mlir::xf::buildExecutable(*program, options, outputFilename));
  default:
    break;
  }
  mlir::OwningOpRef<mlir::ModuleOp> llvmModule = mlir::xf::lowerHostToLLVM(*program);
  if (!llvmModule)
    return mlir::failure();
  if (action == Emit::Obj)
    return report(mlir::xf::emitObjectFile(*llvmModule, options.optLevel, outputFilename));
  auto text = action == Emit::LLVM ? mlir::xf::emitLLVMIR(*llvmModule, options.optLevel)
                                   : mlir::xf::emitAssembly(*llvmModule, options.optLevel);
  if (!text)
    return report(text.takeError());
  os << *text;
  return mlir::success();
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
  if (mlir::failed(buildPipeline(action, pm)) || mlir::failed(pm.run(*module)))
    return mlir::failure();
  if (action == Emit::Xf || action == Emit::Fused || action == Emit::Kernels) {
    module->print(os);
    return mlir::success();
  }
  return emitBackend(action, *module, os);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  // Pass names for --mlir-print-ir-after=PASS and friends, as in xf-opt
  // (registered before the pass-manager options that parse them).
  mlir::xf::registerXfPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerPassManagerCLOptions();
  // The short spellings of DESIGN.md: --print-ir-after-all, --print-ir-after=PASS, ...
  auto &registered = cl::getRegisteredOptions();
  std::vector<std::unique_ptr<cl::alias>> aliases;
  std::vector<std::string> aliasHelp;
  aliasHelp.reserve(4);
  for (const char *name : {"print-ir-after-all", "print-ir-before-all", "print-ir-after",
                           "print-ir-before"}) {
    auto it = registered.find(std::string("mlir-") + name);
    if (it == registered.end())
      continue;
    aliasHelp.push_back("Alias for --mlir-" + std::string(name));
    aliases.push_back(std::make_unique<cl::alias>(llvm::StringRef(name), cl::aliasopt(*it->second),
                                                  cl::desc(aliasHelp.back())));
  }
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

  // `xfc model.xf -o model` builds an executable; without -o, print xf.
  bool binaryOutput = emitAction == Emit::Exe || emitAction == Emit::Obj;
  if (emitAction.getNumOccurrences() == 0 && outputFilename != "-")
    emitAction = Emit::Exe, binaryOutput = true;
  if (binaryOutput && outputFilename == "-") {
    llvm::errs() << "xfc: error: --emit=exe and --emit=obj need -o FILE\n";
    return 1;
  }
  if (binaryOutput) {
    if (mlir::failed(emit(emitAction, *ast, fileName, diags, llvm::nulls())))
      return 1;
    return 0;
  }
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
