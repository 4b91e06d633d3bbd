//===- AttentionDecodeCuda.cpp - flash-decoding on the GPU ----------------===//
//
// KV-cache decoding has M <= 4 query rows: one block per (head, rows) would
// occupy H blocks of a GPU of 132 SMs (GPT-2 small: 12). Flash-decoding cuts
// the keys into a fixed number of ranges per head block, enough that a decode
// step launches at least decode_blocks blocks (#xf.gpu_attention_schedule; by default 264,
// two per SM of an H100/H200):
//   `<name>_decode_ranges`: one block per (key range, group of query heads
//     sharing one K/V head): the online softmax of AttentionAlgorithm.cpp over
//     the range's keys, decode_key_block (32) at a time, each K/V tile staged in shared memory
//     once for all the group's heads (GQA heads share their K/V reads); the
//     range's (output, max, sum) per query row and head go to `partials`;
//   `<name>` (its decode specialization): per (head, rows) the ranges merged
//     (defineRangeMerge, as the CPU decode path merges its ranges).
// `partials` is a device buffer the caller passes to both (the host lowering
// places it after the scratch arena): allocated by the runtime with the
// arena, outside any CUDA-graph capture, so a decode step allocates nothing.
// The number of ranges is fixed per kernel (the buffer's size is known when
// the program is built); a range holds ⌈Mz / ranges⌉ keys, none at short
// contexts (max kNoScore: weight 0 in the merge).
//
//===----------------------------------------------------------------------===//

#include "AttentionDecodeCuda.h"

using namespace Halide;

