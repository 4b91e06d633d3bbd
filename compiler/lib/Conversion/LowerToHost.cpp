//===- LowerToHost.cpp - fused xf IR → host code + kernel specs -----------===//
//
// Two walks over @forward. The first, the placement analysis (Placement.h),
// decides where every tensor lives; the cache plan (CachePlan.h) which entry
// points the model gets and its KV-cache layout. The second emits the entry
// points (EntryPoints.cpp): here, one kernel call per op — Halide pipelines
// for GEMMs and attention, scf loop kernels for the rest — each bracketed by
// the profiling hooks (ProfilingHooks.cpp), its operands described by
// BufferArguments.cpp; then the manifest (Manifest.cpp).
// LowerTraining.cpp lowers @loss_and_gradients.
//
//===----------------------------------------------------------------------===//

#include "BlockGemvCall.h"
#include "DecodeAttentionCall.h"
#include "HostLowering.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <map>
#include <optional>
#include <tuple>

using namespace mlir;
using namespace mlir::xf;

namespace {

std::string gemmKey(const GemmKernelSpec &s) {
  const GemmSchedule &c = s.schedule;
  return kernelSignature(s) + (s.packedWeight ? " packed" : "") +
         llvm::formatv(" | {0} {1} {2} {3} {4} {5} {6} {7} {8}", c.tileCols, c.tileRows, c.kBlock,
                       c.packWeights, c.rowsPerTask, c.panelCols, c.gemvRowsBelow,
                       c.gemvRowsPerPass, c.gemvTasks)
             .str();
}

std::string attentionKey(const AttentionKernelSpec &s) {
  const AttentionSchedule &c = s.schedule;
  return kernelSignature(s) + llvm::formatv(" | {0} {1} {2} {3}", c.queryBlock, c.keyBlock,
                                            c.rowTile, c.decodeKeyTile)
                                  .str();
}

} // namespace

std::string HostLowering::nameKernel(GemmKernelSpec &spec) {
  return kernelName(gemmKey(spec), "xf_gemm_", program.gemms, spec);
}

std::string HostLowering::nameKernel(AttentionKernelSpec &spec) {
  return kernelName(attentionKey(spec), "xf_attention_", program.attentions, spec);
}

/// The packed batch's attention in one call. Untuned, it gets the short-sequence schedule
/// (defaultSegmentedAttentionSchedule) of the target whose defaults the op carries
/// (defaultAttentionSchedule: key blocks of 4 vectors, row tiles of 4 with 32 registers).
/// A tuned op keeps its schedule.
AttentionKernelSpec HostLowering::segmentedSpecOf(AttentionOp attn) {
  AttentionKernelSpec spec = attentionKernelSpecOf(attn);
  spec.segmented = true;
  if (!attn->hasAttr("xf.tuned")) {
    VectorShape shape{std::max<int64_t>(1, spec.schedule.keyBlock / 4),
                      spec.schedule.rowTile >= 4 ? 32 : 16};
    spec.schedule = defaultSegmentedAttentionSchedule(shape);
  }
  spec.name = nameKernel(spec);
  return spec;
}

//===----------------------------------------------------------------------===//
// Weights packed at load (filled by xf_prepare)
//===----------------------------------------------------------------------===//

GemmKernelSpec HostLowering::gemmSpecOf(GemmOp gemm) {
  Value weight = gemm.getWeight();
  GemmKernelSpec spec = gemmKernelSpecOf(gemm, isBf16(weight), options.bf16Activations,
                                         blocksOf(weight));
  Storage s = placements[weight].storage;
  // Training updates the parameters after every step: its kernels read them as stored.
  spec.packedWeight = options.packWeightsAtLoad && !training &&
                      (s == Storage::Parameter || s == Storage::Derived) &&
                      canPackWeightAtLoad(spec);
  spec.name = nameKernel(spec);
  return spec;
}

