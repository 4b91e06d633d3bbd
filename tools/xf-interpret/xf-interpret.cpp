//===- xf-interpret.cpp - a spec evaluated by the xf interpreter ----------===//
//
// xf-interpret SPEC.xf [-D NAME=VALUE]... --weights W.safetensors
//              --tokens 1,2,3 [--source-tokens 4,5] [--segments 1,2
//              [--source-segments 1,1]] -o OUT.npy
// Runs the frontend's module (`xfc --emit=xf`) through the double-precision
// interpreter (xf/Interpreter) on a checkpoint and writes the result as a
// float64 .npy [ℓ, d_out]. Test tool: test/interpreter checks the
// interpreter against test/reference's oracle with it. With --segments the
// tokens are a packed batch of sequences of those lengths, evaluated as
// @forward_packed (xf-pack-sequences): the result is [Σℓ_i, d_out]. With
// --fusion=cpu|cuda the module is first fused as xfc fuses it for that target
// (`xfc --emit=fused`), so the kernel-level ops `xfc --check` interprets (fused
// QKV, GEMM epilogues, RoPE in attention, norms as GEMM prologues) are checked
// against the oracle too.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Interpreter/Interpreter.h"
#include "xf/Spec/Frontend.h"
#include "xf/Spec/Parser.h"
#include "xf/Transforms/Passes.h"
#include "xfrt/Npy.h"
#include "xfrt/Weights.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>

namespace cl = llvm::cl;
using namespace xf::spec;

namespace {
cl::opt<std::string> specFile(cl::Positional, cl::Required, cl::desc("<spec.xf>"));
cl::list<std::string> defines("D", cl::Prefix, cl::desc("Override a hyperparameter"));
cl::opt<std::string> weightsFile("weights", cl::Required, cl::desc("Checkpoint (.safetensors)"));
cl::opt<std::string> tokensText("tokens", cl::Required, cl::desc("Token ids, comma-separated"));
cl::opt<std::string> sourceText("source-tokens", cl::desc("Source token ids (encoder-decoder)"));
cl::opt<std::string> segmentsText(
    "segments", cl::desc("Sequence lengths of a packed batch: --tokens holds their ids back to "
                         "back, evaluated as @forward_packed"));
cl::opt<std::string> sourceSegmentsText(
    "source-segments",
    cl::desc("With --segments, an encoder-decoder's source lengths (--source-tokens packed)"));
cl::opt<std::string> outputFile("o", cl::Required, cl::desc("Output .npy (float64)"));

enum class Fusion { None, Cpu, Cuda };
cl::opt<Fusion> fusion(
    "fusion", cl::init(Fusion::None),
    cl::desc("Interpret the module after xfc's fusion passes (--emit=fused) for a target"),
    cl::values(clEnumValN(Fusion::None, "none", "the frontend's module, unfused (default)"),
               clEnumValN(Fusion::Cpu, "cpu", "as xfc fuses for a CPU (RoPE into attention)"),
               clEnumValN(Fusion::Cuda, "cuda",
                          "as xfc fuses for --target cuda (RoPE into attention, norms into "
                          "the GEMMs' prologues)")));

int fail(const llvm::Twine &message) {
  llvm::errs() << "xf-interpret: error: " << message << "\n";
  return 1;
}

bool parseTokens(llvm::StringRef text, std::vector<int32_t> &tokens) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  for (llvm::StringRef part : parts) {
    int32_t id;
    if (part.trim().getAsInteger(10, id))
      return false;
    tokens.push_back(id);
  }
  return !tokens.empty();
}

