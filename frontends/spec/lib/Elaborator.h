//===- Elaborator.h - Sema's state while it walks a spec --------*- C++ -*-===//
//
// One Elaborator checks one module. It is split by concept over
// Scalars.cpp (hyperparameters, -D, integer shape arithmetic),
// Parameters.cpp (declarations and checkpoint bindings), Algorithm.cpp
// (statements and expressions), Builtins.cpp (the paper's primitives) and
// Nodes.cpp (typed graph construction and shape diagnostics).
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_LIB_ELABORATOR_H
#define XF_SPEC_LIB_ELABORATOR_H

#include "xf/Spec/Sema.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <set>

namespace xf::spec {

/// The enclosing `for` loops of a parameter declaration.
struct LoopRange {
  std::string var;
  int64_t lo = 1, hi = 0;
  Location loc;
};

/// A parameter declaration with its loops: one tensor per index tuple.
struct ParameterFamily {
  const ParameterDecl *decl = nullptr;
  std::vector<LoopRange> loops;
  std::map<std::vector<int64_t>, int> instances; // index tuple → node
  std::set<std::vector<int64_t>> inProgress;     // to catch self-reference
  bool used = false;
};

/// What an expression evaluates to. A RuntimeNumberValue is a graph node of
/// rank 0: `length(x)` and arithmetic on it, known only when the model runs.
struct Value {
  enum Kind {
    ScalarValue,
    TensorValue,
    FamilyValue,
    RuntimeNumberValue
  } kind = ScalarValue;
  Scalar scalar;
  int node = -1;
  ParameterFamily *family = nullptr;
  std::vector<int64_t> indices; // of a family, given so far

  static Value ofInt(int64_t i) { return ofScalar(Scalar{false, i, 0}); }
  static Value ofScalar(Scalar s) {
    Value v;
    v.scalar = s;
    return v;
  }
  static Value ofTensor(int node) {
    Value v;
    v.kind = TensorValue;
    v.node = node;
    return v;
  }
  bool isNumber() const {
    return kind == ScalarValue || kind == RuntimeNumberValue;
  }
};
using MaybeValue = std::optional<Value>;

class Elaborator {
public:
  Elaborator(const ModuleAST &module, const SemaOptions &options,
             DiagnosticEngine &diags)
      : module(module), options(options), diags(diags) {}

  std::optional<Graph> run(llvm::StringRef fileStem);

  // Scalars.cpp: hyperparameters and integer arithmetic.
  bool evaluateHyperparameters();
  MaybeValue evalScalarBinary(const BinaryExprAST &e, Scalar a, Scalar b);
  MaybeValue evalNumber(const NumberExprAST &e);
  std::optional<int64_t> evalInt(const ExprAST &e, llvm::StringRef what);
  std::optional<double> evalFloat(const ExprAST &e, llvm::StringRef what);
  std::optional<LoopRange> evalRange(const RangeAST &range, llvm::StringRef var,
                                     const Location &loc);
  /// Whether `v` is a run-time number where `what` must be known when the
  /// model is compiled (reported).
  bool compileTimeOnly(const Value &v, const Location &loc,
                       llvm::StringRef what);

  // RuntimeNumbers.cpp: length(x) and arithmetic on it.
  MaybeValue evalLength(const CallExprAST &call);
  MaybeValue evalRuntimeArithmetic(const BinaryExprAST &e, const Value &a,
                                   const Value &b);
  /// The graph node of a number: a run-time number's own, or a Constant.
  std::optional<int> runtimeNumberNode(const Value &v, const Location &loc);
  /// The value of graph node `id`: a tensor, or a run-time number.
  Value valueOfNode(int id) const;

  // Parameters.cpp: declarations, instances and checkpoint names.
  bool declareParameters(const std::vector<ParameterItem> &items,
                         std::vector<LoopRange> &loops);
  bool declareParameter(const ParameterDecl &decl,
                        const std::vector<LoopRange> &loops);
  MaybeValue instantiate(ParameterFamily &family,
                         llvm::ArrayRef<int64_t> indices,
                         const Location &useLoc);
  std::optional<int> bindParameter(ParameterFamily &family,
                                   const TensorType &declared,
                                   const std::string &label);
  std::optional<int> bindCheckpoint(const StringExprAST &name, bool transposed,
                                    const TensorType &declared,
                                    const std::string &label,
                                    const Location &declLoc);
  std::optional<std::string> expandTemplate(const StringExprAST &name);
  void warnUnusedParameters();

