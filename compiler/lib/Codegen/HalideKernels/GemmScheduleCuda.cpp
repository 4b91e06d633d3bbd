//===- GemmScheduleCuda.cpp - the CUDA GEMM's schedules, one per path -----===//
//
// The schedules of GemmAlgorithm.cpp's CUDA Funcs (`xfc --target cuda`,
// docs/gpu.md); GemmKernel.cpp picks them. Their sizes are the fields of
// spec.gpuSchedule (#xf.gpu_gemm_schedule on the xf.gemm, the defaults
// written by xf-assign-schedules; the verifier keeps them within a block).
//
// Register path (M > kCudaGemvRows, [K, N] weights with N a multiple of
// regTileCols — by default every GEMM of GPT-2 small and SmolLM2 but the
// tied unembedding): one block per regTileCols × regTileRows tile of out
// (regTallTileRows rows from regTallRows rows on), each thread accumulating
// its kCudaRegThreadCols × regThreadRows register tile over all of K, W
// loaded as vectors along N from global memory, no shared memory. Tall
// tiles start earlier where they alone fill the GPU (cudaTallRows); where
// short tiles still launch too few blocks, each block splits K (split K).
//
// [N, K] register path ([N, K] weights with K a multiple of 4, any N): the
// same tiles, 4 partial sums per output (k mod 4) so that W's rows are read
// as vectors along K, row tiles fastest in the launch (W shared in L2).
//
// Staged path (the other M > kCudaGemvRows): one thread block per tileCols ×
// tileRows tile of out; its (tileCols / threadCols) × (tileRows / threadRows)
// threads each own a threadCols × threadRows register tile (both gates of
// SwiGLU). K runs in slices of sliceK: per slice the block stages the slice
// of x ([sliceK, tileRows]) and of W ([tileCols, sliceK]) in shared memory,
// synchronises, every thread computes its register tile's product over the
// slice from shared memory and adds it to the block's accumulators (shared
// memory too). The epilogue (bias, activation, SwiGLU's gate·up, residual)
// is applied as the accumulators are stored. Rows past M and columns past N
// read clamped inputs and are never stored; K is zero-padded to a whole
// slice.
//
// GEMV path (M <= kCudaGemvRows, KV-cache decoding), chosen at run time by a
// specialization: the weight is streamed once, every thread keeping the
// sums of all (<= 4) rows in registers, and partial sums meet in shared
// memory.
//   [K, N] weights (rows of W along N): threads (column, K slice): a block
//   covers gemvCols consecutive columns (coalesced along N) × gemvSlices
//   slices of K; then one thread per column adds its slices.
//   [N, K] weights (nn.Linear, the tied unembedding): threads (lane, column):
//   a block covers gemvLaneCols columns; lane l of a column reads
//   k ≡ l (mod kCudaLanes) (coalesced along K), then one thread per column
//   adds the kCudaLanes lane sums.
//
// Batch GEMV paths (kCudaGemvRows < M <= kCudaBatchGemvRows, a decode step of
// several sequences), a specialization per row bound (8, 16): the GEMV's
// structure for more rows — W streamed once, every row's sums in a thread's
// registers — in blocks of cudaBatchGemvBlock's columns ([K, N] threads
// (column, slice), slice s reading k ≡ s; [N, K] (lane, column)), then a
// thread per (column, row) adds the partial sums.
//
//===----------------------------------------------------------------------===//

#include "GemmSchedules.h"

#include <algorithm>

using namespace Halide;

