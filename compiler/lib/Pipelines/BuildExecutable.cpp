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
llvm::Error link(llvm::ArrayRef<std::string> objects, llvm::StringRef output, bool shared,
                 bool trainer, llvm::StringRef publicApi = "") {
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
  if (!shared && trainer) {
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

/// A tensor-core GEMM's two objects: Halide's fp32 pipeline as `<name>_fp32` (the GEMV rows),
/// and the launcher `<name>` with the PTX (TensorCoreGemm.h).
llvm::Error provideTensorCoreGemm(MLIRContext *ctx, const GemmKernelSpec &spec,
                                  const CodegenOptions &options,
                                  llvm::StringRef kernelTarget, ObjectSource &source,
                                  ScratchDirectory &dir, std::vector<std::string> &objects) {
  GemmKernelSpec fallback = spec;
  fallback.name = fp32FallbackName(spec);
  objects.push_back(dir.file(fallback.name + ".o"));
  if (llvm::Error e = source.provide(fallback.name, kernelSignature(gemmKernelAttr(ctx, fallback)),
                                     gemmObjectKey(ctx, fallback, kernelTarget), objects.back(),
                                     [&](llvm::StringRef path) {
                                       return compileGemmKernel(fallback, options.target, path);
                                     }))
    return e;
  objects.push_back(dir.file(spec.name + ".o"));
  const char *precision = gpuMatmulName(options.gpuMatmul);
  int capability = cudaCapabilityOf(kernelTarget);
  return source.provide(
      spec.name, kernelSignature(gemmKernelAttr(ctx, spec)) + ", tensor cores " + precision,
      gemmObjectKey(ctx, spec, (kernelTarget + "+tensor-cores-" + precision).str()), objects.back(),
      [&](llvm::StringRef path) {
        return compileTensorCoreGemmLauncher(spec, options.gpuMatmul, capability, path);
      });
}

/// A tensor-core attention's objects: Halide's pipeline as `<name>_fp32` (the decode steps'
/// merge), and the launcher `<name>` with the PTX (TensorCoreAttention.h).
llvm::Error provideTensorCoreAttention(MLIRContext *ctx, const AttentionKernelSpec &spec,
                                       const CodegenOptions &options,
                                       llvm::StringRef kernelTarget, ObjectSource &source,
                                       ScratchDirectory &dir, std::vector<std::string> &objects) {
  AttentionKernelSpec fallback = spec;
  fallback.name = attentionFp32Name(spec);
  objects.push_back(dir.file(fallback.name + ".o"));
  if (llvm::Error e = source.provide(
          fallback.name, kernelSignature(attentionKernelAttr(ctx, fallback)),
          attentionObjectKey(ctx, fallback, kernelTarget), objects.back(),
          [&](llvm::StringRef path) { return compileAttentionKernel(fallback, options.target, path); }))
    return e;
  objects.push_back(dir.file(spec.name + ".o"));
  const char *precision = gpuMatmulName(options.gpuMatmul);
  return source.provide(
      spec.name, kernelSignature(attentionKernelAttr(ctx, spec)) + ", tensor cores " + precision,
      attentionObjectKey(ctx, spec, (kernelTarget + "+tensor-cores-" + precision).str()),
      objects.back(), [&](llvm::StringRef path) {
        return compileTensorCoreAttentionLauncher(spec, options.gpuMatmul,
                                                  cudaCapabilityOf(kernelTarget), path);
      });
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
  for (const GemmKernelSpec &spec : kernels.gemms) {
    TensorCoreGemmPlan plan = tensorCoreGemmPlan(spec, options.gpuMatmul);
    if (options.log && options.gpuMatmul != GpuMatmul::Fp32)
      *options.log << "xfc: " << spec.name << ": "
                   << (plan.tensorCores ? "tensor cores, " : "Halide fp32, ") << plan.why << "\n";
    if (plan.tensorCores) {
      if (llvm::Error e = provideTensorCoreGemm(ctx, spec, options, *kernelTarget, source, dir, objects))
        return e;
      continue;
    }
    objects.push_back(dir.file(spec.name + ".o"));
    if (llvm::Error e = source.provide(spec.name, kernelSignature(gemmKernelAttr(ctx, spec)),
                                       gemmObjectKey(ctx, spec, *kernelTarget), objects.back(),
                                       [&](llvm::StringRef path) {
                                         return compileGemmKernel(spec, options.target, path);
                                       }))
      return e;
  }
  for (const AttentionKernelSpec &spec : kernels.attentions) {
    TensorCoreAttentionPlan plan = tensorCoreAttentionPlan(spec, options.gpuMatmul);
    if (options.log && options.gpuMatmul != GpuMatmul::Fp32)
      *options.log << "xfc: " << spec.name << ": "
                   << (plan.tensorCores ? "tensor cores, " : "Halide fp32, ") << plan.why << "\n";
    if (plan.tensorCores) {
      if (llvm::Error e =
              provideTensorCoreAttention(ctx, spec, options, *kernelTarget, source, dir, objects))
        return e;
    } else {
      objects.push_back(dir.file(spec.name + ".o"));
      if (llvm::Error e = source.provide(
              spec.name, kernelSignature(attentionKernelAttr(ctx, spec)),
              attentionObjectKey(ctx, spec, *kernelTarget), objects.back(),
              [&](llvm::StringRef path) { return compileAttentionKernel(spec, options.target, path); }))
        return e;
    }
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

llvm::Expected<std::string> mlir::xf::describeKernels(ModuleOp host,
                                                      const CodegenOptions &options, bool ptx) {
  HostKernels kernels = hostKernelsOf(host);
  llvm::Expected<std::string> halideTarget = halideTargetString(options.target);
  if (!halideTarget)
    return halideTarget.takeError();
  std::string text;
  for (const GemmKernelSpec &spec : kernels.gemms) {
    if (ptx && tensorCoreGemmPlan(spec, options.gpuMatmul).tensorCores) {
      auto tc = tensorCoreGemmPtx(spec, options.gpuMatmul, cudaCapabilityOf(*halideTarget));
      if (!tc)
        return tc.takeError();
      text += "// ----- " + spec.name + "_tc (tensor cores, " +
              gpuMatmulName(options.gpuMatmul) + ")\n" + *tc + "\n";
    }
    auto stmt = ptx ? describeGemmKernelPtx(spec, options.target)
                    : describeGemmKernel(spec, options.target);
    if (!stmt)
      return stmt.takeError();
    // On the tensor-core path Halide's pipeline is the one of the fewest rows, `<name>_fp32`.
    bool fallback = tensorCoreGemmPlan(spec, options.gpuMatmul).tensorCores;
    text += "// ----- " + (fallback ? fp32FallbackName(spec) : spec.name) + "\n" + *stmt + "\n";
  }
  for (const AttentionKernelSpec &spec : kernels.attentions) {
    bool tensorCores = tensorCoreAttentionPlan(spec, options.gpuMatmul).tensorCores;
    if (ptx && tensorCores) {
      auto tc = tensorCoreAttentionPtx(spec, options.gpuMatmul, cudaCapabilityOf(*halideTarget));
      if (!tc)
        return tc.takeError();
      text += "// ----- " + spec.name + "_tc (tensor cores, " +
              gpuMatmulName(options.gpuMatmul) + ")\n" + *tc + "\n";
    }
    auto stmt = ptx ? describeAttentionKernelPtx(spec, options.target)
                    : describeAttentionKernel(spec, options.target);
    if (!stmt)
      return stmt.takeError();
    text += "// ----- " + (tensorCores ? attentionFp32Name(spec) : spec.name) + "\n" + *stmt + "\n";
  }
  for (const DeviceLoopKernelSpec &spec : kernels.deviceLoops) {
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
  HostKernels kernels = hostKernelsOf(host);
  llvm::Expected<std::string> halideTarget = halideTargetString(options.target);
  if (!halideTarget)
    return halideTarget.takeError();
  std::string text;
  // Each kernel's path and why, then (on tensor cores) its MLIR as written or as NVVM.
  auto print = [&](const std::string &name, const auto &plan, auto source,
                   auto lower) -> llvm::Error {
    text += "// ----- " + name + ": " + (plan.tensorCores ? "tensor cores, " : "Halide fp32, ") +
            plan.why + "\n";
    if (!plan.tensorCores)
      return llvm::Error::success();
    if (!nvvm) {
      text += source();
      return llvm::Error::success();
    }
    llvm::Expected<std::string> lowered = lower(cudaCapabilityOf(*halideTarget));
    if (!lowered)
      return lowered.takeError();
    text += *lowered;
    return llvm::Error::success();
  };
  for (const GemmKernelSpec &spec : kernels.gemms)
    if (llvm::Error error = print(
            spec.name, tensorCoreGemmPlan(spec, options.gpuMatmul),
            [&] { return tensorCoreGemmSource(spec, options.gpuMatmul); },
            [&](int capability) { return tensorCoreGemmNvvm(spec, options.gpuMatmul, capability); }))
      return std::move(error);
  for (const AttentionKernelSpec &spec : kernels.attentions)
    if (llvm::Error error = print(
            spec.name, tensorCoreAttentionPlan(spec, options.gpuMatmul),
            [&] { return tensorCoreAttentionSource(spec, options.gpuMatmul); },
            [&](int capability) {
              return tensorCoreAttentionNvvm(spec, options.gpuMatmul, capability);
            }))
      return std::move(error);
  return text;
}
