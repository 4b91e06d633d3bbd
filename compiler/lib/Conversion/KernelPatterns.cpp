//===- KernelPatterns.cpp - an entry point's body, lowered by patterns ----===//
//
// Each entry point's body starts as a clone of the function it lowers
// (@forward, @forward_packed, @loss_and_gradients) after the entry point's
// own prologue; patterns then replace every cloned xf op by its kernel call,
// one pattern per op type (KernelEmitters.cpp lists the forward
// emitters, TrainingEmitters.cpp the training step's), in the ops' order.
// The patterns query the analyses (Placement.h, CachePlan.h) with the op of
// the source function a clone repeats: those describe the source's values.
// The arith ops on numbers (xf.length's) stay as cloned.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

/// The lowering of one op type by its emitters, or (rooted at any op, at the
/// lowest benefit) of the ops without an emitter: weights and views, which
/// need no code, xf.length, and ops the host lowering has no kernel for.
struct HostOpPattern : RewritePattern {
  HostOpPattern(MLIRContext *ctx, HostLowering &lowering, llvm::StringRef opName,
                const HostLowering::KernelEmitter *forward,
                const HostLowering::BackwardEmitter *backward, PatternBenefit benefit)
      : RewritePattern(opName, benefit, ctx), lowering(lowering), forward(forward),
        backward(backward) {}
  HostOpPattern(MLIRContext *ctx, HostLowering &lowering)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/0, ctx), lowering(lowering) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    return lowering.rewriteClone(op, rewriter, forward, backward);
  }

  HostLowering &lowering;
  const HostLowering::KernelEmitter *forward = nullptr;
  const HostLowering::BackwardEmitter *backward = nullptr;
};

/// The arith ops xf_forward computes numbers with (xf.length's, as f64).
bool isNumberOp(Operation *op) {
  return isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op) &&
         op->getResult(0).getType().isF64();
}

} // namespace

LogicalResult HostLowering::rewriteClone(Operation *clone, PatternRewriter &rewriter,
                                         const KernelEmitter *forwardEmitter,
                                         const BackwardEmitter *backwardEmitter) {
  Operation *op = originalOf.lookup(clone);
  // The entry point's own code, the numbers' arith ops, and all after the
  // first error (as the walk did) are left as they are.
  if (!op || isNumberOp(op) || loweringFailed)
    return failure();
  rewriter.setInsertionPoint(clone);
  OpBuilder *outer = b;
  b = &rewriter;
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
  if (Value number = isa<LengthOp>(op) ? numbers.lookupOrNull(op->getResult(0)) : Value())
    rewriter.replaceAllUsesWith(clone->getResult(0), number);
  // Lowered, if only to nothing (a weight, a view): no other pattern may
  // take it. lowerBody erases the clone: later clones still use it.
  return success();
}

LogicalResult HostLowering::lowerBody(func::FuncOp source, Block &body) {
  if (!patterns) {
    RewritePatternSet set(ctx);
    if (training)
      for (const auto &entry : backwardEmitters())
        set.add<HostOpPattern>(ctx, *this, entry.second.opName, nullptr, &entry.second, 2);
    for (const auto &entry : forwardEmitters())
      set.add<HostOpPattern>(ctx, *this, entry.second.opName, &entry.second, nullptr, 1);
    set.add<HostOpPattern>(ctx, *this);
    patterns = std::make_unique<FrozenRewritePatternSet>(std::move(set));
  }
  originalOf.clear();
  numbers.clear();
  loweringFailed = false;
  OpBuilder cloner = OpBuilder::atBlockEnd(&body);
  IRMapping cloned;
  SmallVector<Operation *> clones;
  for (Operation &op : source.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      break;
    Operation *clone = cloner.clone(op, cloned);
    originalOf[clone] = &op;
    if (isNumberOp(&op))
      numbers.map(op.getResult(0), clone->getResult(0));
    else
      clones.push_back(clone);
  }
  // One visit of each op in order, no folding: the walk driver (a dialect
  // conversion's bookkeeping of every created op cost ~13 % of gpt2.xf's
  // compile time). What a ConversionTarget would check holds by
  // construction: every clone but the numbers' goes below.
  walkAndApplyPatterns(body.getParentOp(), *patterns);
  for (Operation *clone : llvm::reverse(clones))
    clone->erase();
  originalOf.clear();
  return failure(loweringFailed);
}