/// One packed buffer per weight and layout (tile width; gated tiles
/// interleave): GEMMs that read a weight the same way share it.
void HostLowering::planPackedWeights() {
  std::map<std::tuple<Operation *, unsigned, int64_t, bool>, int64_t> index;
  forward.walk([&](GemmOp gemm) {
    GemmKernelSpec spec = gemmSpecOf(gemm);
    if (!spec.packedWeight)
      return;
    Value w = gemm.getWeight();
    auto key = std::make_tuple(w.getDefiningOp(), cast<OpResult>(w).getResultNumber(),
                               spec.schedule.tileCols, spec.epilogue == GemmEpilogue::SwiGlu);
    auto [it, inserted] = index.try_emplace(key, int64_t(packedWeights.size()));
    if (inserted)
      packedWeights.push_back({w, spec});
    packedWeightOfGemm[gemm] = it->second;
  });
}

HalideBufferArg HostLowering::packedWeightArg(int64_t index) {
  const GemmKernelSpec &spec = packedWeights[index].spec;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  if (emittingForward)
    derivedForwardReads.insert(int64_t(derived.size()) + index);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, derivedArg,
                                 ValueRange{i64(int64_t(derived.size()) + index)});
  PackedWeightShape shape = packedWeightShape(spec);
  HalideBufferArg arg{LLVM::LoadOp::create(*b, loc, ptr, at),
                      {{i64(shape.lanes), i64(1)},
                       {i64(shape.rows), i64(shape.lanes)},
                       {i64(shape.tiles), i64(shape.rows * shape.lanes)}}};
  arg.bf16 = spec.bf16Weights;
  return arg;
}

//===----------------------------------------------------------------------===//
// xf_forward: one kernel per op
//===----------------------------------------------------------------------===//

namespace {
// On the GPU, token_embed(W_e, x) + pos_embed(W_p, x) (GPT-2's e_t + W_p[t]) is one kernel: the
// gather, the positions and their sum, two launches fewer a step. The embeddings, used only
// by the sum, emit nothing of their own. Not for offsets, packed segments or block tables.
struct EmbeddingSum {
  TokenEmbedOp tokens;
  PositionalEmbedOp positions;
};
std::optional<EmbeddingSum> embeddingSum(AddOp add) {
  auto tokens = add.getLhs().getDefiningOp<TokenEmbedOp>();
  auto positions = add.getRhs().getDefiningOp<PositionalEmbedOp>();
  if (!tokens || !positions) {
    tokens = add.getRhs().getDefiningOp<TokenEmbedOp>();
    positions = add.getLhs().getDefiningOp<PositionalEmbedOp>();
  }
  if (!tokens || !positions || !tokens->hasOneUse() || !positions->hasOneUse() ||
      positions.getOffset() || positions.getSegments() ||
      positions.getTokens() != tokens.getTokens())
    return std::nullopt;
  return EmbeddingSum{tokens, positions};
}
// The sum's parts where the sum is one kernel: on the GPU, with tables the kernel reads (the
// caller says: not of blocks, the positions' not bf16).
std::optional<EmbeddingSum>
fusedEmbeddingSum(AddOp add, bool device, llvm::function_ref<bool(EmbeddingSum)> readable) {
  std::optional<EmbeddingSum> sum = device ? embeddingSum(add) : std::nullopt;
  if (sum && !readable(*sum))
    return std::nullopt;
  return sum;
}
// The add an embedding's one use is, where it is one.
AddOp embeddingUser(Operation *op) {
  if (!isa<TokenEmbedOp, PositionalEmbedOp>(op) || !op->hasOneUse())
    return AddOp();
  return dyn_cast<AddOp>(*op->getUsers().begin());
}
} // namespace

LogicalResult HostLowering::emitNumber(Operation *op) {
  if (auto length = dyn_cast<LengthOp>(op)) {
    numbers.map(length.getResult(), arith::SIToFPOp::create(*b, loc, b->getF64Type(),
                                                            rowsOf(length.getTokens())));
    return success();
  }
  if (isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op)) {
    b->clone(*op, numbers);
    return success();
  }
  return op->emitError("no host code for this number");
}

