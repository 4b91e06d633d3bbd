//===- TensorCoreGemm.h - GEMMs on NVIDIA tensor cores via MLIR -*- C++ -*-===//
//
// `xfc --target cuda --gpu-matmul=tf32|bf16`: the GEMMs that qualify (tensorCoreGemmPlan) run
// a kernel built in MLIR (gpu + nvgpu mma.sync/ldmatrix → nvvm → PTX by LLVM's NVPTX backend,
// in-process) instead of Halide's fp32 pipeline; docs/gpu.md, "Tensor cores".
//
//===----------------------------------------------------------------------===//

#ifndef XF_TARGET_TENSORCOREGEMM_H
#define XF_TARGET_TENSORCOREGEMM_H

#include "xf/Codegen/HalideKernels.h"
#include "xfrt/GpuGemmAbi.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::xf {

/// What the GEMMs of a CUDA build multiply on (`--gpu-matmul`).
enum class GpuMatmul { Fp32, Tf32, Bf16 };

/// "fp32", "tf32", "bf16".
const char *gpuMatmulName(GpuMatmul precision);
/// The precision gpuMatmulName names (fp32, tf32, bf16); none for another word.
std::optional<GpuMatmul> parseGpuMatmul(llvm::StringRef name);

/// The static shared memory a CUDA kernel may declare; more is dynamic, asked for at launch.
constexpr int kStaticSharedBytes = xfrt::gpu_gemm::kStaticSharedBytes;

/// The tensor-core kernel's fixed tiling: a block of 4 warps (2 × 2) computes a
/// kTcTileRows × kTcTileCols tile of out, each warp 32 × 32 as 2 × 4 mma tiles of 16 × 8;
/// K runs in shared-memory slices of kTcSliceK.
/// (These constants are libxfrt's launcher's too: xfrt/GpuGemmAbi.h.)
constexpr int kTcTileRows = xfrt::gpu_gemm::kTileRows, kTcTileCols = xfrt::gpu_gemm::kTileCols,
              kTcSliceK = xfrt::gpu_gemm::kSliceK, kTcThreads = xfrt::gpu_gemm::kThreads;
/// Below kTcTallRows rows the kernel `<name>_tc32` runs instead: 32-row tiles (4 warps side
/// by side, 32 × 16 each), twice the blocks, so that prefills of a few hundred tokens fill
/// the GPU (GPT-2 small at ℓ = 128: 48-192 blocks instead of 24-96); so it does from
/// kTcTallRows rows where the 64-row grid would give the GPU fewer than 2 blocks an SM (the
/// launcher's choice, TensorCoreLaunch.cpp: GPT-2 small's N = 768 GEMMs at ℓ = 1024).
constexpr int kTcShortTileRows = xfrt::gpu_gemm::kShortTileRows,
              kTcTallRows = xfrt::gpu_gemm::kTallRows;
/// `<name>_tc128`: 128 × 128 tiles, a block of kTcWideThreads threads (8 warps, 4 × 2 of
/// 32 × 64, each 2 × 8 mma.sync tiles), for GEMMs whose 128-tile grid alone gives every SM
/// two blocks (the launcher's choice: long prompts, vocabularies, 4096³): half the shared-memory
/// and L2 traffic a product of the 64 × 64 tiles (docs/gpu.md, "Wide tiles"). Its two buffers of
/// every tile (57-80 KiB) are dynamic shared memory. Built where the slices are cp.async's
/// (f32 weights; bf16 weights with bf16 products); for SwiGLU the tile is 128 × 64 of out
/// (both gates' 128 columns of W: 4 × 2 warps of 32 × 32 a gate, the same 64 accumulators a
/// thread); where N is an odd multiple of 64 the last tile reads W's columns (rows) past N
/// clamped and stores none of them.
constexpr int kTcWideTile = xfrt::gpu_gemm::kWideTile,
              kTcWideThreads = xfrt::gpu_gemm::kWideThreads;
