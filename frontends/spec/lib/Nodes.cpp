//===- Nodes.cpp - typed graph construction and shape diagnostics ---------===//
//
// Every node is built through one of these helpers, which state the shape
// rule of the operation and, when it fails, name both shapes and where each
// came from. Transposes are pushed towards the parameters they read, so that
// MLIRGen can fold them into `transpose_weight(s)` / `tied` attributes.
//
//===----------------------------------------------------------------------===//

#include "Elaborator.h"

#include <cmath>

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace xf::spec;

bool TensorType::isStatic() const {
  return llvm::none_of(dims, [](const Dim &d) { return d.isSequence(); });
}

std::string xf::spec::formatType(const TensorType &type,
                                 llvm::ArrayRef<std::string> inputNames) {
  std::string s = type.isTokens ? "tokens [" : "[";
  for (auto [i, d] : llvm::enumerate(type.dims)) {
    if (i)
      s += ", ";
    if (!d.isSequence())
      s += std::to_string(d.size);
    else if (size_t(d.seq) < inputNames.size())
      s += "ℓ_" + inputNames[d.seq];
    else
      s += "ℓ";
  }
  return s + "]";
}

std::string Elaborator::at(const Location &loc) {
  return (loc.file ? *loc.file : std::string("<input>")) + ":" +
         std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

std::string Elaborator::format(const TensorType &type) const {
  return formatType(type, graph.inputNames);
}

std::string Elaborator::describe(int id) const {
  return format(typeOf(id)) + " (" + node(id).origin + ")";
}

bool Elaborator::error(const Location &loc, const llvm::Twine &message) {
  diags.error(loc, message);
  return false;
}

bool Elaborator::mismatch(const Location &loc, const llvm::Twine &what, int a,
                          int b) {
  return error(loc, what + ": " + describe(a) + " and " + describe(b));
}

std::optional<int> Elaborator::addNode(Node n) {
  if (graph.nodes.size() >= options.maxNodes)
    return error(n.loc, "the unrolled algorithm has more than " +
                            llvm::Twine(options.maxNodes) + " operations"),
           std::nullopt;
  graph.nodes.push_back(std::move(n));
  return int(graph.nodes.size() - 1);
}

bool Elaborator::checkElementCount(const TensorType &type, const Location &loc,
                                   const llvm::Twine &what) {
  int64_t count = 1;
  for (const Dim &d : type.dims) {
    if (d.isSequence())
      continue;
    std::optional<int64_t> next = llvm::checkedMul(count, d.size);
    if (!next || *next > options.maxTensorElements)
      return error(loc, what + " " + format(type) +
                            " has more elements than the 2^31 one tensor "
                            "may hold");
    count = *next;
  }
  return true;
}

/// A node of `kind` over `operands`, located and named after the op.
static Node makeOp(OpKind kind, llvm::ArrayRef<int> operands, TensorType type,
                   const Location &loc, llvm::StringRef what) {
  Node n;
  n.kind = kind;
  n.operands.assign(operands.begin(), operands.end());
  n.type = std::move(type);
  n.loc = loc;
  n.origin = ("'" + what + "' at ").str() +
             (loc.file ? *loc.file : std::string("<input>")) + ":" +
             std::to_string(loc.line) + ":" + std::to_string(loc.col);
  return n;
}

std::optional<int> Elaborator::makeTranspose(int a, const Location &loc) {
  const TensorType &type = typeOf(a);
  if (type.isTokens || type.rank() != 2)
    return error(loc, "only a matrix can be transposed, not " + describe(a)),
           std::nullopt;
  if (node(a).kind == OpKind::Transpose)
    return node(a).operands[0];
  TensorType t = type;
  std::swap(t.dims[0], t.dims[1]);
  return addNode(makeOp(OpKind::Transpose, {a}, t, loc, "ᵀ"));
}

/// Whether `id` is `A · W` with W a weight (static): an xf.linear to be.
static bool isProjection(const Graph &graph, int id) {
  const Node &n = graph.nodes[id];
  return n.kind == OpKind::MatMul && graph.nodes[n.operands[1]].type.isStatic();
}

std::optional<int> Elaborator::makeAdd(int a, int b, const Location &loc) {
  if (typeOf(a).isTokens || typeOf(b).isTokens)
    return error(loc, "token ids cannot be added; embed them first "
                      "(token_embed)"),
           std::nullopt;
  if (typeOf(a).rank() == 1 && typeOf(b).rank() == 2)
    std::swap(a, b); // a bias on the left is still added to every row
  const TensorType &ta = typeOf(a), &tb = typeOf(b);
  bool isBias = tb.rank() == 1 && ta.rank() == 2;
  if (isBias ? tb.dims[0] != ta.dims[1] : tb != ta)
    return mismatch(loc,
                    isBias ? "a bias must be as wide as the rows it is "
                             "added to"
                           : "'+' needs equal shapes (or a bias vector)",
                    a, b),
           std::nullopt;
  // `X + A·W + b` parses as `(X + A·W) + b`; add the bias to its product
  // instead, so that `A·W + b` becomes one xf.linear.
  const Node &lhs = node(a);
  if (isBias && lhs.kind == OpKind::Add && size_t(a) >= statementStart &&
      isProjection(graph, lhs.operands[1])) {
    int residual = lhs.operands[0], product = lhs.operands[1];
    std::optional<int> biased = makeAdd(product, b, loc);
    return biased ? makeAdd(residual, *biased, loc) : std::nullopt;
  }
  return addNode(makeOp(OpKind::Add, {a, b}, ta, loc, "+"));
}

std::optional<int> Elaborator::makeMatMul(int a, int b, const Location &loc) {
  const TensorType &ta = typeOf(a), &tb = typeOf(b);
  if (ta.isTokens || tb.isTokens || ta.rank() != 2 || tb.rank() != 2)
    return mismatch(loc, "a matrix product needs two matrices", a, b),
           std::nullopt;
  if (ta.dims[1] != tb.dims[0])
    return mismatch(loc,
                    "a matrix product needs the columns of the left "
                    "side to match the rows of the right side",
                    a, b),
           std::nullopt;
  TensorType t;
  t.dims = {ta.dims[0], tb.dims[1]};
  return addNode(makeOp(OpKind::MatMul, {a, b}, t, loc, "·"));
}

/// `A ⊙ B`: the elementwise product of two activations of one shape (the
/// gate of SwiGLU). Weights are not multiplied elementwise: that would be a
/// weight computed from weights, which the checkpoint should hold instead.
std::optional<int> Elaborator::makeHadamard(int a, int b, const Location &loc) {
  const TensorType &ta = typeOf(a), &tb = typeOf(b);
  if (ta.isTokens || tb.isTokens)
    return error(loc, "token ids cannot be multiplied; embed them first "
                      "(token_embed)"),
           std::nullopt;
  if (ta != tb || ta.rank() != 2)
    return mismatch(loc, "'⊙' needs two matrices of one shape", a, b),
           std::nullopt;
  if (ta.isStatic())
    return mismatch(loc, "'⊙' multiplies activations [ℓ, d], not weights", a,
                    b),
           std::nullopt;
  return addNode(makeOp(OpKind::Hadamard, {a, b}, ta, loc, "⊙"));
}

std::optional<int> Elaborator::makeScale(int a, double factor,
                                         const Location &loc, int multiplier) {
  const TensorType &type = typeOf(a);
  if (type.isTokens)
    return error(loc,
                 "token ids cannot be scaled; embed them first (token_embed)"),
           std::nullopt;
  if (type.isStatic() || type.rank() != 2)
    return error(loc, "a number scales activations [ℓ, d], not " + describe(a) +
                          "; a scaled weight belongs in the checkpoint"),
           std::nullopt;
  if (!std::isfinite(factor))
    return error(loc, "the scale factor is not a finite number"), std::nullopt;
  Node n = makeOp(OpKind::Scale, {a}, type, loc, "scaling");
  if (multiplier >= 0)
    n.operands.push_back(multiplier);
  n.scale = factor;
  return addNode(std::move(n));
}

std::optional<int> Elaborator::makeSlice(int a, int64_t axis, int64_t lo,
                                         int64_t hi, const Location &loc) {
  const TensorType &type = typeOf(a);
  int64_t extent = type.dims[axis].size;
  if (lo < 0 || hi <= lo || hi > extent)
    return error(loc, "slice " + llvm::Twine(lo) + ":" + llvm::Twine(hi) +
                          " is outside axis " + llvm::Twine(axis) + " of " +
                          describe(a) + ", which has " + llvm::Twine(extent)),
           std::nullopt;
  // Wᵀ[:, lo:hi] is (W[lo:hi, :])ᵀ: keep transposes next to parameters.
  if (node(a).kind == OpKind::Transpose) {
    std::optional<int> inner =
        makeSlice(node(a).operands[0], 1 - axis, lo, hi, loc);
    return inner ? makeTranspose(*inner, loc) : std::nullopt;
  }
  TensorType t = type;
  t.dims[axis].size = hi - lo;
  Node n = makeOp(OpKind::Slice, {a}, t, loc, "slice");
  n.axis = axis;
  n.offset = lo;
  return addNode(std::move(n));
}

std::optional<int> Elaborator::makeRow(int a, int64_t row,
                                       const Location &loc) {
  const TensorType &type = typeOf(a);
  if (type.dims[0].isSequence())
    return error(loc, "cannot take a row of an activation " + describe(a)),
           std::nullopt;
  if (row < 0 || row >= type.dims[0].size)
    return error(loc, "row " + llvm::Twine(row) + " is outside " + describe(a) +
                          " (rows count from 0)"),
           std::nullopt;
  TensorType t;
  t.dims = {type.dims[1]};
  Node n = makeOp(OpKind::Row, {a}, t, loc, "row");
  n.offset = row;
  return addNode(std::move(n));
}

std::optional<int> Elaborator::makeConcat(llvm::ArrayRef<int> parts,
                                          int64_t axis, const Location &loc) {
  if (parts.empty())
    return error(loc, "concat needs at least one tensor"), std::nullopt;
  TensorType t = typeOf(parts[0]);
  if (t.isTokens || axis < 0 || axis >= int64_t(t.rank()))
    return error(loc, "axis " + llvm::Twine(axis) + " is not an axis of " +
                          describe(parts[0])),
           std::nullopt;
  for (int part : parts.drop_front()) {
    const TensorType &p = typeOf(part);
    bool fits = p.rank() == t.rank() && !p.isTokens;
    for (unsigned d = 0; fits && d < t.rank(); ++d)
      fits = d == axis || p.dims[d] == t.dims[d];
    if (!fits)
      return mismatch(loc,
                      "concat along axis " + llvm::Twine(axis) +
                          " needs the other axes to match",
                      parts[0], part),
             std::nullopt;
    if (p.dims[axis].isSequence() || t.dims[axis].isSequence())
      return error(loc, "cannot concatenate along a sequence axis"),
             std::nullopt;
    t.dims[axis].size += p.dims[axis].size;
  }
  if (!checkElementCount(t, loc, "the concatenation"))
    return std::nullopt;
  // concat(W_iᵀ, axis) is concat(W_i, other axis)ᵀ.
  bool allTransposed = t.rank() == 2 && llvm::all_of(parts, [&](int p) {
                         return node(p).kind == OpKind::Transpose;
                       });
  if (allTransposed) {
    llvm::SmallVector<int> inner;
    for (int p : parts)
      inner.push_back(node(p).operands[0]);
    std::optional<int> c = makeConcat(inner, 1 - axis, loc);
    return c ? makeTranspose(*c, loc) : std::nullopt;
  }
  Node n = makeOp(OpKind::Concat, parts, t, loc, "concat");
  n.axis = axis;
  return addNode(std::move(n));
}
