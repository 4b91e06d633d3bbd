//===- GemmKernel.cpp - GEMM with a fused epilogue as a Halide pipeline ---===//
//
// out[M, N] = act(x[M, K] · W + bias) + residual, with W stored [K, N]
// (GPT-2 Conv1D) or [N, K] (nn.Linear, the tied unembedding), M dynamic.
//
// The schedule is the GotoBLAS/BLIS structure written in Halide:
//   parallel over tasks = (column panel of panelCols) × (block of rowsPerTask
//   rows)
//     for each K block of kBlock:
//       pack the weight panel of this K block tile-major: [tile][k][tileCols]
//       for each tileRows × tileCols register tile:
//         Σ over the K block in registers (tileCols vectorized, rows unrolled)
//         add into the task's accumulator
//     epilogue (bias, activation, residual) while storing the tile rows.
// The packed K block (kBlock × panelCols floats) stays in L2 and is reused by
// every row of the task; a tileRows × kBlock slice of x stays in L1 and is
// reused by every tile of the panel. Packing also zero-pads the last tile when
// N is not a multiple of tileCols, so the register loop never needs a guard.
//
// The gated epilogue (SwiGLU) reads a weight of 2·N columns, [W_gate | W_up],
// and stores out = silu(x·W_gate) ⊙ (x·W_up): [M, N]. Both products come from
// one pass over x: packing interleaves the weight's tiles (gate tile i, up
// tile i, gate tile i+1, ...), so a task's gate and up tiles are neighbours
// and the epilogue multiplies two register tiles of one product. The GEMV
// path interleaves chunks of columns the same way.
//
// GemmTiling.cpp checks the spec and sizes the panels and GEMV chunks;
// GemmWeightLayout.cpp reads the weight in either layout and packs it at load.
//
//===----------------------------------------------------------------------===//

#include "BlockWeights.h"
#include "GemmEpilogue.h"
#include "GemmTiling.h"
#include "GemmWeightLayout.h"
#include "KernelPipelines.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace Halide;

