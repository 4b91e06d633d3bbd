//===- BuildExecutable.cpp - objects linked with libxfrt ------------------===//
//
// One object for the host code, one for its manifest, one per Halide
// pipeline the host module declares (KernelDeclarations.h), one Halide runtime, then the system linker (through the C++ compiler xf was built with) with
// the runtime archives. Intermediate files live in a ScratchDirectory; each
// object is copied from the object cache when it holds the object's key
// (ObjectKeys.h), and compiled and stored there otherwise.
//
//===----------------------------------------------------------------------===//

#include "PublicLibrary.h"
#include "ScratchDirectory.h"

#include "xf/Codegen/KernelSpecs.h"
#include "xf/Pipelines/ObjectCache.h"
#include "xf/Pipelines/ObjectKeys.h"
#include "xf/Pipelines/Pipelines.h"
#include "xf/Target/EmitObject.h"
#include "xf/Target/TensorCoreAttention.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "xfrt/RuntimePaths.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <chrono>
#include <climits>

using namespace mlir;
using namespace mlir::xf;

namespace {

/// The C++ compiler driver xf was built with, which links (and knows its C++ library).
llvm::Expected<std::string> linkerDriver() {
  auto driver = llvm::sys::findProgramByName(XF_LINKER_DRIVER);
  if (!driver)
    driver = llvm::sys::findProgramByName("c++");
  if (!driver)
    return llvm::createStringError("no C++ compiler driver found to link with");
  return *driver;
}

/// `publicApi`: a version script naming what the library exports (empty: not a model library).
/// `mainArchive`: the archive with main() (empty: the executable's or the trainer's).
llvm::Error link(llvm::ArrayRef<std::string> objects, llvm::StringRef output, bool shared,
                 bool trainer, llvm::StringRef publicApi = "", llvm::StringRef mainArchive = "") {
  llvm::Expected<std::string> driver = linkerDriver();
  if (!driver)
    return driver.takeError();
  std::vector<std::string> args{*driver, "-o", output.str()};
  // Name the system linker explicitly: the driver may run with a minimal PATH.
  auto linker = llvm::sys::findProgramByName("ld");
  if (!linker)
    linker = llvm::sys::findProgramByName("ld", {"/usr/bin", "/bin", "/usr/local/bin"});
  if (linker && llvm::sys::path::filename(*driver).contains("clang"))
    args.push_back("--ld-path=" + *linker);
  if (shared)
    args.insert(args.end(), {"-shared", "-Wl,-Bsymbolic"});
  args.insert(args.end(), objects.begin(), objects.end());
  if (!publicApi.empty()) {
    args.push_back(("-Wl,--version-script=" + publicApi).str());
    args.insert(args.end(),
                {"-Wl,--whole-archive", XFRT_CAPI_ARCHIVE_PATH, "-Wl,--no-whole-archive"});
#ifndef XF_LINK_SANITIZERS
    args.push_back("-Wl,--no-undefined"); // a library that loads, or none
#endif
  }
  if (!mainArchive.empty()) {
    args.push_back(mainArchive.str());
  } else if (!shared && trainer) {
    args.push_back(XFRT_TRAIN_MAIN_ARCHIVE_PATH);
  } else if (!shared) {
    args.push_back(XFRT_MAIN_ARCHIVE_PATH); // --serve loads libxfrt_serve.so (not linked)
  }
  args.push_back(XFRT_ARCHIVE_PATH);
  for (const char *flag : {XFRT_LINK_FLAGS})
    args.push_back(flag);
#ifdef XF_LINK_SANITIZERS
  args.push_back("-fsanitize=address,undefined");
#endif
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*driver, argv, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return llvm::createStringError("linking " + output.str() + " failed (" + *driver +
                                   " exit " + std::to_string(rc) + ") " + message);
  return llvm::Error::success();
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Puts each object into the scratch directory: a copy of the cache's entry
/// for its key, or compiled (and then stored in the cache).
class ObjectSource {
public:
  ObjectSource(const CodegenOptions &options) : cache(options.cache), log(options.log) {}

  llvm::Error provide(llvm::StringRef label, llvm::StringRef description, llvm::StringRef key,
                      llvm::StringRef path, llvm::function_ref<llvm::Error(llvm::StringRef)> compile) {
    ObjectDigest digest = digestOf(key);
    if (cache && cache->fetch(digest, path)) {
      if (log)
        *log << "xfc: cache hit  " << label << describe(description) << "\n";
      return llvm::Error::success();
    }
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = compile(path))
      return e;
    if (cache)
      cache->store(digest, path), stored = true;
    if (log)
      *log << llvm::formatv("xfc: {0} {1}{2} in {3:F2} s\n",
                            cache ? "cache miss" : "compiled  ", label, describe(description),
                            secondsSince(start));
    return llvm::Error::success();
  }

  /// Keeps the cache within its size once this build has added to it.
  void finish() {
    if (cache && stored)
      cache->evict();
  }

private:
  static std::string describe(llvm::StringRef description) {
    return description.empty() ? "" : " (" + description.str() + ")";
  }
  ObjectCache *cache;
  llvm::raw_ostream *log;
  bool stored = false;
};

/// The host module's code in two: the functions, and the manifest global
/// alone (its kernel declarations left out). The manifest names source lines,
/// so an edit that only moves lines, or marks a kernel tuned, changes the
/// small manifest object and not the code.
struct SplitHostModule {
  OwningOpRef<ModuleOp> code, manifest;
};

llvm::Expected<SplitHostModule> splitManifest(ModuleOp host) {
  SplitHostModule split{hostCodeOf(host), OwningOpRef<ModuleOp>(ModuleOp::create(host.getLoc()))};
  auto global = split.code->lookupSymbol<LLVM::GlobalOp>("xf_model_manifest");
  if (!global) // not a module xf-lower-to-host wrote
    return llvm::createStringError("the host module has no xf_model_manifest");
  global->moveBefore(split.manifest->getBody(), split.manifest->getBody()->end());
  return split;
}

/// A module as text for its key: without locations (a moved line changes no
/// code) and without elided constants.
std::string keyText(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.enableDebugInfo(false).elideLargeElementsAttrs(INT64_MAX).elideLargeResourceString(
      INT64_MAX);
  module->print(os, flags);
  return text;
}

/// The objects linked into `output` as `options` say: an executable, a shared object, or a
/// model library (shared, or a static archive) with xf.h next to it.
llvm::Error linkOutput(llvm::ArrayRef<std::string> objects, llvm::StringRef output,
                       const CodegenOptions &options, ScratchDirectory &dir) {
  if (!options.publicApi)
    return link(objects, output, options.sharedLibrary, options.trainer);
  if (options.staticArchive) {
    llvm::Expected<std::string> driver = linkerDriver();
    if (!driver)
      return driver.takeError();
    if (llvm::Error e = archivePublicLibrary(*driver, objects, output, dir))
      return e;
  } else {
    std::string versionScript = dir.file("exports.map");
    if (llvm::Error e = writeTextFile(versionScript, publicApiVersionScript()))
      return e;
    if (llvm::Error e = link(objects, output, /*shared=*/true, /*trainer=*/false, versionScript))
      return e;
  }
  return copyPublicHeader(output);
}

// The two kinds of Halide kernel a host module declares, GEMMs and attentions, by overload:
// the signature `xfc -v` names, the object's key and its compilation, the tensor-core plan, the
// name of the Halide pipeline beside a tensor-core kernel, and the launcher of that kernel.
std::string signatureOf(MLIRContext *ctx, const GemmKernelSpec &spec) {
  return kernelSignature(gemmKernelAttr(ctx, spec));
}
std::string signatureOf(MLIRContext *ctx, const AttentionKernelSpec &spec) {
  return kernelSignature(attentionKernelAttr(ctx, spec));
}
std::string objectKeyOf(MLIRContext *ctx, const GemmKernelSpec &spec, llvm::StringRef target) {
  return gemmObjectKey(ctx, spec, target);
}
std::string objectKeyOf(MLIRContext *ctx, const AttentionKernelSpec &spec,
                        llvm::StringRef target) {
  return attentionObjectKey(ctx, spec, target);
}
llvm::Error compileHalideKernel(const GemmKernelSpec &spec, llvm::StringRef target,
                                llvm::StringRef path) {
  return compileGemmKernel(spec, target, path);
}
llvm::Error compileHalideKernel(const AttentionKernelSpec &spec, llvm::StringRef target,
                                llvm::StringRef path) {
  return compileAttentionKernel(spec, target, path);
}
/// The MLIR kernels are CUDA's: a CPU build's kernels are Halide's whatever the plan says.
TensorCoreGemmPlan tensorCorePlanOf(const GemmKernelSpec &spec, GpuMatmul precision,
                                    llvm::StringRef target) {
  if (!isCudaTarget(target))
    return {false, "not a CUDA target"};
  return tensorCoreGemmPlan(spec, precision);
}
TensorCoreAttentionPlan tensorCorePlanOf(const AttentionKernelSpec &spec, GpuMatmul precision,
                                         llvm::StringRef target) {
  if (!isCudaTarget(target))
    return {false, "not a CUDA target"};
  return tensorCoreAttentionPlan(spec, precision);
}
/// A GEMM's pipeline there runs the GEMV rows, an attention's the decode steps' merge.
std::string fp32NameOf(const GemmKernelSpec &spec) { return fp32FallbackName(spec); }
std::string fp32NameOf(const AttentionKernelSpec &spec) { return attentionFp32Name(spec); }
llvm::Error compileLauncher(const GemmKernelSpec &spec, GpuMatmul precision, int capability,
                            llvm::StringRef path) {
  return compileTensorCoreGemmLauncher(spec, precision, capability, path);
}
llvm::Error compileLauncher(const AttentionKernelSpec &spec, GpuMatmul precision,
                            int capability, llvm::StringRef path) {
  return compileTensorCoreAttentionLauncher(spec, precision, capability, path);
}

// `sm90a` receives the PTX of a GEMM's `<name>_wg` where it has one.
llvm::Expected<std::string> tensorCorePtxOf(const GemmKernelSpec &spec, GpuMatmul precision,
                                            int capability, std::string *sm90a) {
  return tensorCoreGemmPtx(spec, precision, capability, sm90a);
}
llvm::Expected<std::string> tensorCorePtxOf(const AttentionKernelSpec &spec, GpuMatmul precision,
                                            int capability, std::string *) {
  return tensorCoreAttentionPtx(spec, precision, capability);
}
/// The MLIR kernel's functions with dynamic shared memory (the launch gives it; its PTX has no
/// size): dynamicSharedText.
std::string dynamicSharedOf(const GemmKernelSpec &spec, GpuMatmul precision) {
  return tensorCoreGemmDynamicSharedText(spec, precision, /*sm90a=*/false);
}
std::string dynamicSharedOf(const AttentionKernelSpec &spec, GpuMatmul precision) {
  return dynamicSharedText(attentionBlockShapes(spec, precision));
}
/// The same of a GEMM's `<name>_wg` (its own PTX module); attentions have none.
std::string wgmmaDynamicSharedOf(const GemmKernelSpec &spec) {
  return wgmmaDynamicSharedEntry(spec);
}
std::string wgmmaDynamicSharedOf(const AttentionKernelSpec &) { return ""; }
/// Halide's lowered statement of the pipeline, or its PTX on a CUDA target.
/// `name`: the one its object is compiled under (fp32NameOf beside an MLIR kernel), which its
/// kernels' names derive from.
llvm::Expected<std::string> describeHalideKernel(GemmKernelSpec spec, llvm::StringRef target,
                                                 bool ptx, const std::string &name) {
  spec.name = name;
  return ptx ? describeGemmKernelPtx(spec, target) : describeGemmKernel(spec, target);
}
llvm::Expected<std::string> describeHalideKernel(const AttentionKernelSpec &spec,
                                                 llvm::StringRef target, bool ptx,
                                                 const std::string &name) {
  return ptx ? describeAttentionKernelPtx(spec, target, name)
             : describeAttentionKernel(spec, target, name);
}

/// A kernel's path as `xfc -v` and --emit=mlir-gpu|nvvm say it ("tensor cores, ",
/// "fp32 FMA (MLIR), ", "Halide fp32, ") and why.
template <typename Plan>
std::string pathAndWhy(const Plan &plan) {
  return std::string(plan.path()) + ", " + plan.why;
}

/// Where buildExecutable's objects come from and go.
/// The tensor-core precision the lowering chose (`xf.gpu_matmul`: the host code's calls depend
/// on it, so the build follows the module); absent: fp32.
llvm::Expected<GpuMatmul> gpuMatmulOf(ModuleOp host) {
  auto name = host->getAttrOfType<StringAttr>(kGpuMatmulAttr);
  if (!name)
    return GpuMatmul::Fp32;
  std::optional<GpuMatmul> precision = parseGpuMatmul(name.getValue());
  if (!precision || *precision == GpuMatmul::Fp32)
    return llvm::createStringError(llvm::formatv(
        "{0} = \"{1}\": expected tf32 or bf16", kGpuMatmulAttr, name.getValue()));
  return *precision;
}

struct ObjectSink {
  MLIRContext *ctx;
  const CodegenOptions &options;
  GpuMatmul precision;
  llvm::StringRef kernelTarget;
  ObjectSource &source;
  ScratchDirectory &dir;
  std::vector<std::string> &objects;
};

/// The object of Halide's pipeline for `spec`, named as `spec` is.
template <typename Spec>
llvm::Error provideHalideKernel(ObjectSink &sink, const Spec &spec) {
  sink.objects.push_back(sink.dir.file(spec.name + ".o"));
  return sink.source.provide(spec.name, signatureOf(sink.ctx, spec),
                             objectKeyOf(sink.ctx, spec, sink.kernelTarget), sink.objects.back(),
                             [&](llvm::StringRef path) {
                               return compileHalideKernel(spec, sink.options.target, path);
                             });
}

/// A GEMM's or an attention's objects: Halide's pipeline, or on the tensor-core path two:
/// Halide's pipeline as fp32NameOf(spec) and the launcher `<name>` with the PTX
/// (TensorCoreGemm.h, TensorCoreAttention.h).
template <typename Spec>
llvm::Error provideKernel(ObjectSink &sink, const Spec &spec) {
  const GpuMatmul precision = sink.precision;
  auto plan = tensorCorePlanOf(spec, precision, sink.options.target);
  if (sink.options.log && isCudaTarget(sink.options.target)) // each kernel's path and why
    *sink.options.log << "xfc: " << spec.name << ": " << pathAndWhy(plan) << "\n";
  if (!plan.mlirKernel)
    return provideHalideKernel(sink, spec);
  Spec fallback = spec;
  fallback.name = fp32NameOf(spec);
  if (llvm::Error e = provideHalideKernel(sink, fallback))
    return e;
  sink.objects.push_back(sink.dir.file(spec.name + ".o"));
  // The kernel's own precision: a tensor-core build's attention on the FMA kernel is fp32's
  // object (and shares its cache entry).
  const std::string path =
      std::string(plan.path()) + " " + gpuMatmulName(plan.fma ? GpuMatmul::Fp32 : precision);
  int capability = cudaCapabilityOf(sink.kernelTarget);
  return sink.source.provide(
      spec.name, signatureOf(sink.ctx, spec) + ", " + path,
      objectKeyOf(sink.ctx, spec, (sink.kernelTarget + "+mlir-kernel-" + path).str()),
      sink.objects.back(),
      [&](llvm::StringRef path) { return compileLauncher(spec, precision, capability, path); });
}

} // namespace

