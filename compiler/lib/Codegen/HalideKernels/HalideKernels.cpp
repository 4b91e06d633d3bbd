//===- HalideKernels.cpp - AOT entry points for xf's Halide kernels -------===//
//
// Targets, errors and output files around the pipeline builders of
// GemmKernel.cpp and AttentionKernel.cpp: each kernel becomes one object file
// compiled with no_runtime; the runtime is emitted once, separately.
//
//===----------------------------------------------------------------------===//

#include "KernelPipelines.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <optional>
#include <sstream>

namespace mlir::xf {
namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The target for kernels: `target` with no_runtime (the runtime is linked once).
llvm::Expected<Halide::Target> kernelTarget(llvm::StringRef target) {
  llvm::Expected<Halide::Target> parsed = parseHalideTarget(target);
  if (!parsed)
    return parsed.takeError();
  return parsed->with_feature(Halide::Target::NoRuntime);
}

/// The exported functions of one kernel's object: a pipeline and its name.
using KernelFunctions = std::vector<std::pair<KernelPipeline, std::string>>;

llvm::Expected<KernelFunctions> functionsOf(llvm::Expected<KernelPipeline> built,
                                            const std::string &name) {
  if (!built)
    return built.takeError();
  return KernelFunctions{{std::move(*built), name}};
}

/// A GEMM, and the function that packs its weight at load when it takes one packed.
llvm::Expected<KernelFunctions> gemmFunctions(const GemmKernelSpec &spec,
                                              const Halide::Target &target) {
  llvm::Expected<KernelFunctions> functions =
      functionsOf(buildGemmPipeline(spec, target), spec.name);
  if (!functions || !spec.packedWeight)
    return functions;
  llvm::Expected<KernelPipeline> pack = buildGemmPackPipeline(spec, target);
  if (!pack)
    return pack.takeError();
  functions->push_back({std::move(*pack), spec.name + "_pack"});
  return functions;
}

/// One Halide module holding every function of a kernel.
llvm::Expected<Halide::Module> lowerModule(const KernelFunctions &functions,
                                           const Halide::Target &target) {
  std::optional<Halide::Module> module;
  if (llvm::Error err = catchHalideErrors("lowering kernel '" + functions.front().second + "'", [&] {
        std::vector<Halide::Module> parts;
        for (const auto &[built, name] : functions) {
          Halide::Pipeline pipeline = built.pipeline; // a handle: compile_to_module is not const
          parts.push_back(pipeline.compile_to_module(built.arguments(), name, target));
        }
        module.emplace(parts.size() == 1 ? parts.front()
                                         : Halide::link_modules(functions.front().second, parts));
      }))
    return std::move(err);
  return std::move(*module);
}

llvm::Error compileObject(llvm::Expected<KernelFunctions> functions, const Halide::Target &target,
                          llvm::StringRef objectPath) {
  if (!functions)
    return functions.takeError();
  llvm::Expected<Halide::Module> module = lowerModule(*functions, target);
  if (!module)
    return module.takeError();
  return catchHalideErrors("compiling kernel '" + functions->front().second + "'", [&] {
    module->compile({{Halide::OutputFileType::object, objectPath.str()}});
  });
}

llvm::Expected<std::string> describe(llvm::Expected<KernelFunctions> functions,
                                     const Halide::Target &target) {
  if (!functions)
    return functions.takeError();
  llvm::Expected<Halide::Module> module = lowerModule(*functions, target);
  if (!module)
    return module.takeError();
  std::ostringstream os;
  // Each function and the closures of its parallel loops, which Halide
  // lowers to functions of their own.
  for (const auto &[built, name] : *functions)
    for (const Halide::Internal::LoweredFunc &function : module->functions())
      if (function.name == name || llvm::StringRef(function.name).starts_with(name + "_par_for"))
        os << "// " << function.name << "\n" << function.body << "\n";
  return os.str();
}

} // namespace

