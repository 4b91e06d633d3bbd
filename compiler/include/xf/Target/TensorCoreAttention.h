//===- TensorCoreAttention.h - prefill attention on tensor cores -*- C++ -*-===//
//
// The prefill attentions of a CUDA build that qualify (tensorCoreAttentionPlan) run a flash
// attention built in MLIR (gpu + nvgpu/nvvm, shuffles → PTX by LLVM's NVPTX backend, as the
// tensor-core GEMM) for prompts of kTcAttentionMinRows rows or more: on tensor cores
// (mma.sync, ldmatrix) with `--gpu-matmul=tf32|bf16`, on the FMA units in float32 with the
// default fp32 (FmaAttentionSource.cpp); decode steps keep Halide's flash-decoding.
// docs/gpu.md, "Tensor-core attention" and "Attention, fp32: the FMA kernel".
//
//===----------------------------------------------------------------------===//

#ifndef XF_TARGET_TENSORCOREATTENTION_H
#define XF_TARGET_TENSORCOREATTENTION_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/Target/TensorCoreGemm.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::xf {

/// The kernel's tiling: a block of 4 warps per (query head, kTcAttentionQueries queries),
/// each warp 16 query rows; keys in tiles of kTcAttentionKeys staged in shared memory.
constexpr int kTcAttentionQueries = 64, kTcAttentionKeys = 64, kTcAttentionThreads = 128;
/// Query rows below this stay on Halide's flash-decoding (its partials are sized for at most
/// cudaDecodePartialsOf(spec).rows = 4 rows).
constexpr int kTcAttentionMinRows = 5;
/// Head sizes taken: powers of two from 16 up to these (the Q fragments and output
/// accumulators of 16 rows are held in registers, tf32's Q fragments twice bf16's).
constexpr int kTcAttentionMaxHeadBf16 = 128, kTcAttentionMaxHeadTf32 = 64;

/// Head sizes the fp32 FMA kernel takes: multiples of 32 (a row group's 8 lanes own 4 columns
/// of each 32) up to 128 (4 output chunks a row: 64 accumulators a thread).
constexpr int kFmaAttentionHeadStep = 32, kFmaAttentionMaxHead = 128;

/// One attention's path under `precision`, and why (said by `xfc -v` and --emit=mlir-gpu).
struct TensorCoreAttentionPlan {
  bool mlirKernel = false; // the prefill runs the MLIR kernel (tensor cores or FMA)
  std::string why;
  bool fma = false; // that kernel is the fp32 FMA one
  const char *path() const {
    return !mlirKernel ? "Halide fp32" : fma ? "fp32 FMA (MLIR)" : "tensor cores";
  }
};
TensorCoreAttentionPlan tensorCoreAttentionPlan(const AttentionKernelSpec &spec,
                                                GpuMatmul precision);

/// The precision of the MLIR kernel a `precision` build runs for `spec`: fp32 where a
/// tensor-core build's attention falls back to the FMA kernel (the plan's `fma`).
GpuMatmul attentionKernelPrecision(const AttentionKernelSpec &spec, GpuMatmul precision);

/// The kernel's entry: `<name>_tc` on tensor cores, `<name>_fma` for fp32 (and a tensor-core
/// build's fallback to it).
std::string attentionKernelEntry(const AttentionKernelSpec &spec, GpuMatmul precision);

/// The kernel as MLIR text (a gpu.module of one gpu.func): `--emit=mlir-gpu`. fp32: the FMA
/// kernel's, fmaAttentionSource.
std::string tensorCoreAttentionSource(const AttentionKernelSpec &spec, GpuMatmul precision);
std::string fmaAttentionSource(const AttentionKernelSpec &spec);

/// The FMA kernel's blocks hold 64, 32 or 16 queries (4, 2 or 1 rows a thread), a gpu.func
/// each: libxfrt launches the largest whose grid gives every SM two blocks, else the smallest
/// (a short prompt's 64-query grid leaves most SMs idle: GPT-2 small at ℓ = 128, 24 blocks).
constexpr int kFmaAttentionBlockQueries[] = {64, 32, 16};

/// One gpu.func of an attention kernel: its block's queries, its dynamic shared memory in
/// bytes (0: its tiles are static; the FMA kernel's exceed kStaticSharedBytes at heads of 96
/// and 128) and its entry (`<name>_fma`, `<name>_fma32`, `<name>_fma16`; `<name>_tc`).
struct AttentionBlockShape {
  int queries;
  int64_t dynamicShared;
  std::string entry;
};
/// The kernel's functions, the most queries first: the FMA kernel's three, tensor cores' one.
std::vector<AttentionBlockShape> attentionBlockShapes(const AttentionKernelSpec &spec,
                                                      GpuMatmul precision);
std::vector<AttentionBlockShape> fmaAttentionBlockShapes(const AttentionKernelSpec &spec);
/// The functions with dynamic shared memory as the module's header line and `--emit=ptx` name
/// them (the emulator and assemble_ptx.py read it): ", dynamic shared memory: <entry> <N>
/// bytes, ..."; "" where there are none.
std::string dynamicSharedText(const std::vector<AttentionBlockShape> &shapes);

/// The kernel lowered to NVVM, or to PTX for sm_`capability`.
llvm::Expected<std::string> tensorCoreAttentionNvvm(const AttentionKernelSpec &spec,
                                                    GpuMatmul precision, int capability);
llvm::Expected<std::string> tensorCoreAttentionPtx(const AttentionKernelSpec &spec,
                                                   GpuMatmul precision, int capability);

/// The name Halide's attention pipeline is compiled under beside the tensor-core kernel
/// (the decode steps' merge, and the prefill of fewer than kTcAttentionMinRows rows).
std::string attentionFp32Name(const AttentionKernelSpec &spec);

/// The object of `spec.name` on the tensor-core path: the PTX embedded, and `spec.name` a
/// host function with the attention's Halide ABI (q, k, v, partials, out) that hands it to
/// libxfrt's xfrt_tensor_core_attention (runtime/lib/TensorCoreLaunch.cpp), or, below
/// kTcAttentionMinRows rows, calls attentionFp32Name(spec).
llvm::Error compileTensorCoreAttentionLauncher(const AttentionKernelSpec &spec,
                                               GpuMatmul precision, int capability,
                                               llvm::StringRef objectPath);

} // namespace mlir::xf

#endif // XF_TARGET_TENSORCOREATTENTION_H
