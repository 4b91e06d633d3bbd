//===- Scalars.cpp - hyperparameters, -D overrides, shape arithmetic ------===//
//
// Integers in a spec are sizes and counts; their arithmetic is checked so no
// input overflows int64, and `d_e / H` must divide exactly.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include "xf/Spec/Lexer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>
#include <cstdlib>

using namespace xf::spec;

/// Larger integers are never sizes: a typo or an attack.
static constexpr int64_t kMaxInteger = (int64_t(1) << 31) - 1;

/// Whether a hyperparameter's default is a float, without evaluating it (an
/// override must keep the type even when the default would not evaluate).
static bool isFloatExpr(const ExprAST &e, const llvm::StringMap<Scalar> &env) {
  if (auto *n = llvm::dyn_cast<NumberExprAST>(&e))
    return n->isFloatLiteral();
  if (auto *n = llvm::dyn_cast<NameExprAST>(&e)) {
    auto it = env.find(n->getName());
    return it != env.end() && it->second.isFloat;
  }
  if (auto *b = llvm::dyn_cast<BinaryExprAST>(&e))
    return isFloatExpr(b->getLHS(), env) || isFloatExpr(b->getRHS(), env);
  return false;
}

/// A literal as it may appear in a message: long ones (a 10-million-digit
/// number) are cut to their first digits.
static std::string shownLiteral(llvm::StringRef text) {
  constexpr size_t kShown = 40;
  if (text.size() <= kShown)
    return text.str();
  return text.take_front(kShown).str() + "... (" + std::to_string(text.size()) +
         " characters)";
}

/// Parses a decimal float ("0.5", "1e-5"). Besides overflow, a nonzero
/// literal that rounds to 0 (1e-400) is an error: an eps of 0 would silently
/// divide by zero.
static std::optional<std::string> parseFloat(llvm::StringRef text,
                                             double &value) {
  std::string s = text.str();
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() ||
      text.find_first_not_of("0123456789.eE+-") != llvm::StringRef::npos)
    return "'" + shownLiteral(text) + "' is not a number";
  if (!std::isfinite(v))
    return "'" + shownLiteral(text) +
           "' is out of range (at most about 1.8e308)";
  llvm::StringRef mantissa =
      text.take_until([](char c) { return c == 'e' || c == 'E'; });
  if (v == 0 && mantissa.find_first_of("123456789") != llvm::StringRef::npos)
    return "'" + shownLiteral(text) +
           "' is too small: it rounds to 0 (the smallest double is about "
           "4.9e-324)";
  value = v;
  return std::nullopt;
}

MaybeValue Elaborator::evalNumber(const NumberExprAST &e) {
  Scalar s;
  s.isFloat = e.isFloatLiteral();
  if (s.isFloat) {
    if (std::optional<std::string> bad = parseFloat(e.getSpelling(), s.f))
      return error(e.getLoc(), "number " + *bad), std::nullopt;
    return Value::ofScalar(s);
  }
  if (e.getSpelling().getAsInteger(10, s.i) || s.i > kMaxInteger)
    return error(e.getLoc(), "integer '" + shownLiteral(e.getSpelling()) +
                                 "' is too large (at most 2^31 - 1)"),
           std::nullopt;
  return Value::ofScalar(s);
}

MaybeValue Elaborator::evalScalarBinary(const BinaryExprAST &e, Scalar a,
                                        Scalar b) {
  char op = e.getOp();
  if (a.isFloat || b.isFloat) {
    double x = a.asDouble(), y = b.asDouble(), r = 0;
    switch (op) {
    case '+':
      r = x + y;
      break;
    case '-':
      r = x - y;
      break;
    case '*':
      r = x * y;
      break;
    case '/':
      if (y == 0)
        return error(e.getLoc(), "division by zero"), std::nullopt;
      r = x / y;
      break;
    default:
      return error(e.getLoc(), "'%' needs integers"), std::nullopt;
    }
    if (!std::isfinite(r))
      return error(e.getLoc(), "the result is not a finite number"),
             std::nullopt;
    return Value::ofScalar(Scalar{true, 0, r});
  }
  std::optional<int64_t> r;
  switch (op) {
  case '+':
    r = llvm::checkedAdd(a.i, b.i);
    break;
  case '-':
    r = llvm::checkedSub(a.i, b.i);
    break;
  case '*':
    r = llvm::checkedMul(a.i, b.i);
    break;
  case '/':
  case '%':
    if (b.i == 0)
      return error(e.getLoc(), "division by zero"), std::nullopt;
    if (op == '%') {
      r = a.i % b.i;
      break;
    }
    if (a.i % b.i != 0) {
      auto *l = llvm::dyn_cast<NameExprAST>(&e.getLHS());
      auto *d = llvm::dyn_cast<NameExprAST>(&e.getRHS());
      std::string why = l && d ? " ('" + l->getName().str() +
                                     "' must be divisible by '" +
                                     d->getName().str() + "')"
                               : std::string();
      return error(e.getLoc(), llvm::Twine(a.i) + " / " + llvm::Twine(b.i) +
                                   " is not a whole number" + why),
             std::nullopt;
    }
    r = a.i / b.i;
    break;
  }
  if (!r || *r > kMaxInteger || *r < -kMaxInteger)
    return error(e.getLoc(), "integer arithmetic overflows (" +
                                 llvm::Twine(a.i) + " " + llvm::Twine(op) +
                                 " " + llvm::Twine(b.i) + ")"),
           std::nullopt;
  return Value::ofInt(*r);
}