namespace mlir::xf {
namespace {

constexpr int kDecodeRows = kSmallQueryRows;
static_assert(kDecodeRows == 4, "CudaDecodePartials' rows (HalideKernels.h)");

/// The range pass's Funcs: the online softmax over rows (t, h, p), p the key range.
/// Appending (cudaDecodeRangesAppend): keys from `start` on are this step's new rows, read
/// from new_k / new_v (the QKV GEMM's output) rather than the cache, and the output is a
/// Tuple over (e, t, hi, hk, p), h = hk·group + hi: the range's (output, max, sum) as three
/// views of `partials`, and the new K and V rows as the cache holds them (keys rotated with
/// rope), written to views of the cache that give hi and p stride 0 — every block of a K/V
/// head writes the same rows, so no launch of its own appends them.
struct DecodeRanges {
  Func kTile = kernelFunc("range_key_tile"),
       vTile = kernelFunc("range_value_tile"); // (c | d, key, kv head)
  Func query = kernelFunc("range_query");      // (c, t, h), rotated with rope
  Func newKey = kernelFunc("range_new_key");   // (c, t, kv head), as the cache holds it
  Func partials = kernelFunc("partials");
  ImageParam newK{Float(32), 3, "new_k"}, newV{Float(32), 3, "new_v"};
  Param<int32_t> start{"start"}; // the first new key (the context before this step)
  Var p{"p"}, e{"e"}, hi{"hi"}, hk{"hk"};
  RDom rj, rb;
  OnlineSoftmax softmax;
  bool append = false, rotateNewKeys = false;
  /// The batched pass (defineBatchedRanges): t is a sequence, one a block; the tiles are
  /// (c | d, key, kv head, t).
  bool batched = false;
  int keyBlock = 0; // keys a range block stages and scores at a time (decode_key_block)
};

DecodeRanges defineRanges(const AttentionKernelSpec &spec, const CudaDecodePartials &shape,
                          const AttentionOperands &a) {
  DecodeRanges f;
  f.keyBlock = int(spec.gpuSchedule.decodeKeyBlock);
  const int kRangeKeyBlock = f.keyBlock;
  f.append = cudaDecodeRangesAppend(spec);
  f.rotateNewKeys = f.append && spec.rope != AttentionKernelSpec::Rope::None;
  const int dK = int(spec.dK), dV = int(spec.dV);
  const Var &c = a.c, &d = a.d, &j = a.j, &h = a.h, &t = a.t, &p = f.p, &e = f.e;
  Expr rangeKeys = (a.keys + int(shape.ranges) - 1) / int(shape.ranges);
  // Keys before `start` from the cache, the others from the new rows (the last
  // kDecodeRows of them at most; select reads both, each in bounds).
  Expr start = f.append ? Expr(f.start) : a.keys;
  Expr newRows = f.newK.dim(1).extent();
  auto newRow = [&](Expr key) { return clamp(key - start, 0, min(newRows, kDecodeRows) - 1); };
  if (f.append) {
    ImageParam newK = f.newK;
    Expr row = clamp(t, 0, newRows - 1);
    f.newKey(c, t, h) = f.rotateNewKeys ? a.rotary.rotated([&](Expr x) { return newK(x, row, h); },
                                                           c, start + t)
                                        : newK(c, row, h);
  }
  auto cached = [&](Expr key) { return clamp(key, 0, a.keys - 1); };
  Expr key = a.keyAt(c, cached(j), h), value = a.keyValue(a.v(d, cached(j), h));
  if (f.append) {
    key = select(j < start, key, f.newKey(c, newRow(j), h));
    value = select(j < start, value, f.newV(d, newRow(j), h));
  }
  f.kTile(c, j, h) = key;
  f.vTile(d, j, h) = value;
  f.query(c, t, h) = a.queryAt(h * dK + c, clamp(t, 0, a.queries - 1));
  RDom rc(0, dK, "rc");
  f.rj = RDom(0, kRangeKeyBlock, "rj");
  f.rb = RDom(0, (rangeKeys + kRangeKeyBlock - 1) / kRangeKeyBlock, "rb");
  auto keyOf = [&](Expr inBlock, Expr block) {
    return p * rangeKeys + block * kRangeKeyBlock + inBlock;
  };
  Func kTile = f.kTile, vTile = f.vTile, query = f.query;
  OnlineSoftmaxOperands o{{t, h, p}, j, d, a.b, f.rj, f.rb, a.scale};
  o.scoreTerm = [&](Expr inBlock, Expr block) {
    return query(rc, t, h) * kTile(rc, keyOf(inBlock, block), a.kvHead(h));
  };
  o.visible = [&](Expr inBlock, Expr block) {
    Expr s = keyOf(inBlock, block);
    return s < (p + 1) * rangeKeys && a.visible(s, t);
  };
  o.value = [&](Expr inBlock, Expr block) {
    return vTile(d, keyOf(inBlock, block), a.kvHead(h));
  };
  f.softmax = defineOnlineSoftmax(o);
  if (!f.append) {
    // [dV + 2] per (row, head, range): the unnormalised output, then the max and the sum.
    Tuple column = f.softmax.state(min(e, dV - 1), t, h, p);
    f.partials(e, t, h, p) = select(e < dV, column[0], e == dV, column[1], column[2]);
    return f;
  }
  const Var &hi = f.hi, &hk = f.hk;
  Tuple column = f.softmax.state(e, t, hk * a.group + hi, p);
  f.partials(e, t, hi, hk, p) = Tuple(column[0], column[1], column[2], f.newKey(e, t, hk),
                                      f.newV(e, clamp(t, 0, newRows - 1), hk));
  return f;
}

/// One block per (range, head block); threads: columns or keys (x) × query rows
/// (y) × the block's heads (z). Everything of a range in shared memory, as the
/// prefill path's key blocks (AttentionKernelCuda.cpp).
void scheduleRanges(DecodeRanges &f, const AttentionOperands &a, const CudaDecodePartials &shape,
                    int dV, bool rope) {
  const ColumnThreads columns(dV);
  const int heads = int(shape.headsPerBlock), kRangeKeyBlock = f.keyBlock;
  // The query rows of a block: a step's <= 4, or the batched pass's one sequence.
  const int rows = f.batched ? 1 : kDecodeRows;
  Var d = a.d, t = a.t, h = a.h, j = a.j, p = f.p, e = f.e;
  Var hb("head_block"), hi("block_head"), ex("ex"), er("er"), dx("dx"), dr("dr"), ho("ho");
  if (f.batched) { // blocks (range, head block, sequence)
    f.partials.split(h, hb, hi, heads)
        .split(e, er, ex, columns.threads, TailStrategy::GuardWithIf)
        .reorder(er, ex, hi, p, hb, t)
        .gpu_blocks(p, hb, t);
  } else if (!f.append) {
    f.partials.split(h, hb, hi, heads)
        .split(e, er, ex, columns.threads, TailStrategy::GuardWithIf)
        .reorder(er, ex, t, hi, p, hb);
  } else { // the same blocks: a block's heads are `heads` of one K/V head's group
    f.partials.split(f.hi, ho, hi, heads)
        .split(e, er, ex, columns.threads, TailStrategy::GuardWithIf)
        .reorder(er, ex, t, hi, p, ho, f.hk)
        .fuse(ho, f.hk, hb);
  }
  if (f.batched)
    f.partials.gpu_threads(ex, hi).unroll(er);
  else
    f.partials.gpu_blocks(p, hb).gpu_threads(ex, t, hi).unroll(er);
  const LoopLevel block(f.partials, p);
  OnlineSoftmax &s = f.softmax;
  // A (column, row, head) Func in shared memory at `at`, threads owning columns.
  auto perColumn = [&](Func g, LoopLevel at) {
    g.compute_at(at)
        .store_in(MemoryType::GPUShared)
        .bound_extent(d, columns.regs * columns.threads)
        .bound_extent(t, rows)
        .bound_extent(h, heads)
        .split(d, dr, dx, columns.threads)
        .reorder(dr, dx, t, h)
        .gpu_threads(dx, t, h)
        .unroll(dr);
    return g.update().split(d, dr, dx, columns.threads);
  };
  perColumn(s.state, block).reorder(dr, dx, t, h, f.rb).gpu_threads(dx, t, h).unroll(dr);
  for (Func tile : {f.kTile, f.vTile})
    tile.compute_at(s.state, f.rb)
        .store_in(MemoryType::GPUShared)
        .reorder(tile.args()[0], j, h)
        .gpu_threads(j)
        .bound_extent(j, kRangeKeyBlock);
  s.scores.compute_inline();
  s.blockOut.compute_inline();
  if (rope) // the block's query rows rotated once (f64 angles), not per key
    scheduleRotatedQuery(f.query, block, a.c, {t, h}, columns);
  if (f.rotateNewKeys) // the new keys rotated once a block, read by the key tiles and stored
    scheduleRotatedQuery(f.newKey.bound(t, 0, kDecodeRows), block, a.c, {t}, columns);
  for (Func perKey : {s.maskedScores, s.probs})
    perKey.compute_at(s.state, f.rb)
        .store_in(MemoryType::GPUShared)
        .bound_extent(j, kRangeKeyBlock)
        .bound_extent(t, rows)
        .bound_extent(h, heads)
        .gpu_threads(j, t, h);
  s.scoreDot.compute_at(s.maskedScores, j);
  for (Func perRow : {s.blockMax, s.blockSum}) {
    perRow.compute_at(s.state, f.rb).store_in(MemoryType::GPUShared).gpu_threads(t, h);
    perRow.update().gpu_threads(t, h);
  }
  perColumn(s.blockOutDot, LoopLevel(s.state, f.rb))
      .reorder(dr, f.rj, dx, t, h)
      .gpu_threads(dx, t, h)
      .unroll(dr);
}

/// partials' shape (CudaDecodePartials' layout).
void setPartialsShape(OutputImageParam partials, const CudaDecodePartials &shape) {
  const int columns = int(shape.columns), rows = int(shape.rows), heads = int(shape.heads);
  partials.dim(0).set_bounds(0, columns).set_stride(1);
  partials.dim(1).set_bounds(0, rows).set_stride(columns);
  partials.dim(2).set_bounds(0, heads).set_stride(columns * rows);
  partials.dim(3).set_bounds(0, int(shape.ranges)).set_stride(columns * rows * heads);
}

/// The appending range pass's outputs (e, t, hi, hk, p): the output, max and sum as views of
/// CudaDecodePartials' layout (max and sum: stride 0 along e), t of the step's rows; the new
/// K and V rows (e, t, ·, hk, ·) with hi and p of stride 0.
void setAppendingShapes(Func partials, const CudaDecodePartials &shape, int group) {
  const int columns = int(shape.columns), rows = int(shape.rows), dV = columns - 2;
  const int kvHeads = int(shape.heads) / group, headStride = columns * rows;
  std::vector<OutputImageParam> outs = partials.output_buffers();
  outs[0].dim(0).set_bounds(0, dV).dim(1).set_min(0).dim(2).set_bounds(0, group).dim(3).set_bounds(
      0, kvHeads).dim(4).set_bounds(0, int(shape.ranges));
  for (int i = 0; i < 3; ++i)
    outs[i]
        .dim(0)
        .set_stride(i == 0 ? 1 : 0)
        .dim(1)
        .set_stride(columns)
        .dim(2)
        .set_stride(headStride)
        .dim(3)
        .set_stride(headStride * group)
        .dim(4)
        .set_stride(headStride * int(shape.heads));
  for (int i = 3; i < 5; ++i)
    outs[i].dim(0).set_stride(1).dim(2).set_stride(0).dim(4).set_stride(0);
}

llvm::Expected<KernelPipeline> buildRanges(const AttentionKernelSpec &spec, bool gpuSchedule) {
  if (llvm::Error err = validateAttentionCuda(spec))
    return std::move(err);
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads());
  const AttentionShape attention{1, H, Hkv, H / Hkv, dK, dV, float(spec.scale)};
  AttentionOperands a = attentionOperandsOf(spec, attention, Target());
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  DecodeRanges f = defineRanges(spec, shape, a);
  a.q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  a.k.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
  a.v.dim(0).set_bounds(0, dV).set_stride(1).dim(1).set_bounds(0, a.keys).dim(2).set_bounds(0, Hkv);
  if (f.append) {
    for (ImageParam rows : {f.newK, f.newV})
      rows.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
    setAppendingShapes(f.partials, shape, a.group);
  } else {
    setPartialsShape(f.partials.output_buffer(), shape);
  }
  if (gpuSchedule)
    scheduleRanges(f, a, shape, dV, spec.rope != AttentionKernelSpec::Rope::None);
  else
    f.softmax.state.compute_root(); // the CPU JIT of the tests: each range's state once
  if (!f.append)
    return KernelPipeline::of({a.q, a.k, a.v}, f.partials);
  KernelPipeline built = KernelPipeline::of({a.q, a.k, a.v, f.newK, f.newV}, f.partials);
  built.scalars.push_back(f.start);
  return built;
}

/// The batched range pass's operands: every sequence's query row, the caches of all slots,
/// and the step table's positions and slots (int64, a sequence a row).
struct BatchedOperands {
  ImageParam kCache, vCache; // (c | d, position, K/V head, slot)
  ImageParam positions{Int(64), 1, "row_positions"}, slots{Int(64), 1, "row_slots"};
  Expr start, slot; // of sequence t, clamped into the caches
};

/// `<name>_batched_ranges`: the online softmax of defineRanges per (sequence t, head, range),
/// sequence t's keys 0..start_t (its new row appended before, by the batched append) read
/// from its own slot; t's query rotated at start_t with rope. Sequence t's range p holds
/// ⌈(start_t + 1) / ranges⌉ of its keys; the key blocks run over the longest range a cache
/// of this many positions can have, those past the sequence's skipped (`where`).
DecodeRanges defineBatchedRanges(const AttentionKernelSpec &spec, const CudaDecodePartials &shape,
                                 const AttentionOperands &a, BatchedOperands &in) {
  DecodeRanges f;
  f.batched = true;
  f.keyBlock = int(spec.gpuSchedule.decodeKeyBlock);
  const int kRangeKeyBlock = f.keyBlock;
  const int dK = int(spec.dK), dV = int(spec.dV);
  const Var &c = a.c, &d = a.d, &j = a.j, &h = a.h, &t = a.t, &p = f.p, &e = f.e;
  Expr positions = in.kCache.dim(1).extent();
  in.start = clamp(cast<int>(in.positions(t)), 0, positions - 1);
  in.slot = clamp(cast<int>(in.slots(t)), 0, in.kCache.dim(3).extent() - 1);
  const int ranges = int(shape.ranges);
  Expr keyCount = in.start + 1, rangeKeys = (keyCount + ranges - 1) / ranges;
  auto cached = [&](Expr key) { return clamp(key, 0, positions - 1); };
  f.kTile(c, j, h, t) = a.keyValue(in.kCache(c, cached(j), h, in.slot));
  f.vTile(d, j, h, t) = a.keyValue(in.vCache(d, cached(j), h, in.slot));
  if (spec.rope != AttentionKernelSpec::Rope::None) {
    ImageParam q = a.q;
    f.query(c, t, h) = a.rotary.rotated([&](Expr x) { return q(h * dK + x, t); }, c, in.start);
  } else {
    f.query(c, t, h) = a.q(h * dK + c, t);
  }
  RDom rc(0, dK, "rc");
  f.rj = RDom(0, kRangeKeyBlock, "rj");
  Expr longest = (positions + ranges - 1) / ranges;
  f.rb = RDom(0, (longest + kRangeKeyBlock - 1) / kRangeKeyBlock, "rb");
  f.rb.where(f.rb * kRangeKeyBlock < rangeKeys);
  auto keyOf = [&](Expr inBlock, Expr block) {
    return p * rangeKeys + block * kRangeKeyBlock + inBlock;
  };
  Func kTile = f.kTile, vTile = f.vTile, query = f.query;
  OnlineSoftmaxOperands o{{t, h, p}, j, d, a.b, f.rj, f.rb, a.scale};
  o.scoreTerm = [&](Expr inBlock, Expr block) {
    return query(rc, t, h) * kTile(rc, keyOf(inBlock, block), a.kvHead(h), t);
  };
  o.visible = [&](Expr inBlock, Expr block) {
    Expr key = keyOf(inBlock, block);
    return key < (p + 1) * rangeKeys && key < keyCount;
  };
  o.value = [&](Expr inBlock, Expr block) {
    return vTile(d, keyOf(inBlock, block), a.kvHead(h), t);
  };
  f.softmax = defineOnlineSoftmax(o);
  Tuple column = f.softmax.state(min(e, dV - 1), t, h, p);
  f.partials(e, t, h, p) = select(e < dV, column[0], e == dV, column[1], column[2]);
  return f;
}

/// The batched partials (column, sequence, head, range): CudaDecodePartials' layout with a
/// row per sequence, dense.
void setBatchedPartialsShape(OutputImageParam partials, const CudaDecodePartials &shape) {
  const int columns = int(shape.columns), heads = int(shape.heads);
  partials.dim(0).set_bounds(0, columns).set_stride(1);
  partials.dim(1).set_min(0).set_stride(columns);
  partials.dim(2).set_bounds(0, heads).set_stride(columns * partials.dim(1).extent());
  partials.dim(3).set_bounds(0, int(shape.ranges)).set_stride(columns * heads *
                                                              partials.dim(1).extent());
}

/// The query operands of a batched decode step's kernels (a row per sequence), where the
/// GPU's batched step handles `spec`.
llvm::Expected<AttentionOperands> batchedDecodeOperands(const AttentionKernelSpec &spec) {
  if (llvm::Error err = validateCudaBatchedDecode(spec))
    return std::move(err);
  const int H = int(spec.heads), Hkv = int(spec.keyValueHeads());
  const AttentionShape attention{1, H, Hkv, H / Hkv, int(spec.dK), int(spec.dV),
                                 float(spec.scale)};
  return attentionOperandsOf(spec, attention, Target());
}

llvm::Expected<KernelPipeline> buildBatchedRanges(const AttentionKernelSpec &spec,
                                                  bool gpuSchedule) {
  llvm::Expected<AttentionOperands> operands = batchedDecodeOperands(spec);
  if (!operands)
    return operands.takeError();
  AttentionOperands &a = *operands;
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads());
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  BatchedOperands in{ImageParam(keyValueType(spec), 4, "k_cache"),
                     ImageParam(keyValueType(spec), 4, "v_cache")};
  DecodeRanges f = defineBatchedRanges(spec, shape, a, in);
  a.q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  in.kCache.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
  in.kCache.dim(3).set_min(0);
  in.vCache.dim(0).set_bounds(0, dV).set_stride(1).dim(2).set_bounds(0, Hkv);
  in.vCache.dim(1).set_bounds(0, in.kCache.dim(1).extent());
  in.vCache.dim(3).set_bounds(0, in.kCache.dim(3).extent());
  for (ImageParam table : {in.positions, in.slots})
    table.dim(0).set_bounds(0, a.q.dim(1).extent()).set_stride(1);
  setBatchedPartialsShape(f.partials.output_buffer(), shape);
  f.partials.output_buffer().dim(1).set_bounds(0, a.q.dim(1).extent());
  if (gpuSchedule)
    scheduleRanges(f, a, shape, dV, spec.rope != AttentionKernelSpec::Rope::None);
  else
    f.softmax.state.compute_root(); // the CPU JIT of the tests
  return KernelPipeline::of({a.q, in.kCache, in.vCache, in.positions, in.slots}, f.partials);
}

