//===- Differentiate.cpp - reverse-mode gradient of the training loss -----===//
//
// @loss_and_gradients([source,] tokens, targets) is @forward's ops, the loss
// (Alg. 13's next tokens, Alg. 12's masked tokens or Alg. 11's next target
// tokens given a source: the targets say which), and then one vector-Jacobian product per forward
// op, last op first. Each rule reads the forward values it needs directly: the activation policy is
// "keep everything the backward reads", except attention, whose probabilities xf.attention_grad
// recomputes from Q and K. A value used by several ops (a tied table, the slices of one fused
// weight, a residual stream) gets the sum of their contributions. Rules: docs/training.md.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::xf {
#define GEN_PASS_DEF_DIFFERENTIATE
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

class Backward {
public:
  Backward(OpBuilder &b, const llvm::DenseSet<Value> &needed) : b(b), needed(needed) {}

  /// Adds `contribution` to the gradient of `v` (nothing if `v` does not
  /// depend on a parameter).
  void accumulate(Value v, Value contribution) {
    if (!needed.contains(v))
      return;
    auto [it, inserted] = grads.try_emplace(v, contribution);
    if (!inserted)
      it->second = AddOp::create(b, loc, v.getType(), it->second, contribution);
  }
  Value gradOf(Value v) const { return grads.lookup(v); }
  LogicalResult rule(Operation *op);

private:
  /// The rules of the row-wise ops (norms, activations): dy given; nullopt
  /// for another op.
  std::optional<LogicalResult> rowWiseRule(Operation *op, Value dy);
  /// The rules of the ops that only move elements (row, slice, concat,
  /// transpose); nullopt for another op.
  std::optional<LogicalResult> layoutRule(Operation *op, Value dy);
  /// The row-wise rules handle [ℓ, d] inputs only.
  LogicalResult matrixOnly(Operation *op, Value x) {
    if (typeOf(x).getRank() == 2)
      return success();
    return op->emitError("xf-differentiate: the backward rule handles [ℓ, d] inputs, got ")
           << x.getType();
  }

  OpBuilder &b;

public:
  Location loc = UnknownLoc::get(b.getContext());

private:
  const llvm::DenseSet<Value> &needed;
  llvm::DenseMap<Value, Value> grads;
};