namespace mlir::xf {
namespace {

// The GEMV's x merged from key-range partials (spec.mergeHeads): per block,
// before its products, into shared memory — each row's top range max per head, then each
// (column, row, head)'s weighted sums over the ranges — by the block's `columnThreads` ×
// `rowThreads` threads (columns × row-and-head pairs). Every block merges all of x (K × 4 rows, the
// partials of rows past M clamped to M − 1: read once from L2 per row of the step).
void scheduleGemvRangeMergeCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f, int columnThreads,
                                int rowThreads) {
  const int heads = int(spec.mergeHeads), dV = int(spec.K / spec.mergeHeads);
  Var md = f.md, mt = f.mt, mh = f.mh, th("th"), tho("tho"), thi("thi"), mdo("mdo"), mdi("mdi");
  Func top = f.mergeTop, sums = f.mergeSums;
  top.compute_at(f.out, Var("no"))
      .store_in(MemoryType::GPUShared)
      .bound(mt, 0, kCudaGemvRows)
      .bound(mh, 0, heads);
  for (Stage st : {Stage(top), top.update()})
    st.fuse(mt, mh, th)
        .split(th, tho, thi, columnThreads, TailStrategy::GuardWithIf)
        .gpu_threads(thi);
  sums.compute_at(f.out, Var("no"))
      .store_in(MemoryType::GPUShared)
      .bound(md, 0, dV)
      .bound(mt, 0, kCudaGemvRows)
      .bound(mh, 0, heads);
  for (Stage st : {Stage(sums), sums.update()}) {
    st.split(md, mdo, mdi, columnThreads, TailStrategy::GuardWithIf)
        .fuse(mt, mh, th)
        .split(th, tho, thi, rowThreads, TailStrategy::GuardWithIf)
        .gpu_threads(mdi, thi);
  }
  sums.update().reorder(f.mergeRanges.x, mdi, thi, mdo, tho);
}

} // namespace

int gemvUnrollK(int dotLength) {
  for (int factor = kCudaGemvUnrollK; factor > 1; factor /= 2)
    if (dotLength % factor == 0)
      return factor;
  return 1;
}

namespace {
// A GEMV's thread K loop (`dotVar` of `dot`'s update, `dotLength` steps) unrolled so that its
// loads of W are in flight together: rolled, each thread waits out a DRAM latency per 4 bytes
// of W, a few KiB in flight per SM where HBM needs ~20. The factor divides the trip count (no
// guards); the order of the sums is kept.
void unrollGemvK(Func dot, RVar dotVar, int dotLength, Func w, Var g, Var m) {
  RVar dko("dko"), dki("dki");
  const int unrollK = gemvUnrollK(dotLength);
  Stage update = dot.update();
  if (unrollK > 1) {
    update.split(dotVar, dko, dki, unrollK).reorder(g, m, dki, dko).unroll(dki);
    // W's values of the unrolled steps loaded first, into registers, before any product.
    Func wSteps = w.in(dot);
    wSteps.compute_at(dot, dko).store_in(MemoryType::Register);
    for (Var v : wSteps.args())
      wSteps.unroll(v);
  } else
    update.reorder(g, m, dotVar);
  update.unroll(g).unroll(m);
}
} // namespace

// GEMV (M <= kCudaGemvRows): one block per group of columns.
void scheduleGemvCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  const GpuGemmSchedule &sched = spec.gpuSchedule;
  Var n = f.n, m = f.m, g = f.g, s = f.s, l = f.l, no("no"), ni("ni");
  f.gemvSum.bound(g, 0, f.gates).bound(m, 0, kCudaGemvRows);
  f.gemvPart.bound(g, 0, f.gates).bound(m, 0, kCudaGemvRows);
  Stage decode = f.out.specialize(f.gemv);
  const int blockCols = int(cudaGemvBlockCols(spec));
  decode.split(n, no, ni, blockCols, TailStrategy::GuardWithIf)
      .reorder(m, ni, no)
      .gpu_blocks(no)
      .gpu_threads(ni);
  f.gemvSum.compute_at(f.out, ni).unroll(g).unroll(m);
  f.gemvSum.update().reorder(g, m, f.sumVar).unroll(g).unroll(m);
  if (!spec.transposeWeight) {
    f.gemvPart.compute_at(f.out, no)
        .bound_extent(n, blockCols)
        .bound(s, 0, int(sched.gemvSlices))
        .store_in(MemoryType::GPUShared)
        .reorder(g, m, n, s)
        .gpu_threads(n, s)
        .unroll(g)
        .unroll(m);
    f.gemvDot.compute_at(f.gemvPart, n).unroll(g).unroll(m);
  } else {
    f.gemvPart.compute_at(f.out, no)
        .bound(l, 0, kCudaLanes)
        .bound_extent(n, blockCols)
        .store_in(MemoryType::GPUShared)
        .reorder(g, m, l, n)
        .gpu_threads(l, n)
        .unroll(g)
        .unroll(m);
    f.gemvDot.compute_at(f.gemvPart, l).unroll(g).unroll(m);
  }
  unrollGemvK(f.gemvDot, f.dotVar, f.dotLength, f.w, g, m);
  if (spec.mergeHeads) // the merge's threads are the GEMV's: (column, slice) or (lane, column)
    scheduleGemvRangeMergeCuda(spec, f, spec.transposeWeight ? kCudaLanes : blockCols,
                               spec.transposeWeight ? blockCols : int(sched.gemvSlices));
}

