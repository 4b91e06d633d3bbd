//===- XfOps.cpp - xf operations and their shape rules --------------------===//
//
// Each verifier states the shape rule of its algorithm box. Dimensions that
// are dynamic (`?`, usually the sequence length) are checked when the shape is
// known at run time, by the runtime.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "XfShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <tuple>

using namespace mlir;
using namespace mlir::xf;

#include "xf/IR/XfEnums.cpp.inc"

#define GET_OP_CLASSES
#include "xf/IR/XfOps.cpp.inc"

namespace {
/// The (d_in, d_out) view of a weight matrix that may be stored transposed.
struct WeightDims {
  DimRef in, out;
};
WeightDims weightDims(llvm::StringRef name, Value weight, bool transposed) {
  Type t = weight.getType();
  return transposed ? WeightDims{{name, t, 1}, {name, t, 0}}
                    : WeightDims{{name, t, 0}, {name, t, 1}};
}

/// `n` must be a multiple of `heads` (skipped while dynamic).
LogicalResult expectDivisibleByHeads(Operation *op, llvm::StringRef what,
                                     DimRef d, int64_t heads) {
  int64_t n = d.size();
  if (ShapedType::isDynamic(n) || n % heads == 0)
    return success();
  return op->emitOpError() << what << ": " << d.operand << " "
                           << formatShape(d.type) << " has " << n
                           << " on axis " << d.axis
                           << ", which is not divisible by heads = " << heads;
}

LogicalResult expectVectorOf(Operation *op, llvm::StringRef what, Value vec,
                             llvm::StringRef vecName, DimRef target) {
  if (!vec)
    return success();
  return expectSameDim(op, what, {vecName, vec.getType(), 0}, target);
}

LogicalResult verifyPositiveScale(Operation *op, std::optional<llvm::APFloat> scale) {
  if (scale && !(scale->convertToDouble() > 0.0))
    return op->emitOpError() << "scale must be positive, got "
                             << scale->convertToDouble();
  return success();
}

/// Rows of an `[ℓ, d]` result follow the rows of the operand that carries ℓ.
LogicalResult expectRowsFollow(Operation *op, Value from, llvm::StringRef fromName) {
  return expectSameDim(op, "sequence length", {"result", op->getResult(0).getType(), 0},
                       {fromName, from.getType(), 0});
}
} // namespace

//===----------------------------------------------------------------------===//
// Parameters and data movement
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty checkpoint tensor name");
  if (!getType().hasStaticShape())
    return emitOpError() << "'" << getName()
                         << "' must have a static shape, got "
                         << formatShape(getType());
  return success();
}

