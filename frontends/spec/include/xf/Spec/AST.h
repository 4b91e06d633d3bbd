//===- AST.h - the spec language's abstract syntax tree ---------*- C++ -*-===//
//
// A spec file is a model name, a `hyperparameters` block, a `parameters`
// block and one `algorithm`. Every node carries the Location it was parsed
// at and a kind for LLVM-style RTTI (isa/cast/dyn_cast).
//
//===----------------------------------------------------------------------===//

#ifndef XF_SPEC_AST_H
#define XF_SPEC_AST_H

#include "xf/Spec/Token.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <variant>
#include <vector>

namespace xf::spec {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class ExprAST {
public:
  enum ExprKind {
    Expr_Number,
    Expr_Name,
    Expr_String,
    Expr_Binary,
    Expr_Transpose,
    Expr_Index,
    Expr_Call,
    Expr_Comprehension,
  };
  ExprAST(ExprKind kind, Location loc) : kind(kind), loc(std::move(loc)) {}
  virtual ~ExprAST() = default;
  ExprKind getKind() const { return kind; }
  const Location &getLoc() const { return loc; }
  /// Levels of the tree below and including this node; the parser bounds
  /// it, so walking an expression recursively is safe.
  unsigned getHeight() const { return height; }
  void setHeight(unsigned h) { height = h; }

private:
  const ExprKind kind;
  Location loc;
  unsigned height = 1;
};
using ExprPtr = std::unique_ptr<ExprAST>;

/// `12`, `1e-5`, `0.5`. The spelling is kept; Sema converts it.
class NumberExprAST : public ExprAST {
public:
  NumberExprAST(Location loc, std::string spelling, bool isFloat)
      : ExprAST(Expr_Number, std::move(loc)), spelling(std::move(spelling)),
        isFloat(isFloat) {}
  llvm::StringRef getSpelling() const { return spelling; }
  bool isFloatLiteral() const { return isFloat; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Number; }

private:
  std::string spelling;
  bool isFloat;
};

/// A hyperparameter, parameter, variable, loop index or option word.
class NameExprAST : public ExprAST {
public:
  NameExprAST(Location loc, std::string name)
      : ExprAST(Expr_Name, std::move(loc)), name(std::move(name)) {}
  llvm::StringRef getName() const { return name; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Name; }

private:
  std::string name;
};

/// A checkpoint tensor name template: "h.{l}.attn.c_attn.weight".
class StringExprAST : public ExprAST {
public:
  StringExprAST(Location loc, std::string text)
      : ExprAST(Expr_String, std::move(loc)), text(std::move(text)) {}
  llvm::StringRef getText() const { return text; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_String; }

private:
  std::string text;
};

/// The op character of `A ⊙ B` (an elementwise product of tensors).
constexpr char kHadamardOp = 'o';

/// `a + b`, `a - b`, `a * b` (also a matrix product), `a / b`, `a % b`,
/// `A ⊙ B`.
class BinaryExprAST : public ExprAST {
public:
  BinaryExprAST(Location loc, char op, ExprPtr lhs, ExprPtr rhs)
      : ExprAST(Expr_Binary, std::move(loc)), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  char getOp() const { return op; }
  /// The operator as written in diagnostics: "+", "⊙".
  llvm::StringRef getOpSpelling() const {
    return op == kHadamardOp ? "⊙" : llvm::StringRef(&op, 1);
  }
  const ExprAST &getLHS() const { return *lhs; }
  const ExprAST &getRHS() const { return *rhs; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Binary; }

private:
  char op;
  ExprPtr lhs, rhs;
};

/// `Wᵀ` or `W^T`.
class TransposeExprAST : public ExprAST {
public:
  TransposeExprAST(Location loc, ExprPtr operand)
      : ExprAST(Expr_Transpose, std::move(loc)), operand(std::move(operand)) {}
  const ExprAST &getOperand() const { return *operand; }
  static bool classof(const ExprAST *e) {
    return e->getKind() == Expr_Transpose;
  }

private:
  ExprPtr operand;
};

/// One item between brackets: `i`, `:` or `lo:hi`.
struct IndexItem {
  ExprPtr lo, hi; // `i`: lo only; `:`: neither; `lo:hi`: both
  bool isRange = false;
  Location loc;
};

/// `W_q[l]` (a layer's parameter), `W[0]` (a row), `W[:, 0:d_e]` (a slice).
class IndexExprAST : public ExprAST {
public:
  IndexExprAST(Location loc, ExprPtr base, std::vector<IndexItem> items)
      : ExprAST(Expr_Index, std::move(loc)), base(std::move(base)),
        items(std::move(items)) {}
  const ExprAST &getBase() const { return *base; }
  llvm::ArrayRef<IndexItem> getItems() const { return items; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Index; }

private:
  ExprPtr base;
  std::vector<IndexItem> items;
};

/// `name = value` inside a call: `mask = causal`.
struct OptionAST {
  std::string name;
  ExprPtr value;
  Location loc;
};

/// `f(inputs | parameters, options)`, as the paper writes
/// `layer_norm(X | γ, β)`: data before the bar, learned tensors after it.
class CallExprAST : public ExprAST {
public:
  CallExprAST(Location loc, std::string callee, std::vector<ExprPtr> inputs,
              std::vector<ExprPtr> params, std::vector<OptionAST> options)
      : ExprAST(Expr_Call, std::move(loc)), callee(std::move(callee)),
        inputs(std::move(inputs)), params(std::move(params)),
        options(std::move(options)) {}
  llvm::StringRef getCallee() const { return callee; }
  llvm::ArrayRef<ExprPtr> getInputs() const { return inputs; }
  llvm::ArrayRef<ExprPtr> getParams() const { return params; }
  llvm::ArrayRef<OptionAST> getOptions() const { return options; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Call; }

private:
  std::string callee;
  std::vector<ExprPtr> inputs, params;
  std::vector<OptionAST> options;
};

/// An inclusive range `lo..hi`, as in `for l in 1..L`.
struct RangeAST {
  ExprPtr lo, hi;
};

/// `body for h in 1..H`: one value per index, e.g. inside `concat(...)`.
class ComprehensionExprAST : public ExprAST {
public:
  ComprehensionExprAST(Location loc, ExprPtr body, std::string var,
                       RangeAST range)
      : ExprAST(Expr_Comprehension, std::move(loc)), body(std::move(body)),
        var(std::move(var)), range(std::move(range)) {}
  const ExprAST &getBody() const { return *body; }
  llvm::StringRef getVar() const { return var; }
  const RangeAST &getRange() const { return range; }
  static bool classof(const ExprAST *e) {
    return e->getKind() == Expr_Comprehension;
  }

private:
  ExprPtr body;
  std::string var;
  RangeAST range;
};

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

/// `d_e = 768` or `d_k = d_e / H` in the hyperparameters block.
struct HyperparameterDecl {
  std::string name;
  ExprPtr value;
  Location loc;
};

/// `W_q[l] : [d_e, d_e] = "h.{l}.q.weight"ᵀ` or a view of other parameters:
/// `W_k[l] : [d_e, d_e] = W_qkv[l][:, d_e:2*d_e]`.
struct ParameterDecl {
  std::string name;
  std::vector<std::string> indices; // the loop variables it is indexed by
  std::vector<ExprPtr> shape;
  ExprPtr binding;
  Location loc;
};

/// `for l in 1..L ... end` around parameter declarations.
struct ParameterLoop;
using ParameterItem =
    std::variant<ParameterDecl, std::unique_ptr<ParameterLoop>>;
struct ParameterLoop {
  std::string var;
  RangeAST range;
  std::vector<ParameterItem> body;
  Location loc;
};

//===----------------------------------------------------------------------===//
// Statements of the algorithm
//===----------------------------------------------------------------------===//

class StmtAST {
public:
  enum StmtKind { Stmt_Assign, Stmt_For, Stmt_Return };
  StmtAST(StmtKind kind, Location loc) : kind(kind), loc(std::move(loc)) {}
  virtual ~StmtAST() = default;
  StmtKind getKind() const { return kind; }
  const Location &getLoc() const { return loc; }

private:
  const StmtKind kind;
  Location loc;
};
using StmtPtr = std::unique_ptr<StmtAST>;

/// `X ← X + MHAttention(X̃ | ...)`.
class AssignStmtAST : public StmtAST {
public:
  AssignStmtAST(Location loc, std::string name, ExprPtr value)
      : StmtAST(Stmt_Assign, std::move(loc)), name(std::move(name)),
        value(std::move(value)) {}
  llvm::StringRef getName() const { return name; }
  const ExprAST &getValue() const { return *value; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Assign; }

private:
  std::string name;
  ExprPtr value;
};

/// `for l in 1..L ... end`, unrolled by Sema.
class ForStmtAST : public StmtAST {
public:
  ForStmtAST(Location loc, std::string var, RangeAST range,
             std::vector<StmtPtr> body)
      : StmtAST(Stmt_For, std::move(loc)), var(std::move(var)),
        range(std::move(range)), body(std::move(body)) {}
  llvm::StringRef getVar() const { return var; }
  const RangeAST &getRange() const { return range; }
  llvm::ArrayRef<StmtPtr> getBody() const { return body; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_For; }

private:
  std::string var;
  RangeAST range;
  std::vector<StmtPtr> body;
};

class ReturnStmtAST : public StmtAST {
public:
  ReturnStmtAST(Location loc, ExprPtr value)
      : StmtAST(Stmt_Return, std::move(loc)), value(std::move(value)) {}
  const ExprAST &getValue() const { return *value; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Return; }

private:
  ExprPtr value;
};

/// `algorithm DTransformer(x)`: token sequences in, statements after.
struct AlgorithmAST {
  std::string name;
  std::vector<std::pair<std::string, Location>> inputs;
  std::vector<StmtPtr> body;
  Location loc;
};

/// A whole spec file.
struct ModuleAST {
  std::string modelName; // `model gpt2`; empty when the file has none
  Location modelLoc;
  std::vector<HyperparameterDecl> hyperparameters;
  std::vector<ParameterItem> parameters;
  std::optional<AlgorithmAST> algorithm;
};

/// Prints the tree for `xfc --emit=ast`, one node per line with its location.
void dump(const ModuleAST &module, llvm::raw_ostream &os);

} // namespace xf::spec

#endif // XF_SPEC_AST_H