/// `<name>_batched`: the ranges of every sequence merged, a block per (head, 4 sequences) as
/// `<name>`'s decode merge, from partials of a row per sequence.
llvm::Expected<KernelPipeline> buildBatchedMerge(const AttentionKernelSpec &spec,
                                                 bool gpuSchedule) {
  llvm::Expected<AttentionOperands> operands = batchedDecodeOperands(spec);
  if (!operands)
    return operands.takeError();
  AttentionOperands &a = *operands;
  const int H = int(spec.heads), dV = int(spec.dV);
  CudaDecodeMerge m = defineCudaDecodeMerge(spec, a, /*batched=*/true);
  Func out = kernelFunc("out");
  {
    Expr head = a.c / dV, column = a.c % dV;
    Tuple merged = m.merged(column, a.t, head);
    out(a.c, a.t) = select(merged[1] > 0.f, merged[0] / merged[1], 0.f);
  }
  Expr n = m.partials.dim(1).extent();
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, n);
  if (gpuSchedule)
    scheduleCudaDecodeMerge(m, a, Stage(out), out, dV);
  else
    m.merged.compute_root();
  return KernelPipeline::of({m.partials}, out);
}

} // namespace

llvm::Error validateCudaBatchedDecode(const AttentionKernelSpec &spec) {
  if (llvm::Error err = validateAttentionCuda(spec))
    return err;
  if (!cudaBatchedDecodeHandles(spec))
    return attentionError("attention kernel '" + spec.name +
                          "': a batched decode step on the GPU needs causal attention with keys "
                          "in a cache (already rotated) and K and V heads of one width");
  return llvm::Error::success();
}

