//===- xfc.cpp - the xf compiler driver -----------------------------------===//
//
// xfc FILE --emit=STAGE [-o OUT] [-D NAME=VALUE]... [--tuning-db FILE]
// xfc tune FILE [-D ...] [--budget 10m] [--db FILE] [--lengths 1,128] ...
// xfc import DIR [-o FILE.xf]: a spec from a Hugging Face model directory (Import.cpp).
// Reads a spec, runs the frontend, then the pass pipeline that reaches the
// requested stage, and prints that stage. `xfc tune` lowers the spec to its
// kernels and searches their schedules on this machine (docs/tuning.md). Later stages (fused,
// kernels, halide, llvm, asm, obj, exe) are further cases of `Emit` and of `buildPipeline`. The
// flags and the combinations refused are Options.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Bf16Products.h"
#include "xf/Check/Check.h"
#include "Files.h"
#include "Import.h"
#include "Options.h"

#include "xf/Conversion/KernelDeclarations.h"
#include "xf/Conversion/Passes.h"
#include "xf/Pipelines/ObjectCache.h"
#include "xf/Pipelines/Pipelines.h"
#include "xf/Spec/Frontend.h"
#include "xf/Spec/Parser.h"
#include "xf/Target/EmitObject.h"
#include "xf/Transforms/Passes.h"
#include "xf/Tuning/GpuTiming.h"
#include "xf/Tuning/Tuner.h"
#include "xfrt/Gguf.h"
#include "xfrt/Manifest.h"
#include "xfrt/MessageText.h"
#include "xfrt/OutputFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"

#include <atomic>
#include <csignal>
#include <set>
#include <string>

using namespace xf::spec;
using namespace xfc;

namespace {
std::atomic<bool> interrupted{false};
extern "C" void onInterrupt(int) { interrupted = true; }
} // namespace

/// The block type of each tensor the --quantized-like file keeps in Q8_0/Q4_0/Q4_1 blocks
/// (nothing without the option).
static mlir::LogicalResult quantizedLikeBlocks(llvm::StringMap<mlir::xf::WeightBlocks> &out) {
  if (quantizedLike.empty())
    return mlir::success();
  xfrt::Expected<std::unique_ptr<xfrt::GgufFile>> file = xfrt::GgufFile::open(quantizedLike);
  if (!file) {
    llvm::errs() << "xfc: error: " << file.message() << "\n";
    return mlir::failure();
  }
  for (const xfrt::GgufTensor &t : (*file)->header().tensors) {
    using xfrt::GgmlType;
    using mlir::xf::WeightBlocks;
    WeightBlocks blocks = t.type == GgmlType::Q8_0   ? WeightBlocks::Q8_0
                          : t.type == GgmlType::Q4_0 ? WeightBlocks::Q4_0
                          : t.type == GgmlType::Q4_1 ? WeightBlocks::Q4_1
                                                     : WeightBlocks::None;
    if (blocks != WeightBlocks::None)
      out[t.name] = blocks;
  }
  return mlir::success();
}

/// What the fusion stage folds for this target.
static mlir::xf::FusionOptions fusionOptions() {
  mlir::xf::FusionOptions options;
  // The tensor-core GEMMs and attention have neither a norm prologue nor a rotation: with
  // --gpu-matmul=tf32|bf16 norms and RoPE stay kernels of their own.
  const bool cudaFp32 = mlir::xf::isCudaTarget(target) && gpuMatmul == mlir::xf::GpuMatmul::Fp32;
  options.normIntoGemm = cudaFp32;
  options.ropeIntoAttention = !mlir::xf::isCudaTarget(target) || cudaFp32;
  return options;
}

