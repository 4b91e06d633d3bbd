//===- PackedBatches.cpp - packed batches in the entry points -------------===//
//
// Several sequences' rows in one matrix (docs/abi.md, "Packed batches"):
// @forward_packed's ops take @forward's placements (ModulePlacement), the
// loop over the sequences that positional and attention kernels run in
// (forEachSequence), the segmented attention's query-block table, and the
// cached variant's compaction of each sequence's newest row (none launched on
// the GPU in a step of one row per sequence).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

using namespace mlir;
using namespace mlir::xf;

void HostLowering::forEachSequence(Value lengths, Value keyLengths,
                                   llvm::function_ref<void(const SequenceSpan &)> body) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // Carried: the row offset (first: xfc --check-fault=packed finds it there), the status and
  // (cross attention) the key row offset.
  SmallVector<Value> init{i64(0), status};
  if (keyLengths)
    init.push_back(i64(0));
  auto loop = scf::ForOp::create(
      *b, loc, i64(0), countArg, i64(1), init,
      [&](OpBuilder &nested, Location, Value index, ValueRange carried) {
        OpBuilder::InsertionGuard guard(*b);
        b->setInsertionPointToStart(nested.getInsertionBlock());
        // Halide buffer descriptors are stack allocations: release them every
        // iteration, or a large batch would grow the stack without bound.
        Value stack = LLVM::StackSaveOp::create(*b, loc, ptr);
        status = carried[1];
        SequenceSpan span;
        span.index = index;
        span.offset = carried[0];
        span.rows = loadI64(lengths, index);
        span.position = cachedMode ? loadI64(startsArg, index) : i64(0);
        if (keyLengths)
          span.keyOffset = carried[2], span.keyRows = loadI64(keyLengths, index);
        body(span);
        LLVM::StackRestoreOp::create(*b, loc, stack);
        SmallVector<Value> next{arith::AddIOp::create(*b, loc, span.offset, span.rows), status};
        if (keyLengths)
          next.push_back(arith::AddIOp::create(*b, loc, span.keyOffset, span.keyRows));
        scf::YieldOp::create(*b, loc, next);
      });
  status = loop.getResult(1);
}

HostLowering::QueryBlockTable HostLowering::queryBlockTable(Value lengths, Value keyLengths,
                                                            int64_t queryBlock) {
  for (const QueryBlockTable &t : queryBlockTables)
    if (t.lengths == lengths && t.keyLengths == keyLengths && t.queryBlock == queryBlock)
      return t;
  Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = b->getI32Type();
  auto add = [&](Value x, Value y) -> Value { return arith::AddIOp::create(*b, loc, x, y); };
  auto sub = [&](Value x, Value y) -> Value { return arith::SubIOp::create(*b, loc, x, y); };
  QueryBlockTable table{lengths, keyLengths, queryBlock};
  // At most n + Σℓ / queryBlock blocks, on the entry point's stack.
  Value rows = lengths == sourceLengthsArg ? lzArg : lArg;
  Value most = add(countArg, arith::DivSIOp::create(*b, loc, rows, i64(queryBlock)));
  table.entries = LLVM::AllocaOp::create(*b, loc, ptr, i32,
                                         arith::MulIOp::create(*b, loc, add(most, i64(1)), i64(5)));
  auto store = [&](Value entry, int field, Value value) {
    Value at = LLVM::GEPOp::create(
        *b, loc, ptr, i32, table.entries,
        ValueRange{add(arith::MulIOp::create(*b, loc, entry, i64(5)), i64(field))});
    LLVM::StoreOp::create(*b, loc, arith::TruncIOp::create(*b, loc, i32, value), at);
  };
  // Per sequence (carrying its first row, first key row and the blocks so far), per block of
  // queryBlock rows: (first row, rows, first key row, key rows, position + ℓ_k − ℓ).
  auto sequences = scf::ForOp::create(
      *b, loc, i64(0), countArg, i64(1), ValueRange{i64(0), i64(0), i64(0)},
      [&](OpBuilder &nested, Location, Value index, ValueRange carried) {
        OpBuilder::InsertionGuard guard(*b);
        b->setInsertionPointToStart(nested.getInsertionBlock());
        Value row = carried[0], key = carried[1];
        Value length = loadI64(lengths, index);
        Value keyLength = keyLengths ? loadI64(keyLengths, index) : length;
        auto blocks = scf::ForOp::create(
            *b, loc, i64(0), length, i64(queryBlock), ValueRange{carried[2]},
            [&](OpBuilder &inner, Location, Value first, ValueRange count) {
              OpBuilder::InsertionGuard innerGuard(*b);
              b->setInsertionPointToStart(inner.getInsertionBlock());
              store(count[0], 0, add(row, first));
              store(count[0], 1,
                    arith::MinSIOp::create(*b, loc, i64(queryBlock), sub(length, first)));
              store(count[0], 2, key);
              store(count[0], 3, keyLength);
              store(count[0], 4, add(first, sub(keyLength, length)));
              scf::YieldOp::create(*b, loc, ValueRange{add(count[0], i64(1))});
            });
        scf::YieldOp::create(
            *b, loc, ValueRange{add(row, length), add(key, keyLength), blocks.getResult(0)});
      });
  table.count = sequences.getResult(2);
  queryBlockTables.push_back(table);
  return table;
}

FailureOr<bool> HostLowering::perSequence(Operation *op, Value segments) {
  if (!segments && packedMode)
    return op->emitError("in @forward_packed this op needs the packed batch's segments (its "
                         "rows are several sequences)");
  if (segments && (!packedMode || (segments != packedSegments && segments != packedSourceSegments)))
    return op->emitError("segments must be @forward_packed's sequence-lengths argument");
  return bool(segments);
}

void HostLowering::compactLastRows() {
  if (cachePlan.tailInputRoots.empty())
    return;
  auto copies = [&] {
    forEachSequence(lengthsArg, Value(), [&](const SequenceSpan &s) {
      Value last =
          arith::SubIOp::create(*b, loc, arith::AddIOp::create(*b, loc, s.offset, s.rows), i64(1));
      for (Value root : cachePlan.tailInputRoots) {
        int64_t stride = placements[root].stride;
        call(kernels->copy2d(), {rowPointer(root, last), i64(stride), rowPointer(root, s.index),
                                 i64(stride), i64(1), i64(stride)});
      }
    });
  };
  if (!options.cudaDevice) {
    copies();
    return;
  }
  // On the GPU a step of one row per sequence (every decode step) has each newest row in
  // place already (row i is sequence i's): no copy is launched, and a decode step's graph
  // holds none. Steps with prompt rows copy per sequence as above.
  Value prompts = arith::CmpIOp::create(*b, loc, arith::CmpIPredicate::ne, lArg, countArg);
  auto branch = scf::IfOp::create(*b, loc, TypeRange{b->getI32Type()}, prompts,
                                  /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(*b);
  Value before = status;
  b->setInsertionPointToStart(branch.thenBlock());
  copies();
  scf::YieldOp::create(*b, loc, status);
  b->setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(*b, loc, before);
  status = branch.getResult(0);
}