namespace mlir::xf {
namespace {

/// Row tiles up to which a GEMM on a weight packed at load sums over all of K
/// per register tile (the few-rows path; see buildGemm).
constexpr int kSmallRowTiles = 4;

llvm::Expected<KernelPipeline> buildGemm(const GemmKernelSpec &spec, const Target &target) {
  const int vw = target.natural_vector_size<float>();
  if (llvm::Error err = validateGemm(spec, vw))
    return std::move(err);
  const GemmSchedule &s = spec.schedule;
  const int K = int(spec.K), N = int(spec.N);
  const int tileCols = int(s.tileCols), tileRows = int(s.tileRows);
  // bf16 pairs: an even block (past K when K is odd: then all of K is the tail).
  const int kBlock = int(std::min<int64_t>(s.kBlock, spec.K) +
                         (spec.bf16Activations ? std::min<int64_t>(s.kBlock, spec.K) % 2 : 0));
  const int fullKBlocks = K / kBlock, kTail = K % kBlock;
  const int panelTiles = int(s.panelCols ? s.panelCols / s.tileCols : defaultPanelTiles(spec));
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int weightCols = gated ? 2 * N : N; // columns of the stored weight (and bias)

  ImageParam x(Float(32), 2, "x"); // (k, m): [M, K]
  const bool blocks = spec.weightBlocks != WeightBlocks::None;
  const int rowBytes = blocks ? int(K / 32 * weightBlockBytes(spec.weightBlocks)) : 0;
  const bool prePacked = spec.packedWeight;
  // (n, k): [K, N], or (k, n): [N, K]; gated 2·N. Blocks: (byte, n).
  // Packed at load: (nj, k, nt); bf16 pairs (r + 2·nj, kk, nt).
  ImageParam weight(blocks ? UInt(8) : spec.bf16Weights ? BFloat(16) : Float(32),
                    prePacked ? 3 : 2, "weight");
  BlockWeights blockWeights(weight, spec.weightBlocks,
                            target.arch == Target::X86 && target.has_feature(Target::F16C));
  ImageParam bias(Float(32), 1, "bias");         // (n): [N]; gated [2·N]
  ImageParam residual(Float(32), 2, "residual"); // (n, m): [M, N]
  Var n("n"), m("m"), k("k"), nj("nj"), nt("nt"), kb("kb");
  Expr rows = x.dim(1).extent();

  // ---- Algorithm -------------------------------------------------------
  // The stored weight as float32: bfloat16 is the upper half of a float32,
  // so widening is a 16-bit shift (no rounding, vectorizes on any target).
  // Blocks: dequantized per (l, h, block, row) so that a vector over l is a
  // dense load of bytes; the GEMM path computes one per K block of the panel
  // (and one for the K tail) before packing, the GEMV path reads blocks itself.
  // bfloat16 is the upper half of a float32: widening is a 16-bit shift.
  auto widenWeight = [&](Expr w) -> Expr {
    return spec.bf16Weights ? reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(w)) << 16)
                            : w;
  };
  Func weightF("weight_f32"), weightFTail("weight_f32_tail");
  Func dequantized("weight_dequantized"), dequantizedTail("weight_dequantized_tail");
  Var ql("ql"), qh("qh"), qb("qb"), qr("qr");
  {
    Var a("a"), b("b");
    if (blocks) {
      dequantized(ql, qh, qb, qr) = blockWeights.value(qb, ql, qh, qr);
      dequantizedTail(ql, qh, qb, qr) = blockWeights.value(qb, ql, qh, qr);
      weightF(a, b) = dequantized(a % 16, (a / 16) % 2, a / 32, b);
      weightFTail(a, b) = dequantizedTail(a % 16, (a / 16) % 2, a / 32, b);
    } else if (!prePacked) {
      weightF(a, b) = widenWeight(weight(a, b));
    }
    if (!blocks)
      weightFTail = weightF;
  }
  Func weightKN, weightKNTail;
  if (!prePacked) {
    weightKN = weightByColumn(weightF, spec, 0.f, "weight_kn");
    weightKNTail = blocks ? weightByColumn(weightFTail, spec, 0.f, "weight_kn_tail") : weightKN;
  }
  // Tile-major weight: packed(nj, k, nt) = W(nt·tileCols + nj, k), staged per
  // K block per call, or the weight itself when it was packed at load.
  Func packed("packed_weight");
  if (prePacked && !spec.bf16Activations)
    packed(nj, k, nt) = widenWeight(weight(nj, k, nt));
  else if (!prePacked)
    packed(nj, k, nt) = weightKN(nt * tileCols + nj, k);
  // Rows past M (the tail of a register tile) repeat row M-1; never stored.
  Func xRows("x_rows");
  xRows(k, m) = x(k, clamp(m, 0, rows - 1));

  // bf16Activations: x rounded to bfloat16 once per call (zero past K, so an
  // odd K ends in a zero pair), the weight packed as bf16 pairs
  // packedPairs(r, nj, kk, nt) = W(nt·tileCols + nj, 2·kk + r), and each
  // product Σ_r x(2kk + r)·W(2kk + r) is one 2-way dot product (vdpbf16ps on
  // targets with AVX512-BF16: Halide's avx512_zen4 / avx512_sapphirerapids).
  const bool dot = spec.bf16Activations;
  Func xBf16("x_bf16"), weightPairs("weight_kn_bf16"), packedPairs("packed_weight_pairs");
  if (dot) {
    // Round to nearest even by integer arithmetic (Halide's cast would be
    // an "emulated bfloat16" operation on targets without a native convert).
    Expr v = select(k < K, xRows(min(k, K - 1), m), 0.f);
    Expr bits = reinterpret<uint32_t>(v);
    Expr rounded = cast<uint16_t>((bits + (0x7fff + ((bits >> 16) & 1))) >> 16);
    xBf16(k, m) = reinterpret(BFloat(16), select(is_nan(v), cast<uint16_t>(0x7fc0), rounded));
  }
  if (dot && !prePacked) {
    Func stored = BoundaryConditions::constant_exterior(
        weight, cast(BFloat(16), 0.f),
        spec.transposeWeight ? Region{{0, K}, {0, weightCols}} : Region{{0, weightCols}, {0, K}});
    if (N % tileCols == 0 && K % 2 == 0 && !gated)
      stored = weight;
    Expr column = storedColumn(spec, n);
    weightPairs(n, k) = spec.transposeWeight ? stored(k, column) : stored(column, k);
  }
  Var r("r"), kk("kk");