CudaDecodeMerge defineCudaDecodeMerge(const AttentionKernelSpec &spec, const AttentionOperands &a,
                                      bool batched) {
  CudaDecodeMerge m;
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  const int dV = int(spec.dV);
  ImageParam partials = m.partials;
  // Rows past kDecodeRows exist only outside the decode specialization, which never merges:
  // clamped, the buffer's 4 rows cover every read.
  // Batched: a row per sequence, as many as the call has.
  Expr lastRow = batched ? partials.dim(1).extent() - 1 : Expr(kDecodeRows - 1);
  RangeResults results = partialsRangeResults(partials, lastRow, dV);
  m.rp = RDom(0, int(shape.ranges), "rp");
  defineRangeMerge(m.top, m.merged, m.rp, a.d, a.t, a.h, results);
  if (batched)
    setBatchedPartialsShape(partials, shape);
  else
    setPartialsShape(partials, shape);
  return m;
}

void scheduleCudaDecodeMerge(CudaDecodeMerge &m, const AttentionOperands &a, Stage decodeStage,
                             Func out, int dV) {
  // Per (head, ≤ 4 rows) a block; in shared memory each row's top range max,
  // then each column thread's weighted sums over the ranges.
  const ColumnThreads columns(dV);
  const Var d = a.d, t = a.t;
  const HeadBlockLoops loops = scheduleHeadBlocks(decodeStage, a, dV, kDecodeRows);
  const Var head = loops.head, dx = loops.dx, dr = loops.dr;
  m.top.compute_at(out, head).store_in(MemoryType::GPUShared).gpu_threads(t);
  m.top.update().gpu_threads(t);
  m.merged.compute_at(out, head)
      .store_in(MemoryType::GPUShared)
      .bound_extent(d, columns.regs * columns.threads)
      .split(d, dr, dx, columns.threads)
      .reorder(dr, dx, t)
      .gpu_threads(dx, t)
      .unroll(dr);
  m.merged.update()
      .split(d, dr, dx, columns.threads)
      .reorder(dr, m.rp, dx, t)
      .gpu_threads(dx, t)
      .unroll(dr);
}

