//===- LoopKernelEmitters.cpp - row-wise xf ops → scf loop kernel calls ---===//
//
// The kernel emitters of the ops that run as scf loop kernels (LoopKernels.h:
// norms, softmax, embeddings, positions, elementwise ops), one per op
// (KernelEmitters.cpp lists them). Each calls its kernel over the rows of the
// entry point; positional kernels once per sequence of a packed batch.
// SiLU, the product and rotary positions read column slices in place
// (pointer, row stride); the others read their inputs densely.
//
//===----------------------------------------------------------------------===//

#include "BlockGemvCall.h"
#include "HostLowering.h"
#include "xf/Codegen/FunctionDeclarations.h"

using namespace mlir;
using namespace mlir::xf;

FailureOr<SmallVector<Value>> HostLowering::denseInputs(Operation *op) {
  SmallVector<Value> inputs;
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType())) // an index, a run-time number
      continue;
    // Lengths: the loop over sequences reads them.
    if (packedMode && (operand == packedSegments || operand == packedSourceSegments))
      continue;
    if (placements[operand].storage == Storage::Tokens) {
      inputs.push_back(pointerOf(operand));
      continue;
    }
    FailureOr<Value> ptr = densePointer(op, operand);
    if (failed(ptr))
      return failure();
    inputs.push_back(*ptr);
  }
  return inputs;
}

LogicalResult HostLowering::emitSilu(SiluOp op, const KernelResult &r, xfrt::KernelSpec &) {
  auto [in, stride] = stridedPointer(op->getOperand(0));
  call(kernels->silu(r.width), {in, stride, r.out, r.rows});
  return success();
}

LogicalResult HostLowering::emitMul(MulOp mul, const KernelResult &r, xfrt::KernelSpec &) {
  auto [lhs, lhsStride] = stridedPointer(mul.getLhs());
  auto [rhs, rhsStride] = stridedPointer(mul.getRhs());
  call(kernels->multiply(r.width), {lhs, lhsStride, rhs, rhsStride, r.out, r.rows});
  return success();
}

LogicalResult HostLowering::emitRope(RopeOp rope, const KernelResult &r, xfrt::KernelSpec &) {
  if (rope.getOffset())
    return rope->emitError("explicit positional offsets are not supported by the host lowering");
  const auto input = stridedPointer(rope.getInput());
  Value in = input.first, stride = input.second;
  int64_t heads = rope.getHeads();
  auto pairs =
      rope.getPairing() == RopePairing::adjacent ? RotaryPairs::Adjacent : RotaryPairs::Halves;
  func::FuncOp kernel =
      kernels->rotaryRows(heads, r.width / heads, pairs, rope.getBase().convertToDouble());
  FailureOr<bool> segmented = perSequence(rope, rope.getSegments());
  if (failed(segmented))
    return failure();
  if (*segmented)
    forEachSequence(lengthsOf(rope.getSegments()), Value(), [&](const SequenceSpan &s) {
      call(kernel, {rowPointer(rope.getInput(), s.offset), stride, rowPointer(r.value, s.offset),
                    s.rows, s.position});
    });
  else
    call(kernel, {in, stride, r.out, r.rows, firstPosition()});
  return success();
}

LogicalResult HostLowering::emitTokenEmbed(TokenEmbedOp embed, const KernelResult &r,
                                           xfrt::KernelSpec &site) {
  FailureOr<SmallVector<Value>> inputs = denseInputs(embed);
  if (failed(inputs))
    return failure();
  WeightBlocks blocks = blocksOf(embed.getTable());
  if (blocks == WeightBlocks::None) {
    call(kernels->gatherRows(r.width, isBf16(embed.getTable())),
         {(*inputs)[0], (*inputs)[1], r.out, r.rows});
    return success();
  }
  // Rows of blocks: libxfrt dequantizes them (runtime/lib/BlockRows.cpp).
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto gather = declareFunction(
      *program.module, loc, "xfrt_gather_block_rows",
      FunctionType::get(ctx, {ptr, b->getI64Type(), ptr, ptr, b->getI64Type(), b->getI64Type()},
                        {}));
  func::CallOp::create(
      *b, loc, gather,
      ValueRange{(*inputs)[0], i64(ggmlTypeId(blocks)), (*inputs)[1], r.out, r.rows, i64(r.width)});
  site.name = "xfrt_gather_block_rows";
  return success();
}

