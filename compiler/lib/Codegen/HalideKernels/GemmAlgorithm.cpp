//===- GemmAlgorithm.cpp - the GEMM's Funcs, for every schedule -----------===//
//
// out[M, N] = act(x[M, K] · W + bias) + residual, with W stored [K, N]
// (GPT-2 Conv1D) or [N, K] (nn.Linear, the tied unembedding), M dynamic.
//
// The CPU GEMM sums the product three ways, chosen per call by M:
//  - tiled (the GotoBLAS/BLIS structure, GemmScheduleCpu.cpp): the weight in
//    tile-major panels packed(nj, k, nt) = W(nt·tileCols + nj, k), summed per
//    K block per register tile (block_product), then over the blocks and the
//    K tail (product); packing also zero-pads the last tile when N is not a
//    multiple of tileCols, so the register loop never needs a guard;
//  - few rows (a weight packed at load, float32 products): the same sums,
//    their loops turned around by the schedule;
//  - GEMV (M < gemvRowsBelow): no packing, each weight element used by the M
//    rows right away.
// The gated epilogue (SwiGLU) reads a weight of 2·N columns, [W_gate | W_up],
// and stores out = silu(x·W_gate) ⊙ (x·W_up): [M, N]. Both products come from
// one pass over x: packing interleaves the weight's tiles (gate tile i, up
// tile i, gate tile i+1, ...), so a task's gate and up tiles are neighbours
// and the epilogue multiplies two register tiles of one product. The GEMV
// path interleaves chunks of columns the same way.
//
// The CUDA GEMM (GemmScheduleCuda.cpp) sums per K slice (staged), over all
// of K per thread (register), or per K slice / lane of a column (GEMV, and
// the batch GEMVs of up to 8 and 16 rows), with the gates as a dimension of
// its sums.
//
// GemmTiling.cpp checks the spec and sizes the panels and GEMV chunks;
// GemmWeightLayout.cpp reads the weight in either layout and packs it at load.
//
//===----------------------------------------------------------------------===//

#include "GemmAlgorithm.h"
#include "AttentionDecodePath.h"
#include "BlockWeights.h"
#include "GemmEpilogue.h"
#include "GemmTiling.h"
#include "GemmWeightLayout.h"

#include <algorithm>

using namespace Halide;

namespace mlir::xf {

// ---- Shared by every path ----------------------------------------------

GemmInputs gemmInputs(const GemmKernelSpec &spec) {
  const bool blocks = spec.weightBlocks != WeightBlocks::None;
  // Blocks: (byte, n). Packed at load: (nj, k, nt); bf16 pairs (r + 2·nj, kk, nt).
  return GemmInputs{ImageParam(Float(32), 2, "x"),
                    ImageParam(blocks              ? UInt(8)
                               : spec.bf16Weights ? BFloat(16)
                                                  : Float(32),
                               spec.packedWeight ? 3 : 2, "weight"),
                    ImageParam(Float(32), 1, "bias"), ImageParam(Float(32), 2, "residual"),
                    ImageParam(Float(32), 1, "norm_gamma"), ImageParam(Float(32), 1, "norm_beta"),
                    ImageParam(Float(32), 4, "range_partials")};
}

void constrainGemmBuffers(const GemmKernelSpec &spec, GemmInputs &in, Func out) {
  const int K = int(spec.K), N = int(spec.N);
  const int weightCols = spec.gates() * N;
  Expr rows = in.x.dim(1).extent();
  in.x.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_min(0);
  if (spec.weightBlocks != WeightBlocks::None)
    in.weight.dim(0)
        .set_bounds(0, int(K / 32 * weightBlockBytes(spec.weightBlocks)))
        .set_stride(1)
        .dim(1)
        .set_bounds(0, weightCols);
  else
    constrainWeight(in.weight, spec, spec.packedWeight);
  in.bias.dim(0).set_bounds(0, weightCols).set_stride(1);
  in.residual.dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);
  in.gamma.dim(0).set_bounds(0, K).set_stride(1);
  in.beta.dim(0).set_bounds(0, K).set_stride(1);
  if (spec.mergeHeads) { // [ranges][heads][4 rows][K / heads + 2]
    const int heads = int(spec.mergeHeads), columns = K / heads + 2;
    in.partials.dim(0).set_bounds(0, columns).set_stride(1);
    in.partials.dim(1).set_bounds(0, kCudaGemvRows).set_stride(columns);
    in.partials.dim(2).set_bounds(0, heads).set_stride(columns * kCudaGemvRows);
    in.partials.dim(3)
        .set_bounds(0, int(spec.mergeRanges))
        .set_stride(columns * kCudaGemvRows * heads);
  }
  out.output_buffer().dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);
}