  // Σ over one K block for one tile: blockProduct(nj, nt, m, kb).
  RDom ki(0, kBlock, "ki");
  RDom kPairs(0, 2, 0, kBlock / 2, "kpairs");
  Func blockProduct("block_product");
  blockProduct(nj, nt, m, kb) = 0.f;
  if (dot) {
    packedPairs(r, nj, kk, nt) = prePacked ? weight(r + 2 * nj, kk, nt)
                                           : weightPairs(nt * tileCols + nj, 2 * kk + r);
    blockProduct(nj, nt, m, kb) +=
        cast<float>(xBf16(kb * kBlock + 2 * kPairs.y + kPairs.x, m)) *
        cast<float>(packedPairs(kPairs.x, nj, kb * (kBlock / 2) + kPairs.y, nt));
  } else {
    blockProduct(nj, nt, m, kb) += xRows(kb * kBlock + ki, m) * packed(nj, kb * kBlock + ki, nt);
  }
  // x·W in tile coordinates, summed over K blocks (then the K tail, if any).
  RDom kBlocks(0, fullKBlocks, "kblocks");
  Func product("product");
  product(nj, nt, m) = 0.f;
  product(nj, nt, m) += blockProduct(nj, nt, m, kBlocks);
  RDom kt(fullKBlocks * kBlock, std::max(kTail, 1), "kt");
  RDom ktPairs(0, 2, fullKBlocks * kBlock / 2, std::max((kTail + 1) / 2, 1), "kt_pairs");
  Func tailProduct("tail_block_product"), packedTail("packed_weight_tail");
  if (kTail) {
    tailProduct(nj, nt, m) = 0.f;
    if (dot) {
      packedTail(r, nj, kk, nt) = prePacked ? weight(r + 2 * nj, kk, nt)
                                            : weightPairs(nt * tileCols + nj, 2 * kk + r);
      tailProduct(nj, nt, m) += cast<float>(xBf16(2 * ktPairs.y + ktPairs.x, m)) *
                                cast<float>(packedTail(ktPairs.x, nj, ktPairs.y, nt));
    } else {
      packedTail(nj, k, nt) = prePacked ? packed(nj, k, nt) : weightKNTail(nt * tileCols + nj, k);
      tailProduct(nj, nt, m) += xRows(kt, m) * packedTail(nj, kt, nt);
    }
    product(nj, nt, m) += tailProduct(nj, nt, m);
  }

