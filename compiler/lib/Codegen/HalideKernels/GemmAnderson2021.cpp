//===- GemmAnderson2021.cpp - a CUDA GEMM scheduled by Anderson2021 -------===//
//
// The baseline `xfc tune --target cuda` times xf's GEMM schedules against (issue 30 item 4):
// Halide's Anderson2021 GPU autoscheduler (the plugin libautoschedule_anderson2021.so that
// Halide's package ships beside libHalide) scheduling the GEMM's math for one M: the plain
// algorithm of GemmPlainAlgorithm.cpp (one sum over K per output, then the epilogue; the
// paths' Funcs are schedules of that sum written as Funcs, so the autoscheduler gets the sum
// itself). Inputs, outputs and their shapes are the CUDA GEMM's: the same buffers call either.
//
//===----------------------------------------------------------------------===//

#include "GemmAlgorithm.h"
#include "GemmTiling.h"
#include "KernelPipelines.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <mutex>

using namespace Halide;

namespace mlir::xf {
namespace {

llvm::Error anderson2021Error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<KernelPipeline> buildGemmAnderson2021Algorithm(const GemmKernelSpec &spec,
                                                              int64_t rows) {
  KernelFuncScope names(spec.name);
  return buildCatchingHalideErrors(
      "the Anderson2021 algorithm of gemm kernel '" + spec.name + "'",
      [&]() -> llvm::Expected<KernelPipeline> {
        if (llvm::Error err = validateGemmCuda(spec))
          return std::move(err);
        return buildPlainGemmAlgorithm(spec, PlainGemmRows{rows, /*fixed=*/false});
      });
}

llvm::Error scheduleWithAnderson2021(KernelPipeline &built, const std::string &name,
                                     const Target &target) {
  return catchHalideErrors("Anderson2021 on gemm kernel '" + name + "'", [&] {
    built.pipeline.apply_autoscheduler(
        target, AutoschedulerParams("Anderson2021",
                                    {{"parallelism", std::to_string(kAnderson2021Parallelism)}}));
  });
}

std::string halidePluginDirectory() {
  if (const char *dir = std::getenv("XF_HALIDE_PLUGIN_DIR"); dir && *dir)
    return dir;
  return XF_HALIDE_PLUGIN_DIR_DEFAULT;
}

llvm::Error loadAnderson2021(llvm::StringRef pluginPath) {
  llvm::SmallString<256> path(pluginPath);
  if (path.empty()) {
    path = halidePluginDirectory();
    llvm::sys::path::append(path, "libautoschedule_anderson2021.so");
  }
  // A plugin registers its autoscheduler when loaded, and registering twice is an error.
  static std::mutex mutex;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return llvm::Error::success();
  const std::string what = "loading Halide's Anderson2021 autoscheduler '" + path.str().str() + "'";
  if (llvm::Error err = catchHalideErrors(what, [&] { Halide::load_plugin(path.str().str()); }))
    return err;
  loaded = true;
  return llvm::Error::success();
}

llvm::Error compileGemmKernelAnderson2021(const GemmKernelSpec &spec, int64_t rows,
                                          llvm::StringRef target, llvm::StringRef objectPath) {
  llvm::Expected<std::string> kernelTarget = halideTargetString(target); // with no_runtime
  if (!kernelTarget)
    return kernelTarget.takeError();
  const Target t(*kernelTarget);
  if (!t.has_feature(Target::CUDA))
    return anderson2021Error("Anderson2021 schedules GPU pipelines: '" + target +
                             "' is not a CUDA target");
  llvm::Expected<KernelPipeline> built = buildGemmAnderson2021Algorithm(spec, rows);
  if (!built)
    return built.takeError();
  if (llvm::Error err = scheduleWithAnderson2021(*built, spec.name, t))
    return err;
  return catchHalideErrors("compiling kernel '" + spec.name + "'", [&] {
    built->pipeline.compile_to_object(objectPath.str(), built->arguments(), spec.name, t);
  });
}

} // namespace mlir::xf
