//===- HalideKernels.h - Halide generators for GEMMs and attention -*- C++ -*-===//
//
// The kernels xf hands to Halide: a GEMM with a fused epilogue and a
// flash-style multi-head attention. Each generator builds a Halide pipeline
// from a spec and a schedule and AOT-compiles it to an object file that
// follows the calling convention of docs/abi.md (matrices [rows, cols]
// row-major are buffers with dim 0 = cols, stride 1, and dim 1 = rows).
//
// Halide.h stays out of this header so MLIR translation units do not pay for it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_HALIDEKERNELS_H
#define XF_CODEGEN_HALIDEKERNELS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::xf {

/// SwiGlu is gated: the weight (and bias) hold 2·N columns [gate | up] and the
/// result is silu(x·W_gate + b_gate) ⊙ (x·W_up + b_up), [M, N].
enum class GemmEpilogue { None, Relu, GeluTanh, GeluErf, Silu, SwiGlu };

/// A row norm of x in the GEMM's prologue (CUDA only): LayerNorm
/// (x − mean) / sqrt(var + ε) ⊙ γ + β or RMSNorm x / sqrt(mean(x²) + ε) ⊙ γ.
enum class GemmPrologue { None, LayerNorm, RmsNorm };

/// A weight kept in one of ggml's block formats (GGUF files; docs/checkpoints.md):
/// each row of K weights is K/32 blocks of 32, stored back to back.
///   Q8_0: {f16 d; int8 q[32]}             34 bytes, w = d·q
///   Q4_0: {f16 d; u8 q[16]}               18 bytes, w = d·(q − 8)
///   Q4_1: {f16 d; f16 m; u8 q[16]}        20 bytes, w = d·q + m
/// (4-bit: byte j holds element j in its low nibble, element j + 16 in its high one.)
enum class WeightBlocks { None, Q8_0, Q4_0, Q4_1 };

/// Bytes per block of 32 weights (0 for None).
inline int64_t weightBlockBytes(WeightBlocks blocks) {
  switch (blocks) {
  case WeightBlocks::None:
    return 0;
  case WeightBlocks::Q8_0:
    return 34;
  case WeightBlocks::Q4_0:
    return 18;
  case WeightBlocks::Q4_1:
    return 20;
  }
  return 0;
}

/// "q8_0", "q4_0", "q4_1" ("f32" for None): the manifest dtype and signature spelling.
inline const char *weightBlocksName(WeightBlocks blocks) {
  switch (blocks) {
  case WeightBlocks::None:
    return "f32";
  case WeightBlocks::Q8_0:
    return "q8_0";
  case WeightBlocks::Q4_0:
    return "q4_0";
  case WeightBlocks::Q4_1:
    return "q4_1";
  }
  return "f32";
}

/// How a GEMM is tiled. The defaults are the measured good schedule
/// (docs/bench.md); the tuner changes them.
struct GemmSchedule {
  int64_t tileCols = 48, tileRows = 8; // register block (cols vectorized)
  int64_t kBlock = 256;                // K blocking (defaultGemmSchedule: defaultKBlock)
  bool packWeights = true;             // staged, tile-major copy of the weight panel per K block
  int64_t rowsPerTask = 256;           // parallel split over rows (rows sharing one packed panel)
  /// Columns per parallel task (a multiple of tileCols); 0 picks a panel so
  /// that there are enough tasks for two threads and the packed K block of the
  /// panel fits in L2.
  int64_t panelCols = 0;
  /// M below this (decode-time GEMV) takes a path without packing or row
  /// tiles that streams the weight once, parallel over columns; selected at
  /// run time inside the same function. 0 disables it.
  int64_t gemvRowsBelow = 4;
  /// GEMV: rows of W streamed per pass (independent FMA chains / streams).
  int64_t gemvRowsPerPass = 16;
  /// GEMV: parallel tasks over columns; 0 picks two for [K, N] and tasks of
  /// ~256 KiB of W for [N, K].
  int64_t gemvTasks = 0;
};

