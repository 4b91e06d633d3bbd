//===- GpuGemmAbi.h - what xfc's MLIR GEMM kernels and libxfrt agree on -*- C++ -*-===//
//
// The MLIR GEMM kernels' tiling (tensor cores and the fp32 FMA kernel; xf/Target/
// TensorCoreGemm.h says what each is for) and the flags xfc's launcher passes
// xfrt_tensor_core_gemm (runtime/lib/TensorCoreLaunch.cpp): the compiler builds kernels of
// these shapes and the runtime launches grids of them, so both read this one definition.
// No dependencies: the runtime includes it as well as the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef XFRT_GPUGEMMABI_H
#define XFRT_GPUGEMMABI_H

#include <cstdint>

namespace xfrt::gpu_gemm {

/// Shared memory a kernel may declare statically; more is dynamic and asked for.
inline constexpr int kStaticSharedBytes = 48 * 1024;
/// A block of kThreads threads per kTileRows × kTileCols tile of out (`<entry>`), K in slices
/// of kSliceK; kShortTileRows × kTileCols below kTallRows rows (`<entry>32`).
inline constexpr int kTileRows = 64, kTileCols = 64, kSliceK = 32, kThreads = 128;
inline constexpr int kShortTileRows = 32, kTallRows = 512;
/// kWideTile × kWideTile tiles of kWideThreads threads (`<entry>128`; SwiGLU's kWideTile ×
/// kTileCols of out), in dynamic shared memory.
inline constexpr int kWideTile = 128, kWideThreads = 256;
/// `<entry>_wg` (sm_90a, wgmma): kWgTile × kWgTile tiles of kWgThreads threads (one
/// warpgroup), K in slices of kWgSliceK, kWgDynamicShared bytes of dynamic shared memory
/// (kWgStages stages of 32 KiB and 1 KiB to align them to 1024 bytes).
inline constexpr int kWgTile = 128, kWgThreads = 128, kWgSliceK = 64, kWgStages = 3;
inline constexpr int kWgDynamicShared = kWgStages * 32768 + 1024;
/// Split-K: at most kMaxSplit ranges of K, never for a grid of kSplitMaxBlocks or more, ranges
/// of kMinSplitSlices slices or more by the launcher's own choice; `<entry>_reduce`'s block is
/// kReduceRows rows × kTileCols columns.
inline constexpr int kMaxSplit = 4, kSplitMaxBlocks = 192, kMinSplitSlices = 4, kReduceRows = 4;
/// Every MLIR kernel (GEMMs and attentions) is lowered with 32-bit indices: a memref's offset,
/// size and stride and each scalar parameter are 32-bit, and so is the address arithmetic
/// (fewer registers and instructions than 64-bit: GPT-2's 128 × 128 FMA tiles fit 128
/// registers, i.e. 2 blocks an SM). So libxfrt launches an MLIR kernel only where every
/// operand's elements, plus kIndexSlack times its largest stride (a tile's rows or keys past
/// the operand's end, whose addresses a kernel may form before clamping them), stay below 2^31.
inline constexpr int kKernelIndexBits = 32;
inline constexpr int64_t kIndexSlack = 256, kIndexLimit = int64_t(1) << 31;
/// xfrt_tensor_core_gemm's answer where the call is left to Halide's pipeline beside it.
inline constexpr int kNotTaken = 1;

/// xfrt_tensor_core_gemm's `flags`: what the GEMM has (bias, residual, bf16 weights, SwiGLU's
/// two gates, W stored [N, K], split-K kernels in the PTX, a column tail, a norm prologue).
inline constexpr int64_t kBias = 1, kResidual = 2, kBf16Weights = 4, kGated = 8, kWeightNK = 16,
                         kSplitKernels = 32, kColumnTail = 64, kNorm = 128;

} // namespace xfrt::gpu_gemm

#endif // XFRT_GPUGEMMABI_H