std::optional<int64_t> Elaborator::evalInt(const ExprAST &e,
                                           llvm::StringRef what) {
  MaybeValue v = eval(e);
  if (!v || compileTimeOnly(*v, e.getLoc(), what))
    return std::nullopt;
  if (v->kind != Value::ScalarValue || v->scalar.isFloat)
    return error(e.getLoc(), what + llvm::Twine(" must be an integer")),
           std::nullopt;
  return v->scalar.i;
}

std::optional<double> Elaborator::evalFloat(const ExprAST &e,
                                            llvm::StringRef what) {
  MaybeValue v = eval(e);
  if (!v || compileTimeOnly(*v, e.getLoc(), what))
    return std::nullopt;
  if (v->kind != Value::ScalarValue)
    return error(e.getLoc(), what + llvm::Twine(" must be a number")),
           std::nullopt;
  return v->scalar.asDouble();
}

std::optional<LoopRange> Elaborator::evalRange(const RangeAST &range,
                                               llvm::StringRef var,
                                               const Location &loc) {
  std::optional<int64_t> lo = evalInt(*range.lo, "the first index");
  std::optional<int64_t> hi =
      lo ? evalInt(*range.hi, "the last index") : std::nullopt;
  if (!hi)
    return std::nullopt;
  if (*lo < 0 || *hi < *lo)
    return error(loc, "loop '" + var + "' has the empty or negative range " +
                          llvm::Twine(*lo) + ".." + llvm::Twine(*hi)),
           std::nullopt;
  if (*hi - *lo + 1 > options.maxLoopTrips)
    return error(loc, "loop '" + var + "' would unroll " +
                          llvm::Twine(*hi - *lo + 1) + " times; at most " +
                          llvm::Twine(options.maxLoopTrips) + " are allowed"),
           std::nullopt;
  return LoopRange{var.str(), *lo, *hi, loc};
}

bool Elaborator::evaluateHyperparameters() {
  llvm::StringMap<std::string> overrides;
  for (const std::string &define : options.defines) {
    std::pair<llvm::StringRef, llvm::StringRef> split =
        llvm::StringRef(define).split('=');
    // The spec's own spelling rules: -D ℓ_max=16 names l_max.
    std::string canonical = canonicalIdentifier(split.first.trim());
    llvm::StringRef name = canonical, value = split.second;
    if (!llvm::StringRef(define).contains('=') || name.empty())
      return diags.error("-D expects NAME=VALUE, got '" + define + "'"), false;
    if (overrides.count(name))
      return diags.error("-D " + name + " given twice (" + name + "=" +
                         overrides[name] + " and " + define + ")"),
             false;
    auto decl = llvm::find_if(module.hyperparameters,
                              [&](auto &d) { return d.name == name; });
    if (decl == module.hyperparameters.end()) {
      std::string known;
      for (const HyperparameterDecl &d : module.hyperparameters)
        known += (known.empty() ? "" : ", ") + d.name;
      diags.error("-D " + define + ": the model has no hyperparameter '" +
                  name + "'" +
                  (known.empty() ? "" : " (it has " + known + ")"));
      return false;
    }
    overrides[name] = value.trim().str();
  }
  // A declaration that fails is reported and poisoned; the others go on.
  for (const HyperparameterDecl &decl : module.hyperparameters) {
    if (diags.atErrorLimit())
      return false;
    if (hyperparameters.count(decl.name) || isGlobalName(decl.name) ||
        poisoned.contains(decl.name)) {
      error(decl.loc, "'" + decl.name + "' is declared twice");
      if (hyperparameterLocs.count(decl.name))
        diags.note(hyperparameterLocs[decl.name], "first declared here");
      continue;
    }
    std::optional<Scalar> value;
    auto it = overrides.find(decl.name);
    if (it != overrides.end()) {
      value = Scalar{isFloatExpr(*decl.value, hyperparameters), 0, 0};
      llvm::StringRef text = it->second;
      std::optional<std::string> bad;
      if (value->isFloat)
        bad = parseFloat(text, value->f);
      else if (text.getAsInteger(10, value->i))
        bad = "'" + shownLiteral(text) + "' is not an integer";
      if (bad) {
        diags.error("-D " + decl.name + "=" + shownLiteral(text) + ": " + *bad);
        diags.note(decl.loc, "'" + decl.name + "' is declared here");
        return false;
      }
    } else {
      MaybeValue v = eval(*decl.value);
      if (v && v->kind != Value::ScalarValue)
        error(decl.value->getLoc(), "a hyperparameter must be a number"),
            v = std::nullopt;
      if (!v) {
        poisoned.insert(decl.name);
        continue;
      }
      value = v->scalar;
    }
    if (!value->isFloat && (value->i < 1 || value->i > kMaxInteger)) {
      std::string how = it != overrides.end() ? " (set by -D)" : "";
      error(decl.loc,
            "'" + decl.name + "' is " + llvm::Twine(value->i) + how +
                ", but integer hyperparameters are sizes from 1 to 2^31 - 1");
      poisoned.insert(decl.name);
      continue;
    }
    hyperparameters[decl.name] = *value;
    hyperparameterLocs[decl.name] = decl.loc;
    graph.hyperparameters.emplace_back(decl.name, *value);
  }
  return true;
}
