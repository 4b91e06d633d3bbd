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
bool keepsRowsApart(Operation *op, const llvm::DenseMap<Value, unsigned> &perRow) {
  auto isRows = [&](Value v) { return perRow.contains(v); };
  if (isa<func::ReturnOp, TokenEmbedOp, AddOp, MulOp, LayerNormOp, RmsNormOp, ReluOp, GeluOp,
          SoftmaxOp, SiluOp, MultiHeadAttentionOp, AttentionOp>(op))
    return true;
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

/// Whether operand `operand` of `op` is cross attention's keys or values
/// (the context's rows: another sequence than the queries').
bool readsContext(Operation *op, OpOperand &operand) {
  unsigned index = operand.getOperandNumber();
  if (auto attn = dyn_cast<AttentionOp>(op))
    return attn.getMask() == MaskKind::cross && (index == 1 || index == 2);
  if (auto mha = dyn_cast<MultiHeadAttentionOp>(op)) {
    auto [first, count] = mha.getODSOperandIndexAndLength(1); // context_seq
    return count == 1 && index == first;
  }
  return false;
}

/// The segments operands of the ops that see whole sequences.
void setSegments(Operation *op, Value segments, Value keySegments) {
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    attn.getSegmentsMutable().assign(segments);
    if (keySegments)
      attn.getKeySegmentsMutable().assign(keySegments);
  } else if (auto mha = dyn_cast<MultiHeadAttentionOp>(op)) {
    mha.getSegmentsMutable().assign(segments);
    if (keySegments)
      mha.getKeySegmentsMutable().assign(keySegments);
  } else if (auto pos = dyn_cast<PositionalEmbedOp>(op)) {
    pos.getSegmentsMutable().assign(segments);
  } else if (auto sin = dyn_cast<SinusoidalEmbedOp>(op)) {
    sin.getSegmentsMutable().assign(segments);
  } else if (auto rope = dyn_cast<RopeOp>(op)) {
    rope.getSegmentsMutable().assign(segments);
  }
}

struct PackSequencesPass : xf::impl::PackSequencesBase<PackSequencesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || module.lookupSymbol("forward_packed") || forward.getNumArguments() == 0 ||
        forward.getBody().getBlocks().size() != 1)
      return;
    // The values computed per row, each with the token argument (sequence)
    // whose rows it has; every op reading them must keep rows apart, and
    // only cross attention may read two sequences (queries from one, keys
    // and values from the other).
    llvm::DenseMap<Value, unsigned> perRow;
    for (BlockArgument arg : forward.getArguments())
      perRow[arg] = arg.getArgNumber();
    llvm::DenseMap<Operation *, std::pair<unsigned, std::optional<unsigned>>> sequencesOf;
    for (Operation &op : forward.getBody().front()) {
      std::optional<unsigned> rows, keyRows;
      bool mixed = false;
      for (OpOperand &operand : op.getOpOperands()) {
        auto it = perRow.find(operand.get());
        if (it == perRow.end())
          continue;
        std::optional<unsigned> &side = readsContext(&op, operand) ? keyRows : rows;
        mixed |= side && *side != it->second;
        side = it->second;
      }
      if (!rows && !keyRows)
        continue;
      if (mixed || !rows || !keepsRowsApart(&op, perRow))
        return;
      sequencesOf[&op] = {*rows, keyRows};
      for (Value result : op.getResults())
        perRow[result] = *rows;
    }
    auto packed = cast<func::FuncOp>(forward->clone());
    packed.setName("forward_packed");
    module.getBody()->getOperations().insertAfter(forward->getIterator(), packed);
    // (tokens..., segments...): one lengths argument per token sequence.
    Type segmentsType =
        RankedTensorType::get({ShapedType::kDynamic}, IntegerType::get(&getContext(), 64));
    unsigned sequences = forward.getNumArguments();
    SmallVector<Value> segments;
    for (unsigned i = 0; i < sequences; ++i) {
      if (failed(packed.insertArgument(sequences + i, segmentsType, {}, forward.getLoc()))) {
        signalPassFailure();
        return;
      }
      segments.push_back(packed.getArgument(sequences + i));
    }
    for (auto [original, copy] :
         llvm::zip(forward.getBody().front(), packed.getBody().front())) {
      auto it = sequencesOf.find(&original);
      if (it == sequencesOf.end())
        continue;
      auto [rows, keyRows] = it->second;
      setSegments(&copy, segments[rows], keyRows ? segments[*keyRows] : Value());
    }
  }
};

} // namespace
