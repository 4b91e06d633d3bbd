//===- GemmAlgorithm.h - the GEMM's Funcs, for every schedule ---*- C++ -*-===//
//
// out[M, N] = act(x[M, K] · W + bias) + residual as Halide Funcs, defined once
// (GemmAlgorithm.cpp) and scheduled per path: GemmScheduleCpu.cpp (tiled,
// few rows, GEMV; bf16 pairs and GGUF blocks inside them) and
// GemmScheduleCuda.cpp (register, staged, GEMV). GemmKernel.cpp picks the
// schedules. The Funcs of a path are the reductions its schedule places (a
// K block of a register tile, a GEMV's lanes); the weight's access per
// layout and storage, the inputs' shapes and the epilogue are shared.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_GEMMALGORITHM_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_GEMMALGORITHM_H

#include "GemmPrologue.h"
#include "KernelPipelines.h"

namespace mlir::xf {

/// Row tiles up to which a GEMM on a weight packed at load sums over all of K
/// per register tile (the few-rows path).
constexpr int kSmallRowTiles = 4;

/// The GEMM's inputs (docs/abi.md: dim 0 = cols, stride 1), in argument order.
struct GemmInputs {
  Halide::ImageParam x;        // (k, m): [M, K]
  Halide::ImageParam weight;   // (n, k): [K, N], or (k, n): [N, K]; gated 2·N; see below
  Halide::ImageParam bias;     // (n): [N]; gated [2·N]
  Halide::ImageParam residual; // (n, m): [M, N]
  Halide::ImageParam gamma, beta; // (k): [K], the norm prologue's (CUDA)
  Halide::ImageParam partials;    // CudaDecodePartials' layout: the range merge's (CUDA)
};
/// The inputs of `spec`'s kernel: the weight as stored (float32, bfloat16, GGUF
/// block bytes (byte, n)) and packed at load (nj, k, nt) where spec says so.
GemmInputs gemmInputs(const GemmKernelSpec &spec);
/// Sets the buffers' shapes: x [M, K], the weight (stored or packed), bias,
/// residual and `out` [M, N].
void constrainGemmBuffers(const GemmKernelSpec &spec, GemmInputs &in, Halide::Func out);
/// The stored weight element as float32: bfloat16 is the upper half of a
/// float32, so widening is a 16-bit shift (no rounding, vectorizes anywhere).
Halide::Expr widenWeight(const GemmKernelSpec &spec, Halide::Expr stored);
/// float32 `value` rounded to the nearest bfloat16, ties to even (every NaN the quiet 0x7fc0),
/// as the bf16-activation paths round x.
Halide::Expr roundedToBf16(Halide::Expr value);
/// out(n, m) from the products of column n (gate) and, for SwiGLU, of its up
/// column: act(gate + bias) [· (up + bias)] + residual, as spec has them.
Halide::Expr gemmEpilogue(const GemmKernelSpec &spec, const GemmInputs &in, Halide::Expr gate,
                          Halide::Expr up, Halide::Expr n, Halide::Expr m);

/// The CPU GEMM's Funcs: one algorithm, three sums of the product chosen per
/// call by M (the specializations of GemmScheduleCpu.cpp).
struct GemmCpuFuncs {
  // Sizes derived from the spec and its schedule.
  int vw, K, N, tileCols, tileRows, kBlock, fullKBlocks, kTail, kMain, gemvChunk;
  int blockCount, blockChains;
  bool gated, blocks, prePacked, dot, smallRowsPath;
  Halide::Var n{"n"}, m{"m"}, k{"k"}, nj{"nj"}, nt{"nt"}, kb{"kb"}, r{"r"}, kk{"kk"};
  Halide::Var ql{"ql"}, qh{"qh"}, qb{"qb"}, qr{"qr"}, kl{"kl"}, kc{"kc"};
  // The weight as float32 (W(n, k) by column), GGUF blocks dequantized per K
  // block, packed tile-major (nj, k, nt), and in bf16 pairs.
  Halide::Func weightF = kernelFunc("weight_f32"), weightFTail = kernelFunc("weight_f32_tail");
  Halide::Func dequantized = kernelFunc("weight_dequantized"),
               dequantizedTail = kernelFunc("weight_dequantized_tail");
  Halide::Func weightKN, weightKNTail, packed = kernelFunc("packed_weight"),
                                        packedTail = kernelFunc("packed_weight_tail");
  Halide::Func xRows = kernelFunc("x_rows"), xBf16 = kernelFunc("x_bf16"),
               weightPairs = kernelFunc("weight_kn_bf16");
  Halide::Func packedPairs = kernelFunc("packed_weight_pairs");
  // Tiled: Σ over a K block per register tile, then over the blocks and the K tail.
  Halide::Func blockProduct = kernelFunc("block_product"), product = kernelFunc("product"),
               tailProduct = kernelFunc("tail_block_product");
  // GEMV: stored weights (gemvPartial: lanes or block chains), or packed tiles.
  Halide::Func gemvProduct = kernelFunc("gemv_product"), gemvPartial = kernelFunc("gemv_partial"),
               gemvTiles = kernelFunc("gemv_tiles");
  // Few rows: the tiled sums with the loops turned around.
  Halide::Func smallBlock = kernelFunc("small_rows_block"),
               smallTail = kernelFunc("small_rows_tail");
  Halide::Func smallProduct = kernelFunc("small_rows_product");
  Halide::Func out = kernelFunc("out");
  Halide::RDom ki, kPairs, kBlocks, kt, ktPairs;    // tiled and few rows
  Halide::RDom gk, gko, lanes, gkTail, gb, blockLanes, gp; // GEMV
  Halide::Expr rows, gemv, smallRows; // M, and the paths' conditions on it
};
/// Defines the CPU GEMM of a validated `spec` for vectors of `vw` floats.
GemmCpuFuncs defineGemmCpu(const GemmKernelSpec &spec, const GemmInputs &in, int vw,
                           bool nativeHalf);

/// The CUDA GEMM's fixed sizes; the rest are spec.gpuSchedule's
/// (#xf.gpu_gemm_schedule, GemmScheduleCuda.cpp).
constexpr int kCudaRegThreadCols = 4; // register: a thread's columns (one vector load)
constexpr int kCudaGemvRows = 4;      // M up to this takes the GEMV path
constexpr int kCudaLanes = 32;        // [N, K] GEMV: lanes a column (a warp)
constexpr int kCudaGemvUnrollK = 8;   // GEMV: a thread's loads of W in flight at once (at most)
constexpr int kCudaMinSplitDepth = 64; // register path, split K: the shortest K slice
/// The batch GEMVs (kCudaGemvRows < M <= kCudaBatchGemvRows: a decode step of several
/// sequences): one specialization per bound, the smallest taking M first.
constexpr int kCudaBatchGemvRowBounds[] = {8, 16};
constexpr int kCudaBatchGemvRows = 16;
constexpr int kCudaBatchMinCols = 4; // a batch GEMV block's fewest columns (16 bytes of a W row)

/// A batch GEMV block: its columns and its threads along K ([K, N] slices, [N, K] lanes).
struct CudaBatchBlock {
  int cols, threadsK;
};
/// The schedule's widest batch GEMV block, its columns halved (down to kCudaBatchMinCols;
/// [K, N]: its slices doubled, the block's threads kept) while N / columns is under
/// regFillBlocks: a block re-reads all of x (K × rows) for its columns of W, so wide blocks read
/// less of it, narrow ones fill the GPU.
CudaBatchBlock cudaBatchGemvBlock(const GemmKernelSpec &spec);

/// A batch GEMV's Funcs: the GEMV's sums (every row's in a thread's registers, W streamed
/// once) for up to `rows` rows, x read as given (never merged from key ranges), the norm
/// prologue's statistics its own.
struct CudaBatchGemv {
  int rows = 0;
  Halide::Expr taken; // M <= rows (tried after the GEMV and the smaller bounds)
  Halide::Func x, dot, part, sum;
  Halide::RVar dotVar, sumVar;
  int dotLength = 0; // dotVar's trip count
  GemmRowNorm norm;
};

/// The CUDA GEMM's Funcs: gates g (2 for SwiGLU) as a dimension of the sums.
struct GemmCudaFuncs {
  Halide::Var n{"n"}, m{"m"}, g{"g"}, k{"k"}, s{"s"}, l{"l"}, ks{"ks"};
  Halide::Func xPadded = kernelFunc("x_padded"), w = kernelFunc("weight_f32");
  // Staged path: K slices in shared memory, accumulators in shared memory.
  Halide::Func xTile = kernelFunc("x_tile"), wTile = kernelFunc("weight_tile"),
               sliceDot = kernelFunc("slice_dot"), prod = kernelFunc("prod");
  Halide::RDom rk, rs;
  // Register path: each thread's accumulators in registers over all of K.
  Halide::Func dot = kernelFunc("register_dot");
  Halide::RDom rAll;
  // Register path, split K (rows < splitRows): each group s of threads sums a slice of K in
  // registers (splitDot), the groups' sums meet in shared memory (splitPart, splitSum).
  Halide::Func splitDot = kernelFunc("split_dot"), splitPart = kernelFunc("split_partial"),
               splitSum = kernelFunc("split_sum");
  Halide::RVar splitDotVar, splitSumVar;
  int splitRows = 0, splits = 1;
  // [N, K] register path: 4 partial sums per output (k ≡ q mod 4), so that W's and x's rows
  // are read as 4-wide vectors along K; added in nkSum.
  Halide::Var q{"q"};
  Halide::Func nkDot = kernelFunc("register_dot_nk"), nkSum = kernelFunc("register_sum_nk");
  Halide::RDom rQuads;
  bool nkRegisterTiles = false;
  // GEMV path.
  Halide::Func gemvDot = kernelFunc("gemv_dot"), gemvPart = kernelFunc("gemv_partial"),
               gemvSum = kernelFunc("gemv_sum");
  Halide::RVar dotVar, sumVar;
  int dotLength = 0; // dotVar's trip count: a thread's loads of W, one after the other
  Halide::Func out = kernelFunc("out");
  Halide::Expr rows, gemv; // M, and whether it takes the GEMV path
  // The GEMV path's x merged from key-range partials (spec.mergeHeads): per (column, row,
  // head) the ranges' top max and weighted sums (defineRangeMerge), then x.
  Halide::Func mergeTop = kernelFunc("merge_top"), mergeSums = kernelFunc("merge_sums"),
               xGemv = kernelFunc("x_gemv");
  Halide::Var md{"md"}, mt{"mt"}, mh{"mh"};
  Halide::RDom mergeRanges;
  // The norm prologue's row statistics (spec.prologue): the GEMV path's and
  // the tile paths' (register or staged), each computed per thread block.
  GemmRowNorm gemvNorm, tileNorm;
  std::vector<CudaBatchGemv> batches; // one per kCudaBatchGemvRowBounds
  bool registerTiles = false;
  int gates = 1;
};
/// The register path reads W's columns without clamping (vector loads along
/// N): every block tile lies inside N. Taken where spec.gpuSchedule allows it.
bool usesCudaRegisterTiles(const GemmKernelSpec &spec);
/// The [N, K] register path (the tied unembedding, nn.Linear weights): K a multiple of 4, any N
/// (columns clamped). Taken where spec.gpuSchedule allows it.
bool usesCudaNkRegisterTiles(const GemmKernelSpec &spec);
/// The register path's split-K rule: M below this (0: never) launches fewer than
/// gpuSchedule.regFillBlocks blocks of regTileRows rows, so each block splits K
/// regSplitK ways (when K holds regSplitK slices of kCudaMinSplitDepth).
int cudaSplitKRows(const GemmKernelSpec &spec);
/// Defines the CUDA GEMM of a validated `spec`.
GemmCudaFuncs defineGemmCuda(const GemmKernelSpec &spec, const GemmInputs &in);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_GEMMALGORITHM_H
