//===- Algorithm.cpp - the algorithm's statements and expressions ---------===//
//
// Statements run in order: `X ← expr` (re)binds a name, `for l in 1..L` is
// unrolled with `l` bound to each value, `return` names the output. Names
// resolve to loop variables, variables, inputs, hyperparameters, then
// parameters. `+` on tensors is a sum (a rank-1 right side is a bias added
// to every row), `*` (also `·`) is a matrix product.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace xf::spec;

bool Elaborator::elaborateAlgorithm(const AlgorithmAST &algorithm) {
  if (algorithm.inputs.empty() || algorithm.inputs.size() > 2)
    return error(algorithm.loc,
                 "an algorithm takes one token sequence (x), or two (z, x) "
                 "for an encoder-decoder; '" +
                     algorithm.name + "' takes " +
                     llvm::Twine(algorithm.inputs.size()));
  for (auto &[name, loc] : algorithm.inputs) {
    if (isGlobalName(name))
      return error(loc, "input '" + name + "' is already a name in scope");
    Node n;
    n.kind = OpKind::Input;
    n.type.isTokens = true;
    n.type.dims.push_back(Dim{0, int(graph.inputNames.size())});
    n.loc = loc;
    n.origin = "input '" + name + "'";
    graph.inputNames.push_back(name);
    std::optional<int> id = addNode(std::move(n));
    if (!id)
      return false;
    inputs[name] = *id;
  }
  bool returned = false;
  if (!elaborateBody(algorithm.body, returned))
    return false;
  if (!returned)
    return error(algorithm.loc,
                 "algorithm '" + algorithm.name + "' has no 'return'");
  return true;
}

void Elaborator::poisonAssignments(llvm::ArrayRef<StmtPtr> body) {
  for (const StmtPtr &stmt : body) {
    if (auto *assign = llvm::dyn_cast<AssignStmtAST>(stmt.get()))
      poisoned.insert(assign->getName());
    else if (auto *loop = llvm::dyn_cast<ForStmtAST>(stmt.get()))
      poisonAssignments(loop->getBody());
  }
}

/// A statement that fails is reported and skipped; the names it would have
/// set are poisoned. Only running past the limits, or a statement after
/// `return`, stops the algorithm.
bool Elaborator::elaborateBody(llvm::ArrayRef<StmtPtr> body, bool &returned) {
  for (const StmtPtr &stmt : body) {
    if (diags.atErrorLimit())
      return false;
    if (returned)
      return fatal = true,
             error(stmt->getLoc(), "this statement follows 'return'");
    if (++steps > options.maxSteps)
      return fatal = true,
             error(stmt->getLoc(), "unrolling the loops executes more than " +
                                       llvm::Twine(options.maxSteps) +
                                       " statements");
    statementStart = graph.nodes.size();
    evaluated.clear();
    bool ok =
        llvm::TypeSwitch<const StmtAST *, bool>(stmt.get())
            .Case([&](const AssignStmtAST *s) { return assign(*s); })
            .Case(
                [&](const ForStmtAST *s) { return elaborateFor(*s, returned); })
            .Case([&](const ReturnStmtAST *s) {
              if (!loopVars.empty())
                return error(s->getLoc(),
                             "'return' must end the algorithm, not a loop");
              std::optional<int> out =
                  evalTensor(s->getValue(), "the returned value");
              if (!out)
                return false;
              const TensorType &type = typeOf(*out);
              if (type.isTokens || type.rank() != 2 ||
                  !type.dims[0].isSequence())
                return error(s->getValue().getLoc(),
                             "the algorithm must return one row per "
                             "token, [ℓ, d], but this is " +
                                 format(type));
              graph.output = *out;
              returned = true;
              return true;
            });
    if (ok)
      continue;
    if (auto *loop = llvm::dyn_cast<ForStmtAST>(stmt.get())) {
      if (!fatal)
        poisonAssignments(loop->getBody());
    } else if (llvm::isa<ReturnStmtAST>(stmt.get())) {
      returned = loopVars.empty(); // reported: not "has no 'return'" too
    }
    if (fatal)
      return false;
  }
  return true;
}