// Batch GEMVs (kCudaGemvRows < M <= kCudaBatchGemvRows): per row bound a specialization whose
// blocks, like the GEMV's, stream their columns of W once with every row's sums in a thread's
// registers (K unrolled, W's unrolled steps staged in registers), the partial sums meeting in
// shared memory; then a thread per (column, row) adds them and applies the epilogue.
void scheduleBatchGemvCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  const bool nk = spec.transposeWeight;
  const CudaBatchBlock block = cudaBatchGemvBlock(spec);
  const int blockCols = block.cols;
  Var n = f.n, m = f.m, g = f.g, s = f.s, l = f.l;
  // Block loops named apart from the other paths' (no, mo), so that their kernels keep their
  // names (_kernel_<function>_out_s0_m_mo_block_id_y...) beside these (..._m_mb_...).
  Var no = cudaBatchGemvBlockVar(), ni("ni"), mo("mb"), mi("mi");
  for (CudaBatchGemv &b : f.batches) {
    Stage step = f.out.specialize(b.taken);
    step.split(n, no, ni, blockCols, TailStrategy::GuardWithIf)
        .split(m, mo, mi, b.rows, TailStrategy::GuardWithIf);
    // The inner thread dimension: [K, N] the block's columns; [N, K] the rows (the lanes'
    // dimension, 32 wide, holds them).
    Var inner = nk ? mi : ni, outer = nk ? ni : mi;
    step.reorder(inner, outer, no, mo).gpu_blocks(no, mo).gpu_threads(inner, outer);
    b.sum.compute_at(f.out, inner).bound(g, 0, f.gates).unroll(g);
    b.sum.update().reorder(g, b.sumVar).unroll(g);
    b.part.compute_at(f.out, no)
        .store_in(MemoryType::GPUShared)
        .bound(g, 0, f.gates)
        .bound(m, 0, b.rows)
        .bound_extent(n, blockCols);
    Var threadVar = nk ? l : n;
    if (nk)
      b.part.bound(l, 0, kCudaLanes).reorder(g, m, l, n).gpu_threads(l, n);
    else
      b.part.bound(s, 0, block.threadsK).reorder(g, m, n, s).gpu_threads(n, s);
    b.part.unroll(g).unroll(m);
    b.dot.compute_at(b.part, threadVar).unroll(g).unroll(m);
    unrollGemvK(b.dot, b.dotVar, b.dotLength, f.w, g, m);
  }
}

