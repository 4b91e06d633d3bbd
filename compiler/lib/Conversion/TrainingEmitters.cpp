//===- TrainingEmitters.cpp - @loss_and_gradients ops → kernel calls ------===//
//
// The kernel emitters of the training step (docs/training.md), one per op
// type of the backward pass, listed in backwardEmitters(): loop kernels of the
// gradients (LoopKernels.h), the chunked GEMMs of the weight gradients, and
// the sums into each gradient's accumulation target (placed by
// LowerTraining.cpp). Forward ops of the training step take the forward's
// emitters (KernelEmitters.cpp).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xf;

/// The loss op and its gradient on the same logits and targets: the gradient's
/// kernel also writes the loss's row terms, so the softmax runs once.
template <typename Partner, typename Op> static Operation *crossEntropyPartner(Op op) {
  for (Operation *user : op.getLogits().getUsers())
    if (auto partner = dyn_cast<Partner>(user); partner && partner.getTargets() == op.getTargets())
      return partner;
  return nullptr;
}

const llvm::DenseMap<TypeID, HostLowering::BackwardEmitter> &HostLowering::backwardEmitters() {
  static const llvm::DenseMap<TypeID, BackwardEmitter> table = [] {
    llvm::DenseMap<TypeID, BackwardEmitter> t;
    addBackwardEmitter<WeightGradOp, &HostLowering::emitWeightGrad>(t, /*loop=*/false);
    addBackwardEmitter<TransposeOp, &HostLowering::emitGradientTranspose>(t);
    addBackwardEmitter<SliceOp, &HostLowering::emitGradientSlice>(t);
    addBackwardEmitter<AddOp, &HostLowering::emitGradientSum>(t);
    addBackwardEmitter<RowGradOp, &HostLowering::emitRowGrad>(t);
    addBackwardEmitter<SliceGradOp, &HostLowering::emitSliceGrad>(t);
    addBackwardEmitter<CrossEntropyOp, &HostLowering::emitCrossEntropy>(t);
    addBackwardEmitter<CrossEntropyGradOp, &HostLowering::emitCrossEntropyGrad>(t);
    addBackwardEmitter<LayerNormGradOp, &HostLowering::emitLayerNormGrad>(t);
    addBackwardEmitter<RmsNormGradOp, &HostLowering::emitRmsNormGrad>(t);
    addBackwardEmitter<LayerNormGammaGradOp, &HostLowering::emitLayerNormGammaGrad>(t);
    addBackwardEmitter<RmsNormGammaGradOp, &HostLowering::emitRmsNormGammaGrad>(t);
    addBackwardEmitter<RowSumOp, &HostLowering::emitRowSum>(t);
    addBackwardEmitter<ReluGradOp, &HostLowering::emitReluGrad>(t);
    addBackwardEmitter<SiluGradOp, &HostLowering::emitSiluGrad>(t);
    addBackwardEmitter<GeluGradOp, &HostLowering::emitGeluGrad>(t);
    addBackwardEmitter<RopeGradOp, &HostLowering::emitRopeGrad>(t);
    addBackwardEmitter<TokenEmbedGradOp, &HostLowering::emitTokenEmbedGrad>(t);
    addBackwardEmitter<PositionalEmbedGradOp, &HostLowering::emitPositionalEmbedGrad>(t);
    addBackwardEmitter<AttentionGradOp, &HostLowering::emitAttentionGrad>(t);
    return t;
  }();
  return table;
}

LogicalResult HostLowering::emitBackwardKernel(Operation *op, const BackwardEmitter *backward,
                                               const KernelEmitter *forward) {
  Value v = op->getResult(0);
  Storage storage = placements[v].storage;
  if (storage == Storage::Parameter || storage == Storage::Derived || storage == Storage::View)
    return success();
  if (backward && !backward->loop)
    return backward->emit(*this, op);
  // Loop kernels without a schedule of their own run under the default for their width.
  auto type = cast<RankedTensorType>(v.getType());
  int64_t width = type.getRank() ? type.getShape().back() : 0;
  LoopScheduleAttr attr = loopScheduleAttrOf(op);
  kernels->useSchedule(attr ? loopScheduleOf(attr)
                            : defaultLoopSchedule(std::max<int64_t>(width, 1)));
  if (backward)
    return backward->emit(*this, op);
  return emitForwardKernel(op, forward);
}

