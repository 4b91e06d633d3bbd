//===- DecomposeMultiHeadAttention.cpp - xf.mha → projections + attention -===//
//
// Alg. 5 computes every head's Q, K, V with its own matrices. Stacked
// side by side they are three wide GEMMs, after which one xf.attention
// treats the column blocks as heads, and W_o mixes the heads back. Rotary
// positions (`rope`) become an xf.rope on Q and on K between the projections
// and the attention, so a KV cache stores rotated keys; grouped K/V heads
// (`kv_heads`) and a packed batch's `segments` pass through to xf.attention
// (and to the ropes: positions restart in every sequence).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xf {
#define GEN_PASS_DEF_DECOMPOSEMULTIHEADATTENTION
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

/// `in · W (+ b)` with W in the op's layout; result `[rows(in), d_out]`.
Value project(PatternRewriter &rewriter, Location loc, Value in, Value weight,
              Value bias, bool transposed) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  auto inType = cast<RankedTensorType>(in.getType());
  int64_t outWidth = weightType.getDimSize(transposed ? 0 : 1);
  auto type = RankedTensorType::get({inType.getDimSize(0), outWidth},
                                    inType.getElementType());
  return LinearOp::create(rewriter, loc, type, in, weight, bias, transposed);
}

struct DecomposeMha : OpRewritePattern<MultiHeadAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    bool t = op.getTransposeWeights();
    Value x = op.getInput();
    Value z = op.getContextSeq() ? op.getContextSeq() : x;
    Value q = project(rewriter, loc, x, op.getWq(), op.getBq(), t);
    Value k = project(rewriter, loc, z, op.getWk(), op.getBk(), t);
    Value v = project(rewriter, loc, z, op.getWv(), op.getBv(), t);
    if (std::optional<RopePairing> pairing = op.getRope()) {
      auto rotate = [&](Value in, int64_t heads) -> Value {
        return RopeOp::create(rewriter, loc, in.getType(), in, /*offset=*/Value(),
                              op.getSegments(), *pairing, heads, *op.getRopeBase());
      };
      q = rotate(q, op.getHeads());
      k = rotate(k, op.getKeyValueHeads());
    }
    auto qType = cast<RankedTensorType>(q.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    // H·d_v: with grouped K/V heads, V holds only H_kv of them.
    int64_t headsWidth = vType.getDimSize(1) / op.getKeyValueHeads() * op.getHeads();
    auto headsType = RankedTensorType::get({qType.getDimSize(0), headsWidth},
                                           qType.getElementType());
    Value heads = AttentionOp::create(
        rewriter, loc, headsType, q, k, v, op.getSegments(), op.getKeySegments(), op.getMaskAttr(),
        op.getHeadsAttr(), op.getKvHeadsAttr(),
        /*rope=*/RopePairingAttr(), /*rope_base=*/FloatAttr(), op.getScaleAttr(),
        /*schedule=*/AttentionScheduleAttr(), /*gpu_schedule=*/GpuAttentionScheduleAttr());
    rewriter.replaceOp(op, project(rewriter, loc, heads, op.getWo(), op.getBo(), t));
    return success();
  }
};

struct DecomposeMultiHeadAttentionPass
    : xf::impl::DecomposeMultiHeadAttentionBase<DecomposeMultiHeadAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeMha>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
