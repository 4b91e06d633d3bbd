//===- XfGradOps.cpp - shape rules of the loss and backward ops -----------===//
//
// A backward op's result has the shape of what it differentiates: the
// forward op's input (dx), a weight (dW) or a table (dW_e). Dynamic
// dimensions (ℓ) are left to the runtime, as for the forward ops.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "XfShapeRules.h"

#include <tuple>

using namespace mlir;
using namespace mlir::xf;

namespace {
/// `a` and `b` have one shape (dimension by dimension, `?` agreeing).
LogicalResult expectSameShape(Operation *op, llvm::StringRef what, llvm::StringRef aName,
                              Type a, llvm::StringRef bName, Type b) {
  auto at = cast<RankedTensorType>(a), bt = cast<RankedTensorType>(b);
  if (at.getRank() != bt.getRank())
    return op->emitOpError() << what << ": " << aName << " " << formatShape(a) << " and "
                             << bName << " " << formatShape(b) << " differ in rank";
  for (unsigned d = 0; d < at.getRank(); ++d)
    if (failed(expectSameDim(op, what, {aName, a, d}, {bName, b, d})))
      return failure();
  return success();
}

LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (!(epsilon >= 0.0))
    return op->emitOpError() << "epsilon must be non-negative, got " << epsilon;
  return success();
}
} // namespace

LogicalResult CrossEntropyOp::verify() {
  if (failed(expectSameDim(*this, "one target per row", {"targets", getTargets().getType(), 0},
                           {"logits", getLogits().getType(), 0})))
    return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(expectSameDim(*this, "one target per row", {"targets", getTargets().getType(), 0},
                           {"logits", getLogits().getType(), 0})) ||
      failed(expectSameShape(*this, "gradient", "result", getType(), "logits",
                             getLogits().getType())))
    return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult WeightGradOp::verify() {
  Type x = getInput().getType(), dy = getGrad().getType(), r = getType();
  bool t = getTransposeResult();
  if (failed(expectSameDim(*this, "rows", {"input", x, 0}, {"grad", dy, 0})) ||
      failed(expectSameDim(*this, "K", {"result", r, t ? 1u : 0u}, {"input", x, 1})) ||
      failed(expectSameDim(*this, "N", {"result", r, t ? 0u : 1u}, {"grad", dy, 1})))
    return failure();
  if (!getType().hasStaticShape())
    return emitOpError() << "needs a static result shape, got " << formatShape(r);
  return verifySameFloatElementType(*this);
}

LogicalResult RowSumOp::verify() {
  if (failed(expectSameDim(*this, "width", {"result", getType(), 0},
                           {"input", getInput().getType(), 1})))
    return failure();
  return verifySameFloatElementType(*this);
}

namespace {
/// The backward of LayerNorm and of RMSNorm follow the same shape rules:
/// dx has x's shape, γ (when there is one) is as wide as a row.
template <typename NormGradOp> LogicalResult verifyNormGrad(NormGradOp op) {
  Type x = op.getInput().getType();
  if (failed(expectSameShape(op, "gradient", "grad", op.getGrad().getType(), "input", x)) ||
      failed(expectSameShape(op, "gradient", "result", op.getType(), "input", x)) ||
      (op.getGamma() && failed(expectSameDim(op, "gamma width",
                                             {"gamma", op.getGamma().getType(), 0},
                                             {"input", x, 1}))) ||
      failed(verifyEpsilon(op, op.getEpsilon().convertToDouble())))
    return failure();
  return verifySameFloatElementType(op);
}

/// dγ is as wide as a row of x.
template <typename NormGammaGradOp> LogicalResult verifyNormGammaGrad(NormGammaGradOp op) {
  Type x = op.getInput().getType();
  if (failed(expectSameShape(op, "gradient", "grad", op.getGrad().getType(), "input", x)) ||
      failed(expectSameDim(op, "width", {"result", op.getType(), 0}, {"input", x, 1})) ||
      failed(verifyEpsilon(op, op.getEpsilon().convertToDouble())))
    return failure();
  return verifySameFloatElementType(op);
}
} // namespace

LogicalResult LayerNormGradOp::verify() { return verifyNormGrad(*this); }
LogicalResult LayerNormGammaGradOp::verify() { return verifyNormGammaGrad(*this); }
LogicalResult RmsNormGradOp::verify() { return verifyNormGrad(*this); }
LogicalResult RmsNormGammaGradOp::verify() { return verifyNormGammaGrad(*this); }

/// dx of an elementwise op: x, dy and the result share one shape.
static LogicalResult verifyElementwiseGrad(Operation *op, Value x, Value dy) {
  if (failed(expectSameShape(op, "gradient", "grad", dy.getType(), "input", x.getType())) ||
      failed(expectSameShape(op, "gradient", "result", op->getResult(0).getType(), "input",
                             x.getType())))
    return failure();
  return verifySameFloatElementType(op);
}

LogicalResult ReluGradOp::verify() { return verifyElementwiseGrad(*this, getInput(), getGrad()); }

LogicalResult SiluGradOp::verify() { return verifyElementwiseGrad(*this, getInput(), getGrad()); }

LogicalResult GeluGradOp::verify() { return verifyElementwiseGrad(*this, getInput(), getGrad()); }

