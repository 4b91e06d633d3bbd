//===- CachePlan.cpp - which entry points a model gets, and its KV cache --===//

#include "xf/Conversion/CachePlan.h"

#include "xf/IR/XfOps.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;

bool mlir::xf::usesLength(func::FuncOp forward) {
  return forward.walk([](LengthOp) { return WalkResult::interrupt(); }).wasInterrupted();
}

int64_t mlir::xf::hyperparameterPositionLimit(func::FuncOp forward) {
  bool hasTable = false;
  forward.walk([&](PositionalEmbedOp) { hasTable = true; });
  auto module = forward->getParentOfType<ModuleOp>();
  auto hparams = module->getAttrOfType<DictionaryAttr>("xf.hyperparameters");
  auto limit = hparams ? hparams.getAs<IntegerAttr>("l_max") : IntegerAttr();
  return !hasTable && limit && limit.getInt() > 0 ? limit.getInt() : 0;
}

/// Every GEMM multiplies by weights (a parameter or a derived weight), not by
/// another activation, whose rows would mix the sequences.
static bool gemmsReadWeights(func::FuncOp forward, const TensorPlacement &placed) {
  bool ok = true;
  forward.walk([&](GemmOp gemm) {
    Storage s = placed.placementOf(gemm.getWeight()).storage;
    ok &= s == Storage::Parameter || s == Storage::Derived;
  });
  return ok;
}

/// Incremental decoding is exact when rows only meet in causal
/// self-attention: one token sequence, every attention causal over it, and
/// every GEMM multiplying by weights rather than by another activation.
static bool isCacheable(func::FuncOp forward, const TensorPlacement &placed) {
  if (placed.encoderDecoder || usesLength(forward))
    return false;
  bool causal = true;
  forward.walk([&](AttentionOp attn) { causal &= attn.getMask() == MaskKind::causal; });
  return causal && gemmsReadWeights(forward, placed);
}

bool mlir::xf::isPackable(func::FuncOp forward, const TensorPlacement &placed) {
  return !usesLength(forward) && gemmsReadWeights(forward, placed);
}

CachePlan mlir::xf::planCache(func::FuncOp forward, const TensorPlacement &placed,
                              bool halfElements) {
  CachePlan plan;
  plan.cacheable = isCacheable(forward, placed);
  plan.packable = isPackable(forward, placed);
  if (!plan.cacheable)
    return plan;
  plan.elementBytes = halfElements ? 2 : 4;
  // xf_forward_cached_packed compacts the full-length tensors its tail reads
  // (compactLastRows), which needs them in scratch slots.
  Operation *lastAttention = nullptr;
  forward.walk([&](AttentionOp op) { lastAttention = op; });
  plan.packedCacheable = plan.packable && lastAttention;
  llvm::DenseSet<Value> tail, roots;
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op) || !lastAttention || !lastAttention->isBeforeInBlock(&op) ||
        !placed.isActivation(op.getResult(0)))
      continue;
    tail.insert(op.getResult(0));
    for (Value operand : op.getOperands()) {
      if (!placed.placements.count(operand) || !placed.isActivation(operand) ||
          tail.contains(operand))
        continue;
      Value root = placed.rootOf(operand);
      if (placed.placementOf(root).storage != Storage::Scratch)
        plan.packedCacheable = false;
      else if (roots.insert(root).second)
        plan.tailInputRoots.push_back(root);
    }
  }
  // Each attention gets a K and a V slot of `positions` rows.
  plan.positions = 4096;
  forward.walk([&](PositionalEmbedOp op) {
    plan.positions = std::min(plan.positions, op.getTable().getType().getDimSize(0));
  });
  if (int64_t limit = hyperparameterPositionLimit(forward))
    plan.positions = limit;
  auto slot = [&](Value t) {
    int64_t column = plan.columns;
    plan.columns += colsOf(t);
    return column;
  };
  forward.walk([&](AttentionOp op) {
    int64_t k = slot(op.getKey());
    plan.offsets[op] = {k, slot(op.getValue())};
  });
  return plan;
}

CachePlan mlir::xf::planCache(const ModulePlacement &placed, bool halfElements) {
  CachePlan plan = planCache(placed.forward, placed.placement(), halfElements);
  // Packed batches need @forward_packed (xf-pack-sequences decides which
  // models can run them).
  plan.packable &= bool(placed.forwardPacked);
  plan.packedCacheable &= bool(placed.forwardPacked);
  // @forward_packed's attentions use the slots of the @forward ones they repeat.
  if (func::FuncOp packed = placed.forwardPacked)
    for (Operation &op : packed.getBody().front())
      if (Operation *repeated = placed.forwardOpOf.lookup(&op); plan.offsets.count(repeated))
        plan.offsets.try_emplace(&op, plan.offsets.lookup(repeated));
  return plan;
}
