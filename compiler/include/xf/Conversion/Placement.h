//===- Placement.h - where every tensor of @forward lives ------*- C++ -*-===//
//
// The host lowering's first walk, an analysis: it reads @forward (or
// @loss_and_gradients) and decides, for every tensor, where it is stored —
// a checkpoint parameter, a derived weight (computed from parameters alone:
// concatenations, transposes, slices, rows — filled once by xf_prepare), a
// view (a column slice of an activation), the output buffer, or a slot of
// the scratch arena (BufferPlan.h) — and which sequence its rows follow.
// The result is plain data; the entry-point emitters only read it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_PLACEMENT_H
#define XF_CONVERSION_PLACEMENT_H

#include "xf/Conversion/BufferPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::xf {

/// Training (xf_train_step) adds Gradient (grads[index] + colOffset floats:
/// a parameter's gradient or a part of it), Static (a fixed-size slot at
/// float index + colOffset of scratch) and Loss.
enum class Storage { Parameter, Derived, Scratch, Output, View, Tokens, Gradient, Static, Loss };
/// Which sequence a tensor's rows follow.
enum class Rows { Target, Source, Static };

/// Where a tensor lives. Matrices are [rows, cols] with a row stride; vectors
/// are one row.
struct Placement {
  Storage storage;
  int64_t index = 0;     // parameter/derived index, scratch request, token arg
  Value root;            // views: the tensor whose storage they share
  int64_t colOffset = 0; // views: first column inside root
  int64_t cols = 0, stride = 0, staticRows = 1;
  Rows rows = Rows::Static;
};

/// The last dimension of a ranked tensor.
int64_t colsOf(Value tensor);

/// Every tensor's placement, and what the arena and the manifest need from it.
struct TensorPlacement {
  llvm::MapVector<Value, Placement> placements;
  /// Checkpoint tensors in argument order (params[i] of the ABI).
  llvm::StringMap<int64_t> parameterIndex;
  std::vector<std::pair<std::string, RankedTensorType>> parameters;
  std::vector<Value> derived; // in derived-index order (derived[i] of the ABI)
  /// Scratch slots, one request per activation in program order, and the
  /// tensor each was made for (null: the work rows of attention_grad and
  /// cross_entropy_grad).
  std::vector<BufferRequest> requests;
  std::vector<Value> requestValue;
  BufferPlan plan;
  Value result; // what @forward returns
  /// Two token arguments: the first is the source sequence (rows ℓ_z).
  bool encoderDecoder = false;

  // Training: @loss_and_gradients's gradients placed ahead of the walk
  // (where each static-shaped one accumulates), and attention_grad's scratch
  // request for its per-head work rows (cross_entropy_grad's: the loss's
  // row terms).
  bool training = false;
  llvm::DenseMap<Value, Placement> accumulation;
  llvm::DenseMap<Operation *, int64_t> workRequests;
  /// Floats of scratch before the arena: Static slots, then the two chunk
  /// buffers of the weight gradients (0 in the forward's placement).
  int64_t staticFloats = 0;
  /// The Static slots among them, zeroed on entry to xf_train_step.
  int64_t zeroedFloats = 0;
  /// Static gradients whose single user (a sum or slice_grad) they were
  /// accumulated into directly: that user has nothing left to do for them.
  llvm::DenseSet<Value> folded;
  /// Rows per weight-gradient chunk (a GEMM with K = chunkRows) and the
  /// chunk buffers' float offsets in scratch.
  int64_t chunkRows = 0, chunkLeftOffset = 0, chunkRightOffset = 0;

  /// Places one op's result; `index` is the op's position in the body (the
  /// clock of the slots' liveness). Fails with a located error on an op or a
  /// shape the host lowering has no storage for.
  LogicalResult placeOp(Operation *op, int64_t index);
  /// `tensor`'s placement (a value-initialized one where it has none).
  const Placement &placementOf(Value tensor) const;
  /// The tensor whose storage `tensor` shares: itself unless a view.
  Value rootOf(Value tensor) const;
  /// A scratch slot, a view of one, or the output: a tensor with ℓ rows that
  /// a kernel of the entry point writes.
  bool isActivation(Value tensor) const;
};

/// Places @forward's token arguments and ops; the returned tensor is written
/// straight into `out` when it owns a slot; then plans the arena.
FailureOr<TensorPlacement> placeForward(func::FuncOp forward);

/// Places @loss_and_gradients (xf_train_step, docs/training.md): the
/// gradients' accumulation targets and Static slots, the weight gradients'
/// chunk buffers, then its ops as placeForward does; its parameters keep
/// `forward`'s indices (an error where it reads one @forward does not).
FailureOr<TensorPlacement> placeTraining(func::FuncOp lossAndGradients,
                                         const TensorPlacement &forward);

/// The placement analysis of a kernel-level module, in MLIR's sense: built
/// from the module (xf-lower-to-host's getAnalysis<ModulePlacement>(), or
/// lowerToHost), then only read — by the cache plan (CachePlan.h) and by the
/// host lowering's patterns. @forward's placement and, where the model runs
/// packed batches (isPackable), @forward_packed's values placed as the
/// @forward values they repeat, so both share weights, slots and kernels.
/// A module it cannot place gets a located error and `failed()`.
class ModulePlacement {
public:
  explicit ModulePlacement(Operation *module);

  bool failed() const { return !placed; }
  const TensorPlacement &placement() const { return *placed; }
  func::FuncOp forward, forwardPacked;
  /// Each @forward_packed op → the @forward op it repeats.
  llvm::DenseMap<Operation *, Operation *> forwardOpOf;
  /// @forward_packed's `segments` arguments: the targets' and an
  /// encoder-decoder's sources' (null without packed batches).
  Value packedSegments, packedSourceSegments;

private:
  LogicalResult placePackedForward();
  std::optional<TensorPlacement> placed;
};

} // namespace mlir::xf

#endif // XF_CONVERSION_PLACEMENT_H
