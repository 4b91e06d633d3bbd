//===- Builtins.cpp - the paper's primitives as calls ---------------------===//
//
// Each primitive states its usage, checks its shapes (the rules the xf
// verifiers enforce, reported here at the call with the spec's names) and
// adds one node. Callee names are case-insensitive: `MHAttention`, `GELU`.
//
//===----------------------------------------------------------------------===//

#include "CallSite.h"

#include "llvm/ADT/StringSwitch.h"

using namespace xf::spec;

using MaybeNode = std::optional<int>;

/// token_embed(x | W_e), pos_embed(x | W_p): one table row per token.
static MaybeNode embedding(CallSite &c, OpKind kind) {
  if (!c.arity(1, 1, 1, 1) || !c.allowOptions({}))
    return std::nullopt;
  MaybeNode tokens = c.s.evalTensor(*c.call.getInputs()[0], "the tokens");
  MaybeNode table =
      tokens ? c.matrix(c.call.getParams()[0], "the table") : std::nullopt;
  if (!table)
    return std::nullopt;
  if (!c.s.typeOf(*tokens).isTokens)
    return c.error(c.call.getInputs()[0]->getLoc(),
                   "'" + c.call.getCallee() + "' embeds token ids, not " +
                       c.s.describe(*tokens)),
           std::nullopt;
  TensorType t;
  t.dims = {c.s.typeOf(*tokens).dims[0], c.s.typeOf(*table).dims[1]};
  return c.s.addNode(c.node(kind, {*tokens, *table}, t));
}

static MaybeNode sinusoidal(CallSite &c) {
  if (!c.arity(1, 1, 0, 0) || !c.allowOptions({"width", "base"}))
    return std::nullopt;
  MaybeNode tokens = c.s.evalTensor(*c.call.getInputs()[0], "the tokens");
  if (!tokens)
    return std::nullopt;
  const OptionAST *width = c.option("width");
  if (!c.s.typeOf(*tokens).isTokens || !width)
    return c.error(c.call.getLoc(), "usage: " + c.usage), std::nullopt;
  std::optional<int64_t> d = c.s.evalInt(*width->value, "width");
  if (!d)
    return std::nullopt;
  if (*d < 2 || *d % 2 || *d > (int64_t(1) << 24))
    return c.error(width->loc, "the width of sinusoidal positions must be "
                               "even and positive, got " +
                                   llvm::Twine(*d)),
           std::nullopt;
  Node n = c.node(OpKind::Sinusoidal, {*tokens}, {});
  n.type.dims = {c.s.typeOf(*tokens).dims[0], Dim{*d, -1}};
  n.base = 10000;
  if (const OptionAST *base = c.option("base")) {
    std::optional<double> b = c.s.evalFloat(*base->value, "base");
    if (!b || !(*b > 1))
      return b            ? c.error(base->loc, "base must be greater than 1"),
             std::nullopt : std::nullopt;
    n.base = *b;
  }
  return c.s.addNode(std::move(n));
}

/// layer_norm(X | γ, β), layer_norm(X), rms_norm(X | γ), rms_norm(X).
static MaybeNode normalization(CallSite &c, OpKind kind) {
  size_t maxParams = kind == OpKind::LayerNorm ? 2 : 1;
  if (!c.arity(1, 1, 0, maxParams) || !c.allowOptions({"eps"}))
    return std::nullopt;
  if (kind == OpKind::LayerNorm && c.call.getParams().size() == 1)
    return c.error(c.call.getLoc(), "layer_norm takes γ and β together, or "
                                    "neither"),
           std::nullopt;
  MaybeNode x = c.input(0);
  std::optional<double> eps = x ? c.epsilon() : std::nullopt;
  if (!eps)
    return std::nullopt;
  Node n = c.node(kind, {*x, -1, -1}, c.s.typeOf(*x));
  n.epsilon = *eps;
  Dim width = c.s.typeOf(*x).dims.back(); // a copy: evaluating γ adds nodes
  for (size_t i = 0; i < c.call.getParams().size(); ++i) {
    MaybeNode p = c.param(i);
    if (!p)
      return std::nullopt;
    const TensorType &t = c.s.typeOf(*p);
    if (t.rank() != 1 || t.dims[0] != width)
      return c.s.mismatch(c.call.getParams()[i]->getLoc(),
                          i ? "β must be as wide as the rows it shifts"
                            : "γ must be as wide as the rows it scales",
                          *p, *x),
             std::nullopt;
    n.operands[1 + i] = *p;
  }
  if (kind == OpKind::RmsNorm)
    n.operands.pop_back();
  return c.s.addNode(std::move(n));
}

