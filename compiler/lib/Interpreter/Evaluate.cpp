//===- Evaluate.cpp - @forward, op by op, in double precision --------------===//
//
// Walks the body of @forward once, in order (the frontend unrolls every loop,
// so it is one block), computing each op's value from its operands' with
// Semantics.h, and drops a value after its last use unless asked to keep it.
//
//===----------------------------------------------------------------------===//

#include "Semantics.h"

#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::interp;

namespace {

std::string where(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto loc = dyn_cast<FileLineColLoc>(op->getLoc()))
    os << loc.getFilename().getValue() << ":" << loc.getLine() << ":" << loc.getColumn();
  else
    op->getLoc().print(os);
  return text;
}

Pointwise activationOf(mlir::xf::Activation a) {
  switch (a) {
  case mlir::xf::Activation::relu:
    return Pointwise::Relu;
  case mlir::xf::Activation::gelu_tanh:
    return Pointwise::GeluTanh;
  case mlir::xf::Activation::gelu_erf:
    return Pointwise::GeluErf;
  case mlir::xf::Activation::silu:
  case mlir::xf::Activation::swiglu:
    return Pointwise::Silu;
  case mlir::xf::Activation::none:
    break;
  }
  return Pointwise::None;
}

class Evaluator {
public:
  Evaluator(const Inputs &inputs) : inputs(inputs) {}

  llvm::Expected<Evaluation> run(func::FuncOp forward, std::function<bool(Operation *)> keep);

private:
  Result evaluateOp(Operation *op);
  const Tensor &operand(Value v) { return values.find(v)->second; }
  const Tensor *optional(Value v) { return v ? &operand(v) : nullptr; }
  double number(Value v) { return operand(v).data.front(); }
  static Result scalar(double x) {
    Tensor t(std::vector<int64_t>{});
    t.data.front() = x;
    return t;
  }
  llvm::Expected<llvm::ArrayRef<int32_t>> tokens(Value v);
  llvm::Expected<int64_t> position(Value offset);
  /// x·W (+ b), with W stored [out, in] when `transposed`.
  Result affine(Value x, Value w, Value b, bool transposed);
  Result parameter(ParameterOp op);
  Result gemm(GemmOp op);
  Result attention(AttentionOp op);
  Result multiHeadAttention(MultiHeadAttentionOp op);
  /// Rotary positions for attentionBySequence: query row t of a sequence at
  /// position t + queryOffset(n, keys), key row s at s.
  struct RotaryPositions {
    RopePairing pairing;
    double base;
    bool queriesEndAtLastKey; // xf.attention: queries are the last n of the keys' positions
  };
  /// Alg. 4 on each sequence of a packed batch (one sequence without
  /// segments): the rows of q, k and v of that sequence, rotated first where
  /// `rotary` says, attended and stacked back.
  Result attentionBySequence(const Tensor &q, const Tensor &k, const Tensor &v, Value segments,
                             Value keySegments, const AttentionShape &shape, int64_t keyValueHeads,
                             std::optional<RotaryPositions> rotary);
  static AttentionShape attentionShapeOf(int64_t heads, int64_t kvHeads,
                                         std::optional<llvm::APFloat> scale, MaskKind mask);
  Result rope(RopeOp op);
  /// A packed batch (@forward_packed): the lengths given for its `segments`
  /// argument, each at least 1, adding up to `rows`.
  llvm::Expected<std::vector<int64_t>> lengths(Value segments, int64_t rows);
  /// `one` on each sequence's rows — queries from `rows`, keys/values from
  /// `keyRows` (the same for self-attention) — stacked back into one tensor.
  /// Without segments, `one` on all rows.
  Result bySequence(
      Value segments, int64_t rows, Value keySegments, int64_t keyRows,
      llvm::function_ref<Result(int64_t first, int64_t n, int64_t keyFirst, int64_t keys)> one);

  const Inputs &inputs;
  llvm::DenseMap<Value, Tensor> values;
};

