//===- FuseGemmEpilogue.cpp - GEMM + bias + activation + residual ---------===//
//
// Every matrix product becomes an xf.gemm. Its consumers that touch each
// output element once — a broadcast bias, ReLU/GELU, a residual add — are
// computed on the GEMM's register tile instead of in separate passes over
// memory. Order inside the epilogue is fixed: act(x·W + b) + residual, act
// one of ReLU, GELU (erf or tanh) and SiLU, or SwiGLU's gate and product
// over the two halves of the product (the gated epilogue).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xf {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUE
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

GemmOp createGemm(PatternRewriter &rewriter, Operation *at, Type type,
                  Value input, Value weight, Value bias, Value residual,
                  Activation activation, bool transposeWeight) {
  return GemmOp::create(rewriter, at->getLoc(), type, input, weight, bias,
                        residual, /*norm_gamma=*/Value(), /*norm_beta=*/Value(),
                        activation, transposeWeight,
                        /*schedule=*/GemmScheduleAttr(),
                        /*gpu_schedule=*/GpuGemmScheduleAttr(),
                        /*norm=*/GemmNormAttr(), /*norm_epsilon=*/FloatAttr());
}

struct LinearToGemm : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, createGemm(rewriter, op, op.getType(), op.getInput(),
                                      op.getWeight(), op.getBias(), Value(),
                                      Activation::none, op.getTransposeWeight()));
    return success();
  }
};

struct MatmulToGemm : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, createGemm(rewriter, op, op.getType(), op.getLhs(),
                                      op.getRhs(), Value(), Value(),
                                      Activation::none, op.getTransposeRhs()));
    return success();
  }
};

struct UnembedToGemm : OpRewritePattern<UnembedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UnembedOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, createGemm(rewriter, op, op.getType(), op.getInput(),
                                      op.getWeight(), Value(), Value(),
                                      Activation::none, op.getTied()));
    return success();
  }
};

/// The GEMM feeding `v`, if `v` is its only use and its epilogue can still
/// take `stage` (bias < activation < residual).
enum class Stage { Bias, Activation, Residual };
GemmOp fusableProducer(Value v, Stage stage) {
  auto gemm = v.getDefiningOp<GemmOp>();
  if (!gemm || !gemm->hasOneUse() || gemm.getResidual())
    return {};
  if (stage == Stage::Residual)
    return gemm;
  if (gemm.getActivation() != Activation::none)
    return {};
  if (stage == Stage::Bias && gemm.getBias())
    return {};
  return gemm;
}

template <typename ActivationOp>
struct FuseActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern<ActivationOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op, PatternRewriter &rewriter) const override {
    GemmOp gemm = fusableProducer(op.getInput(), Stage::Activation);
    if (!gemm)
      return failure();
    rewriter.replaceOp(op, createGemm(rewriter, op, op.getType(), gemm.getInput(),
                                      gemm.getWeight(), gemm.getBias(), Value(),
                                      activationOf(op), gemm.getTransposeWeight()));
    rewriter.eraseOp(gemm);
    return success();
  }
  static Activation activationOf(ReluOp) { return Activation::relu; }
  static Activation activationOf(SiluOp) { return Activation::silu; }
  static Activation activationOf(GeluOp op) {
    return op.getApproximation() == GeluApproximation::tanh ? Activation::gelu_tanh
                                                           : Activation::gelu_erf;
  }
};

/// SwiGLU: silu(G[:, 0:N]) ⊙ G[:, N:2N] with G = x·[W_gate | W_up] (+ b) a
/// GEMM of 2·N columns used only by those two slices (xf-fuse-qkv joined the
/// gate and up projections of one input) → one GEMM with the gated epilogue:
/// both products in one pass over x, the gate and product on its tiles.
struct FuseGatedLinearUnit : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (auto [gateSide, upSide] : {std::pair(op.getLhs(), op.getRhs()),
                                    std::pair(op.getRhs(), op.getLhs())}) {
      auto silu = gateSide.getDefiningOp<SiluOp>();
      auto gate = silu ? silu.getInput().getDefiningOp<SliceOp>() : SliceOp();
      auto up = upSide.getDefiningOp<SliceOp>();
      if (!gate || !up || !silu->hasOneUse() || !gate->hasOneUse() || !up->hasOneUse() ||
          gate.getInput() != up.getInput() || gate.getAxis() != 1 || up.getAxis() != 1)
        continue;
      auto gemm = gate.getInput().getDefiningOp<GemmOp>();
      int64_t n = op.getType().getDimSize(1);
      if (!gemm || gemm.getResidual() || gemm.getActivation() != Activation::none ||
          gate.getOffset() != 0 || up.getOffset() != n ||
          gemm.getType().getDimSize(1) != 2 * n || !llvm::hasNItems(gemm->getUses(), 2))
        continue;
      rewriter.replaceOp(op, createGemm(rewriter, op, op.getType(), gemm.getInput(),
                                        gemm.getWeight(), gemm.getBias(), Value(),
                                        Activation::swiglu, gemm.getTransposeWeight()));
      rewriter.eraseOp(silu);
      rewriter.eraseOp(gate);
      rewriter.eraseOp(up);
      rewriter.eraseOp(gemm);
      return success();
    }
    return failure();
  }
};

/// gemm + [d] → bias; gemm + [ℓ, d] (either side) → residual.
struct FuseAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    bool isBias = op.getRhs().getType().getRank() == 1;
    for (auto [self, other] : {std::pair(op.getLhs(), op.getRhs()),
                               std::pair(op.getRhs(), op.getLhs())}) {
      if (isBias && self != op.getLhs())
        continue;
      GemmOp gemm = fusableProducer(self, isBias ? Stage::Bias : Stage::Residual);
      if (!gemm || self == other)
        continue;
      Value bias = isBias ? other : gemm.getBias();
      Value residual = isBias ? Value() : other;
      rewriter.replaceOp(op, createGemm(rewriter, op, op.getType(), gemm.getInput(),
                                        gemm.getWeight(), bias, residual,
                                        gemm.getActivation(), gemm.getTransposeWeight()));
      rewriter.eraseOp(gemm);
      return success();
    }
    return failure();
  }
};

struct FuseGemmEpiloguePass : xf::impl::FuseGemmEpilogueBase<FuseGemmEpiloguePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LinearToGemm, MatmulToGemm, UnembedToGemm, FuseActivation<ReluOp>,
                 FuseActivation<GeluOp>, FuseActivation<SiluOp>, FuseGatedLinearUnit,
                 FuseAdd>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