LogicalResult HostLowering::emitForwardKernel(Operation *op, const KernelEmitter *emitter) {
  xfrt::KernelSpec site;
  return emitKernel(op, emitter, site);
}

LogicalResult HostLowering::emitForwardKernel(Operation *op) {
  auto it = forwardEmitters().find(op->getName().getTypeID());
  return emitForwardKernel(op, it == forwardEmitters().end() ? nullptr : &it->second);
}

/// Width of an op's result rows (0 for a scalar).
static int64_t widthOf(Operation *op) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  return type.getRank() ? type.getShape().back() : 0;
}

/// out (a static placement) += in (any 2-D or vector placement).
void HostLowering::accumulateInto(Value target, int64_t floatOffset, Value in) {
  const Placement &t = placements[target], &s = placements[in];
  call(kernels->accumulate2d(),
       {pointerOf(in), i64(s.stride), offsetPtr(pointerOf(target), i64(floatOffset)), i64(t.stride),
        i64(s.staticRows), i64(s.cols)});
}

/// Full chunks of chunkRows positions, then the rest in chunks of a quarter
/// of that (at least 16 rows), so a short sequence pays for at most
/// chunkRows/4 − 1 padded rows rather than chunkRows − 1.
LogicalResult HostLowering::emitWeightGrad(WeightGradOp op) {
  Value v = op.getResult();
  bool transposed = op.getTransposeResult();
  Value left = transposed ? op.getGrad() : op.getInput();
  Value right = transposed ? op.getInput() : op.getGrad();
  const int64_t m = colsOf(left), n = colsOf(right);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value target = pointerOf(v), rows = rowsOf(left);
  int64_t stride = placements[v].stride;
  Value leftChunk = offsetPtr(scratchArg, i64(chunkLeftOffset));
  Value rightChunk = offsetPtr(scratchArg, i64(chunkRightOffset));
  // The copies run in tasks over their rows (each writes rows of its own).
  kernels->useSchedule(defaultLoopSchedule(chunkRows));
  auto chunks = [&](Value begin, Value end, int64_t c) {
    GemmKernelSpec spec;
    spec.K = c, spec.N = n, spec.hasResidual = true, spec.schedule = chunkSchedule;
    spec.schedule.kBlock = c;
    spec.name = nameKernel(spec);
    auto loop = scf::ForOp::create(
        *b, loc, begin, end, i64(c), ValueRange{status},
        [&](OpBuilder &nested, Location, Value first, ValueRange carried) {
          OpBuilder::InsertionGuard guard(*b);
          b->setInsertionPointToStart(nested.getInsertionBlock());
          Value stack = LLVM::StackSaveOp::create(*b, loc, ptr);
          status = carried[0];
          Value valid =
              arith::MinSIOp::create(*b, loc, i64(c), arith::SubIOp::create(*b, loc, rows, first));
          call(kernels->transposeChunk(), {rowPointer(left, first), i64(placements[left].stride),
                                           leftChunk, valid, i64(c), i64(m)});
          call(kernels->padChunk(), {rowPointer(right, first), i64(placements[right].stride),
                                     rightChunk, valid, i64(c), i64(n)});
          HalideBufferArg gradient{target, {{i64(n), i64(1)}, {i64(m), i64(stride)}}};
          SmallVector<HalideBufferArg> args{{leftChunk, {{i64(c), i64(1)}, {i64(m), i64(c)}}},
                                            {rightChunk, {{i64(n), i64(1)}, {i64(c), i64(n)}}},
                                            gradient,
                                            gradient};
          orStatus(callHalidePipeline(*b, loc, *program.module, spec.name, args));
          LLVM::StackRestoreOp::create(*b, loc, stack);
          scf::YieldOp::create(*b, loc, ValueRange{status});
        });
    status = loop.getResult(0);
  };
  const int64_t small = std::max<int64_t>(16, chunkRows / 4);
  if (small >= chunkRows) {
    chunks(i64(0), rows, chunkRows);
    return success();
  }
  Value full = arith::MulIOp::create(*b, loc, arith::DivSIOp::create(*b, loc, rows, i64(chunkRows)),
                                     i64(chunkRows));
  chunks(i64(0), full, chunkRows);
  chunks(full, rows, small);
  return success();
}

