//===- GemmScheduleCuda.cpp - the CUDA GEMM's schedules, one per path -----===//
//
// The schedules of GemmAlgorithm.cpp's CUDA Funcs (`xfc --target cuda`,
// docs/gpu.md); GemmKernel.cpp picks them.
//
// Register path (M > kCudaGemvRows, [K, N] weights with N a multiple of
// kCudaRegTileCols — every GEMM of GPT-2 small and SmolLM2 but the tied
// unembedding): one warp per kCudaRegTileCols × kRegTileRows tile of out (4
// warps per kRegTallTileRows rows for large M), each thread accumulating its
// kCudaRegThreadCols × kRegThreadRows register tile over all of K, W loaded as
// vectors along N from global memory, no shared memory.
//
// Staged path (the other M > kCudaGemvRows): one thread block per
// kCudaTileCols × kCudaTileRows tile of out; its kThreadsX × kThreadsY threads
// each own a kRegCols × kRegRows register tile (both gates of SwiGLU). K runs
// in slices of kCudaSliceK: per slice the block stages the slice of x
// ([kCudaSliceK, kCudaTileRows]) and of W ([kCudaTileCols, kCudaSliceK]) in
// shared memory, synchronises, every thread computes its register tile's
// product over the slice from shared memory and adds it to the block's
// accumulators (shared memory too). The epilogue (bias, activation, SwiGLU's
// gate·up, residual) is applied as the accumulators are stored. Rows past M
// and columns past N read clamped inputs and are never stored; K is
// zero-padded to a whole slice.
//
// GEMV path (M <= kCudaGemvRows, KV-cache decoding), chosen at run time by a
// specialization: the weight is streamed once, every thread keeping the
// sums of all (<= 4) rows in registers, and partial sums meet in shared
// memory.
//   [K, N] weights (rows of W along N): threads (column, K slice): a block
//   covers kGemvCols consecutive columns (coalesced along N) × kCudaGemvSlices
//   slices of K; then one thread per column adds its slices.
//   [N, K] weights (nn.Linear, the tied unembedding): threads (lane, column):
//   lane l of a column reads k ≡ l (mod kCudaLanes) (coalesced along K), then
//   one thread per column adds the kCudaLanes lane sums.
//
// The schedules are fixed (the CPU GemmSchedule does not apply; the tuner
// does not search GPU schedules yet).
//
//===----------------------------------------------------------------------===//

#include "GemmSchedules.h"

using namespace Halide;

