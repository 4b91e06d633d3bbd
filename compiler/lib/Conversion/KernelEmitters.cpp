//===- KernelEmitters.cpp - which emitter lowers which xf op --------------===//
//
// Each kernel-producing xf op type maps to the HostLowering method that emits
// its kernel call into the entry point being built (GemmEmitter.cpp,
// AttentionEmitter.cpp, LoopKernelEmitters.cpp); each entry of the list is
// one rewrite pattern, rooted at its op type (KernelPatterns.cpp).
// Adding a kernel op: write its emitter, add a line to forwardEmitters().
// The training step's own ops are listed in TrainingEmitters.cpp.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

using namespace mlir;
using namespace mlir::xf;

/// The emitter of each op type, as one table.
const llvm::DenseMap<TypeID, HostLowering::KernelEmitter> &HostLowering::forwardEmitters() {
  static const llvm::DenseMap<TypeID, KernelEmitter> table = [] {
    llvm::DenseMap<TypeID, KernelEmitter> t;
    addEmitter<GemmOp, &HostLowering::emitGemm>(t, /*loop=*/false);
    addEmitter<AttentionOp, &HostLowering::emitAttention>(t, /*loop=*/false);
    addEmitter<SiluOp, &HostLowering::emitSilu>(t);
    addEmitter<MulOp, &HostLowering::emitMul>(t);
    addEmitter<RopeOp, &HostLowering::emitRope>(t);
    addEmitter<TokenEmbedOp, &HostLowering::emitTokenEmbed>(t);
    addEmitter<PositionalEmbedOp, &HostLowering::emitPositionalEmbed>(t);
    addEmitter<SinusoidalEmbedOp, &HostLowering::emitSinusoidalEmbed>(t);
    addEmitter<AddOp, &HostLowering::emitAdd>(t);
    addEmitter<ReluOp, &HostLowering::emitRelu>(t);
    addEmitter<GeluOp, &HostLowering::emitGelu>(t);
    addEmitter<ScaleOp, &HostLowering::emitScale>(t);
    addEmitter<SoftmaxOp, &HostLowering::emitSoftmax>(t);
    addEmitter<LayerNormOp, &HostLowering::emitLayerNorm>(t);
    addEmitter<RmsNormOp, &HostLowering::emitRmsNorm>(t);
    return t;
  }();
  return table;
}

LogicalResult HostLowering::emitKernel(Operation *op, const KernelEmitter *found,
                                       xfrt::KernelSpec &site) {
  Value v = op->getResult(0);
  KernelResult result{v, pointerOf(v), rowsOf(v), placements[v].cols};
  if (!found)
    return op->emitError("no kernel for this op in host lowering");
  const KernelEmitter &emitter = *found;
  if (emitter.loop)
    kernels->useSchedule(loopScheduleOf(loopScheduleAttrOf(op)));
  if (failed(emitter.emit(*this, op, result, site)))
    return failure();
  if (emitter.loop) {
    if (site.name.empty())
      site.name = lastLoopKernel;
    site.kind = "loop";
  }
  return success();
}