bool Elaborator::elaborateFor(const ForStmtAST &loop, bool &returned) {
  llvm::StringRef var = loop.getVar();
  if (isGlobalName(var) || findLoopVar(var) || variables.count(var))
    return error(loop.getLoc(),
                 "loop variable '" + var + "' is already a name in scope");
  std::optional<LoopRange> range =
      evalRange(loop.getRange(), var, loop.getLoc());
  if (!range)
    return false;
  for (int64_t i = range->lo; i <= range->hi; ++i) {
    loopVars.emplace_back(var.str(), i);
    bool ok = elaborateBody(loop.getBody(), returned);
    loopVars.pop_back();
    if (!ok)
      return false;
  }
  return true;
}

bool Elaborator::assign(const AssignStmtAST &stmt) {
  llvm::StringRef name = stmt.getName();
  if (isGlobalName(name) || findLoopVar(name))
    return error(stmt.getLoc(), "cannot assign to '" + name +
                                    "': it is a hyperparameter, parameter, "
                                    "input or loop variable");
  // A tensor, or a run-time number (`ℓ ← length(x)`).
  MaybeValue v = eval(stmt.getValue());
  std::optional<int> value;
  if (v && v->kind == Value::RuntimeNumberValue)
    value = v->node;
  else if (v)
    value = requireTensor(*v, stmt.getValue().getLoc(), "an assigned value");
  if (!value) {
    poisoned.insert(name);
    return false;
  }
  variables[name] = *value;
  poisoned.erase(name);
  return true;
}

std::optional<int> Elaborator::evalTensor(const ExprAST &e,
                                          llvm::StringRef what) {
  MaybeValue v = eval(e);
  if (!v)
    return std::nullopt;
  return requireTensor(*v, e.getLoc(), what);
}

std::optional<int> Elaborator::requireTensor(const Value &v,
                                             const Location &loc,
                                             llvm::StringRef what) {
  if (v.kind == Value::TensorValue)
    return v.node;
  if (v.kind == Value::FamilyValue) {
    const ParameterFamily &f = *v.family;
    std::vector<std::string> vars;
    for (const LoopRange &loop : f.loops)
      vars.push_back(loop.var);
    std::string indexed = f.decl->name + "[" + llvm::join(vars, ", ") + "]";
    return error(loc, "'" + f.decl->name + "' is declared as " + indexed +
                          ", one tensor per index; write " + indexed),
           std::nullopt;
  }
  return error(loc, what + llvm::Twine(" must be a tensor, not a number")),
         std::nullopt;
}

MaybeValue Elaborator::eval(const ExprAST &e) {
  evaluated.insert(&e);
  return llvm::TypeSwitch<const ExprAST *, MaybeValue>(&e)
      .Case([&](const NumberExprAST *n) { return evalNumber(*n); })
      .Case([&](const NameExprAST *n) { return evalName(*n); })
      .Case([&](const BinaryExprAST *b) { return evalBinary(*b); })
      .Case([&](const IndexExprAST *i) { return evalIndex(*i); })
      .Case([&](const CallExprAST *c) { return evalCall(*c); })
      .Case([&](const TransposeExprAST *t) -> MaybeValue {
        std::optional<int> a =
            evalTensor(t->getOperand(), "a transposed value");
        if (!a)
          return std::nullopt;
        std::optional<int> r = makeTranspose(*a, t->getLoc());
        return r ? MaybeValue(Value::ofTensor(*r)) : std::nullopt;
      })
      .Case([&](const StringExprAST *s) -> MaybeValue {
        if (!inBinding)
          return error(s->getLoc(),
                       "checkpoint names belong in the 'parameters' block"),
                 std::nullopt;
        return error(s->getLoc(), "a checkpoint name must be the whole "
                                  "binding of a parameter; declare one "
                                  "parameter per checkpoint tensor"),
               std::nullopt;
      })
      .Case([&](const ComprehensionExprAST *c) -> MaybeValue {
        return error(c->getLoc(), "'for' inside an expression is only "
                                  "allowed in the arguments of concat(...)"),
               std::nullopt;
      })
      .Default([&](const ExprAST *) -> MaybeValue {
        return error(e.getLoc(), "unsupported expression"), std::nullopt;
      });
}