  // GEMV (M < gemvRowsBelow): no packing, no register tile of rows; every
  // weight element is loaded once and used by the M rows right away.
  //  [K, N]: gemv(n, m) = Σ_k x(k, m)·W(n, k), k outermost, a row segment of
  //          W (the task's columns, contiguous) per k, accumulators in L1.
  //  [N, K]: vw partial sums per (n, m) over k (rows of W are contiguous),
  //          then a horizontal sum and the K tail.
  Expr gemv = rows < int(s.gemvRowsBelow);
  const int kMain = K - K % vw;
  // Gated: GEMV columns interleave chunks (gate chunk i, up chunk i, ...) so
  // that a task's gate and up columns are one contiguous range of gemv_product.
  const int gemvChunk = int(gemvChunkCols(spec, vw));
  auto gemvColumn = [&](Expr v) -> Expr {
    if (!gated)
      return spec.transposeWeight ? min(v, N - 1) : v;
    Expr chunk = v / gemvChunk;
    return min((chunk / 2) * gemvChunk + v % gemvChunk, N - 1) + (chunk % 2) * N;
  };
  RDom gk(0, K, "gk"), gko(0, std::max(kMain / vw, 1), "gko"), lanes(0, vw, "lanes");
  RDom gkTail(kMain, std::max(K - kMain, 1), "gk_tail");
  Var kl("kl");
  Func gemvProduct("gemv_product"), gemvPartial("gemv_partial");
  gemvProduct(n, m) = 0.f;
  // Blocks ([N, K]): 16 lanes of partial sums per (n, m) and per block of
  // each group of blockChains consecutive blocks (independent FMA chains: a
  // row holds only K/32 blocks), one group per step:
  // d·(x_lo·q_lo + x_hi·q_hi) + c·(x_lo + x_hi), elements l and 16 + l.
  const int blockCount = std::max(K / 32, 1);
  const int blockChains = blockCount % 4 == 0 ? 4 : blockCount % 3 == 0 ? 3
                          : blockCount % 2 == 0 ? 2 : 1;
  Var kc("kc");
  RDom gb(0, blockCount / blockChains, "gb"), blockLanes(0, 16, 0, blockChains, "block_lanes");
  // Packed at load: one tile's K × tileCols block is one contiguous stream,
  // Σ_k x(k, m)·P(nj, k, nt) in tile coordinates like the GEMM's product.
  Func gemvTiles("gemv_tiles");
  // bf16 pairs: x is not rounded here (single rows stay exact), each weight
  // pair is widened as it is read.
  RDom gp(0, 2, 0, (K + 1) / 2, "gp");
  if (prePacked) {
    gemvTiles(nj, nt, m) = 0.f;
    if (dot) {
      Expr kIndex = 2 * gp.y + gp.x;
      Expr xValue = K % 2 ? select(kIndex < K, x(min(kIndex, K - 1), m), 0.f) : x(kIndex, m);
      gemvTiles(nj, nt, m) += xValue * widenWeight(weight(gp.x + 2 * nj, gp.y, nt));
    } else {
      gemvTiles(nj, nt, m) += x(gk, m) * packed(nj, gk, nt);
    }
  } else if (blocks) {
    Expr row = gemvColumn(n), block = gb * blockChains + kc;
    Expr xLo = x(block * 32 + kl, m), xHi = x(block * 32 + 16 + kl, m);
    Expr sum = xLo * blockWeights.quant(block, kl, 0, row) +
               xHi * blockWeights.quant(block, kl, 1, row);
    Expr partial = blockWeights.scale(block, row) * sum;
    if (blockWeights.hasOffset())
      partial += blockWeights.offset(block, row) * (xLo + xHi);
    gemvPartial(kl, kc, n, m) = 0.f;
    gemvPartial(kl, kc, n, m) += partial;
    gemvProduct(n, m) += gemvPartial(blockLanes.x, blockLanes.y, n, m);
  } else if (!spec.transposeWeight) {
    gemvProduct(n, m) += x(gk, m) * weightF(gemvColumn(n), gk);
  } else {
    gemvPartial(kl, n, m) = 0.f;
    if (kMain)
      gemvPartial(kl, n, m) += x(gko * vw + kl, m) * weightF(gko * vw + kl, gemvColumn(n));
    gemvProduct(n, m) += gemvPartial(lanes, n, m);
    if (kMain != K)
      gemvProduct(n, m) += x(gkTail, m) * weightF(gkTail, gemvColumn(n));
  }

