//===- TensorCoreGemmPlan.cpp - which GEMMs take the tensor cores, and how -===//
//
// The decisions about a GEMM's tensor-core path that both the host lowering (the split-K
// partials it reserves and passes, CudaGemmCall.h) and the kernel build (BuildExecutable.cpp,
// TensorCoreGemmSource.cpp) read: compiled into xfConversion, so the lowering needs neither
// MLIR's GPU dialects nor the kernel generator.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

namespace mlir::xf {

const char *gpuMatmulName(GpuMatmul precision) {
  switch (precision) {
  case GpuMatmul::Fp32:
    return "fp32";
  case GpuMatmul::Tf32:
    return "tf32";
  case GpuMatmul::Bf16:
    return "bf16";
  }
  return "fp32";
}

std::optional<GpuMatmul> parseGpuMatmul(llvm::StringRef name) {
  for (GpuMatmul precision : {GpuMatmul::Fp32, GpuMatmul::Tf32, GpuMatmul::Bf16})
    if (name == gpuMatmulName(precision))
      return precision;
  return std::nullopt;
}

int cudaCapabilityOf(llvm::StringRef halideTarget) {
  llvm::SmallVector<llvm::StringRef> features;
  halideTarget.split(features, '-');
  int capability = 0;
  for (llvm::StringRef feature : features)
    if (feature.consume_front("cuda_capability_"))
      feature.getAsInteger(10, capability);
  return capability;
}

std::string fp32FallbackName(const GemmKernelSpec &spec) { return spec.name + "_fp32"; }

// Why a GEMM has no `<name>_tc128` (`<name>_fma128`), or "" where it has: on tensor cores the
// wide tiles need cp.async's slices (not tf32 from bf16 weights, widened as staged).
static std::string wideTilesWhyNot(const GemmKernelSpec &spec, GpuMatmul precision) {
  if (spec.bf16Weights && precision == GpuMatmul::Tf32)
    return "tf32 from bf16 weights";
  return "";
}

// Why the GEMM's precision, weights or K give it no `<name>_wg` (it needs the tensor-core
// path as well: wgmmaGemmWhyNot), or "".
static std::string wgmmaOperandsWhyNot(const GemmKernelSpec &spec, GpuMatmul precision) {
  if (precision != GpuMatmul::Bf16 || !spec.bf16Weights)
    return "bf16 products from bf16 weights only";
  if (spec.K % kWgSliceK != 0)
    return "K = " + std::to_string(spec.K) + " is not a multiple of " + std::to_string(kWgSliceK);
  return "";
}

TensorCoreGemmPlan tensorCoreGemmPlan(const GemmKernelSpec &spec, GpuMatmul precision) {
  auto stay = [](std::string why) { return TensorCoreGemmPlan{false, std::move(why)}; };
  const bool fma = precision == GpuMatmul::Fp32;
  if (spec.N % kTcTileCols != 0 &&
      (!spec.transposeWeight || spec.hasBias || spec.hasResidual ||
       spec.epilogue == GemmEpilogue::SwiGlu))
    return stay("N = " + std::to_string(spec.N) + " is not a multiple of " +
                std::to_string(kTcTileCols) +
                (spec.transposeWeight ? " and the GEMM has a bias, residual or SwiGLU"
                                      : " and W is [K, N]"));
  if (spec.K % kTcSliceK != 0)
    return stay("K = " + std::to_string(spec.K) + " is not a multiple of " +
                std::to_string(kTcSliceK));
  if (spec.weightBlocks != WeightBlocks::None || spec.packedWeight || spec.bf16Activations)
    return stay("block, packed weights or bf16 activations");
  // xfc fuses norms only for --gpu-matmul=fp32; the FMA kernel normalises x as it stages it.
  if (spec.prologue != GemmPrologue::None && !fma)
    return stay("a norm prologue");
  std::string tail = tensorCoreColumnTail(spec)
                         ? "; a column tail of " + std::to_string(spec.N % kTcTileCols)
                         : std::string();
  // Wide tiles (docs/gpu.md, "Wide tiles"): the launcher's choice where built.
  const std::string whyNot = wideTilesWhyNot(spec, precision);
  if (whyNot.empty() && tensorCoreColumnTail(spec))
    tail += " (" + std::to_string(spec.N % kTcWideTile) + " in 128-column tiles)";
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  tail += !whyNot.empty() ? "; no 128 × 128 tiles (" + whyNot + ")"
          : gated ? "; 128 × 64 tiles (both gates: 128 columns of W) where their grid fills the GPU"
                  : "; 128 × 128 tiles where their grid fills the GPU";
  if (fma)
    return {true,
            "fp32 FMA kernel for M >= " + std::to_string(kFmaGemmMinRows) +
                " (fewer rows: Halide's GEMV and batch GEMV)" + tail,
            true};
  if (wgmmaOperandsWhyNot(spec, precision).empty())
    tail += "; on sm_90 GPUs wgmma (sm_90a) 128 × 128 tiles where their grid gives every SM a "
            "block";
  return {true, std::string(gpuMatmulName(precision)) + " mma.sync for M >= " +
                    std::to_string(kTcMinRows) + " (fewer rows: Halide's GEMV)" + tail};
}

std::string wgmmaGemmWhyNot(const GemmKernelSpec &spec, GpuMatmul precision) {
  if (!tensorCoreGemmPlan(spec, precision).mlirKernel)
    return "not on the tensor-core path";
  return wgmmaOperandsWhyNot(spec, precision);
}

std::string mlirGemmEntry(const GemmKernelSpec &spec, GpuMatmul precision) {
  return spec.name + (precision == GpuMatmul::Fp32 ? "_fma" : "_tc");
}

bool tensorCoreColumnTail(const GemmKernelSpec &spec) { return spec.N % kTcTileCols != 0; }

bool tensorCoreWideTiles(const GemmKernelSpec &spec, GpuMatmul precision) {
  return wideTilesWhyNot(spec, precision).empty();
}

int64_t tensorCoreSplitRows(const GemmKernelSpec &spec) {
  if (spec.K / kTcSliceK < 2 || tensorCoreColumnTail(spec))
    return 0;
  // The 32-row kernel's grid is N/64 × ⌈M/32⌉ blocks: below kTcSplitMaxBlocks up to this M.
  const int64_t rowTiles = (kTcSplitMaxBlocks - 1) / (spec.N / kTcTileCols);
  return std::min<int64_t>(kTcTallRows - 1, rowTiles * kTcShortTileRows);
}

int64_t tensorCoreSplitPartialFloats(const GemmKernelSpec &spec) {
  const int64_t cols = spec.gates() * spec.N;
  return kTcMaxSplit * cols * tensorCoreSplitRows(spec);
}

} // namespace mlir::xf
