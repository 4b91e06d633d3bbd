//===- BufferArguments.cpp - where a tensor's rows are, for a kernel call -===//
//
// HostLowering's view of a placed tensor from inside an entry point: its
// pointer (a parameter, a derived or scratch buffer, an output; in a cached
// tail, its last row), its row count, and the Halide buffer descriptions the
// kernel calls take — a matrix, a KV-cache slot that the new rows are first
// copied (or rotated) into, and every slot of a packed batch's caches — and
// the loads and checks the entry points share.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include <tuple>

using namespace mlir;
using namespace mlir::xf;

/// In xf_forward_cached's tail (the ops after the last attention, all
/// row-wise) only the newest row matters: tail results hold one row, and
/// full-length inputs are read from their last row.
bool HostLowering::readsLastRowOnly(Value tensor) {
  return cachedMode && inTail && isActivation(tensor) && !tailValues.contains(tensor);
}

Value HostLowering::pointerOf(Value tensor) {
  Value base = storagePointer(tensor);
  if (!readsLastRowOnly(tensor) || packedMode) // packed: compacted to rows 0..n-1
    return base;
  Value lastRow = arith::SubIOp::create(*b, loc, lArg, i64(1));
  return offsetPtr(base, arith::MulIOp::create(*b, loc, lastRow, i64(placements[tensor].stride)));
}

void HostLowering::noteForwardRead(Value tensor, int64_t index) {
  if (!emittingForward)
    return;
  bool rows = false;
  if (auto embed = dyn_cast_if_present<TokenEmbedOp>(emittingOp))
    rows = embed.getTable() == tensor;
  else if (auto pos = dyn_cast_if_present<PositionalEmbedOp>(emittingOp))
    rows = pos.getTable() == tensor;
  auto [it, inserted] = forwardReads.try_emplace(index, xfrt::ForwardReads::Rows);
  if (!rows)
    it->second = xfrt::ForwardReads::All;
}

Value HostLowering::storagePointer(Value tensor) {
  const Placement &p = placements[tensor];
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto slot = [&](Value array, int64_t i) -> Value {
    Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, array, ValueRange{i64(i)});
    return LLVM::LoadOp::create(*b, loc, ptr, at);
  };
  switch (p.storage) {
  case Storage::Parameter:
    noteForwardRead(tensor, p.index);
    return slot(paramsArg, p.index);
  case Storage::Derived:
    if (emittingForward)
      derivedForwardReads.insert(p.index);
    return slot(derivedArg, p.index);
  case Storage::Tokens:
    if (training) // ([source,] tokens, targets)
      return p.index == forward.getNumArguments() - 1 ? targetsArg
             : p.index == 0 && encoderDecoder         ? sourceArg
                                                      : tokensArg;
    return p.index == 0 && encoderDecoder ? sourceArg : tokensArg;
  case Storage::Gradient:
    return offsetPtr(slot(gradsArg, p.index), i64(p.colOffset));
  case Storage::Static:
    return offsetPtr(scratchArg, i64(p.index + p.colOffset));
  case Storage::Loss:
    return lossArg;
  case Storage::Output:
    return outArg;
  case Storage::Scratch: {
    Value floats = arith::MulIOp::create(*b, loc, paddedRows, i64(plan.columnOffset[p.index]));
    return offsetPtr(offsetPtr(scratchArg, i64(staticFloats)), floats);
  }
  case Storage::View:
    return offsetPtr(storagePointer(p.root), i64(p.colOffset));
  }
  llvm_unreachable("unknown storage");
}

Value HostLowering::rowsOf(Value tensor) {
  if (cachedMode && (tailValues.contains(tensor) || readsLastRowOnly(tensor)))
    return packedMode ? countArg : i64(1);
  const Placement &p = placements[tensor];
  switch (p.rows) {
  case Rows::Target:
    return lArg;
  case Rows::Source:
    return lzArg;
  case Rows::Static:
    return i64(p.staticRows);
  }
  llvm_unreachable("unknown rows");
}

HalideBufferArg HostLowering::matrixArg(Value tensor) {
  const Placement &p = placements[tensor];
  HalideBufferArg arg{pointerOf(tensor), {}};
  if (WeightBlocks blocks = blocksOf(tensor); blocks != WeightBlocks::None) {
    int64_t rowBytes = blockRowBytes(blocks, p.cols);
    arg.bytes = true;
    arg.dims.push_back({i64(rowBytes), i64(1)});
    arg.dims.push_back({rowsOf(tensor), i64(rowBytes)});
    return arg;
  }
  arg.bf16 = isBf16(tensor);
  arg.dims.push_back({i64(p.cols), i64(1)});
  if (cast<RankedTensorType>(tensor.getType()).getRank() == 2)
    arg.dims.push_back({rowsOf(tensor), i64(p.stride)});
  return arg;
}