/// The CUDA GEMM's schedule (GemmScheduleCuda.cpp, #xf.gpu_gemm_schedule);
/// the defaults are the fixed schedule of docs/gpu.md. Fixed, not knobs: a
/// register-path thread's 4 columns (one 16-byte load), M <= 4 for the
/// GEMV path, 32 lanes per [N, K] GEMV column (a warp).
struct GpuGemmSchedule {
  /// [K, N] weights whose N is a multiple of regTileCols take the register
  /// path (accumulators in registers over all of K); false: the staged path.
  bool registerTiles = true;
  int64_t regTileCols = 64, regTileRows = 8; // register path: a block's tile
  int64_t regTallRows = 512;                 // from this M on, blocks of regTallTileRows rows
  int64_t regTallTileRows = 32;
  int64_t regThreadRows = 4; // a thread's tile: 4 columns × this
  int64_t regUnrollK = 8;    // K unrolled (when it divides K)
  int64_t tileCols = 64, tileRows = 32;    // staged path: a block's tile
  int64_t threadCols = 4, threadRows = 4;  // staged path: a thread's register tile
  int64_t sliceK = 16;                     // staged path: K per shared-memory stage
  int64_t gemvCols = 32, gemvSlices = 16;  // [K, N] GEMV block: columns × K slices
  int64_t gemvLaneCols = 8;                // [N, K] GEMV block: columns (× 32 lanes)
  /// Register path, split K: a launch of fewer than regFillBlocks blocks (M small, N narrow)
  /// splits each block's K over regSplitK groups of threads (1: never; GemmScheduleCuda.cpp).
  int64_t regSplitK = 4;
  int64_t regFillBlocks = 264; // 2 blocks a SM of a 132-SM GPU (H100 SXM / H200)
  /// [N, K] register path: a thread's rows (SwiGLU: half), 4 columns × 4 partial sums each;
  /// 2 keeps GPT-2's and Llama's kernels under 128 registers (4: 167).
  int64_t nkThreadRows = 2;
  /// Batch GEMV (4 < M <= 16: a decode step of several sequences), the widest block: [K, N]
  /// batchCols columns × batchSlices K slices (slice s reads k ≡ s mod batchSlices), [N, K]
  /// batchLaneCols columns × 32 lanes; narrowed per GEMM where N / columns would launch fewer
  /// than regFillBlocks blocks (GemmAlgorithm.h, cudaBatchGemvBlock).
  int64_t batchCols = 16, batchSlices = 16, batchLaneCols = 8;
};

/// The shape of a CPU's vector unit, which the default schedules follow.
struct VectorShape {
  int64_t floatsPerVector = 16; // 16 with AVX-512, 8 with AVX2, 4 with SSE/NEON
  int64_t registers = 32;       // 32 zmm with AVX-512, 16 ymm with AVX2
};

/// The default K block: all of K up to 1536, else equal blocks of at most
/// 1536; even (bf16 pairs). One block per register tile means its
/// accumulators leave the registers once, not once per block: single-thread
/// CPU time with weights packed at load, GPT-2 small at ℓ = 128, 1536 or K
/// against 256 was 3-8 % faster on every shape, fp32 and bf16 (docs/bench.md).
inline int64_t defaultKBlock(int64_t K) {
  constexpr int64_t maxBlock = 1536;
  const int64_t blocks = std::max<int64_t>(1, (K + maxBlock - 1) / maxBlock);
  const int64_t block = (K + blocks - 1) / blocks;
  return std::max<int64_t>(2, block + block % 2);
}

/// The default GEMM schedule for a vector unit: a register block of
/// accumulators that leaves room for the weight vectors and the broadcast
/// (32 registers: 3 vectors × 8 rows; 16 registers: 2 vectors × 6 rows).
/// A weight in ggml blocks is dequantized into a float32 packed block per K
/// block on every call, so there K blocks stay at 256: with K (576, 1536)
/// SmolLM2 Q4_1's 128-token prefill took 186-197 ms against 174-179 ms and
/// peaked at 122.5 against 117.9 MiB resident (glibc keeps the larger
/// per-call temporaries in its per-thread heaps; 2 threads, 3 interleaved
/// runs).
inline GemmSchedule defaultGemmSchedule(const VectorShape &shape, int64_t K,
                                        WeightBlocks blocks = WeightBlocks::None) {
  GemmSchedule s;
  if (shape.registers >= 32) {
    s.tileCols = 3 * shape.floatsPerVector, s.tileRows = 8;
  } else {
    s.tileCols = 2 * shape.floatsPerVector, s.tileRows = 6;
  }
  s.kBlock = blocks == WeightBlocks::None ? defaultKBlock(K) : std::min<int64_t>(K, 256);
  return s;
}

/// The fewest columns of a default [K, N] GEMV block: 32 bytes of a W row, a DRAM sector.
constexpr int64_t kCudaGemvMinCols = 8;

/// A CUDA GEMM's default schedule (xf-assign-schedules): GpuGemmSchedule's, except that a
/// [K, N] GEMV's columns are halved (down to kCudaGemvMinCols, its K slices doubled: the
/// block's threads and W's loads in flight a block kept) while N / columns is under
/// regFillBlocks, so that more SMs stream W (GPT-2 small's N = 768 GEMVs: 96 blocks, not 24;
/// QKV 288, not 72) — unless the GEMM reads an attention's output alone (`mayMergeRanges`):
/// there the GEMV may merge flash-decoding's key ranges, each block all of x
/// (CudaRangeMerge.cpp), and few blocks pay.
inline GpuGemmSchedule defaultGpuGemmSchedule(int64_t N, bool nkWeight, bool mayMergeRanges) {
  GpuGemmSchedule s;
  while (!nkWeight && !mayMergeRanges && s.gemvCols / 2 >= kCudaGemvMinCols &&
         (N + s.gemvCols - 1) / s.gemvCols < s.regFillBlocks) {
    s.gemvCols /= 2;
    s.gemvSlices *= 2;
  }
  return s;
}