/// The passes from the xf dialect to `action`'s stage.
static mlir::LogicalResult buildPipeline(Emit action, mlir::PassManager &pm) {
  // @forward_packed beside @forward (the batch explicit in the IR), so the
  // fusion and schedules below apply to it.
  if (action != Emit::AST)
    pm.addPass(mlir::xf::createPackSequences());
  if (train) { // the backward of the decomposed ops, then fusion as usual
    pm.addNestedPass<mlir::func::FuncOp>(mlir::xf::createDecomposeMultiHeadAttention());
    pm.addPass(mlir::xf::createDifferentiate());
  }
  switch (action) {
  case Emit::AST:
  case Emit::Xf:
    return mlir::success(); // the frontend's own output
  case Emit::Fused:
    mlir::xf::buildFusionPipeline(pm, fusionOptions());
    return mlir::success();
  default:
    break;
  }
  llvm::Expected<mlir::xf::VectorShape> shape = mlir::xf::vectorShapeOf(target);
  if (!shape) {
    llvm::errs() << "xfc: error: " << llvm::toString(shape.takeError()) << "\n";
    return mlir::failure();
  }
  if (verbose && target == "host")
    if (std::vector<std::string> leftOut = mlir::xf::hostFeaturesLeftOut(); !leftOut.empty())
      llvm::errs() << "xfc: --target host: this CPU or its OS does not enable "
                   << llvm::join(leftOut, ", ") << ", which Halide's host target names; "
                   << "the kernels are built without them\n";
  mlir::xf::KernelScheduleOptions options;
  options.fusion = fusionOptions();
  options.defaults.vectorWidth = shape->floatsPerVector;
  options.defaults.vectorRegisters = shape->registers;
  options.defaults.cuda = mlir::xf::isCudaTarget(target);
  // Each weight's storage, decided once (xf-assign-weight-storage) and read from the IR after.
  options.storage.weightType = weightType == WeightType::BF16 ? "bf16" : "f32";
  llvm::StringMap<mlir::xf::WeightBlocks> blocks;
  if (mlir::failed(quantizedLikeBlocks(blocks)))
    return mlir::failure();
  for (const auto &entry : blocks)
    options.storage.blockParameters.push_back(
        (entry.first() + "=" + mlir::xf::weightBlocksName(entry.second)).str());
  if (!quantizedLike.empty() && weightType == WeightType::BF16) {
    llvm::errs() << "xfc: error: --quantized-like and --weight-type=bf16 are exclusive\n";
    return mlir::failure();
  }
  if (q8GemmInputs && quantizedLike.empty()) {
    llvm::errs() << "xfc: error: --q8-gemm-inputs needs --quantized-like\n";
    return mlir::failure();
  }
  if (bf16GemmInputs && weightType != WeightType::BF16) {
    llvm::errs() << "xfc: error: --bf16-gemm-inputs needs --weight-type=bf16\n";
    return mlir::failure();
  }
  // The GEMMs on bf16 weights marked xf.bf16_inputs where bf16 products pay (Bf16Products.h).
  options.storage.bf16GemmInputs = useBf16Products();
  // The CUDA GEMM stages its own tiles in shared memory: weights stay as stored.
  options.packWeightsAtLoad = packWeights == PackWeights::Load && !options.defaults.cuda;
  if (!tuningDbPath.empty() && !tuneMode) {
    llvm::Expected<std::string> targetString = mlir::xf::halideTargetString(target);
    if (!targetString) {
      llvm::errs() << "xfc: error: " << llvm::toString(targetString.takeError()) << "\n";
      return mlir::failure();
    }
    options.tuning.db = tuningDbPath;
    options.tuning.target = *targetString;
    options.tuning.threads = threadCount();
    // A CUDA build takes the entries of one GPU (docs/tuning.md, "CUDA GEMMs").
    if (options.defaults.cuda) {
      llvm::Expected<std::string> gpu = mlir::xf::tuning::selectGpuTarget(tuningDbPath, gpuName);
      if (!gpu) {
        llvm::errs() << "xfc: error: " << llvm::toString(gpu.takeError()) << "\n";
        return mlir::failure();
      }
      if (!gpu->empty())
        options.tuning.target = *gpu, options.tuning.threads = 1;
    }
  }
  mlir::xf::buildKernelPipeline(pm, options);
  return mlir::success();
}

