//===- Sema.h - semantic analysis of a spec ---------------------*- C++ -*-===//
//
// Checks a parsed spec and elaborates it into a Graph: evaluates the
// hyperparameters (with `-D` overrides), binds parameters to checkpoint
// tensors, unrolls `for` loops and gives every value a shape. Every problem
// is a located diagnostic; limits keep absurd inputs from running away.
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_SEMA_H
#define XF_SPEC_SEMA_H

#include "xf/Spec/AST.h"
#include "xf/Spec/Diagnostics.h"
#include "xf/Spec/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace xf::spec {

struct SemaOptions {
  /// `NAME=VALUE` overrides of hyperparameters, as given to `-D`.
  std::vector<std::string> defines;
  /// Most iterations one `for` loop may unroll to.
  int64_t maxLoopTrips = 4096;
  /// Most operations the unrolled algorithm may have.
  size_t maxNodes = 1 << 20;
  /// Most statements unrolling may execute (nested loops multiply).
  int64_t maxSteps = 1 << 22;
  /// Most elements a single tensor may hold (2^31).
  int64_t maxTensorElements = int64_t(1) << 31;
};

/// The elaborated model, or nullopt after reporting at least one error.
std::optional<Graph> analyze(const ModuleAST &module, llvm::StringRef fileStem,
                             const SemaOptions &options,
                             DiagnosticEngine &diags);

} // namespace xf::spec

#endif // XF_SPEC_SEMA_H