struct GemmKernelSpec {
  std::string name;             // exported function name
  int64_t K = 0, N = 0;         // x: [M, K] with M dynamic (runtime), out: [M, N]
  bool transposeWeight = false; // weight stored [N, K] (nn.Linear) instead of [K, N]
  /// The weight buffer holds bfloat16, halide_type_t{halide_type_bfloat (code 4),
  /// 16 bits, 1 lane}, in the same layout; it is widened to float32 exactly on
  /// load, and all products and sums are float32.
  bool bf16Weights = false;
  /// With bf16Weights: the GEMM path (M >= gemvRowsBelow) also rounds x to
  /// bfloat16 (nearest even) and multiplies bf16 pairs with float32 sums,
  /// i.e. vdpbf16ps where the target has AVX512-BF16 (Halide features
  /// avx512_zen4 or avx512_sapphirerapids; elsewhere the same arithmetic
  /// in float32 instructions). The GEMV path keeps x in float32.
  bool bf16Activations = false;
  /// The weight buffer holds ggml blocks (uint8, dim 0 = the K/32 blocks of a
  /// row in bytes, dim 1 = rows): only with transposeWeight (rows of W are the
  /// output columns, blocks run along K) and K a multiple of 32. The kernels
  /// dequantize blocks as they read them: the GEMV path streams the blocks
  /// (d·Σ x·q + m·Σ x per block), the GEMM path dequantizes a K block of the
  /// panel to float32 before packing it. Products and sums are float32.
  WeightBlocks weightBlocks = WeightBlocks::None;
  /// The weight arrives packed once at load (by the `<name>_pack` function
  /// compiled beside the kernel) instead of per call: tile-major, buffer
  /// (nj, k, nt) = W(nt·tileCols + nj, k) with tileCols × K × packedTiles()
  /// elements of the stored type, zero past column N; gated, gate and up
  /// tiles alternate. With bf16Activations the rows of K come in pairs, the
  /// layout the 2-way bf16 dot product reads: (r + 2·nj, kk, nt) =
  /// W(nt·tileCols + nj, 2·kk + r), zero past K (packedWeightShape()). Both
  /// paths read it: the GEMM's register tiles, and the GEMV, which streams
  /// one tile's block at a time. Needs schedule.packWeights and no weight
  /// blocks.
  bool packedWeight = false;
  bool hasBias = false, hasResidual = false;
  GemmEpilogue epilogue = GemmEpilogue::None; // out = act(x·W + b) + residual
  GemmSchedule schedule;
  GpuGemmSchedule gpuSchedule; // CUDA targets only
  /// x's rows normalised as the kernel reads them (xf-fuse-norm-into-gemm;
  /// CUDA only), with γ (normGamma) and β (normBeta), [K] inputs after the
  /// residual; every thread block recomputes the statistics of its rows.
  GemmPrologue prologue = GemmPrologue::None;
  bool normGamma = false, normBeta = false;
  double normEpsilon = 0;
  /// CUDA: at M <= 4 (the GEMV path) x is not read but merged from flash-decoding's
  /// key-range partials of the attention before it (CudaDecodePartials of mergeHeads heads of
  /// K / mergeHeads columns and mergeRanges ranges), an input after the norm's, so that a
  /// decode step launches no merge (docs/gpu.md); 0: x as given.
  int64_t mergeHeads = 0, mergeRanges = 0;

  /// W's column blocks a column of out reads: SwiGLU's two [gate | up], else one.
  int gates() const { return epilogue == GemmEpilogue::SwiGlu ? 2 : 1; }
};

/// GEMV blocks (M <= 4) up to which a CUDA GEMM merges flash-decoding's key ranges itself:
/// each block merges all of x from the partials (CudaRangeMerge.cpp).
constexpr int64_t kCudaRangeMergeBlocks = 32;
/// Columns of a CUDA GEMV block: gemvCols ([K, N]: × gemvSlices K slices) or gemvLaneCols
/// ([N, K]: × 32 lanes). An [N, K] GEMV that merges key ranges widens its blocks to
/// ⌈N / kCudaRangeMergeBlocks⌉ columns, so that few blocks merge x (SmolLM2's output
/// projection: 18 columns, 32 blocks, not 72); beyond 32 columns (1,024 threads) it does not.
inline int64_t cudaGemvBlockCols(const GemmKernelSpec &spec) {
  if (!spec.transposeWeight)
    return spec.gpuSchedule.gemvCols;
  if (!spec.mergeHeads)
    return spec.gpuSchedule.gemvLaneCols;
  return std::max(spec.gpuSchedule.gemvLaneCols,
                  (spec.N + kCudaRangeMergeBlocks - 1) / kCudaRangeMergeBlocks);
}