HalideBufferArg HostLowering::cachedMatrixArg(Value tensor, int64_t column, int64_t heads,
                                              Value cache, Value start, Value source, Value rows,
                                              func::FuncOp rotate, bool appendRows) {
  const Placement &p = placements[tensor];
  const int64_t width = p.cols / heads;
  // Not a structured binding: the loop body below captures both (C++20).
  Value slot, headElements;
  std::tie(slot, headElements) = cacheSlot(tensor, column, heads, cache);
  Value newRows = arith::MulIOp::create(*b, loc, start, i64(width));
  // Head g's new rows: columns [g·width, +width) of the source rows, to rows
  // start.. of the head's block.
  if (appendRows) {
    scf::ForOp::create(*b, loc, i64(0), i64(heads), i64(1), ValueRange{},
                       [&](OpBuilder &nested, Location, Value g, ValueRange) {
                         OpBuilder::InsertionGuard guard(*b);
                         b->setInsertionPointToStart(nested.getInsertionBlock());
                         Value from =
                             offsetPtr(source, arith::MulIOp::create(*b, loc, g, i64(width)));
                         Value head =
                             cacheElementPtr(slot, arith::MulIOp::create(*b, loc, g, headElements));
                         Value at = cacheElementPtr(head, newRows);
                         if (rotate) // (in, in_stride, out, rows, first position)
                           call(rotate, {from, i64(p.stride), at, rows, start});
                         else
                           call(cachePlan.half() ? kernels->copy2dToHalf() : kernels->copy2d(),
                                {from, i64(p.stride), at, i64(width), rows, i64(width)});
                         scf::YieldOp::create(*b, loc);
                       });
  }
  Value context = arith::AddIOp::create(*b, loc, start, rows);
  HalideBufferArg arg{slot,
                      {{i64(width), i64(1)}, {context, i64(width)}, {i64(heads), headElements}}};
  arg.f16 = cachePlan.half();
  return arg;
}

void HostLowering::appendKeyValues(func::FuncOp append, Value key, Value value,
                                   const HalideBufferArg &keyCache,
                                   const HalideBufferArg &valueCache, Value keySource,
                                   Value valueSource, Value start, Value rows) {
  // (column, position, head) dims: the width, then the heads and the elements between them.
  Value width = keyCache.dims[0].first;
  Value newRows = arith::MulIOp::create(*b, loc, start, width);
  SmallVector<Value> args{keySource,
                          i64(placements[key].stride),
                          valueSource,
                          i64(placements[value].stride),
                          cacheElementPtr(keyCache.host, newRows),
                          cacheElementPtr(valueCache.host, newRows),
                          keyCache.dims[2].second,
                          rows,
                          width,
                          keyCache.dims[2].first};
  if (append.getNumArguments() > args.size()) // a rotating append: the first new position
    args.push_back(start);
  call(append, args);
}

std::pair<Value, Value> HostLowering::cacheSlot(Value tensor, int64_t column, int64_t heads,
                                                Value cache) {
  Value slot = cacheElementPtr(cache, arith::MulIOp::create(*b, loc, cacheRows, i64(column)));
  Value headElements =
      arith::MulIOp::create(*b, loc, cacheRows, i64(placements[tensor].cols / heads));
  return {slot, headElements};
}

HalideBufferArg HostLowering::cacheSlotsArg(Value tensor, int64_t column, int64_t heads) {
  // Each slot as cachedMatrixArg lays it out: [heads][cache rows][width].
  const int64_t width = placements[tensor].cols / heads;
  Value slotElements = arith::MulIOp::create(*b, loc, cacheRows, i64(cachePlan.columns));
  Value first = cacheElementPtr(cachesArg, arith::MulIOp::create(*b, loc, cacheRows, i64(column)));
  HalideBufferArg arg{first,
                      {{i64(width), i64(1)},
                       {cacheRows, i64(width)},
                       {i64(heads), arith::MulIOp::create(*b, loc, cacheRows, i64(width))},
                       {slotCount, slotElements}}};
  arg.f16 = cachePlan.half();
  return arg;
}

Value HostLowering::loadI64(Value array, Value index) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, b->getI64Type(), array, ValueRange{index});
  return LLVM::LoadOp::create(*b, loc, b->getI64Type(), at);
}

Value HostLowering::loadPointer(Value array, Value index) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, array, ValueRange{index});
  return LLVM::LoadOp::create(*b, loc, ptr, at);
}

LogicalResult HostLowering::requireDense(Operation *op, Value tensor) {
  if (placements[tensor].stride == placements[tensor].cols)
    return success();
  return op->emitError("this op reads a column slice of an activation, which "
                       "host lowering only passes to GEMM and attention kernels");
}