  // Few rows (gemvRowsBelow <= M <= kSmallRowTiles·tileRows, weight packed at
  // load, float32 products; several sequences decoding together): the GEMM
  // path's sums (K blocks, then the K tail), but with the loops turned
  // around (the results may differ in the last bits: Halide lets LLVM
  // reassociate float sums, and the two loop nests compile apart): per weight
  // tile, its row tiles one after another, each over all K blocks. The GEMM
  // path walks all tiles of a panel per K block so that a panel's K block is
  // reused by every row tile of a task; with a few row tiles a weight tile's
  // K × tileCols block (one contiguous stream, 147 KiB at K = 768) is reused
  // from L2 instead, and that walk broke the stream into kBlock-long pieces.
  // One thread, GPT-2 small, min of 3 runs on a loaded machine: M = 8 QKV
  // 327 vs 408 us, MLP up 461 vs 592 us, MLP down 507 vs 548 us; M = 16 QKV
  // 601 vs 1050 us; M = 32 2039 vs 2191 us.
  const bool smallRowsPath = prePacked && !dot;
  Expr smallRows = rows <= kSmallRowTiles * tileRows;
  Func smallBlock("small_rows_block"), smallTail("small_rows_tail");
  Func smallProduct("small_rows_product");
  if (smallRowsPath) {
    smallBlock(nj, nt, m, kb) = 0.f;
    smallBlock(nj, nt, m, kb) += xRows(kb * kBlock + ki, m) * packed(nj, kb * kBlock + ki, nt);
    smallProduct(nj, nt, m) = 0.f;
    smallProduct(nj, nt, m) += smallBlock(nj, nt, m, kBlocks);
    if (kTail) {
      smallTail(nj, nt, m) = 0.f;
      smallTail(nj, nt, m) += xRows(kt, m) * packed(nj, kt, nt);
      smallProduct(nj, nt, m) += smallTail(nj, nt, m);
    }
  }
  // The product of a tile's lane nj for row m, by path.
  auto tileProduct = [&](Expr lane, Expr tile) -> Expr {
    Expr general = product(lane, tile, m);
    if (smallRowsPath)
      general = select(smallRows, smallProduct(lane, tile, m), general);
    return select(gemv, gemvTiles(lane, tile, m), general);
  };

  Expr value;
  if (prePacked) {
    Expr tile = gated ? (n / tileCols) * 2 : n / tileCols;
    Expr gate = tileProduct(n % tileCols, tile);
    if (spec.hasBias)
      gate += bias(n);
    value = applyGemmEpilogue(spec.epilogue, gate);
    if (gated) {
      Expr up = tileProduct(n % tileCols, tile + 1);
      if (spec.hasBias)
        up += bias(n + N);
      value *= up;
    }
  } else if (!gated) {
    value = select(gemv, gemvProduct(n, m), product(n % tileCols, n / tileCols, m));
    if (spec.hasBias)
      value += bias(n);
    value = applyGemmEpilogue(spec.epilogue, value);
  } else {
    // silu(gate + b_gate) ⊙ (up + b_up), from neighbouring tiles (chunks).
    Expr gemvGate = (n / gemvChunk) * 2 * gemvChunk + n % gemvChunk;
    Expr tileGate = (n / tileCols) * 2;
    Expr gate = select(gemv, gemvProduct(gemvGate, m), product(n % tileCols, tileGate, m));
    Expr up = select(gemv, gemvProduct(gemvGate + gemvChunk, m),
                     product(n % tileCols, tileGate + 1, m));
    if (spec.hasBias)
      gate += bias(n), up += bias(n + N);
    value = applyGemmEpilogue(spec.epilogue, gate) * up;
  }
  if (spec.hasResidual)
    value += residual(n, m);
  Func out("gemm_out");
  out(n, m) = value;

