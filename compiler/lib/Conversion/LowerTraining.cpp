//===- LowerTraining.cpp - @loss_and_gradients → xf_train_step ------------===//
//
// The training entry points (docs/training.md): the gradients' accumulation
// targets and slots, the backward kernels (loop kernels and GEMMs of the
// weight gradients, chunked over positions), xf_train_step and
// xf_train_scratch_bytes, and the training manifest. Reuses the forward's
// placement and emitters (HostLowering.h).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "llvm/Support/JSON.h"

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

/// An op whose static-shaped result is a parameter's gradient or a part of
/// one: it adds into its accumulation target.
static bool isGradientSum(Operation *op) {
  return op->getNumResults() == 1 &&
         isa<WeightGradOp, RowSumOp, LayerNormGammaGradOp, RmsNormGammaGradOp, TokenEmbedGradOp,
             PositionalEmbedGradOp, SliceGradOp, RowGradOp, AddOp>(op) &&
         cast<RankedTensorType>(op->getResult(0).getType()).hasStaticShape();
}

/// The transpose of a gradient (the gradient of a weight stored the other way
/// round): written whole into a slot of its own.
static bool isGradientTranspose(Operation *op) {
  auto transpose = dyn_cast<TransposeOp>(op);
  Operation *def = transpose ? transpose.getInput().getDefiningOp() : nullptr;
  return def && isGradientSum(def);
}

/// A static slice of a gradient (the per-head parts of a concatenated
/// weight): returned, it adds its part of the gradient into its own output.
static bool isGradientSlice(Operation *op) {
  auto slice = dyn_cast<SliceOp>(op);
  Operation *def = slice ? slice.getInput().getDefiningOp() : nullptr;
  return def && (isGradientSum(def) || isGradientTranspose(def)) &&
         cast<RankedTensorType>(slice.getType()).hasStaticShape();
}

/// Returned gradients accumulate into grads[i]. Going backwards, a static
/// gradient whose only user is a sum or a slice_grad with a target shares
/// that target (at the slice's offset), so tied tables, fused-weight slices
/// and the c_attn bias parts add into the output in place; any other gets
/// a Static slot of its own, zeroed at entry.
LogicalResult HostLowering::planAccumulation(func::ReturnOp ret) {
  auto shapeOf = [](Placement &t, Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    t.cols = colsOf(v);
    t.staticRows = type.getRank() == 2 ? type.getDimSize(0) : 1;
  };
  for (auto [i, g] : llvm::enumerate(ret.getOperands().drop_front())) {
    Operation *def = g.getDefiningOp();
    if (!def || !(isGradientSum(def) || isGradientSlice(def)))
      return ret.emitError("training: gradient ") << i << " is not computed by a gradient op";
    if (accumulation.count(g))
      return ret.emitError("training: one value is returned as two gradients");
    Placement t{Storage::Gradient, int64_t(i)};
    shapeOf(t, g);
    t.stride = t.cols;
    accumulation[g] = t;
  }
  for (Operation &op : llvm::reverse(forward.getBody().front().getOperations())) {
    bool transpose = isGradientTranspose(&op);
    if (!(isGradientSum(&op) || transpose) || accumulation.count(op.getResult(0))) {
      if (transpose)
        return op.emitError("training: a transposed gradient is returned directly");
      continue;
    }
    Value v = op.getResult(0);
    auto type = cast<RankedTensorType>(v.getType());
    Placement t;
    Operation *user = v.hasOneUse() && !transpose ? *v.getUsers().begin() : nullptr;
    auto target = user && isa<AddOp, SliceGradOp, RowGradOp>(user)
                      ? accumulation.find(user->getResult(0))
                      : accumulation.end();
    if (target != accumulation.end()) {
      t = target->second;
      if (auto slice = dyn_cast<SliceGradOp>(user)) {
        bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
        t.colOffset += slice.getOffset() * (rowsOfMatrix ? t.stride : 1);
      } else if (auto row = dyn_cast<RowGradOp>(user)) {
        t.colOffset += row.getIndex() * t.stride;
      }
      folded.insert(v);
    } else {
      t = Placement{Storage::Static, staticFloats};
      t.stride = colsOf(v);
      staticFloats += (type.getNumElements() + 15) / 16 * 16;
    }
    shapeOf(t, v);
    accumulation[v] = t;
  }
  return success();
}