/// relu(X), silu(X), softmax(X), gelu(X, approx = erf | tanh).
static MaybeNode elementwise(CallSite &c, OpKind kind) {
  bool isGelu = kind == OpKind::Gelu;
  if (!c.arity(1, 1, 0, 0) ||
      !c.allowOptions(isGelu ? std::initializer_list<llvm::StringRef>{"approx"}
                             : std::initializer_list<llvm::StringRef>{}))
    return std::nullopt;
  MaybeNode x = c.input(0);
  if (!x)
    return std::nullopt;
  Node n = c.node(kind, {*x}, c.s.typeOf(*x));
  if (isGelu) {
    std::optional<llvm::StringRef> form =
        c.word("approx", {"erf", "tanh"}, "erf");
    if (!form)
      return std::nullopt;
    n.geluTanh = *form == "tanh";
  }
  return c.s.addNode(std::move(n));
}

/// unembed(X | W_u), W_u : [d_e, N_V]; tied: unembed(X | W_eᵀ).
static MaybeNode unembed(CallSite &c) {
  if (!c.arity(1, 1, 1, 1) || !c.allowOptions({}))
    return std::nullopt;
  MaybeNode x = c.matrix(c.call.getInputs()[0], "the input");
  MaybeNode w = x ? c.matrix(c.call.getParams()[0], "the unembedding matrix")
                  : std::nullopt;
  if (!w)
    return std::nullopt;
  const TensorType &tx = c.s.typeOf(*x), &tw = c.s.typeOf(*w);
  if (!tw.isStatic() || tx.dims[1] != tw.dims[0])
    return c.s.mismatch(c.call.getLoc(),
                        "unembed needs W_u : [d_e, N_V] with d_e the width "
                        "of its input (tied: W_eᵀ)",
                        *x, *w),
           std::nullopt;
  TensorType t;
  t.dims = {tx.dims[0], tw.dims[1]};
  return c.s.addNode(c.node(OpKind::Unembed, {*x, *w}, t));
}

/// concat(A, B, ..., axis = k) or concat(W[l, h] for h in 1..H, axis = k).
static MaybeNode concat(CallSite &c) {
  if (!c.arity(1, SIZE_MAX, 0, 0) || !c.allowOptions({"axis"}))
    return std::nullopt;
  const OptionAST *axisOpt = c.option("axis");
  if (!axisOpt)
    return c.error(c.call.getLoc(), "concat needs axis = 0 or axis = 1"),
           std::nullopt;
  std::optional<int64_t> axis = c.s.evalInt(*axisOpt->value, "axis");
  if (!axis)
    return std::nullopt;
  llvm::SmallVector<int> parts;
  for (const ExprPtr &arg : c.call.getInputs()) {
    auto *each = llvm::dyn_cast<ComprehensionExprAST>(arg.get());
    if (!each) {
      MaybeNode part = c.input(&arg - c.call.getInputs().data());
      if (!part)
        return std::nullopt;
      parts.push_back(*part);
      continue;
    }
    if (c.s.isGlobalName(each->getVar()) || c.s.findLoopVar(each->getVar()))
      return c.error(each->getLoc(), "loop variable '" + each->getVar() +
                                         "' is already a name in scope"),
             std::nullopt;
    std::optional<LoopRange> range =
        c.s.evalRange(each->getRange(), each->getVar(), each->getLoc());
    if (!range)
      return std::nullopt;
    for (int64_t i = range->lo; i <= range->hi; ++i) {
      c.s.loopVars.emplace_back(each->getVar().str(), i);
      MaybeNode part = c.s.evalTensor(each->getBody(), "a concatenated part");
      c.s.loopVars.pop_back();
      if (!part)
        return std::nullopt;
      parts.push_back(*part);
    }
  }
  return c.s.makeConcat(parts, *axis, c.call.getLoc());
}

