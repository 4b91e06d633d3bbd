//===- xfc.cpp - the xf compiler driver -----------------------------------===//
//
// xfc FILE --emit=STAGE [-o OUT] [-D NAME=VALUE]... [--tuning-db FILE]
// xfc tune FILE [-D ...] [--budget 10m] [--db FILE] [--lengths 1,128] ...
// Reads a spec, runs the frontend, then the pass pipeline that reaches the
// requested stage, and prints that stage. `xfc tune` lowers the spec to its
// kernels and searches their schedules on this machine (docs/tuning.md). Later stages (fused, kernels,
// halide, llvm, asm, obj, exe) are further cases of `Emit` and of
// `buildPipeline`.
//
//===----------------------------------------------------------------------===//

#include "Check.h"
#include "Files.h"

#include "xf/Conversion/Passes.h"
#include "xf/Pipelines/ObjectCache.h"
#include "xf/Pipelines/Pipelines.h"
#include "xf/Spec/Frontend.h"
#include "xf/Spec/Parser.h"
#include "xf/Target/EmitObject.h"
#include "xf/Transforms/Passes.h"
#include "xf/Tuning/Tuner.h"
#include "xfrt/Gguf.h"
#include "xfrt/OutputFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"

#include <atomic>
#include <csignal>
#include <thread>

namespace cl = llvm::cl;
using namespace xf::spec;

