//===- KernelPatterns.cpp - an entry point's body, lowered by patterns ----===//
//
// Each entry point's body starts as a clone of the function it lowers
// (@forward, @forward_packed, @loss_and_gradients) after the entry point's
// own prologue; a dialect conversion then replaces every cloned xf op by its
// kernel call, one OpConversionPattern per op type (KernelPattern<OpT>, added
// from the emitters' lists: KernelEmitters.cpp, TrainingEmitters.cpp), in the
// ops' order (as MLIR's Toy lowers to affine loops). Its ConversionTarget:
// the xf dialect is illegal, the host dialects (func, arith, scf, math, llvm)
// legal but for a cloned arith op that is no number op (the one pattern that
// takes any op reports it). The patterns query the analyses (Placement.h,
// CachePlan.h) with the op of the source function a clone repeats: those
// describe the source's values. The arith ops on numbers (xf.length's) stay
// as cloned.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "xf/IR/XfDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

/// The lowering of the ops without an emitter, rooted at any op at the
/// lowest benefit: weights and views, which need no code, xf.length, an
/// arith op on numbers the host code cannot compute, and ops the host
/// lowering has no kernel for (the last two: an error at the op).
struct NoKernelPattern : ConversionPattern {
  NoKernelPattern(MLIRContext *ctx, HostLowering &lowering)
      : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/0, ctx), lowering(lowering) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value>,
                                ConversionPatternRewriter &rewriter) const override {
    return lowering.rewriteClone(op, rewriter, nullptr, nullptr);
  }

  HostLowering &lowering;
};

/// The arith ops xf_forward computes numbers with (xf.length's, as f64).
bool isNumberOp(Operation *op) {
  return isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op) &&
         op->getResult(0).getType().isF64();
}

} // namespace

LogicalResult HostLowering::rewriteClone(Operation *clone, ConversionPatternRewriter &rewriter,
                                         const KernelEmitter *forwardEmitter,
                                         const BackwardEmitter *backwardEmitter) {
  // Only clones are illegal (the ConversionTarget of lowerBody); the address
  // of one erased below may be reused by an op an emitter creates.
  Operation *op = originalOf.lookup(clone);
  originalOf.erase(clone);
  // After the first error the clones go without code, as the walk did.
  if (!loweringFailed) {
    // The emitters build host IR, legal by construction, through an OpBuilder
    // at the clone: through `rewriter` the driver would note and check every
    // op they create, which cost xfc examples/gpt2.xf --emit=host 0.255 ->
    // 0.311 s of CPU even without rollback (0.258 s this way).
    OpBuilder builder(clone);
    OpBuilder *outer = b;
    b = &builder;
    LogicalResult lowered = success();
    if (training) {
      loc = op->getLoc();
      lowered = emitBackwardKernel(op, backwardEmitter, forwardEmitter);
    } else {
      enterTail(op);
      lowered = emitOp(op, forwardEmitter);
    }
    b = outer;
    if (failed(lowered))
      loweringFailed = true;
  }
  // Lowered, if only to nothing (a weight, a view): the clone goes, and its
  // uses with it (every user is a later clone, but the numbers' arith ops,
  // which read only an xf.length's number).
  if (Value number = isa<LengthOp>(op) ? numbers.lookupOrNull(op->getResult(0)) : Value())
    rewriter.replaceOp(clone, number);
  else
    rewriter.eraseOp(clone);
  return success();
}

LogicalResult HostLowering::lowerBody(func::FuncOp source, Block &body) {
  if (!patterns) {
    RewritePatternSet set(ctx);
    if (training)
      for (const auto &entry : backwardEmitters())
        entry.second.addPattern(set, *this, nullptr, &entry.second, 2);
    for (const auto &entry : forwardEmitters())
      entry.second.addPattern(set, *this, &entry.second, nullptr, 1);
    set.add<NoKernelPattern>(ctx, *this);
    patterns = std::make_unique<FrozenRewritePatternSet>(std::move(set));
  }
  originalOf.clear();
  numbers.clear();
  loweringFailed = false;
  OpBuilder cloner = OpBuilder::atBlockEnd(&body);
  IRMapping cloned;
  for (Operation &op : source.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      break;
    Operation *clone = cloner.clone(op, cloned);
    originalOf[clone] = &op;
    if (isNumberOp(&op))
      numbers.map(op.getResult(0), clone->getResult(0));
  }
  ConversionTarget target(*ctx);
  target.addIllegalDialect<XfDialect>();
  target.addLegalDialect<func::FuncDialect, scf::SCFDialect, math::MathDialect,
                         LLVM::LLVMDialect>();
  target.addDynamicallyLegalDialect<arith::ArithDialect>(
      [&](Operation *op) { return isNumberOp(op) || !originalOf.contains(op); });
  // Each clone once, in order, no folding, and no rollback (no pattern
  // fails after changing the IR): the driver's bookkeeping for a rollback
  // cost ~13 % of gpt2.xf's whole build.
  ConversionConfig config;
  config.allowPatternRollback = false;
  config.foldingMode = DialectConversionFoldingMode::Never;
  if (failed(applyPartialConversion(body.getParentOp(), target, *patterns, config)))
    return failure();
  return failure(loweringFailed);
}