llvm::Expected<llvm::ArrayRef<int32_t>> Evaluator::tokens(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getArgNumber() >= inputs.sequences.size())
    return evalError("token ids that are not an argument of @forward with a given sequence");
  return llvm::ArrayRef<int32_t>(inputs.sequences[arg.getArgNumber()]);
}

llvm::Expected<int64_t> Evaluator::position(Value offset) {
  if (!offset)
    return 0;
  llvm::APInt value;
  if (!matchPattern(offset, m_ConstantInt(&value)))
    return evalError("a positional offset that is not a constant");
  return value.getSExtValue();
}

llvm::Expected<std::vector<int64_t>> Evaluator::lengths(Value segments, int64_t rows) {
  auto given = tokens(segments);
  if (!given)
    return given.takeError();
  std::vector<int64_t> out;
  int64_t sum = 0;
  for (int32_t n : *given) {
    if (n < 1)
      return evalError("a packed batch's sequence length " + llvm::Twine(n) + " (at least 1)");
    out.push_back(n);
    sum += n;
  }
  if (out.empty() || sum != rows)
    return evalError("the segments add up to " + llvm::Twine(sum) + " rows, the tensor has " +
                     llvm::Twine(rows));
  return out;
}

Result Evaluator::bySequence(Value segments, int64_t rows, Value keySegments, int64_t keyRows,
                             llvm::function_ref<Result(int64_t, int64_t, int64_t, int64_t)> one) {
  if (!segments)
    return one(0, rows, 0, keyRows);
  auto queries = lengths(segments, rows);
  if (!queries)
    return queries.takeError();
  auto keys = lengths(keySegments ? keySegments : segments, keyRows);
  if (!keys)
    return keys.takeError();
  if (keys->size() != queries->size())
    return evalError(llvm::Twine(queries->size()) + " query sequences but " +
                     llvm::Twine(keys->size()) + " key sequences");
  std::vector<Tensor> parts;
  int64_t first = 0, keyFirst = 0;
  for (size_t i = 0; i < queries->size(); ++i) {
    Result part = one(first, (*queries)[i], keyFirst, (*keys)[i]);
    if (!part)
      return part;
    parts.push_back(std::move(*part));
    first += (*queries)[i], keyFirst += (*keys)[i];
  }
  std::vector<const Tensor *> stack;
  for (const Tensor &t : parts)
    stack.push_back(&t);
  return concat(stack, 0);
}

Result Evaluator::affine(Value x, Value w, Value b, bool transposed) {
  Result y = matmul(operand(x), operand(w), transposed);
  if (!y || !b)
    return y;
  return add(*y, operand(b));
}

/// act(norm(x)·W + b) + residual; swiglu: silu(x·W_gate + b_gate) ⊙ (x·W_up +
/// b_up), W = [W_gate | W_up]; norm the prologue's layer or RMS norm, if any.
Result Evaluator::gemm(GemmOp op) {
  auto product = [&]() -> Result {
    std::optional<GemmNorm> norm = op.getNorm();
    if (!norm)
      return affine(op.getInput(), op.getWeight(), op.getBias(), op.getTransposeWeight());
    const double eps = op.getNormEpsilon()->convertToDouble();
    Result x = *norm == GemmNorm::layer_norm
                   ? layerNorm(operand(op.getInput()), optional(op.getNormGamma()),
                               optional(op.getNormBeta()), eps)
                   : rmsNorm(operand(op.getInput()), optional(op.getNormGamma()), eps);
    if (!x)
      return x;
    Result y = matmul(*x, operand(op.getWeight()), op.getTransposeWeight());
    if (!y || !op.getBias())
      return y;
    return add(*y, operand(op.getBias()));
  };
  Result p = product();
  if (!p)
    return p;
  Tensor y;
  if (op.getActivation() == mlir::xf::Activation::swiglu) {
    const int64_t n = p->cols() / 2;
    y = Tensor({p->rows(), n});
    for (int64_t i = 0; i < p->rows(); ++i)
      for (int64_t j = 0; j < n; ++j)
        y.row(i)[j] = activate(Pointwise::Silu, p->row(i)[j]) * p->row(i)[n + j];
  } else {
    y = map(*p, activationOf(op.getActivation()));
  }
  if (!op.getResidual())
    return y;
  return add(y, operand(op.getResidual()));
}

