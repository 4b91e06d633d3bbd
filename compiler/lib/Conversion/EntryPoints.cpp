//===- EntryPoints.cpp - the host ABI's functions (docs/abi.md) -----------===//
//
// xf_prepare (derived weights, then the weights packed at load, once);
// xf_forward, xf_forward_cached, xf_forward_packed and
// xf_forward_cached_packed — their signatures, their arguments bound to the
// emitter's state, and the walk emitting one kernel per op (or a refusal,
// status 1, where the cache plan says the model cannot run that way);
// xf_scratch_bytes and xf_cache_bytes. The walk hands each op to its kernel
// emitter (KernelEmitters.cpp; TrainingEmitters.cpp in the training step).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

using namespace mlir;
using namespace mlir::xf;

LogicalResult HostLowering::emitNumber(Operation *op) {
  if (auto length = dyn_cast<LengthOp>(op)) {
    numbers.map(length.getResult(), arith::SIToFPOp::create(*b, loc, b->getF64Type(),
                                                            rowsOf(length.getTokens())));
    return success();
  }
  // The arith ops on numbers stay as lowerBody cloned them (its target keeps them).
  return op->emitError("no host code for this number");
}

LogicalResult HostLowering::emitOp(Operation *op, const KernelEmitter *emitter) {
  loc = op->getLoc();
  Value v = op->getResult(0);
  if (v.getType().isF64())
    return emitNumber(op);
  const Placement &p = placements[v];
  if (p.storage != Storage::Scratch && p.storage != Storage::Output)
    return success(); // parameters, derived weights, views: nothing to run
  if (inFusedEmbeddingSum(op))
    return success(); // the sum's one kernel computes it
  emittingOp = op;
  LogicalResult emitted =
      profiled(op, [&](xfrt::KernelSpec &site) { return emitKernel(op, emitter, site); });
  emittingOp = nullptr;
  return emitted;
}

void HostLowering::emitPrepare(llvm::StringRef name) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), name,
                                 FunctionType::get(ctx, {ptr, ptr}, {IntegerType::get(ctx, 32)}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  paramsArg = fn.getArgument(0);
  derivedArg = fn.getArgument(1);
  func::FuncOp copy = kernels->copy2d();
  for (Value v : derived) {
    Operation *op = v.getDefiningOp();
    loc = op->getLoc();
    // Every tensor here is viewed as [rows, cols] (vectors: one row).
    auto shape = [](Value t) {
      auto type = cast<RankedTensorType>(t.getType());
      return type.getRank() == 1
                 ? std::pair<int64_t, int64_t>{1, type.getDimSize(0)}
                 : std::pair<int64_t, int64_t>{type.getDimSize(0), type.getDimSize(1)};
    };
    const std::pair<int64_t, int64_t> outShape = shape(v);
    const int64_t rows = outShape.first, cols = outShape.second;
    Value out = pointerOf(v);
    auto copyBlock = [&](Value src, int64_t srcOffset, int64_t srcStride, int64_t dstOffset,
                         int64_t n, int64_t m) {
      call(copy, {offsetPtr(pointerOf(src), i64(srcOffset)), i64(srcStride),
                  offsetPtr(out, i64(dstOffset)), i64(cols), i64(n), i64(m)});
    };
    if (auto slice = dyn_cast<SliceOp>(op)) {
      int64_t inCols = shape(slice.getInput()).second;
      bool byRows = cast<RankedTensorType>(v.getType()).getRank() == 2 && slice.getAxis() == 0;
      copyBlock(slice.getInput(), slice.getOffset() * (byRows ? inCols : 1), inCols, 0, rows, cols);
    } else if (auto row = dyn_cast<RowOp>(op)) {
      copyBlock(row.getInput(), row.getIndex() * cols, cols, 0, 1, cols);
    } else if (auto concat = dyn_cast<ConcatOp>(op); concat && blocksOf(v) != WeightBlocks::None) {
      // Rows of blocks: the parts' bytes back to back.
      int64_t offset = 0;
      Type i8 = b->getI8Type();
      for (Value part : concat.getInputs()) {
        auto [pr, pc] = shape(part);
        int64_t bytes = pr * blockRowBytes(blocksOf(v), pc);
        Value dst = LLVM::GEPOp::create(*b, loc, ptr, i8, out, ValueRange{i64(offset)});
        LLVM::MemcpyOp::create(*b, loc, dst, pointerOf(part), i64(bytes), /*isVolatile=*/false);
        offset += bytes;
      }
    } else if (auto concat = dyn_cast<ConcatOp>(op); concat && isBf16(v)) {
      // bf16 rows (axis 0, of an even length: XfDialect.cpp) copied as 32-bit pairs, the
      // parts' rows back to back.
      const int64_t pairs = cols / 2;
      int64_t offset = 0;
      for (Value part : concat.getInputs()) {
        const int64_t partRows = shape(part).first;
        call(copy, {pointerOf(part), i64(pairs), offsetPtr(out, i64(offset * pairs)), i64(pairs),
                    i64(partRows), i64(pairs)});
        offset += partRows;
      }
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      bool byRows = cast<RankedTensorType>(v.getType()).getRank() == 2 && concat.getAxis() == 0;
      int64_t offset = 0;
      for (Value part : concat.getInputs()) {
        auto [pr, pc] = shape(part);
        copyBlock(part, 0, pc, byRows ? offset * cols : offset, pr, pc);
        offset += byRows ? pr : pc;
      }
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      auto [inRows, inCols] = shape(transpose.getInput());
      call(kernels->transpose2d(),
           {pointerOf(transpose.getInput()), out, i64(inRows), i64(inCols)});
    }
  }
  // Then the packed weights, from parameters and the derived weights above.
  Value prepared = arith::ConstantIntOp::create(builder, forward.getLoc(), builder.getI32Type(), 0);
  for (auto [i, packed] : llvm::enumerate(packedWeights)) {
    loc = packed.weight.getLoc();
    Value rc = callHalidePipeline(*b, loc, *program.module, packed.spec.name + "_pack",
                                  {matrixArg(packed.weight), packedWeightArg(i)});
    prepared = arith::OrIOp::create(*b, loc, prepared, rc);
  }
  func::ReturnOp::create(builder, forward.getLoc(), prepared);
  b = nullptr;
}

