//===- CachePlan.h - which entry points a model gets, and its KV cache -*- C++ -*-===//
//
// From @forward and its placement (Placement.h): whether the model can decode
// incrementally (xf_forward_cached) and run packed batches
// (xf_forward_packed, xf_forward_cached_packed), and the layout of the KV
// cache — a K and a V slot per attention (float32 or float16 elements), slot i
// at element ⌈positions⌉₁₆·c_i
// (c_i: the widths H_kv·d of the slots before it), each [H_kv][⌈positions⌉₁₆][d]
// with every K/V head's rows contiguous, so the slots scale with the capacity
// chosen at run time and a decode step streams each head (docs/abi.md).
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_CACHEPLAN_H
#define XF_CONVERSION_CACHEPLAN_H

#include "xf/Conversion/Placement.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <utility>

namespace mlir::xf {

struct CachePlan {
  /// Incremental decoding is exact: rows only meet in causal self-attention.
  bool cacheable = false;
  /// Packed rows only meet in attention, which runs per sequence (per
  /// source/target pair for an encoder-decoder's cross attention).
  bool packable = false;
  /// Both, and the full-length tensors the tail (the ops after the last
  /// attention) reads live in scratch slots, where compactLastRows can move
  /// each sequence's last row.
  bool packedCacheable = false;
  /// The cache's default capacity in positions (the manifest's
  /// cache_positions), and its width in columns.
  int64_t positions = 0, columns = 0;
  /// Bytes of an element: 4 (float32) or 2 (IEEE float16, HostOptions::halfKvCache).
  int64_t elementBytes = 4;
  bool half() const { return elementBytes == 2; }
  /// Each attention's K and V slot: c_i, the slot starts at element ⌈positions⌉₁₆·c_i.
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> offsets;
  /// The scratch roots of the full-length tensors the tail reads.
  SmallVector<Value> tailInputRoots;
};

/// Nothing is cached (and no field but `packable` set) unless `cacheable`. `halfElements`
/// (HostOptions::halfKvCache): a cache of float16 elements, else float32.
CachePlan planCache(func::FuncOp forward, const TensorPlacement &placed, bool halfElements);

/// The cache plan of a placed module (the host lowering's, computed once
/// before its patterns run and then only read): @forward's, packed batches
/// only with @forward_packed, whose attentions take the slots of the @forward
/// attentions they repeat.
CachePlan planCache(const ModulePlacement &placed, bool halfElements);

/// Packed rows meet only in attention, which runs per sequence (cross
/// attention per source/target pair): every GEMM multiplies by weights and
/// no row reads the sequence's length.
bool isPackable(func::FuncOp forward, const TensorPlacement &placed);

/// A model reading length(x) gives every row a value that depends on the
/// whole sequence's length: a cached step or a packed batch would see
/// another length, so xf_forward runs it whole, one sequence at a time.
bool usesLength(func::FuncOp forward);

/// Positions of a model without a positional table (rotary positions go on
/// forever): its `l_max` hyperparameter, the context it was trained for;
/// 0 when it has a table or no such hyperparameter.
int64_t hyperparameterPositionLimit(func::FuncOp forward);

} // namespace mlir::xf

#endif // XF_CONVERSION_CACHEPLAN_H