LogicalResult HostLowering::placeTraining() {
  // ([source,] tokens, targets): an encoder-decoder's source has its own rows.
  unsigned count = forward.getNumArguments();
  encoderDecoder = count == 3;
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32) || count < 2 ||
        count > 3)
      return forward.emitError("@loss_and_gradients takes [source ids,] token ids and target "
                               "ids, tensor<?xi32> each");
    Placement p{Storage::Tokens, arg.getArgNumber()};
    p.rows = encoderDecoder && arg.getArgNumber() == 0 ? Rows::Source : Rows::Target;
    placements[arg] = p;
  }
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1 || !ret.getOperand(0).getDefiningOp<CrossEntropyOp>())
    return ret.emitError("@loss_and_gradients must return the loss (xf.cross_entropy) first");
  if (failed(planAccumulation(ret)))
    return failure();
  int64_t staticSlots = staticFloats;

  // Weight gradients run in chunks of chunkRows positions: a GEMM with
  // K = chunkRows over the chunk's rows, transposed and zero-padded, that adds
  // into the gradient (its residual). The chunk follows the longest sequence
  // the model takes, so short sequences do not pay for a long chunk.
  int64_t limit = hyperparameterPositionLimit(forward);
  forward.walk([&](PositionalEmbedOp op) { limit = op.getTable().getType().getDimSize(0); });
  chunkRows = limit > 0 ? std::clamp<int64_t>((limit + 15) / 16 * 16, 16, 256) : 256;
  forward.walk([&](GemmOp gemm) {
    if (auto attr = gemm.getScheduleAttr())
      chunkSchedule = gemmScheduleOf(attr);
  });
  chunkSchedule.kBlock = chunkRows;
  int64_t leftFloats = 0, rightFloats = 0;
  int64_t index = 0;
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (failed(placeOp(&op, index++)))
      return failure();
    if (auto grad = dyn_cast<WeightGradOp>(op)) {
      bool t = grad.getTransposeResult();
      leftFloats = std::max(leftFloats, chunkRows * colsOf(t ? grad.getGrad() : grad.getInput()));
      rightFloats = std::max(rightFloats, chunkRows * colsOf(t ? grad.getInput() : grad.getGrad()));
    }
  }
  chunkLeftOffset = staticFloats;
  staticFloats += (leftFloats + 15) / 16 * 16;
  chunkRightOffset = staticFloats;
  staticFloats += (rightFloats + 15) / 16 * 16;
  zeroedFloats = staticSlots;
  plan = planBuffers(requests);
  return success();
}

void HostLowering::accumulateInto(Value target, int64_t floatOffset, Value in) {
  Placement &t = placements[target], &s = placements[in];
  call(kernels->accumulate2d(),
       {pointerOf(in), i64(s.stride), offsetPtr(pointerOf(target), i64(floatOffset)),
        i64(t.stride), i64(s.staticRows), i64(s.cols)});
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
          Value valid = arith::MinSIOp::create(*b, loc, i64(c),
                                               arith::SubIOp::create(*b, loc, rows, first));
          call(kernels->transposeChunk(), {rowPointer(left, first), i64(placements[left].stride),
                                           leftChunk, valid, i64(c), i64(m)});
          call(kernels->padChunk(), {rowPointer(right, first), i64(placements[right].stride),
                                     rightChunk, valid, i64(c), i64(n)});
          HalideBufferArg gradient{target, {{i64(n), i64(1)}, {i64(m), i64(stride)}}};
          SmallVector<HalideBufferArg> args{
              {leftChunk, {{i64(c), i64(1)}, {i64(m), i64(c)}}},
              {rightChunk, {{i64(n), i64(1)}, {i64(c), i64(n)}}},
              gradient, gradient};
          status = arith::OrIOp::create(
              *b, loc, status, callHalidePipeline(*b, loc, *program.module, spec.name, args));
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
  Value full = arith::MulIOp::create(
      *b, loc, arith::DivSIOp::create(*b, loc, rows, i64(chunkRows)), i64(chunkRows));
  chunks(i64(0), full, chunkRows);
  chunks(full, rows, small);
  return success();
}

