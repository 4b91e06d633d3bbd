//===- HalideKernels.cpp - AOT entry points for xf's Halide kernels -------===//
//
// Targets, errors and output files around the pipeline builders of
// GemmKernel.cpp and AttentionKernel.cpp: each kernel becomes one object file
// compiled with no_runtime; the runtime is emitted once, separately.
//
//===----------------------------------------------------------------------===//

#include "KernelFuncNames.h"
#include "KernelPipelines.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "llvm/ADT/SmallString.h"

#include <cstdlib>
#include <cstring>
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

/// An attention, and its batched decode step when the spec asks for one.
llvm::Expected<KernelFunctions> attentionFunctions(const AttentionKernelSpec &spec,
                                                   const Halide::Target &target) {
  llvm::Expected<KernelFunctions> functions =
      functionsOf(buildAttentionPipeline(spec, target), spec.name);
  if (!functions || !spec.batchedDecode)
    return functions;
  llvm::Expected<KernelPipeline> batched = buildAttentionBatchedPipeline(spec, target);
  if (!batched)
    return batched.takeError();
  functions->push_back({std::move(*batched), spec.name + "_batched"});
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
          llvm::Expected<Halide::Module> part =
              deterministicKernelNames(pipeline.compile_to_module(built.arguments(), name, target));
          if (!part)
            throw Halide::CompileError(llvm::toString(part.takeError()));
          parts.push_back(*part);
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

/// A CUDA pipeline's object (the CPU GEMM's load-time packing does not apply on the GPU).
llvm::Error compileCudaObject(llvm::Expected<KernelPipeline> built, const std::string &name,
                              const Halide::Target &target, llvm::StringRef objectPath,
                              std::optional<std::vector<Halide::Argument>> arguments =
                                  std::nullopt) {
  if (!built)
    return built.takeError();
  llvm::Expected<Halide::Module> module =
      lowerCudaPipeline(built->pipeline, arguments ? *arguments : built->arguments(), name, target);
  if (!module)
    return module.takeError();
  return catchHalideErrors("compiling kernel '" + name + "'", [&] {
    module->compile({{Halide::OutputFileType::object, objectPath.str()}});
  });
}

/// A CUDA kernel's loop nest before its loops become device launches
/// (gpu_block / gpu_thread loops, shared-memory allocations), or its PTX.
llvm::Expected<std::string> describeCuda(llvm::Expected<KernelPipeline> built,
                                         const std::string &name, const Halide::Target &target,
                                         bool ptx,
                                         std::optional<std::vector<Halide::Argument>> arguments =
                                             std::nullopt) {
  if (!built)
    return built.takeError();
  llvm::SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("xf-kernel", ptx ? "ptx" : "stmt", path))
    return makeError("a temporary file for kernel '" + name + "': " + ec.message());
  std::string text;
  llvm::Expected<Halide::Module> module =
      lowerCudaPipeline(built->pipeline, arguments ? *arguments : built->arguments(), name, target);
  llvm::Error err = module.takeError();
  if (!err)
    err = catchHalideErrors("lowering kernel '" + name + "'", [&] {
      module->compile(
          {{ptx ? Halide::OutputFileType::device_code : Halide::OutputFileType::conceptual_stmt,
            path.str().str()}});
    });
  if (!err) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (buffer)
      text = (*buffer)->getBuffer().str();
    else
      err = makeError("reading kernel '" + name + "': " + buffer.getError().message());
  }
  llvm::sys::fs::remove(path);
  if (err)
    return std::move(err);
  return text;
}