/// Whether a GEMM whose weight is a constant of the model can take it packed
/// at load (GemmKernelSpec::packedWeight).
inline bool canPackWeightAtLoad(const GemmKernelSpec &spec) {
  return spec.schedule.packWeights && spec.weightBlocks == WeightBlocks::None;
}

/// Register tiles of a packed weight: ⌈N / tileCols⌉, twice that when gated.
inline int64_t packedTiles(const GemmKernelSpec &spec) {
  int64_t tiles = (spec.N + spec.schedule.tileCols - 1) / spec.schedule.tileCols;
  return spec.gates() * tiles;
}

/// A packed weight as a dense 3-D buffer (lane, row, tile): `lanes`
/// contiguous elements per row, `rows` rows per tile. Plain: tileCols lanes ×
/// K rows; bf16 pairs: 2·tileCols lanes × ⌈K / 2⌉ rows.
struct PackedWeightShape {
  int64_t lanes, rows, tiles;
};
inline PackedWeightShape packedWeightShape(const GemmKernelSpec &spec) {
  if (spec.bf16Activations)
    return {2 * spec.schedule.tileCols, (spec.K + 1) / 2, packedTiles(spec)};
  return {spec.schedule.tileCols, spec.K, packedTiles(spec)};
}

/// Bytes of a packed weight.
inline int64_t packedWeightBytes(const GemmKernelSpec &spec) {
  PackedWeightShape shape = packedWeightShape(spec);
  return shape.lanes * shape.rows * shape.tiles * (spec.bf16Weights ? 2 : 4);
}

struct AttentionSchedule {
  int64_t queryBlock = 64, keyBlock = 64;
  int64_t rowTile = 4;       // query rows per register tile of Q·Kᵀ and P·V
  int64_t decodeKeyTile = 4; // decode path: keys per dot-product register block
};

/// The CUDA attention's schedule (AttentionKernelCuda.cpp, AttentionDecodeCuda.cpp,
/// #xf.gpu_attention_schedule); the defaults are the fixed sizes the kernels had before it.
struct GpuAttentionSchedule {
  int64_t queryBlock = 16;     // prefill: queries per block (32 column threads × these rows)
  int64_t keyBlock = 32;       // prefill: keys staged and scored per step
  int64_t decodeKeyBlock = 32; // flash-decoding's range pass (and the batched one): keys a step
  /// The range pass's blocks at least (ranges × head blocks): 2 a SM of a 132-SM H100/H200.
  int64_t decodeBlocks = 264;
  int64_t decodeBlockHeads = 4; // query heads of one K/V head a range block computes at most
};

/// The default attention schedule: a score tile of 4 vectors × rowTile rows (P·V's tile
/// has fewer rows where its accumulators would fill the registers: valueRowTile). With 16
/// registers (AVX2), query blocks of 32 and 3-row tiles: against the former 64 × 2 (P·V 2
/// rows), GPT-2 small's attention took 16 % less time at ℓ = 128 and 24 % less at ℓ = 1024
/// on a Zen 4 running AVX2 code. With P·V at one row in both, 3-row score tiles gain 12 % at
/// ℓ = 1024 and lose 11 % at ℓ = 128, where attention is ~3 % of the forward (docs/bench.md).
inline AttentionSchedule defaultAttentionSchedule(const VectorShape &shape) {
  AttentionSchedule s;
  s.keyBlock = 4 * shape.floatsPerVector;
  const bool wide = shape.registers >= 32;
  s.queryBlock = wide ? 64 : 32;
  s.rowTile = wide ? 4 : 3;
  return s;
}

/// The default schedule of a segmented (packed-batch) attention, whose
/// sequences are often short (sentences of ~15 tokens): query blocks of 16
/// rows, key blocks of one vector, 6-row register tiles — at 16 rows per
/// sequence `xfc tune` found this 2.1x faster than the default's 64-row blocks.
inline AttentionSchedule defaultSegmentedAttentionSchedule(const VectorShape &shape) {
  AttentionSchedule s;
  s.queryBlock = 16;
  s.keyBlock = shape.floatsPerVector;
  s.rowTile = shape.registers >= 32 ? 6 : 3;
  return s;
}

/// The x86 vector features Halide's host target names that this CPU or its OS does not enable
/// (a VM hiding AVX-512 from a Zen 4), which xf's "host" leaves out (HostTarget.cpp); empty
/// where Halide's host target is right.
std::vector<std::string> hostFeaturesLeftOut();