Expr widenWeight(const GemmKernelSpec &spec, Expr stored) {
  return spec.bf16Weights ? reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(stored)) << 16)
                          : stored;
}

Expr gemmEpilogue(const GemmKernelSpec &spec, const GemmInputs &in, Expr gate, Expr up, Expr n,
                  Expr m) {
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  if (spec.hasBias) {
    gate += in.bias(n);
    if (gated)
      up += in.bias(n + int(spec.N));
  }
  Expr value = applyGemmEpilogue(spec.epilogue, gate);
  if (gated)
    value *= up;
  if (spec.hasResidual)
    value += in.residual(n, m);
  return value;
}

Expr roundedToBf16(Expr value) {
  // Integer arithmetic: Halide's cast would be an "emulated bfloat16" operation on targets
  // without a native convert.
  Expr bits = reinterpret<uint32_t>(value);
  Expr rounded = cast<uint16_t>((bits + (0x7fff + ((bits >> 16) & 1))) >> 16);
  return reinterpret(BFloat(16), select(is_nan(value), cast<uint16_t>(0x7fc0), rounded));
}

// ---- CPU ---------------------------------------------------------------

namespace {

/// The sizes the CPU paths share.
void sizeGemmCpu(const GemmKernelSpec &spec, int vw, GemmCpuFuncs &f) {
  const GemmSchedule &s = spec.schedule;
  f.vw = vw;
  f.K = int(spec.K), f.N = int(spec.N);
  f.tileCols = int(s.tileCols), f.tileRows = int(s.tileRows);
  // bf16 pairs: an even block (past K when K is odd: then all of K is the tail).
  f.kBlock = int(std::min<int64_t>(s.kBlock, spec.K) +
                 (spec.bf16Activations ? std::min<int64_t>(s.kBlock, spec.K) % 2 : 0));
  f.fullKBlocks = f.K / f.kBlock, f.kTail = f.K % f.kBlock;
  f.kMain = f.K - f.K % vw;
  f.gemvChunk = int(gemvChunkCols(spec, vw));
  // GGUF blocks: independent FMA chains over groups of consecutive blocks.
  f.blockCount = std::max(f.K / 32, 1);
  f.blockChains = f.blockCount % 4 == 0   ? 4
                  : f.blockCount % 3 == 0 ? 3
                  : f.blockCount % 2 == 0 ? 2
                                          : 1;
  f.gated = spec.epilogue == GemmEpilogue::SwiGlu;
  f.blocks = spec.weightBlocks != WeightBlocks::None;
  f.prePacked = spec.packedWeight;
  f.dot = spec.bf16Activations;
  f.smallRowsPath = f.prePacked && !f.dot;
}

/// The weight as float32 by column, dequantized, packed; x's rows clamped
/// (rows past M, the tail of a register tile, repeat row M-1; never stored)
/// and, for bf16 dot products, x rounded and the weight read in pairs.
void defineWeightAccess(const GemmKernelSpec &spec, const GemmInputs &in, bool nativeHalf,
                        GemmCpuFuncs &f) {
  BlockWeights blockWeights(in.weight, spec.weightBlocks, nativeHalf);
  Var n = f.n, m = f.m, k = f.k, nj = f.nj, nt = f.nt;
  const int K = f.K, tileCols = f.tileCols;
  // Blocks: dequantized per (l, h, block, row) so that a vector over l is a
  // dense load of bytes; the GEMM path computes one per K block of the panel
  // (and one for the K tail) before packing, the GEMV path reads blocks itself.
  Var a("a"), b("b");
  if (f.blocks) {
    f.dequantized(f.ql, f.qh, f.qb, f.qr) = blockWeights.value(f.qb, f.ql, f.qh, f.qr);
    f.dequantizedTail(f.ql, f.qh, f.qb, f.qr) = blockWeights.value(f.qb, f.ql, f.qh, f.qr);
    f.weightF(a, b) = f.dequantized(a % 16, (a / 16) % 2, a / 32, b);
    f.weightFTail(a, b) = f.dequantizedTail(a % 16, (a / 16) % 2, a / 32, b);
  } else if (!f.prePacked) {
    f.weightF(a, b) = widenWeight(spec, in.weight(a, b));
  }
  if (!f.blocks)
    f.weightFTail = f.weightF;
  if (!f.prePacked) {
    f.weightKN = weightByColumn(f.weightF, spec, 0.f, "weight_kn");
    f.weightKNTail =
        f.blocks ? weightByColumn(f.weightFTail, spec, 0.f, "weight_kn_tail") : f.weightKN;
  }
  // Tile-major weight, staged per K block per call, or the weight itself
  // when it was packed at load.
  if (f.prePacked && !f.dot)
    f.packed(nj, k, nt) = widenWeight(spec, in.weight(nj, k, nt));
  else if (!f.prePacked)
    f.packed(nj, k, nt) = f.weightKN(nt * tileCols + nj, k);
  Expr rows = in.x.dim(1).extent();
  f.xRows(k, m) = in.x(k, clamp(m, 0, rows - 1));

  // bf16Activations: x rounded to bfloat16 once per call (zero past K, so an
  // odd K ends in a zero pair), the weight packed as bf16 pairs
  // packedPairs(r, nj, kk, nt) = W(nt·tileCols + nj, 2·kk + r), and each
  // product Σ_r x(2kk + r)·W(2kk + r) is one 2-way dot product (vdpbf16ps on
  // targets with AVX512-BF16: Halide's avx512_zen4 / avx512_sapphirerapids).
  if (f.dot) {
    f.xBf16(k, m) = roundedToBf16(select(k < K, f.xRows(min(k, K - 1), m), 0.f));
  }
  if (f.dot && !f.prePacked) {
    const int weightCols = f.gated ? 2 * f.N : f.N;
    Func stored = BoundaryConditions::constant_exterior(
        in.weight, cast(BFloat(16), 0.f),
        spec.transposeWeight ? Region{{0, K}, {0, weightCols}} : Region{{0, weightCols}, {0, K}});
    if (f.N % tileCols == 0 && K % 2 == 0 && !f.gated)
      stored = in.weight;
    Expr column = storedColumn(spec, n);
    f.weightPairs(n, k) = spec.transposeWeight ? stored(k, column) : stored(column, k);
  }
}

/// Tiled: x·W in tile coordinates, Σ per K block per tile, then over the K
/// blocks and the K tail (if any).
void defineTiledProduct(const GemmInputs &in, GemmCpuFuncs &f) {
  Var nj = f.nj, nt = f.nt, m = f.m, kb = f.kb, k = f.k, r = f.r, kk = f.kk;
  const int kBlock = f.kBlock, tileCols = f.tileCols, fullKBlocks = f.fullKBlocks;
  const int kTail = f.kTail;
  f.ki = RDom(0, kBlock, "ki");
  f.kPairs = RDom(0, 2, 0, kBlock / 2, "kpairs");
  RDom ki = f.ki, kPairs = f.kPairs;
  f.blockProduct(nj, nt, m, kb) = 0.f;
  if (f.dot) {
    f.packedPairs(r, nj, kk, nt) = f.prePacked ? in.weight(r + 2 * nj, kk, nt)
                                               : f.weightPairs(nt * tileCols + nj, 2 * kk + r);
    f.blockProduct(nj, nt, m, kb) +=
        cast<float>(f.xBf16(kb * kBlock + 2 * kPairs.y + kPairs.x, m)) *
        cast<float>(f.packedPairs(kPairs.x, nj, kb * (kBlock / 2) + kPairs.y, nt));
  } else {
    f.blockProduct(nj, nt, m, kb) +=
        f.xRows(kb * kBlock + ki, m) * f.packed(nj, kb * kBlock + ki, nt);
  }
  f.kBlocks = RDom(0, fullKBlocks, "kblocks");
  f.product(nj, nt, m) = 0.f;
  f.product(nj, nt, m) += f.blockProduct(nj, nt, m, f.kBlocks);
  f.kt = RDom(fullKBlocks * kBlock, std::max(kTail, 1), "kt");
  f.ktPairs = RDom(0, 2, fullKBlocks * kBlock / 2, std::max((kTail + 1) / 2, 1), "kt_pairs");
  RDom kt = f.kt, ktPairs = f.ktPairs;
  if (!kTail)
    return;
  f.tailProduct(nj, nt, m) = 0.f;
  if (f.dot) {
    f.packedTail(r, nj, kk, nt) = f.prePacked ? in.weight(r + 2 * nj, kk, nt)
                                              : f.weightPairs(nt * tileCols + nj, 2 * kk + r);
    f.tailProduct(nj, nt, m) += cast<float>(f.xBf16(2 * ktPairs.y + ktPairs.x, m)) *
                                cast<float>(f.packedTail(ktPairs.x, nj, ktPairs.y, nt));
  } else {
    f.packedTail(nj, k, nt) =
        f.prePacked ? f.packed(nj, k, nt) : f.weightKNTail(nt * tileCols + nj, k);
    f.tailProduct(nj, nt, m) += f.xRows(kt, m) * f.packedTail(nj, kt, nt);
  }
  f.product(nj, nt, m) += f.tailProduct(nj, nt, m);
}

/// GEMV: every weight element loaded once and used by the M rows right away.
///  [K, N]: gemv(n, m) = Σ_k x(k, m)·W(n, k), k outermost.
///  [N, K]: vw partial sums per (n, m) over k (rows of W are contiguous),
///          then a horizontal sum and the K tail.
///  Blocks ([N, K]): 16 lanes of partial sums per (n, m) and per block of
///          each group of blockChains consecutive blocks (independent FMA
///          chains: a row holds only K/32 blocks), one group per step:
///          d·(x_lo·q_lo + x_hi·q_hi) + c·(x_lo + x_hi), elements l and 16 + l.
///  Packed at load: one tile's K × tileCols block is one contiguous stream,
///          Σ_k x(k, m)·P(nj, k, nt) in tile coordinates like the tiled product;
///          bf16 pairs: x is not rounded (single rows stay exact), each weight
///          pair widened as it is read.
void defineGemv(const GemmKernelSpec &spec, const GemmInputs &in, bool nativeHalf,
                GemmCpuFuncs &f) {
  BlockWeights blockWeights(in.weight, spec.weightBlocks, nativeHalf);
  Var n = f.n, m = f.m, nj = f.nj, nt = f.nt, kl = f.kl, kc = f.kc;
  const int K = f.K, N = f.N, vw = f.vw, kMain = f.kMain, gemvChunk = f.gemvChunk;
  ImageParam x = in.x;
  // Gated: GEMV columns interleave chunks (gate chunk i, up chunk i, ...) so
  // that a task's gate and up columns are one contiguous range of gemv_product.
  auto gemvColumn = [&](Expr v) -> Expr {
    if (!f.gated)
      return spec.transposeWeight ? min(v, N - 1) : v;
    Expr chunk = v / gemvChunk;
    return min((chunk / 2) * gemvChunk + v % gemvChunk, N - 1) + (chunk % 2) * N;
  };
  f.gk = RDom(0, K, "gk"), f.gko = RDom(0, std::max(kMain / vw, 1), "gko");
  f.lanes = RDom(0, vw, "lanes");
  f.gkTail = RDom(kMain, std::max(K - kMain, 1), "gk_tail");
  RDom gk = f.gk, gko = f.gko, lanes = f.lanes, gkTail = f.gkTail;
  f.gemvProduct(n, m) = 0.f;
  f.gb = RDom(0, f.blockCount / f.blockChains, "gb");
  f.blockLanes = RDom(0, 16, 0, f.blockChains, "block_lanes");
  f.gp = RDom(0, 2, 0, (K + 1) / 2, "gp");
  RDom gb = f.gb, blockLanes = f.blockLanes, gp = f.gp;
  if (f.prePacked) {
    f.gemvTiles(nj, nt, m) = 0.f;
    if (f.dot) {
      Expr kIndex = 2 * gp.y + gp.x;
      Expr xValue = K % 2 ? select(kIndex < K, x(min(kIndex, K - 1), m), 0.f) : x(kIndex, m);
      f.gemvTiles(nj, nt, m) += xValue * widenWeight(spec, in.weight(gp.x + 2 * nj, gp.y, nt));
    } else {
      f.gemvTiles(nj, nt, m) += x(gk, m) * f.packed(nj, gk, nt);
    }
  } else if (f.blocks) {
    Expr row = gemvColumn(n), block = gb * f.blockChains + kc;
    Expr xLo = x(block * 32 + kl, m), xHi = x(block * 32 + 16 + kl, m);
    Expr sum = xLo * blockWeights.quant(block, kl, 0, row) +
               xHi * blockWeights.quant(block, kl, 1, row);
    Expr partial = blockWeights.scale(block, row) * sum;
    if (blockWeights.hasOffset())
      partial += blockWeights.offset(block, row) * (xLo + xHi);
    f.gemvPartial(kl, kc, n, m) = 0.f;
    f.gemvPartial(kl, kc, n, m) += partial;
    f.gemvProduct(n, m) += f.gemvPartial(blockLanes.x, blockLanes.y, n, m);
  } else if (!spec.transposeWeight) {
    f.gemvProduct(n, m) += x(gk, m) * f.weightF(gemvColumn(n), gk);
  } else {
    f.gemvPartial(kl, n, m) = 0.f;
    if (kMain)
      f.gemvPartial(kl, n, m) += x(gko * vw + kl, m) * f.weightF(gko * vw + kl, gemvColumn(n));
    f.gemvProduct(n, m) += f.gemvPartial(lanes, n, m);
    if (kMain != K)
      f.gemvProduct(n, m) += x(gkTail, m) * f.weightF(gkTail, gemvColumn(n));
  }
}

/// Few rows (weight packed at load, float32 products): the tiled path's sums
/// (K blocks, then the K tail), in Funcs of their own so that the schedule
/// can turn the loops around (GemmScheduleCpu.cpp). The results may differ
/// from the tiled path's in the last bits: Halide lets LLVM reassociate
/// float sums, and the two loop nests compile apart.
void defineFewRows(GemmCpuFuncs &f) {
  if (!f.smallRowsPath)
    return;
  Var nj = f.nj, nt = f.nt, m = f.m, kb = f.kb;
  f.smallBlock(nj, nt, m, kb) = 0.f;
  f.smallBlock(nj, nt, m, kb) +=
      f.xRows(kb * f.kBlock + f.ki, m) * f.packed(nj, kb * f.kBlock + f.ki, nt);
  f.smallProduct(nj, nt, m) = 0.f;
  f.smallProduct(nj, nt, m) += f.smallBlock(nj, nt, m, f.kBlocks);
  if (f.kTail) {
    f.smallTail(nj, nt, m) = 0.f;
    f.smallTail(nj, nt, m) += f.xRows(f.kt, m) * f.packed(nj, f.kt, nt);
    f.smallProduct(nj, nt, m) += f.smallTail(nj, nt, m);
  }
}

/// out(n, m): the epilogue on the product of the path M chooses.
void defineCpuOutput(const GemmKernelSpec &spec, const GemmInputs &in, GemmCpuFuncs &f) {
  Var n = f.n, m = f.m;
  const int tileCols = f.tileCols, gemvChunk = f.gemvChunk;
  Expr gate, up;
  if (f.prePacked) {
    // The product of a tile's lane nj for row m, by path.
    auto tileProduct = [&](Expr lane, Expr tile) -> Expr {
      Expr general = f.product(lane, tile, m);
      if (f.smallRowsPath)
        general = select(f.smallRows, f.smallProduct(lane, tile, m), general);
      return select(f.gemv, f.gemvTiles(lane, tile, m), general);
    };
    Expr tile = f.gated ? (n / tileCols) * 2 : n / tileCols;
    gate = tileProduct(n % tileCols, tile);
    if (f.gated)
      up = tileProduct(n % tileCols, tile + 1);
  } else if (!f.gated) {
    gate = select(f.gemv, f.gemvProduct(n, m), f.product(n % tileCols, n / tileCols, m));
  } else {
    // gate and up from neighbouring tiles (chunks).
    Expr gemvGate = (n / gemvChunk) * 2 * gemvChunk + n % gemvChunk;
    Expr tileGate = (n / tileCols) * 2;
    gate = select(f.gemv, f.gemvProduct(gemvGate, m), f.product(n % tileCols, tileGate, m));
    up = select(f.gemv, f.gemvProduct(gemvGate + gemvChunk, m),
                f.product(n % tileCols, tileGate + 1, m));
  }
  f.out(n, m) = gemmEpilogue(spec, in, gate, up, n, m);
}

} // namespace