/// describeCuda of a CUDA attention's two functions, `<name>` (or `mainName`) then
/// `<name>_decode_ranges`.
llvm::Expected<std::string> describeCudaAttention(const AttentionKernelSpec &spec,
                                                  const Halide::Target &target, bool ptx,
                                                  llvm::StringRef mainName) {
  AttentionKernelSpec own = spec;
  if (!mainName.empty())
    own.name = mainName.str();
  llvm::Expected<std::string> main =
      describeCuda(buildAttentionCudaPipeline(own), own.name, target, ptx);
  if (!main)
    return main;
  llvm::Expected<std::string> ranges = describeCuda(buildAttentionCudaRangesPipeline(spec),
                                                    cudaDecodeRangesName(spec), target, ptx);
  if (!ranges)
    return ranges;
  // A section of its own, headed as xfc heads each kernel's (one PTX module each).
  std::string text = *main + "\n// ----- " + cudaDecodeRangesName(spec) + "\n" + *ranges;
  if (!spec.batchedDecode)
    return text;
  for (CudaBatchedPart part : {CudaBatchedPart::Ranges, CudaBatchedPart::Merge}) {
    llvm::Expected<std::string> batched =
        describeCuda(part == CudaBatchedPart::Ranges ? buildCudaBatchedRangesPipeline(spec)
                                                     : buildCudaBatchedMergePipeline(spec),
                     cudaBatchedName(spec, part), target, ptx);
    if (!batched)
      return batched;
    text += "\n// ----- " + cudaBatchedName(spec, part) + "\n" + *batched;
  }
  return text;
}

bool hasCuda(const Halide::Target &target) { return target.has_feature(Halide::Target::CUDA); }

/// --target cuda[-sm_NN]: this CPU's features plus CUDA at capability NN.
constexpr int kDefaultCudaCapability = 70;
const std::pair<int, Halide::Target::Feature> kCudaCapabilities[] = {
    {50, Halide::Target::CUDACapability50}, {61, Halide::Target::CUDACapability61},
    {70, Halide::Target::CUDACapability70}, {75, Halide::Target::CUDACapability75},
    {80, Halide::Target::CUDACapability80}, {86, Halide::Target::CUDACapability86}};

std::string capabilityList() {
  std::string list;
  for (auto [sm, feature] : kCudaCapabilities)
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(sm);
  return list;
}

llvm::Expected<Halide::Target> parseCudaShorthand(llvm::StringRef target) {
  int capability = kDefaultCudaCapability;
  if (target != "cuda") {
    llvm::StringRef sm = target.drop_front(strlen("cuda-"));
    if (!sm.consume_front("sm_") || sm.getAsInteger(10, capability))
      return makeError("invalid CUDA target '" + target +
                       "': expected 'cuda' or 'cuda-sm_NN' with NN one of the capabilities "
                       "Halide supports (" + capabilityList() + ")");
  }
  for (auto [sm, feature] : kCudaCapabilities)
    if (sm == capability)
      return hostHalideTarget().with_feature(Halide::Target::CUDA).with_feature(feature);
  return makeError("unsupported CUDA capability 'sm_" + llvm::Twine(capability) +
                   "' in target '" + target + "': Halide generates PTX for " + capabilityList() +
                   " (a newer GPU runs the PTX of an older capability)");
}

llvm::Expected<std::string> describe(llvm::Expected<KernelPipeline> built, const std::string &name,
                                     const Halide::Target &target) {
  if (!built)
    return built.takeError();
  std::string text;
  llvm::Error err = catchHalideErrors("lowering kernel '" + name + "'", [&] {
    llvm::Expected<Halide::Module> named = deterministicKernelNames(
        built->pipeline.compile_to_module(built->arguments(), name, target));
    if (!named)
      throw Halide::CompileError(llvm::toString(named.takeError()));
    Halide::Module module = *named;
    std::ostringstream os;
    // The kernel and the closures of its parallel loops, which Halide lowers
    // to functions of their own.
    for (const Halide::Internal::LoweredFunc &function : module.functions())
      if (function.name == name || llvm::StringRef(function.name).starts_with(name + "_par_for"))
        os << "// " << function.name << "\n" << function.body << "\n";
    text = os.str();
  });
  if (err)
    return std::move(err);
  return text;
}

/// In a build with AddressSanitizer, Halide lowers and compiles on the calling thread's stack,
/// as Halide's own sanitized builds do (and as its docs advise for sanitizers): by default it
/// switches to a 32 MiB stack of its own with swapcontext, which ASan does not follow; ASan
/// then warns on stderr that it "may produce false positives". HL_COMPILER_STACK_SIZE, where
/// set, still decides.
void compileOnCallingStackUnderAsan() {
#if defined(__SANITIZE_ADDRESS__)
  static const bool once = [] {
    if (!std::getenv("HL_COMPILER_STACK_SIZE"))
      Halide::set_compiler_stack_size(0);
    return true;
  }();
  (void)once;
#endif
}

} // namespace