LogicalResult Backward::rule(Operation *op) {
  loc = op->getLoc();
  if (isa<ParameterOp, SinusoidalEmbedOp>(op))
    return success(); // leaves
  Value dy = op->getNumResults() == 1 ? gradOf(op->getResult(0)) : Value();
  if (!dy)
    return success(); // the loss does not depend on this op
  if (auto embed = dyn_cast<TokenEmbedOp>(op)) {
    accumulate(embed.getTable(),
               TokenEmbedGradOp::create(b, loc, embed.getTable().getType(), embed.getTokens(), dy));
    return success();
  }
  if (auto pos = dyn_cast<PositionalEmbedOp>(op)) {
    if (pos.getOffset())
      return op->emitError("xf-differentiate: positions with an offset (KV-cache decoding) "
                           "are not differentiated");
    accumulate(pos.getTable(), PositionalEmbedGradOp::create(b, loc, pos.getTable().getType(), dy));
    return success();
  }
  if (auto add = dyn_cast<AddOp>(op)) {
    accumulate(add.getLhs(), dy);
    if (typeOf(add.getRhs()).getRank() == 1 && typeOf(add.getLhs()).getRank() == 2)
      accumulate(add.getRhs(), RowSumOp::create(b, loc, add.getRhs().getType(), dy));
    else
      accumulate(add.getRhs(), dy);
    return success();
  }
  if (auto mul = dyn_cast<MulOp>(op)) {
    accumulate(mul.getLhs(), MulOp::create(b, loc, dy.getType(), dy, mul.getRhs()));
    accumulate(mul.getRhs(), MulOp::create(b, loc, dy.getType(), dy, mul.getLhs()));
    return success();
  }
  // y = x·W (+ b), W stored [d_in, d_out] or, transposed, [d_out, d_in]:
  // dx = dy·Wᵀ (the stored layout read the other way), dW = xᵀ·dy.
  auto linearMap = [&](Value x, Value w, bool transposed) {
    if (needed.contains(x))
      accumulate(x, MatmulOp::create(b, loc, x.getType(), dy, w, /*transpose_rhs=*/!transposed));
    if (needed.contains(w))
      accumulate(w, WeightGradOp::create(b, loc, w.getType(), x, dy, transposed));
  };
  if (auto linear = dyn_cast<LinearOp>(op)) {
    if (Value bias = linear.getBias())
      accumulate(bias, RowSumOp::create(b, loc, bias.getType(), dy));
    linearMap(linear.getInput(), linear.getWeight(), linear.getTransposeWeight());
    return success();
  }
  if (auto unembed = dyn_cast<UnembedOp>(op)) {
    // tied: logits = x·W_eᵀ with W_e [N_V, d_e] — the transposed layout.
    linearMap(unembed.getInput(), unembed.getWeight(), unembed.getTied());
    return success();
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    if (needed.contains(matmul.getRhs()) && !typeOf(matmul.getRhs()).hasStaticShape())
      return op->emitError("xf-differentiate: a product of two activations is not "
                           "differentiated yet");
    linearMap(matmul.getLhs(), matmul.getRhs(), matmul.getTransposeRhs());
    return success();
  }
  if (std::optional<LogicalResult> done = rowWiseRule(op, dy))
    return *done;
  if (std::optional<LogicalResult> done = layoutRule(op, dy))
    return *done;
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    if (attn.getRope())
      return op->emitError("xf-differentiate: attention with fused rotary positions has no "
                           "backward; differentiate before xf-fuse-rope-attention");
    auto grad = AttentionGradOp::create(
        b, loc,
        TypeRange{attn.getQuery().getType(), attn.getKey().getType(), attn.getValue().getType()},
        attn.getQuery(), attn.getKey(), attn.getValue(), dy, attn.getMaskAttr(),
        attn.getHeadsAttr(), attn.getKvHeadsAttr(), attn.getScaleAttr());
    accumulate(attn.getQuery(), grad.getQueryGrad());
    accumulate(attn.getKey(), grad.getKeyGrad());
    accumulate(attn.getValue(), grad.getValueGrad());
    return success();
  }
  if (auto rope = dyn_cast<RopeOp>(op)) {
    if (rope.getOffset())
      return op->emitError("xf-differentiate: rotary positions with an offset (KV-cache "
                           "decoding) are not differentiated");
    accumulate(rope.getInput(), RopeGradOp::create(b, loc, dy.getType(), dy, rope.getPairingAttr(),
                                                   rope.getHeadsAttr(), rope.getBaseAttr()));
    return success();
  }
  if (isa<MultiHeadAttentionOp>(op))
    return op->emitError("xf-differentiate: run xf-decompose-mha first");
  return op->emitError("xf-differentiate: no backward rule for '")
         << op->getName() << "' yet (docs/training.md lists the rules)";
}