// Staged GEMM: block tiles, thread register tiles, K slices staged in shared memory.
void scheduleStagedGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  const GpuGemmSchedule &sched = spec.gpuSchedule;
  const int tileCols = int(sched.tileCols), tileRows = int(sched.tileRows);
  const int regCols = int(sched.threadCols), regRows = int(sched.threadRows);
  const int threadsX = tileCols / regCols, threadsY = tileRows / regRows;
  Var n = f.n, m = f.m, g = f.g, k = f.k;
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr");
  f.prod.bound(g, 0, f.gates);
  f.out.tile(n, m, no, mo, ni, mi, tileCols, tileRows, TailStrategy::GuardWithIf)
      .split(ni, nt, nr, regCols)
      .split(mi, mt, mr, regRows)
      .reorder(nr, mr, nt, mt, no, mo)
      .gpu_blocks(no, mo)
      .gpu_threads(nt, mt)
      .unroll(nr)
      .unroll(mr);
  // The block's accumulators live in shared memory (Halide would give each
  // thread a private copy of a block-level register allocation); each K
  // slice's register tile is added into them once.
  f.prod.compute_at(f.out, no)
      .store_in(MemoryType::GPUShared)
      .bound_extent(n, tileCols)
      .bound_extent(m, tileRows)
      .split(n, nt, nr, regCols)
      .split(m, mt, mr, regRows)
      .reorder(nr, g, mr, nt, mt)
      .gpu_threads(nt, mt)
      .unroll(nr)
      .unroll(g)
      .unroll(mr);
  f.prod.update()
      .split(n, nt, nr, regCols)
      .split(m, mt, mr, regRows)
      .reorder(nr, g, mr, nt, mt, f.rs.x)
      .gpu_threads(nt, mt)
      .unroll(nr)
      .unroll(g)
      .unroll(mr);
  f.sliceDot.compute_at(f.prod, nt).unroll(n).unroll(g).unroll(m);
  f.sliceDot.update().reorder(n, g, m, f.rk.x).unroll(n).unroll(g).unroll(m).unroll(f.rk.x);
  // Staging: threadsX × threadsY threads copy each slice, the inner
  // thread dimension along the stored layout's contiguous axis.
  Var a("a"), b("b");
  f.xTile.compute_at(f.prod, f.rs.x)
      .store_in(MemoryType::GPUShared)
      .split(m, b, mt, threadsY)
      .reorder(b, k, mt)
      .gpu_threads(k, mt)
      .unroll(b);
  f.wTile.compute_at(f.prod, f.rs.x).store_in(MemoryType::GPUShared);
  if (spec.transposeWeight) // k contiguous
    f.wTile.split(n, a, nt, threadsY).reorder(a, g, k, nt).gpu_threads(k, nt).unroll(a).unroll(g);
  else // n contiguous
    f.wTile.split(n, a, nt, threadsX)
        .split(k, b, mt, threadsY)
        .reorder(a, g, b, nt, mt)
        .gpu_threads(nt, mt)
        .unroll(a)
        .unroll(g)
        .unroll(b);
}

