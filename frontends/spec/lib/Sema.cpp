//===- Sema.cpp - from a ModuleAST to a checked, unrolled Graph -----------===//
//
// Order of work: hyperparameters (with -D), parameter declarations, the
// algorithm (which instantiates the parameters it uses), then warnings for
// parameters never used.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

using namespace xf::spec;

std::optional<Graph> Elaborator::run(llvm::StringRef fileStem) {
  graph.modelName =
      module.modelName.empty() ? fileStem.str() : module.modelName;
  // Each phase reports every independent error it finds and goes on with
  // the failed names poisoned; any error fails the whole.
  unsigned errorsBefore = diags.getNumErrors();
  std::vector<LoopRange> loops;
  if (!evaluateHyperparameters() ||
      !declareParameters(module.parameters, loops) || !module.algorithm)
    return std::nullopt;
  graph.loc = module.algorithm->loc;
  if (!elaborateAlgorithm(*module.algorithm) ||
      diags.getNumErrors() > errorsBefore)
    return std::nullopt;
  warnUnusedParameters();
  return std::move(graph);
}

const Scalar *Elaborator::findHyperparameter(llvm::StringRef name) const {
  auto it = hyperparameters.find(name);
  return it == hyperparameters.end() ? nullptr : &it->second;
}

const std::pair<std::string, int64_t> *
Elaborator::findLoopVar(llvm::StringRef name) const {
  for (auto it = loopVars.rbegin(); it != loopVars.rend(); ++it)
    if (it->first == name)
      return &*it;
  return nullptr;
}

bool Elaborator::isGlobalName(llvm::StringRef name) const {
  return hyperparameters.count(name) || families.count(name) ||
         inputs.count(name);
}

std::string Elaborator::suggest(llvm::StringRef name) const {
  std::string best;
  unsigned bestDistance = 3;
  auto consider = [&](llvm::StringRef candidate) {
    unsigned d = name.edit_distance(candidate, true, bestDistance);
    if (d < bestDistance)
      bestDistance = d, best = candidate.str();
  };
  for (const auto &e : hyperparameters)
    consider(e.getKey());
  for (const auto &e : families)
    consider(e.getKey());
  for (const auto &e : inputs)
    consider(e.getKey());
  for (const auto &e : variables)
    consider(e.getKey());
  for (const auto &v : loopVars)
    consider(v.first);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::optional<Graph> xf::spec::analyze(const ModuleAST &module,
                                       llvm::StringRef fileStem,
                                       const SemaOptions &options,
                                       DiagnosticEngine &diags) {
  return Elaborator(module, options, diags).run(fileStem);
}