LogicalResult HostLowering::emitPositionalEmbed(PositionalEmbedOp pos, const KernelResult &r,
                                                xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> inputs = denseInputs(pos);
  if (failed(inputs))
    return failure();
  if (pos.getOffset())
    return pos->emitError("explicit positional offsets are not supported by the host lowering");
  FailureOr<bool> segmented = perSequence(pos, pos.getSegments());
  if (failed(segmented))
    return failure();
  Value table = (*inputs)[0];
  if (*segmented && rowPositions) { // one launch: each row's position from the step table
    call(kernels->positionRowsAt(r.width), {table, rowPositions, r.out, r.rows});
    return success();
  }
  if (*segmented) // positions restart at each sequence's start
    forEachSequence(lengthsOf(pos.getSegments()), Value(), [&](const SequenceSpan &s) {
      call(kernels->positionRows(r.width),
           {table, rowPointer(r.value, s.offset), s.rows, s.position});
    });
  else
    call(kernels->positionRows(r.width), {table, r.out, r.rows, firstPosition()});
  return success();
}

LogicalResult HostLowering::emitSinusoidalEmbed(SinusoidalEmbedOp sin, const KernelResult &r,
                                                xfrt::KernelSpec &) {
  if (failed(denseInputs(sin)))
    return failure();
  if (sin.getOffset())
    return sin->emitError("explicit positional offsets are not supported by the host lowering");
  func::FuncOp kernel = kernels->sinusoidRows(r.width, sin.getBase().convertToDouble());
  FailureOr<bool> segmented = perSequence(sin, sin.getSegments());
  if (failed(segmented))
    return failure();
  if (*segmented)
    forEachSequence(lengthsOf(sin.getSegments()), Value(), [&](const SequenceSpan &s) {
      call(kernel, {rowPointer(r.value, s.offset), s.rows, s.position});
    });
  else
    call(kernel, {r.out, r.rows, firstPosition()});
  return success();
}

/// The sum's parts, where token_embed + pos_embed (in either order) on the same ids is one
/// kernel: on the GPU, each embedding used only by the sum, with tables the kernel reads.
std::optional<HostLowering::EmbeddingSum> HostLowering::fusedEmbeddingSum(AddOp add) {
  if (!options.cudaDevice)
    return std::nullopt;
  auto tokens = add.getLhs().getDefiningOp<TokenEmbedOp>();
  auto positions = add.getRhs().getDefiningOp<PositionalEmbedOp>();
  if (!tokens || !positions) {
    tokens = add.getRhs().getDefiningOp<TokenEmbedOp>();
    positions = add.getLhs().getDefiningOp<PositionalEmbedOp>();
  }
  if (!tokens || !positions || !tokens->hasOneUse() || !positions->hasOneUse() ||
      positions.getOffset() || (positions.getSegments() && !rowPositions) ||
      positions.getTokens() != tokens.getTokens())
    return std::nullopt;
  if (blocksOf(tokens.getTable()) != WeightBlocks::None || isBf16(positions.getTable()))
    return std::nullopt;
  return EmbeddingSum{tokens, positions};
}

bool HostLowering::inFusedEmbeddingSum(Operation *op) {
  if (!isa<TokenEmbedOp, PositionalEmbedOp>(op) || !op->hasOneUse())
    return false;
  auto sum = dyn_cast<AddOp>(*op->getUsers().begin());
  return sum && fusedEmbeddingSum(sum);
}

LogicalResult HostLowering::emitAdd(AddOp add, const KernelResult &r, xfrt::KernelSpec &) {
  if (std::optional<EmbeddingSum> sum = fusedEmbeddingSum(add))
    return emitEmbeddingSum(add, *sum, r);
  FailureOr<SmallVector<Value>> inputs = denseInputs(add);
  if (failed(inputs))
    return failure();
  bool broadcast = add.getRhs().getType().getRank() == 1;
  call(kernels->add(r.width, broadcast), {(*inputs)[0], (*inputs)[1], r.out, r.rows});
  return success();
}

