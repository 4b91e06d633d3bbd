//===- AttentionKernelCuda.cpp - flash attention as a Halide CUDA pipeline ===//
//
// The attention of AttentionKernel.cpp (its buffers, masking rule and grouped
// K/V heads, AttentionOperands) on an NVIDIA GPU: the online softmax of
// AttentionAlgorithm.cpp with a GPU schedule (#xf.gpu_attention_schedule: spec.gpuSchedule).
// One thread block per (head, block of queryBlock queries). Query t is
// row ri of block blk (t = blk·queryBlock + ri), so the key blocks a block needs
// depend on its block index only: in causal mode the key blocks after the
// last one its last query sees are skipped whole (a condition uniform over
// the block around the key block's body, K/V staging included; not computed
// and masked). Per key block, in shared memory: K and V staged, the masked
// scores (threads: key × query, each dot product in a register), each
// query's block max and Σ e^(s − m), the block's P·V (threads: column ×
// query); then the running (output, max, sum) state — in shared memory, each
// thread its own (columns, query) — is rescaled and merged. Scores never
// reach global memory.
//
// M <= kSmallQueryRows (decoding): flash-decoding (AttentionDecodeCuda.cpp),
// a specialization that merges the key ranges' partial results
// `<name>_decode_ranges` wrote into the `partials` buffer.
//
//===----------------------------------------------------------------------===//

#include "AttentionDecodeCuda.h"

using namespace Halide;

