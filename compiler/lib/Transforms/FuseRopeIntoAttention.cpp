//===- FuseRopeIntoAttention.cpp - xf.rope on Q and K → attention's prologue ===//
//
// Rotary positions are a pass over Q and one over K between the QKV GEMM
// and the attention, each reading and writing every element. The attention
// loads Q and K anyway: rotating the rows as it loads them removes both
// passes (with a KV cache, K is rotated while it is copied into the cache,
// which stores rotated keys; LowerToHost.cpp).
//
// The fused op puts query row t at position t + (ℓ_z − ℓ) and key row s at
// s. That equals two xf.rope without an offset only when ℓ_z = ℓ, so only
// self-attention fuses: Q and K must come from the same rows (column slices
// of one GEMM, or projections of one activation). In a packed batch the
// ropes must restart at the attention's own `segments`.
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xf {
#define GEN_PASS_DEF_FUSEROPEINTOATTENTION
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

/// The value whose rows `v`'s rows are: through a column slice, then
/// through a projection (its input).
Value rowSource(Value v) {
  if (auto slice = v.getDefiningOp<SliceOp>(); slice && slice.getAxis() == 1)
    v = slice.getInput();
  if (auto linear = v.getDefiningOp<LinearOp>())
    return linear.getInput();
  if (auto gemm = v.getDefiningOp<GemmOp>())
    return gemm.getInput();
  return v;
}

struct FuseRope : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    if (op.getRope() || op.getMask() == MaskKind::cross)
      return failure();
    auto q = op.getQuery().getDefiningOp<RopeOp>();
    auto k = op.getKey().getDefiningOp<RopeOp>();
    if (!q || !k || q == k || q.getOffset() || k.getOffset() || q.getPairing() != k.getPairing() ||
        q.getBase() != k.getBase() || q.getHeads() != op.getHeads() ||
        k.getHeads() != op.getKeyValueHeads())
      return failure();
    // The rotated values must die here: training's backward reads them too.
    if (!q->hasOneUse() || !k->hasOneUse())
      return failure();
    if (rowSource(q.getInput()) != rowSource(k.getInput()))
      return failure();
    // A packed batch: the ropes restart at the attention's sequences.
    if (q.getSegments() != op.getSegments() || k.getSegments() != op.getSegments())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getQueryMutable().assign(q.getInput());
      op.getKeyMutable().assign(k.getInput());
      op.setRopeAttr(q.getPairingAttr());
      op.setRopeBaseAttr(q.getBaseAttr());
    });
    rewriter.eraseOp(q);
    rewriter.eraseOp(k);
    return success();
  }
};

struct FuseRopeIntoAttentionPass : xf::impl::FuseRopeIntoAttentionBase<FuseRopeIntoAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRope>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