static mlir::LogicalResult report(llvm::Error error) {
  if (!error)
    return mlir::success();
  llvm::errs() << "xfc: error: " << llvm::toString(std::move(error)) << "\n";
  return mlir::failure();
}

/// The object cache for an executable's objects, unless --no-cache. A
/// malformed $XF_CACHE_MAX is an error; a cache that cannot be opened (a
/// read-only home) is a warning, and the build goes on without it.
static mlir::LogicalResult openObjectCache(std::optional<mlir::xf::ObjectCache> &cache) {
  if (noCache)
    return mlir::success();
  auto settings = mlir::xf::objectCacheSettingsFromEnvironment();
  if (!settings)
    return report(settings.takeError());
  if (!*settings)
    return mlir::success(); // no home directory to keep a cache in
  auto opened = mlir::xf::ObjectCache::open(**settings, [](const llvm::Twine &message) {
    llvm::errs() << "xfc: warning: " << message << "\n";
  });
  if (!opened) {
    llvm::errs() << "xfc: warning: building without the object cache: "
                 << llvm::toString(opened.takeError()) << "\n";
    return mlir::success();
  }
  cache.emplace(std::move(*opened));
  if (verbose)
    llvm::errs() << "xfc: object cache " << cache->directory() << "\n";
  return mlir::success();
}

/// The host lowering's options (xf-lower-to-host) from the weight flags.
static mlir::FailureOr<mlir::xf::HostOptions> hostOptionsFromFlags() {
  mlir::xf::HostOptions hostOptions;
  hostOptions.cudaDevice = mlir::xf::isCudaTarget(target);
  hostOptions.gpuMatmul = gpuMatmul; // the tensor-core GEMMs take split-K partials
  // The default is f16 on the CPU; a CUDA target keeps float32 (asked for f16, an error).
  hostOptions.halfKvCache = kvCacheType == KvCacheType::F16 &&
                            !(hostOptions.cudaDevice && !kvCacheType.getNumOccurrences());
  if (hostOptions.halfKvCache && hostOptions.cudaDevice) {
    llvm::errs() << "xfc: error: --kv-cache-type=f16 is not supported with --target cuda\n";
    return mlir::failure();
  }
  if (!hostOptions.cudaDevice && !halideDecodeAttention) {
    llvm::Expected<int> ceiling = mlir::xf::decodeAttentionIsaCeiling(target);
    if (!ceiling) {
      llvm::errs() << "xfc: error: " << llvm::toString(ceiling.takeError()) << "\n";
      return mlir::failure();
    }
    hostOptions.decodeAttentionIsa = *ceiling;
  }
  if (q8GemmInputs) {
    llvm::Expected<int> ceiling = mlir::xf::blockDotIsaCeiling(target);
    if (!ceiling) {
      llvm::errs() << "xfc: error: " << llvm::toString(ceiling.takeError()) << "\n";
      return mlir::failure();
    }
    hostOptions.q8GemmInputs = true;
    hostOptions.blockDotIsa = *ceiling;
  }
  return hostOptions;
}