AttentionShape Evaluator::attentionShapeOf(int64_t heads, int64_t kvHeads,
                                           std::optional<llvm::APFloat> scale, MaskKind mask) {
  AttentionShape shape;
  shape.heads = heads, shape.kvHeads = kvHeads;
  if (scale)
    shape.scale = scale->convertToDouble();
  shape.causal = mask == MaskKind::causal;
  return shape;
}

Result Evaluator::attentionBySequence(const Tensor &q, const Tensor &k, const Tensor &v,
                                      Value segments, Value keySegments,
                                      const AttentionShape &shape, int64_t keyValueHeads,
                                      std::optional<RotaryPositions> rotary) {
  return bySequence(segments, q.rows(), keySegments, k.rows(),
                    [&](int64_t first, int64_t n, int64_t keyFirst, int64_t keys) -> Result {
                      Result qi = slice(q, 0, first, n);
                      Result ki = qi ? slice(k, 0, keyFirst, keys) : qi.takeError();
                      Result vi = ki ? slice(v, 0, keyFirst, keys) : ki.takeError();
                      if (!vi)
                        return vi;
                      if (rotary) {
                        bool adjacent = rotary->pairing == RopePairing::adjacent;
                        int64_t queryFirst = rotary->queriesEndAtLastKey ? keys - n : 0;
                        qi = interp::rope(*qi, shape.heads, adjacent, rotary->base, queryFirst);
                        ki = qi ? interp::rope(*ki, keyValueHeads, adjacent, rotary->base, 0)
                                : qi.takeError();
                        if (!ki)
                          return ki;
                      }
                      return interp::attention(*qi, *ki, *vi, shape);
                    });
}

/// Per sequence of a packed batch: query row t at position t + (ℓ_z − ℓ), key
/// row s at s, attention within the sequence.
Result Evaluator::attention(AttentionOp op) {
  std::optional<RotaryPositions> rotary;
  if (std::optional<RopePairing> pairing = op.getRope())
    rotary = RotaryPositions{*pairing, op.getRopeBase()->convertToDouble(), true};
  return attentionBySequence(
      operand(op.getQuery()), operand(op.getKey()), operand(op.getValue()), op.getSegments(),
      op.getKeySegments(),
      attentionShapeOf(op.getHeads(), op.getKeyValueHeads(), op.getScale(), op.getMask()),
      op.getKeyValueHeads(), rotary);
}

/// Alg. 5: projections, rotary positions on Q and K (each sequence from
/// position 0), attention, W_o.
Result Evaluator::multiHeadAttention(MultiHeadAttentionOp op) {
  bool t = op.getTransposeWeights();
  Value context = op.getContextSeq() ? op.getContextSeq() : op.getInput();
  Result q = affine(op.getInput(), op.getWq(), op.getBq(), t);
  Result k = q ? affine(context, op.getWk(), op.getBk(), t) : q.takeError();
  Result v = k ? affine(context, op.getWv(), op.getBv(), t) : k.takeError();
  if (!v)
    return v;
  std::optional<RotaryPositions> rotary;
  if (std::optional<RopePairing> pairing = op.getRope())
    rotary = RotaryPositions{
        *pairing, op.getRopeBase() ? op.getRopeBase()->convertToDouble() : 10000.0, false};
  Result y = attentionBySequence(
      *q, *k, *v, op.getSegments(), op.getKeySegments(),
      attentionShapeOf(op.getHeads(), op.getKeyValueHeads(), op.getScale(), op.getMask()),
      op.getKeyValueHeads(), rotary);
  if (!y)
    return y;
  Result o = matmul(*y, operand(op.getWo()), t);
  if (!o || !op.getBo())
    return o;
  return add(*o, operand(op.getBo()));
}

