//===- Attention.cpp - attention (Alg. 4) and MHAttention (Alg. 5) --------===//
//
// `attention(Q, K, V, mask = ...)` on projected inputs and
// `mhattention(X [, Z] | W_q [b_q], W_k [b_k], W_v [b_v], W_o [b_o], ...)`.
// A bias follows the matrix it belongs to. Self-attention (no Z) takes mask
// bidirectional or causal; attending to a context Z takes mask cross.
// Llama-family options: `kv_heads = H_kv` (grouped-query attention: K and V
// have H_kv heads, query head h uses key/value head h / (H / H_kv)) and
// `rope = adjacent | halves [, rope_base = b]` (rotary positions on Q and K).
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

/// `kv_heads = H_kv`: at least 1 and dividing H; H when not given.
static std::optional<int64_t> keyValueHeads(CallSite &c, int64_t heads) {
  const OptionAST *opt = c.option("kv_heads");
  if (!opt)
    return heads;
  std::optional<int64_t> kv = c.s.evalInt(*opt->value, "kv_heads");
  if (kv && (*kv < 1 || heads % *kv != 0))
    return c.error(opt->loc, "kv_heads = " + llvm::Twine(*kv) +
                                 " must be at least 1 and divide heads = " +
                                 llvm::Twine(heads)),
           std::nullopt;
  return kv;
}

/// With H_kv key/value heads, `narrow` (K or V) must be H_kv/H times as wide
/// as `wide` (Q, or the heads' output): each key/value head is as wide as a
/// query head.
static bool checkGrouped(CallSite &c, int64_t heads, int64_t kvHeads, int wide,
                         unsigned wideAxis, int narrow, unsigned narrowAxis,
                         const char *what) {
  int64_t w = c.s.typeOf(wide).dims[wideAxis].size;
  int64_t n = c.s.typeOf(narrow).dims[narrowAxis].size;
  if (kvHeads != heads && w % heads != 0)
    return c.error(c.call.getLoc(), "heads = " + llvm::Twine(heads) +
                                        " does not divide the width " +
                                        llvm::Twine(w) + " of " +
                                        c.s.describe(wide));
  if (kvHeads == heads ? w == n : n * heads == w * kvHeads)
    return true;
  return c.s.mismatch(
      c.call.getLoc(),
      kvHeads == heads ? llvm::Twine(what) + " need the same width"
                       : llvm::Twine(what) +
                             " need widths in the ratio "
                             "kv_heads : heads = " +
                             llvm::Twine(kvHeads) + " : " + llvm::Twine(heads),
      wide, narrow);
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
  if (!c.arity(3, 3, 0, 0) ||
      !c.allowOptions({"mask", "heads", "kv_heads", "scale"}))
    return std::nullopt;
  MaybeNode q = c.matrix(c.call.getInputs()[0], "Q");
  MaybeNode k = q ? c.matrix(c.call.getInputs()[1], "K") : std::nullopt;
  MaybeNode v = k ? c.matrix(c.call.getInputs()[2], "V") : std::nullopt;
  std::optional<MaskKind> mask = v ? c.mask() : std::nullopt;
  std::optional<int64_t> heads = mask ? c.heads() : std::nullopt;
  std::optional<int64_t> kvHeads =
      heads ? keyValueHeads(c, *heads) : std::nullopt;
  if (!kvHeads)
    return std::nullopt;
  const TensorType &tq = c.s.typeOf(*q), &tk = c.s.typeOf(*k),
                   &tv = c.s.typeOf(*v);
  if (!tq.dims[1].size || !tv.dims[1].size)
    return c.error(c.call.getLoc(), "attention needs Q, K and V of static "
                                    "width [ℓ, H·d]"),
           std::nullopt;
  if (*kvHeads == *heads && tq.dims[1] != tk.dims[1])
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
      !checkHeads(c, *heads, *q, *kvHeads == *heads ? *v : *q) ||
      !checkGrouped(c, *heads, *kvHeads, *q, 1, *k, 1, "Q and K"))
    return std::nullopt;
  // The heads' output is as wide as V with all H heads: H·d_v.
  int64_t vWidth = tv.dims[1].size;
  if (*kvHeads != *heads && vWidth % *kvHeads != 0)
    return c.error(c.call.getLoc(), "kv_heads = " + llvm::Twine(*kvHeads) +
                                        " does not divide the width " +
                                        llvm::Twine(vWidth) + " of " +
                                        c.s.describe(*v)),
           std::nullopt;
  TensorType t;
  t.dims = {tq.dims[0], Dim{vWidth / *kvHeads * *heads, -1}};
  Node n = c.node(OpKind::Attention, {*q, *k, *v}, t);
  n.mask = *mask;
  n.heads = *heads;
  n.kvHeads = *kvHeads == *heads ? 0 : *kvHeads;
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