std::optional<LogicalResult> Backward::rowWiseRule(Operation *op, Value dy) {
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    Value x = ln.getInput();
    if (failed(matrixOnly(op, x)))
      return failure();
    FloatAttr eps = ln.getEpsilonAttr();
    accumulate(x, LayerNormGradOp::create(b, loc, x.getType(), x, dy, ln.getGamma(), eps));
    if (Value gamma = ln.getGamma()) {
      accumulate(gamma, LayerNormGammaGradOp::create(b, loc, gamma.getType(), x, dy, eps));
      accumulate(ln.getBeta(), RowSumOp::create(b, loc, ln.getBeta().getType(), dy));
    }
    return success();
  }
  if (auto rms = dyn_cast<RmsNormOp>(op)) {
    Value x = rms.getInput();
    if (failed(matrixOnly(op, x)))
      return failure();
    FloatAttr eps = rms.getEpsilonAttr();
    accumulate(x, RmsNormGradOp::create(b, loc, x.getType(), x, dy, rms.getGamma(), eps));
    if (Value gamma = rms.getGamma())
      accumulate(gamma, RmsNormGammaGradOp::create(b, loc, gamma.getType(), x, dy, eps));
    return success();
  }
  if (isa<ReluOp, SiluOp>(op)) {
    Value x = op->getOperand(0);
    if (failed(matrixOnly(op, x)))
      return failure();
    accumulate(x, isa<ReluOp>(op) ? Value(ReluGradOp::create(b, loc, x.getType(), x, dy))
                                  : Value(SiluGradOp::create(b, loc, x.getType(), x, dy)));
    return success();
  }
  if (auto gelu = dyn_cast<GeluOp>(op)) {
    if (failed(matrixOnly(op, gelu.getInput())))
      return failure();
    accumulate(gelu.getInput(), GeluGradOp::create(b, loc, dy.getType(), gelu.getInput(), dy,
                                                   gelu.getApproximationAttr()));
    return success();
  }
  return std::nullopt;
}

std::optional<LogicalResult> Backward::layoutRule(Operation *op, Value dy) {
  if (auto row = dyn_cast<RowOp>(op)) {
    accumulate(row.getInput(),
               RowGradOp::create(b, loc, row.getInput().getType(), dy, row.getIndexAttr()));
    return success();
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    accumulate(slice.getInput(), SliceGradOp::create(b, loc, slice.getInput().getType(), dy,
                                                     slice.getAxisAttr(), slice.getOffsetAttr()));
    return success();
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t offset = 0, axis = concat.getAxis();
    for (Value part : concat.getInputs()) {
      accumulate(part, SliceOp::create(b, loc, part.getType(), dy, concat.getAxisAttr(),
                                       b.getI64IntegerAttr(offset)));
      offset += typeOf(part).getDimSize(axis);
    }
    return success();
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    accumulate(transpose.getInput(),
               TransposeOp::create(b, loc, transpose.getInput().getType(), dy));
    return success();
  }
  return std::nullopt;
}

struct DifferentiatePass : xf::impl::DifferentiateBase<DifferentiatePass> {
  void runOnOperation() override;
};