/// fp32's FMA kernel has them too, `<name>_fma128` (FmaGemmSource.cpp: 16 row groups × 16
/// column groups of threads, 8 × 8 sums each, 8 × 4 a gate for SwiGLU; 33-35 KiB of dynamic
/// shared memory).
/// Whether the module has `<name>_tc128` / `<name>_fma128` (not for tf32 from bf16 weights).
bool tensorCoreWideTiles(const GemmKernelSpec &spec, GpuMatmul precision);
/// The dynamic shared memory of `<name>_tc128` (`_fma128`) in bytes; 0 where the module has
/// none.
int64_t tensorCoreWideTileShared(const GemmKernelSpec &spec, GpuMatmul precision);
/// The same of `<name>_fma128` (FmaGemmSource.cpp).
int64_t fmaWideTileShared(const GemmKernelSpec &spec);
/// The module's functions with dynamic shared memory as its header line and `--emit=ptx` say
/// them (", dynamic shared memory: <name>_tc128 N bytes"; the emulator and assemble_ptx.py
/// read it), or "".
/// `sm90a`: with `<name>_wg` where the module has it (its own PTX module's otherwise).
std::string tensorCoreGemmDynamicSharedText(const GemmKernelSpec &spec, GpuMatmul precision,
                                            bool sm90a = true);
/// `<name>_wg` (WgmmaGemmSource.cpp; docs/gpu.md, "Warpgroup GEMM (sm_90a)"): on an sm_90
/// GPU, bf16 products from bf16 weights on `wgmma.mma_async`, one warpgroup per 128 × 128
/// tile, in a gpu.module of its own compiled for sm_90a.
constexpr int kWgTile = xfrt::gpu_gemm::kWgTile, kWgThreads = xfrt::gpu_gemm::kWgThreads,
              kWgSliceK = xfrt::gpu_gemm::kWgSliceK, kWgStages = xfrt::gpu_gemm::kWgStages,
              kWgDynamicShared = xfrt::gpu_gemm::kWgDynamicShared;
/// Its .maxnreg: 128 accumulators a thread and x's next slice (64) in registers; two blocks
/// an SM at most by registers (65536 / (128 × 240)).
constexpr int kWgMaxRegisters = 240;
/// Why the GEMM has no `<name>_wg`, or "" where it has.
std::string wgmmaGemmWhyNot(const GemmKernelSpec &spec, GpuMatmul precision);
/// Its gpu.module `@<name>_wg` (indented as a module's member); its accumulators' type alias
/// `!wgacc`, a line the module text must start with.
std::string wgmmaGemmModule(const GemmKernelSpec &spec);
std::string wgmmaAccumulatorAlias();
/// Its dynamic shared memory as a `dynamic shared memory:` list names it: "<name>_wg N bytes".
std::string wgmmaDynamicSharedEntry(const GemmKernelSpec &spec);
/// The chip a gpu.module named so is compiled for: `_wg` modules sm_90a, others sm_NN.
std::string kernelModuleChip(llvm::StringRef moduleName, int capability);

/// Rows up to this stay on Halide's GEMV path (decode steps), as in GemmKernelCuda.cpp.
constexpr int kTcMinRows = 5;
/// xfrt_tensor_core_gemm's answer when the call is Halide's (fewer than kTcMinRows rows).
constexpr int kTcNotTaken = xfrt::gpu_gemm::kNotTaken;
/// Split-K (docs/gpu.md, "Split-K"): where the 32-row kernel's grid has fewer blocks than the
/// GPU has SMs, libxfrt launches `<name>_tc32_splitk` with S ≤ kTcMaxSplit K ranges (block z),
/// each storing its raw sums to [S][M][cols] partials, then `<name>_tc_reduce`, which sums
/// them in order z = 0..S-1 and applies the epilogue. A grid of kTcSplitMaxBlocks or more is
/// never split (more than the SMs of any GPU to date: H100/H200 132, B200 148, RTX 5090 170),
/// which bounds the rows that split and so the partials the host reserves.
constexpr int kTcMaxSplit = xfrt::gpu_gemm::kMaxSplit,
              kTcSplitMaxBlocks = xfrt::gpu_gemm::kSplitMaxBlocks;
/// The fewest K slices a split range gets by the launcher's own choice (a forced S,
/// $XF_TENSOR_CORE_SPLIT_K, may go down to one).
constexpr int kTcMinSplitSlices = xfrt::gpu_gemm::kMinSplitSlices;
/// The reduction's block: 4 rows × 64 columns, a thread per pair of columns.
constexpr int kTcReduceRows = xfrt::gpu_gemm::kReduceRows;

/// fp32 (--gpu-matmul=fp32): GEMMs of this many rows or more run the FMA kernel built in MLIR
/// (`<name>_fma`, FmaGemmSource.cpp; the same tiles, split-K and launcher); fewer stay on
/// Halide's GEMV (M <= 4) and batch GEMV (4 < M <= 16), which stream W once for every row.
constexpr int kFmaGemmMinRows = 17;

