//===- CallSite.cpp - checking one call of a primitive --------------------===//

#include "CallSite.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace xf::spec;

bool CallSite::arity(size_t minIn, size_t maxIn, size_t minParams,
                     size_t maxParams) {
  size_t in = call.getInputs().size(), params = call.getParams().size();
  if (in >= minIn && in <= maxIn && params >= minParams && params <= maxParams)
    return true;
  return error(call.getLoc(), "wrong arguments for '" + call.getCallee() +
                                  "': it is used as " + usage);
}

bool CallSite::allowOptions(std::initializer_list<llvm::StringRef> allowed) {
  for (const auto &[i, opt] : llvm::enumerate(call.getOptions())) {
    if (!llvm::is_contained(allowed, opt.name)) {
      std::string names = allowed.size() ? llvm::join(allowed, ", ") : "none";
      return error(opt.loc, "'" + call.getCallee() + "' has no option '" +
                                opt.name + "' (its options: " + names + ")");
    }
    for (const OptionAST &earlier : call.getOptions().take_front(i))
      if (earlier.name == opt.name)
        return error(opt.loc, "option '" + opt.name + "' is given twice");
  }
  return true;
}

const OptionAST *CallSite::option(llvm::StringRef name) const {
  for (const OptionAST &opt : call.getOptions())
    if (opt.name == name)
      return &opt;
  return nullptr;
}

std::optional<int> CallSite::tensor(const ExprPtr &e, llvm::StringRef what) {
  std::optional<int> t = s.evalTensor(*e, what);
  if (t && s.typeOf(*t).isTokens && call.getCallee().lower() != "token_embed")
    return error(e->getLoc(), "token ids must be embedded first "
                              "(token_embed) before '" +
                                  call.getCallee() + "'"),
           std::nullopt;
  return t;
}

std::optional<int> CallSite::matrix(const ExprPtr &e, llvm::StringRef what) {
  std::optional<int> t = s.evalTensor(*e, what);
  if (t && (s.typeOf(*t).isTokens || s.typeOf(*t).rank() != 2))
    return error(e->getLoc(), what + llvm::Twine(" must be a matrix, not ") +
                                  s.describe(*t)),
           std::nullopt;
  return t;
}

std::optional<double> CallSite::epsilon() {
  const OptionAST *opt = option("eps");
  std::optional<double> eps;
  if (opt)
    eps = s.evalFloat(*opt->value, "eps");
  else if (const Scalar *h = s.findHyperparameter("eps"))
    eps = h->asDouble();
  else
    return error(call.getLoc(), "'" + call.getCallee() +
                                    "' needs eps = ... (there is no "
                                    "hyperparameter 'eps' to default to)"),
           std::nullopt;
  if (eps && !(*eps >= 0))
    return error(opt ? opt->loc : call.getLoc(),
                 "eps must be a non-negative number, got " +
                     llvm::formatv("{0}", *eps).str()),
           std::nullopt;
  return eps;
}

std::optional<int64_t> CallSite::heads() {
  const OptionAST *opt = option("heads");
  if (!opt) {
    const Scalar *h = s.findHyperparameter("H");
    return h && !h->isFloat ? h->i : 1;
  }
  std::optional<int64_t> h = s.evalInt(*opt->value, "heads");
  if (h && *h < 1)
    return error(opt->loc, "heads must be at least 1"), std::nullopt;
  return h;
}

std::optional<llvm::StringRef>
CallSite::word(llvm::StringRef name,
               std::initializer_list<llvm::StringRef> words,
               llvm::StringRef fallback) {
  const OptionAST *opt = option(name);
  if (!opt && !fallback.empty())
    return fallback;
  auto *n = opt ? llvm::dyn_cast<NameExprAST>(opt->value.get()) : nullptr;
  if (n && llvm::is_contained(words, n->getName()))
    return n->getName();
  return error(opt ? opt->loc : call.getLoc(), "'" + call.getCallee() +
                                                   "' needs " + name + " = " +
                                                   llvm::join(words, " | ")),
         std::nullopt;
}

std::optional<MaskKind> CallSite::mask() {
  std::optional<llvm::StringRef> w =
      word("mask", {"bidirectional", "causal", "cross"}, "");
  if (!w)
    return std::nullopt;
  return llvm::StringSwitch<MaskKind>(*w)
      .Case("causal", MaskKind::Causal)
      .Case("cross", MaskKind::Cross)
      .Default(MaskKind::Bidirectional);
}

bool CallSite::scale(Node &n) {
  const OptionAST *opt = option("scale");
  if (!opt)
    return true;
  std::optional<double> v = s.evalFloat(*opt->value, "scale");
  if (!v)
    return false;
  if (!(*v > 0))
    return error(opt->loc, "scale must be positive");
  n.scale = *v;
  n.hasScale = true;
  return true;
}

Node CallSite::node(OpKind kind, llvm::ArrayRef<int> operands,
                    TensorType type) const {
  Node n;
  n.kind = kind;
  n.operands.assign(operands.begin(), operands.end());
  n.type = std::move(type);
  n.loc = call.getLoc();
  n.origin = "'" + call.getCallee().str() + "' at " + Elaborator::at(n.loc);
  return n;
}
