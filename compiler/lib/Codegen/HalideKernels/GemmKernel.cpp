//===- GemmKernel.cpp - the GEMM's pipelines: algorithm + schedules -------===//
//
// The entry points of the GEMM generator (KernelPipelines.h): validate the
// spec, define the algorithm (GemmAlgorithm.cpp), set the buffers' shapes and
// apply the schedule of each path (GemmScheduleCpu.cpp, GemmScheduleCuda.cpp)
// in the order their specializations on M are tried.
//
//===----------------------------------------------------------------------===//

#include "GemmSchedules.h"
#include "GemmTiling.h"

using namespace Halide;

namespace mlir::xf {
namespace {

llvm::Expected<KernelPipeline> buildGemm(const GemmKernelSpec &spec, const Target &target) {
  const int vw = target.natural_vector_size<float>();
  if (llvm::Error err = validateGemm(spec, vw))
    return std::move(err);
  GemmInputs in = gemmInputs(spec);
  GemmCpuFuncs f = defineGemmCpu(spec, in, vw,
                                 target.arch == Target::X86 && target.has_feature(Target::F16C));
  constrainGemmBuffers(spec, in, f.out);
  scheduleGemvCpu(spec, f);
  if (f.smallRowsPath)
    scheduleFewRowsCpu(f);
  scheduleTiledCpu(spec, f);
  return gemmKernelPipeline(spec, in.x, in.weight, in.bias, in.residual, f.out);
}

llvm::Expected<KernelPipeline> buildGemmCuda(const GemmKernelSpec &spec, bool gpuSchedule) {
  if (llvm::Error err = validateGemmCuda(spec))
    return std::move(err);
  GemmInputs in = gemmInputs(spec);
  GemmCudaFuncs f = defineGemmCuda(spec, in);
  constrainGemmBuffers(spec, in, f.out);
  // The register paths load 4 columns ([K, N]) or 4 of K ([N, K]) at once: rows of W 16-byte
  // aligned (a weight's own allocation, its rows a multiple of 4 long; checked when the
  // pipeline runs).
  if (f.registerTiles || f.nkRegisterTiles)
    in.weight.dim(1).set_stride(in.weight.dim(1).stride() / kCudaRegThreadCols *
                                kCudaRegThreadCols);
  if (gpuSchedule) {
    scheduleGemvCuda(spec, f);
    scheduleBatchGemvCuda(spec, f);
    if (f.registerTiles)
      scheduleRegisterGemmCuda(spec, f);
    else if (f.nkRegisterTiles)
      scheduleNkRegisterGemmCuda(spec, f);
    else
      scheduleStagedGemmCuda(spec, f);
    if (spec.prologue != GemmPrologue::None)
      scheduleGemmPrologueCuda(spec, f);
  } else if (spec.prologue != GemmPrologue::None) {
    computeGemmRowNormsAtRoot(f); // the algorithm JIT-ed on the CPU: statistics once a call
  }
  KernelPipeline built = gemmKernelPipeline(spec, in.x, in.weight, in.bias, in.residual, f.out,
                                            in.gamma, in.beta);
  if (spec.mergeHeads)
    built.inputs.push_back(in.partials);
  return built;
}

} // namespace

KernelPipeline gemmKernelPipeline(const GemmKernelSpec &spec, ImageParam x, ImageParam weight,
                                  ImageParam bias, ImageParam residual, Func out,
                                  ImageParam normGamma, ImageParam normBeta) {
  std::vector<ImageParam> inputs = {x, weight};
  if (spec.hasBias)
    inputs.push_back(bias);
  if (spec.hasResidual)
    inputs.push_back(residual);
  if (spec.normGamma)
    inputs.push_back(normGamma);
  if (spec.normBeta)
    inputs.push_back(normBeta);
  return KernelPipeline::of(std::move(inputs), out);
}

llvm::Expected<KernelPipeline> buildGemmPipeline(const GemmKernelSpec &spec, const Target &target) {
  KernelFuncScope names(spec.name);
  return buildCatchingHalideErrors("scheduling gemm kernel '" + spec.name + "'",
                                   [&] { return buildGemm(spec, target); });
}

llvm::Expected<KernelPipeline> buildGemmCudaPipeline(const GemmKernelSpec &spec, bool gpuSchedule) {
  KernelFuncScope names(spec.name);
  return buildCatchingHalideErrors("scheduling CUDA gemm kernel '" + spec.name + "'",
                                   [&] { return buildGemmCuda(spec, gpuSchedule); });
}

} // namespace mlir::xf