/// The stages after the host lowering: host code, Halide kernels, LLVM, objects.
static mlir::LogicalResult emitBackend(Emit action, mlir::ModuleOp host, llvm::raw_ostream &os,
                                       bool trainer = train) {
  mlir::xf::CodegenOptions options;
  options.target = target;
  options.optLevel = std::min(optLevel.getValue(), 3u);
  options.keepIntermediates = keepTemps;
  switch (action) {
  case Emit::Host:
    host.print(os);
    return mlir::success();
  case Emit::MlirGpu:
  case Emit::Nvvm: {
    auto text = mlir::xf::describeTensorCoreKernels(host, options, action == Emit::Nvvm);
    if (!text)
      return report(text.takeError());
    os << *text;
    return mlir::success();
  }
  case Emit::Halide:
  case Emit::Ptx: {
    auto text = mlir::xf::describeKernels(host, options, action == Emit::Ptx);
    if (!text)
      return report(text.takeError());
    os << *text;
    return mlir::success();
  }
  case Emit::Exe:
  case Emit::Lib: {
    std::optional<mlir::xf::ObjectCache> cache;
    if (mlir::failed(openObjectCache(cache)))
      return mlir::failure();
    options.cache = cache ? &*cache : nullptr;
    options.log = verbose ? &llvm::errs() : nullptr;
    options.trainer = trainer;
    options.publicApi = action == Emit::Lib;
    options.staticArchive = options.publicApi && llvm::StringRef(outputFilename).ends_with(".a");
    // Linked into a temporary and renamed: a failed link keeps the previous executable.
    return report(xfc::writeThroughTemporary(outputFilename,
                                             /*executable=*/!options.staticArchive,
                                             [&](llvm::StringRef temporary) {
                                               return mlir::xf::buildExecutable(
                                                   host, options, temporary);
                                             }));
  }
  default:
    break;
  }
  mlir::OwningOpRef<mlir::ModuleOp> llvmModule = mlir::xf::lowerHostToLLVM(host);
  if (!llvmModule)
    return mlir::failure();
  if (action == Emit::Obj)
    return report(xfc::writeThroughTemporary(
        outputFilename, /*executable=*/false, [&](llvm::StringRef temporary) {
          return mlir::xf::emitObjectFile(*llvmModule, options.optLevel, temporary);
        }));
  auto text = action == Emit::LLVM ? mlir::xf::emitLLVMIR(*llvmModule, options.optLevel)
                                   : mlir::xf::emitAssembly(*llvmModule, options.optLevel);
  if (!text)
    return report(text.takeError());
  os << *text;
  return mlir::success();
}

static mlir::LogicalResult tuneHostKernels(mlir::MLIRContext &context, mlir::ModuleOp host);

/// `xfc host.mlir`: a host module as xf-lower-to-host wrote it (xf-opt, xfc --emit=host), its
/// kernels declared in it, built, printed or tuned (`xfc tune host.mlir`: the kernels it
/// declares, under the database keys the spec's tune uses) as the spec's own would be. The
/// host lowering's options were decided when it was written: given again they would be
/// ignored, so they are refused; --target must be the kind of target (CUDA or not) it was
/// lowered for.
static mlir::LogicalResult emitFromHostModule(Emit action, llvm::raw_ostream &os) {
  if (check || (!tuneMode && (action == Emit::AST || action == Emit::Xf ||
                              action == Emit::Fused || action == Emit::Kernels))) {
    llvm::errs() << "xfc: error: " << inputFilename
                 << " is a host module: --emit=ast|xf|fused|kernels and --check need the spec\n";
    return mlir::failure();
  }
  for (const llvm::cl::Option *option :
       std::initializer_list<const llvm::cl::Option *>{
           &weightType, &packWeights, &bf16GemmInputs, &bf16Products, &quantizedLike,
           &q8GemmInputs, &halideDecodeAttention, &kvCacheType, &gpuMatmul,
           std::addressof(defines)}) {
    if (option->getNumOccurrences()) {
      llvm::errs() << "xfc: error: --" << option->ArgStr << " was decided when " << inputFilename
                   << " was lowered (xf-opt --xf-lower-to-host's options)\n";
      return mlir::failure();
    }
  }
  mlir::DialectRegistry registry;
  registerFrontendDialects(registry);
  registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect>();
  mlir::MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> host =
      mlir::parseSourceFile<mlir::ModuleOp>(inputFilename, sourceMgr, &context);
  if (!host)
    return mlir::failure();
  auto manifest = host->lookupSymbol<mlir::LLVM::GlobalOp>("xf_model_manifest");
  auto text = manifest ? llvm::dyn_cast_or_null<mlir::StringAttr>(manifest.getValueOrNull())
                       : mlir::StringAttr();
  if (!text) {
    llvm::errs() << "xfc: error: " << inputFilename
                 << ": no xf_model_manifest: not a module xf-lower-to-host wrote\n";
    return mlir::failure();
  }
  xfrt::Expected<xfrt::Manifest> model =
      xfrt::parseManifest(text.getValue().take_while([](char c) { return c != '\0'; }));
  if (!model) {
    llvm::errs() << "xfc: error: " << inputFilename << ": its manifest: " << model.message()
                 << "\n";
    return mlir::failure();
  }
  if (model->cuda != mlir::xf::isCudaTarget(target)) {
    llvm::errs() << "xfc: error: " << inputFilename << " was lowered for "
                 << (model->cuda ? "a CUDA target" : "the CPU") << ", not --target " << target
                 << "\n";
    return mlir::failure();
  }
  // The tensor-core precision was decided by the lowering (its GEMM calls take split-K
  // partials): the build reads it from the module (BuildExecutable.cpp); checked here first so
  // that a bad value is one line naming the file.
  if (auto precision = (*host)->getAttrOfType<mlir::StringAttr>(mlir::xf::kGpuMatmulAttr)) {
    std::optional<mlir::xf::GpuMatmul> parsed = mlir::xf::parseGpuMatmul(precision.getValue());
    if (!parsed || *parsed == mlir::xf::GpuMatmul::Fp32 || !model->cuda) {
      llvm::errs() << "xfc: error: " << inputFilename << ": " << mlir::xf::kGpuMatmulAttr
                   << " = \"" << precision.getValue() << "\": expected tf32 or bf16, on a module "
                   << "lowered for a CUDA target\n";
      return mlir::failure();
    }
  }
  if (tuneMode)
    return tuneHostKernels(context, *host);
  // A training step's host module links the trainer's main. --train cannot make one of an
  // inference module (it would build the inference executable, its weights perhaps bf16).
  bool trainer = bool(host->lookupSymbol<mlir::func::FuncOp>("xf_train_step"));
  if (train && !trainer) {
    llvm::errs() << "xfc: error: --train: " << inputFilename
                 << " has no training step (xf_train_step): it was lowered without --train\n";
    return mlir::failure();
  }
  return emitBackend(action, *host, os, trainer);
}