GemmCpuFuncs defineGemmCpu(const GemmKernelSpec &spec, const GemmInputs &in, int vw,
                           bool nativeHalf) {
  GemmCpuFuncs f;
  sizeGemmCpu(spec, vw, f);
  f.rows = in.x.dim(1).extent();
  f.gemv = f.rows < int(spec.schedule.gemvRowsBelow);
  f.smallRows = f.rows <= kSmallRowTiles * f.tileRows;
  defineWeightAccess(spec, in, nativeHalf, f);
  defineTiledProduct(in, f);
  defineGemv(spec, in, nativeHalf, f);
  defineFewRows(f);
  defineCpuOutput(spec, in, f);
  return f;
}

// ---- CUDA --------------------------------------------------------------

bool usesCudaRegisterTiles(const GemmKernelSpec &spec) {
  const GpuGemmSchedule &s = spec.gpuSchedule;
  return s.registerTiles && !spec.transposeWeight && spec.N % s.regTileCols == 0;
}

bool usesCudaNkRegisterTiles(const GemmKernelSpec &spec) {
  // A norm prologue keeps the staged path (GemmPrologue.cpp has no statistics for this one).
  return spec.gpuSchedule.registerTiles && spec.transposeWeight && spec.K % 4 == 0 &&
         spec.prologue == GemmPrologue::None;
}