LogicalResult TransposeOp::verify() {
  Type in = getInput().getType(), out = getType();
  if (failed(expectSameDim(*this, "transpose", {"result", out, 0}, {"input", in, 1})) ||
      failed(expectSameDim(*this, "transpose", {"result", out, 1}, {"input", in, 0})))
    return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto resultType = getType();
  int64_t rank = resultType.getRank();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for result "
                         << formatShape(resultType);
  int64_t total = 0;
  bool totalKnown = true;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = llvm::cast<RankedTensorType>(input.getType());
    std::string name = "input #" + std::to_string(i);
    if (type.getRank() != rank)
      return emitOpError() << name << " " << formatShape(type)
                           << " has rank " << type.getRank()
                           << " but the result " << formatShape(resultType)
                           << " has rank " << rank;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && failed(expectSameDim(*this, "concat", {name, type, unsigned(d)},
                                            {"result", resultType, unsigned(d)})))
        return failure();
    if (type.isDynamicDim(axis))
      totalKnown = false;
    else
      total += type.getDimSize(axis);
  }
  if (totalKnown && !resultType.isDynamicDim(axis) &&
      resultType.getDimSize(axis) != total)
    return emitOpError() << "inputs add up to " << total << " on axis " << axis
                         << " but the result " << formatShape(resultType)
                         << " has " << resultType.getDimSize(axis);
  return verifySameFloatElementType(*this);
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType();
  auto out = getType();
  int64_t axis = getAxis(), offset = getOffset();
  if (in.getRank() != out.getRank())
    return emitOpError() << "result " << formatShape(out)
                         << " must have the rank of input " << formatShape(in);
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range for input "
                         << formatShape(in);
  int64_t size = out.getDimSize(axis), extent = in.getDimSize(axis);
  if (ShapedType::isDynamic(size))
    return emitOpError() << "needs a static slice size on axis " << axis
                         << ", got result " << formatShape(out);
  if (offset < 0 || (!ShapedType::isDynamic(extent) && offset + size > extent))
    return emitOpError() << "slice [" << offset << ", " << offset + size
                         << ") on axis " << axis << " is outside input "
                         << formatShape(in);
  for (unsigned d = 0; d < in.getRank(); ++d)
    if (d != axis && failed(expectSameDim(*this, "slice", {"result", out, d},
                                          {"input", in, d})))
      return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult RowOp::verify() {
  auto in = getInput().getType();
  int64_t rows = in.getDimSize(0);
  if (getIndex() < 0 || (!ShapedType::isDynamic(rows) && getIndex() >= rows))
    return emitOpError() << "row " << getIndex() << " is outside input "
                         << formatShape(in);
  if (failed(expectSameDim(*this, "row width", {"result", getType(), 0}, {"input", in, 1})))
    return failure();
  return verifySameFloatElementType(*this);
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

LogicalResult TokenEmbedOp::verify() {
  if (failed(expectRowsFollow(*this, getTokens(), "tokens")) ||
      failed(expectSameDim(*this, "d_e", {"result", getType(), 1},
                           {"table", getTable().getType(), 1})))
    return failure();
  return verifySameFloatElementType(*this);
}

/// A packed batch's positions: `segments` restarts them at each sequence,
/// `offset` shifts them for one sequence; an op takes one or the other.
static LogicalResult verifyPositionsFrom(Operation *op, Value offset, Value segments) {
  if (offset && segments)
    return op->emitOpError("takes an offset or segments, not both (a packed batch's positions "
                           "start at 0 in every sequence)");
  return success();
}

/// `key_segments` belong to cross attention (the context's own sequences);
/// segmented cross attention needs them, self-attention reuses `segments`.
static LogicalResult verifyAttentionSegments(Operation *op, MaskKind mask, Value segments,
                                             Value keySegments) {
  if (keySegments && !segments)
    return op->emitOpError("key_segments needs segments (the queries' sequence lengths)");
  if (keySegments && mask != MaskKind::cross)
    return op->emitOpError() << "key_segments are for cross attention; " << stringifyMaskKind(mask)
                             << " self-attention's keys have the queries' segments";
  if (segments && !keySegments && mask == MaskKind::cross)
    return op->emitOpError("segmented cross attention needs key_segments (the context's sequence "
                           "lengths)");
  return success();
}

LogicalResult PositionalEmbedOp::verify() {
  if (failed(expectRowsFollow(*this, getTokens(), "tokens")) ||
      failed(expectSameDim(*this, "d_e", {"result", getType(), 1},
                           {"table", getTable().getType(), 1})) ||
      failed(verifyPositionsFrom(*this, getOffset(), getSegments())))
    return failure();
  int64_t len = getTokens().getType().getDimSize(0);
  int64_t maxLen = getTable().getType().getDimSize(0);
  if (!getOffset() && !getSegments() && !ShapedType::isDynamic(len) &&
      !ShapedType::isDynamic(maxLen) && len > maxLen)
    return emitOpError() << len << " tokens do not fit the positional table "
                         << formatShape(getTable().getType())
                         << " (ℓ_max = " << maxLen << ")";
  return verifySameFloatElementType(*this);
}

LogicalResult SinusoidalEmbedOp::verify() {
  if (failed(expectRowsFollow(*this, getTokens(), "tokens")) ||
      failed(verifyPositionsFrom(*this, getOffset(), getSegments())))
    return failure();
  int64_t width = getType().getDimSize(1);
  if (ShapedType::isDynamic(width) || width % 2 != 0)
    return emitOpError() << "needs a static, even d_e, got result "
                         << formatShape(getType());
  if (!(getBase().convertToDouble() > 1.0))
    return emitOpError() << "base must be greater than 1, got "
                         << getBase().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  Type x = getInput().getType();
  WeightDims w = weightDims("weight", getWeight(), getTransposeWeight());
  DimRef out{"result", getType(), 1};
  if (failed(expectSameDim(*this, "d_in", {"input", x, 1}, w.in)) ||
      failed(expectSameDim(*this, "d_out", out, w.out)) ||
      failed(expectVectorOf(*this, "bias width", getBias(), "bias", w.out)) ||
      failed(expectRowsFollow(*this, getInput(), "input")))
    return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult MatmulOp::verify() {
  Type a = getLhs().getType();
  WeightDims b = weightDims("rhs", getRhs(), getTransposeRhs());
  if (failed(expectSameDim(*this, "contraction", {"lhs", a, 1}, b.in)) ||
      failed(expectSameDim(*this, "columns", {"result", getType(), 1}, b.out)) ||
      failed(expectRowsFollow(*this, getLhs(), "lhs")))
    return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult AddOp::verify() {
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  auto result = getType();
  if (result.getRank() != lhs.getRank())
    return emitOpError() << "result " << formatShape(result)
                         << " must have the shape of lhs " << formatShape(lhs);
  for (unsigned d = 0; d < lhs.getRank(); ++d)
    if (failed(expectSameDim(*this, "sum", {"result", result, d}, {"lhs", lhs, d})))
      return failure();
  bool isBias = rhs.getRank() == 1 && lhs.getRank() > 1;
  if (!isBias && rhs.getRank() != lhs.getRank())
    return emitOpError() << "rhs " << formatShape(rhs)
                         << " is neither the shape of lhs " << formatShape(lhs)
                         << " nor a vector broadcast over its rows";
  unsigned lhsLast = lhs.getRank() - 1;
  if (isBias)
    return failed(expectSameDim(*this, "broadcast bias", {"rhs", rhs, 0},
                                {"lhs", lhs, lhsLast}))
               ? failure()
               : verifySameFloatElementType(*this);
  for (unsigned d = 0; d < lhs.getRank(); ++d)
    if (failed(expectSameDim(*this, "sum", {"rhs", rhs, d}, {"lhs", lhs, d})))
      return failure();
  return verifySameFloatElementType(*this);
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

static LogicalResult verifyNorm(Operation *op, Value input, Value gamma,
                                Value beta, double epsilon) {
  if (!(epsilon >= 0.0))
    return op->emitOpError() << "epsilon must be non-negative, got " << epsilon;
  auto type = llvm::cast<RankedTensorType>(input.getType());
  if (type != op->getResult(0).getType())
    return op->emitOpError() << "result " << formatShape(op->getResult(0).getType())
                             << " must have the type of input " << formatShape(type);
  DimRef width{"input", type, unsigned(type.getRank() - 1)};
  if (failed(expectVectorOf(op, "gamma width", gamma, "gamma", width)) ||
      failed(expectVectorOf(op, "beta width", beta, "beta", width)))
    return failure();
  return verifySameFloatElementType(op);
}

LogicalResult LayerNormOp::verify() {
  if (bool(getGamma()) != bool(getBeta()))
    return emitOpError("takes gamma and beta together or neither");
  return verifyNorm(*this, getInput(), getGamma(), getBeta(),
                    getEpsilon().convertToDouble());
}

LogicalResult RmsNormOp::verify() {
  return verifyNorm(*this, getInput(), getGamma(), Value(),
                    getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Shape rules shared by single-step attention and MHA once Q, K, V widths
/// are known: heads split H·d_k and H·d_v, and the mask fits ℓ and ℓ_z.
static LogicalResult verifyHeadsAndMask(Operation *op, int64_t heads,
                                        MaskKind mask, DimRef qkWidth,
                                        DimRef vWidth, DimRef queryLen,
                                        DimRef contextLen) {
  if (heads < 1)
    return op->emitOpError() << "heads must be at least 1, got " << heads;
  if (failed(expectDivisibleByHeads(op, "H·d_k", qkWidth, heads)) ||
      failed(expectDivisibleByHeads(op, "H·d_v", vWidth, heads)))
    return failure();
  int64_t l = queryLen.size(), lz = contextLen.size();
  if (ShapedType::isDynamic(l) || ShapedType::isDynamic(lz))
    return success();
  if (mask == MaskKind::bidirectional && l != lz)
    return op->emitOpError()
           << "bidirectional self-attention needs as many context rows as "
              "query rows: "
           << queryLen.operand << " " << formatShape(queryLen.type) << " vs "
           << contextLen.operand << " " << formatShape(contextLen.type)
           << " (use mask cross for another sequence)";
  if (mask == MaskKind::causal && lz < l)
    return op->emitOpError()
           << "causal attention needs at least as many context rows as query "
              "rows: "
           << queryLen.operand << " " << formatShape(queryLen.type) << " vs "
           << contextLen.operand << " " << formatShape(contextLen.type);
  return success();
}

/// Grouped-query attention: H_kv divides H, and the K (V) width is the Q
/// (output) width scaled by H_kv / H — every key/value head as wide as a
/// query head.
static LogicalResult verifyKeyValueHeads(Operation *op, int64_t heads,
                                         int64_t kvHeads, DimRef query, DimRef key,
                                         DimRef output, DimRef value) {
  if (kvHeads < 1 || heads % kvHeads != 0)
    return op->emitOpError() << "kv_heads = " << kvHeads
                             << " must be at least 1 and divide heads = " << heads;
  for (auto [wide, narrow, what] : {std::tuple(query, key, "H_kv·d_k"),
                                    std::tuple(output, value, "H_kv·d_v")}) {
    int64_t w = wide.size(), n = narrow.size();
    if (ShapedType::isDynamic(w) || ShapedType::isDynamic(n) ||
        (w % heads == 0 && n * heads == w * kvHeads))
      continue;
    return op->emitOpError() << what << ": " << narrow.operand << " "
                             << formatShape(narrow.type) << " has " << n << " on axis "
                             << narrow.axis << " but " << wide.operand << " "
                             << formatShape(wide.type) << " has " << w << " on axis "
                             << wide.axis << ", so with heads = " << heads
                             << " and kv_heads = " << kvHeads << " it needs "
                             << (w % heads ? std::string("a width divisible by heads")
                                           : std::to_string(w / heads * kvHeads));
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  Type q = getQuery().getType(), k = getKey().getType(), v = getValue().getType();
  if (failed(expectSameDim(*this, "ℓ_z", {"key", k, 0}, {"value", v, 0})) ||
      failed(expectRowsFollow(*this, getQuery(), "query")) ||
      failed(verifyPositiveScale(*this, getScale())) ||
      failed(verifyAttentionSegments(*this, getMask(), getSegments(), getKeySegments())))
    return failure();
  bool grouped = getKeyValueHeads() != int64_t(getHeads());
  if (!grouped && (failed(expectSameDim(*this, "H·d_k", {"query", q, 1}, {"key", k, 1})) ||
                   failed(expectSameDim(*this, "H·d_v", {"result", getType(), 1},
                                        {"value", v, 1}))))
    return failure();
  if (failed(verifyHeadsAndMask(*this, getHeads(), getMask(), {"query", q, 1},
                                grouped ? DimRef{"result", getType(), 1} : DimRef{"value", v, 1},
                                {"query", q, 0}, {"key", k, 0})) ||
      (grouped &&
       failed(verifyKeyValueHeads(*this, getHeads(), getKeyValueHeads(), {"query", q, 1},
                                  {"key", k, 1}, {"result", getType(), 1}, {"value", v, 1}))))
    return failure();
  if (getRope().has_value() != bool(getRopeBaseAttr()))
    return emitOpError("takes rope and its base together");
  if (getRope()) {
    int64_t width = cast<RankedTensorType>(q).getDimSize(1);
    if (ShapedType::isDynamic(width) || width % (2 * getHeads()) != 0)
      return emitOpError() << "rope rotates pairs of features, but the query's H·d_k = " << width
                           << " does not split into " << getHeads() << " heads of even width";
    if (!(getRopeBase()->convertToDouble() > 1.0))
      return emitOpError() << "rope base must be greater than 1, got "
                           << getRopeBase()->convertToDouble();
  }
  return verifySameFloatElementType(*this);
}

LogicalResult MultiHeadAttentionOp::verify() {
  bool cross = getMask() == MaskKind::cross;
  if (cross && !getContextSeq())
    return emitOpError("mask cross needs a context sequence");
  if (!cross && getContextSeq())
    return emitOpError() << "a context sequence needs mask cross, not "
                         << stringifyMaskKind(getMask());
  bool t = getTransposeWeights();
  Value z = getContextSeq() ? getContextSeq() : getInput();
  llvm::StringRef zName = getContextSeq() ? "context" : "input";
  Type x = getInput().getType();
  WeightDims wq = weightDims("W_q", getWq(), t), wk = weightDims("W_k", getWk(), t),
             wv = weightDims("W_v", getWv(), t), wo = weightDims("W_o", getWo(), t);
  if (failed(expectSameDim(*this, "d_x", {"input", x, 1}, wq.in)) ||
      failed(expectSameDim(*this, "d_z", {zName, z.getType(), 1}, wk.in)) ||
      failed(expectSameDim(*this, "d_z", {zName, z.getType(), 1}, wv.in)) ||

      failed(expectSameDim(*this, "d_out", {"result", getType(), 1}, wo.out)) ||
      failed(expectVectorOf(*this, "b_q width", getBq(), "b_q", wq.out)) ||
      failed(expectVectorOf(*this, "b_k width", getBk(), "b_k", wk.out)) ||
      failed(expectVectorOf(*this, "b_v width", getBv(), "b_v", wv.out)) ||
      failed(expectVectorOf(*this, "b_o width", getBo(), "b_o", wo.out)) ||
      failed(expectRowsFollow(*this, getInput(), "input")) ||
      failed(verifyPositiveScale(*this, getScale())) ||
      failed(verifyAttentionSegments(*this, getMask(), getSegments(), getKeySegments())))
    return failure();
  bool grouped = getKeyValueHeads() != int64_t(getHeads());
  if (!grouped && (failed(expectSameDim(*this, "H·d_k", wq.out, wk.out)) ||
                   failed(expectSameDim(*this, "H·d_v", wv.out, wo.in))))
    return failure();
  if (failed(verifyHeadsAndMask(*this, getHeads(), getMask(), wq.out, grouped ? wo.in : wv.out,
                                {"input", x, 0}, {zName, z.getType(), 0})) ||
      (grouped && failed(verifyKeyValueHeads(*this, getHeads(), getKeyValueHeads(), wq.out,
                                             wk.out, wo.in, wv.out))))
    return failure();
  if (getRope().has_value() != bool(getRopeBaseAttr()))
    return emitOpError("takes rope and its base together");
  if (getRope()) {
    int64_t width = wq.out.size();
    if (width % (2 * getHeads()) != 0)
      return emitOpError() << "rope rotates pairs of features, but W_q's H·d_k = " << width
                           << " does not split into " << getHeads() << " heads of even width";
    if (!(getRopeBase()->convertToDouble() > 1.0))
      return emitOpError() << "rope base must be greater than 1, got "
                           << getRopeBase()->convertToDouble();
  }
  return verifySameFloatElementType(*this);
}

LogicalResult RopeOp::verify() {
  auto type = getInput().getType();
  if (type != getType())
    return emitOpError() << "result " << formatShape(getType())
                         << " must have the type of input " << formatShape(type);
  int64_t heads = getHeads(), width = type.getDimSize(1);
  if (heads < 1)
    return emitOpError() << "heads must be at least 1, got " << heads;
  if (ShapedType::isDynamic(width) || width % (2 * heads) != 0)
    return emitOpError() << "input " << formatShape(type)
                         << " must split into heads = " << heads
                         << " heads of a static, even width (rotations act on pairs)";
  if (!(getBase().convertToDouble() > 1.0))
    return emitOpError() << "base must be greater than 1, got " << getBase().convertToDouble();
  if (failed(verifyPositionsFrom(*this, getOffset(), getSegments())))
    return failure();
  return verifySameFloatElementType(*this);
}

//===----------------------------------------------------------------------===//
// Kernel-level ops
//===----------------------------------------------------------------------===//

/// A GEMM's norm prologue: attributes and γ/β only with a norm, β only for
/// layer_norm and with γ, both [K].
static LogicalResult verifyGemmNorm(GemmOp op) {
  std::optional<GemmNorm> norm = op.getNorm();
  if (!norm) {
    if (op.getNormEpsilonAttr() || op.getNormGamma() || op.getNormBeta())
      return op.emitOpError("norm_epsilon, norm_gamma and norm_beta need a norm");
    return success();
  }
  if (!op.getNormEpsilonAttr())
    return op.emitOpError("norm needs norm_epsilon");
  if (double eps = op.getNormEpsilon()->convertToDouble(); !(eps >= 0.0))
    return op.emitOpError() << "norm epsilon must be non-negative, got " << eps;
  if (*norm == GemmNorm::rms_norm && op.getNormBeta())
    return op.emitOpError("rms_norm takes no beta");
  if (*norm == GemmNorm::layer_norm && bool(op.getNormGamma()) != bool(op.getNormBeta()))
    return op.emitOpError("layer_norm takes gamma and beta together or neither");
  DimRef width{"input", op.getInput().getType(), 1};
  if (failed(expectVectorOf(op, "norm gamma width", op.getNormGamma(), "gamma", width)) ||
      failed(expectVectorOf(op, "norm beta width", op.getNormBeta(), "beta", width)))
    return failure();
  return success();
}

LogicalResult GemmOp::verify() {
  if (failed(verifyGemmNorm(*this)))
    return failure();
  Type x = getInput().getType();
  WeightDims w = weightDims("weight", getWeight(), getTransposeWeight());
  DimRef out{"result", getType(), 1};
  if (getActivation() == Activation::swiglu) {
    int64_t n = out.size(), wide = w.out.size();
    if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(wide) && wide != 2 * n)
      return emitOpError() << "activation swiglu: weight " << formatShape(w.out.type)
                           << " must hold gate and up, 2·N = " << 2 * n
                           << " columns for the result " << formatShape(getType()) << ", not "
                           << wide;
    out = w.out; // N is checked against the residual below
  }
  if (failed(expectSameDim(*this, "K", {"input", x, 1}, w.in)) ||
      failed(expectSameDim(*this, "N", out, w.out)) ||
      failed(expectVectorOf(*this, "bias width", getBias(), "bias", w.out)) ||
      failed(expectRowsFollow(*this, getInput(), "input")))
    return failure();
  if (Value r = getResidual())
    if (failed(expectSameDim(*this, "residual", {"residual", r.getType(), 0},
                             {"input", x, 0})) ||
        failed(expectSameDim(*this, "residual", {"residual", r.getType(), 1},
                             getActivation() == Activation::swiglu
                                 ? DimRef{"result", getType(), 1}
                                 : w.out)))
      return failure();
  return verifySameFloatElementType(*this);
}

//===----------------------------------------------------------------------===//
// Unembedding
//===----------------------------------------------------------------------===//

LogicalResult UnembedOp::verify() {
  WeightDims w = weightDims(getTied() ? "tied W_e" : "W_u", getWeight(), getTied());
  if (failed(expectSameDim(*this, "d_e", {"input", getInput().getType(), 1}, w.in)) ||
      failed(expectSameDim(*this, "N_V", {"result", getType(), 1}, w.out)) ||
      failed(expectRowsFollow(*this, getInput(), "input")))
    return failure();
  return verifySameFloatElementType(*this);
}