llvm::Error catchHalideErrors(llvm::StringRef what, const std::function<void()> &body) {
  compileOnCallingStackUnderAsan();
  try {
    body();
  } catch (const Halide::Error &e) {
    return makeError(what + ": " + e.what());
  }
  return llvm::Error::success();
}

llvm::Expected<Halide::Target> parseHalideTarget(llvm::StringRef target) {
  if (target.empty() || target == "host")
    return hostHalideTarget();
  if (target == "cuda" || target.starts_with("cuda-"))
    return parseCudaShorthand(target);
  std::string text = target.str();
  if (!Halide::Target::validate_target_string(text))
    return makeError("invalid Halide target '" + target +
                     "': expected 'host', 'cuda[-sm_NN]' or arch-bits-os[-feature...], e.g. "
                     "x86-64-linux-avx2-fma or x86-64-linux-avx512_skylake");
  Halide::Target parsed(text);
  if (parsed.has_gpu_feature() && !hasCuda(parsed))
    return makeError("unsupported GPU API in target '" + target +
                     "': xf generates kernels for CUDA only");
  // Without a capability Halide would emit PTX for sm_20, which no current driver runs.
  if (hasCuda(parsed) && parsed.get_cuda_capability_lower_bound() < 30)
    parsed = parsed.with_feature(Halide::Target::CUDACapability70);
  return parsed;
}

llvm::Expected<VectorShape> vectorShapeOf(llvm::StringRef target) {
  llvm::Expected<Halide::Target> parsed = parseHalideTarget(target);
  if (!parsed)
    return parsed.takeError();
  return vectorShapeOf(*parsed);
}

VectorShape vectorShapeOf(const Halide::Target &target) {
  VectorShape shape;
  shape.floatsPerVector = target.natural_vector_size<float>();
  // x86 has 32 vector registers with AVX-512 and 16 before it; AArch64 has
  // 32, other architectures are assumed to have 16.
  // (Halide gives AVX-512 targets, and only those, 16 float lanes on x86.)
  bool avx512 = target.arch == Halide::Target::X86 && shape.floatsPerVector >= 16;
  shape.registers = avx512 || target.arch == Halide::Target::ARM && target.bits == 64 ? 32 : 16;
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

llvm::Expected<int> decodeAttentionIsaCeiling(llvm::StringRef target) {
  // "host" is this machine, where the executable runs: without AVX2 the portable loop would
  // replace the Halide kernel's vectors.
  llvm::Expected<Halide::Target> parsed = parseHalideTarget(target);
  if (!parsed)
    return parsed.takeError();
  using T = Halide::Target;
  if (parsed->arch != T::X86 || !parsed->has_feature(T::AVX2) || !parsed->has_feature(T::FMA) ||
      !parsed->has_feature(T::F16C))
    return -1;
  return parsed->has_feature(T::AVX512) ? 2 : 1;
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
  if (hasCuda(*t))
    return compileCudaObject(buildGemmCudaPipeline(spec), spec.name, *t, objectPath);
  return compileObject(gemmFunctions(spec, *t), *t, objectPath);
}

static llvm::Expected<Halide::Target> cudaKernelTarget(llvm::StringRef target,
                                                       llvm::StringRef what);

llvm::Error compileAttentionKernel(const AttentionKernelSpec &spec, llvm::StringRef target,
                                   llvm::StringRef objectPath) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (!t)
    return t.takeError();
  if (hasCuda(*t))
    return compileCudaObject(buildAttentionCudaPipeline(spec), spec.name, *t, objectPath);
  return compileObject(attentionFunctions(spec, *t), *t, objectPath);
}