MaybeValue Elaborator::evalName(const NameExprAST &e) {
  llvm::StringRef name = e.getName();
  if (poisoned.contains(name) && !findLoopVar(name))
    return std::nullopt; // its error is reported where it was set
  if (auto *loop = findLoopVar(name))
    return Value::ofInt(loop->second);
  bool isActivation = variables.count(name) || inputs.count(name);
  if (isActivation && inBinding)
    return error(e.getLoc(), "a parameter's binding cannot use '" + name +
                                 "', which is computed by the algorithm"),
           std::nullopt;
  if (auto it = variables.find(name); it != variables.end())
    return valueOfNode(it->second);
  if (auto it = inputs.find(name); it != inputs.end())
    return Value::ofTensor(it->second);
  if (const Scalar *s = findHyperparameter(name))
    return Value::ofScalar(*s);
  if (auto it = families.find(name); it != families.end()) {
    Value v;
    v.kind = Value::FamilyValue;
    v.family = &it->second;
    return finishFamily(std::move(v), e.getLoc());
  }
  return error(e.getLoc(), "undefined name '" + name + "'" + suggest(name)),
         std::nullopt;
}

/// A family with all its indices given is one tensor.
MaybeValue Elaborator::finishFamily(Value v, const Location &loc) {
  if (v.indices.size() < v.family->loops.size())
    return v;
  return instantiate(*v.family, v.indices, loc);
}

MaybeValue Elaborator::evalBinary(const BinaryExprAST &e) {
  // Both sides, even when the first fails: an error in each is reported.
  MaybeValue lhs = eval(e.getLHS());
  MaybeValue rhs = eval(e.getRHS());
  if (!lhs || !rhs)
    return std::nullopt;
  bool hadamard = e.getOp() == kHadamardOp;
  if (hadamard && (lhs->isNumber() || rhs->isNumber()))
    return error(e.getLoc(), "'⊙' multiplies two tensors elementwise, not "
                             "numbers"),
           std::nullopt;
  if (lhs->kind == Value::ScalarValue && rhs->kind == Value::ScalarValue)
    return evalScalarBinary(e, lhs->scalar, rhs->scalar);
  if (lhs->isNumber() && rhs->isNumber())
    return evalRuntimeArithmetic(e, *lhs, *rhs);
  // A number scales a tensor: c · X, X · c, X / c.
  bool numberLeft = lhs->isNumber();
  if (numberLeft || rhs->isNumber()) {
    const Value &number = numberLeft ? *lhs : *rhs;
    const Scalar &c = number.scalar;
    bool runtime = number.kind == Value::RuntimeNumberValue;
    double factor = runtime ? 1.0 : c.isFloat ? c.f : double(c.i);
    bool divide = e.getOp() == '/' && !numberLeft;
    if (e.getOp() != '*' && !divide)
      return error(e.getLoc(), "'" + e.getOpSpelling() +
                                   "' cannot combine a number with a tensor; a "
                                   "number multiplies a tensor (c · X) or "
                                   "divides it (X / c)"),
             std::nullopt;
    if (divide && factor == 0)
      return error(e.getRHS().getLoc(), "a tensor divided by zero"),
             std::nullopt;
    std::optional<int> t =
        requireTensor(numberLeft ? *rhs : *lhs,
                      numberLeft ? e.getRHS().getLoc() : e.getLHS().getLoc(),
                      "a scaled value");
    if (!t)
      return std::nullopt;
    // X / n for a run-time n is X times the run-time number 1 / n.
    std::optional<int> multiplier = -1;
    if (runtime && divide) {
      Value one = Value::ofScalar(Scalar{true, 0, 1.0});
      MaybeValue inverse = evalRuntimeArithmetic(e, one, number);
      multiplier = inverse ? std::optional<int>(inverse->node) : std::nullopt;
    } else if (runtime) {
      multiplier = number.node;
    }
    std::optional<int> r =
        multiplier ? makeScale(*t, divide && !runtime ? 1.0 / factor : factor,
                               e.getLoc(), *multiplier)
                   : std::nullopt;
    return r ? MaybeValue(Value::ofTensor(*r)) : std::nullopt;
  }
  std::optional<int> a = requireTensor(*lhs, e.getLHS().getLoc(), "an operand");
  std::optional<int> b =
      a ? requireTensor(*rhs, e.getRHS().getLoc(), "an operand") : std::nullopt;
  if (!b)
    return std::nullopt;
  std::optional<int> r;
  if (e.getOp() == '+')
    r = makeAdd(*a, *b, e.getLoc());
  else if (e.getOp() == '*')
    r = makeMatMul(*a, *b, e.getLoc());
  else if (hadamard)
    r = makeHadamard(*a, *b, e.getLoc());
  else
    return error(e.getLoc(), "'" + e.getOpSpelling() +
                                 "' is not defined on tensors, which have "
                                 "'+' (a sum), '*' (a matrix product) and "
                                 "'⊙' (an elementwise product)"),
           std::nullopt;
  return r ? MaybeValue(Value::ofTensor(*r)) : std::nullopt;
}