/// The vector unit of a Halide target string ("host" = this machine).
llvm::Expected<VectorShape> vectorShapeOf(llvm::StringRef target);

/// The widest 8-bit dot-product instructions that decode GEMMs on weight blocks may use
/// (xfc --q8-gemm-inputs; numbered as xfrt::BlockDotIsa in runtime/include/xfrt/BlockGemv.h):
/// 3 AVX-512 VNNI, 2 AVX-VNNI, 1 AVX2, 0 portable code only. "host" allows all, and the
/// executable picks what its CPU has when it runs; an explicit target allows what it names.
llvm::Expected<int> blockDotIsaCeiling(llvm::StringRef target);

/// The widest instructions a decode step's attention in libxfrt (xfrt_decode_attention) may use,
/// numbered as xfrt::AttentionIsa (runtime/include/xfrt/DecodeAttention.h): 2 AVX-512, 1 AVX2
/// (with FMA and F16C); -1 where the target has neither (the Halide kernel's vectors beat the
/// portable loop). "host" is this machine's features; the executable picks what its CPU has
/// when it runs, up to the ceiling.
llvm::Expected<int> decodeAttentionIsaCeiling(llvm::StringRef target);

struct AttentionKernelSpec {
  std::string name;
  int64_t heads = 1, dK = 0, dV = 0; // q: [M, H·dK], out: [M, H·dV]; k, v: 3-D (column,
                                     // key, K/V head) of extents (dK | dV, Mz, H_kv), any
                                     // key and head strides; M, Mz dynamic
  int64_t kvHeads = 0;               // H_kv (divides H): query head h reads K/V head
                                     // h / (H / H_kv); 0 means H (plain MHA)
  int64_t keyValueHeads() const { return kvHeads > 0 ? kvHeads : heads; }
  bool causal = false;               // query t sees keys t' <= t + (Mz - M)
  double scale = 1.0;                // usually 1/sqrt(dK)
  // Rotary positions (xf.attention `rope`): Q rows rotated as loaded, row t
  // at position t + (Mz - M); K rows too (key s at s) unless ropeKeys is
  // false — a KV cache holds keys already rotated.
  enum class Rope { None, Adjacent, Halves } rope = Rope::None;
  double ropeBase = 10000.0;
  bool ropeKeys = true;
  // Also export `<name>_batched`: one decode step of n sequences on their own
  // KV caches in one call (q: [n, H·dK], row i sequence i's newest query at
  // position starts[i]; K/V caches (c, position, kv head, slot) with any
  // strides; slots[i] the cache of sequence i; out: [n, H·dV]). Causal only.
  bool batchedDecode = false;
  // K and V (and the batched step's caches) are IEEE float16, widened to float32 as they are
  // read: a KV cache kept in half precision (xfc --kv-cache-type=f16). CPU only.
  bool halfKeyValues = false;
  // A packed batch in one call (SegmentedAttentionKernel.cpp): q, k, v hold n
  // sequences' rows back to back and one more input, `blocks` (int32 [count, 5]),
  // cuts each sequence into query blocks; each attends over its own sequence's keys.
  bool segmented = false;
  AttentionSchedule schedule;
  GpuAttentionSchedule gpuSchedule; // CUDA targets only
};