/// The transpose of a gradient with an accumulation target, written whole.
LogicalResult HostLowering::emitGradientTranspose(TransposeOp transpose) {
  Value v = transpose.getResult();
  if (!accumulation.count(v))
    return emitForwardKernel(transpose);
  FailureOr<Value> in = densePointer(transpose, transpose.getInput());
  if (failed(in))
    return failure();
  const Placement &from = placements[transpose.getInput()];
  call(kernels->transpose2d(), {*in, pointerOf(v), i64(from.staticRows), i64(from.cols)});
  return success();
}

/// A static slice of a gradient with an accumulation target: adds its part.
LogicalResult HostLowering::emitGradientSlice(SliceOp slice) {
  Value v = slice->getResult(0);
  if (!accumulation.count(v))
    return emitForwardKernel(slice);
  const Placement &in = placements[slice.getInput()];
  bool rowsOfMatrix = cast<RankedTensorType>(v.getType()).getRank() == 2 && slice.getAxis() == 0;
  Value from = offsetPtr(pointerOf(slice.getInput()),
                         i64(slice.getOffset() * (rowsOfMatrix ? in.stride : 1)));
  const Placement &out = placements[v];
  call(kernels->accumulate2d(),
       {from, i64(in.stride), pointerOf(v), i64(out.stride), i64(out.staticRows), i64(out.cols)});
  return success();
}

/// A sum of static gradients: each operand not already accumulated in place
/// adds into the target. A sum of activations is the forward's add.
LogicalResult HostLowering::emitGradientSum(AddOp add) {
  if (!cast<RankedTensorType>(add.getType()).hasStaticShape())
    return emitForwardKernel(add);
  for (Value operand : {add.getLhs(), add.getRhs()})
    if (!folded.contains(operand))
      accumulateInto(add->getResult(0), 0, operand);
  return success();
}

LogicalResult HostLowering::emitRowGrad(RowGradOp row) {
  Value v = row->getResult(0);
  if (!folded.contains(row.getGrad()))
    accumulateInto(v, row.getIndex() * placements[v].stride, row.getGrad());
  return success();
}

LogicalResult HostLowering::emitSliceGrad(SliceGradOp slice) {
  Value v = slice->getResult(0), in = slice.getGrad();
  auto type = cast<RankedTensorType>(v.getType());
  if (type.hasStaticShape()) {
    if (!folded.contains(in)) {
      bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
      accumulateInto(v, slice.getOffset() * (rowsOfMatrix ? placements[v].stride : 1), in);
    }
    return success();
  }
  if (slice.getAxis() != 1)
    return slice->emitError("training: slice_grad of activations along rows is not lowered");
  FailureOr<Value> src = densePointer(slice, in);
  if (failed(src))
    return failure();
  call(kernels->sliceGrad(colsOf(in), widthOf(slice), slice.getOffset()),
       {*src, pointerOf(v), rowsOf(in)});
  return success();
}