namespace {
std::atomic<bool> interrupted{false};
extern "C" void onInterrupt(int) { interrupted = true; }
enum class Emit { AST, Xf, Fused, Kernels, Host, Halide, Ptx, LLVM, Asm, Obj, Exe };

cl::OptionCategory xfcCategory("xfc options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<spec.xf>"),
                                   cl::init("-"), cl::cat(xfcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(xfcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Xf),
    cl::values(
        clEnumValN(Emit::AST, "ast", "the parsed syntax tree"),
        clEnumValN(Emit::Xf, "xf", "the xf dialect (default without -o)"),
        clEnumValN(Emit::Fused, "fused", "xf after MHA decomposition and fusion"),
        clEnumValN(Emit::Kernels, "kernels", "fused kernels with their schedules"),
        clEnumValN(Emit::Host, "host", "the host function, buffers and loop kernels"),
        clEnumValN(Emit::Halide, "halide", "each Halide pipeline's loop nest"),
        clEnumValN(Emit::Ptx, "ptx", "each CUDA kernel's PTX (with --target cuda)"),
        clEnumValN(Emit::LLVM, "llvm", "optimized LLVM IR of the host code"),
        clEnumValN(Emit::Asm, "asm", "assembly of the host code"),
        clEnumValN(Emit::Obj, "obj", "object file of the host code (needs -o)"),
        clEnumValN(Emit::Exe, "exe", "a linked executable (default with -o)")),
    cl::cat(xfcCategory));
cl::opt<unsigned> optLevel("O", cl::Prefix, cl::init(3),
                           cl::desc("Optimization level of the host code, 0-3 (default 3)"),
                           cl::cat(xfcCategory));
cl::opt<std::string> target(
    "target", cl::init("host"),
    cl::desc("Where the executable runs: host (default: this CPU), cuda or cuda-sm_NN (the whole "
             "model on an NVIDIA GPU, PTX for capability NN, default sm_70; docs/gpu.md), or a "
             "Halide target string such as x86-64-linux-avx2-fma"),
    cl::value_desc("host|cuda[-sm_NN]|halide-target"), cl::cat(xfcCategory));
enum class WeightType { F32, BF16 };
cl::opt<WeightType> weightType(
    "weight-type", cl::init(WeightType::F32),
    cl::desc("How GEMM weights and embedding tables are kept in memory"),
    cl::values(clEnumValN(WeightType::F32, "f32", "float32, as in the checkpoint (default)"),
               clEnumValN(WeightType::BF16, "bf16",
                          "bfloat16: half the memory traffic; products still in float32")),
    cl::cat(xfcCategory));
enum class PackWeights { Load, Call };
cl::opt<PackWeights> packWeights(
    "pack-weights", cl::init(PackWeights::Load),
    cl::desc("When GEMM weights are copied into the register-tile layout the kernels read"),
    cl::values(clEnumValN(PackWeights::Load, "load",
                          "once, at load (default): a packed copy of every GEMM weight"),
               clEnumValN(PackWeights::Call, "call",
                          "on every call, inside the kernel: no copy, more work per call")),
    cl::cat(xfcCategory));
cl::opt<bool> bf16GemmInputs(
    "bf16-gemm-inputs", cl::init(false),
    cl::desc("With --weight-type=bf16: also round multi-row GEMM inputs to bfloat16 (AVX-512 "
             "BF16 dot products; float32 sums). Faster prefill, bfloat16-level accuracy"),
    cl::cat(xfcCategory));
cl::opt<std::string> quantizedLike(
    "quantized-like",
    cl::desc("Keep GEMM weights bound [d_out, d_in] (with ᵀ) and embedding tables in the ggml "
             "block type this GGUF file stores each in (Q8_0, Q4_0, Q4_1): the kernels "
             "dequantize blocks as they read them. The executable then needs --weights with "
             "these tensor types (without this option the weights are dequantized to float32 at load)"),
    cl::value_desc("file.gguf"), cl::cat(xfcCategory));
cl::opt<bool> q8GemmInputs(
    "q8-gemm-inputs", cl::init(false),
    cl::desc("With --quantized-like: decode steps (GEMMs of fewer rows than gemv_rows_below) "
             "round each GEMM input row to Q8_0 blocks and use 8-bit integer dot products "
             "(AVX-512 VNNI, AVX-VNNI or AVX2, picked when the executable runs), as llama.cpp "
             "does. Faster decode, 8-bit activation accuracy (docs/correctness.md); prefill "
             "stays exact"),
    cl::cat(xfcCategory));
enum class KvCacheType { F32, F16 };
cl::opt<KvCacheType> kvCacheType(
    "kv-cache-type", cl::init(KvCacheType::F16),
    cl::desc("Element type of the KV cache of the cached-decoding entry points (docs/abi.md, "
             "\"Cached decoding\")"),
    cl::values(clEnumValN(KvCacheType::F32, "f32",
                          "float32 (always with --target cuda): keys and values as computed"),
               clEnumValN(KvCacheType::F16, "f16",
                          "IEEE float16 (default; llama.cpp's default too): half the cache and "
                          "the bytes a decode step reads from it; keys and values rounded as "
                          "stored")),
    cl::cat(xfcCategory));
cl::opt<bool> keepTemps("keep-temps", cl::init(false),
                        cl::desc("Keep the intermediate object files"),
                        cl::cat(xfcCategory));
cl::opt<std::string> tuningDb(
    "tuning-db",
    cl::desc("Tuning database to take kernel schedules from (default: $XF_TUNING_DB, else "
             "~/.cache/xf/tuning.db if it exists; 'none' for default schedules only)"),
    cl::value_desc("file"), cl::cat(xfcCategory));
cl::opt<bool> noCache("no-cache", cl::init(false),
                      cl::desc("Compile every object again, neither reading nor writing the "
                               "object cache ($XF_CACHE_DIR, default ~/.cache/xf/objects, at "
                               "most $XF_CACHE_MAX bytes, default 1G)"),
                      cl::cat(xfcCategory));
cl::opt<bool> verbose("v", cl::init(false),
                      cl::desc("Say for each object whether the object cache held it, and how "
                               "long compiling and linking took"),
                      cl::cat(xfcCategory));
cl::alias verboseLong("verbose", cl::aliasopt(verbose), cl::desc("Alias for -v"),
                      cl::cat(xfcCategory));
cl::opt<int> threads("num-threads", cl::init(0),
                     cl::desc("Threads the executable will run with: picks tuning database "
                              "entries, and the threads `xfc tune` measures with (default: "
                              "this machine's hardware threads)"),
                     cl::cat(xfcCategory));

cl::opt<bool> check("check", cl::init(false),
                    cl::desc("Build the model, run it on random weights at --lengths (default "
                             "1,37,128) and compare it with the xf interpreter; on a mismatch, "
                             "name the first kernel that differs (docs/pipeline.md); with "
                             "--weight-type=bf16, on weights rounded to bfloat16; with "
                             "--quantized-like, on random ggml blocks"),
                    cl::cat(xfcCategory));
cl::opt<std::string>
    checkFault("check-fault", cl::Hidden, cl::desc(xfc::kCheckFaultHelp),
               cl::value_desc("epilogue|schedule|loop|fusion|packed|cached-packed"),
               cl::cat(xfcCategory));

cl::OptionCategory tuneCategory("xfc tune options (xfc tune FILE ...)");
cl::opt<std::string> tuneBudget("budget", cl::init("10m"),
                                cl::desc("Time for all kernels together: 90s, 10m, 1h"),
                                cl::cat(tuneCategory));
cl::opt<std::string> tuneDb("db", cl::desc("Tuning database to write (default: as --tuning-db)"),
                            cl::value_desc("file"), cl::cat(tuneCategory));
cl::opt<std::string> tuneLengths("lengths", cl::init("1,128"),
                                 cl::desc("Sequence lengths to tune for, or to --check (comma-separated; 1-4 "
                                          "tune the decode path)"),
                                 cl::cat(tuneCategory));
cl::opt<unsigned> tuneSeed("seed", cl::init(1),
                           cl::desc("Seed of the search, or of --check's weights and tokens"),
                           cl::cat(tuneCategory));
cl::opt<unsigned> tuneBatch("batch", cl::init(4),
                            cl::desc("Candidates compiled and timed per worker process"),
                            cl::cat(tuneCategory));
cl::opt<bool> tuneBaselines("baselines", cl::init(false),
                            cl::desc("Also time Halide's autoschedulers (Adams2019, Li2018, "
                                     "Mullapudi2016) on each kernel, outside the budget"),
                            cl::cat(tuneCategory));
cl::opt<std::string> tuneCompare("compare",
                                 cl::desc("No search: time the schedules of --db (A) and of this "
                                          "database (B) side by side on every kernel both have, "
                                          "per length, with the default (2 worker batches); "
                                          "prints A / B and writes it to --report"),
                                 cl::value_desc("file"), cl::cat(tuneCategory));
cl::opt<std::string> tuneReport("report",
                                cl::desc("Write a JSON report (per kernel: default, tuned, "
                                         "baselines, best-so-far over time)"),
                                cl::value_desc("file"), cl::cat(tuneCategory));

cl::opt<bool> train(
    "train", cl::init(false),
    cl::desc("Add the training step (Alg. 13): @loss_and_gradients(tokens, targets), the "
             "next-token loss and every checkpoint tensor's gradient (xf-differentiate, "
             "docs/training.md); with -o, the trainer executable (its --help)"),
    cl::cat(xfcCategory));

cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Override a hyperparameter (repeatable): -D L=2 or -DL=2"),
            cl::value_desc("NAME=VALUE"), cl::cat(xfcCategory));
} // namespace