/// The CUDA attention's flash-decoding (AttentionDecodeCuda.cpp, docs/gpu.md): with at most
/// `rows` query rows, `<name>_decode_ranges` (q, k, v → partials) writes each key range's
/// (output, max, sum) of every query row and head to a device buffer the caller owns, and
/// `<name>` (q, k, v, partials → out) merges them; both take the buffer in every call.
/// Layout: float32 [ranges][heads][rows][columns], columns = dV + 2 (output, max, sum).
struct CudaDecodePartials {
  int64_t columns = 0, rows = 0, heads = 0, ranges = 0;
  int64_t headsPerBlock = 0; // query heads of one K/V head that one block computes
  int64_t floats() const { return columns * rows * heads * ranges; }
};
/// Ranges fixed per kernel (the buffer's size known when the program is built), enough that
/// H / headsPerBlock × ranges >= the schedule's decodeBlocks; headsPerBlock the largest divisor
/// of the group up to its decodeBlockHeads.
inline CudaDecodePartials cudaDecodePartialsOf(const AttentionKernelSpec &spec) {
  CudaDecodePartials shape;
  const int64_t heads = std::max<int64_t>(spec.heads, 1);
  const int64_t group = heads / std::max<int64_t>(spec.keyValueHeads(), 1);
  const GpuAttentionSchedule &sched = spec.gpuSchedule;
  shape.headsPerBlock = 1;
  for (int64_t g = std::min(group, sched.decodeBlockHeads); g > 1 && shape.headsPerBlock == 1; --g)
    if (group % g == 0)
      shape.headsPerBlock = g;
  const int64_t headBlocks = heads / shape.headsPerBlock;
  shape.ranges = std::max<int64_t>(1, (sched.decodeBlocks + headBlocks - 1) / headBlocks);
  shape.columns = spec.dV + 2, shape.rows = 4, shape.heads = heads;
  return shape;
}
/// Whether `<name>_decode_ranges` also appends the step's new K and V rows to the cache
/// (K and V heads of one width): it takes (q, k, v, new_k, new_v; start) and outputs the
/// partials as three views (output, max, sum) and the new rows as the cache's two views
/// (AttentionDecodeCuda.cpp, docs/gpu.md "Kernel launches per step"). Keys from `start` on
/// are read from new_k / new_v, the others from k / v. A call that appends nothing passes
/// start = the keys, new_k = k, new_v = v and cudaDecodeAppendDummyFloats() floats after the
/// partials as both row outputs.
inline bool cudaDecodeRangesAppend(const AttentionKernelSpec &spec) { return spec.dK == spec.dV; }
/// The batched decode step of several sequences on the GPU (spec.batchedDecode under a CUDA
/// target; AttentionDecodeCuda.cpp): each sequence's new K/V row appended to its slot by one
/// launch (LoopKernels::appendKeyValuesAt), then `<name>_batched_ranges` (flash-decoding's key
/// ranges per (range, head block, sequence)) and `<name>_batched` (their merge per (head, 4
/// sequences)), each an object of its own. Causal attention over keys rotated in the cache, K
/// and V heads of one width; at most kCudaBatchedMaxSequences sequences a call (the partials,
/// [dV + 2, n, H, ranges] floats, sit in the region after the scratch arena).
constexpr int64_t kCudaBatchedMaxSequences = 64;
inline bool cudaBatchedDecodeHandles(const AttentionKernelSpec &spec) {
  return spec.causal &&
         (spec.rope == AttentionKernelSpec::Rope::None || !spec.ropeKeys) &&
         cudaDecodeRangesAppend(spec) && !spec.halfKeyValues;
}
enum class CudaBatchedPart { Ranges, Merge };
inline std::string cudaBatchedName(const AttentionKernelSpec &spec, CudaBatchedPart part) {
  return spec.name + (part == CudaBatchedPart::Ranges ? "_batched_ranges" : "_batched");
}
llvm::Error compileAttentionBatchedKernel(const AttentionKernelSpec &spec, CudaBatchedPart part,
                                          llvm::StringRef target, llvm::StringRef objectPath);
/// The rows' outputs of a range pass that appends nothing: rows × dV floats after the partials.
inline int64_t cudaDecodeAppendDummyFloats(const CudaDecodePartials &shape) {
  return shape.rows * (shape.columns - 2);
}
inline std::string cudaDecodeRangesName(const AttentionKernelSpec &spec) {
  return spec.name + "_decode_ranges";
}
/// One output of the appending range pass (cudaDecodeRangesAppend) as the call passes it:
/// `offset` floats past its base, dims (column, row, head in group, K/V head, range) as
/// (extent, stride). Extent kCudaViewRows: the call's query rows; stride
/// kCudaViewRowsHeadStride: the K/V head stride of where the new rows go (0 where the call
/// appends nothing: the dummy rows after the partials).
struct CudaRangeOutputView {
  int64_t offset = 0;
  std::pair<int64_t, int64_t> dims[5];
};
constexpr int64_t kCudaViewRows = -1, kCudaViewRowsHeadStride = -2;
/// The five outputs in argument order: the ranges' output, max and sum as views of the
/// partials (base: the partials), then the new K and V rows (base: where they go), hi and the
/// range of stride 0 — every block of a K/V head writes its rows. The host lowering's call
/// (CudaAttentionCall.cpp) and `xfc tune --target cuda`'s timing program both pass these.
inline std::array<CudaRangeOutputView, 5> cudaDecodeRangeOutputs(const AttentionKernelSpec &spec) {
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  const int64_t group = shape.heads / spec.keyValueHeads(), kvHeads = spec.keyValueHeads();
  const int64_t dV = spec.dV, columns = shape.columns, headFloats = columns * shape.rows;
  std::array<CudaRangeOutputView, 5> views;
  for (int64_t element = 0; element < 3; ++element) // output, max, sum
    views[size_t(element)] = {element == 0 ? 0 : dV + element - 1,
                              {{dV, element == 0 ? 1 : 0},
                               {kCudaViewRows, columns},
                               {group, headFloats},
                               {kvHeads, headFloats * group},
                               {shape.ranges, headFloats * shape.heads}}};
  for (size_t rows = 3; rows < 5; ++rows)
    views[rows] = {0,
                   {{dV, 1},
                    {kCudaViewRows, dV},
                    {group, 0},
                    {kvHeads, kCudaViewRowsHeadStride},
                    {shape.ranges, 0}}};
  return views;
}

