//===- SpecFuzzer.cpp - libFuzzer target for the spec frontend ------------===//
//
// Feeds arbitrary bytes through the whole frontend: lexer, parser, AST
// printer, Sema, MLIRGen and the MLIR verifier. A first line `#D NAME=VALUE
// ...` becomes -D overrides, so absurd hyperparameters are explored too.
// Any crash, sanitizer report, hang or IR that fails the verifier is a bug;
// diagnostics are expected.
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/Frontend.h"
#include "xf/Spec/Parser.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"

#include <cstdint>

using namespace xf::spec;

/// `#D L=2 d_e=8` on the first line: the overrides to apply.
static std::vector<std::string> definesOf(llvm::StringRef text) {
  std::vector<std::string> defines;
  llvm::StringRef first = text.take_until([](char c) { return c == '\n'; });
  if (!first.consume_front("#D "))
    return defines;
  llvm::SmallVector<llvm::StringRef> words;
  first.split(words, ' ', /*MaxSplit=*/8, /*KeepEmpty=*/false);
  for (llvm::StringRef word : words)
    defines.push_back(word.str());
  return defines;
}

static mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    registerFrontendDialects(registry);
    auto *c = new mlir::MLIRContext(registry);
    c->disableMultithreading();
    return c;
  }();
  return *ctx;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 16))
    return 0;
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  std::string messages;
  llvm::raw_string_ostream os(messages);
  DiagnosticEngine diags(text, "fuzz.xf", os);
  std::unique_ptr<ModuleAST> ast = parseSpec(text, "fuzz.xf", diags);
  if (!ast)
    return 0;
  std::string printed;
  llvm::raw_string_ostream printer(printed);
  dump(*ast, printer);
  SemaOptions options;
  options.defines = definesOf(text);
  // Smaller limits than xfc's keep each input fast; the code paths are the
  // same.
  options.maxNodes = 20000;
  options.maxSteps = 20000;
  options.maxLoopTrips = 512;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildXfModule(context(), *ast, "fuzz.xf", options, diags);
  if (module)
    module->print(printer);
  // Sema must reject everything the xf verifiers reject.
  // Only a diagnostic's own line counts: the source lines echoed under it may hold any text
  // (a fuzzed checkpoint name once read "...internal compiler error...").
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(messages).split(lines, '\n');
  if (llvm::any_of(lines, [](llvm::StringRef line) {
        return (line.starts_with("fuzz.xf:") || line.starts_with("<input>:")) &&
               line.contains(": error: internal compiler error");
      })) {
    llvm::errs() << messages;
    abort();
  }
  return 0;
}