LogicalResult AttentionGradOp::verify() {
  Type q = getQuery().getType(), k = getKey().getType(), v = getValue().getType();
  Type dy = getGrad().getType();
  if (getHeads() < 1)
    return emitOpError() << "heads must be at least 1, got " << getHeads();
  if (getScale() && !(getScale()->convertToDouble() > 0.0))
    return emitOpError() << "scale must be positive, got " << getScale()->convertToDouble();
  int64_t kvHeads = getKeyValueHeads();
  if (kvHeads < 1 || getHeads() % kvHeads != 0)
    return emitOpError() << "kv_heads = " << kvHeads << " must be at least 1 and divide heads = "
                         << getHeads();
  // With grouped heads K and V are H_kv/H as wide as Q and dY (checked when static).
  auto scaled = [&](Type wide, Type narrow, const char *what) -> LogicalResult {
    int64_t w = cast<RankedTensorType>(wide).getDimSize(1),
            n = cast<RankedTensorType>(narrow).getDimSize(1);
    if (ShapedType::isDynamic(w) || ShapedType::isDynamic(n) ||
        n * int64_t(getHeads()) == w * kvHeads)
      return success();
    return emitOpError() << what << ": " << formatShape(narrow) << " is not " << kvHeads << "/"
                         << getHeads() << " of " << formatShape(wide);
  };
  if (failed(expectSameDim(*this, "ℓ_z", {"key", k, 0}, {"value", v, 0})) ||
      failed(scaled(q, k, "H_kv·d_k of key")) ||
      failed(expectSameDim(*this, "ℓ", {"grad", dy, 0}, {"query", q, 0})) ||
      failed(scaled(dy, v, "H_kv·d_v of value")) ||
      failed(expectSameShape(*this, "dQ", "query_grad", getQueryGrad().getType(), "query", q)) ||
      failed(expectSameShape(*this, "dK", "key_grad", getKeyGrad().getType(), "key", k)) ||
      failed(expectSameShape(*this, "dV", "value_grad", getValueGrad().getType(), "value", v)))
    return failure();
  // Query rows hold H heads, value rows H_kv (grouped-query attention).
  for (auto [name, type, heads] :
       {std::tuple<const char *, Type, int64_t>{"query", q, getHeads()},
        {"value", v, getKeyValueHeads()}}) {
    int64_t width = cast<RankedTensorType>(type).getDimSize(1);
    if (!ShapedType::isDynamic(width) && width % heads != 0)
      return emitOpError() << name << " " << formatShape(type) << " does not split into "
                           << heads << " heads";
  }
  return verifySameFloatElementType(*this);
}

LogicalResult RopeGradOp::verify() {
  auto type = cast<RankedTensorType>(getGrad().getType());
  if (type != getType())
    return emitOpError() << "result " << formatShape(getType()) << " must have the type of grad "
                         << formatShape(type);
  int64_t heads = getHeads(), width = type.getDimSize(1);
  if (heads < 1 || ShapedType::isDynamic(width) || width % (2 * heads) != 0)
    return emitOpError() << "grad " << formatShape(type) << " must split into heads = " << heads
                         << " heads of a static, even width";
  if (!(getBase().convertToDouble() > 1.0))
    return emitOpError() << "base must be greater than 1, got " << getBase().convertToDouble();
  return verifySameFloatElementType(*this);
}

LogicalResult TokenEmbedGradOp::verify() {
  if (failed(expectSameDim(*this, "one row per token", {"grad", getGrad().getType(), 0},
                           {"tokens", getTokens().getType(), 0})) ||
      failed(expectSameDim(*this, "d_e", {"result", getType(), 1},
                           {"grad", getGrad().getType(), 1})))
    return failure();
  if (!getType().hasStaticShape())
    return emitOpError() << "needs a static table shape, got " << formatShape(getType());
  return verifySameFloatElementType(*this);
}

LogicalResult PositionalEmbedGradOp::verify() {
  Type dy = getGrad().getType();
  if (failed(expectSameDim(*this, "d_e", {"result", getType(), 1}, {"grad", dy, 1})))
    return failure();
  if (!getType().hasStaticShape())
    return emitOpError() << "needs a static table shape, got " << formatShape(getType());
  int64_t rows = cast<RankedTensorType>(dy).getDimSize(0);
  if (!ShapedType::isDynamic(rows) && rows > getType().getDimSize(0))
    return emitOpError() << rows << " rows do not fit the table " << formatShape(getType());
  return verifySameFloatElementType(*this);
}

LogicalResult RowGradOp::verify() {
  auto out = cast<RankedTensorType>(getType());
  if (!out.hasStaticShape())
    return emitOpError() << "needs a static result, got " << formatShape(out);
  if (getIndex() < 0 || getIndex() >= out.getDimSize(0))
    return emitOpError() << "row " << getIndex() << " is outside result " << formatShape(out);
  if (failed(expectSameDim(*this, "row width", {"grad", getGrad().getType(), 0},
                           {"result", out, 1})))
    return failure();
  return verifySameFloatElementType(*this);
}

LogicalResult SliceGradOp::verify() {
  auto in = cast<RankedTensorType>(getGrad().getType());
  auto out = cast<RankedTensorType>(getType());
  int64_t axis = getAxis(), offset = getOffset();
  if (in.getRank() != out.getRank())
    return emitOpError() << "result " << formatShape(out) << " must have the rank of grad "
                         << formatShape(in);
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "axis " << axis << " is out of range for grad " << formatShape(in);
  int64_t size = in.getDimSize(axis), extent = out.getDimSize(axis);
  if (ShapedType::isDynamic(size) || ShapedType::isDynamic(extent))
    return emitOpError() << "needs static sizes on axis " << axis;
  if (offset < 0 || offset + size > extent)
    return emitOpError() << "slice [" << offset << ", " << offset + size << ") on axis "
                         << axis << " is outside result " << formatShape(out);
  for (unsigned d = 0; d < in.getRank(); ++d)
    if (d != axis && failed(expectSameDim(*this, "slice", {"result", out, d}, {"grad", in, d})))
      return failure();
  return verifySameFloatElementType(*this);
}