namespace {
// The register paths' tall tiles (regTallTileRows rows, warps sharing each W tile through L1)
// from regTallRows rows on, or earlier where they alone give regFillBlocks blocks: a wide N
// (a vocabulary) needs no short tiles to fill the GPU, and every short row tile re-reads W.
int cudaTallRows(const GpuGemmSchedule &sched, int64_t N) {
  const int64_t colTiles = (N + sched.regTileCols - 1) / sched.regTileCols;
  const int64_t fillRows = (sched.regFillBlocks + colTiles - 1) / colTiles * sched.regTallTileRows;
  return int(std::min(sched.regTallRows, fillRows));
}

// Register path, split K (M < f.splitRows): the block's tile as the register path's, its
// threads in regSplitK groups, group s summing slice s of K into a register tile (4 columns ×
// regThreadRows rows, W as 16-byte loads) stored in shared memory; after the barrier a thread
// per 4 columns of a row adds the groups' sums and applies the epilogue.
void scheduleSplitKCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f, Stage stage) {
  const GpuGemmSchedule &sched = spec.gpuSchedule;
  const int tileCols = int(sched.regTileCols), tileRows = int(sched.regTileRows);
  const int threadRows = int(sched.regThreadRows), unrollK = int(sched.regUnrollK);
  Var n = f.n, m = f.m, g = f.g, s = f.s;
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr"), ms("ms");
  stage.tile(n, m, no, mo, ni, mi, tileCols, tileRows, TailStrategy::GuardWithIf)
      .split(ni, nt, nr, kCudaRegThreadCols)
      .reorder(nr, nt, mi, no, mo)
      .gpu_blocks(no, mo)
      .gpu_threads(nt, mi)
      .unroll(nr);
  f.splitSum.compute_at(f.out, nt)
      .bound(g, 0, f.gates)
      .bound_extent(n, kCudaRegThreadCols)
      .reorder(n, g, m)
      .unroll(n)
      .unroll(g);
  f.splitSum.update().reorder(n, g, m, f.splitSumVar).unroll(n).unroll(g).unroll(f.splitSumVar);
  f.splitPart.compute_at(f.out, no)
      .store_in(MemoryType::GPUShared)
      .bound(g, 0, f.gates)
      .bound(s, 0, f.splits)
      .bound_extent(n, tileCols)
      .bound_extent(m, tileRows)
      .split(n, nt, nr, kCudaRegThreadCols)
      .split(m, mt, mr, threadRows)
      .reorder(nr, g, mr, nt, mt, s)
      .fuse(mt, s, ms)
      .gpu_threads(nt, ms)
      .unroll(nr)
      .unroll(g)
      .unroll(mr);
  f.splitDot.compute_at(f.splitPart, nt)
      .bound_extent(n, kCudaRegThreadCols)
      .reorder(n, g, m, s)
      .vectorize(n)
      .unroll(g)
      .unroll(m);
  Stage update = f.splitDot.update();
  update.reorder(n, g, m, s, f.splitDotVar).vectorize(n).unroll(g).unroll(m);
  const int64_t sliceLen = (spec.K + f.splits - 1) / f.splits;
  if (sliceLen % unrollK == 0) {
    RVar ro("ro"), ri("ri");
    update.split(f.splitDotVar, ro, ri, unrollK).reorder(n, g, m, s, ri, ro).unroll(ri);
  }
}
/// The register paths' tiling: blocks of tileCols × rows, each thread kCudaRegThreadCols ×
/// threadRows of them; the blocks' row tiles fastest in the launch where rowTilesFastest (the
/// blocks that read one W tile are neighbours), else the column tiles.
struct RegisterTiling {
  Var no{"no"}, mo{"mo"}, ni{"ni"}, mi{"mi"}, nt{"nt"}, mt{"mt"}, nr{"nr"}, mr{"mr"};
  void tile(Stage stage, Var n, Var m, int tileCols, int rows, int threadRows,
            bool rowTilesFastest) {
    stage.tile(n, m, no, mo, ni, mi, tileCols, rows, TailStrategy::GuardWithIf)
        .tile(ni, mi, nt, mt, nr, mr, kCudaRegThreadCols, threadRows, TailStrategy::GuardWithIf);
    if (rowTilesFastest)
      stage.reorder(nr, mr, nt, mt, mo, no).gpu_blocks(mo, no);
    else
      stage.reorder(nr, mr, nt, mt, no, mo).gpu_blocks(no, mo);
    stage.gpu_threads(nt, mt).unroll(nr).unroll(mr);
  }
};

} // namespace

