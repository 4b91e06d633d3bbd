//===- Attention.cpp - attention (Alg. 4) and MHAttention (Alg. 5) --------===//
//
// `attention(Q, K, V, mask = ...)` on projected inputs and
// `mhattention(X [, Z] | W_q [b_q], W_k [b_k], W_v [b_v], W_o [b_o], ...)`.
// A bias follows the matrix it belongs to. Self-attention (no Z) takes mask
// bidirectional or causal; attending to a context Z takes mask cross.
//
//===----------------------------------------------------------------------===//

#include "CallSite.h"

using namespace xf::spec;

using MaybeNode = std::optional<int>;

/// Whether `mask` fits attending from `query` rows to `context` rows.
static bool checkMask(CallSite &c, MaskKind mask, bool hasContext,
                      llvm::StringRef missingContext) {
  if (mask == MaskKind::Cross && !hasContext)
    return c.error(c.option("mask")->loc,
                   "mask = cross attends to a context sequence, but " +
                       missingContext);
  if (mask != MaskKind::Cross && hasContext)
    return c.error(c.option("mask")->loc,
                   "a context sequence needs mask = cross; bidirectional and "
                   "causal are masks of self-attention");
  return true;
}

/// `heads` must split the query/key width and the value width evenly.
static bool checkHeads(CallSite &c, int64_t heads, int qk, int v) {
  for (int w : {qk, v}) {
    int64_t width = c.s.typeOf(w).dims[1].size;
    if (width % heads)
      return c.error(c.call.getLoc(), "heads = " + llvm::Twine(heads) +
                                          " does not divide the width " +
                                          llvm::Twine(width) + " of " +
                                          c.s.describe(w));
  }
  return true;
}

MaybeNode xf::spec::buildAttention(CallSite &c) {
  if (!c.arity(3, 3, 0, 0) || !c.allowOptions({"mask", "heads", "scale"}))
    return std::nullopt;
  MaybeNode q = c.matrix(c.call.getInputs()[0], "Q");
  MaybeNode k = q ? c.matrix(c.call.getInputs()[1], "K") : std::nullopt;
  MaybeNode v = k ? c.matrix(c.call.getInputs()[2], "V") : std::nullopt;
  std::optional<MaskKind> mask = v ? c.mask() : std::nullopt;
  std::optional<int64_t> heads = mask ? c.heads() : std::nullopt;
  if (!heads)
    return std::nullopt;
  const TensorType &tq = c.s.typeOf(*q), &tk = c.s.typeOf(*k),
                   &tv = c.s.typeOf(*v);
  if (!tq.dims[1].size || !tv.dims[1].size)
    return c.error(c.call.getLoc(), "attention needs Q, K and V of static "
                                    "width [ℓ, H·d]"),
           std::nullopt;
  if (tq.dims[1] != tk.dims[1])
    return c.s.mismatch(c.call.getLoc(), "Q and K need the same width H·d_k",
                        *q, *k),
           std::nullopt;
  if (tk.dims[0] != tv.dims[0])
    return c.s.mismatch(c.call.getLoc(),
                        "K and V need one row per context "
                        "token",
                        *k, *v),
           std::nullopt;
  if (!checkMask(c, *mask, tk.dims[0] != tq.dims[0],
                 "K and V come from the sequence of Q") ||
      !checkHeads(c, *heads, *q, *v))
    return std::nullopt;
  TensorType t;
  t.dims = {tq.dims[0], tv.dims[1]};
  Node n = c.node(OpKind::Attention, {*q, *k, *v}, t);
  n.mask = *mask;
  n.heads = *heads;
  if (!c.scale(n))
    return std::nullopt;
  return c.s.addNode(std::move(n));
}