MaybeValue Elaborator::evalIndex(const IndexExprAST &e) {
  MaybeValue base = eval(e.getBase());
  if (!base)
    return std::nullopt;
  llvm::ArrayRef<IndexItem> items = e.getItems();
  if (base->isNumber())
    return error(e.getLoc(), "a number cannot be indexed"), std::nullopt;
  // A layer's (or head's) parameter: W_q[l], W_Q[l, h].
  while (base->kind == Value::FamilyValue && !items.empty()) {
    const IndexItem &item = items.front();
    if (item.isRange)
      return error(item.loc, "'" + base->family->decl->name +
                                 "' takes a single index per loop here"),
             std::nullopt;
    std::optional<int64_t> index = evalInt(*item.lo, "an index");
    if (!index)
      return std::nullopt;
    base->indices.push_back(*index);
    items = items.drop_front();
    base = finishFamily(std::move(*base), item.loc);
    if (!base)
      return std::nullopt;
  }
  if (items.empty())
    return base;
  std::optional<int> tensor =
      requireTensor(*base, e.getLoc(), "an indexed value");
  return tensor ? indexTensor(e, *tensor, items) : std::nullopt;
}

/// `W[i]` / `W[i, :]` is row i; `W[lo:hi, :]`, `W[:, lo:hi]`, `b[lo:hi]`
/// are slices. Indices count from 0 like the stored tensor.
MaybeValue Elaborator::indexTensor(const IndexExprAST &e, int tensor,
                                   llvm::ArrayRef<IndexItem> items) {
  const TensorType &type = typeOf(tensor);
  auto isAll = [](const IndexItem &i) { return i.isRange && !i.lo && !i.hi; };
  if (type.isTokens)
    return error(e.getLoc(), "a token sequence cannot be indexed"),
           std::nullopt;
  bool isRow = type.rank() == 2 && !items[0].isRange &&
               (items.size() == 1 || (items.size() == 2 && isAll(items[1])));
  if (isRow) {
    std::optional<int64_t> row = evalInt(*items[0].lo, "a row index");
    std::optional<int> r =
        row ? makeRow(tensor, *row, e.getLoc()) : std::nullopt;
    return r ? MaybeValue(Value::ofTensor(*r)) : std::nullopt;
  }
  int64_t axis = -1;
  if (items.size() == 1 && items[0].isRange)
    axis = 0;
  else if (items.size() == 2 && type.rank() == 2 && isAll(items[0]) &&
           items[1].isRange)
    axis = 1;
  else if (items.size() == 2 && type.rank() == 2 && items[0].isRange &&
           isAll(items[1]))
    axis = 0;
  if (axis < 0 || unsigned(axis) >= type.rank())
    return error(e.getLoc(), "expected a row W[i] or a slice along one axis "
                             "(W[lo:hi, :], W[:, lo:hi], b[lo:hi]) of " +
                                 format(type)),
           std::nullopt;
  const IndexItem &item = items[axis];
  Dim extent = type.dims[axis];
  if (extent.isSequence())
    return error(item.loc,
                 "cannot slice along the sequence axis of " + format(type)),
           std::nullopt;
  std::optional<int64_t> lo =
      item.lo ? evalInt(*item.lo, "a slice bound") : std::optional<int64_t>(0);
  std::optional<int64_t> hi = !lo       ? std::nullopt
                              : item.hi ? evalInt(*item.hi, "a slice bound")
                                        : std::optional<int64_t>(extent.size);
  std::optional<int> r =
      hi ? makeSlice(tensor, axis, *lo, *hi, item.loc) : std::nullopt;
  return r ? MaybeValue(Value::ofTensor(*r)) : std::nullopt;
}
