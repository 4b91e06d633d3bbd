//===- AttentionEmitter.cpp - xf.attention → attention kernel calls -------===//
//
// The kernel emitter of xf.attention (KernelEmitters.cpp). Which call runs
// depends on the entry point: over the whole batch (xf_forward); over the KV
// cache after appending this step's K/V rows (xf_forward_cached), or libxfrt's
// xfrt_decode_attention for a one-row step (DecodeAttentionCall.h); one
// segmented call over a packed batch (xf_forward_packed), or one call per
// sequence; and in xf_forward_cached_packed a batched decode step over every
// sequence's newest row when each sequence decodes one.
//
//===----------------------------------------------------------------------===//

#include "CudaAttentionCall.h"
#include "DecodeAttentionCall.h"
#include "HostLowering.h"

using namespace mlir;
using namespace mlir::xf;

/// What every form of one attention's call shares.
struct HostLowering::AttentionCall {
  AttentionOp op;
  AttentionKernelSpec spec;
  Value result;
  /// Fused rotary positions with a cache: the loop kernel that rotates new
  /// keys on their way into it (the CPU's, per head).
  func::FuncOp rotateKeys;
  /// On the GPU: the append of the new K and V rows, every head in one launch (rotating
  /// the keys with fused rotary positions).
  func::FuncOp appendKeyValues;
  /// K and V slots in the cache rows (CachePlan.h), and K/V heads.
  int64_t keyOffset = 0, valueOffset = 0, kvHeads = 0;
  /// Whether decode steps of one row go to libxfrt's xfrt_decode_attention.
  bool decodeInRuntime = false;
  /// On the GPU: the GEMM reading the result merges the key ranges at M <= 4
  /// (CudaRangeMerge.cpp), so no merge is launched then.
  bool mergeInConsumer = false;
};

