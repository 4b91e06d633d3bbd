//===- FuseQkvProjections.cpp - linear maps of one input → one GEMM -------===//
//
// Q, K and V of self-attention are three GEMMs reading the same activation;
// one GEMM of three times the width reads it once and keeps the weight
// panel streaming. Consumers then read column slices of the fused result
// (views, not copies, once buffers are assigned).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::xf {
#define GEN_PASS_DEF_FUSEQKVPROJECTIONS
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

int64_t dimOf(Value v, unsigned axis) {
  return cast<RankedTensorType>(v.getType()).getDimSize(axis);
}

/// The tensor whose consecutive slices along `axis` the parts are, in order
/// and covering it exactly; null if they are not.
Value wholeOfConsecutiveSlices(ArrayRef<Value> parts, int64_t axis) {
  Value source;
  int64_t next = 0;
  for (Value part : parts) {
    auto slice = part.getDefiningOp<SliceOp>();
    if (!slice || slice.getAxis() != axis || slice.getOffset() != next)
      return {};
    if (source && slice.getInput() != source)
      return {};
    source = slice.getInput();
    next += dimOf(part, axis);
  }
  return source && dimOf(source, axis) == next ? source : Value();
}

/// The parts joined along `axis`: the original tensor when they are its
/// slices, otherwise an xf.concat (computed once, when weights are loaded).
Value join(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t axis) {
  if (Value whole = wholeOfConsecutiveSlices(parts, axis))
    return whole;
  auto first = cast<RankedTensorType>(parts.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value part : parts)
    shape[axis] += dimOf(part, axis);
  auto type = RankedTensorType::get(shape, first.getElementType());
  return ConcatOp::create(b, loc, type, parts, b.getI64IntegerAttr(axis));
}

/// Linear maps that may share one GEMM: same input, same weight layout,
/// all with or all without bias, static widths.
bool compatible(LinearOp a, LinearOp b) {
  return a.getInput() == b.getInput() &&
         a.getTransposeWeight() == b.getTransposeWeight() &&
         bool(a.getBias()) == bool(b.getBias());
}

/// A projection consumed by GELU or ReLU keeps its own GEMM: the activation then fuses into
/// that GEMM's epilogue (xf-fuse-gemm-epilogue), where a column slice of a joined GEMM has no
/// kernel that reads it in place (only SwiGLU's silu has the gated epilogue). GeGLU's
/// gelu(x·W_gate) ⊙ (x·W_up) is the case.
bool feedsDenseActivation(LinearOp op) {
  return llvm::any_of(op->getUsers(), [](Operation *user) { return isa<GeluOp, ReluOp>(user); });
}

void fuseGroup(ArrayRef<LinearOp> group, DominanceInfo &dom) {
  LinearOp first = group.front();
  for (LinearOp op : group) {
    if (op->isBeforeInBlock(first))
      first = op;
  }
  // Weights must exist before the first projection runs.
  for (LinearOp op : group) {
    if (!dom.properlyDominates(op.getWeight(), first) ||
        (op.getBias() && !dom.properlyDominates(op.getBias(), first)))
      return;
  }
  bool transposed = first.getTransposeWeight();
  SmallVector<Value> weights, biases;
  for (LinearOp op : group) {
    weights.push_back(op.getWeight());
    if (op.getBias())
      biases.push_back(op.getBias());
  }
  OpBuilder b(first);
  Location loc = b.getFusedLoc(llvm::to_vector(
      llvm::map_range(group, [](LinearOp op) { return op.getLoc(); })));
  Value weight = join(b, loc, weights, transposed ? 0 : 1);
  Value bias = biases.empty() ? Value() : join(b, loc, biases, 0);
  auto inType = cast<RankedTensorType>(first.getInput().getType());
  int64_t width = dimOf(weight, transposed ? 0 : 1);
  auto type = RankedTensorType::get({inType.getDimSize(0), width},
                                    inType.getElementType());
  Value fused = LinearOp::create(b, loc, type, first.getInput(), weight, bias,
                                 transposed);
  int64_t offset = 0;
  for (LinearOp op : group) {
    b.setInsertionPoint(op);
    Value part = SliceOp::create(b, op.getLoc(), op.getType(), fused,
                                 b.getI64IntegerAttr(1),
                                 b.getI64IntegerAttr(offset));
    offset += dimOf(op.getResult(), 1);
    op.replaceAllUsesWith(part);
    op.erase();
  }
}

struct FuseQkvProjectionsPass
    : xf::impl::FuseQkvProjectionsBase<FuseQkvProjectionsPass> {
  void runOnOperation() override {
    // Group in program order so results are deterministic.
    llvm::MapVector<Value, SmallVector<LinearOp>> byInput;
    getOperation().walk([&](LinearOp op) {
      if (op.getType().getDimSize(1) != ShapedType::kDynamic && !feedsDenseActivation(op))
        byInput[op.getInput()].push_back(op);
    });
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    for (auto &entry : byInput) {
      // Split each input's users into compatible groups.
      SmallVector<SmallVector<LinearOp>> groups;
      for (LinearOp op : entry.second) {
        auto it = llvm::find_if(groups, [&](auto &g) { return compatible(g.front(), op); });
        if (it == groups.end())
          groups.push_back({op});
        else
          it->push_back(op);
      }
      for (auto &group : groups)
        if (group.size() > 1)
          fuseGroup(group, dom);
    }
  }
};

} // namespace