LogicalResult HostLowering::emitCrossEntropy(CrossEntropyOp ce) {
  if (crossEntropyPartner<CrossEntropyGradOp>(ce))
    return success(); // computed with the gradient
  FailureOr<Value> z = densePointer(ce, ce.getLogits());
  if (failed(z))
    return failure();
  call(kernels->crossEntropy(colsOf(ce.getLogits())),
       {*z, pointerOf(ce.getTargets()), lossArg, rowsOf(ce.getLogits())});
  return success();
}

/// The per-row loss terms go to the op's work slot (scratch after the static slots).
LogicalResult HostLowering::emitCrossEntropyGrad(CrossEntropyGradOp ce) {
  Value v = ce->getResult(0);
  FailureOr<Value> z = densePointer(ce, ce.getLogits());
  if (failed(z))
    return failure();
  Value terms = offsetPtr(
      offsetPtr(scratchArg, i64(staticFloats)),
      arith::MulIOp::create(*b, loc, paddedRows, i64(plan.columnOffset[workRequests.lookup(ce)])));
  call(kernels->crossEntropyGrad(widthOf(ce)),
       {*z, pointerOf(ce.getTargets()), pointerOf(v), terms, rowsOf(v)});
  if (crossEntropyPartner<CrossEntropyOp>(ce))
    call(kernels->crossEntropyMean(), {terms, pointerOf(ce.getTargets()), lossArg, rowsOf(v)});
  return success();
}

/// Norms: (x, dy, [γ]) → dx, or the gain's gradient.
LogicalResult HostLowering::emitNormGrad(Operation *op, Value x, Value dy, Value gamma,
                                         func::FuncOp kernel) {
  FailureOr<Value> xp = densePointer(op, x), dyp = densePointer(op, dy);
  if (failed(xp) || failed(dyp))
    return failure();
  SmallVector<Value> args{*xp, *dyp};
  if (gamma)
    args.push_back(pointerOf(gamma));
  args.append({pointerOf(op->getResult(0)), rowsOf(x)});
  call(kernel, args);
  return success();
}

LogicalResult HostLowering::emitLayerNormGrad(LayerNormGradOp ln) {
  return emitNormGrad(ln, ln.getInput(), ln.getGrad(), ln.getGamma(),
                      kernels->normalizeGrad(widthOf(ln), ln.getEpsilon().convertToDouble(), true,
                                             bool(ln.getGamma())));
}

LogicalResult HostLowering::emitRmsNormGrad(RmsNormGradOp rms) {
  return emitNormGrad(rms, rms.getInput(), rms.getGrad(), rms.getGamma(),
                      kernels->normalizeGrad(widthOf(rms), rms.getEpsilon().convertToDouble(),
                                             false, bool(rms.getGamma())));
}

LogicalResult HostLowering::emitLayerNormGammaGrad(LayerNormGammaGradOp ln) {
  return emitNormGrad(
      ln, ln.getInput(), ln.getGrad(), Value(),
      kernels->normalizeGammaGrad(widthOf(ln), ln.getEpsilon().convertToDouble(), true));
}

LogicalResult HostLowering::emitRmsNormGammaGrad(RmsNormGammaGradOp rms) {
  return emitNormGrad(
      rms, rms.getInput(), rms.getGrad(), Value(),
      kernels->normalizeGammaGrad(widthOf(rms), rms.getEpsilon().convertToDouble(), false));
}

LogicalResult HostLowering::emitRowSum(RowSumOp sum) {
  FailureOr<Value> in = densePointer(sum, sum.getInput());
  if (failed(in))
    return failure();
  call(kernels->rowSum(widthOf(sum)), {*in, pointerOf(sum->getResult(0)), rowsOf(sum.getInput())});
  return success();
}

/// (x read in place, dy) → dx.
LogicalResult HostLowering::emitActivationGrad(Operation *op, Value x, Value dy,
                                               ActivationGradKind kind) {
  Value v = op->getResult(0);
  auto [xp, xs] = stridedPointer(x);
  FailureOr<Value> dyp = densePointer(op, dy);
  if (failed(dyp))
    return failure();
  call(kernels->activationGrad(widthOf(op), kind), {xp, xs, *dyp, pointerOf(v), rowsOf(v)});
  return success();
}