llvm::Error catchHalideErrors(llvm::StringRef what, const std::function<void()> &body) {
  try {
    body();
  } catch (const Halide::Error &e) {
    return makeError(what + ": " + e.what());
  }
  return llvm::Error::success();
}

llvm::Expected<Halide::Target> parseHalideTarget(llvm::StringRef target) {
  if (target.empty() || target == "host")
    return Halide::get_host_target();
  std::string text = target.str();
  if (!Halide::Target::validate_target_string(text))
    return makeError("invalid Halide target '" + target +
                     "': expected 'host' or arch-bits-os[-feature...], e.g. "
                     "x86-64-linux-avx2-fma or x86-64-linux-avx512_skylake");
  return Halide::Target(text);
}

llvm::Expected<VectorShape> vectorShapeOf(llvm::StringRef target) {
  llvm::Expected<Halide::Target> parsed = parseHalideTarget(target);
  if (!parsed)
    return parsed.takeError();
  VectorShape shape;
  shape.floatsPerVector = parsed->natural_vector_size<float>();
  // x86 has 32 vector registers with AVX-512 and 16 before it; AArch64 has
  // 32, other architectures are assumed to have 16.
  // (Halide gives AVX-512 targets, and only those, 16 float lanes on x86.)
  bool avx512 = parsed->arch == Halide::Target::X86 && shape.floatsPerVector >= 16;
  shape.registers = avx512 || parsed->arch == Halide::Target::ARM && parsed->bits == 64 ? 32 : 16;
  return shape;
}

llvm::Expected<int> blockDotIsaCeiling(llvm::StringRef target) {
  if (target.empty() || target == "host")
    return 3;
  llvm::Expected<Halide::Target> parsed = parseHalideTarget(target);
  if (!parsed)
    return parsed.takeError();
  using T = Halide::Target;
  if (parsed->arch != T::X86)
    return 0;
  // Halide's avx512_skylake / _cannonlake name no VNNI; Zen 4 and later and Sapphire Rapids do.
  if (parsed->has_feature(T::AVX512_Zen4) || parsed->has_feature(T::AVX512_Zen5) ||
      parsed->has_feature(T::AVX512_SapphireRapids))
    return 3;
  if (parsed->has_feature(T::AVXVNNI))
    return 2;
  return parsed->has_feature(T::AVX2) ? 1 : 0;
}

llvm::Expected<std::string> halideTargetString(llvm::StringRef target) {
  llvm::Expected<Halide::Target> parsed = kernelTarget(target);
  if (!parsed)
    return parsed.takeError();
  return parsed->to_string();
}

llvm::Error compileGemmKernel(const GemmKernelSpec &spec, llvm::StringRef target,
                              llvm::StringRef objectPath) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (!t)
    return t.takeError();
  return compileObject(gemmFunctions(spec, *t), *t, objectPath);
}

llvm::Error compileAttentionKernel(const AttentionKernelSpec &spec, llvm::StringRef target,
                                   llvm::StringRef objectPath) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (!t)
    return t.takeError();
  return compileObject(functionsOf(buildAttentionPipeline(spec, *t), spec.name), *t, objectPath);
}

llvm::Error compileHalideRuntime(llvm::StringRef target, llvm::StringRef objectPath) {
  llvm::Expected<Halide::Target> t = parseHalideTarget(target);
  if (!t)
    return t.takeError();
  Halide::Target runtimeTarget = t->without_feature(Halide::Target::NoRuntime);
  return catchHalideErrors("compiling the Halide runtime", [&] {
    Halide::compile_standalone_runtime(objectPath.str(), runtimeTarget);
  });
}

llvm::Expected<std::string> describeGemmKernel(const GemmKernelSpec &spec, llvm::StringRef target) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (!t)
    return t.takeError();
  return describe(gemmFunctions(spec, *t), *t);
}

llvm::Expected<std::string> describeAttentionKernel(const AttentionKernelSpec &spec,
                                                    llvm::StringRef target) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (!t)
    return t.takeError();
  return describe(functionsOf(buildAttentionPipeline(spec, *t), spec.name), *t);
}

} // namespace mlir::xf