/// The shape rules of Alg. 5 in the row layout: x·W_q, z·W_k, z·W_v, ·W_o;
/// with H_kv < H key/value heads, W_k and W_v are H_kv/H as wide.
static bool checkProjections(CallSite &c, const Node &n, int64_t heads,
                             int64_t kvHeads) {
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
  for (const Rule &r : rules) {
    bool grouped = r.b == MhaWk || r.b == MhaWo;
    if (grouped && kvHeads != heads)
      continue; // checkGrouped below
    if (dim(r.a, r.axisA) != dim(r.b, r.axisB))
      return c.s.mismatch(c.call.getLoc(), r.what, n.operands[r.a],
                          n.operands[r.b]);
  }
  if (kvHeads == heads)
    return true;
  return checkGrouped(c, heads, kvHeads, n.operands[MhaWq], 1,
                      n.operands[MhaWk], 1, "W_q (H·d_k) and W_k (H_kv·d_k)") &&
         checkGrouped(c, heads, kvHeads, n.operands[MhaWo], 0,
                      n.operands[MhaWv], 1,
                      "W_o (H·d_v rows) and W_v (H_kv·d_v)");
}

/// `rope = adjacent | halves [, rope_base = b]`: rotary positions on the
/// heads of Q and K. Pairs need an even head width, and positions are those
/// of one sequence (self-attention).
static bool ropeOptions(CallSite &c, Node &n, int64_t heads) {
  const OptionAST *rope = c.option("rope"), *base = c.option("rope_base");
  if (!rope) {
    if (base)
      return c.error(base->loc, "rope_base needs rope = adjacent | halves");
    return true;
  }
  std::optional<llvm::StringRef> pairs =
      c.word("rope", {"adjacent", "halves"}, "");
  if (!pairs)
    return false;
  if (n.operands[MhaZ] >= 0)
    return c.error(rope->loc, "rope rotates queries and keys of one sequence "
                              "by their positions; it needs self-attention, "
                              "not mask = cross");
  int64_t width = c.s.typeOf(n.operands[MhaWq]).dims[1].size;
  if (width % (2 * heads) != 0)
    return c.error(rope->loc, "rope rotates pairs of features, but the "
                              "heads of W_q (" +
                                  llvm::Twine(width) + " columns, heads = " +
                                  llvm::Twine(heads) + ") have an odd width");
  n.rope = *pairs == "adjacent" ? RopePairing::Adjacent : RopePairing::Halves;
  n.base = 10000;
  if (base) {
    std::optional<double> b = c.s.evalFloat(*base->value, "rope_base");
    if (!b)
      return false;
    if (!(*b > 1))
      return c.error(base->loc, "rope_base must be greater than 1");
    n.base = *b;
  }
  return true;
}

MaybeNode xf::spec::buildMultiHeadAttention(CallSite &c) {
  if (!c.arity(1, 2, 0, SIZE_MAX) ||
      !c.allowOptions(
          {"mask", "heads", "kv_heads", "rope", "rope_base", "scale"}))
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
  std::optional<int64_t> kvHeads =
      heads ? keyValueHeads(c, *heads) : std::nullopt;
  if (!kvHeads || !bindWeights(c, n) ||
      !checkProjections(c, n, *heads, *kvHeads) ||
      !checkMask(c, *mask, n.operands[MhaZ] >= 0,
                 "this call has none (give it as the second input: X, Z)") ||
      !checkHeads(c, *heads, n.operands[MhaWq],
                  n.operands[*kvHeads == *heads ? MhaWv : MhaWq]) ||
      !ropeOptions(c, n, *heads) || !c.scale(n))
    return std::nullopt;
  n.mask = *mask;
  n.heads = *heads;
  n.kvHeads = *kvHeads == *heads ? 0 : *kvHeads;
  n.type.dims = {c.s.typeOf(n.operands[MhaX]).dims[0],
                 c.s.typeOf(n.operands[MhaWo]).dims[1]};
  return c.s.addNode(std::move(n));
}
