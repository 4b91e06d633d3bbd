//===- Check.h - xfc --check: a build against the xf interpreter -*- C++ -*-===//
//
// Builds the model with a hook after every kernel, runs it on random weights
// and tokens, and compares it with the double-precision interpreter of the
// xf dialect (xf/Interpreter). On a mismatch it bisects: the build runs again
// with each kernel's output compared with the interpreter's value of that op
// and then replaced by it, so every kernel runs on the interpreter's inputs,
// and the first kernel that differs is named. docs/pipeline.md, "Checking a
// build", has the method and the tolerances.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CHECK_CHECK_H
#define XF_CHECK_CHECK_H

#include "xf/Conversion/LowerToHost.h"
#include "xf/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::xf::check {

struct CheckOptions {
  /// Sequence lengths; empty: 1, 37 and 128, capped at the model's positions.
  std::vector<int64_t> lengths;
  uint64_t seed = 1;
  /// Test only (--check-fault): a fault built into the checked executable.
  std::string fault;
  mlir::xf::CodegenOptions codegen;
  /// Print every kernel's error, also when the model agrees.
  bool verbose = false;
};

/// "file:line:col" of the first file location in `loc`.
std::string sourceLine(mlir::Location loc);

/// `xf` is the frontend's module, `kernels` the same after the kernel
/// pipeline (fusion, weight storage and schedules): weights it keeps in
/// bfloat16 or ggml blocks (--weight-type=bf16, --quantized-like) get random
/// values so stored, which the interpreter reads widened exactly. Reports on `out` (one line per check) and
/// on stderr (errors); fails when the build differs from the semantics.
mlir::LogicalResult checkModel(mlir::ModuleOp xf, mlir::ModuleOp kernels,
                               const CheckOptions &options, llvm::raw_ostream &out);

} // namespace mlir::xf::check

#endif // XF_CHECK_CHECK_H