LogicalResult HostLowering::emitBackwardKernel(Operation *op) {
  Value v = op->getResult(0);
  Storage storage = placements[v].storage;
  if (storage == Storage::Parameter || storage == Storage::Derived || storage == Storage::View)
    return success();
  if (auto grad = dyn_cast<WeightGradOp>(op))
    return emitWeightGrad(grad);
  auto dense = [&](Value t) -> FailureOr<Value> {
    if (failed(requireDense(op, t)))
      return failure();
    return pointerOf(t);
  };
  auto strided = [&](Value t) -> std::pair<Value, Value> {
    return {pointerOf(t), i64(placements[t].stride)};
  };
  auto type = cast<RankedTensorType>(v.getType());
  int64_t width = type.getRank() ? type.getShape().back() : 0;
  LoopScheduleAttr attr = loopScheduleAttrOf(op);
  kernels->useSchedule(attr ? loopScheduleOf(attr) : defaultLoopSchedule(std::max<int64_t>(width, 1)));

  if (auto transpose = dyn_cast<TransposeOp>(op); transpose && accumulation.count(v)) {
    FailureOr<Value> in = dense(transpose.getInput());
    if (failed(in))
      return failure();
    Placement &from = placements[transpose.getInput()];
    call(kernels->transpose2d(), {*in, pointerOf(v), i64(from.staticRows), i64(from.cols)});
    return success();
  }
  if (auto slice = dyn_cast<SliceOp>(op); slice && accumulation.count(v)) {
    Placement &in = placements[slice.getInput()];
    bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
    Value from = offsetPtr(pointerOf(slice.getInput()),
                           i64(slice.getOffset() * (rowsOfMatrix ? in.stride : 1)));
    Placement &out = placements[v];
    call(kernels->accumulate2d(), {from, i64(in.stride), pointerOf(v), i64(out.stride),
                                   i64(out.staticRows), i64(out.cols)});
    return success();
  }
  if (auto add = dyn_cast<AddOp>(op); add && type.hasStaticShape()) {
    for (Value operand : {add.getLhs(), add.getRhs()})
      if (!folded.contains(operand))
        accumulateInto(v, 0, operand);
    return success();
  }
  if (auto row = dyn_cast<RowGradOp>(op)) {
    if (!folded.contains(row.getGrad()))
      accumulateInto(v, row.getIndex() * placements[v].stride, row.getGrad());
    return success();
  }
  if (auto slice = dyn_cast<SliceGradOp>(op)) {
    Value in = slice.getGrad();
    if (type.hasStaticShape()) {
      if (!folded.contains(in)) {
        bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
        accumulateInto(v, slice.getOffset() * (rowsOfMatrix ? placements[v].stride : 1), in);
      }
      return success();
    }
    if (slice.getAxis() != 1)
      return op->emitError("training: slice_grad of activations along rows is not lowered");
    FailureOr<Value> src = dense(in);
    if (failed(src))
      return failure();
    call(kernels->sliceGrad(colsOf(in), width, slice.getOffset()),
         {*src, pointerOf(v), rowsOf(in)});
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    if (crossEntropyPartner<CrossEntropyGradOp>(ce))
      return success(); // computed with the gradient
    FailureOr<Value> z = dense(ce.getLogits());
    if (failed(z))
      return failure();
    call(kernels->crossEntropy(colsOf(ce.getLogits())),
         {*z, pointerOf(ce.getTargets()), lossArg, rowsOf(ce.getLogits())});
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyGradOp>(op)) {
    FailureOr<Value> z = dense(ce.getLogits());
    if (failed(z))
      return failure();
    Value terms = offsetPtr(offsetPtr(scratchArg, i64(staticFloats)),
                            arith::MulIOp::create(*b, loc, paddedRows,
                                                  i64(plan.columnOffset[workRequests[op]])));
    call(kernels->crossEntropyGrad(width),
         {*z, pointerOf(ce.getTargets()), pointerOf(v), terms, rowsOf(v)});
    if (crossEntropyPartner<CrossEntropyOp>(ce))
      call(kernels->crossEntropyMean(), {terms, pointerOf(ce.getTargets()), lossArg, rowsOf(v)});
    return success();
  }
  // Norms: (x, dy, [γ]) → dx, or the gain's gradient.
  auto norm = [&](Value x, Value dy, Value gamma, func::FuncOp kernel) -> LogicalResult {
    FailureOr<Value> xp = dense(x), dyp = dense(dy);
    if (failed(xp) || failed(dyp))
      return failure();
    SmallVector<Value> args{*xp, *dyp};
    if (gamma)
      args.push_back(pointerOf(gamma));
    args.append({pointerOf(v), rowsOf(x)});
    call(kernel, args);
    return success();
  };
  if (auto ln = dyn_cast<LayerNormGradOp>(op))
    return norm(ln.getInput(), ln.getGrad(), ln.getGamma(),
                kernels->normalizeGrad(width, ln.getEpsilon().convertToDouble(), true,
                                       bool(ln.getGamma())));
  if (auto rms = dyn_cast<RmsNormGradOp>(op))
    return norm(rms.getInput(), rms.getGrad(), rms.getGamma(),
                kernels->normalizeGrad(width, rms.getEpsilon().convertToDouble(), false,
                                       bool(rms.getGamma())));
  if (auto ln = dyn_cast<LayerNormGammaGradOp>(op))
    return norm(ln.getInput(), ln.getGrad(), Value(),
                kernels->normalizeGammaGrad(width, ln.getEpsilon().convertToDouble(), true));
  if (auto rms = dyn_cast<RmsNormGammaGradOp>(op))
    return norm(rms.getInput(), rms.getGrad(), Value(),
                kernels->normalizeGammaGrad(width, rms.getEpsilon().convertToDouble(), false));
  if (auto sum = dyn_cast<RowSumOp>(op)) {
    FailureOr<Value> in = dense(sum.getInput());
    if (failed(in))
      return failure();
    call(kernels->rowSum(width), {*in, pointerOf(v), rowsOf(sum.getInput())});
    return success();
  }
  auto activation = [&](Value x, Value dy, ActivationGradKind kind) -> LogicalResult {
    auto [xp, xs] = strided(x);
    FailureOr<Value> dyp = dense(dy);
    if (failed(dyp))
      return failure();
    call(kernels->activationGrad(width, kind), {xp, xs, *dyp, pointerOf(v), rowsOf(v)});
    return success();
  };
  if (auto g = dyn_cast<ReluGradOp>(op))
    return activation(g.getInput(), g.getGrad(), ActivationGradKind::Relu);
  if (auto g = dyn_cast<SiluGradOp>(op))
    return activation(g.getInput(), g.getGrad(), ActivationGradKind::Silu);
  if (auto g = dyn_cast<GeluGradOp>(op))
    return activation(g.getInput(), g.getGrad(),
                      g.getApproximation() == GeluApproximation::tanh
                          ? ActivationGradKind::GeluTanh
                          : ActivationGradKind::GeluErf);
  if (auto rope = dyn_cast<RopeGradOp>(op)) {
    auto [in, stride] = strided(rope.getGrad());
    int64_t heads = rope.getHeads();
    auto pairs = rope.getPairing() == RopePairing::adjacent ? RotaryPairs::Adjacent
                                                            : RotaryPairs::Halves;
    call(kernels->rotaryRows(heads, width / heads, pairs, rope.getBase().convertToDouble(),
                             /*inverse=*/true),
         {in, stride, pointerOf(v), rowsOf(v), i64(0)});
    return success();
  }
  if (auto embed = dyn_cast<TokenEmbedGradOp>(op)) {
    FailureOr<Value> dy = dense(embed.getGrad());
    if (failed(dy))
      return failure();
    call(kernels->tokenEmbedGrad(width), {pointerOf(embed.getTokens()), *dy, pointerOf(v),
                                          i64(placements[v].stride), rowsOf(embed.getGrad())});
    return success();
  }
  if (auto pos = dyn_cast<PositionalEmbedGradOp>(op)) {
    FailureOr<Value> dy = dense(pos.getGrad());
    if (failed(dy))
      return failure();
    call(kernels->positionGrad(width),
         {*dy, pointerOf(v), i64(placements[v].stride), rowsOf(pos.getGrad())});
    return success();
  }
  if (auto attn = dyn_cast<AttentionGradOp>(op)) {
    int64_t heads = attn.getHeads(), kvHeads = attn.getKeyValueHeads();
    int64_t dK = colsOf(attn.getQuery()) / heads, dV = colsOf(attn.getValue()) / kvHeads;
    double scale = attn.getScale() ? attn.getScale()->convertToDouble()
                                   : 1.0 / std::sqrt(double(dK));
    auto [q, qs] = strided(attn.getQuery());
    auto [k, ks] = strided(attn.getKey());
    auto [val, vs] = strided(attn.getValue());
    auto [dy, dys] = strided(attn.getGrad());
    Value work = offsetPtr(offsetPtr(scratchArg, i64(staticFloats)),
                           arith::MulIOp::create(*b, loc, paddedRows,
                                                 i64(plan.columnOffset[workRequests[op]])));
    call(kernels->attentionGrad(heads, kvHeads, dK, dV, attn.getMask() == MaskKind::causal,
                                scale),
         {q, qs, k, ks, val, vs, dy, dys, pointerOf(attn.getQueryGrad()),
          pointerOf(attn.getKeyGrad()), pointerOf(attn.getValueGrad()), work,
          rowsOf(attn.getQuery()), rowsOf(attn.getKey()), i64(kvHeads)});
    return success();
  }
  // A forward op.
  xfrt::KernelSpec site;
  return emitKernel(op, site);
}