llvm::Error mlir::xf::buildExecutable(ModuleOp hostModule, const CodegenOptions &options,
                                      llvm::StringRef output) {
  llvm::Expected<ScratchDirectory> scratch =
      ScratchDirectory::create("xfc", options.keepIntermediates);
  if (!scratch)
    return scratch.takeError();
  ScratchDirectory &dir = *scratch;
  llvm::Expected<std::string> kernelTarget = halideTargetString(options.target);
  if (!kernelTarget)
    return kernelTarget.takeError();
  ObjectSource source(options);
  MLIRContext *ctx = hostModule.getContext();
  llvm::Expected<SplitHostModule> split = splitManifest(hostModule);
  if (!split)
    return split.takeError();
  SplitHostModule &host = *split;
  HostKernels kernels = hostKernelsOf(hostModule);
  std::vector<std::string> objects{dir.file("host.o")};
  if (llvm::Error e = source.provide(
          "host code", "", hostObjectKey(keyText(*host.code), options.optLevel), objects.back(),
          [&](llvm::StringRef path) -> llvm::Error {
            PassManager pm(host.code->getContext());
            buildHostToLLVMPipeline(pm);
            if (failed(pm.run(*host.code)))
              return llvm::createStringError("lowering the host code to LLVM failed");
            return emitObjectFile(*host.code, options.optLevel, path);
          }))
    return e;
  // A single constant: compiled every time, in milliseconds.
  objects.push_back(dir.file("manifest.o"));
  if (llvm::Error e = emitObjectFile(*host.manifest, /*optLevel=*/0, objects.back()))
    return e;
  llvm::Expected<GpuMatmul> precision = gpuMatmulOf(hostModule);
  if (!precision)
    return precision.takeError();
  ObjectSink sink{ctx, options, *precision, *kernelTarget, source, dir, objects};
  for (const GemmKernelSpec &spec : kernels.gemms)
    if (llvm::Error e = provideKernel(sink, spec))
      return e;
  for (const AttentionKernelSpec &spec : kernels.attentions) {
    if (llvm::Error e = provideKernel(sink, spec))
      return e;
    if (!isCudaTarget(*kernelTarget))
      continue;
    // Flash-decoding's range pass (CudaDecodePartials): an object of its own.
    objects.push_back(dir.file(cudaDecodeRangesName(spec) + ".o"));
    if (llvm::Error e = source.provide(
            cudaDecodeRangesName(spec), kernelSignature(attentionKernelAttr(ctx, spec)),
            attentionObjectKey(ctx, spec, *kernelTarget + "+decode-ranges"), objects.back(),
            [&](llvm::StringRef path) {
              return compileAttentionRangesKernel(spec, options.target, path);
            }))
      return e;
    if (!spec.batchedDecode)
      continue;
    // The batched decode step's two functions (HalideKernels.h), an object each.
    for (CudaBatchedPart part : {CudaBatchedPart::Ranges, CudaBatchedPart::Merge}) {
      const std::string name = cudaBatchedName(spec, part);
      objects.push_back(dir.file(name + ".o"));
      if (llvm::Error e = source.provide(
              name, kernelSignature(attentionKernelAttr(ctx, spec)),
              attentionObjectKey(ctx, spec, *kernelTarget + "+" + name.substr(spec.name.size())),
              objects.back(), [&](llvm::StringRef path) {
                return compileAttentionBatchedKernel(spec, part, options.target, path);
              }))
        return e;
    }
  }
  for (const DeviceLoopKernelSpec &spec : kernels.deviceLoops) {
    objects.push_back(dir.file(spec.name + ".o"));
    if (llvm::Error e = source.provide(spec.name, kernelSignature(spec),
                                       deviceLoopObjectKey(spec, *kernelTarget), objects.back(),
                                       [&](llvm::StringRef path) {
                                         return compileDeviceLoopKernel(spec, options.target, path);
                                       }))
      return e;
  }
  objects.push_back(dir.file("halide_runtime.o"));
  if (llvm::Error e = source.provide("Halide runtime", "", halideRuntimeObjectKey(*kernelTarget),
                                     objects.back(), [&](llvm::StringRef path) {
                                       return compileHalideRuntime(options.target, path);
                                     }))
    return e;
  source.finish();
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error e = linkOutput(objects, output, options, dir))
    return e;
  if (options.log)
    *options.log << llvm::formatv("xfc: linked in {0:F2} s\n", secondsSince(start));
  return llvm::Error::success();
}