namespace {

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

} // namespace

CudaBatchBlock cudaBatchGemvBlock(const GemmKernelSpec &spec) {
  const GpuGemmSchedule &s = spec.gpuSchedule;
  const bool nk = spec.transposeWeight;
  CudaBatchBlock block{int(nk ? s.batchLaneCols : s.batchCols),
                       int(nk ? kCudaLanes : s.batchSlices)};
  while (block.cols / 2 >= kCudaBatchMinCols &&
         ceilDiv(int(spec.N), block.cols) < s.regFillBlocks) {
    block.cols /= 2;
    if (!nk)
      block.threadsK *= 2;
  }
  return block;
}

int cudaSplitKRows(const GemmKernelSpec &spec) {
  const GpuGemmSchedule &s = spec.gpuSchedule;
  if (!usesCudaRegisterTiles(spec) || s.regSplitK < 2 || spec.K < kCudaMinSplitDepth * s.regSplitK)
    return 0;
  const int colTiles = int(spec.N / s.regTileCols);
  const int rowTiles = ceilDiv(int(s.regFillBlocks), colTiles);
  return int(std::min<int64_t>(rowTiles * s.regTileRows, s.regTallRows));
}

namespace {

/// Register path, split K: splitDot(n, g, m, s) = Σ over slice s of K (x zero past K),
/// splitSum = Σ_s splitPart.
void defineCudaSplitK(const GemmKernelSpec &spec, const GemmInputs &in, GemmCudaFuncs &f) {
  const int K = int(spec.K), N = int(spec.N);
  f.splits = int(spec.gpuSchedule.regSplitK);
  const int sliceLen = ceilDiv(K, f.splits);
  Var n = f.n, m = f.m, g = f.g, s = f.s;
  RDom j(0, sliceLen, "split_k");
  Expr k = s * sliceLen + j;
  Expr rows = in.x.dim(1).extent();
  // A norm prologue: x normalised by the tile paths' statistics (GemmPrologue.h).
  Expr xValue = spec.prologue != GemmPrologue::None
                    ? select(k < K, normalizedX(spec, in, f.tileNorm, min(k, K - 1), m), 0.f)
                : K % f.splits ? f.xPadded(k, m)
                               : in.x(k, clamp(m, 0, rows - 1));
  Expr depth = K % f.splits ? min(k, K - 1) : k;
  f.splitDot(n, g, m, s) = 0.f;
  f.splitDot(n, g, m, s) += xValue * widenWeight(spec, in.weight(g * N + n, depth));
  f.splitPart(n, g, m, s) = f.splitDot(n, g, m, s);
  RDom rs(0, f.splits, "splits");
  f.splitSum(n, g, m) = 0.f;
  f.splitSum(n, g, m) += f.splitPart(n, g, m, rs);
  f.splitDotVar = j.x, f.splitSumVar = rs.x;
}

/// The GEMV path's x merged from flash-decoding's key-range partials (spec.mergeHeads): the
/// attention's decode merge (defineRangeMerge; out = Σ o·w / Σ l·w, 0 where no key was seen)
/// of column k's head, zero past K. Rows past M read row M − 1 (the buffer's rows past M are
/// not the step's).
void defineCudaRangeMerge(const GemmKernelSpec &spec, const GemmInputs &in, GemmCudaFuncs &f) {
  const int K = int(spec.K), dV = K / int(spec.mergeHeads);
  Expr lastRow = min(in.x.dim(1).extent(), kCudaGemvRows) - 1;
  RangeResults results = partialsRangeResults(in.partials, lastRow, dV);
  f.mergeRanges = RDom(0, int(spec.mergeRanges), "merge_ranges");
  defineRangeMerge(f.mergeTop, f.mergeSums, f.mergeRanges, f.md, f.mt, f.mh, results);
  Var k = f.k, m = f.m;
  Expr column = clamp(k, 0, K - 1);
  Tuple sums = f.mergeSums(column % dV, m, column / dV);
  f.xGemv(k, m) = select(k < K && sums[1] > 0.f, sums[0] / sums[1], 0.f);
}

/// GEMV: [K, N] threads (column, K slice), [N, K] threads (lane, column),
/// then the slices' or lanes' sums.
void defineCudaGemv(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  const int K = int(spec.K);
  Var n = f.n, m = f.m, g = f.g, s = f.s, l = f.l;
  f.gemvSum(n, g, m) = 0.f;
  if (!spec.transposeWeight) {
    const int slices = int(spec.gpuSchedule.gemvSlices), sliceLen = ceilDiv(K, slices);
    RDom j(0, sliceLen, "j");
    f.gemvDot(n, g, m, s) = 0.f;
    f.gemvDot(n, g, m, s) += f.xGemv(s * sliceLen + j, m) * f.w(n, g, s * sliceLen + j);
    f.gemvPart(n, g, m, s) = f.gemvDot(n, g, m, s);
    RDom rs(0, slices, "rs");
    f.gemvSum(n, g, m) += f.gemvPart(n, g, m, rs);
    f.dotVar = j.x, f.sumVar = rs.x, f.dotLength = sliceLen;
  } else {
    RDom j(0, ceilDiv(K, kCudaLanes), "j");
    f.gemvDot(l, n, g, m) = 0.f;
    f.gemvDot(l, n, g, m) += f.xGemv(j * kCudaLanes + l, m) * f.w(n, g, j * kCudaLanes + l);
    f.gemvPart(l, n, g, m) = f.gemvDot(l, n, g, m);
    RDom rl(0, kCudaLanes, "rl");
    f.gemvSum(n, g, m) += f.gemvPart(rl, n, g, m);
    f.dotVar = j.x, f.sumVar = rl.x, f.dotLength = ceilDiv(K, kCudaLanes);
  }
}

/// Batch GEMVs (kCudaGemvRows < M <= kCudaBatchGemvRows): per bound the GEMV's sums over its
/// rows — [K, N] threads (column, slice s), slice s summing k ≡ s (mod batchSlices), so that a
/// warp's slices read neighbouring rows of W and one sector of x; [N, K] threads (lane,
/// column) as the GEMV — then the slices' or lanes' sums. x is zero past K, rows past M read
/// row M − 1 (their sums are never stored), normalised by statistics of the bound's own.
void defineCudaBatchGemvs(const GemmKernelSpec &spec, const GemmInputs &in, GemmCudaFuncs &f) {
  const int K = int(spec.K);
  const bool norm = spec.prologue != GemmPrologue::None;
  Var n = f.n, m = f.m, g = f.g, s = f.s, l = f.l, k = f.k;
  Expr rows = in.x.dim(1).extent();
  for (int bound : kCudaBatchGemvRowBounds) {
    CudaBatchGemv b;
    const std::string name = "batch" + std::to_string(bound);
    b.rows = bound, b.taken = rows <= bound;
    if (norm)
      b.norm = defineGemmRowNorm(spec, in, name, cudaBatchRowNormShape(spec, bound).lanes);
    b.x = kernelFunc(name + "_x"), b.dot = kernelFunc(name + "_dot");
    b.part = kernelFunc(name + "_partial"), b.sum = kernelFunc(name + "_sum");
    Expr depth = clamp(k, 0, K - 1);
    b.x(k, m) = select(k < K,
                       norm ? normalizedX(spec, in, b.norm, depth, m)
                            : in.x(depth, clamp(m, 0, rows - 1)),
                       0.f);
    b.sum(n, g, m) = 0.f;
    const int stride = cudaBatchGemvBlock(spec).threadsK;
    RDom j(0, ceilDiv(K, stride), name + "_j");
    if (!spec.transposeWeight) {
      b.dot(n, g, m, s) = 0.f;
      b.dot(n, g, m, s) += b.x(j * stride + s, m) * f.w(n, g, j * stride + s);
      b.part(n, g, m, s) = b.dot(n, g, m, s);
      RDom rs(0, stride, name + "_slices");
      b.sum(n, g, m) += b.part(n, g, m, rs);
      b.sumVar = rs.x;
    } else {
      b.dot(l, n, g, m) = 0.f;
      b.dot(l, n, g, m) += b.x(j * stride + l, m) * f.w(n, g, j * stride + l);
      b.part(l, n, g, m) = b.dot(l, n, g, m);
      RDom rl(0, kCudaLanes, name + "_lanes");
      b.sum(n, g, m) += b.part(rl, n, g, m);
      b.sumVar = rl.x;
    }
    b.dotVar = j.x, b.dotLength = ceilDiv(K, stride);
    f.batches.push_back(b);
  }
}

} // namespace