LogicalResult HostLowering::emitTrainStep() {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  // (params, derived, tokens, targets, l, source, l_z, loss, grads, scratch)
  auto fn = func::FuncOp::create(
      top, forward.getLoc(), "xf_train_step",
      FunctionType::get(ctx, {ptr, ptr, ptr, ptr, i64Type, ptr, i64Type, ptr, ptr, ptr},
                        {IntegerType::get(ctx, 32)}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  auto args = fn.getArguments();
  paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], targetsArg = args[3];
  lArg = args[4], sourceArg = args[5], lzArg = args[6];
  lossArg = args[7], gradsArg = args[8], scratchArg = args[9];
  paddedRows = paddedRowsOf(lArg, lzArg);
  status = arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0);
  if (zeroedFloats)
    LLVM::MemsetOp::create(builder, loc, scratchArg,
                           arith::ConstantIntOp::create(builder, loc, builder.getI8Type(), 0),
                           i64(4 * zeroedFloats), /*isVolatile=*/false);
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      break;
    if (failed(emitOp(&op)))
      return failure();
  }
  func::ReturnOp::create(builder, loc, status);
  b = nullptr;
  return success();
}

void HostLowering::emitTrainScratchBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_train_scratch_bytes",
                                 FunctionType::get(ctx, {i64Type, i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  Value arena = arith::MulIOp::create(builder, loc,
                                      paddedRowsOf(fn.getArgument(0), fn.getArgument(1)),
                                      i64(plan.totalColumns));
  Value bytes = arith::MulIOp::create(
      builder, loc, arith::AddIOp::create(builder, loc, arena, i64(staticFloats)), i64(4));
  func::ReturnOp::create(builder, loc,
                         ValueRange{arith::MaxSIOp::create(builder, loc, bytes, i64(64)).getResult()});
  b = nullptr;
}

LogicalResult HostLowering::runTraining(HostLowering &forwardLowering) {
  training = true;
  kernels = forwardLowering.kernels;
  kernelNames = forwardLowering.kernelNames;
  parameterIndex = forwardLowering.parameterIndex;
  parameters = forwardLowering.parameters;
  size_t known = parameters.size();
  if (failed(placeTraining()))
    return failure();
  if (parameters.size() != known)
    return forward.emitError("@loss_and_gradients reads a parameter that @forward does not");
  auto names = forward->getAttrOfType<ArrayAttr>("xf.gradients");
  if (!names || names.size() + 1 != forward.getFunctionType().getNumResults())
    return forward.emitError("@loss_and_gradients needs xf.gradients naming each gradient");
  llvm::json::Array gradients;
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text || !parameterIndex.count(text.getValue()))
      return forward.emitError("xf.gradients names a tensor that is not a parameter");
    gradients.push_back(llvm::json::Object{{"name", text.getValue()},
                                           {"parameter", parameterIndex.lookup(text.getValue())}});
  }
  emitPrepare("xf_train_prepare");
  if (failed(emitTrainStep()))
    return failure();
  emitTrainScratchBytes();
  llvm::json::Array derivedBytes;
  for (Value v : derived)
    derivedBytes.push_back(cast<RankedTensorType>(v.getType()).getNumElements() * 4);
  // The loss a trainer uses by default (xf-differentiate's xf.objective).
  auto objective = forward->getAttrOfType<StringAttr>("xf.objective");
  llvm::json::Object manifest{{"gradients", std::move(gradients)},
                              {"derived", std::move(derivedBytes)},
                              {"chunk_rows", chunkRows},
                              {"objective", objective ? objective.getValue() : "next-token"}};
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(manifest));
  emitManifestGlobal(*program.module, json, "xf_training_manifest");
  return success();
}