bool tuneMode = false;     // `xfc tune ...`
std::string tuningDbPath; // resolved --tuning-db (empty: none)

int64_t threadCount() {
  return threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

/// --tuning-db, else $XF_TUNING_DB, else ~/.cache/xf/tuning.db; `mustExist`
/// is false for the last, which is only used when it is there.
std::string defaultTuningDb(bool &mustExist) {
  mustExist = true;
  if (std::optional<std::string> env = llvm::sys::Process::GetEnv("XF_TUNING_DB"))
    return *env;
  mustExist = false;
  llvm::SmallString<128> path;
  if (!llvm::sys::path::cache_directory(path))
    return "";
  llvm::sys::path::append(path, "xf", "tuning.db");
  return std::string(path);
}

/// "90s", "10m", "1h", or plain seconds.
std::optional<double> parseDuration(llvm::StringRef text) {
  double scale = 1;
  if (text.consume_back("s"))
    scale = 1;
  else if (text.consume_back("m"))
    scale = 60;
  else if (text.consume_back("h"))
    scale = 3600;
  double value;
  if (text.empty() || text.getAsDouble(value) || !(value > 0) || value * scale > 7 * 86400)
    return std::nullopt;
  return value * scale;
}

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
  options.ropeIntoAttention = !mlir::xf::isCudaTarget(target);
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
  mlir::xf::KernelScheduleOptions options;
  options.fusion = fusionOptions();
  options.defaults.vectorWidth = shape->floatsPerVector;
  options.defaults.vectorRegisters = shape->registers;
  llvm::StringMap<mlir::xf::WeightBlocks> blocks;
  if (mlir::failed(quantizedLikeBlocks(blocks)))
    return mlir::failure();
  for (const auto &entry : blocks)
    options.defaults.blockParameters.push_back(
        (entry.first() + "=" + mlir::xf::weightBlocksName(entry.second)).str());
  if (!tuningDbPath.empty() && !tuneMode) {
    llvm::Expected<std::string> targetString = mlir::xf::halideTargetString(target);
    if (!targetString) {
      llvm::errs() << "xfc: error: " << llvm::toString(targetString.takeError()) << "\n";
      return mlir::failure();
    }
    options.tuning.db = tuningDbPath;
    options.tuning.target = *targetString;
    options.tuning.threads = threadCount();
    options.tuning.bf16Weights = weightType == WeightType::BF16;
    options.tuning.bf16Activations = bf16GemmInputs;
    options.tuning.blockParameters = options.defaults.blockParameters;
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
  hostOptions.bf16Weights = weightType == WeightType::BF16;
  hostOptions.bf16Activations = bf16GemmInputs;
  // The CUDA GEMM stages its own tiles in shared memory: weights stay as stored.
  hostOptions.packWeightsAtLoad = packWeights == PackWeights::Load && !hostOptions.cudaDevice;
  if (bf16GemmInputs && !hostOptions.bf16Weights) {
    llvm::errs() << "xfc: error: --bf16-gemm-inputs needs --weight-type=bf16\n";
    return mlir::failure();
  }
  // The default is f16 on the CPU; a CUDA target keeps float32 (asked for f16, an error).
  hostOptions.halfKvCache = kvCacheType == KvCacheType::F16 &&
                            !(hostOptions.cudaDevice && !kvCacheType.getNumOccurrences());
  if (hostOptions.halfKvCache && hostOptions.cudaDevice) {
    llvm::errs() << "xfc: error: --kv-cache-type=f16 is not supported with --target cuda\n";
    return mlir::failure();
  }
  if (q8GemmInputs && quantizedLike.empty()) {
    llvm::errs() << "xfc: error: --q8-gemm-inputs needs --quantized-like\n";
    return mlir::failure();
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
  if (!quantizedLike.empty()) {
    if (hostOptions.bf16Weights) {
      llvm::errs() << "xfc: error: --quantized-like and --weight-type=bf16 are exclusive\n";
      return mlir::failure();
    }
    if (mlir::failed(quantizedLikeBlocks(hostOptions.weightBlocks)))
      return mlir::failure();
  }
  return hostOptions;
}

/// The stages after the host lowering: host code, Halide kernels, LLVM, objects.
static mlir::LogicalResult emitBackend(Emit action, mlir::xf::HostProgram *program,
                                       llvm::raw_ostream &os) {
  mlir::xf::CodegenOptions options;
  options.target = target;
  options.optLevel = std::min(optLevel.getValue(), 3u);
  options.keepIntermediates = keepTemps;
  switch (action) {
  case Emit::Host:
    program->module->print(os);
    return mlir::success();
  case Emit::Halide:
  case Emit::Ptx: {
    auto text = mlir::xf::describeKernels(*program, options, action == Emit::Ptx);
    if (!text)
      return report(text.takeError());
    os << *text;
    return mlir::success();
  }
  case Emit::Exe: {
    std::optional<mlir::xf::ObjectCache> cache;
    if (mlir::failed(openObjectCache(cache)))
      return mlir::failure();
    options.cache = cache ? &*cache : nullptr;
    options.log = verbose ? &llvm::errs() : nullptr;
    options.trainer = train;
    // Linked into a temporary and renamed: a failed link keeps the previous executable.
    return report(xfc::writeThroughTemporary(outputFilename, /*executable=*/true,
                                             [&](llvm::StringRef temporary) {
                                               return mlir::xf::buildExecutable(
                                                   *program, options, temporary);
                                             }));
  }
  default:
    break;
  }
  mlir::OwningOpRef<mlir::ModuleOp> llvmModule = mlir::xf::lowerHostToLLVM(*program);
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

/// --lengths: comma-separated lengths from 1 to 8192.
static mlir::LogicalResult parseLengths(std::vector<int64_t> &lengths) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(tuneLengths).split(parts, ',');
  for (llvm::StringRef part : parts) {
    int64_t length;
    if (part.trim().getAsInteger(10, length) || length < 1 || length > 8192) {
      llvm::errs() << "xfc: error: --lengths '" << tuneLengths
                   << "': expected comma-separated lengths from 1 to 8192\n";
      return mlir::failure();
    }
    lengths.push_back(length);
  }
  return mlir::success();
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
  xfc::CheckOptions options;
  if (tuneLengths.getNumOccurrences() && mlir::failed(parseLengths(options.lengths)))
    return mlir::failure();
  options.seed = tuneSeed;
  options.fault = checkFault;
  options.verbose = verbose;
  options.bf16Weights = weightType == WeightType::BF16;
  if (mlir::failed(quantizedLikeBlocks(options.weightBlocks)))
    return mlir::failure();
  options.codegen.target = target;
  options.codegen.optLevel = std::min(optLevel.getValue(), 3u);
  std::optional<mlir::xf::ObjectCache> cache;
  if (mlir::failed(openObjectCache(cache)))
    return mlir::failure();
  options.codegen.cache = cache ? &*cache : nullptr;
  return xfc::checkModel(xfModule, kernels, options, llvm::outs());
}

/// `xfc tune`: the kernels of the lowered model, tuned into the database.
static mlir::LogicalResult runTune(mlir::MLIRContext &context, mlir::ModuleOp kernels) {
  mlir::FailureOr<mlir::xf::HostOptions> hostOptions = hostOptionsFromFlags();
  if (mlir::failed(hostOptions))
    return mlir::failure();
  mlir::FailureOr<mlir::xf::HostProgram> program = mlir::xf::lowerToHost(kernels, *hostOptions);
  if (mlir::failed(program))
    return mlir::failure();
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
    llvm::errs() << "xfc: error: --budget '" << tuneBudget
                 << "': expected a duration such as 90s, 10m or 1h (at most a week)\n";
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
  llvm::Error err = mlir::xf::tuning::tuneProgram(context, *program, options, llvm::errs());
  std::signal(SIGINT, SIG_DFL);
  if (err)
    return report(std::move(err));
  return interrupted ? mlir::failure() : mlir::success();
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
  // themselves): xf-lower-to-host, whose kernel specs the backend builds from.
  bool lowers = !check && !tuneMode && action != Emit::AST && action != Emit::Xf &&
                action != Emit::Fused && action != Emit::Kernels;
  mlir::xf::HostProgram host;
  if (lowers) {
    mlir::FailureOr<mlir::xf::HostOptions> hostOptions = hostOptionsFromFlags();
    if (mlir::failed(hostOptions))
      return mlir::failure();
    pm.addPass(mlir::xf::createLowerToHostPass(*hostOptions, &host));
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
  host.module = std::move(module);
  return emitBackend(action, &host, os);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Past a file-size limit (ulimit -f) writes fail with EFBIG and are reported (the linker
  // inherits this), rather than SIGXFSZ killing xfc mid-build.
  std::signal(SIGXFSZ, SIG_IGN);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  // Pass names for --mlir-print-ir-after=PASS and friends, as in xf-opt
  // (registered before the pass-manager options that parse them).
  mlir::xf::registerXfPasses();
  mlir::xf::registerXfConversionPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerPassManagerCLOptions();
  // The short spellings of DESIGN.md: --print-ir-after-all, --print-ir-after=PASS, ...
  auto &registered = cl::getRegisteredOptions();
  std::vector<std::unique_ptr<cl::alias>> aliases;
  std::vector<std::string> aliasHelp;
  aliasHelp.reserve(4);
  for (const char *name : {"print-ir-after-all", "print-ir-before-all", "print-ir-after",
                           "print-ir-before"}) {
    auto it = registered.find(std::string("mlir-") + name);
    if (it == registered.end())
      continue;
    aliasHelp.push_back("Alias for --mlir-" + std::string(name));
    aliases.push_back(std::make_unique<cl::alias>(llvm::StringRef(name), cl::aliasopt(*it->second),
                                                  cl::desc(aliasHelp.back()),
                                                  cl::cat(xfcCategory)));
  }
  // --help lists xfc's options, not the hundreds LLVM and MLIR register
  // (they still work, and --help-hidden shows them).
  cl::HideUnrelatedOptions({&xfcCategory, &tuneCategory});
  // `xfc tune FILE ...` is the tuner; everything else compiles.
  std::vector<char *> args(argv, argv + argc);
  if (argc > 1 && llvm::StringRef(argv[1]) == "tune") {
    tuneMode = true;
    args.erase(args.begin() + 1);
  }
  cl::ParseCommandLineOptions(int(args.size()), args.data(),
                              "xfc: compiles a transformer written as the "
                              "algorithm boxes of Phuong & Hutter\n\n"
                              "  xfc FILE.xf -o EXE [--tuning-db DB]   build an executable\n"
                              "  xfc FILE.xf --emit=STAGE              print a stage\n"
                              "  xfc FILE.xf --check [--lengths 1,37,128] [--seed S]\n"
                              "                                        compare a build with the xf semantics\n"
                              "  xfc FILE.xf --train --emit=kernels    print the training step\n"
                              "  xfc tune FILE.xf [--budget 10m] [--db DB] [--lengths 1,128]\n"
                              "                                        tune its kernels here\n");
  for (cl::Option *o : {(cl::Option *)&tuneBudget, (cl::Option *)&tuneDb,
                        (cl::Option *)&tuneLengths, (cl::Option *)&tuneSeed,
                        (cl::Option *)&tuneBatch, (cl::Option *)&tuneBaselines,
                        (cl::Option *)&tuneReport, (cl::Option *)&tuneCompare})
    if (!tuneMode && o->getNumOccurrences() &&
        !(check && (o == &tuneLengths || o == &tuneSeed))) {
      llvm::errs() << "xfc: error: --" << o->ArgStr << " is an option of `xfc tune`\n";
      return 1;
    }
  if (tuneMode && (emitAction.getNumOccurrences() || outputFilename.getNumOccurrences() ||
                   tuningDb.getNumOccurrences())) {
    llvm::errs() << "xfc: error: `xfc tune` writes the database given by --db; it takes no "
                    "--emit, -o or --tuning-db\n";
    return 1;
  }
  {
    bool mustExist = true;
    std::string chosen = tuneMode ? tuneDb.getValue() : tuningDb.getValue();
    if (chosen.empty())
      chosen = defaultTuningDb(mustExist);
    if (chosen == "none" && !tuneMode)
      chosen.clear();
    if (!tuneMode && !mustExist && !llvm::sys::fs::exists(chosen))
      chosen.clear();
    if (tuneMode && chosen.empty()) {
      llvm::errs() << "xfc: error: no database to write: give --db FILE\n";
      return 1;
    }
    tuningDbPath = chosen;
  }

  if (check && (tuneMode || emitAction.getNumOccurrences() || outputFilename.getNumOccurrences() ||
                bf16GemmInputs || q8GemmInputs)) {
    llvm::errs() << "xfc: error: --check builds and runs the model itself with random float32 "
                    "(or --weight-type=bf16, or --quantized-like blocks) weights; it takes no "
                    "tune, --emit, -o, --bf16-gemm-inputs or --q8-gemm-inputs\n";
    return 1;
  }
  if (check && !quantizedLike.empty() && weightType == WeightType::BF16) {
    llvm::errs() << "xfc: error: --quantized-like and --weight-type=bf16 are exclusive\n";
    return 1;
  }
  if (target.getNumOccurrences() && mlir::xf::isCudaTarget(target)) {
    // What the CUDA build does not do yet (docs/gpu.md, "Not yet").
    const char *refused = train                    ? "--train"
                          : check                  ? "--check"
                          : tuneMode               ? "xfc tune"
                          : !quantizedLike.empty() ? "--quantized-like"
                          : bf16GemmInputs         ? "--bf16-gemm-inputs"
                                                   : nullptr;
    if (refused) {
      llvm::errs() << "xfc: error: --target " << target << ": " << refused
                   << " is not supported for CUDA targets yet\n";
      return 1;
    }
  } else if (emitAction == Emit::Ptx) {
    llvm::errs() << "xfc: error: --emit=ptx needs a CUDA target (--target cuda)\n";
    return 1;
  }
  if (checkFault.getNumOccurrences() && (!check || !xfc::isCheckFault(checkFault))) {
    llvm::errs()
        << "xfc: error: --check-fault=" << checkFault
        << ": expected epilogue, schedule, loop, fusion, packed or cached-packed, with --check\n";
    return 1;
  }
  // Options given twice would silently keep the last; ranges LLVM's parser does not check.
  for (cl::Option *o : {(cl::Option *)&outputFilename, (cl::Option *)&emitAction,
                        (cl::Option *)&optLevel, (cl::Option *)&target,
                        (cl::Option *)&weightType, (cl::Option *)&tuningDb,
                        (cl::Option *)&quantizedLike,
                        (cl::Option *)&threads, (cl::Option *)&tuneBudget, (cl::Option *)&tuneDb,
                        (cl::Option *)&tuneLengths, (cl::Option *)&tuneSeed,
                        (cl::Option *)&tuneBatch, (cl::Option *)&tuneReport,
                        (cl::Option *)&tuneCompare})
    if (o->getNumOccurrences() > 1) {
      llvm::errs() << "xfc: error: " << (o->ArgStr.size() == 1 ? "-" : "--") << o->ArgStr
                   << " given twice\n";
      return 1;
    }
  if (optLevel > 3) {
    llvm::errs() << "xfc: error: -O" << optLevel.getValue()
                 << ": the optimization level is 0, 1, 2 or 3\n";
    return 1;
  }
  if (threads < 0) {
    llvm::errs() << "xfc: error: --num-threads " << threads.getValue() << " is negative\n";
    return 1;
  }

  // `xfc model.xf -o model` builds an executable; without -o, print xf.
  bool binaryOutput = emitAction == Emit::Exe || emitAction == Emit::Obj;
  if (!tuneMode && emitAction.getNumOccurrences() == 0 && outputFilename != "-")
    emitAction = Emit::Exe, binaryOutput = true;
  if (!tuneMode && binaryOutput && outputFilename == "-") {
    llvm::errs() << "xfc: error: --emit=exe and --emit=obj need -o FILE\n";
    return 1;
  }
  if (train && (tuneMode || check)) {
    llvm::errs() << "xfc: error: --train builds the trainer; " << (tuneMode ? "xfc tune" : "--check")
                 << " works on inference builds (docs/training.md)\n";
    return 1;
  }
  // A trainer keeps float32 master weights and its backward reads them as such.
  if (train && (weightType == WeightType::BF16 || !quantizedLike.empty())) {
    llvm::errs() << "xfc: error: --train keeps float32 weights; "
                 << (quantizedLike.empty() ? "--weight-type=bf16" : "--quantized-like")
                 << " is for inference builds (docs/training.md)\n";
    return 1;
  }
  // A bad -o fails now, not after the compile; it may not be the spec itself.
  if (outputFilename != "-") {
    if (mlir::failed(report(xfc::checkOutput(outputFilename, /*streamable=*/!binaryOutput))))
      return 1;
    std::vector<xfrt::NamedPath> inputs;
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
    std::vector<xfrt::NamedPath> inputs;
    if (inputFilename != "-")
      inputs.push_back({"the input", inputFilename});
    if (xfrt::Status s = xfrt::checkDistinctPaths(outputs, inputs); !s) {
      llvm::errs() << "xfc: error: " << s.message() << "\n";
      return 1;
    }
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