  // Algorithm.cpp: statements and expressions.
  bool elaborateAlgorithm(const AlgorithmAST &algorithm);
  bool elaborateBody(llvm::ArrayRef<StmtPtr> body, bool &returned);
  bool elaborateFor(const ForStmtAST &loop, bool &returned);
  bool assign(const AssignStmtAST &stmt);
  MaybeValue eval(const ExprAST &e);
  MaybeValue evalName(const NameExprAST &e);
  MaybeValue evalBinary(const BinaryExprAST &e);
  MaybeValue evalIndex(const IndexExprAST &e);
  MaybeValue indexTensor(const IndexExprAST &e, int node,
                         llvm::ArrayRef<IndexItem> items);
  MaybeValue finishFamily(Value v, const Location &loc);
  std::optional<int> evalTensor(const ExprAST &e, llvm::StringRef what);
  std::optional<int> requireTensor(const Value &v, const Location &loc,
                                   llvm::StringRef what);

  // Builtins.cpp: the paper's primitives.
  MaybeValue evalCall(const CallExprAST &call);

  // Nodes.cpp: typed nodes and shape diagnostics.
  std::optional<int> addNode(Node node);
  std::optional<int> makeTranspose(int a, const Location &loc);
  std::optional<int> makeAdd(int a, int b, const Location &loc);
  std::optional<int> makeMatMul(int a, int b, const Location &loc);
  std::optional<int> makeHadamard(int a, int b, const Location &loc);
  /// c · A, A / c: an activation times a number, and times the run-time
  /// number `multiplier` when it is a node.
  std::optional<int> makeScale(int a, double factor, const Location &loc,
                               int multiplier = -1);
  std::optional<int> makeSlice(int a, int64_t axis, int64_t lo, int64_t hi,
                               const Location &loc);
  std::optional<int> makeRow(int a, int64_t row, const Location &loc);
  std::optional<int> makeConcat(llvm::ArrayRef<int> parts, int64_t axis,
                                const Location &loc);
  bool checkElementCount(const TensorType &type, const Location &loc,
                         const llvm::Twine &what);
  const Node &node(int id) const { return graph.nodes[id]; }
  const TensorType &typeOf(int id) const { return graph.nodes[id].type; }
  std::string format(const TensorType &type) const;
  std::string describe(int id) const;
  bool error(const Location &loc, const llvm::Twine &message);
  bool mismatch(const Location &loc, const llvm::Twine &what, int a, int b);

  /// The hyperparameter `name` if declared (eps, H: defaults of options).
  const Scalar *findHyperparameter(llvm::StringRef name) const;
  /// A loop variable in scope, innermost first.
  const std::pair<std::string, int64_t> *
  findLoopVar(llvm::StringRef name) const;
  bool isGlobalName(llvm::StringRef name) const;
  std::string suggest(llvm::StringRef name) const;
  static std::string at(const Location &loc);

  const ModuleAST &module;
  const SemaOptions &options;
  DiagnosticEngine &diags;
  Graph graph;

  llvm::StringMap<Scalar> hyperparameters;
  llvm::StringMap<Location> hyperparameterLocs;
  llvm::StringMap<ParameterFamily> families;
  std::vector<ParameterFamily *> parameterOrder; // as declared
  llvm::StringMap<int> inputs;                   // token sequences
  llvm::StringMap<int> variables;                // assigned in the algorithm
  llvm::StringMap<int> checkpoints; // checkpoint tensor name → Parameter node
  std::vector<std::pair<std::string, int64_t>> loopVars; // in scope
  /// Set while a parameter's binding is evaluated: checkpoint names are
  /// allowed there, activations are not.
  bool inBinding = false;
  /// The 0-based position of each loop variable, for `{l}` in names.
  std::vector<std::pair<std::string, int64_t>> templateIndices;
  unsigned bindingDepth = 0;
  /// The first node of the current statement: nodes from here on are
  /// temporaries of one expression (see makeAdd's reassociation).
  size_t statementStart = 0;
  /// The expressions evaluated in the current statement: after a call fails,
  /// its arguments not among them are evaluated for their own errors, each
  /// once (so nested failing calls cost linear, not exponential, work).
  llvm::SmallPtrSet<const ExprAST *, 32> evaluated;
  /// Statements executed so far while unrolling, against options.maxSteps.
  int64_t steps = 0;
  /// Names whose declaration or last assignment failed (its error already
  /// reported): an expression reading one fails silently, so one mistake is
  /// reported once and not again at every use (docs/language.md, Diagnostics).
  llvm::StringSet<> poisoned;
  /// An error after which elaboration cannot go on (a statement after
  /// `return`, the statement limit).
  bool fatal = false;
  /// Every name `body` assigns, in loops too: all poisoned when the loop
  /// around them cannot run.
  void poisonAssignments(llvm::ArrayRef<StmtPtr> body);
  void poisonDeclarations(const std::vector<ParameterItem> &items);
};

} // namespace xf::spec

#endif // XF_SPEC_LIB_ELABORATOR_H