/// `xfc --check`: the kernel-level module built and compared with the
/// interpreter on the frontend's module.
static mlir::LogicalResult runCheck(mlir::ModuleOp xfModule, mlir::ModuleOp kernels) {
  // The check builds with a float32 cache: its 1e-4 against the xf semantics is no bound for
  // keys and values rounded to float16 (those are checked against the oracle, docs/abi.md).
  if (kvCacheType == KvCacheType::F16 && kvCacheType.getNumOccurrences()) {
    llvm::errs() << "xfc: error: --check builds with a float32 KV cache; a float16 one "
                    "(--kv-cache-type=f16) is checked against the oracle "
                    "(test/e2e/check_examples.py --kv-cache-type f16)\n";
    return mlir::failure();
  }
  mlir::xf::check::CheckOptions options;
  if (tuneLengths.getNumOccurrences() && mlir::failed(parseLengths(options.lengths)))
    return mlir::failure();
  options.seed = tuneSeed;
  options.fault = checkFault;
  options.verbose = verbose;
  options.codegen.target = target;
  options.codegen.optLevel = std::min(optLevel.getValue(), 3u);
  std::optional<mlir::xf::ObjectCache> cache;
  if (mlir::failed(openObjectCache(cache)))
    return mlir::failure();
  options.codegen.cache = cache ? &*cache : nullptr;
  return mlir::xf::check::checkModel(xfModule, kernels, options, llvm::outs());
}