// The packed entry points' arguments (docs/abi.md), and what the body reads of the batch: ℓ =
// Σ ℓ_i, the profiler's context rows, the step table (CUDA), whether a cached call is a batched
// decode step.
void HostLowering::bindPackedForwardArguments(ValueRange args, bool cached) {
  OpBuilder &builder = *b;
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64Type = IntegerType::get(ctx, 64);
  paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], lengthsArg = args[3];
  startsArg = cached ? args[4] : Value();
  countArg = args[cached ? 5 : 6];
  outArg = args[cached ? 6 : 7], scratchArg = args[cached ? 7 : 8];
  cachesArg = cached ? args[8] : Value();
  slotsArg = cached ? args[9] : Value();
  sourceArg = Value(), sourceLengthsArg = Value(), lzArg = i64(0);
  if (!cached && encoderDecoder)
    sourceArg = args[4], sourceLengthsArg = args[5];
  if (cached)
    cacheRows = paddedRowsOf(args[10], i64(0));
  // ℓ = Σ ℓ_i rows (ℓ_z = Σ ℓ_z,i); the profiler's attention context: Σ ℓ_i·(start_i + ℓ_i)
  // / ℓ (an encoder-decoder's: Σ ℓ_z,i² / ℓ_z over sources, Σ ℓ_i·ℓ_z,i / ℓ across).
  SmallVector<Value> sumsInit{i64(0), i64(0), i64(0), i64(0), i64(0)};
  if (cached) // and the highest cache slot
    sumsInit.push_back(i64(0));
  auto sums = scf::ForOp::create(
      builder, loc, i64(0), countArg, i64(1), sumsInit,
      [&](OpBuilder &nested, Location, Value index, ValueRange acc) {
        OpBuilder::InsertionGuard guard(*b);
        b->setInsertionPointToStart(nested.getInsertionBlock());
        Value rows = loadI64(lengthsArg, index);
        Value context =
            cached ? Value(arith::AddIOp::create(*b, loc, loadI64(startsArg, index), rows))
                   : rows;
        Value sourceRows = sourceLengthsArg ? loadI64(sourceLengthsArg, index) : i64(0);
        auto add = [&](Value sum, Value a, Value c) -> Value {
          return arith::AddIOp::create(*b, loc, sum, arith::MulIOp::create(*b, loc, a, c));
        };
        SmallVector<Value> next{add(acc[0], rows, i64(1)), add(acc[1], rows, context),
                                add(acc[2], sourceRows, i64(1)),
                                add(acc[3], sourceRows, sourceRows),
                                add(acc[4], rows, sourceRows)};
        if (cached) // <kernel>_batched's buffers reach the highest slot
          next.push_back(arith::MaxSIOp::create(*b, loc, acc[5], loadI64(slotsArg, index)));
        scf::YieldOp::create(*b, loc, next);
      });
  lArg = sums.getResult(0);
  if (cached && options.cudaDevice) {
    // The step table the runtime uploads after the ids (docs/abi.md): from int32 word
    // 2·⌈Σℓ / 2⌉, Σℓ int64 positions, then Σℓ int64 slots.
    Value pairs = arith::DivSIOp::create(
        builder, loc, arith::AddIOp::create(builder, loc, lArg, i64(1)), i64(2));
    Value words = arith::MulIOp::create(builder, loc, pairs, i64(2));
    rowPositions = LLVM::GEPOp::create(builder, loc, ptr, builder.getI32Type(), tokensArg,
                                       ValueRange{words});
    rowSlots = LLVM::GEPOp::create(builder, loc, ptr, i64Type, rowPositions, ValueRange{lArg});
  }
  if (cached) {
    // One row per sequence, and the slots' span within a Halide buffer's reach (2^31 - 1
    // bytes; the caller's slots are >= 0, docs/abi.md). Otherwise one call per sequence.
    slotCount = arith::AddIOp::create(builder, loc, sums.getResult(5), i64(1));
    Value span = arith::MulIOp::create(
        builder, loc, slotCount,
        arith::MulIOp::create(builder, loc, cacheRows,
                              i64(cachePlan.elementBytes * cachePlan.columns)));
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
      return arith::CmpIOp::create(builder, loc, p, x, y);
    };
    batchedDecodeStep = arith::AndIOp::create(
        builder, loc, cmp(arith::CmpIPredicate::eq, lArg, countArg),
        cmp(arith::CmpIPredicate::sle, span, i64(INT32_MAX)));
    if (options.cudaDevice) // the batched partials' region holds this many sequences
      batchedDecodeStep = arith::AndIOp::create(
          builder, loc, batchedDecodeStep,
          cmp(arith::CmpIPredicate::sle, countArg, i64(kCudaBatchedMaxSequences)));
  }
  auto perRow = [&](Value sum, Value rows) -> Value {
    return arith::DivSIOp::create(builder, loc, sum,
                                  arith::MaxSIOp::create(builder, loc, rows, i64(1)));
  };
  packedContextRows = perRow(sums.getResult(1), lArg);
  if (sourceLengthsArg) {
    lzArg = sums.getResult(2);
    packedSourceContextRows = perRow(sums.getResult(3), lzArg);
    packedCrossContextRows = perRow(sums.getResult(4), lArg);
  }
}

