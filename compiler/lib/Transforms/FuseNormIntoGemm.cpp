//===- FuseNormIntoGemm.cpp - a norm as the prologue of its GEMM ----------===//
//
// xf.gemm(xf.layer_norm(x)) and xf.gemm(xf.rms_norm(x)), the norm's result
// read by nothing else, become one xf.gemm that normalises x as it reads it
// (`norm`, `norm_epsilon`, γ and β as `norm_gamma` / `norm_beta`). The
// kernel (GemmAlgorithm.cpp) recomputes each row's mean and variance in every
// thread block that reads the row, which costs a second read of the rows
// from L2 but saves the norm's launch and its round trip through memory: at
// decode (M ≤ 4) GPT-2 small launches 2 kernels fewer a layer. Run for CUDA
// builds with fp32 GEMMs only (FusionPipeline.cpp).
//
//===----------------------------------------------------------------------===//

#include "xf/IR/XfOps.h"
#include "xf/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::xf {
#define GEN_PASS_DEF_FUSENORMINTOGEMM
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

/// What a norm op contributes to the GEMM: its input, kind, ε, γ and β.
struct NormOperands {
  Value input, gamma, beta;
  GemmNorm kind;
  FloatAttr epsilon;
};

std::optional<NormOperands> normFeeding(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !op->hasOneUse())
    return std::nullopt;
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return NormOperands{ln.getInput(), ln.getGamma(), ln.getBeta(), GemmNorm::layer_norm,
                        ln.getEpsilonAttr()};
  if (auto rms = dyn_cast<RmsNormOp>(op))
    return NormOperands{rms.getInput(), rms.getGamma(), Value(), GemmNorm::rms_norm,
                        rms.getEpsilonAttr()};
  return std::nullopt;
}

struct FuseNorm : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp gemm, PatternRewriter &rewriter) const override {
    if (gemm.getNorm())
      return failure();
    std::optional<NormOperands> norm = normFeeding(gemm.getInput());
    if (!norm || norm->input.getType() != gemm.getInput().getType())
      return failure();
    Operation *normOp = gemm.getInput().getDefiningOp();
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm.getInputMutable().assign(norm->input);
      if (norm->gamma)
        gemm.getNormGammaMutable().assign(norm->gamma);
      if (norm->beta)
        gemm.getNormBetaMutable().assign(norm->beta);
      gemm.setNorm(norm->kind);
      gemm.setNormEpsilonAttr(norm->epsilon);
    });
    rewriter.eraseOp(normOp);
    return success();
  }
};

struct FuseNormIntoGemmPass : xf::impl::FuseNormIntoGemmBase<FuseNormIntoGemmPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseNorm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