LogicalResult HostLowering::emitOp(Operation *op) {
  loc = op->getLoc();
  if (training)
    return emitBackwardKernel(op);
  Value v = op->getResult(0);
  if (v.getType().isF64())
    return emitNumber(op);
  Placement &p = placements[v];
  if (p.storage != Storage::Scratch && p.storage != Storage::Output)
    return success(); // parameters, derived weights, views: nothing to run
  auto readable = [&](EmbeddingSum s) {
    return blocksOf(s.tokens.getTable()) == WeightBlocks::None && !isBf16(s.positions.getTable());
  };
  if (AddOp sum = embeddingUser(op); sum && fusedEmbeddingSum(sum, options.cudaDevice, readable))
    return success(); // the sum's one kernel computes it
  emittingOp = op;
  LogicalResult emitted =
      profiled(op, [&](xfrt::KernelSpec &site) { return emitKernel(op, site); });
  emittingOp = nullptr;
  return emitted;
}

LogicalResult HostLowering::emitKernel(Operation *op, xfrt::KernelSpec &site) {
  Value v = op->getResult(0);
  Placement &p = placements[v];
  int64_t width = p.cols;
  Value out = pointerOf(v), rows = rowsOf(v);
  auto dense = [&](Value t) -> FailureOr<Value> {
    if (failed(requireDense(op, t)))
      return failure();
    return pointerOf(t);
  };
  auto orStatus = [&](Value rc) { status = arith::OrIOp::create(*b, loc, status, rc); };

  if (auto gemm = dyn_cast<GemmOp>(op)) {
    GemmKernelSpec spec = gemmSpecOf(gemm);
    SmallVector<HalideBufferArg> args{matrixArg(gemm.getInput()),
                                      spec.packedWeight
                                          ? packedWeightArg(packedWeightOfGemm.lookup(gemm))
                                          : matrixArg(gemm.getWeight())};
    if (spec.hasBias)
      args.push_back(matrixArg(gemm.getBias()));
    if (spec.hasResidual)
      args.push_back(matrixArg(gemm.getResidual()));
    args.push_back(matrixArg(v));
    auto halide = [&] {
      return callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, options.cudaDevice);
    };
    if (spec.weightBlocks != WeightBlocks::None && options.q8GemmInputs) {
      auto stride = [&](Value t) { return i64(placements[t].stride); };
      BlockGemvCall q8{pointerOf(gemm.getInput()), stride(gemm.getInput()), rows,
                       pointerOf(gemm.getWeight())};
      if (spec.hasBias)
        q8.bias = pointerOf(gemm.getBias());
      if (spec.hasResidual)
        q8.residual = pointerOf(gemm.getResidual()), q8.residualStride = stride(gemm.getResidual());
      q8.out = out, q8.outStride = stride(v), q8.spec = &spec, q8.isaCeiling = options.blockDotIsa;
      orStatus(callBlockGemvOrPipeline(*b, loc, *program.module, q8, halide));
    } else {
      orStatus(halide());
    }
    site.name = spec.name, site.kind = "gemm";
    setKernelWork(site, kernelWork(spec));
    site.tuned = op->hasAttr("xf.tuned");
    return success();
  }
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    AttentionKernelSpec spec = attentionKernelSpecOf(attn);
    // Fused rotary positions: with a cache, new keys are rotated on their way
    // into it (rotateKeys) and the kernel rotates only the queries.
    func::FuncOp rotateKeys;
    if (spec.rope != AttentionKernelSpec::Rope::None && cachedMode) {
      spec.ropeKeys = false;
      kernels->useSchedule(defaultLoopSchedule(spec.dK));
      rotateKeys = kernels->rotaryRows(1, spec.dK,
                                       spec.rope == AttentionKernelSpec::Rope::Adjacent
                                           ? RotaryPairs::Adjacent
                                           : RotaryPairs::Halves,
                                       spec.ropeBase, /*inverse=*/false, cachePlan.half());
    }
    // Models that decode several sequences together also get the batched decode step
    // (one call over every sequence's newest row): causal self-attention whose keys sit in a
    // cache (rotated there, if rotary), on the CPU. Set in every entry point alike, so
    // that they share the kernel.
    // A half cache gives the cached entry points their own kernel (float16 K/V), which alone
    // needs the batched step.
    spec.halfKeyValues = cachedMode && cachePlan.half();
    const bool batchedStepWanted =
        cachePlan.packedCacheable && spec.causal && !attn.getKeySegments() &&
        (spec.rope == AttentionKernelSpec::Rope::None || !spec.ropeKeys) && !options.cudaDevice &&
        (cachedMode || !cachePlan.half());
    // libxfrt's xfrt_decode_attention takes the decode steps (one query row, single or
    // batched) of the kernels it handles; only the others need the Halide `<kernel>_batched`
    // pipeline (compiling it anyway cost ~0.5 s and an object per cached attention kernel).
    const bool decodeInRuntime =
        !options.cudaDevice && options.decodeAttentionIsa >= 0 && decodeAttentionHandles(spec);
    spec.batchedDecode = batchedStepWanted && !decodeInRuntime;
    spec.name = nameKernel(spec);
    // Plain variables: lambdas may not capture structured bindings before C++20.
    const auto cacheOffsets = cachePlan.offsets.lookup(op);
    const int64_t keyOffset = cacheOffsets.first, valueOffset = cacheOffsets.second;
    const int64_t kvHeads = spec.keyValueHeads();
    FailureOr<bool> segmented = perSequence(op, attn.getSegments());
    if (failed(segmented))
      return failure();
    Value keySegments = attn.getKeySegments();
    if (keySegments && (!*segmented || keySegments != packedSourceSegments))
      return op->emitError("key_segments must be @forward_packed's source-lengths argument");
    // A decode step of every sequence: each newest K/V row into its sequence's cache, then
    // one call over all of them (sequence i's row is row i).
    auto batchedStep = [&]() {
      forEachSequence(lengthsArg, Value(), [&](const SequenceSpan &s) {
        Value cache = sequenceCache(s.index);
        cachedMatrixArg(attn.getKey(), keyOffset, kvHeads, cache, s.position,
                        rowPointer(attn.getKey(), s.offset), s.rows, rotateKeys);
        cachedMatrixArg(attn.getValue(), valueOffset, kvHeads, cache, s.position,
                        rowPointer(attn.getValue(), s.offset), s.rows);
      });
      HalideBufferArg slots{slotsArg, {{countArg, i64(1)}}}, starts{startsArg, {{countArg, i64(1)}}};
      slots.int64 = starts.int64 = true;
      HalideBufferArg query = segmentArg(attn.getQuery(), i64(0), countArg);
      HalideBufferArg keys = cacheSlotsArg(attn.getKey(), keyOffset, kvHeads);
      HalideBufferArg values = cacheSlotsArg(attn.getValue(), valueOffset, kvHeads);
      HalideBufferArg out = segmentArg(v, i64(0), countArg);
      if (decodeInRuntime) {
        BatchedDecodeAttentionCall decode;
        decode.query = query.host, decode.queryStride = query.dims[1].second;
        decode.count = countArg, decode.slots = slotsArg, decode.starts = startsArg;
        decode.key = keys.host, decode.value = values.host, decode.slotStride = keys.dims[3].second;
        decode.keyHeadStride = keys.dims[2].second, decode.valueHeadStride = values.dims[2].second;
        decode.out = out.host, decode.outStride = out.dims[1].second, decode.spec = &spec;
        decode.isaCeiling = options.decodeAttentionIsa;
        orStatus(callBatchedDecodeAttention(*b, loc, *program.module, decode));
        return;
      }
      orStatus(callHalidePipeline(*b, loc, *program.module, spec.name + "_batched",
                                  {query, keys, values, slots, starts, out}));
    };
    // Cached attention: `rows` new K/V rows (at `newKeys`, `newValues`) into `cache` at
    // `position`, then the Halide kernel over the cache — or, with one query row (a decode
    // step), libxfrt's xfrt_decode_attention doing both where it handles the kernel
    // (DecodeAttentionCall.h).
    auto cachedAttention = [&](HalideBufferArg query, Value cache, Value position, Value newKeys,
                               Value newValues, Value rows, HalideBufferArg out) -> Value {
      auto halide = [&] {
        // On the GPU, K and V of one width go into the cache in one launch (appendKeyValues),
        // not one per head and tensor.
        bool together = options.cudaDevice && !rotateKeys &&
                        placements[attn.getKey()].cols == placements[attn.getValue()].cols;
        HalideBufferArg keys = cachedMatrixArg(attn.getKey(), keyOffset, kvHeads, cache, position,
                                               newKeys, rows, rotateKeys, !together);
        HalideBufferArg values = cachedMatrixArg(attn.getValue(), valueOffset, kvHeads, cache,
                                                 position, newValues, rows, {}, !together);
        if (together)
          appendKeyValues(attn.getKey(), attn.getValue(), keys, values, newKeys, newValues,
                          position, rows);
        SmallVector<HalideBufferArg> args{query, keys, values, out};
        return callHalidePipeline(*b, loc, *program.module, spec.name, args, {},
                                  options.cudaDevice);
      };
      if (!decodeInRuntime)
        return halide();
      DecodeAttentionCall decode;
      decode.query = query.host, decode.rows = rows;
      decode.keys = arith::AddIOp::create(*b, loc, position, rows);
      decode.newKey = newKeys, decode.newValue = newValues;
      std::tie(decode.key, decode.keyHeadStride) =
          cacheSlot(attn.getKey(), keyOffset, kvHeads, cache);
      std::tie(decode.value, decode.valueHeadStride) =
          cacheSlot(attn.getValue(), valueOffset, kvHeads, cache);
      decode.out = out.host, decode.spec = &spec;
      decode.isaCeiling = options.decodeAttentionIsa;
      return callDecodeAttentionOrPipeline(*b, loc, *program.module, decode, halide);
    };
    scf::IfOp batched;
    if (*segmented && cachedMode && batchedStepWanted) {
      batched = scf::IfOp::create(*b, loc, TypeRange{b->getI32Type()}, batchedDecodeStep,
                                  /*addThenBlock=*/true, /*addElseBlock=*/true);
      b->setInsertionPointToStart(batched.thenBlock());
      Value before = status;
      batchedStep();
      scf::YieldOp::create(*b, loc, status);
      status = before;
      b->setInsertionPointToStart(batched.elseBlock());
    }
    if (*segmented && !cachedMode && spec.rope == AttentionKernelSpec::Rope::None &&
        !options.cudaDevice) {
      // One call over the whole packed batch (SegmentedAttentionKernel.cpp): the kernel reads
      // where each sequence lies and keeps it to its own keys (cross attention: its own
      // source's rows).
      spec = segmentedSpecOf(attn);
      QueryBlockTable table =
          queryBlockTable(lengthsOf(attn.getSegments()), keySegments ? sourceLengthsArg : Value(),
                          spec.schedule.queryBlock);
      HalideBufferArg blocks{table.entries, {{i64(5), i64(1)}, {table.count, i64(5)}}};
      blocks.int32 = true;
      SmallVector<HalideBufferArg> args{matrixArg(attn.getQuery()), matrixArg(attn.getKey()),
                                        matrixArg(attn.getValue()), blocks, matrixArg(v)};
      orStatus(callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, false));
    } else if (*segmented) {
      // Each sequence attends over its own rows (and its own cache); cross
      // attention over its own source's rows.
      forEachSequence(
          lengthsOf(attn.getSegments()), keySegments ? sourceLengthsArg : Value(),
          [&](const SequenceSpan &s) {
            HalideBufferArg query = segmentArg(attn.getQuery(), s.offset, s.rows);
            HalideBufferArg out = segmentArg(v, s.offset, s.rows);
            if (cachedMode) {
              orStatus(cachedAttention(query, sequenceCache(s.index), s.position,
                                       rowPointer(attn.getKey(), s.offset),
                                       rowPointer(attn.getValue(), s.offset), s.rows, out));
              return;
            }
            Value firstKey = keySegments ? s.keyOffset : s.offset;
            Value keys = keySegments ? s.keyRows : s.rows;
            SmallVector<HalideBufferArg> args{
                query, headsArg(attn.getKey(), kvHeads, rowPointer(attn.getKey(), firstKey), keys),
                headsArg(attn.getValue(), kvHeads, rowPointer(attn.getValue(), firstKey), keys),
                out};
            orStatus(callHalidePipeline(*b, loc, *program.module, spec.name, args, {},
                                        options.cudaDevice));
          });
      if (batched) {
        scf::YieldOp::create(*b, loc, status);
        b->setInsertionPointAfter(batched);
        status = batched.getResult(0);
      }
    } else {
      if (cachedMode) {
        orStatus(cachedAttention(matrixArg(attn.getQuery()), cacheArg, startArg,
                                 pointerOf(attn.getKey()), pointerOf(attn.getValue()),
                                 rowsOf(attn.getKey()), matrixArg(v)));
      } else {
        SmallVector<HalideBufferArg> args{
            matrixArg(attn.getQuery()),
            headsArg(attn.getKey(), kvHeads, pointerOf(attn.getKey()), rowsOf(attn.getKey())),
            headsArg(attn.getValue(), kvHeads, pointerOf(attn.getValue()), rowsOf(attn.getValue())),
            matrixArg(v)};
        orStatus(
            callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, options.cudaDevice));
      }
    }
    // Q·Kᵀ and P·V: 2·H·(d_k + d_v) per (query, key) pair (causal masking halves the useful work).
    site.name = spec.name, site.kind = "attention";
    site.tuned = op->hasAttr("xf.tuned");
    setKernelWork(site, kernelWork(spec));
    site.contextFromSource = placements[attn.getKey()].rows == Rows::Source;
    return success();
  }
  kernels->useSchedule(loopScheduleOf(loopScheduleAttrOf(op)));
  // Loop kernels that read column slices in place: (pointer, row stride).
  auto strided = [&](Value t) -> std::pair<Value, Value> {
    return {pointerOf(t), i64(placements[t].stride)};
  };
  if (isa<SiluOp>(op)) {
    auto [in, stride] = strided(op->getOperand(0));
    call(kernels->silu(width), {in, stride, out, rows});
    site.name = lastLoopKernel, site.kind = "loop";
    return success();
  }
  if (auto mul = dyn_cast<MulOp>(op)) {
    auto [lhs, lhsStride] = strided(mul.getLhs());
    auto [rhs, rhsStride] = strided(mul.getRhs());
    call(kernels->multiply(width), {lhs, lhsStride, rhs, rhsStride, out, rows});
    site.name = lastLoopKernel, site.kind = "loop";
    return success();
  }
  if (auto rope = dyn_cast<RopeOp>(op)) {
    if (rope.getOffset())
      return op->emitError("explicit positional offsets are not supported by the host lowering");
    const auto input = strided(rope.getInput());
    Value in = input.first, stride = input.second;
    int64_t heads = rope.getHeads();
    auto pairs = rope.getPairing() == RopePairing::adjacent ? RotaryPairs::Adjacent
                                                            : RotaryPairs::Halves;
    func::FuncOp kernel =
        kernels->rotaryRows(heads, width / heads, pairs, rope.getBase().convertToDouble());
    FailureOr<bool> segmented = perSequence(op, rope.getSegments());
    if (failed(segmented))
      return failure();
    if (*segmented)
      forEachSequence(lengthsOf(rope.getSegments()), Value(), [&](const SequenceSpan &s) {
        call(kernel, {rowPointer(rope.getInput(), s.offset), stride, rowPointer(v, s.offset),
                      s.rows, s.position});
      });
    else
      call(kernel, {in, stride, out, rows, firstPosition()});
    site.name = lastLoopKernel, site.kind = "loop";
    return success();
  }
  auto readable = [&](EmbeddingSum s) { // as in emitOp
    return blocksOf(s.tokens.getTable()) == WeightBlocks::None && !isBf16(s.positions.getTable());
  };
  if (auto add = dyn_cast<AddOp>(op))
    if (std::optional<EmbeddingSum> sum = fusedEmbeddingSum(add, options.cudaDevice, readable)) {
      FailureOr<Value> table = dense(sum->tokens.getTable());
      FailureOr<Value> positions = dense(sum->positions.getTable());
      Value ids = sum->tokens.getTokens();
      FailureOr<Value> idsAt =
          placements[ids].storage == Storage::Tokens ? FailureOr<Value>(pointerOf(ids)) : dense(ids);
      if (failed(table) || failed(positions) || failed(idsAt))
        return failure();
      call(kernels->gatherPositionRows(width, isBf16(sum->tokens.getTable())),
           {*table, *idsAt, *positions, out, rows, firstPosition()});
      site.name = lastLoopKernel, site.kind = "loop";
      return success();
    }
  // The other loop kernels read dense inputs.
  SmallVector<Value> inputs;
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType())) // an index, a run-time number
      continue;
    // Lengths: the loop over sequences reads them.
    if (packedMode && (operand == packedSegments || operand == packedSourceSegments))
      continue;
    if (placements[operand].storage == Storage::Tokens) {
      inputs.push_back(pointerOf(operand));
      continue;
    }
    FailureOr<Value> ptr = dense(operand);
    if (failed(ptr))
      return failure();
    inputs.push_back(*ptr);
  }
  if (auto embed = dyn_cast<TokenEmbedOp>(op);
      embed && blocksOf(embed.getTable()) != WeightBlocks::None) {
    // Rows of blocks: libxfrt dequantizes them (runtime/lib/BlockRows.cpp).
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    auto gather = declareFunction(
        *program.module, loc, "xfrt_gather_block_rows",
        FunctionType::get(ctx, {ptr, b->getI64Type(), ptr, ptr, b->getI64Type(), b->getI64Type()},
                          {}));
    func::CallOp::create(*b, loc, gather,
                         ValueRange{inputs[0], i64(ggmlTypeId(blocksOf(embed.getTable()))),
                                    inputs[1], out, rows, i64(width)});
    site.name = "xfrt_gather_block_rows", site.kind = "loop";
    return success();
  } else if (auto embed = dyn_cast<TokenEmbedOp>(op)) {
    call(kernels->gatherRows(width, isBf16(embed.getTable())),
         {inputs[0], inputs[1], out, rows});
  } else if (auto pos = dyn_cast<PositionalEmbedOp>(op)) {
    if (pos.getOffset())
      return op->emitError("explicit positional offsets are not supported by the host lowering");
    FailureOr<bool> segmented = perSequence(op, pos.getSegments());
    if (failed(segmented))
      return failure();
    if (*segmented) // positions restart at each sequence's start
      forEachSequence(lengthsOf(pos.getSegments()), Value(), [&](const SequenceSpan &s) {
        call(kernels->positionRows(width), {inputs[0], rowPointer(v, s.offset), s.rows,
                                            s.position});
      });
    else
      call(kernels->positionRows(width), {inputs[0], out, rows, firstPosition()});
  } else if (auto sin = dyn_cast<SinusoidalEmbedOp>(op)) {
    if (sin.getOffset())
      return op->emitError("explicit positional offsets are not supported by the host lowering");
    func::FuncOp kernel = kernels->sinusoidRows(width, sin.getBase().convertToDouble());
    FailureOr<bool> segmented = perSequence(op, sin.getSegments());
    if (failed(segmented))
      return failure();
    if (*segmented)
      forEachSequence(lengthsOf(sin.getSegments()), Value(), [&](const SequenceSpan &s) {
        call(kernel, {rowPointer(v, s.offset), s.rows, s.position});
      });
    else
      call(kernel, {out, rows, firstPosition()});
  } else if (auto add = dyn_cast<AddOp>(op)) {
    bool broadcast = add.getRhs().getType().getRank() == 1;
    call(kernels->add(width, broadcast), {inputs[0], inputs[1], out, rows});
  } else if (isa<ReluOp>(op)) {
    call(kernels->elementwise(width, ElementwiseKind::Relu), {inputs[0], out, rows});
  } else if (auto gelu = dyn_cast<GeluOp>(op)) {
    auto kind = gelu.getApproximation() == GeluApproximation::tanh ? ElementwiseKind::GeluTanh
                                                                   : ElementwiseKind::GeluErf;
    call(kernels->elementwise(width, kind), {inputs[0], out, rows});
  } else if (auto scale = dyn_cast<ScaleOp>(op); scale && scale.getMultiplier()) {
    Value factor = arith::MulFOp::create(
        *b, loc, numbers.lookup(scale.getMultiplier()),
        arith::ConstantFloatOp::create(*b, loc, b->getF64Type(), scale.getFactor()));
    call(kernels->scaleBy(width),
         {inputs[0], out, rows, arith::BitcastOp::create(*b, loc, b->getI64Type(), factor)});
  } else if (auto scale = dyn_cast<ScaleOp>(op)) {
    call(kernels->scale(width, scale.getFactor().convertToDouble()), {inputs[0], out, rows});
  } else if (isa<SoftmaxOp>(op)) {
    call(kernels->softmax(width), {inputs[0], out, rows});
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    bool affine = bool(ln.getGamma());
    SmallVector<Value> args(inputs);
    args.append({out, rows});
    call(kernels->layerNorm(width, ln.getEpsilon().convertToDouble(), affine), args);
  } else if (auto rms = dyn_cast<RmsNormOp>(op)) {
    SmallVector<Value> args(inputs);
    args.append({out, rows});
    call(kernels->rmsNorm(width, rms.getEpsilon().convertToDouble(), bool(rms.getGamma())),
         args);
  } else {
    return op->emitError("no kernel for this op in host lowering");
  }
  site.name = lastLoopKernel, site.kind = "loop";
  return success();
}