/// `xfc tune --target cuda` (docs/tuning.md, "CUDA GEMMs"): with --export, the timing
/// program of the GEMMs' and attentions' GPU schedules; without, that program run here on
/// the GPU within --budget and its times imported into --db.
static mlir::LogicalResult tuneCudaKernels(mlir::MLIRContext &context, mlir::ModuleOp host) {
  mlir::xf::tuning::GpuExportOptions options;
  options.target = target;
  options.candidates = tuneCandidates;
  options.anderson2021Plugin = tuneAnderson2021;
  options.seed = tuneSeed;
  if (mlir::failed(parseLengths(options.lengths)))
    return mlir::failure();
  std::optional<double> budget = parseDuration(tuneBudget);
  if (!budget) {
    llvm::errs() << "xfc: error: --budget " << xfrt::quoteInput(tuneBudget)
                 << ": expected a duration such as 90s, 10m or 1h (at most a week)\n";
    return mlir::failure();
  }
  options.directory = tuneExport;
  llvm::SmallString<128> scratch;
  if (options.directory.empty()) {
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("xfc-tune-cuda", scratch))
      return report(llvm::createStringError("a scratch directory: " + ec.message()));
    options.directory = std::string(scratch);
  }
  llvm::scope_exit cleanUp([&] {
    if (!scratch.empty())
      llvm::sys::fs::remove_directories(scratch);
  });
  if (mlir::failed(report(mlir::xf::tuning::exportGpuTiming(context, host, options, llvm::errs()))))
    return mlir::failure();
  if (!tuneExport.empty())
    return mlir::success();
  llvm::SmallString<256> program(scratch), times(scratch);
  llvm::sys::path::append(program, "xf-gpu-timing");
  llvm::sys::path::append(times, "gpu-times.json");
  std::string seconds = std::to_string(*budget);
  llvm::StringRef argv[] = {program, "--budget", seconds, "--out", times};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, {}, 0, 0, &message);
  if (rc != 0 && rc != 3) // 3: the budget ended before the last kernel
    return report(llvm::createStringError("the timing program failed (exit " +
                                          std::to_string(rc) + ") " + message));
  mlir::xf::tuning::GpuImportOptions import{std::string(times), tuningDbPath, tuneReport};
  return report(mlir::xf::tuning::importGpuTimes(context, import, llvm::errs()));
}

/// `xfc tune --import FILE --db DB`: a GPU's times into the database.
static int importTimes() {
  mlir::DialectRegistry registry;
  registerFrontendDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::xf::tuning::GpuImportOptions options{tuneImport, tuningDbPath, tuneReport};
  return mlir::failed(report(mlir::xf::tuning::importGpuTimes(context, options, llvm::errs())))
             ? 1
             : 0;
}

/// `xfc tune`: the kernels the host module declares, tuned into the database.
static mlir::LogicalResult tuneHostKernels(mlir::MLIRContext &context, mlir::ModuleOp host) {
  if (mlir::xf::isCudaTarget(target))
    return tuneCudaKernels(context, host);
  mlir::xf::tuning::TuneOptions options;
  options.target = target;
  options.threads = threadCount();
  options.dbPath = tuningDbPath;
  options.seed = tuneSeed;
  options.batch = std::clamp(tuneBatch.getValue(), 1u, 64u);
  options.baselines = tuneBaselines;
  options.reportPath = tuneReport;
  options.comparePath = tuneCompare;
  options.interrupted = &interrupted;
  std::optional<double> budget = parseDuration(tuneBudget);
  if (!budget) {
    llvm::errs() << "xfc: error: --budget " << xfrt::quoteInput(tuneBudget)
                 << ": expected a duration such as 90s, 10m or 1h (at most a week)\n";
    return mlir::failure();
  }
  options.budgetSeconds = *budget;
  options.lengths.clear();
  if (mlir::failed(parseLengths(options.lengths)))
    return mlir::failure();
  if (std::optional<std::string> env = llvm::sys::Process::GetEnv("XF_TUNE_WORKER")) {
    options.workerPath = *env;
  } else {
    std::string self = llvm::sys::fs::getMainExecutable(nullptr, (void *)&threadCount);
    llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(path, "xf-tune-worker");
    options.workerPath = std::string(path);
  }
  if (!llvm::sys::fs::can_execute(options.workerPath)) {
    llvm::errs() << "xfc: error: the tuning worker '" << options.workerPath
                 << "' is missing (set XF_TUNE_WORKER to its path)\n";
    return mlir::failure();
  }
  std::signal(SIGINT, onInterrupt);
  llvm::Error err = mlir::xf::tuning::tuneProgram(context, host, options, llvm::errs());
  std::signal(SIGINT, SIG_DFL);
  if (err)
    return report(std::move(err));
  return interrupted ? mlir::failure() : mlir::success();
}

