//===- GemmScheduleCpu.cpp - the CPU GEMM's schedules, one per path -------===//
//
// The schedules of GemmAlgorithm.cpp's CPU Funcs, each a specialization of
// gemm_out on M (the first that holds runs):
//   GEMV (M < gemvRowsBelow): parallel over column chunks, no row tiles;
//     stored [K, N], stored [N, K], GGUF blocks or packed tiles.
//   few rows (M <= kSmallRowTiles·tileRows, weight packed at load, float32
//     products): per weight tile its row tiles one after another.
//   tiled (the rest): the GotoBLAS/BLIS structure written in Halide:
//     parallel over tasks = (column panel of panelCols) × (block of rowsPerTask rows)
//       for each K block of kBlock:
//         pack the weight panel of this K block tile-major: [tile][k][tileCols]
//         for each tileRows × tileCols register tile:
//           Σ over the K block in registers (tileCols vectorized, rows unrolled)
//           add into the task's accumulator
//       epilogue (bias, activation, residual) while storing the tile rows.
//     The packed K block (kBlock × panelCols floats) stays in L2 and is
//     reused by every row of the task; a tileRows × kBlock slice of x stays
//     in L1 and is reused by every tile of the panel. bf16 pairs are a vector
//     reduction inside each accumulator vector (the 2-way dot product).
// Inside a specialization its condition is a fact, so the select of
// gemm_out keeps only that path's product.
//
//===----------------------------------------------------------------------===//

#include "GemmSchedules.h"
#include "GemmTiling.h"

#include <algorithm>

using namespace Halide;