/// How a cached attention's new keys are rotated on their way into the cache (fused rotary
/// positions); none without them.
static std::optional<KeyRotation> keyRotationOf(const AttentionKernelSpec &spec) {
  if (spec.rope == AttentionKernelSpec::Rope::None)
    return std::nullopt;
  return KeyRotation{spec.rope == AttentionKernelSpec::Rope::Adjacent ? RotaryPairs::Adjacent
                                                                      : RotaryPairs::Halves,
                     spec.dK, spec.ropeBase};
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

LogicalResult HostLowering::emitAttention(AttentionOp attn, const KernelResult &r,
                                          xfrt::KernelSpec &site) {
  AttentionCall call{attn, attentionKernelSpecOf(attn), r.value};
  AttentionKernelSpec &spec = call.spec;
  if (attn->hasOneUse())
    if (auto gemm = dyn_cast<GemmOp>(*attn->getUsers().begin()))
      call.mergeInConsumer = rangeMergeSource(gemm) == attn;
  // Fused rotary positions: with a cache, new keys are rotated on their way
  // into it (rotateKeys) and the kernel rotates only the queries.
  const std::optional<KeyRotation> rotation = keyRotationOf(spec);
  // On the GPU, K and V of one width go into the cache in one launch, not one per head and
  // tensor: appendKeyValues, rotating the keys with fused rotary positions.
  const bool appendTogether = options.cudaDevice && cachedMode &&
                              placements[attn.getKey()].cols == placements[attn.getValue()].cols;
  if (rotation && cachedMode) {
    spec.ropeKeys = false;
    if (appendTogether) {
      call.appendKeyValues = kernels->appendKeyValues(rotation);
    } else {
      kernels->useSchedule(defaultLoopSchedule(spec.dK));
      call.rotateKeys = kernels->rotaryRows(1, spec.dK, rotation->pairs, spec.ropeBase,
                                            /*inverse=*/false,
                                            cachePlan.half());
    }
  } else if (appendTogether) {
    call.appendKeyValues = kernels->appendKeyValues();
  }
  // Models that decode several sequences together also get the batched decode step
  // (one call over every sequence's newest row): causal self-attention whose keys sit in a
  // cache (rotated there, if rotary). Set in every entry point alike, so
  // that they share the kernel.
  // A half cache gives the cached entry points their own kernel (float16 K/V), which alone
  // needs the batched step. On the GPU (CUDA fp32 attention, K and V of one width) it is
  // the append and two kernels for all sequences (emitCudaBatchedDecodeStep).
  spec.halfKeyValues = cachedMode && cachePlan.half();
  const bool batchedStepWanted =
      cachePlan.packedCacheable && spec.causal && !attn.getKeySegments() &&
      (spec.rope == AttentionKernelSpec::Rope::None || !spec.ropeKeys) &&
      (options.cudaDevice
           ? options.gpuMatmul == GpuMatmul::Fp32 && cudaBatchedDecodeHandles(spec)
           : (cachedMode || !cachePlan.half()));
  // libxfrt's xfrt_decode_attention takes the decode steps (one query row, single or
  // batched) of the kernels it handles; only the others need the Halide `<kernel>_batched`
  // pipeline (compiling it anyway cost ~0.5 s and an object per cached attention kernel).
  call.decodeInRuntime =
      !options.cudaDevice && options.decodeAttentionIsa >= 0 && decodeAttentionHandles(spec);
  spec.batchedDecode = batchedStepWanted && !call.decodeInRuntime;
  spec.name = nameKernel(spec);
  std::tie(call.keyOffset, call.valueOffset) = cachePlan.offsets.lookup(attn);
  call.kvHeads = spec.keyValueHeads();
  FailureOr<bool> segmented = perSequence(attn, attn.getSegments());
  if (failed(segmented))
    return failure();
  Value keySegments = attn.getKeySegments();
  if (keySegments && (!*segmented || keySegments != packedSourceSegments))
    return attn->emitError("key_segments must be @forward_packed's source-lengths argument");

  scf::IfOp batched;
  if (*segmented && cachedMode && batchedStepWanted) {
    batched = scf::IfOp::create(*b, loc, TypeRange{b->getI32Type()}, batchedDecodeStep,
                                /*addThenBlock=*/true, /*addElseBlock=*/true);
    b->setInsertionPointToStart(batched.thenBlock());
    Value before = status;
    emitBatchedDecodeStep(call);
    scf::YieldOp::create(*b, loc, status);
    status = before;
    b->setInsertionPointToStart(batched.elseBlock());
  }
  if (*segmented && !cachedMode && spec.rope == AttentionKernelSpec::Rope::None &&
      !options.cudaDevice) {
    emitSegmentedAttention(call);
  } else if (*segmented) {
    emitPerSequenceAttention(call);
    if (batched) {
      scf::YieldOp::create(*b, loc, status);
      b->setInsertionPointAfter(batched);
      status = batched.getResult(0);
    }
  } else {
    emitWholeAttention(call);
  }
  // Q·Kᵀ and P·V: 2·H·(d_k + d_v) per (query, key) pair (causal masking halves the useful work).
  site.name = spec.name, site.kind = "attention";
  site.tuned = attn->hasAttr("xf.tuned");
  setKernelWork(site, kernelWork(spec));
  site.contextFromSource = placements[attn.getKey()].rows == Rows::Source;
  return success();
}

/// A decode step of every sequence: each newest K/V row into its sequence's cache, then
/// one call over all of them (sequence i's row is row i).
void HostLowering::emitBatchedDecodeStep(const AttentionCall &call) {
  if (options.cudaDevice)
    return emitCudaBatchedDecodeStep(call);
  AttentionOp attn = call.op;
  forEachSequence(lengthsArg, Value(), [&](const SequenceSpan &s) {
    Value cache = sequenceCache(s.index);
    cachedMatrixArg(attn.getKey(), call.keyOffset, call.kvHeads, cache, s.position,
                    rowPointer(attn.getKey(), s.offset), s.rows, call.rotateKeys);
    cachedMatrixArg(attn.getValue(), call.valueOffset, call.kvHeads, cache, s.position,
                    rowPointer(attn.getValue(), s.offset), s.rows);
  });
  HalideBufferArg slots{slotsArg, {{countArg, i64(1)}}}, starts{startsArg, {{countArg, i64(1)}}};
  slots.int64 = starts.int64 = true;
  HalideBufferArg query = segmentArg(attn.getQuery(), i64(0), countArg);
  HalideBufferArg keys = cacheSlotsArg(attn.getKey(), call.keyOffset, call.kvHeads);
  HalideBufferArg values = cacheSlotsArg(attn.getValue(), call.valueOffset, call.kvHeads);
  HalideBufferArg out = segmentArg(call.result, i64(0), countArg);
  if (call.decodeInRuntime) {
    BatchedDecodeAttentionCall decode;
    decode.query = query.host, decode.queryStride = query.dims[1].second;
    decode.count = countArg, decode.slots = slotsArg, decode.starts = startsArg;
    decode.key = keys.host, decode.value = values.host, decode.slotStride = keys.dims[3].second;
    decode.keyHeadStride = keys.dims[2].second, decode.valueHeadStride = values.dims[2].second;
    decode.out = out.host, decode.outStride = out.dims[1].second, decode.spec = &call.spec;
    decode.isaCeiling = options.decodeAttentionIsa;
    orStatus(callBatchedDecodeAttention(*b, loc, *program.module, decode));
    return;
  }
  orStatus(callHalidePipeline(*b, loc, *program.module, call.spec.name + "_batched",
                              {query, keys, values, slots, starts, out}));
}

/// On the GPU, a decode step of n sequences (row i sequence i's) in three launches whatever n:
/// every new K/V row to its slot at its position (one append, both read from the step table),
/// flash-decoding's key ranges of every sequence, their merge (CudaAttentionCall.h).
void HostLowering::emitCudaBatchedDecodeStep(const AttentionCall &call) {
  AttentionOp attn = call.op;
  HalideBufferArg keys = cacheSlotsArg(attn.getKey(), call.keyOffset, call.kvHeads);
  HalideBufferArg values = cacheSlotsArg(attn.getValue(), call.valueOffset, call.kvHeads);
  this->call(kernels->appendKeyValuesAt(keyRotationOf(call.spec)),
       {rowPointer(attn.getKey(), i64(0)), i64(placements[attn.getKey()].stride),
        rowPointer(attn.getValue(), i64(0)), i64(placements[attn.getValue()].stride), keys.host,
        values.host, keys.dims[2].second, keys.dims[3].second, cacheRows, slotCount, countArg,
        keys.dims[0].first, keys.dims[2].first, rowPositions, rowSlots});
  const CudaDecodePartials shape = cudaDecodePartialsOf(call.spec);
  deviceAttentionFloats =
      std::max(deviceAttentionFloats, shape.columns * kCudaBatchedMaxSequences * shape.heads *
                                          shape.ranges);
  CudaBatchedDecode decode{segmentArg(attn.getQuery(), i64(0), countArg), keys, values,
                           rowPositions, rowSlots, countArg, devicePartials(),
                           segmentArg(call.result, i64(0), countArg)};
  orStatus(callCudaBatchedDecode(*b, loc, *program.module, call.spec, decode));
}

/// Cached attention: `rows` new K/V rows (at `newKeys`, `newValues`) into `cache` at
/// `position`, then the Halide kernel over the cache — or, with one query row (a decode
/// step), libxfrt's xfrt_decode_attention doing both where it handles the kernel
/// (DecodeAttentionCall.h). Returns the status code.
Value HostLowering::emitCachedAttention(const AttentionCall &call, HalideBufferArg query,
                                        Value cache, Value position, Value newKeys, Value newValues,
                                        Value rows, HalideBufferArg out) {
  AttentionOp attn = call.op;
  auto halide = [&] {
    bool together = bool(call.appendKeyValues);
    HalideBufferArg keys = cachedMatrixArg(attn.getKey(), call.keyOffset, call.kvHeads, cache,
                                           position, newKeys, rows, call.rotateKeys, !together);
    HalideBufferArg values = cachedMatrixArg(attn.getValue(), call.valueOffset, call.kvHeads, cache,
                                             position, newValues, rows, {}, !together);
    if (!together)
      return callAttentionPipeline(call.spec, {query, keys, values, out}, nullptr,
                                   call.mergeInConsumer);
    // On the GPU the range pass of a decode step appends the new rows itself (CudaAttentionCall.h);
    // a prompt's go in by the append kernel.
    CudaAttentionAppend append;
    append.newKeys = headsArg(attn.getKey(), call.kvHeads, newKeys, rows);
    append.newValues = headsArg(attn.getValue(), call.kvHeads, newValues, rows);
    for (auto [cached, at] : {std::pair{&keys, &append.keyRows}, {&values, &append.valueRows}}) {
      Value width = cached->dims[0].first;
      *at = HalideBufferArg{cacheElementPtr(cached->host, arith::MulIOp::create(*b, loc, position,
                                                                                 width)),
                            {{width, i64(1)}, {rows, width}, cached->dims[2]}};
    }
    append.start = position;
    append.appendKernel = [&] {
      appendKeyValues(call.appendKeyValues, attn.getKey(), attn.getValue(), keys, values, newKeys,
                      newValues, position, rows);
    };
    return callAttentionPipeline(call.spec, {query, keys, values, out}, &append,
                                 call.mergeInConsumer);
  };
  if (!call.decodeInRuntime)
    return halide();
  DecodeAttentionCall decode;
  decode.query = query.host, decode.rows = rows;
  decode.keys = arith::AddIOp::create(*b, loc, position, rows);
  decode.newKey = newKeys, decode.newValue = newValues;
  std::tie(decode.key, decode.keyHeadStride) =
      cacheSlot(attn.getKey(), call.keyOffset, call.kvHeads, cache);
  std::tie(decode.value, decode.valueHeadStride) =
      cacheSlot(attn.getValue(), call.valueOffset, call.kvHeads, cache);
  decode.out = out.host, decode.spec = &call.spec;
  decode.isaCeiling = options.decodeAttentionIsa;
  return callDecodeAttentionOrPipeline(*b, loc, *program.module, decode, halide);
}

/// One call over the whole packed batch (SegmentedAttentionKernel.cpp): the kernel reads
/// where each sequence lies and keeps it to its own keys (cross attention: its own
/// source's rows). The call takes the segmented kernel's spec.
void HostLowering::emitSegmentedAttention(AttentionCall &call) {
  AttentionOp attn = call.op;
  call.spec = segmentedSpecOf(attn);
  QueryBlockTable table = queryBlockTable(lengthsOf(attn.getSegments()),
                                          attn.getKeySegments() ? sourceLengthsArg : Value(),
                                          call.spec.schedule.queryBlock);
  HalideBufferArg blocks{table.entries, {{i64(5), i64(1)}, {table.count, i64(5)}}};
  blocks.int32 = true;
  SmallVector<HalideBufferArg> args{matrixArg(attn.getQuery()), matrixArg(attn.getKey()),
                                    matrixArg(attn.getValue()), blocks, matrixArg(call.result)};
  orStatus(callHalidePipeline(*b, loc, *program.module, call.spec.name, args, {}, false));
}

/// Each sequence of a packed batch attends over its own rows (and its own cache); cross
/// attention over its own source's rows.
void HostLowering::emitPerSequenceAttention(const AttentionCall &call) {
  AttentionOp attn = call.op;
  Value keySegments = attn.getKeySegments();
  forEachSequence(
      lengthsOf(attn.getSegments()), keySegments ? sourceLengthsArg : Value(),
      [&](const SequenceSpan &s) {
        HalideBufferArg query = segmentArg(attn.getQuery(), s.offset, s.rows);
        HalideBufferArg out = segmentArg(call.result, s.offset, s.rows);
        if (cachedMode) {
          orStatus(emitCachedAttention(call, query, sequenceCache(s.index), s.position,
                                       rowPointer(attn.getKey(), s.offset),
                                       rowPointer(attn.getValue(), s.offset), s.rows, out));
          return;
        }
        Value firstKey = keySegments ? s.keyOffset : s.offset;
        Value keys = keySegments ? s.keyRows : s.rows;
        SmallVector<HalideBufferArg> args{
            query, headsArg(attn.getKey(), call.kvHeads, rowPointer(attn.getKey(), firstKey), keys),
            headsArg(attn.getValue(), call.kvHeads, rowPointer(attn.getValue(), firstKey), keys),
            out};
        orStatus(callAttentionPipeline(call.spec, args));
      });
}

/// One call over all rows: over the cache in xf_forward_cached, else over the batch's keys.
void HostLowering::emitWholeAttention(const AttentionCall &call) {
  AttentionOp attn = call.op;
  if (cachedMode) {
    orStatus(emitCachedAttention(call, matrixArg(attn.getQuery()), cacheArg, startArg,
                                 pointerOf(attn.getKey()), pointerOf(attn.getValue()),
                                 rowsOf(attn.getKey()), matrixArg(call.result)));
    return;
  }
  SmallVector<HalideBufferArg> args{
      matrixArg(attn.getQuery()),
      headsArg(attn.getKey(), call.kvHeads, pointerOf(attn.getKey()), rowsOf(attn.getKey())),
      headsArg(attn.getValue(), call.kvHeads, pointerOf(attn.getValue()), rowsOf(attn.getValue())),
      matrixArg(call.result)};
  orStatus(callAttentionPipeline(call.spec, args, nullptr, call.mergeInConsumer));
}

Value HostLowering::callAttentionPipeline(const AttentionKernelSpec &spec,
                                          ArrayRef<HalideBufferArg> args,
                                          const CudaAttentionAppend *append,
                                          bool mergeInConsumer) {
  if (!options.cudaDevice)
    return callHalidePipeline(*b, loc, *program.module, spec.name, args);
  const CudaDecodePartials partials = cudaDecodePartialsOf(spec);
  deviceAttentionFloats = std::max(
      deviceAttentionFloats,
      partials.floats() + (cudaDecodeRangesAppend(spec) ? cudaDecodeAppendDummyFloats(partials) : 0));
  return callCudaAttention(*b, loc, *program.module, spec, args, devicePartials(), append,
                           mergeInConsumer);
}