/// The work of one kernel call as a function of its rows M and (attention)
/// context rows Mz: floating-point operations, and the bytes a roofline
/// charges it — the weights (GEMM) or K/V rows (attention) read once plus
/// the activations read and written. One rule for the tuner's roofline, the
/// tune worker's GB/s and the executables' --profile.
struct KernelWork {
  double flopsPerRow = 0, flopsPerRowPerContextRow = 0;
  double weightBytes = 0;        // read once per call, whatever M
  double bytesPerRow = 0;        // activations in and out
  double bytesPerContextRow = 0; // K and V rows (attention)
  double flops(double rows, double context = 0) const {
    return flopsPerRow * rows + flopsPerRowPerContextRow * rows * context;
  }
  double bytes(double rows, double context = 0) const {
    return weightBytes + bytesPerRow * rows + bytesPerContextRow * context;
  }
  /// What a decode step streams from memory: the weights, or K and V.
  double streamedBytes(double context = 0) const {
    return weightBytes + bytesPerContextRow * context;
  }
};

inline KernelWork kernelWork(const GemmKernelSpec &g) {
  // A gated (SwiGLU) GEMM multiplies by 2·N weight columns [gate | up].
  double columns = double(g.N) * g.gates();
  KernelWork w;
  w.flopsPerRow = 2.0 * double(g.K) * columns;
  w.weightBytes = g.weightBlocks != WeightBlocks::None
                      ? double(g.K / 32) * columns * double(weightBlockBytes(g.weightBlocks))
                      : double(g.K) * columns * (g.bf16Weights ? 2 : 4);
  w.bytesPerRow = 4.0 * double(g.K + g.N * (g.hasResidual ? 2 : 1));
  return w;
}

inline KernelWork kernelWork(const AttentionKernelSpec &a) {
  KernelWork w;
  w.flopsPerRowPerContextRow = 2.0 * double(a.heads * (a.dK + a.dV)); // Q·Kᵀ and P·V
  w.bytesPerRow = 4.0 * double(a.heads * (a.dK + a.dV));              // Q in, out
  w.bytesPerContextRow = (a.halfKeyValues ? 2.0 : 4.0) * double(a.keyValueHeads() * (a.dK + a.dV));
  return w;
}

/// A loop kernel (xf/Codegen/LoopKernels.h) as a Halide CUDA
/// pipeline: under a CUDA target every norm, softmax, gather, elementwise op
/// and layout copy runs on the device too (LoopKernelsCuda.cpp, docs/gpu.md).
/// Arguments: the kernel's matrices as buffers (inputs, then its scalars as
/// int32, then the output), in the order of the LoopKernels function.
enum class DeviceLoopKind {
  Gather,    // (table, ids, out): out[t] = table[ids[t]]; flag: bf16 table
  Position,  // (table, offset, out): out[t] = table[offset + t]
  // (table, ids, positions, offset, out): out[t] = table[ids[t]] + positions[offset + t], the
  // gather, positions and their sum in one launch; flag: bf16 table
  GatherPositions,
  Sinusoid,  // (offset, out); constant: base
  Add,       // (a, b, out); flag: b is one row, broadcast
  Map,       // (in, out): out = map(in); constant: Scale's factor; ScaleBy: (in, factor, out)
  Silu,      // (in, out)
  Multiply,  // (a, b, out)
  Rotary,    // (in, offset, out); heads × headWidth; constant: base; flag: halves pairs
  Normalize, // (in, [γ, [β]], out); constant: ε; flag: centre (LayerNorm), affineParams
  Softmax,   // (in, out)
  Copy,      // (in, out): any width (copy2d)
  Transpose, // (in, out): out[c, r] = in[r, c] (transpose2d)
  // (keys, values, key cache, value cache): a cached attention's new K and V rows, every
  // head, into the cache in one launch; 3-D (column, row, head) buffers, a Tuple output.
  AppendKeyValues,
};
enum class DeviceMap { Relu, GeluTanh, GeluErf, Scale, ScaleBy /* a run-time f32 factor */ };

struct DeviceLoopKernelSpec {
  std::string name; // exported function name
  DeviceLoopKind kind = DeviceLoopKind::Copy;
  int64_t width = 0; // columns of a row (0 for Copy and Transpose: run-time)
  int64_t heads = 0, headWidth = 0;
  double constant = 0;
  DeviceMap map = DeviceMap::Relu;
  bool flag = false;
  int affineParams = 0;
  /// Position and GatherPositions: row t's position is positions[t] of an int64 buffer (a
  /// packed batch's step table on the device, docs/abi.md) instead of offset + t;
  /// AppendKeyValues: row t goes to that position of slot slots[t] (the caches of every slot,
  /// 4-D: one launch appends a batched decode step's rows).
  bool rowPositions = false;
};