llvm::Error compileAttentionRangesKernel(const AttentionKernelSpec &spec, llvm::StringRef target,
                                         llvm::StringRef objectPath) {
  llvm::Expected<Halide::Target> t = cudaKernelTarget(target, "decode ranges of " + spec.name);
  if (!t)
    return t.takeError();
  return compileCudaObject(buildAttentionCudaRangesPipeline(spec), cudaDecodeRangesName(spec), *t,
                           objectPath);
}

llvm::Error compileAttentionBatchedKernel(const AttentionKernelSpec &spec, CudaBatchedPart part,
                                          llvm::StringRef target, llvm::StringRef objectPath) {
  const std::string name = cudaBatchedName(spec, part);
  llvm::Expected<Halide::Target> t = cudaKernelTarget(target, name);
  if (!t)
    return t.takeError();
  return compileCudaObject(part == CudaBatchedPart::Ranges ? buildCudaBatchedRangesPipeline(spec)
                                                           : buildCudaBatchedMergePipeline(spec),
                           name, *t, objectPath);
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
  if (hasCuda(*t))
    return describeCuda(buildGemmCudaPipeline(spec), spec.name, *t, /*ptx=*/false);
  return describe(gemmFunctions(spec, *t), *t);
}

llvm::Expected<std::string> describeAttentionKernel(const AttentionKernelSpec &spec,
                                                    llvm::StringRef target,
                                                    llvm::StringRef mainName) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (!t)
    return t.takeError();
  if (hasCuda(*t))
    return describeCudaAttention(spec, *t, /*ptx=*/false, mainName);
  return describe(attentionFunctions(spec, *t), *t);
}

bool isCudaTarget(llvm::StringRef target) {
  llvm::Expected<Halide::Target> t = parseHalideTarget(target);
  if (!t) {
    llvm::consumeError(t.takeError());
    return false;
  }
  return hasCuda(*t);
}

/// A CUDA target, or an error naming what asked for one.
static llvm::Expected<Halide::Target> cudaKernelTarget(llvm::StringRef target,
                                                       llvm::StringRef what) {
  llvm::Expected<Halide::Target> t = kernelTarget(target);
  if (t && !hasCuda(*t))
    return makeError(what + " needs a CUDA target, got '" + target + "'");
  return t;
}

llvm::Expected<std::string> describeGemmKernelPtx(const GemmKernelSpec &spec,
                                                  llvm::StringRef target) {
  llvm::Expected<Halide::Target> t = cudaKernelTarget(target, "PTX of kernel " + spec.name);
  if (!t)
    return t.takeError();
  return describeCuda(buildGemmCudaPipeline(spec), spec.name, *t, /*ptx=*/true);
}

llvm::Expected<std::string> describeAttentionKernelPtx(const AttentionKernelSpec &spec,
                                                       llvm::StringRef target,
                                                       llvm::StringRef mainName) {
  llvm::Expected<Halide::Target> t = cudaKernelTarget(target, "PTX of kernel " + spec.name);
  if (!t)
    return t.takeError();
  return describeCudaAttention(spec, *t, /*ptx=*/true, mainName);
}

llvm::Error compileDeviceLoopKernel(const DeviceLoopKernelSpec &spec, llvm::StringRef target,
                                    llvm::StringRef objectPath) {
  llvm::Expected<Halide::Target> t = cudaKernelTarget(target, "loop kernel " + spec.name);
  if (!t)
    return t.takeError();
  std::vector<Halide::Argument> arguments;
  auto built = buildDeviceLoopPipeline(spec, /*gpuSchedule=*/true, arguments);
  return compileCudaObject(std::move(built), spec.name, *t, objectPath, arguments);
}

llvm::Expected<std::string> describeDeviceLoopKernel(const DeviceLoopKernelSpec &spec,
                                                     llvm::StringRef target, bool ptx) {
  llvm::Expected<Halide::Target> t = cudaKernelTarget(target, "loop kernel " + spec.name);
  if (!t)
    return t.takeError();
  std::vector<Halide::Argument> arguments;
  auto built = buildDeviceLoopPipeline(spec, /*gpuSchedule=*/true, arguments);
  return describeCuda(std::move(built), spec.name, *t, ptx, arguments);
}

} // namespace mlir::xf