LogicalResult HostLowering::emitForward(bool cached, bool packed) {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64Type = IntegerType::get(ctx, 64);
  Type i32Type = IntegerType::get(ctx, 32);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  FunctionType type;
  if (packed && cached) // (params, derived, tokens, lengths, starts, n, out, scratch, caches,
                        // slots, cache_positions)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, ptr, ptr, i64Type, ptr, ptr, ptr, ptr, i64Type},
                             {i32Type});
  else if (packed) // (params, derived, tokens, lengths, source, source_lengths, n, out, scratch)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, ptr, ptr, ptr, i64Type, ptr, ptr}, {i32Type});
  else if (cached) // (params, derived, tokens, l, start, out, scratch, cache, cache_positions)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, i64Type, i64Type, ptr, ptr, ptr, i64Type},
                             {i32Type});
  else // (params, derived, tokens, l, source, l_z, out, scratch)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, i64Type, ptr, i64Type, ptr, ptr}, {i32Type});
  const char *name = packed ? (cached ? "xf_forward_cached_packed" : "xf_forward_packed")
                            : (cached ? "xf_forward_cached" : "xf_forward");
  auto fn = func::FuncOp::create(top, forward.getLoc(), name, type);
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  auto args = fn.getArguments();
  // Packed batches run @forward_packed's ops (xf-pack-sequences).
  func::FuncOp source = packed ? forwardPacked : forward;
  if ((cached && !cachePlan.cacheable) || (packed && !cachePlan.packable) ||
      (packed && cached && !cachePlan.packedCacheable)) {
    // Not runnable this way: the runtime re-runs xf_forward (or loops over
    // the sequences) instead.
    func::ReturnOp::create(
        builder, loc,
        ValueRange{
            arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 1).getResult()});
    b = nullptr;
    return success();
  }
  cachedMode = cached;
  packedMode = packed;
  emittingForward = true;
  numbers.clear();
  queryBlockTables.clear();
  status = arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0);
  if (packed) {
    bindPackedForwardArguments(args, cached);
  } else if (cached) {
    paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], lArg = args[3];
    startArg = args[4], outArg = args[5], scratchArg = args[6], cacheArg = args[7];
    sourceArg = Value(), lzArg = i64(0);
    cacheRows = paddedRowsOf(args[8], i64(0));
  } else {
    paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], lArg = args[3];
    sourceArg = args[4], lzArg = args[5], outArg = args[6], scratchArg = args[7];
  }
  paddedRows = paddedRowsOf(lArg, lzArg);
  lastAttention = nullptr;
  source.walk([&](AttentionOp op) { lastAttention = op; });
  tailValues.clear();
  inTail = false;
  compacted = false;
  if (failed(lowerBody(source, fn.front())))
    return failure();
  inTail = false;
  // A returned view (or a tensor that could not be written in place) is copied out.
  if (placements[result].storage != Storage::Output) {
    const Placement &p = placements[result];
    loc = forward.getLoc();
    call(kernels->copy2d(),
         {pointerOf(result), i64(p.stride), outArg, i64(p.cols), rowsOf(result), i64(p.cols)});
  }
  func::ReturnOp::create(builder, forward.getLoc(), status);
  b = nullptr;
  cachedMode = packedMode = emittingForward = false;
  sourceLengthsArg = rowPositions = rowSlots = Value();
  return success();
}

