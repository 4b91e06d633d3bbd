//===- TrainingPlacement.cpp - where every tensor of the training step lives ===//
//
// The placement of @loss_and_gradients (placeTraining, Placement.h): each
// returned gradient accumulates into grads[i], a static gradient whose only
// user is a sum or a slice_grad with a target shares that target, any other
// gets a Static slot of scratch; then the weight gradients' chunk buffers and
// the ops' placements as @forward's (docs/training.md).
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/CachePlan.h"
#include "xf/Conversion/Placement.h"
#include "xf/IR/XfOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;

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
static LogicalResult planAccumulation(TensorPlacement &placed, func::FuncOp lossAndGradients,
                                      func::ReturnOp ret) {
  auto &accumulation = placed.accumulation;
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
  for (Operation &op : llvm::reverse(lossAndGradients.getBody().front().getOperations())) {
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
      placed.folded.insert(v);
    } else {
      t = Placement{Storage::Static, placed.staticFloats};
      t.stride = colsOf(v);
      placed.staticFloats += (type.getNumElements() + 15) / 16 * 16;
    }
    shapeOf(t, v);
    accumulation[v] = t;
  }
  return success();
}

FailureOr<TensorPlacement> mlir::xf::placeTraining(func::FuncOp lossAndGradients,
                                                   const TensorPlacement &forwardPlacement) {
  TensorPlacement placed;
  placed.training = true;
  // Parameters keep the forward's indices (the checkpoint is one).
  placed.parameterIndex = forwardPlacement.parameterIndex;
  placed.parameters = forwardPlacement.parameters;
  auto &placements = placed.placements;
  // ([source,] tokens, targets): an encoder-decoder's source has its own rows.
  unsigned count = lossAndGradients.getNumArguments();
  placed.encoderDecoder = count == 3;
  for (BlockArgument arg : lossAndGradients.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32) || count < 2 ||
        count > 3)
      return lossAndGradients.emitError("@loss_and_gradients takes [source ids,] token ids and target "
                               "ids, tensor<?xi32> each");
    Placement p{Storage::Tokens, arg.getArgNumber()};
    p.rows = placed.encoderDecoder && arg.getArgNumber() == 0 ? Rows::Source : Rows::Target;
    placements[arg] = p;
  }
  auto ret = cast<func::ReturnOp>(lossAndGradients.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1 || !ret.getOperand(0).getDefiningOp<CrossEntropyOp>())
    return ret.emitError("@loss_and_gradients must return the loss (xf.cross_entropy) first");
  if (failed(planAccumulation(placed, lossAndGradients, ret)))
    return failure();
  int64_t staticSlots = placed.staticFloats;

  // Weight gradients run in chunks of chunkRows positions: a GEMM with
  // K = chunkRows over the chunk's rows, transposed and zero-padded, that adds
  // into the gradient (its residual). The chunk follows the longest sequence
  // the model takes, so short sequences do not pay for a long chunk.
  int64_t limit = hyperparameterPositionLimit(lossAndGradients);
  lossAndGradients.walk([&](PositionalEmbedOp op) { limit = op.getTable().getType().getDimSize(0); });
  int64_t chunkRows = limit > 0 ? std::clamp<int64_t>((limit + 15) / 16 * 16, 16, 256) : 256;
  placed.chunkRows = chunkRows;
  int64_t leftFloats = 0, rightFloats = 0;
  int64_t index = 0;
  for (Operation &op : lossAndGradients.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (failed(placed.placeOp(&op, index++)))
      return failure();
    if (auto grad = dyn_cast<WeightGradOp>(op)) {
      bool t = grad.getTransposeResult();
      leftFloats = std::max(leftFloats, chunkRows * colsOf(t ? grad.getGrad() : grad.getInput()));
      rightFloats = std::max(rightFloats, chunkRows * colsOf(t ? grad.getInput() : grad.getGrad()));
    }
  }
  placed.chunkLeftOffset = placed.staticFloats;
  placed.staticFloats += (leftFloats + 15) / 16 * 16;
  placed.chunkRightOffset = placed.staticFloats;
  placed.staticFloats += (rightFloats + 15) / 16 * 16;
  placed.zeroedFloats = staticSlots;
  placed.plan = planBuffers(placed.requests);
  if (placed.parameters.size() != forwardPlacement.parameters.size())
    return lossAndGradients.emitError(
        "@loss_and_gradients reads a parameter that @forward does not");
  return placed;
}