/// "copy", "layer_norm w=768 eps=1e-05 affine=2", ...: the object cache's and -v's description.
std::string kernelSignature(const DeviceLoopKernelSpec &spec);

llvm::Error compileDeviceLoopKernel(const DeviceLoopKernelSpec &spec, llvm::StringRef target,
                                    llvm::StringRef objectPath);

/// Whether `target` (as --target takes it) is a CUDA target.
bool isCudaTarget(llvm::StringRef target);

/// The PTX of a CUDA kernel, for `xfc --emit=ptx`.
llvm::Expected<std::string> describeGemmKernelPtx(const GemmKernelSpec &spec,
                                                  llvm::StringRef target);
/// `mainName`, when given: the name the attention's own pipeline is compiled under (beside an
/// MLIR kernel: attentionFp32Name); its decode ranges and batched step keep spec.name's.
llvm::Expected<std::string> describeAttentionKernelPtx(const AttentionKernelSpec &spec,
                                                       llvm::StringRef target,
                                                       llvm::StringRef mainName = {});
llvm::Expected<std::string> describeDeviceLoopKernel(const DeviceLoopKernelSpec &spec,
                                                     llvm::StringRef target, bool ptx);

// Argument order of the generated function: GEMM (x, weight, [bias],
// [residual], out); attention (q, k, v, out). All float32 buffers (except the
// weight of a bf16Weights GEMM), layout per docs/abi.md. A causal attention
// query that sees no key (only possible when Mz < M) produces zeros.
// A GEMM with packedWeight takes the packed weight (3-D, see packedWeight) and
// its object also exports `<name>_pack(weight, packed)`, run once at load.

llvm::Error compileGemmKernel(const GemmKernelSpec &spec, llvm::StringRef target,
                              llvm::StringRef objectPath);
llvm::Error compileAttentionKernel(const AttentionKernelSpec &spec, llvm::StringRef target,
                                   llvm::StringRef objectPath);
/// A CUDA attention's `<name>_decode_ranges` (CudaDecodePartials) as an object of its own:
/// Halide's device code of two pipelines linked into one module would share one PTX.
llvm::Error compileAttentionRangesKernel(const AttentionKernelSpec &spec, llvm::StringRef target,
                                         llvm::StringRef objectPath);
/// Where Halide's autoscheduler plugins (libautoschedule_*.so) are: $XF_HALIDE_PLUGIN_DIR, or
/// the directory of the libHalide xf was built with (the wheel ships them beside it).
std::string halidePluginDirectory();
/// Halide's Anderson2021 GPU autoscheduler, the baseline of `xfc tune --target cuda`
/// (GemmAnderson2021.cpp): loads its plugin once a process (`pluginPath`, or "" for the one
/// in halidePluginDirectory()); an error naming the path where it cannot be loaded.
llvm::Error loadAnderson2021(llvm::StringRef pluginPath);
/// The SMs Anderson2021 is told to fill (its "parallelism"): an H100/H200's 132, the GPU the
/// schedules' reg_fill_blocks (264: 2 a SM) assume.
constexpr int kAnderson2021Parallelism = 132;
/// `spec.name` as the GEMM's math (no xf path) scheduled by Anderson2021 for `rows` rows
/// (the estimates: the real K, N and M = rows) for the CUDA `target`; the same arguments as
/// compileGemmKernel's. loadAnderson2021 first.
llvm::Error compileGemmKernelAnderson2021(const GemmKernelSpec &spec, int64_t rows,
                                          llvm::StringRef target, llvm::StringRef objectPath);
/// The Halide runtime (thread pool, allocator, halide_set_num_threads) that
/// the kernels, compiled with no_runtime, link against. One per executable.
llvm::Error compileHalideRuntime(llvm::StringRef target, llvm::StringRef objectPath);

/// "host" → the concrete target string of this machine with no_runtime; any
/// other string is validated as a Halide target and gets no_runtime added.
llvm::Expected<std::string> halideTargetString(llvm::StringRef target);

/// The lowered Halide statement (loop nest) of each kernel, for `xfc --emit=halide`.
llvm::Expected<std::string> describeGemmKernel(const GemmKernelSpec &spec, llvm::StringRef target);
llvm::Expected<std::string> describeAttentionKernel(const AttentionKernelSpec &spec,
                                                    llvm::StringRef target,
                                                    llvm::StringRef mainName = {});

} // namespace mlir::xf

#endif // XF_CODEGEN_HALIDEKERNELS_H