/// `xfc tune FILE.xf`: the kernels of the lowered model, tuned into the database.
static mlir::LogicalResult runTune(mlir::MLIRContext &context, mlir::ModuleOp kernels) {
  mlir::FailureOr<mlir::xf::HostOptions> hostOptions = hostOptionsFromFlags();
  if (mlir::failed(hostOptions))
    return mlir::failure();
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> host =
      mlir::xf::lowerToHost(kernels, *hostOptions);
  if (mlir::failed(host))
    return mlir::failure();
  return tuneHostKernels(context, **host);
}

static mlir::LogicalResult emit(Emit action, const ModuleAST &ast,
                                llvm::StringRef fileName,
                                DiagnosticEngine &diags,
                                llvm::raw_ostream &os) {
  if (action == Emit::AST) {
    dump(ast, os);
    return mlir::success();
  }
  mlir::DialectRegistry registry;
  registerFrontendDialects(registry);
  mlir::MLIRContext context(registry);
  // Warnings too (the tuning database's), located with the source line.
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // @forward_packed is a copy of @forward, same locations: what a pass says of both (a
  // database it cannot load, a schedule the target does not take) is printed once.
  std::set<std::string> said;
  mlir::ScopedDiagnosticHandler once(&context, [&](mlir::Diagnostic &d) {
    std::string key;
    llvm::raw_string_ostream text(key);
    text << d.getLocation() << ' ' << int(d.getSeverity()) << ' ' << d.str();
    return mlir::success(!said.insert(key).second); // handled: not printed again
  });
  context.printOpOnDiagnostic(false);
  SemaOptions options;
  options.defines.assign(defines.begin(), defines.end());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildXfModule(context, ast, fileName, options, diags);
  if (!module)
    return mlir::failure();
  mlir::OwningOpRef<mlir::ModuleOp> xfModule;
  if (check) // the interpreter's reference, before the kernel pipeline changes it
    xfModule = mlir::OwningOpRef<mlir::ModuleOp>(module->clone());
  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  if (mlir::failed(buildPipeline(action, pm)))
    return mlir::failure();
  // Past --emit=kernels (and not for --check or tune, which lower the kernel-level module
  // themselves): xf-lower-to-host, whose module (its kernels declared in it) the backend
  // builds from.
  bool lowers = !check && !tuneMode && action != Emit::AST && action != Emit::Xf &&
                action != Emit::Fused && action != Emit::Kernels;
  if (lowers) {
    mlir::FailureOr<mlir::xf::HostOptions> hostOptions = hostOptionsFromFlags();
    if (mlir::failed(hostOptions))
      return mlir::failure();
    pm.addPass(mlir::xf::createLowerToHostPass(*hostOptions));
  }
  if (mlir::failed(pm.run(*module)))
    return mlir::failure();
  if (check)
    return runCheck(*xfModule, *module);
  if (tuneMode)
    return runTune(context, *module);
  if (!lowers) {
    module->print(os);
    return mlir::success();
  }
  return emitBackend(action, *module, os);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Past a file-size limit (ulimit -f) writes fail with EFBIG and are reported (the linker
  // inherits this), rather than SIGXFSZ killing xfc mid-build.
  std::signal(SIGXFSZ, SIG_IGN);
  // `xfc import DIR` writes a spec from a Hugging Face directory; its own command line.
  if (argc > 1 && llvm::StringRef(argv[1]) == "import")
    return xfc::runImport(argc - 1, argv + 1);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  // Pass names for --mlir-print-ir-after=PASS and friends, as in xf-opt
  // (registered before the pass-manager options that parse them).
  mlir::xf::registerXfPasses();
  mlir::xf::registerXfConversionPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerPassManagerCLOptions();
  if (!xfc::parseCommandLine(argc, argv))
    return 1;
  bool binaryOutput = emitAction == Emit::Exe || emitAction == Emit::Obj || emitAction == Emit::Lib;
  // A bad -o fails now, not after the compile; it may not be the spec itself.
  if (outputFilename != "-") {
    if (mlir::failed(report(xfc::checkOutput(outputFilename, /*streamable=*/!binaryOutput))))
      return 1;
    std::vector<xfrt::NamedPath> inputs{xfrt::runningExecutable(),
                                        {"--quantized-like", quantizedLike},
                                        {"--tuning-db", tuningDbPath}};
    if (inputFilename != "-")
      inputs.push_back({"the input", inputFilename});
    if (xfrt::Status s = xfrt::checkDistinctPaths({{"-o", outputFilename}}, inputs); !s) {
      llvm::errs() << "xfc: error: " << s.message() << "\n";
      return 1;
    }
  }

  // `xfc tune` writes the database (after every batch) and the report: both checked now,
  // not after the search.
  if (tuneMode) {
    std::vector<xfrt::NamedPath> outputs{{"--db", tuningDbPath}};
    if (!tuneReport.empty())
      outputs.push_back({"--report", tuneReport});
    for (const xfrt::NamedPath &o : outputs) {
      // The database's directory is created when missing (~/.cache/xf).
      llvm::StringRef parent = llvm::sys::path::parent_path(o.path);
      bool dirMissing =
          o.option == "--db" && !llvm::sys::fs::is_directory(parent.empty() ? "." : parent);
      if (!dirMissing && mlir::failed(report(xfc::checkOutput(o.path, /*streamable=*/false))))
        return 1;
    }
    // (--compare reads --db too, and writes no database.)
    std::vector<xfrt::NamedPath> inputs{xfrt::runningExecutable(),
                                        {"--quantized-like", quantizedLike}};
    if (inputFilename != "-")
      inputs.push_back({"the input", inputFilename});
    if (xfrt::Status s = xfrt::checkDistinctPaths(outputs, inputs); !s) {
      llvm::errs() << "xfc: error: " << s.message() << "\n";
      return 1;
    }
  }

  if (tuneMode && !tuneImport.empty())
    return importTimes();
  if (llvm::StringRef(inputFilename).ends_with(".mlir")) {
    std::string text;
    llvm::raw_string_ostream textStream(text);
    if (mlir::failed(emitFromHostModule(emitAction, binaryOutput ? llvm::nulls() : textStream)))
      return interrupted ? 130 : 1;
    if (!binaryOutput && mlir::failed(report(xfc::writeText(outputFilename, text))))
      return 1;
    return 0;
  }
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> spec =
      xfc::readSpec(inputFilename, kMaxSpecBytes);
  if (!spec) {
    (void)report(spec.takeError());
    return 1;
  }
  std::unique_ptr<llvm::MemoryBuffer> input = std::move(*spec);
  llvm::StringRef fileName =
      inputFilename == "-" ? llvm::StringRef("<stdin>") : inputFilename;
  DiagnosticEngine diags(input->getBuffer(), fileName, llvm::errs());
  std::unique_ptr<ModuleAST> ast =
      parseSpec(input->getBuffer(), fileName, diags);
  if (!ast)
    return 1;

  if (tuneMode || check) {
    emitAction = Emit::Kernels;
    if (mlir::failed(emit(emitAction, *ast, fileName, diags, llvm::nulls())))
      return interrupted ? 130 : 1;
    return 0;
  }
  if (binaryOutput) {
    if (mlir::failed(emit(emitAction, *ast, fileName, diags, llvm::nulls())))
      return 1;
    return 0;
  }
  // The whole text is produced first, then written: a failed compile leaves the previous
  // output as it was.
  std::string text;
  llvm::raw_string_ostream textStream(text);
  if (mlir::failed(emit(emitAction, *ast, fileName, diags, textStream)))
    return 1;
  if (mlir::failed(report(xfc::writeText(outputFilename, text))))
    return 1;
  return 0;
}