namespace mlir::xf {
namespace {

// Loop names shared by the GEMV and few-rows schedules (one task = one chunk).
struct GemvLoops {
  Var task{"gemv_task"}, n{"gemv_n"}, no{"gemv_no"}, ni{"gemv_ni"};
};

/// GEMV over a weight packed at load: a task's chunk is whole tiles, taken
/// kGemvStreams at a time: tileCols accumulators per tile and row of x,
/// loaded and stored once per gemvRowsPerPass rows of k.
void scheduleGemvPacked(const GemmKernelSpec &spec, GemmCpuFuncs &f, const GemvLoops &l) {
  const int vw = f.vw, rowsPerPass = int(spec.schedule.gemvRowsPerPass);
  Var nj = f.nj, nt = f.nt, m = f.m;
  RVar gkOuter("gk_o"), gkInner("gk_i");
  Var ntOuter("nt_o"), ntInner("nt_i");
  f.gemvTiles.compute_at(f.out, l.task).vectorize(nj, vw);
  Stage update = f.gemvTiles.update();
  if (f.dot) // pairs of rows: the pair index innermost, unrolled
    update.split(f.gp.y, gkOuter, gkInner, std::max(1, rowsPerPass / 2), TailStrategy::GuardWithIf)
        .split(nt, ntOuter, ntInner, kGemvStreams, TailStrategy::GuardWithIf)
        .reorder(nj, f.gp.x, ntInner, gkInner, m, gkOuter, ntOuter)
        .unroll(f.gp.x);
  else
    update.split(f.gk, gkOuter, gkInner, rowsPerPass, TailStrategy::GuardWithIf)
        .split(nt, ntOuter, ntInner, kGemvStreams, TailStrategy::GuardWithIf)
        .reorder(nj, ntInner, gkInner, m, gkOuter, ntOuter);
  update.vectorize(nj, vw).unroll(nj).unroll(ntInner);
}

/// GEMV over GGUF blocks: like [N, K] stored weights, but gemvRowsPerPass / 8
/// rows per pass: rows of blocks are short (K = 576: 360 bytes of Q4_1), so
/// 16 interleaved rows are 16 streams of a few cache lines that the
/// prefetchers do not follow (measured: 16 rows 1.5x the time of 2; 1 and 2
/// alike), while the block chains keep the FMA pipes busy. Rows of x
/// outermost: the partial sums of one pass (one x row) stay in registers
/// instead of being stored every block (measured 11 % less CPU time per token).
void scheduleGemvBlocks(const GemmKernelSpec &spec, GemmCpuFuncs &f, const GemvLoops &l) {
  const int rowsPerPass = std::max<int>(1, int(spec.schedule.gemvRowsPerPass) / 8);
  Var n = f.n, m = f.m, kl = f.kl, kc = f.kc;
  f.gemvProduct.compute_at(f.out, l.task).vectorize(n, f.vw, TailStrategy::RoundUp);
  f.gemvProduct.update(0)
      .split(n, l.no, l.ni, rowsPerPass, TailStrategy::RoundUp)
      .reorder(f.blockLanes.x, f.blockLanes.y, l.ni, l.no, m)
      .unroll(f.blockLanes.x)
      .unroll(f.blockLanes.y);
  f.gemvPartial.compute_at(f.gemvProduct, l.no).vectorize(kl).unroll(kc).unroll(n);
  f.gemvPartial.update().reorder(kl, kc, n, f.gb, m).vectorize(kl).unroll(kc).unroll(n);
}

/// GEMV over a stored float32 or bf16 weight.
void scheduleGemvStored(const GemmKernelSpec &spec, GemmCpuFuncs &f, const GemvLoops &l) {
  const int vw = f.vw, rowsPerPass = int(spec.schedule.gemvRowsPerPass);
  Var n = f.n, m = f.m, kl = f.kl;
  if (!spec.transposeWeight) {
    // Accumulators for the chunk × M rows; per k one contiguous segment of W.
    f.gemvProduct.compute_at(f.out, l.task).vectorize(n, vw);
    // 16 rows of W per pass (16 streams), so each accumulator vector is
    // loaded and stored once per 16 FMAs (measured: 4 rows reach 0.75× of
    // OpenBLAS sgemv, 16 rows 1.0-1.07×; 32 fewer).
    RVar gkOuter("gk_o"), gkInner("gk_i");
    f.gemvProduct.update()
        .split(f.gk, gkOuter, gkInner, rowsPerPass, TailStrategy::GuardWithIf)
        .split(n, l.no, l.ni, vw, TailStrategy::GuardWithIf)
        .reorder(l.ni, gkInner, l.no, m, gkOuter)
        .vectorize(l.ni, vw)
        .unroll(l.ni)
        .unroll(gkInner);
    return;
  }
  // vw lanes of partial sums for 16 rows of W at a time (16 streams,
  // 16 independent FMA chains; 4 rows: 0.85× of sgemv, 8-16 rows:
  // 1.15-1.3×), then the horizontal sums. Row indices
  // past N (the rounded-up last group) re-read row N-1, never stored.
  f.gemvProduct.compute_at(f.out, l.task).vectorize(n, vw, TailStrategy::RoundUp);
  f.gemvProduct.update(0)
      .split(n, l.no, l.ni, rowsPerPass, TailStrategy::RoundUp)
      .reorder(f.lanes, l.ni, m, l.no)
      .unroll(f.lanes);
  f.gemvPartial.compute_at(f.gemvProduct, l.no).vectorize(kl).unroll(n);
  if (f.kMain)
    f.gemvPartial.update().reorder(kl, n, f.gko, m).vectorize(kl).unroll(n);
  if (f.kMain != f.K)
    f.gemvProduct.update(1).reorder(f.gkTail, n, m);
}

} // namespace

void scheduleGemvCpu(const GemmKernelSpec &spec, GemmCpuFuncs &f) {
  // Parallel over column chunks only.
  GemvLoops l;
  Stage g = f.out.specialize(f.gemv);
  g.split(f.n, l.task, l.n, f.gemvChunk, TailStrategy::GuardWithIf)
      .reorder(l.n, f.m, l.task)
      .parallel(l.task)
      .vectorize(l.n, f.vw, TailStrategy::GuardWithIf);
  if (f.prePacked)
    scheduleGemvPacked(spec, f, l);
  else if (f.blocks)
    scheduleGemvBlocks(spec, f, l);
  else
    scheduleGemvStored(spec, f, l);
}

// Few rows: parallel over the GEMV's column chunks (whole tiles); per weight
// tile and row tile, tileRows × tileCols accumulators in registers per K
// block (the tiled path's register blocks). The tiled path walks all tiles of
// a panel per K block so that a panel's K block is reused by every row tile
// of a task; with a few row tiles a weight tile's K × tileCols block (one
// contiguous stream, 147 KiB at K = 768) is reused from L2 instead, and that
// walk broke the stream into kBlock-long pieces. One thread, GPT-2 small, min
// of 3 runs on a loaded machine: M = 8 QKV 327 vs 408 us, MLP up 461 vs
// 592 us, MLP down 507 vs 548 us; M = 16 QKV 601 vs 1050 us; M = 32 2039 vs
// 2191 us.
void scheduleFewRowsCpu(GemmCpuFuncs &f) {
  GemvLoops l;
  Var nj = f.nj, nt = f.nt, m = f.m;
  const int vw = f.vw, tileRows = f.tileRows;
  Var mt1("small_mt"), mi1("small_mi"), mt2("small_tail_mt"), mi2("small_tail_mi");
  f.out.specialize(f.smallRows)
      .split(f.n, l.task, l.n, f.gemvChunk, TailStrategy::GuardWithIf)
      .reorder(l.n, m, l.task)
      .parallel(l.task)
      .vectorize(l.n, vw, TailStrategy::GuardWithIf);
  f.smallProduct.compute_at(f.out, l.task).vectorize(nj, vw);
  f.smallProduct.update(0)
      .split(m, mt1, mi1, tileRows, TailStrategy::RoundUp)
      .reorder(nj, mi1, f.kBlocks.x, mt1, nt)
      .vectorize(nj, vw)
      .unroll(mi1);
  f.smallBlock.compute_at(f.smallProduct, f.kBlocks.x).vectorize(nj, vw).unroll(nj).unroll(m);
  f.smallBlock.update().reorder(nj, m, f.ki).vectorize(nj, vw).unroll(nj).unroll(m);
  if (!f.kTail)
    return;
  f.smallProduct.update(1)
      .split(m, mt2, mi2, tileRows, TailStrategy::RoundUp)
      .reorder(nj, mi2, mt2, nt)
      .vectorize(nj, vw)
      .unroll(mi2);
  f.smallTail.compute_at(f.smallProduct, mt2).vectorize(nj, vw).unroll(nj).unroll(m);
  f.smallTail.update().reorder(nj, m, f.kt).vectorize(nj, vw).unroll(nj).unroll(m);
}

namespace {

/// The tiled path's register blocks: tileRows × tileCols tiles, the K block
/// outermost so that the packed block is reused by every tile; per tile Σ
/// over k with tileCols × rows accumulators. With bf16 pairs the pair index
/// is an atomic vector reduction inside each accumulator vector (32 products
/// → 16 sums: the 2-way dot product).
void scheduleRegisterTiles(GemmCpuFuncs &f) {
  Var nj = f.nj, nt = f.nt, m = f.m, kb = f.kb, mt("mt"), mi("mi");
  const int vw = f.vw;
  auto scheduleTiles = [&](Stage update, std::vector<VarOrRVar> outer) {
    std::vector<VarOrRVar> order = {nj, mi, nt, mt};
    order.insert(order.end(), outer.begin(), outer.end());
    update.split(m, mt, mi, f.tileRows, TailStrategy::RoundUp)
        .reorder(order)
        .vectorize(nj, vw)
        .unroll(mi);
  };
  auto scheduleRegisterBlock = [&](Func block, RDom rdom, std::vector<VarOrRVar> outer) {
    block.compute_at(f.product, nt);
    block.vectorize(nj, vw).unroll(nj).unroll(m);
    Stage update = block.update();
    if (f.dot) {
      std::vector<VarOrRVar> order = {rdom.x, nj, m, rdom.y};
      order.insert(order.end(), outer.begin(), outer.end());
      update.reorder(order).atomic().vectorize(rdom.x).vectorize(nj, vw).unroll(nj).unroll(m);
    } else {
      std::vector<VarOrRVar> order = {nj, m, rdom.x};
      order.insert(order.end(), outer.begin(), outer.end());
      update.reorder(order).vectorize(nj, vw).unroll(nj).unroll(m);
    }
  };
  scheduleTiles(f.product.update(0), {f.kBlocks.x});
  scheduleRegisterBlock(f.blockProduct, f.dot ? f.kPairs : f.ki, {nt, kb});
  if (f.kTail) {
    scheduleTiles(f.product.update(1), {});
    scheduleRegisterBlock(f.tailProduct, f.dot ? f.ktPairs : f.kt, {nt});
  }
}

/// Where the weight is staged: packed per K block of the panel (pairs: the
/// vector is (r, nj), 2·vw bf16 from two rows or gathered pairs), GGUF blocks
/// dequantized once per K block (dense byte loads along l) and packed
/// (transposed) from there; else read in place.
void scheduleWeightStaging(const GemmKernelSpec &spec, GemmCpuFuncs &f) {
  Var nj = f.nj;
  const int vw = f.vw;
  Func packedBlock = f.dot ? f.packedPairs : f.packed;
  if (spec.schedule.packWeights && !f.prePacked) {
    auto vectorizePacking = [&](Func p) {
      if (f.dot)
        p.bound(f.r, 0, 2).vectorize(f.r).vectorize(nj, vw).unroll(nj);
      else
        p.vectorize(nj, vw).unroll(nj);
    };
    packedBlock.compute_at(f.product, f.kBlocks.x);
    vectorizePacking(packedBlock);
    if (f.kTail) {
      f.packedTail.compute_at(f.product, Var::outermost());
      vectorizePacking(f.packedTail);
    }
  } else {
    packedBlock.compute_inline();
    f.packedTail.compute_inline();
  }
  if (f.dot) {
    // Once per call, before the tiles; in parallel tasks of ~64 KiB of x
    // (serial, it was ~0.4 % of GPT-2's bf16 forward on one thread, and the
    // other thread waited for it).
    Var xTask("x_bf16_task"), xRow("x_bf16_row");
    const int rowsPerTask = std::max(1, 16384 / f.K);
    f.xBf16.compute_root()
        .split(f.m, xTask, xRow, rowsPerTask, TailStrategy::GuardWithIf)
        .parallel(xTask)
        .vectorize(f.k, vw, TailStrategy::GuardWithIf);
    if (!f.prePacked)
      f.weightPairs.compute_inline();
  }
  if (!f.prePacked) {
    f.weightKN.compute_inline();
    f.weightF.compute_inline();
  }
  if (f.blocks) {
    f.weightKNTail.compute_inline();
    f.weightFTail.compute_inline();
    if (spec.schedule.packWeights) {
      f.dequantized.compute_at(f.product, f.kBlocks.x).vectorize(f.ql, 16).unroll(f.qh);
      if (f.kTail)
        f.dequantizedTail.compute_at(f.product, Var::outermost()).vectorize(f.ql, 16).unroll(f.qh);
    } else {
      f.dequantized.compute_inline();
      f.dequantizedTail.compute_inline();
    }
  }
  f.xRows.compute_inline();
}

} // namespace

void scheduleTiledCpu(const GemmKernelSpec &spec, GemmCpuFuncs &f) {
  const GemmSchedule &s = spec.schedule;
  const int vw = f.vw, tileCols = f.tileCols;
  const int panelTiles = int(s.panelCols ? s.panelCols / s.tileCols : defaultPanelTiles(spec));
  Var n = f.n, m = f.m, panel("panel"), rowBlock("row_block"), task("task");
  Var nIn("n_in"), mIn("m_in");
  f.out.split(n, panel, nIn, panelTiles * tileCols, TailStrategy::GuardWithIf)
      .split(m, rowBlock, mIn, int(s.rowsPerTask), TailStrategy::GuardWithIf)
      .reorder(nIn, mIn, panel, rowBlock)
      .fuse(panel, rowBlock, task)
      .parallel(task);
  if (f.gated) { // whole tiles, so that n % tileCols is the lane of a tile
    Var outTile("out_tile"), outLane("out_lane");
    f.out.split(nIn, outTile, outLane, tileCols, TailStrategy::GuardWithIf)
        .reorder(outLane, outTile, mIn)
        .vectorize(outLane, vw, TailStrategy::GuardWithIf);
  } else {
    f.out.vectorize(nIn, vw, TailStrategy::GuardWithIf);
  }
  f.product.compute_at(f.out, task).vectorize(f.nj, vw);
  scheduleRegisterTiles(f);
  scheduleWeightStaging(spec, f);
}

} // namespace mlir::xf