bool writeNpy64(const std::string &path, const mlir::xf::interp::Tensor &t) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (";
  for (int64_t d : t.shape)
    header += std::to_string(d) + ", ";
  header += "), }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  uint16_t length = uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char *>(&length), 2);
  out << header;
  out.write(reinterpret_cast<const char *>(t.data.data()), std::streamsize(t.data.size() * 8));
  return bool(out);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "xf-interpret: a spec on the xf interpreter\n");
  auto buffer = llvm::MemoryBuffer::getFile(specFile);
  if (!buffer)
    return fail(specFile + ": " + buffer.getError().message());
  DiagnosticEngine diags((*buffer)->getBuffer(), specFile, llvm::errs());
  std::unique_ptr<ModuleAST> ast = parseSpec((*buffer)->getBuffer(), specFile, diags);
  if (!ast)
    return 1;
  mlir::DialectRegistry registry;
  registerFrontendDialects(registry);
  mlir::MLIRContext context(registry);
  SemaOptions options;
  options.defines.assign(defines.begin(), defines.end());
  mlir::OwningOpRef<mlir::ModuleOp> module = buildXfModule(context, *ast, specFile, options, diags);
  if (!module)
    return 1;
  auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
  if (!segmentsText.empty()) {
    mlir::PassManager pm(&context);
    pm.addPass(mlir::xf::createPackSequences());
    if (mlir::failed(pm.run(*module)))
      return 1;
    forward = module->lookupSymbol<mlir::func::FuncOp>("forward_packed");
    if (!forward)
      return fail("--segments: the model has no packed form (xf-pack-sequences)");
  }

  if (fusion != Fusion::None) { // the kernel-level ops xfc builds, with their own semantics
    mlir::xf::FusionOptions options;
    options.normIntoGemm = fusion == Fusion::Cuda;
    mlir::PassManager pm(&context);
    mlir::xf::buildFusionPipeline(pm, options);
    if (mlir::failed(pm.run(*module)))
      return 1;
  }

  // The parameters the module reads, as a manifest for the runtime's loader.
  xfrt::Manifest manifest;
  forward.walk([&](mlir::xf::ParameterOp p) {
    for (const xfrt::ParameterSpec &known : manifest.parameters)
      if (known.name == p.getName())
        return;
    xfrt::ParameterSpec spec;
    spec.name = p.getName().str();
    auto shape = llvm::cast<mlir::RankedTensorType>(p.getType()).getShape();
    spec.shape.assign(shape.begin(), shape.end());
    for (int64_t d : spec.shape)
      spec.numel *= d;
    manifest.parameters.push_back(spec);
  });
  auto weights = xfrt::loadWeights(weightsFile, manifest);
  if (!weights)
    return fail(weights.message());

  mlir::xf::interp::Inputs inputs;
  for (size_t i = 0; i < manifest.parameters.size(); ++i)
    inputs.parameters[manifest.parameters[i].name] = {weights->params[i],
                                                      manifest.parameters[i].shape};
  std::vector<int32_t> tokens, source;
  if (!parseTokens(tokensText, tokens))
    return fail("--tokens: expected comma-separated token ids");
  if (module->lookupSymbol<mlir::func::FuncOp>("forward").getNumArguments() == 2) {
    if (!parseTokens(sourceText, source))
      return fail("--source-tokens: the model takes a source sequence");
    inputs.sequences.push_back(source);
  }
  inputs.sequences.push_back(tokens);
  if (!segmentsText.empty()) { // @forward_packed's (tokens..., segments...)
    std::vector<int32_t> lengths, sourceLengths;
    if (inputs.sequences.size() == 2) {
      if (!parseTokens(sourceSegmentsText, sourceLengths))
        return fail("--source-segments: the packed sources' lengths, comma-separated");
      inputs.sequences.push_back(sourceLengths);
    }
    if (!parseTokens(segmentsText, lengths))
      return fail("--segments: expected comma-separated sequence lengths");
    inputs.sequences.push_back(lengths);
  }
  auto evaluation = mlir::xf::interp::evaluate(forward, inputs);
  if (!evaluation)
    return fail(llvm::toString(evaluation.takeError()));
  if (!writeNpy64(outputFile, evaluation->result))
    return fail(outputFile + ": cannot write");
  return 0;
}