namespace {

// A host module's kernels, the CUDA capability of the Halide target they build for and their
// --gpu-matmul: what --emit=halide/ptx and --emit=mlir-gpu/nvvm describe them by.
struct KernelsOfModule {
  HostKernels kernels;
  int capability;
  GpuMatmul precision;
};

llvm::Expected<KernelsOfModule> kernelsOfModule(ModuleOp host, const CodegenOptions &options) {
  llvm::Expected<std::string> halideTarget = halideTargetString(options.target);
  if (!halideTarget)
    return halideTarget.takeError();
  llvm::Expected<GpuMatmul> precision = gpuMatmulOf(host);
  if (!precision)
    return precision.takeError();
  return KernelsOfModule{hostKernelsOf(host), cudaCapabilityOf(*halideTarget), *precision};
}

} // namespace

llvm::Expected<std::string> mlir::xf::describeKernels(ModuleOp host, const CodegenOptions &options,
                                                      bool ptx) {
  llvm::Expected<KernelsOfModule> module = kernelsOfModule(host, options);
  if (!module)
    return module.takeError();
  std::string text;
  // On the tensor-core path (its PTX first, with ptx) Halide's pipeline is fp32NameOf(spec).
  auto describe = [&](const auto &spec) -> llvm::Error {
    auto plan = tensorCorePlanOf(spec, module->precision, options.target);
    bool mlirKernel = plan.mlirKernel;
    if (ptx && mlirKernel) {
      std::string sm90a;
      auto tc = tensorCorePtxOf(spec, module->precision, module->capability, &sm90a);
      if (!tc)
        return tc.takeError();
      text += "// ----- " + spec.name +
              (plan.fma ? "_fma (fp32 FMA, MLIR"
                        : "_tc (tensor cores, " + std::string(gpuMatmulName(module->precision))) +
              dynamicSharedOf(spec, module->precision) + ")\n" + *tc + "\n";
      if (!sm90a.empty())
        text += "// ----- " + spec.name +
                "_wg (wgmma, sm_90a, dynamic shared memory: " + wgmmaDynamicSharedOf(spec) + ")\n" +
                sm90a + "\n";
    }
    // Named as the executable's object is (its kernels' names derive from it).
    const std::string name = mlirKernel ? fp32NameOf(spec) : spec.name;
    auto stmt = describeHalideKernel(spec, options.target, ptx, name);
    if (!stmt)
      return stmt.takeError();
    text += "// ----- " + name + "\n" + *stmt + "\n";
    return llvm::Error::success();
  };
  for (const GemmKernelSpec &spec : module->kernels.gemms)
    if (llvm::Error e = describe(spec))
      return std::move(e);
  for (const AttentionKernelSpec &spec : module->kernels.attentions)
    if (llvm::Error e = describe(spec))
      return std::move(e);
  for (const DeviceLoopKernelSpec &spec : module->kernels.deviceLoops) {
    auto stmt = describeDeviceLoopKernel(spec, options.target, ptx);
    if (!stmt)
      return stmt.takeError();
    text += "// ----- " + spec.name + " (" + kernelSignature(spec) + ")\n" + *stmt + "\n";
  }
  return text;
}

