//===- PackSequences.cpp - @forward over a packed batch: @forward_packed --===//
//
// The batch in the IR (docs/dialect.md "Packed batches"): n sequences' rows
// back to back in one [Σℓ_i, d] matrix, so every GEMM and row-wise kernel runs
// once over the whole batch, and a `segments` operand (the lengths) on the
// ops whose result for a row depends on the row's sequence — attention's
// mask, the positions. A second function rather than a batch dimension on
// @forward: @forward stays the paper's algorithm for one sequence (the
// interpreter's reference, training, cached decoding), and the two share
// every weight, kernel and schedule.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::xf {
#define GEN_PASS_DEF_PACKSEQUENCES
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

/// Whether `op`, reading the per-row values `perRow`, computes each row of
/// its result from the same row of its inputs (or from the row's sequence,
/// through `segments`) — then packed rows stay apart.
bool keepsRowsApart(Operation *op, const llvm::DenseSet<Value> &perRow) {
  auto isRows = [&](Value v) { return perRow.contains(v); };
  if (isa<func::ReturnOp, TokenEmbedOp, AddOp, MulOp, LayerNormOp, RmsNormOp, ReluOp, GeluOp,
          SoftmaxOp, SiluOp, MultiHeadAttentionOp>(op))
    return true;
  if (auto attn = dyn_cast<AttentionOp>(op))
    return attn.getMask() != MaskKind::cross; // two sequences: encoder-decoders stay unpacked
  if (auto pos = dyn_cast<PositionalEmbedOp>(op))
    return !pos.getOffset();
  if (auto sin = dyn_cast<SinusoidalEmbedOp>(op))
    return !sin.getOffset();
  if (auto rope = dyn_cast<RopeOp>(op))
    return !rope.getOffset();
  if (auto scale = dyn_cast<ScaleOp>(op))
    return !scale.getMultiplier();
  if (auto linear = dyn_cast<LinearOp>(op))
    return !isRows(linear.getWeight());
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return !isRows(matmul.getRhs());
  if (auto unembed = dyn_cast<UnembedOp>(op))
    return !isRows(unembed.getWeight());
  if (auto gemm = dyn_cast<GemmOp>(op))
    return !isRows(gemm.getWeight());
  if (auto slice = dyn_cast<SliceOp>(op))
    return slice.getAxis() == 1;
  if (auto concat = dyn_cast<ConcatOp>(op))
    return concat.getAxis() == 1;
  return false; // xf.length, xf.row, xf.transpose of an activation, ...
}

/// The segments operand of the ops that see whole sequences.
void setSegments(Operation *op, Value segments) {
  if (auto attn = dyn_cast<AttentionOp>(op))
    attn.getSegmentsMutable().assign(segments);
  else if (auto mha = dyn_cast<MultiHeadAttentionOp>(op))
    mha.getSegmentsMutable().assign(segments);
  else if (auto pos = dyn_cast<PositionalEmbedOp>(op))
    pos.getSegmentsMutable().assign(segments);
  else if (auto sin = dyn_cast<SinusoidalEmbedOp>(op))
    sin.getSegmentsMutable().assign(segments);
  else if (auto rope = dyn_cast<RopeOp>(op))
    rope.getSegmentsMutable().assign(segments);
}

struct PackSequencesPass : xf::impl::PackSequencesBase<PackSequencesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || module.lookupSymbol("forward_packed") || forward.getNumArguments() != 1 ||
        forward.getBody().getBlocks().size() != 1)
      return;
    // The values computed per row (from the tokens), and whether every op
    // reading them keeps the rows apart.
    llvm::DenseSet<Value> perRow{forward.getArgument(0)};
    for (Operation &op : forward.getBody().front()) {
      if (llvm::none_of(op.getOperands(), [&](Value v) { return perRow.contains(v); }))
        continue;
      if (!keepsRowsApart(&op, perRow))
        return;
      perRow.insert(op.result_begin(), op.result_end());
    }
    auto packed = cast<func::FuncOp>(forward->clone());
    packed.setName("forward_packed");
    module.getBody()->getOperations().insertAfter(forward->getIterator(), packed);
    Type segmentsType =
        RankedTensorType::get({ShapedType::kDynamic}, IntegerType::get(&getContext(), 64));
    if (failed(packed.insertArgument(1, segmentsType, {}, forward.getLoc()))) {
      signalPassFailure();
      return;
    }
    Value segments = packed.getArgument(1);
    packed.walk([&](Operation *op) { setSegments(op, segments); });
  }
};

} // namespace