/// One GEMM's path under `precision`: the MLIR kernel's (tensor cores, or for fp32 the FMA
/// kernel), or why it stays on Halide's fp32 pipeline (said by `xfc -v`).
struct TensorCoreGemmPlan {
  bool mlirKernel = false; // a kernel built in MLIR, launched by libxfrt
  std::string why;         // a reason either way, one line
  bool fma = false;        // that kernel is the fp32 FMA one
  const char *path() const {
    return !mlirKernel ? "Halide fp32" : fma ? "fp32 FMA (MLIR)" : "tensor cores";
  }
  /// The fewest rows the MLIR kernel runs (fewer: Halide's pipeline).
  int minRows() const { return fma ? kFmaGemmMinRows : kTcMinRows; }
};
/// (`why` says where the GEMM has `<name>_wg` as well.)
TensorCoreGemmPlan tensorCoreGemmPlan(const GemmKernelSpec &spec, GpuMatmul precision);
/// N is not a multiple of kTcTileCols (the plan takes it for [N, K] weights without bias,
/// residual or SwiGLU: the tied unembedding): the last column tile reads W's last row for the
/// columns past N and stores none of them, one column at a time (out's rows may then be odd
/// lengths), and K is never split.
bool tensorCoreColumnTail(const GemmKernelSpec &spec);

/// The most rows at which the launcher may split K for this GEMM (the 32-row kernel's grid
/// below kTcSplitMaxBlocks blocks, fewer than kTcTallRows rows, two K slices or more); 0 when
/// it never splits.
int64_t tensorCoreSplitRows(const GemmKernelSpec &spec);
/// Floats of split-K partials the host reserves for this GEMM (kTcMaxSplit × its output
/// columns, both gates for SwiGLU, × tensorCoreSplitRows) and hands the launcher.
int64_t tensorCoreSplitPartialFloats(const GemmKernelSpec &spec);

/// The kernels as MLIR (a gpu.module of `<name>_tc`, `<name>_tc32`, where built `<name>_tc128`,
/// and, where the GEMM may split, `<name>_tc32_splitk` and `<name>_tc_reduce`; for fp32 the same
/// with `_fma`: fmaGemmSource), before lowering: `xfc --emit=mlir-gpu`. Needs a spec the plan
/// takes.
std::string tensorCoreGemmSource(const GemmKernelSpec &spec, GpuMatmul precision);
/// fp32's kernels on the FMA units (FmaGemmSource.cpp).
std::string fmaGemmSource(const GemmKernelSpec &spec);
/// The MLIR kernel's entry, `<name>_tc` or (fp32) `<name>_fma`; the launcher derives the
/// others from it (`32`, `32_splitk`, `_reduce`).
std::string mlirGemmEntry(const GemmKernelSpec &spec, GpuMatmul precision);

/// The kernel lowered to NVVM (the LLVM dialect of the gpu.module), or to PTX for `chip`
/// (sm_80 or newer) through LLVM's NVPTX backend.
llvm::Expected<std::string> tensorCoreGemmNvvm(const GemmKernelSpec &spec, GpuMatmul precision,
                                               int capability);
/// `sm90a`, where given, receives the PTX of `<name>_wg` (sm_90a), or stays empty.
llvm::Expected<std::string> tensorCoreGemmPtx(const GemmKernelSpec &spec, GpuMatmul precision,
                                              int capability, std::string *sm90a = nullptr);

/// The object of `spec.name` on the tensor-core path: the PTX embedded, and `spec.name` a
/// host function with the GEMM's Halide ABI and one more buffer, the split-K partials
/// (tensorCoreSplitPartialFloats floats of device scratch), that hands them to libxfrt's
/// xfrt_tensor_core_gemm (runtime/lib/TensorCoreLaunch.cpp), which launches it, or, for
/// M < kTcMinRows, calls `<spec.name>_fp32` (Halide's pipeline, compiled beside it).
llvm::Error compileTensorCoreGemmLauncher(const GemmKernelSpec &spec, GpuMatmul precision,
                                          int capability, llvm::StringRef objectPath);

/// NN of a Halide target string's cuda_capability_NN feature (0 without one).
int cudaCapabilityOf(llvm::StringRef halideTarget);

/// The name Halide's pipeline of a tensor-core GEMM is compiled under.
std::string fp32FallbackName(const GemmKernelSpec &spec);

} // namespace mlir::xf

#endif // XF_TARGET_TENSORCOREGEMM_H