void HostLowering::enterTail(Operation *op) {
  inTail = cachedMode && lastAttention && lastAttention->isBeforeInBlock(op) &&
           isActivation(op->getResult(0));
  if (inTail && packedMode && !compacted) {
    loc = op->getLoc();
    compactLastRows();
    compacted = true;
  }
  if (inTail) // before emitting: the op writes its one row at row 0
    tailValues.insert(op->getResult(0));
}

void HostLowering::emitCacheBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_cache_bytes",
                                 FunctionType::get(ctx, {i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  // ⌈positions⌉₁₆ rows per column keep every slot 64-byte aligned.
  Value rows = paddedRowsOf(fn.getArgument(0), i64(0));
  Value bytes =
      arith::MulIOp::create(builder, loc, rows, i64(cachePlan.elementBytes * cachePlan.columns));
  func::ReturnOp::create(builder, loc, ValueRange{bytes});
  b = nullptr;
}

void HostLowering::emitScratchBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_scratch_bytes",
                                 FunctionType::get(ctx, {i64Type, i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  Value padded = paddedRowsOf(fn.getArgument(0), fn.getArgument(1));
  Value bytes = arith::MulIOp::create(builder, loc, padded, i64(4 * plan.totalColumns));
  if (int64_t partials = std::max(deviceAttentionFloats, deviceGemmFloats)) // devicePartials()
    bytes = arith::AddIOp::create(builder, loc, bytes, i64(4 * partials));
  func::ReturnOp::create(
      builder, loc, ValueRange{arith::MaxSIOp::create(builder, loc, bytes, i64(64)).getResult()});
  b = nullptr;
}