// Register GEMM ([K, N] weights, N a multiple of regTileCols): each thread's kCudaRegThreadCols ×
// regThreadRows accumulators in registers over all of K (no shared memory, no barriers;
// Halide's apps/cuda_mat_mul shows the pattern), W read along N straight from global memory
// (through L1; vector loads), x's values broadcast to the threads of a row, K unrolled by
// regUnrollK. By default a warp per 64 × 8 tile while M is small, so that GPT-2 small's GEMMs
// at M = 128 launch 192-768 blocks (the staged path: 48-192); 4 warps per tile of 32 rows from
// 512 rows on, sharing the W tile through L1.
void scheduleRegisterGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  const GpuGemmSchedule &sched = spec.gpuSchedule;
  const int tileCols = int(sched.regTileCols), threadRows = int(sched.regThreadRows);
  const int unrollK = int(sched.regUnrollK);
  Var n = f.n, m = f.m, g = f.g;
  // The same loop names in both tilings: dot is computed at `nt` in either.
  RegisterTiling loops;
  auto tile = [&](Stage stage, int rows) {
    loops.tile(stage, n, m, tileCols, rows, threadRows, /*rowTilesFastest=*/false);
  };
  // From regTallRows rows on, blocks of regTallTileRows rows (by default 4 warps): the warps of
  // a block read the same W tile (L1 hits), a quarter of the L2 traffic of 8-row tiles.
  tile(f.out.specialize(f.rows >= cudaTallRows(sched, spec.N)), int(sched.regTallTileRows));
  if (f.splitRows)
    scheduleSplitKCuda(spec, f, f.out.specialize(f.rows < f.splitRows));
  tile(f.out, int(sched.regTileRows));
  f.dot.compute_at(f.out, loops.nt)
      .bound(g, 0, f.gates)
      .bound_extent(n, kCudaRegThreadCols)
      .bound_extent(m, threadRows)
      .reorder(n, g, m)
      .vectorize(n)
      .unroll(g)
      .unroll(m);
  Stage update = f.dot.update();
  update.reorder(n, g, m, f.rAll.x).vectorize(n).unroll(g).unroll(m);
  if (spec.K % unrollK == 0) {
    RVar ro("ro"), ri("ri");
    update.split(f.rAll.x, ro, ri, unrollK).reorder(n, g, m, ri, ro).unroll(ri);
  }
}

// [N, K] register GEMM (the tied unembedding; K a multiple of 4): the register path's tiles,
// each thread's 4 columns × nkThreadRows rows × 4 partial sums (k mod 4) in
// registers, so that W's rows (contiguous along K) are 16-byte loads, 4 of K of a column, and
// x's rows 4-wide loads (16-byte where x's alignment is known, else scalar); columns past N
// are clamped and never stored. Blocks run row tiles fastest: the blocks of one W tile are
// neighbours in the launch and share it in L2, so a weight larger than L2 (GPT-2's vocabulary,
// 154 MB) is read from DRAM about once, not once per row tile.
void scheduleNkRegisterGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  const GpuGemmSchedule &sched = spec.gpuSchedule;
  // SwiGLU's two gates: half the rows, so a thread keeps at most 4 × nkThreadRows × 4 sums.
  const int tileCols = int(sched.regTileCols);
  const int threadRows = std::max(1, int(sched.nkThreadRows) / f.gates);
  const int quadsUnroll = f.gates == 2 ? 1 : std::max(1, int(sched.regUnrollK) / 4);
  Var n = f.n, m = f.m, g = f.g, q = f.q;
  RegisterTiling loops;
  auto tile = [&](Stage stage, int rows) {
    loops.tile(stage, n, m, tileCols, rows, threadRows, /*rowTilesFastest=*/true);
  };
  tile(f.out.specialize(f.rows >= cudaTallRows(sched, spec.N)), int(sched.regTallTileRows));
  tile(f.out, int(sched.regTileRows));
  f.nkDot.compute_at(f.out, loops.nt)
      .bound(q, 0, 4)
      .bound(g, 0, f.gates)
      .bound_extent(n, kCudaRegThreadCols)
      .bound_extent(m, threadRows)
      .reorder(q, n, g, m)
      .vectorize(q)
      .unroll(n)
      .unroll(g)
      .unroll(m);
  Stage update = f.nkDot.update();
  update.reorder(q, n, g, m, f.rQuads.x).vectorize(q).unroll(n).unroll(g).unroll(m);
  if ((spec.K / 4) % quadsUnroll == 0 && quadsUnroll > 1) {
    RVar ro("ro"), ri("ri");
    update.split(f.rQuads.x, ro, ri, quadsUnroll).reorder(q, n, g, m, ri, ro).unroll(ri);
  }
}

} // namespace mlir::xf
