//===- KernelPipelines.h - Halide pipelines behind HalideKernels.h -*- C++ -*-===//
//
// The pipeline builders shared by the AOT entry points and the unit tests,
// which JIT the very same definitions and schedules. Includes Halide.h, so
// only this library and its tests see it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_KERNELPIPELINES_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_KERNELPIPELINES_H

#include "KernelFuncNames.h"
#include "xf/Codegen/HalideKernels.h"

#include "Halide.h"

#include <optional>
#include <vector>

namespace mlir::xf {

/// A built pipeline with its parameters in the order of the generated
/// function's arguments (inputs, scalars, then the outputs).
struct KernelPipeline {
  Halide::Pipeline pipeline;
  std::vector<Halide::ImageParam> inputs;
  Halide::Func output;
  std::vector<Halide::Argument> scalars; // scalar parameters after the inputs

  std::vector<Halide::Argument> arguments() const {
    std::vector<Halide::Argument> all(inputs.begin(), inputs.end());
    all.insert(all.end(), scalars.begin(), scalars.end());
    return all;
  }
  /// The pipeline computing `output` from `inputs` (in the order of its arguments).
  static KernelPipeline of(std::vector<Halide::ImageParam> inputs, Halide::Func output) {
    return KernelPipeline{Halide::Pipeline(output), std::move(inputs), output};
  }
};

/// Builds the GEMM of `spec` scheduled for `target`; an error if the spec or
/// the schedule is invalid.
llvm::Expected<KernelPipeline> buildGemmPipeline(const GemmKernelSpec &spec,
                                                 const Halide::Target &target);
/// A GEMM's pipeline over `out`: inputs x and the weight, then the bias, the
/// residual and the norm prologue's γ and β where `spec` has them (the CPU,
/// CUDA and plain GEMMs).
KernelPipeline gemmKernelPipeline(const GemmKernelSpec &spec, Halide::ImageParam x,
                                  Halide::ImageParam weight, Halide::ImageParam bias,
                                  Halide::ImageParam residual, Halide::Func out,
                                  Halide::ImageParam normGamma = {},
                                  Halide::ImageParam normBeta = {});
/// Builds `<name>_pack` of a GEMM with packedWeight: stored weight → packed.
llvm::Expected<KernelPipeline> buildGemmPackPipeline(const GemmKernelSpec &spec,
                                                     const Halide::Target &target);
llvm::Expected<KernelPipeline> buildAttentionPipeline(const AttentionKernelSpec &spec,
                                                      const Halide::Target &target);
/// Builds `<name>_batched` of an attention with batchedDecode (HalideKernels.h).
llvm::Expected<KernelPipeline> buildAttentionBatchedPipeline(const AttentionKernelSpec &spec,
                                                             const Halide::Target &target);
/// spec.segmented's kernel (SegmentedAttentionKernel.cpp); buildAttentionPipeline calls it.
llvm::Expected<KernelPipeline> buildSegmentedAttentionPipeline(const AttentionKernelSpec &spec,
                                                               const Halide::Target &target);

/// The CUDA kernels (GemmKernel.cpp, AttentionKernelCuda.cpp): the same
/// buffers and arguments as the CPU ones. Without `gpuSchedule` the
/// algorithm is left unscheduled, so tests can JIT it on the CPU.
llvm::Expected<KernelPipeline> buildGemmCudaPipeline(const GemmKernelSpec &spec,
                                                     bool gpuSchedule = true);
llvm::Expected<KernelPipeline> buildAttentionCudaPipeline(const AttentionKernelSpec &spec,
                                                          bool gpuSchedule = true);
/// `<name>_decode_ranges` of a CUDA attention (AttentionDecodeCuda.cpp): inputs q, k, v;
/// output the key ranges' partial results (CudaDecodePartials); where it appends
/// (cudaDecodeRangesAppend) also inputs new_k, new_v and the scalar start, and the new K and
/// V rows as outputs.
llvm::Expected<KernelPipeline> buildAttentionCudaRangesPipeline(const AttentionKernelSpec &spec,
                                                                bool gpuSchedule = true);
/// The batched decode step of n sequences on the GPU (AttentionDecodeCuda.cpp; each sequence's
/// new K/V row already in its slot): `<name>_batched_ranges` (q [n, H·dK], k_cache, v_cache
/// (column, position, K/V head, slot), row_positions, row_slots (n int64)) → partials
/// (column, sequence, head, range) [dV + 2, n, H, ranges]; `<name>_batched` (partials) → out
/// [n, H·dV].
llvm::Expected<KernelPipeline> buildCudaBatchedRangesPipeline(const AttentionKernelSpec &spec,
                                                              bool gpuSchedule = true);
llvm::Expected<KernelPipeline> buildCudaBatchedMergePipeline(const AttentionKernelSpec &spec,
                                                             bool gpuSchedule = true);

/// M as a plain GEMM's autoscheduler knows it: `estimate` rows, also M's bound where `fixed`
/// (the CPU autoschedulers tile for one static shape; Anderson2021's kernel takes any M).
struct PlainGemmRows {
  int64_t estimate;
  bool fixed;
};
/// The GEMM of `spec` for an autoscheduler (GemmPlainAlgorithm.cpp): one sum over K per output
/// and the epilogue, unscheduled, the weight as stored, xf's GEMM's arguments (JIT-able on the
/// CPU as it is); the ranges' merge (mergeHeads) is refused.
llvm::Expected<KernelPipeline> buildPlainGemmAlgorithm(const GemmKernelSpec &spec,
                                                       PlainGemmRows rows);
/// The plain GEMM of a CUDA `spec` as Anderson2021 gets it (GemmAnderson2021.cpp): estimates
/// for `rows` rows, any M.
llvm::Expected<KernelPipeline> buildGemmAnderson2021Algorithm(const GemmKernelSpec &spec,
                                                              int64_t rows);
/// Applies Anderson2021 (loadAnderson2021 first) to `built` for the GPU `target`.
llvm::Error scheduleWithAnderson2021(KernelPipeline &built, const std::string &name,
                                     const Halide::Target &target);

/// A loop kernel's pipeline (LoopKernelsCuda.cpp); `arguments` receives its
/// arguments in order (buffers and the int32 offset), without the output.
llvm::Expected<KernelPipeline> buildDeviceLoopPipeline(const DeviceLoopKernelSpec &spec,
                                                       bool gpuSchedule,
                                                       std::vector<Halide::Argument> &arguments);

/// The vector unit of a parsed target (vectorShapeOf of its string).
VectorShape vectorShapeOf(const Halide::Target &target);

/// The cpuid and XCR0 words that say which x86 vector features this CPU and its OS enable.
struct X86CpuFeatureWords {
  uint32_t leaf1Ecx = 0, leaf7Ebx = 0, leaf7Ecx = 0, leaf7Sub1Eax = 0;
  uint64_t xcr0 = 0;
};

/// `target` without the x86 vector features `cpu` does not enable (cpuid and the OS's XCR0
/// state both); their names are appended to `dropped`. Other architectures are unchanged.
Halide::Target x86TargetWithinCpu(Halide::Target target, const X86CpuFeatureWords &cpu,
                                  std::vector<std::string> *dropped = nullptr);

/// This machine as a Halide target: Halide::get_host_target() within what cpuid and XCR0
/// enable (HostTarget.cpp: Halide names AVX-512 for a Zen 4 by its model, even in a VM that
/// hides it). Every "host" of xf is this.
Halide::Target hostHalideTarget(std::vector<std::string> *dropped = nullptr);

/// Parses `target` ("host" or a Halide target string) without adding no_runtime.
llvm::Expected<Halide::Target> parseHalideTarget(llvm::StringRef target);

/// Runs `body`, turning a Halide::CompileError / RuntimeError / InternalError
/// into an llvm::Error that names `what`.
llvm::Error catchHalideErrors(llvm::StringRef what, const std::function<void()> &body);

/// `build()`'s pipeline, or an error naming `what` where Halide threw one while building it.
template <typename Build>
llvm::Expected<KernelPipeline> buildCatchingHalideErrors(llvm::StringRef what, Build build) {
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err = catchHalideErrors(what, [&] { built.emplace(build()); }))
    return std::move(err);
  return std::move(*built);
}

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_KERNELPIPELINES_H