/// out[t] = W_e[ids[t]] + W_p[first position + t].
LogicalResult HostLowering::emitEmbeddingSum(AddOp add, EmbeddingSum sum, const KernelResult &r) {
  FailureOr<Value> table = densePointer(add, sum.tokens.getTable());
  FailureOr<Value> positions = densePointer(add, sum.positions.getTable());
  Value ids = sum.tokens.getTokens();
  FailureOr<Value> idsAt = placements[ids].storage == Storage::Tokens
                               ? FailureOr<Value>(pointerOf(ids))
                               : densePointer(add, ids);
  if (failed(table) || failed(positions) || failed(idsAt))
    return failure();
  const bool bf16 = isBf16(sum.tokens.getTable());
  if (sum.positions.getSegments()) { // a packed batch: each row's position from the step table
    call(kernels->gatherPositionRowsAt(r.width, bf16),
         {*table, *idsAt, *positions, rowPositions, r.out, r.rows});
    return success();
  }
  call(kernels->gatherPositionRows(r.width, bf16),
       {*table, *idsAt, *positions, r.out, r.rows, firstPosition()});
  return success();
}

LogicalResult HostLowering::emitRelu(ReluOp relu, const KernelResult &r, xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> inputs = denseInputs(relu);
  if (failed(inputs))
    return failure();
  call(kernels->elementwise(r.width, ElementwiseKind::Relu), {(*inputs)[0], r.out, r.rows});
  return success();
}

LogicalResult HostLowering::emitGelu(GeluOp gelu, const KernelResult &r, xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> inputs = denseInputs(gelu);
  if (failed(inputs))
    return failure();
  auto kind = gelu.getApproximation() == GeluApproximation::tanh ? ElementwiseKind::GeluTanh
                                                                 : ElementwiseKind::GeluErf;
  call(kernels->elementwise(r.width, kind), {(*inputs)[0], r.out, r.rows});
  return success();
}

/// By a constant, or by a run-time number (`multiplier`, a factor of it) the
/// kernel gets as the bits of a double.
LogicalResult HostLowering::emitScale(ScaleOp scale, const KernelResult &r, xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> inputs = denseInputs(scale);
  if (failed(inputs))
    return failure();
  if (!scale.getMultiplier()) {
    call(kernels->scale(r.width, scale.getFactor().convertToDouble()),
         {(*inputs)[0], r.out, r.rows});
    return success();
  }
  Value factor = arith::MulFOp::create(
      *b, loc, numbers.lookup(scale.getMultiplier()),
      arith::ConstantFloatOp::create(*b, loc, b->getF64Type(), scale.getFactor()));
  call(kernels->scaleBy(r.width),
       {(*inputs)[0], r.out, r.rows, arith::BitcastOp::create(*b, loc, b->getI64Type(), factor)});
  return success();
}

LogicalResult HostLowering::emitSoftmax(SoftmaxOp softmax, const KernelResult &r,
                                        xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> inputs = denseInputs(softmax);
  if (failed(inputs))
    return failure();
  call(kernels->softmax(r.width), {(*inputs)[0], r.out, r.rows});
  return success();
}

/// (x, [γ, β]) → y.
LogicalResult HostLowering::emitLayerNorm(LayerNormOp ln, const KernelResult &r,
                                          xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> args = denseInputs(ln);
  if (failed(args))
    return failure();
  args->append({r.out, r.rows});
  call(kernels->layerNorm(r.width, ln.getEpsilon().convertToDouble(), bool(ln.getGamma())), *args);
  return success();
}

/// (x, [γ]) → y.
LogicalResult HostLowering::emitRmsNorm(RmsNormOp rms, const KernelResult &r, xfrt::KernelSpec &) {
  FailureOr<SmallVector<Value>> args = denseInputs(rms);
  if (failed(args))
    return failure();
  args->append({r.out, r.rows});
  call(kernels->rmsNorm(r.width, rms.getEpsilon().convertToDouble(), bool(rms.getGamma())), *args);
  return success();
}