/// The primitives by name, with the usage their diagnostics quote.
MaybeValue Elaborator::evalCall(const CallExprAST &call) {
  using Rule = MaybeNode (*)(CallSite &);
  struct Primitive {
    const char *name, *usage;
    Rule rule;
  };
  static const Primitive primitives[] = {
      {"token_embed", "token_embed(x | W_e)",
       [](CallSite &c) { return embedding(c, OpKind::TokenEmbed); }},
      {"pos_embed", "pos_embed(x | W_p)",
       [](CallSite &c) { return embedding(c, OpKind::PosEmbed); }},
      {"sinusoidal_embed", "sinusoidal_embed(x, width = d_e [, base = 10000])",
       sinusoidal},
      {"layer_norm", "layer_norm(X | γ, β [, eps = ε]) or layer_norm(X)",
       [](CallSite &c) { return normalization(c, OpKind::LayerNorm); }},
      {"rms_norm", "rms_norm(X | γ [, eps = ε]) or rms_norm(X)",
       [](CallSite &c) { return normalization(c, OpKind::RmsNorm); }},
      {"relu", "relu(X)",
       [](CallSite &c) { return elementwise(c, OpKind::Relu); }},
      {"gelu", "gelu(X [, approx = erf | tanh])",
       [](CallSite &c) { return elementwise(c, OpKind::Gelu); }},
      {"silu", "silu(X)",
       [](CallSite &c) { return elementwise(c, OpKind::Silu); }},
      {"softmax", "softmax(X)",
       [](CallSite &c) { return elementwise(c, OpKind::Softmax); }},
      {"attention",
       "attention(Q, K, V, mask = bidirectional | causal | cross [, heads = "
       "H, kv_heads = H_kv, scale = s])",
       buildAttention},
      {"mhattention",
       "mhattention(X [, Z] | W_q [, b_q], W_k [, b_k], W_v [, b_v], W_o "
       "[, b_o], mask = bidirectional | causal | cross [, heads = H, "
       "kv_heads = H_kv, rope = adjacent | halves, rope_base = b, scale = "
       "s])",
       buildMultiHeadAttention},
      {"unembed", "unembed(X | W_u) or, tied, unembed(X | W_eᵀ)", unembed},
      {"concat",
       "concat(A, B, ..., axis = k) or concat(W[h] for h in 1..H, "
       "axis = k)",
       concat},
  };
  std::string callee = call.getCallee().lower();
  if (callee == "length")
    return evalLength(call);
  for (const Primitive &p : primitives) {
    if (callee != p.name)
      continue;
    CallSite site(*this, call, p.usage);
    MaybeNode n = p.rule(site);
    if (n)
      return Value::ofTensor(*n);
    // The call failed on one argument (or its arity, or an option): the
    // arguments it did not reach may hold independent mistakes, reported
    // too. One already reported at its place is not repeated.
    for (llvm::ArrayRef<ExprPtr> args : {call.getInputs(), call.getParams()})
      for (const ExprPtr &arg : args)
        if (!evaluated.contains(arg.get()) && !llvm::isa<ComprehensionExprAST>(arg.get()))
          (void)eval(*arg);
    return std::nullopt;
  }
  std::string closest;
  unsigned best = 3;
  for (const Primitive &p : primitives)
    if (unsigned d = llvm::StringRef(callee).edit_distance(p.name); d < best)
      best = d, closest = p.name;
  return error(
             call.getLoc(),
             "unknown function '" + call.getCallee() + "'" +
                 (closest.empty() ? "" : " (did you mean '" + closest + "'?)")),
         std::nullopt;
}