namespace mlir::xf {
namespace {

constexpr int kRegCols = 4, kRegRows = 4; // staged: a thread's register tile
constexpr int kThreadsX = kCudaTileCols / kRegCols, kThreadsY = kCudaTileRows / kRegRows; // 16 × 8
constexpr int kRegTileRows = 8;                       // register path: a block's tile rows
constexpr int kRegThreadRows = 4; // a thread's tile: kCudaRegThreadCols × this (16 × 2 threads)
constexpr int kRegUnrollK = 8;
constexpr int kRegTallRows = 512, kRegTallTileRows = 32; // large M: 4 warps a block
constexpr int kGemvCols = 32;                            // [K, N] GEMV block: columns
constexpr int kGemvLaneCols = 8;                         // [N, K] GEMV block: columns

} // namespace

// GEMV (M <= kCudaGemvRows): one block per group of columns.
void scheduleGemvCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var n = f.n, m = f.m, g = f.g, s = f.s, l = f.l, no("no"), ni("ni");
  f.gemvSum.bound(g, 0, f.gates).bound(m, 0, kCudaGemvRows);
  f.gemvPart.bound(g, 0, f.gates).bound(m, 0, kCudaGemvRows);
  Stage decode = f.out.specialize(f.gemv);
  const int blockCols = spec.transposeWeight ? kGemvLaneCols : kGemvCols;
  decode.split(n, no, ni, blockCols, TailStrategy::GuardWithIf)
      .reorder(m, ni, no)
      .gpu_blocks(no)
      .gpu_threads(ni);
  f.gemvSum.compute_at(f.out, ni).unroll(g).unroll(m);
  f.gemvSum.update().reorder(g, m, f.sumVar).unroll(g).unroll(m);
  if (!spec.transposeWeight) {
    f.gemvPart.compute_at(f.out, no)
        .bound_extent(n, blockCols)
        .bound(s, 0, kCudaGemvSlices)
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
  f.gemvDot.update().reorder(g, m, f.dotVar).unroll(g).unroll(m);
}

// Staged GEMM: block tiles, thread register tiles, K slices staged in shared memory.
void scheduleStagedGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var n = f.n, m = f.m, g = f.g, k = f.k;
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr");
  f.prod.bound(g, 0, f.gates);
  f.out.tile(n, m, no, mo, ni, mi, kCudaTileCols, kCudaTileRows, TailStrategy::GuardWithIf)
      .split(ni, nt, nr, kRegCols)
      .split(mi, mt, mr, kRegRows)
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
      .bound_extent(n, kCudaTileCols)
      .bound_extent(m, kCudaTileRows)
      .split(n, nt, nr, kRegCols)
      .split(m, mt, mr, kRegRows)
      .reorder(nr, g, mr, nt, mt)
      .gpu_threads(nt, mt)
      .unroll(nr)
      .unroll(g)
      .unroll(mr);
  f.prod.update()
      .split(n, nt, nr, kRegCols)
      .split(m, mt, mr, kRegRows)
      .reorder(nr, g, mr, nt, mt, f.rs.x)
      .gpu_threads(nt, mt)
      .unroll(nr)
      .unroll(g)
      .unroll(mr);
  f.sliceDot.compute_at(f.prod, nt).unroll(n).unroll(g).unroll(m);
  f.sliceDot.update().reorder(n, g, m, f.rk.x).unroll(n).unroll(g).unroll(m).unroll(f.rk.x);
  // Staging: kThreadsX × kThreadsY threads copy each slice, the inner
  // thread dimension along the stored layout's contiguous axis.
  Var a("a"), b("b");
  f.xTile.compute_at(f.prod, f.rs.x)
      .store_in(MemoryType::GPUShared)
      .split(m, b, mt, kThreadsY)
      .reorder(b, k, mt)
      .gpu_threads(k, mt)
      .unroll(b);
  f.wTile.compute_at(f.prod, f.rs.x).store_in(MemoryType::GPUShared);
  if (spec.transposeWeight) // k contiguous
    f.wTile.split(n, a, nt, kThreadsY).reorder(a, g, k, nt).gpu_threads(k, nt).unroll(a).unroll(g);
  else // n contiguous
    f.wTile.split(n, a, nt, kThreadsX)
        .split(k, b, mt, kThreadsY)
        .reorder(a, g, b, nt, mt)
        .gpu_threads(nt, mt)
        .unroll(a)
        .unroll(g)
        .unroll(b);
}

// Register GEMM ([K, N] weights, N a multiple of kCudaRegTileCols): each thread's kCudaRegThreadCols ×
// kRegThreadRows accumulators in registers over all of K (no shared memory, no barriers;
// Halide's apps/cuda_mat_mul shows the pattern), W read along N straight from global memory
// (through L1; vector loads), x's values broadcast to the threads of a row, K unrolled by
// kRegUnrollK. A warp per kCudaRegTileCols × kRegTileRows tile while M is small, so that GPT-2
// small's GEMMs at M = 128 launch 192-768 blocks (the staged path: 48-192); 4 warps per tile of
// kRegTallTileRows rows from kRegTallRows rows on, sharing the W tile through L1.
void scheduleRegisterGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var n = f.n, m = f.m, g = f.g;
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr");
  // The same loop names in both tilings: dot is computed at `nt` in either.
  auto tile = [&](Stage stage, int rows) {
    stage.tile(n, m, no, mo, ni, mi, kCudaRegTileCols, rows, TailStrategy::GuardWithIf)
        .tile(ni, mi, nt, mt, nr, mr, kCudaRegThreadCols, kRegThreadRows, TailStrategy::GuardWithIf)
        .reorder(nr, mr, nt, mt, no, mo)
        .gpu_blocks(no, mo)
        .gpu_threads(nt, mt)
        .unroll(nr)
        .unroll(mr);
  };
  // From kRegTallRows rows on, blocks of kRegTallTileRows rows (4 warps): the warps of a block
  // read the same W tile (L1 hits), a quarter of the L2 traffic of 8-row tiles.
  tile(f.out.specialize(f.rows >= kRegTallRows), kRegTallTileRows);
  tile(f.out, kRegTileRows);
  f.dot.compute_at(f.out, nt)
      .bound(g, 0, f.gates)
      .bound_extent(n, kCudaRegThreadCols)
      .bound_extent(m, kRegThreadRows)
      .reorder(n, g, m)
      .vectorize(n)
      .unroll(g)
      .unroll(m);
  Stage update = f.dot.update();
  update.reorder(n, g, m, f.rAll.x).vectorize(n).unroll(g).unroll(m);
  if (spec.K % kRegUnrollK == 0) {
    RVar ro("ro"), ri("ri");
    update.split(f.rAll.x, ro, ri, kRegUnrollK).reorder(n, g, m, ri, ro).unroll(ri);
  }
}

} // namespace mlir::xf