/// A parameter may live in bfloat16 when every use reads it as a GEMM weight
/// or an embedding table: both kernels widen it exactly on load.
void HostLowering::chooseBf16Parameters() {
  if (!options.bf16Weights)
    return;
  llvm::StringSet<> names = bf16ParameterNames(forward);
  for (auto &entry : names)
    bf16Parameters.insert(parameterIndex.lookup(entry.getKey()));
}

LogicalResult HostLowering::run() {
  FailureOr<TensorPlacement> placed = placeForward(forward);
  if (failed(placed))
    return failure();
  static_cast<TensorPlacement &>(*this) = std::move(*placed);
  blockParameters = blockParameterTypes(forward, options.weightBlocks);
  chooseBf16Parameters();
  OpBuilder top(ctx);
  program.module = ModuleOp::create(forward.getLoc());
  kernels = std::make_shared<LoopKernels>(*program.module);
  kernels->setDevice(options.cudaDevice);
  planPackedWeights();
  emitPrepare();
  cachePlan = planCache(forward, *this, options.halfKvCache);
  // Packed batches need @forward_packed (xf-pack-sequences decides which
  // models can run them).
  cachePlan.packable &= bool(forwardPacked);
  cachePlan.packedCacheable &= bool(forwardPacked);
  if (failed(placePackedForward()))
    return failure();
  for (auto [cached, packed] : {std::pair{false, false}, {true, false}, {false, true},
                                {true, true}})
    if (failed(emitForward(cached, packed)))
      return failure();
  emitScratchBytes();
  emitCacheBytes();
  program.deviceLoops = kernels->deviceKernels();

  program.manifest = xfrt::renderManifest(describeModel());
  emitManifestGlobal(*program.module, program.manifest);
  return success();
}

FailureOr<HostProgram> mlir::xf::lowerToHost(ModuleOp fused, const HostOptions &options) {
  auto forward = fused.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fused.emitError("no func.func @forward to lower");
  fused.getContext()->loadDialect<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                                  math::MathDialect, scf::SCFDialect>();
  HostProgram program;
  HostLowering lowering(forward, program, options,
                        fused.lookupSymbol<func::FuncOp>("forward_packed"));
  if (failed(lowering.run()))
    return failure();
  if (auto train = fused.lookupSymbol<func::FuncOp>("loss_and_gradients")) {
    HostLowering training(train, program, options);
    if (failed(training.runTraining(lowering)))
      return failure();
  }
  return program;
}