LogicalResult HostLowering::emitReluGrad(ReluGradOp g) {
  return emitActivationGrad(g, g.getInput(), g.getGrad(), ActivationGradKind::Relu);
}

LogicalResult HostLowering::emitSiluGrad(SiluGradOp g) {
  return emitActivationGrad(g, g.getInput(), g.getGrad(), ActivationGradKind::Silu);
}

LogicalResult HostLowering::emitGeluGrad(GeluGradOp g) {
  return emitActivationGrad(g, g.getInput(), g.getGrad(),
                            g.getApproximation() == GeluApproximation::tanh
                                ? ActivationGradKind::GeluTanh
                                : ActivationGradKind::GeluErf);
}

/// The inverse rotation of the gradient's rows.
LogicalResult HostLowering::emitRopeGrad(RopeGradOp rope) {
  Value v = rope->getResult(0);
  auto [in, stride] = stridedPointer(rope.getGrad());
  int64_t heads = rope.getHeads();
  auto pairs =
      rope.getPairing() == RopePairing::adjacent ? RotaryPairs::Adjacent : RotaryPairs::Halves;
  call(kernels->rotaryRows(heads, widthOf(rope) / heads, pairs, rope.getBase().convertToDouble(),
                           /*inverse=*/true),
       {in, stride, pointerOf(v), rowsOf(v), i64(0)});
  return success();
}

LogicalResult HostLowering::emitTokenEmbedGrad(TokenEmbedGradOp embed) {
  Value v = embed->getResult(0);
  FailureOr<Value> dy = densePointer(embed, embed.getGrad());
  if (failed(dy))
    return failure();
  call(kernels->tokenEmbedGrad(widthOf(embed)),
       {pointerOf(embed.getTokens()), *dy, pointerOf(v), i64(placements[v].stride),
        rowsOf(embed.getGrad())});
  return success();
}

LogicalResult HostLowering::emitPositionalEmbedGrad(PositionalEmbedGradOp pos) {
  Value v = pos->getResult(0);
  FailureOr<Value> dy = densePointer(pos, pos.getGrad());
  if (failed(dy))
    return failure();
  call(kernels->positionGrad(widthOf(pos)),
       {*dy, pointerOf(v), i64(placements[v].stride), rowsOf(pos.getGrad())});
  return success();
}

/// dQ, dK, dV of attention; its work slot holds the recomputed probabilities' rows.
LogicalResult HostLowering::emitAttentionGrad(AttentionGradOp attn) {
  int64_t heads = attn.getHeads(), kvHeads = attn.getKeyValueHeads();
  int64_t dK = colsOf(attn.getQuery()) / heads, dV = colsOf(attn.getValue()) / kvHeads;
  double scale = attn.getScale() ? attn.getScale()->convertToDouble() : 1.0 / std::sqrt(double(dK));
  auto [q, qs] = stridedPointer(attn.getQuery());
  auto [k, ks] = stridedPointer(attn.getKey());
  auto [val, vs] = stridedPointer(attn.getValue());
  auto [dy, dys] = stridedPointer(attn.getGrad());
  Value work = offsetPtr(
      offsetPtr(scratchArg, i64(staticFloats)),
      arith::MulIOp::create(*b, loc, paddedRows, i64(plan.columnOffset[workRequests.lookup(attn)])));
  call(kernels->attentionGrad(heads, kvHeads, dK, dV, attn.getMask() == MaskKind::causal, scale),
       {q, qs, k, ks, val, vs, dy, dys, pointerOf(attn.getQueryGrad()),
        pointerOf(attn.getKeyGrad()), pointerOf(attn.getValueGrad()), work, rowsOf(attn.getQuery()),
        rowsOf(attn.getKey()), i64(kvHeads)});
  return success();
}
