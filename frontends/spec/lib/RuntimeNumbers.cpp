//===- RuntimeNumbers.cpp - length(x) and arithmetic on it ----------------===//
//
// `length(x)` is the number of tokens of input `x`, the paper's ℓ. It is
// known only when the model runs, so it is a graph node (rank 0, an f64)
// rather than a Scalar: arithmetic with it builds Arithmetic nodes, always
// in floating point (`length(x) / 2` is 18.5 for 37 tokens), and it reaches
// tensors only as a factor, `X / length(x)`. Sizes, loop bounds, indices and
// options must be known when the model is compiled (compileTimeOnly).
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include <cmath>

using namespace xf::spec;

static Node numberNode(OpKind kind, llvm::ArrayRef<int> operands,
                       const Location &loc, llvm::StringRef what) {
  Node n;
  n.kind = kind;
  n.operands.assign(operands.begin(), operands.end());
  n.loc = loc;
  n.origin = what.str();
  return n;
}

Value Elaborator::valueOfNode(int id) const {
  Value v = Value::ofTensor(id);
  if (typeOf(id).isRuntimeNumber())
    v.kind = Value::RuntimeNumberValue;
  return v;
}

MaybeValue Elaborator::evalLength(const CallExprAST &call) {
  if (call.getInputs().size() != 1 || !call.getParams().empty() ||
      !call.getOptions().empty())
    return error(call.getLoc(),
                 "length takes one token sequence and nothing else: "
                 "length(x)"),
           std::nullopt;
  const ExprAST &arg = *call.getInputs()[0];
  MaybeValue v = eval(arg);
  if (!v)
    return std::nullopt;
  if (v->kind != Value::TensorValue || !typeOf(v->node).isTokens)
    return error(arg.getLoc(),
                 "length takes a token sequence (an input of the algorithm), "
                 "not " +
                     (v->kind == Value::TensorValue ? describe(v->node)
                                                    : std::string("a number"))),
           std::nullopt;
  std::optional<int> id =
      addNode(numberNode(OpKind::Length, {v->node}, call.getLoc(),
                         "'length' (known when the model runs)"));
  return id ? MaybeValue(valueOfNode(*id)) : std::nullopt;
}

std::optional<int> Elaborator::runtimeNumberNode(const Value &v,
                                                 const Location &loc) {
  if (v.kind == Value::RuntimeNumberValue)
    return v.node;
  Node n = numberNode(OpKind::Constant, {}, loc, "a number");
  n.scale = v.scalar.asDouble();
  return addNode(std::move(n));
}

MaybeValue Elaborator::evalRuntimeArithmetic(const BinaryExprAST &e,
                                             const Value &a, const Value &b) {
  char op = e.getOp();
  if (op != '+' && op != '-' && op != '*' && op != '/')
    return error(e.getLoc(), "'" + e.getOpSpelling() +
                                 "' needs integers known when the model is "
                                 "compiled; length(...) is known only when "
                                 "it runs"),
           std::nullopt;
  // A run-time division by zero (X / (length(x) - 1) at one token) gives an
  // infinity, as in IEEE arithmetic; a literal zero is a mistake.
  if (op == '/' && b.kind == Value::ScalarValue && b.scalar.asDouble() == 0)
    return error(e.getLoc(), "division by zero"), std::nullopt;
  std::optional<int> lhs = runtimeNumberNode(a, e.getLHS().getLoc());
  std::optional<int> rhs =
      lhs ? runtimeNumberNode(b, e.getRHS().getLoc()) : std::nullopt;
  if (!rhs)
    return std::nullopt;
  Node n = numberNode(OpKind::Arithmetic, {*lhs, *rhs}, e.getLoc(),
                      "a number known when the model runs");
  n.arithmetic = op;
  std::optional<int> id = addNode(std::move(n));
  return id ? MaybeValue(valueOfNode(*id)) : std::nullopt;
}

bool Elaborator::compileTimeOnly(const Value &v, const Location &loc,
                                 llvm::StringRef what) {
  if (v.kind != Value::RuntimeNumberValue)
    return false;
  return !error(loc, what + llvm::Twine(" must be known when the model is "
                                        "compiled, but length(...) is known "
                                        "only when it runs"));
}