GemmCudaFuncs defineGemmCuda(const GemmKernelSpec &spec, const GemmInputs &in) {
  GemmCudaFuncs f;
  f.gates = spec.gates();
  const int K = int(spec.K), N = int(spec.N);
  Var n = f.n, m = f.m, g = f.g, k = f.k, ks = f.ks;
  ImageParam x = in.x, weight = in.weight;
  Expr rows = x.dim(1).extent();
  f.registerTiles = usesCudaRegisterTiles(spec);
  // x(k, m) as the product reads it, m any row: clamped rows, or with a norm
  // prologue clamped and normalised by the path's statistics (GemmPrologue.h).
  const bool norm = spec.prologue != GemmPrologue::None;
  if (norm) {
    f.gemvNorm = defineGemmRowNorm(spec, in, "gemv",
                                   cudaRowNormShape(spec, true, f.registerTiles).lanes);
    f.tileNorm = defineGemmRowNorm(spec, in, "tile",
                                   cudaRowNormShape(spec, false, f.registerTiles).lanes);
  }
  auto xRow = [&](const GemmRowNorm &stats, Expr kk, Expr mm) {
    return norm ? normalizedX(spec, in, stats, kk, mm) : x(kk, clamp(mm, 0, rows - 1));
  };
  // x zero past K (whole slices); W(n, g, k) as float32 with columns and K
  // clamped (the padded K multiplies x's zeros).
  f.xPadded(k, m) = select(k < K, xRow(f.gemvNorm, clamp(k, 0, K - 1), m), 0.f);
  {
    Expr column = g * N + clamp(n, 0, N - 1), depth = clamp(k, 0, K - 1);
    f.w(n, g, k) =
        widenWeight(spec, spec.transposeWeight ? weight(depth, column) : weight(column, depth));
  }
  Func sum;
  if (f.registerTiles) {
    // Register path: over all of K at once, x's rows clamped, W's columns as stored.
    f.rAll = RDom(0, K, "r");
    f.dot(n, g, m) = 0.f;
    f.dot(n, g, m) += xRow(f.tileNorm, f.rAll, m) * widenWeight(spec, weight(g * N + n, f.rAll));
    sum = f.dot;
    f.splitRows = cudaSplitKRows(spec);
    if (f.splitRows)
      defineCudaSplitK(spec, in, f);
  } else if ((f.nkRegisterTiles = usesCudaNkRegisterTiles(spec))) {
    // [N, K] register path: rows of W and x along K, 4 partial sums per output.
    Var q = f.q;
    f.rQuads = RDom(0, K / 4, "rq");
    Expr depth = 4 * f.rQuads + q;
    f.nkDot(q, n, g, m) = 0.f;
    f.nkDot(q, n, g, m) += x(depth, clamp(m, 0, rows - 1)) *
                           widenWeight(spec, weight(depth, g * N + clamp(n, 0, N - 1)));
    f.nkSum(n, g, m) =
        (f.nkDot(0, n, g, m) + f.nkDot(1, n, g, m)) + (f.nkDot(2, n, g, m) + f.nkDot(3, n, g, m));
    sum = f.nkSum;
  } else {
    // Staged path: per K slice a register-tiled partial product, added into the block's
    // accumulators.
    if (norm)
      f.xTile(k, m) = select(k < K, xRow(f.tileNorm, clamp(k, 0, K - 1), m), 0.f);
    else
      f.xTile(k, m) = f.xPadded(k, m);
    f.wTile(n, g, k) = f.w(n, g, k);
    const int sliceK = int(spec.gpuSchedule.sliceK);
    f.rk = RDom(0, sliceK, "rk");
    f.sliceDot(n, g, m, ks) = 0.f;
    f.sliceDot(n, g, m, ks) += f.xTile(ks * sliceK + f.rk, m) * f.wTile(n, g, ks * sliceK + f.rk);
    f.rs = RDom(0, ceilDiv(K, sliceK), "slice");
    f.prod(n, g, m) = 0.f;
    f.prod(n, g, m) += f.sliceDot(n, g, m, f.rs);
    sum = f.prod;
  }
  if (spec.mergeHeads)
    defineCudaRangeMerge(spec, in, f);
  else
    f.xGemv = f.xPadded;
  defineCudaGemv(spec, f);
  defineCudaBatchGemvs(spec, in, f);
  auto epilogue = [&](Func total) {
    return gemmEpilogue(spec, in, total(n, 0, m), f.gates == 2 ? total(n, 1, m) : Expr(), n, m);
  };
  f.rows = rows;
  f.gemv = rows <= kCudaGemvRows;
  Expr general = epilogue(sum);
  if (f.splitRows)
    general = select(rows < f.splitRows, epilogue(f.splitSum), general);
  for (auto b = f.batches.rbegin(); b != f.batches.rend(); ++b)
    general = select(b->taken, epilogue(b->sum), general);
  f.out(n, m) = select(f.gemv, epilogue(f.gemvSum), general);
  return f;
}

} // namespace mlir::xf