void DifferentiatePass::runOnOperation() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward) {
    module.emitError("xf-differentiate: no func.func @forward");
    return signalPassFailure();
  }
  if (module.lookupSymbol("loss_and_gradients")) {
    module.emitError("xf-differentiate: @loss_and_gradients exists already");
    return signalPassFailure();
  }
  auto output = forward->getAttrOfType<StringAttr>("xf.output");
  FunctionType fwdType = forward.getFunctionType();
  if (fwdType.getNumResults() != 1 || (output && output.getValue() != "logits")) {
    forward.emitError("xf-differentiate: training needs @forward returning logits; an encoder "
                      "returning hidden states has no output layer to train (see "
                      "examples/bert-mlm.xf for BERT with its masked-token head)");
    return signalPassFailure();
  }
  // One sequence, or (Alg. 11) a source (context) sequence and the target
  // sequence whose next tokens are predicted.
  unsigned inputs = fwdType.getNumInputs();
  if (inputs != 1 && inputs != 2) {
    forward.emitError("xf-differentiate: @forward must take token ids, or source and target "
                      "token ids (an encoder-decoder)");
    return signalPassFailure();
  }
  auto tokensType = dyn_cast<RankedTensorType>(fwdType.getInput(inputs - 1));
  for (Type input : fwdType.getInputs()) {
    auto type = dyn_cast<RankedTensorType>(input);
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger()) {
      forward.emitError("xf-differentiate: @forward's arguments must be token ids");
      return signalPassFailure();
    }
  }
  auto resultType = dyn_cast<RankedTensorType>(fwdType.getResult(0));
  if (!resultType || resultType.getRank() != 2 || !isa<FloatType>(resultType.getElementType())) {
    forward.emitError("xf-differentiate: @forward must return [ℓ, N_V] logits");
    return signalPassFailure();
  }

  OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
  Location loc = forward.getLoc();
  // The type is fixed once the gradients are known; start with the inputs:
  // @forward's, then the targets.
  SmallVector<Type> argTypes(fwdType.getInputs());
  argTypes.push_back(tokensType);
  auto fn = func::FuncOp::create(top, loc, "loss_and_gradients",
                                 FunctionType::get(&getContext(), argTypes, {}));
  Block *body = fn.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockEnd(body);
  IRMapping map;
  for (unsigned i = 0; i < inputs; ++i)
    map.map(forward.getArgument(i), fn.getArgument(i));
  Value logits;
  for (Operation &op : forward.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      logits = map.lookup(ret.getOperand(0));
      break;
    }
    b.clone(op, map);
  }
  SmallVector<Operation *> forwardOps;
  for (Operation &op : *body)
    forwardOps.push_back(&op);

  // Values that depend on a parameter: only they need gradients.
  llvm::DenseSet<Value> needed;
  llvm::MapVector<StringRef, SmallVector<Value>> parameters; // name → its ops' results
  for (Operation *op : forwardOps) {
    if (auto param = dyn_cast<ParameterOp>(op)) {
      needed.insert(param.getResult());
      parameters[param.getName()].push_back(param.getResult());
      continue;
    }
    if (llvm::any_of(op->getOperands(), [&](Value v) { return needed.contains(v); }))
      for (Value r : op->getResults())
        needed.insert(r);
  }
  if (!needed.contains(logits)) {
    forward.emitError("xf-differentiate: the logits do not depend on any parameter");
    return signalPassFailure();
  }

  auto logitsType = typeOf(logits);
  Value targets = fn.getArgument(inputs);
  auto scalar = RankedTensorType::get({}, logitsType.getElementType());
  Value loss = CrossEntropyOp::create(b, loc, scalar, logits, targets);
  Backward backward(b, needed);
  backward.accumulate(logits, CrossEntropyGradOp::create(b, loc, logitsType, logits, targets));
  for (Operation *op : llvm::reverse(forwardOps))
    if (failed(backward.rule(op)))
      return signalPassFailure();

  SmallVector<Value> results{loss};
  SmallVector<Attribute> names;
  for (auto &[name, values] : parameters) {
    Value sum;
    for (Value v : values) {
      Value g = backward.gradOf(v);
      if (g)
        sum = sum ? Value(AddOp::create(b, loc, v.getType(), sum, g)) : g;
    }
    if (!sum) { // e.g. a table only the KV-cache path reads
      auto type = typeOf(values.front());
      sum = arith::ConstantOp::create(
          b, loc, type, DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), 0.0)));
    }
    results.push_back(sum);
    names.push_back(b.getStringAttr(name));
  }
  func::ReturnOp::create(b, loc, results);
  fn.setFunctionType(FunctionType::get(&getContext(), argTypes, TypeRange(ValueRange(results))));
  fn->setAttr("xf.gradients", b.getArrayAttr(names));
  // The objective a trainer uses by default: an encoder-decoder learns the
  // target's next tokens given the source (Alg. 11); a model whose attention
  // sees later positions cannot learn the next token from every position, so
  // without causal attention it is Alg. 12's masked tokens. The compiled step
  // is the same for Alg. 12 and 13; only the targets differ (docs/training.md).
  bool causal = false;
  forward.walk([&](AttentionOp attn) { causal |= attn.getMask() == MaskKind::causal; });
  StringRef objective = inputs == 2 ? "seq2seq" : causal ? "next-token" : "masked-token";
  fn->setAttr("xf.objective", b.getStringAttr(objective));
}

} // namespace