namespace mlir::xf {

llvm::Error validateAttentionCuda(const AttentionKernelSpec &spec) {
  if (spec.name.empty())
    return attentionError("attention kernel: empty function name");
  if (spec.heads <= 0 || spec.dK <= 0 || spec.dV <= 0 || spec.kvHeads < 0 ||
      spec.heads % spec.keyValueHeads() != 0)
    return attentionError("attention kernel '" + spec.name +
                          "': heads, dK, dV must be positive and kvHeads divide heads");
  if (!(spec.scale > 0) && !(spec.scale < 0))
    return attentionError("attention kernel '" + spec.name + "': scale must be a nonzero number");
  if (spec.halfKeyValues) // xfc keeps a CUDA target's KV cache in float32
    return attentionError("attention kernel '" + spec.name +
                          "': the CUDA attention reads float32 keys and values only");
  return llvm::Error::success();
}

void scheduleRotatedQuery(Func query, LoopLevel at, Var c, const std::vector<Var> &rows,
                          const ColumnThreads &columns) {
  assert(!rows.empty() && rows.size() <= 2 && "a block's threads: columns × 1 or 2 row loops");
  Var cr("cr"), cx("cx");
  std::vector<VarOrRVar> order{cr, cx};
  order.insert(order.end(), rows.begin(), rows.end());
  query.compute_at(at)
      .store_in(MemoryType::GPUShared)
      .split(c, cr, cx, columns.threads, TailStrategy::GuardWithIf)
      .reorder(order)
      .unroll(cr);
  if (rows.size() == 1)
    query.gpu_threads(cx, rows[0]);
  else
    query.gpu_threads(cx, rows[0], rows[1]);
}

HeadBlockLoops scheduleHeadBlocks(Stage out, const AttentionOperands &a, int dV, int rows) {
  const ColumnThreads columns(dV);
  HeadBlockLoops l;
  out.split(a.c, l.head, l.col, dV)
      .split(l.col, l.dr, l.dx, columns.threads, TailStrategy::GuardWithIf)
      .split(a.t, l.tq, l.ti, rows, TailStrategy::GuardWithIf)
      .reorder(l.dr, l.dx, l.ti, l.head, l.tq)
      .gpu_blocks(l.head, l.tq)
      .gpu_threads(l.dx, l.ti)
      .unroll(l.dr);
  return l;
}

namespace {

/// The prefill path's Funcs: K and V tiles and the online softmax over rows (ri, h, blk).
struct CudaFlash {
  Func consumer;                               // attention_out
  Func kTile = kernelFunc("key_tile"), vTile = kernelFunc("value_tile"); // (c | d, key, kv head)
  Func query = kernelFunc("flash_query"); // (c, ri, h, blk), rotated with rope
  Var ri{"ri"}, blk{"blk"};
  RDom rj, rb;
  OnlineSoftmax softmax;
  int queryBlock = 0, keyBlock = 0; // the schedule's: queries per block, keys per stage
};

CudaFlash defineFlash(const AttentionKernelSpec &spec, const AttentionOperands &a,
                      Expr rowsPerBlock) {
  CudaFlash f;
  f.queryBlock = int(spec.gpuSchedule.queryBlock), f.keyBlock = int(spec.gpuSchedule.keyBlock);
  const int dK = int(spec.dK), kKeyBlock = f.keyBlock;
  const Var &c = a.c, &d = a.d, &j = a.j, &h = a.h, &ri = f.ri, &blk = f.blk;
  // Keys and rows past the ends are clamped (their probabilities are 0,
  // their rows never stored).
  f.kTile(c, j, h) = a.keyAt(c, clamp(j, 0, a.keys - 1), h);
  f.vTile(d, j, h) = a.keyValue(a.v(d, clamp(j, 0, a.keys - 1), h));
  Expr t = blk * rowsPerBlock + ri;
  RDom rc(0, dK, "rc");
  f.rj = RDom(0, kKeyBlock, "rj");
  f.rb = RDom(0, (a.keys + kKeyBlock - 1) / kKeyBlock, "rb");
  if (spec.causal) // the key blocks up to the last one the block's last query sees
    f.rb.where(f.rb * kKeyBlock <= blk * rowsPerBlock + (rowsPerBlock - 1) + (a.keys - a.queries));
  f.query(c, ri, h, blk) = a.queryAt(h * dK + c, clamp(t, 0, a.queries - 1));
  Func kTile = f.kTile, vTile = f.vTile, query = f.query;
  OnlineSoftmaxOperands o{{ri, h, blk}, j, d, a.b, f.rj, f.rb, a.scale};
  o.scoreTerm = [&](Expr key, Expr block) {
    return query(rc, ri, h, blk) * kTile(rc, block * kKeyBlock + key, a.kvHead(h));
  };
  o.visible = [&](Expr key, Expr block) { return a.visible(block * kKeyBlock + key, t); };
  o.value = [&](Expr key, Expr block) { return vTile(d, block * kKeyBlock + key, a.kvHead(h)); };
  f.softmax = defineOnlineSoftmax(o);
  return f;
}

/// Schedules `out` as blocks of f.queryBlock queries of a head.
void scheduleFlash(CudaFlash &f, const AttentionOperands &a, Stage out, int dV, bool rope) {
  const ColumnThreads columns(dV);
  const int kQueryBlock = f.queryBlock, kKeyBlock = f.keyBlock;
  Var c = a.c, d = a.d, h = a.h, j = a.j, ri = f.ri;
  const HeadBlockLoops loops = scheduleHeadBlocks(out, a, dV, kQueryBlock);
  const Var head = loops.head, dx = loops.dx, dr = loops.dr;
  Func consumer = f.consumer;
  // The running state in shared memory (Halide would give every thread a
  // private copy of a block-level register allocation); each thread updates
  // its own (columns, query). The loop over key blocks is outside the thread
  // loops and inside the block's (h, blk): its causal bound is the block's.
  OnlineSoftmax &s = f.softmax;
  // A (column, query) Func in shared memory at `at`, threads owning columns.
  auto perColumn = [&](Func g, LoopLevel at) {
    g.compute_at(at)
        .store_in(MemoryType::GPUShared)
        .bound_extent(d, columns.regs * columns.threads)
        .split(d, dr, dx, columns.threads)
        .reorder(dr, dx, ri)
        .gpu_threads(dx, ri)
        .unroll(dr);
    return g.update().split(d, dr, dx, columns.threads);
  };
  perColumn(s.state, LoopLevel(consumer, head))
      .reorder(dr, dx, ri, f.rb)
      .gpu_threads(dx, ri)
      .unroll(dr);
  // Per key block, in shared memory: K and V staged, then the masked scores
  // (their raw dot product in a register), probabilities and the block's P·V.
  f.kTile.compute_at(s.state, f.rb)
      .store_in(MemoryType::GPUShared)
      .reorder(c, j, h)
      .gpu_threads(j)
      .bound_extent(j, kKeyBlock);
  f.vTile.compute_at(s.state, f.rb)
      .store_in(MemoryType::GPUShared)
      .reorder(d, j, h)
      .gpu_threads(j)
      .bound_extent(j, kKeyBlock);
  s.scores.compute_inline();
  s.blockOut.compute_inline();
  if (rope) // the block's query rows rotated once (f64 angles), not per key block
    scheduleRotatedQuery(f.query, LoopLevel(consumer, head), c, {ri}, columns);
  s.maskedScores.compute_at(s.state, f.rb).store_in(MemoryType::GPUShared).gpu_threads(j, ri);
  s.scoreDot.compute_at(s.maskedScores, j);
  for (Func perRow : {s.blockMax, s.blockSum}) {
    perRow.compute_at(s.state, f.rb).store_in(MemoryType::GPUShared).gpu_threads(ri);
    perRow.update().gpu_threads(ri);
  }
  s.probs.compute_at(s.state, f.rb).store_in(MemoryType::GPUShared).gpu_threads(j, ri);
  perColumn(s.blockOutDot, LoopLevel(s.state, f.rb))
      .reorder(dr, f.rj, dx, ri)
      .gpu_threads(dx, ri)
      .unroll(dr);
}

llvm::Expected<KernelPipeline> buildAttentionCuda(const AttentionKernelSpec &spec,
                                                  bool gpuSchedule) {
  if (llvm::Error err = validateAttentionCuda(spec))
    return std::move(err);
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv;
  const AttentionShape shape{1, H, Hkv, group, dK, dV, float(spec.scale)};
  AttentionOperands a = attentionOperandsOf(spec, shape, Target());
  Expr isDecode = a.queries <= kSmallQueryRows;
  // Rows per block as select(M <= 4, 4, queryBlock), though M <= 4 takes flash-decoding: with a
  // constant 16, Halide's regions of the per-key-block Funcs under the causal loop grew with
  // the context (shared memory 40 KiB at 128 keys, 280 KiB at 2,048; 34 KiB so).
  Expr rowsPerBlock = select(isDecode, kSmallQueryRows, int(spec.gpuSchedule.queryBlock));
  CudaFlash flash = defineFlash(spec, a, rowsPerBlock);
  CudaDecodeMerge merge = defineCudaDecodeMerge(spec, a);

  Func out = kernelFunc("out");
  flash.consumer = out;
  {
    Expr head = a.c / dV, column = a.c % dV;
    Tuple state = flash.softmax.state(column, a.t % rowsPerBlock, head, a.t / rowsPerBlock);
    Tuple merged = merge.merged(column, a.t, head);
    Expr sum = select(isDecode, merged[1], state[2]);
    out(a.c, a.t) = select(sum > 0.f, select(isDecode, merged[0], state[0]) / sum, 0.f);
  }

  // ---- Buffer shapes (docs/abi.md), as the CPU kernel ------------------
  a.q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  a.k.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
  a.v.dim(0).set_bounds(0, dV).set_stride(1).dim(1).set_bounds(0, a.keys).dim(2).set_bounds(0, Hkv);
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, a.queries);

  if (gpuSchedule) {
    scheduleCudaDecodeMerge(merge, a, out.specialize(isDecode), out, dV);
    scheduleFlash(flash, a, out, dV, spec.rope != AttentionKernelSpec::Rope::None);
  } else {
    // A CPU JIT of the algorithm (the tests): every row's state once, the
    // merge once per (row, head), not per output element.
    flash.softmax.state.compute_root();
    merge.top.compute_root();
    merge.merged.compute_root();
  }

  KernelPipeline result;
  result.inputs = {a.q, a.k, a.v, merge.partials};
  result.output = out;
  result.pipeline = Pipeline(out);
  return result;
}

} // namespace

llvm::Expected<KernelPipeline> buildAttentionCudaPipeline(const AttentionKernelSpec &spec,
                                                          bool gpuSchedule) {
  KernelFuncScope names(spec.name);
  return buildCatchingHalideErrors("scheduling CUDA attention kernel '" + spec.name + "'",
                                   [&] { return buildAttentionCuda(spec, gpuSchedule); });
}

} // namespace mlir::xf