llvm::Expected<std::string> mlir::xf::describeTensorCoreKernels(ModuleOp host,
                                                                const CodegenOptions &options,
                                                                bool nvvm) {
  llvm::Expected<KernelsOfModule> module = kernelsOfModule(host, options);
  if (!module)
    return module.takeError();
  std::string text;
  // Each kernel's path and why, then (on tensor cores) its MLIR as written or as NVVM.
  auto print = [&](const std::string &name, const auto &plan, auto source,
                   auto lower) -> llvm::Error {
    text += "// ----- " + name + ": " + pathAndWhy(plan) + "\n";
    if (!plan.mlirKernel)
      return llvm::Error::success();
    if (!nvvm) {
      text += source();
      return llvm::Error::success();
    }
    llvm::Expected<std::string> lowered = lower(module->capability);
    if (!lowered)
      return lowered.takeError();
    text += *lowered;
    return llvm::Error::success();
  };
  for (const GemmKernelSpec &spec : module->kernels.gemms)
    if (llvm::Error error = print(
            spec.name, tensorCorePlanOf(spec, module->precision, options.target),
            [&] { return tensorCoreGemmSource(spec, module->precision); },
            [&](int capability) {
              return tensorCoreGemmNvvm(spec, module->precision, capability);
            }))
      return std::move(error);
  for (const AttentionKernelSpec &spec : module->kernels.attentions)
    if (llvm::Error error = print(
            spec.name, tensorCorePlanOf(spec, module->precision, options.target),
            [&] { return tensorCoreAttentionSource(spec, module->precision); },
            [&](int capability) {
              return tensorCoreAttentionNvvm(spec, module->precision, capability);
            }))
      return std::move(error);
  return text;
}

llvm::Error mlir::xf::linkGpuTimingProgram(llvm::ArrayRef<std::string> objects,
                                           llvm::StringRef tableSource, llvm::StringRef output) {
  // The driver compiles the generated C table as it links.
  std::vector<std::string> inputs{"-x", "c", tableSource.str(), "-x", "none"};
  inputs.insert(inputs.end(), objects.begin(), objects.end());
  return link(inputs, output, /*shared=*/false, /*trainer=*/false, "",
              XFRT_GPU_TIMING_MAIN_ARCHIVE_PATH);
}