llvm::Expected<KernelPipeline> buildAttentionCudaRangesPipeline(const AttentionKernelSpec &spec,
                                                                bool gpuSchedule) {
  KernelFuncScope names(cudaDecodeRangesName(spec));
  return buildCatchingHalideErrors("scheduling CUDA decode ranges of '" + spec.name + "'",
                                   [&] { return buildRanges(spec, gpuSchedule); });
}

llvm::Expected<KernelPipeline> buildCudaBatchedRangesPipeline(const AttentionKernelSpec &spec,
                                                              bool gpuSchedule) {
  KernelFuncScope names(cudaBatchedName(spec, CudaBatchedPart::Ranges));
  return buildCatchingHalideErrors("scheduling CUDA batched decode ranges of '" + spec.name + "'",
                                   [&] { return buildBatchedRanges(spec, gpuSchedule); });
}

llvm::Expected<KernelPipeline> buildCudaBatchedMergePipeline(const AttentionKernelSpec &spec,
                                                             bool gpuSchedule) {
  KernelFuncScope names(cudaBatchedName(spec, CudaBatchedPart::Merge));
  return buildCatchingHalideErrors("scheduling the CUDA batched decode merge of '" + spec.name +
                                       "'",
                                   [&] { return buildBatchedMerge(spec, gpuSchedule); });
}

} // namespace mlir::xf