Result Evaluator::parameter(ParameterOp p) {
  auto it = inputs.parameters.find(p.getName());
  auto type = cast<RankedTensorType>(p.getType());
  if (it == inputs.parameters.end())
    return evalError("no value for parameter '" + p.getName() + "'");
  if (llvm::ArrayRef<int64_t>(it->second.shape) != type.getShape())
    return evalError("parameter '" + p.getName() + "' is given with another shape");
  Tensor r(std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
  for (size_t i = 0; i < r.data.size(); ++i)
    r.data[i] = it->second.data[i];
  return r;
}

Result Evaluator::rope(RopeOp o) {
  auto first = position(o.getOffset());
  if (!first)
    return first.takeError();
  const Tensor &input = operand(o.getInput());
  return bySequence(o.getSegments(), input.rows(), {}, input.rows(),
                    [&](int64_t row, int64_t n, int64_t, int64_t) -> Result {
                      Result part = slice(input, 0, row, n);
                      if (!part)
                        return part;
                      return interp::rope(*part, o.getHeads(),
                                          o.getPairing() == RopePairing::adjacent,
                                          o.getBase().convertToDouble(), *first);
                    });
}

Result Evaluator::evaluateOp(Operation *op) {
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([&](ParameterOp o) { return parameter(o); })
      .Case([&](TransposeOp o) -> Result { return transpose(operand(o.getInput())); })
      .Case([&](ConcatOp o) -> Result {
        llvm::SmallVector<const Tensor *> parts;
        for (Value v : o.getInputs())
          parts.push_back(&operand(v));
        return concat(parts, o.getAxis());
      })
      .Case([&](SliceOp o) -> Result {
        auto type = cast<RankedTensorType>(o.getType());
        return slice(operand(o.getInput()), o.getAxis(), o.getOffset(),
                     type.getDimSize(o.getAxis()));
      })
      .Case([&](RowOp o) -> Result { return row(operand(o.getInput()), o.getIndex()); })
      .Case([&](TokenEmbedOp o) -> Result {
        auto ids = tokens(o.getTokens());
        if (!ids)
          return ids.takeError();
        return tokenEmbed(operand(o.getTable()), *ids);
      })
      .Case([&](PositionalEmbedOp o) -> Result {
        auto ids = tokens(o.getTokens());
        auto first = ids ? position(o.getOffset()) : ids.takeError();
        if (!first)
          return first.takeError();
        return bySequence(o.getSegments(), ids->size(), {}, ids->size(),
                          [&](int64_t, int64_t n, int64_t, int64_t) {
                            return positionalEmbed(operand(o.getTable()), n, *first);
                          });
      })
      .Case([&](SinusoidalEmbedOp o) -> Result {
        auto ids = tokens(o.getTokens());
        auto first = ids ? position(o.getOffset()) : ids.takeError();
        if (!first)
          return first.takeError();
        auto type = cast<RankedTensorType>(o.getType());
        return bySequence(o.getSegments(), ids->size(), {}, ids->size(),
                          [&](int64_t, int64_t n, int64_t, int64_t) {
                            return sinusoidalEmbed(n, type.getDimSize(1),
                                                   o.getBase().convertToDouble(), *first);
                          });
      })
      .Case([&](LinearOp o) -> Result {
        return affine(o.getInput(), o.getWeight(), o.getBias(), o.getTransposeWeight());
      })
      .Case([&](MatmulOp o) -> Result {
        return matmul(operand(o.getLhs()), operand(o.getRhs()), o.getTransposeRhs());
      })
      .Case([&](UnembedOp o) -> Result {
        return matmul(operand(o.getInput()), operand(o.getWeight()), o.getTied());
      })
      .Case([&](GemmOp o) { return gemm(o); })
      .Case([&](AddOp o) -> Result { return add(operand(o.getLhs()), operand(o.getRhs())); })
      .Case([&](MulOp o) -> Result { return multiply(operand(o.getLhs()), operand(o.getRhs())); })
      .Case([&](ReluOp o) -> Result { return map(operand(o.getInput()), Pointwise::Relu); })
      .Case([&](GeluOp o) -> Result {
        return map(operand(o.getInput()), o.getApproximation() == GeluApproximation::tanh
                                              ? Pointwise::GeluTanh
                                              : Pointwise::GeluErf);
      })
      .Case([&](SiluOp o) -> Result { return map(operand(o.getInput()), Pointwise::Silu); })
      .Case([&](ScaleOp o) -> Result {
        Tensor r = operand(o.getInput());
        double factor = o.getFactor().convertToDouble();
        if (o.getMultiplier())
          factor *= number(o.getMultiplier());
        for (double &x : r.data)
          x *= factor;
        return r;
      })
      // Numbers known when the model runs: rank 0 tensors.
      .Case([&](LengthOp o) -> Result {
        auto ids = tokens(o.getTokens());
        if (!ids)
          return ids.takeError();
        return scalar(double(ids->size()));
      })
      .Case([&](arith::ConstantOp o) -> Result {
        auto value = dyn_cast<FloatAttr>(o.getValue());
        if (!value)
          return evalError("a constant that is not a number");
        return scalar(value.getValueAsDouble());
      })
      .Case([&](arith::AddFOp o) { return scalar(number(o.getLhs()) + number(o.getRhs())); })
      .Case([&](arith::SubFOp o) { return scalar(number(o.getLhs()) - number(o.getRhs())); })
      .Case([&](arith::MulFOp o) { return scalar(number(o.getLhs()) * number(o.getRhs())); })
      .Case([&](arith::DivFOp o) { return scalar(number(o.getLhs()) / number(o.getRhs())); })
      .Case([&](SoftmaxOp o) -> Result { return softmaxRows(operand(o.getInput())); })
      .Case([&](LayerNormOp o) -> Result {
        return layerNorm(operand(o.getInput()), optional(o.getGamma()), optional(o.getBeta()),
                         o.getEpsilon().convertToDouble());
      })
      .Case([&](RmsNormOp o) -> Result {
        return rmsNorm(operand(o.getInput()), optional(o.getGamma()),
                       o.getEpsilon().convertToDouble());
      })
      .Case([&](AttentionOp o) { return attention(o); })
      .Case([&](RopeOp o) { return rope(o); })
      .Case([&](MultiHeadAttentionOp o) { return multiHeadAttention(o); })
      .Default([&](Operation *o) -> Result {
        return evalError("the interpreter has no semantics for '" + o->getName().getStringRef() +
                         "'");
      });
}

llvm::Expected<Evaluation> Evaluator::run(func::FuncOp forward,
                                          std::function<bool(Operation *)> keep) {
  Block &body = forward.getBody().front();
  if (forward.getNumArguments() != inputs.sequences.size())
    return evalError("@forward takes " + llvm::Twine(forward.getNumArguments()) +
                     " token sequences, given " + llvm::Twine(inputs.sequences.size()));
  // The last op reading each value, so values die as soon as they can.
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : body)
    for (Value v : op.getOperands())
      lastUse[v] = &op;
  Evaluation evaluation;
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 1 || !values.count(ret.getOperand(0)))
        return evalError("@forward must return one computed tensor");
      evaluation.result = values.find(ret.getOperand(0))->second;
      return evaluation;
    }
    if (op.getNumResults() != 1)
      return evalError(where(&op) + ": '" + op.getName().getStringRef() +
                       "' does not have one result");
    if (!op.getResult(0).getType().isF64() && matchPattern(op.getResult(0), m_Constant()))
      continue; // an index constant: read by position()
    Result value = evaluateOp(&op);
    if (!value)
      return evalError(where(&op) + ": " + llvm::toString(value.takeError()));
    if (keep && keep(&op))
      evaluation.kept[&op] = *value;
    values[op.getResult(0)] = std::move(*value);
    for (Value v : op.getOperands())
      if (lastUse.lookup(v) == &op)
        values.erase(v);
  }
  return evalError("@forward has no return");
}

} // namespace

llvm::Expected<Evaluation> mlir::xf::interp::evaluate(func::FuncOp forward, const Inputs &inputs,
                                                      std::function<bool(Operation *)> keep) {
  Evaluator evaluator(inputs);
  return evaluator.run(forward, std::move(keep));
}