/// Groups `W [b], W [b], ...` by rank into the operand slots of MHA.
static bool bindWeights(CallSite &c, Node &n) {
  static const int slots[] = {MhaWq, MhaWk, MhaWv, MhaWo};
  static const char *names[] = {"W_q", "W_k", "W_v", "W_o"};
  unsigned matrices = 0;
  for (const ExprPtr &e : c.call.getParams()) {
    MaybeNode p = c.tensor(e, "a weight");
    if (!p)
      return false;
    const TensorType &t = c.s.typeOf(*p);
    if (!t.isStatic() || (t.rank() != 1 && t.rank() != 2))
      return c.error(e->getLoc(), "attention weights are matrices and bias "
                                  "vectors, not " +
                                      c.s.describe(*p));
    if (t.rank() == 2 && matrices == 4)
      return c.error(e->getLoc(), "mhattention takes four matrices: W_q, "
                                  "W_k, W_v, W_o");
    if (t.rank() == 2) {
      n.operands[slots[matrices++]] = *p;
      continue;
    }
    if (matrices == 0 || n.operands[slots[matrices - 1] + 1] >= 0)
      return c.error(e->getLoc(), "a bias must follow its matrix (W_q, b_q, "
                                  "W_k, b_k, ...)");
    int w = n.operands[slots[matrices - 1]];
    if (t.dims[0] != c.s.typeOf(w).dims[1])
      return c.s.mismatch(e->getLoc(),
                          "the bias of " + llvm::Twine(names[matrices - 1]) +
                              " must be as wide as its output",
                          *p, w);
    n.operands[slots[matrices - 1] + 1] = *p;
  }
  if (matrices != 4)
    return c.error(c.call.getLoc(), "mhattention takes four matrices after "
                                    "'|': W_q, W_k, W_v, W_o (each may be "
                                    "followed by its bias)");
  return true;
}

/// The shape rules of Alg. 5 in the row layout: x·W_q, z·W_k, z·W_v, ·W_o.
static bool checkProjections(CallSite &c, const Node &n) {
  auto dim = [&](int slot, unsigned axis) {
    return c.s.typeOf(n.operands[slot]).dims[axis];
  };
  int z = n.operands[MhaZ] >= 0 ? MhaZ : MhaX;
  struct Rule {
    int a;
    unsigned axisA;
    int b;
    unsigned axisB;
    const char *what;
  } rules[] = {
      {MhaX, 1, MhaWq, 0, "W_q needs one row per column of X"},
      {z, 1, MhaWk, 0, "W_k needs one row per column of the context"},
      {z, 1, MhaWv, 0, "W_v needs one row per column of the context"},
      {MhaWq, 1, MhaWk, 1, "W_q and W_k need the same width H·d_k"},
      {MhaWv, 1, MhaWo, 0, "W_o needs one row per column of W_v (H·d_v)"},
  };
  for (const Rule &r : rules)
    if (dim(r.a, r.axisA) != dim(r.b, r.axisB))
      return c.s.mismatch(c.call.getLoc(), r.what, n.operands[r.a],
                          n.operands[r.b]);
  return true;
}

MaybeNode xf::spec::buildMultiHeadAttention(CallSite &c) {
  if (!c.arity(1, 2, 0, SIZE_MAX) ||
      !c.allowOptions({"mask", "heads", "scale"}))
    return std::nullopt;
  Node n = c.node(OpKind::MultiHeadAttention, {}, {});
  n.operands.assign(MhaNumOperands, -1);
  for (size_t i = 0; i < c.call.getInputs().size(); ++i) {
    MaybeNode x = c.matrix(c.call.getInputs()[i], i ? "the context Z" : "X");
    if (!x)
      return std::nullopt;
    n.operands[i ? MhaZ : MhaX] = *x;
  }
  std::optional<MaskKind> mask = c.mask();
  std::optional<int64_t> heads = mask ? c.heads() : std::nullopt;
  if (!heads || !bindWeights(c, n) || !checkProjections(c, n) ||
      !checkMask(c, *mask, n.operands[MhaZ] >= 0,
                 "this call has none (give it as the second input: X, Z)") ||
      !checkHeads(c, *heads, n.operands[MhaWq], n.operands[MhaWv]) ||
      !c.scale(n))
    return std::nullopt;
  n.mask = *mask;
  n.heads = *heads;
  n.type.dims = {c.s.typeOf(n.operands[MhaX]).dims[0],
                 c.s.typeOf(n.operands[MhaWo]).dims[1]};
  return c.s.addNode(std::move(n));
}