  // ---- Buffer shapes (docs/abi.md: dim 0 = cols, stride 1) ----------------
  x.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_min(0);
  if (blocks)
    weight.dim(0).set_bounds(0, rowBytes).set_stride(1).dim(1).set_bounds(0, weightCols);
  else
    constrainWeight(weight, spec, prePacked);
  bias.dim(0).set_bounds(0, weightCols).set_stride(1);
  residual.dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);
  out.output_buffer().dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);

  // ---- Schedule ----------------------------------------------------------
  Var panel("panel"), rowBlock("row_block"), task("task"), nIn("n_in"), mIn("m_in");
  Var mt("mt"), mi("mi"), gemvTask("gemv_task"), gemvN("gemv_n"), gemvNo("gemv_no");
  Var gemvNi("gemv_ni");

  // GEMV: parallel over column chunks only; the condition is a fact inside
  // the specialization, so its select keeps only gemv_product (and the
  // GEMM branch only product).
  {
    const int chunk = gemvChunk;
    Stage g = out.specialize(gemv);
    g.split(n, gemvTask, gemvN, chunk, TailStrategy::GuardWithIf)
        .reorder(gemvN, m, gemvTask)
        .parallel(gemvTask)
        .vectorize(gemvN, vw, TailStrategy::GuardWithIf);
    if (prePacked) {
      // A task's chunk is whole tiles, taken kGemvStreams at a time: tileCols
      // accumulators per tile and row of x, loaded and stored once per
      // gemvRowsPerPass rows of k.
      RVar gkOuter("gk_o"), gkInner("gk_i");
      Var ntOuter("nt_o"), ntInner("nt_i");
      gemvTiles.compute_at(out, gemvTask).vectorize(nj, vw);
      Stage update = gemvTiles.update();
      if (dot) // pairs of rows: the pair index innermost, unrolled
        update.split(gp.y, gkOuter, gkInner, std::max(1, int(s.gemvRowsPerPass) / 2),
                     TailStrategy::GuardWithIf)
            .split(nt, ntOuter, ntInner, kGemvStreams, TailStrategy::GuardWithIf)
            .reorder(nj, gp.x, ntInner, gkInner, m, gkOuter, ntOuter)
            .unroll(gp.x);
      else
        update.split(gk, gkOuter, gkInner, int(s.gemvRowsPerPass), TailStrategy::GuardWithIf)
            .split(nt, ntOuter, ntInner, kGemvStreams, TailStrategy::GuardWithIf)
            .reorder(nj, ntInner, gkInner, m, gkOuter, ntOuter);
      update.vectorize(nj, vw).unroll(nj).unroll(ntInner);
    } else if (blocks) {
      // Like [N, K] below, but gemvRowsPerPass / 8 rows per pass: rows of
      // blocks are short (K = 576: 360 bytes of Q4_1), so 16 interleaved
      // rows are 16 streams of a few cache lines that the prefetchers do
      // not follow (measured: 16 rows 1.5x the time of 2; 1 and 2 alike),
      // while the block chains keep the FMA pipes busy. Rows of x outermost:
      // the partial sums of one pass (one x row) stay in registers instead of
      // being stored every block (measured 11 % less CPU time per token).
      const int rowsPerPass = std::max<int>(1, int(s.gemvRowsPerPass) / 8);
      gemvProduct.compute_at(out, gemvTask).vectorize(n, vw, TailStrategy::RoundUp);
      gemvProduct.update(0)
          .split(n, gemvNo, gemvNi, rowsPerPass, TailStrategy::RoundUp)
          .reorder(blockLanes.x, blockLanes.y, gemvNi, gemvNo, m)
          .unroll(blockLanes.x)
          .unroll(blockLanes.y);
      gemvPartial.compute_at(gemvProduct, gemvNo).vectorize(kl).unroll(kc).unroll(n);
      gemvPartial.update().reorder(kl, kc, n, gb, m).vectorize(kl).unroll(kc).unroll(n);
    } else if (!spec.transposeWeight) {
      // Accumulators for the chunk × M rows; per k one contiguous segment of W.
      gemvProduct.compute_at(out, gemvTask).vectorize(n, vw);
      // 16 rows of W per pass (16 streams), so each accumulator vector is
      // loaded and stored once per 16 FMAs (measured: 4 rows reach 0.75× of
      // OpenBLAS sgemv, 16 rows 1.0-1.07×; 32 fewer).
      RVar gkOuter("gk_o"), gkInner("gk_i");
      gemvProduct.update()
          .split(gk, gkOuter, gkInner, int(s.gemvRowsPerPass), TailStrategy::GuardWithIf)
          .split(n, gemvNo, gemvNi, vw, TailStrategy::GuardWithIf)
          .reorder(gemvNi, gkInner, gemvNo, m, gkOuter)
          .vectorize(gemvNi, vw)
          .unroll(gemvNi)
          .unroll(gkInner);
    } else {
      // vw lanes of partial sums for 16 rows of W at a time (16 streams,
      // 16 independent FMA chains; 4 rows: 0.85× of sgemv, 8-16 rows:
      // 1.15-1.3×), then the horizontal sums. Row indices
      // past N (the rounded-up last group) re-read row N-1, never stored.
      gemvProduct.compute_at(out, gemvTask).vectorize(n, vw, TailStrategy::RoundUp);
      gemvProduct.update(0)
          .split(n, gemvNo, gemvNi, int(s.gemvRowsPerPass), TailStrategy::RoundUp)
          .reorder(lanes, gemvNi, m, gemvNo)
          .unroll(lanes);
      gemvPartial.compute_at(gemvProduct, gemvNo).vectorize(kl).unroll(n);
      if (kMain)
        gemvPartial.update().reorder(kl, n, gko, m).vectorize(kl).unroll(n);
      if (kMain != K)
        gemvProduct.update(1).reorder(gkTail, n, m);
    }
  }

  // Few rows: parallel over the GEMV's column chunks (whole tiles); per
  // weight tile and row tile, tileRows × tileCols accumulators in registers
  // per K block (the GEMM path's register blocks).
  if (smallRowsPath) {
    Var mt1("small_mt"), mi1("small_mi"), mt2("small_tail_mt"), mi2("small_tail_mi");
    out.specialize(smallRows)
        .split(n, gemvTask, gemvN, gemvChunk, TailStrategy::GuardWithIf)
        .reorder(gemvN, m, gemvTask)
        .parallel(gemvTask)
        .vectorize(gemvN, vw, TailStrategy::GuardWithIf);
    smallProduct.compute_at(out, gemvTask).vectorize(nj, vw);
    smallProduct.update(0)
        .split(m, mt1, mi1, tileRows, TailStrategy::RoundUp)
        .reorder(nj, mi1, kBlocks.x, mt1, nt)
        .vectorize(nj, vw)
        .unroll(mi1);
    smallBlock.compute_at(smallProduct, kBlocks.x).vectorize(nj, vw).unroll(nj).unroll(m);
    smallBlock.update().reorder(nj, m, ki).vectorize(nj, vw).unroll(nj).unroll(m);
    if (kTail) {
      smallProduct.update(1)
          .split(m, mt2, mi2, tileRows, TailStrategy::RoundUp)
          .reorder(nj, mi2, mt2, nt)
          .vectorize(nj, vw)
          .unroll(mi2);
      smallTail.compute_at(smallProduct, mt2).vectorize(nj, vw).unroll(nj).unroll(m);
      smallTail.update().reorder(nj, m, kt).vectorize(nj, vw).unroll(nj).unroll(m);
    }
  }

  out.split(n, panel, nIn, panelTiles * tileCols, TailStrategy::GuardWithIf)
      .split(m, rowBlock, mIn, int(s.rowsPerTask), TailStrategy::GuardWithIf)
      .reorder(nIn, mIn, panel, rowBlock)
      .fuse(panel, rowBlock, task)
      .parallel(task);
  if (gated) { // whole tiles, so that n % tileCols is the lane of a tile
    Var outTile("out_tile"), outLane("out_lane");
    out.split(nIn, outTile, outLane, tileCols, TailStrategy::GuardWithIf)
        .reorder(outLane, outTile, mIn)
        .vectorize(outLane, vw, TailStrategy::GuardWithIf);
  }
  else
    out.vectorize(nIn, vw, TailStrategy::GuardWithIf);

  product.compute_at(out, task).vectorize(nj, vw);
  // Register tiles: tileRows × tileCols, the K block outermost so that the
  // packed block is reused by every tile.
  auto scheduleTiles = [&](Stage update, std::vector<VarOrRVar> outer) {
    std::vector<VarOrRVar> order = {nj, mi, nt, mt};
    order.insert(order.end(), outer.begin(), outer.end());
    update.split(m, mt, mi, tileRows, TailStrategy::RoundUp)
        .reorder(order)
        .vectorize(nj, vw)
        .unroll(mi);
  };
  // The register block: Σ over k with tileCols × rows accumulators. With
  // bf16 pairs the pair index is an atomic vector reduction inside each
  // accumulator vector (32 products → 16 sums: the 2-way dot product).
  auto scheduleRegisterBlock = [&](Func f, RDom rdom, std::vector<VarOrRVar> outer) {
    f.compute_at(product, nt);
    f.vectorize(nj, vw).unroll(nj).unroll(m);
    Stage update = f.update();
    if (dot) {
      std::vector<VarOrRVar> order = {rdom.x, nj, m, rdom.y};
      order.insert(order.end(), outer.begin(), outer.end());
      update.reorder(order).atomic().vectorize(rdom.x).vectorize(nj, vw).unroll(nj).unroll(m);
    } else {
      std::vector<VarOrRVar> order = {nj, m, rdom.x};
      order.insert(order.end(), outer.begin(), outer.end());
      update.reorder(order).vectorize(nj, vw).unroll(nj).unroll(m);
    }
  };
  scheduleTiles(product.update(0), {kBlocks.x});
  scheduleRegisterBlock(blockProduct, dot ? kPairs : ki, {nt, kb});
  if (kTail) {
    scheduleTiles(product.update(1), {});
    scheduleRegisterBlock(tailProduct, dot ? ktPairs : kt, {nt});
  }

  Func packedBlock = dot ? packedPairs : packed;
  if (s.packWeights && !prePacked) {
    // Pairs: the vector is (r, nj), 2·vw bf16 from two rows (or gathered pairs).
    auto vectorizePacking = [&](Func f) {
      if (dot)
        f.bound(r, 0, 2).vectorize(r).vectorize(nj, vw).unroll(nj);
      else
        f.vectorize(nj, vw).unroll(nj);
    };
    packedBlock.compute_at(product, kBlocks.x);
    vectorizePacking(packedBlock);
    if (kTail) {
      packedTail.compute_at(product, Var::outermost());
      vectorizePacking(packedTail);
    }
  } else {
    packedBlock.compute_inline();
    packedTail.compute_inline();
  }
  if (dot) {
    // Once per call, before the tiles; in parallel tasks of ~64 KiB of x
    // (serial, it was ~0.4 % of GPT-2's bf16 forward on one thread, and the
    // other thread waited for it).
    Var xTask("x_bf16_task"), xRow("x_bf16_row");
    const int rowsPerTask = std::max(1, 16384 / K);
    xBf16.compute_root()
        .split(m, xTask, xRow, rowsPerTask, TailStrategy::GuardWithIf)
        .parallel(xTask)
        .vectorize(k, vw, TailStrategy::GuardWithIf);
    if (!prePacked)
      weightPairs.compute_inline();
  }
  if (!prePacked) {
    weightKN.compute_inline();
    weightF.compute_inline();
  }
  if (blocks) {
    weightKNTail.compute_inline();
    weightFTail.compute_inline();
    // Dequantized once per K block of the panel (dense byte loads along l),
    // then packed (transposed) from there.
    if (s.packWeights) {
      dequantized.compute_at(product, kBlocks.x).vectorize(ql, 16).unroll(qh);
      if (kTail)
        dequantizedTail.compute_at(product, Var::outermost()).vectorize(ql, 16).unroll(qh);
    } else {
      dequantized.compute_inline();
      dequantizedTail.compute_inline();
    }
  }
  xRows.compute_inline();

  return gemmKernelPipeline(spec, x, weight, bias, residual, out);
}

} // namespace

KernelPipeline gemmKernelPipeline(const GemmKernelSpec &spec, ImageParam x, ImageParam weight,
                                  ImageParam bias, ImageParam residual, Func out) {
  std::vector<ImageParam> inputs = {x, weight};
  if (spec.hasBias)
    inputs.push_back(bias);
  if (spec.hasResidual)
    inputs.push_back(residual);
  return KernelPipeline::of(std::move(inputs), out);
}

llvm::Expected<KernelPipeline> buildGemmPipeline(const GemmKernelSpec &spec, const Target &target) {
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err = catchHalideErrors("scheduling gemm kernel '" + spec.name + "'",
                                          [&] { built.emplace(buildGemm(spec, target)); }))
    return std::move(err);
  return std::move(*built);
}

} // namespace mlir::xf
