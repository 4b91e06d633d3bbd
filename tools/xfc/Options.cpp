//===- Options.cpp - xfc's command line -----------------------------------===//
//
// The flags of `xfc` and `xfc tune`, their help, and the combinations the driver refuses
// before it reads the spec (Options.h).
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "xf/Check/CheckFaults.h"

#include "xf/Codegen/HalideKernels.h"
#include "xfrt/Device.h"
#include "xfrt/MessageText.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <memory>
#include <thread>

namespace cl = llvm::cl;

namespace xfc {

cl::OptionCategory xfcCategory("xfc options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<spec.xf | host.mlir>"), cl::init("-"),
                                   cl::cat(xfcCategory));
cl::opt<std::string> outputFilename("o", cl::desc("Output file (default: stdout)"),
                                    cl::value_desc("filename"), cl::init("-"),
                                    cl::cat(xfcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("The stage to print"), cl::init(Emit::Xf),
    cl::values(clEnumValN(Emit::AST, "ast", "the parsed syntax tree"),
               clEnumValN(Emit::Xf, "xf", "the xf dialect (default without -o)"),
               clEnumValN(Emit::Fused, "fused", "xf after MHA decomposition and fusion"),
               clEnumValN(Emit::Kernels, "kernels", "fused kernels with their schedules"),
               clEnumValN(Emit::Host, "host", "the host function, buffers and loop kernels"),
               clEnumValN(Emit::Halide, "halide", "each Halide pipeline's loop nest"),
               clEnumValN(Emit::MlirGpu, "mlir-gpu",
                          "each MLIR GPU kernel as MLIR (gpu + nvgpu; tensor-core GEMMs and "
                          "attention with --gpu-matmul, fp32's FMA attention)"),
               clEnumValN(Emit::Nvvm, "nvvm",
                          "each MLIR GPU kernel lowered to NVVM (with --target cuda)"),
               clEnumValN(Emit::Ptx, "ptx", "each CUDA kernel's PTX (with --target cuda)"),
               clEnumValN(Emit::LLVM, "llvm", "optimized LLVM IR of the host code"),
               clEnumValN(Emit::Asm, "asm", "assembly of the host code"),
               clEnumValN(Emit::Obj, "obj", "object file of the host code (needs -o)"),
               clEnumValN(Emit::Exe, "exe", "a linked executable (default with -o)"),
               clEnumValN(Emit::Lib, "lib",
                          "a shared library with the public C API (xf.h, copied next to it; "
                          "docs/c-api.md; needs -o; -o NAME.a: a static archive)")),
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
cl::opt<WeightType> weightType(
    "weight-type", cl::init(WeightType::F32),
    cl::desc("How GEMM weights and embedding tables are kept in memory"),
    cl::values(clEnumValN(WeightType::F32, "f32", "float32, as in the checkpoint (default)"),
               clEnumValN(WeightType::BF16, "bf16",
                          "bfloat16: half the memory traffic; products still in float32")),
    cl::cat(xfcCategory));
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
             "BF16 dot products, or AMX bf16 tiles where the CPU running it has them; float32 "
             "sums). Faster prefill, bfloat16-level accuracy"),
    cl::cat(xfcCategory));
cl::opt<Bf16Products> bf16Products(
    "bf16-products", cl::init(Bf16Products::Auto),
    cl::desc("With --bf16-gemm-inputs: which products its GEMMs run on"),
    cl::values(clEnumValN(Bf16Products::Auto, "auto",
                          "bf16 inputs where this CPU's measured bf16 dot-product or AMX bf16 "
                          "tile peak beats its fp32 FMA peak by 25 %, else float32 products "
                          "(default; a target other than host is not measured: bf16)"),
               clEnumValN(Bf16Products::On, "on",
                          "bf16 inputs and products (AMX bf16 tiles where the CPU running it "
                          "has them, else AVX512-BF16 dot products)"),
               clEnumValN(Bf16Products::Off, "off",
                          "float32 products on the bf16 weights (as --weight-type=bf16 alone)")),
    cl::cat(xfcCategory));
cl::opt<std::string> quantizedLike(
    "quantized-like",
    cl::desc(
        "Keep GEMM weights bound [d_out, d_in] (with ᵀ) and embedding tables in the ggml "
        "block type this GGUF file stores each in (Q8_0, Q4_0, Q4_1): the kernels "
        "dequantize blocks as they read them. The executable then needs --weights with "
        "these tensor types (without this option the weights are dequantized to float32 at load)"),
    cl::value_desc("file.gguf"), cl::cat(xfcCategory));
cl::opt<bool> q8GemmInputs(
    "q8-gemm-inputs", cl::init(false),
    cl::desc("With --quantized-like: GEMMs on blocks round each input row to Q8_0 blocks and "
             "use 8-bit integer dot products, as llama.cpp does: decode steps (fewer rows than "
             "gemv_rows_below) on AVX-512 VNNI, AVX-VNNI or AVX2, prefill where the CPU running "
             "it has AVX-512 VNNI (elsewhere prefill keeps the exact path), picked when the "
             "executable runs. Faster, 8-bit activation accuracy (docs/correctness.md)"),
    cl::cat(xfcCategory));
cl::opt<bool> halideDecodeAttention(
    "halide-decode-attention", cl::init(false),
    cl::desc("Decode steps' attention runs its Halide kernel, not libxfrt's "
             "xfrt_decode_attention (the default on x86 targets with AVX2: docs/pipeline.md)"),
    cl::cat(xfcCategory));
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
cl::opt<mlir::xf::GpuMatmul> gpuMatmul(
    "gpu-matmul", cl::init(mlir::xf::GpuMatmul::Fp32),
    cl::desc("What a CUDA build's GEMMs and prefill attention multiply on (docs/gpu.md, "
             "\"Tensor cores\")"),
    cl::values(clEnumValN(mlir::xf::GpuMatmul::Fp32, "fp32", "float32 FMAs, Halide (default)"),
               clEnumValN(mlir::xf::GpuMatmul::Tf32, "tf32",
                          "tensor cores on inputs rounded to TF32, float32 sums (sm_80+)"),
               clEnumValN(mlir::xf::GpuMatmul::Bf16, "bf16",
                          "tensor cores on inputs rounded to bfloat16, float32 sums (sm_80+)")),
    cl::cat(xfcCategory));
cl::opt<bool> keepTemps("keep-temps", cl::init(false),
                        cl::desc("Keep the intermediate object files"), cl::cat(xfcCategory));
cl::opt<std::string>
    tuningDb("tuning-db",
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
cl::opt<std::string>
    gpuName("gpu-name",
            cl::desc("With --target cuda and a tuning database: take the CUDA schedules tuned on "
                     "this GPU (its name as the driver gives it, e.g. 'NVIDIA H200'; default: "
                     "the one GPU the database holds)"),
            cl::value_desc("name"), cl::cat(xfcCategory));
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
    checkFault("check-fault", cl::Hidden, cl::desc(mlir::xf::check::kCheckFaultHelp),
               cl::value_desc("epilogue|schedule|loop|fusion|packed|cached-packed"),
               cl::cat(xfcCategory));

cl::OptionCategory tuneCategory("xfc tune options (xfc tune FILE ...)");
cl::opt<std::string> tuneBudget("budget", cl::init("10m"),
                                cl::desc("Time for all kernels together: 90s, 10m, 1h"),
                                cl::cat(tuneCategory));
cl::opt<std::string> tuneDb("db", cl::desc("Tuning database to write (default: as --tuning-db)"),
                            cl::value_desc("file"), cl::cat(tuneCategory));
cl::opt<std::string>
    tuneLengths("lengths", cl::init("1,128"),
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
                                          "database (B; 'default': the default schedules) side "
                                          "by side on every kernel both have, per length, with "
                                          "the default (2 worker batches); prints A / default, "
                                          "B / default and A / B with their noise and writes "
                                          "them to --report"),
                                 cl::value_desc("file"), cl::cat(tuneCategory));
cl::opt<std::string> tuneExport(
    "export",
    cl::desc("With --target cuda: no timing here; compile each GEMM's candidate GPU schedules "
             "into DIR/xf-gpu-timing (and DIR/manifest.json), a program that times them on a "
             "GPU machine without the toolchain (docs/tuning.md, \"CUDA GEMMs\")"),
    cl::value_desc("dir"), cl::cat(tuneCategory));
cl::opt<std::string> tuneImport(
    "import",
    cl::desc("The times xf-gpu-timing wrote, judged into --db (no spec: xfc tune --import "
             "FILE --db DB)"),
    cl::value_desc("file"), cl::cat(tuneCategory));
cl::opt<std::string> tuneAnderson2021(
    "anderson2021",
    cl::desc("With --target cuda: the plugin of Halide's Anderson2021 GPU autoscheduler, whose "
             "schedule of each GEMM (per length) is timed as the baseline to beat, never "
             "stored (default: the one beside libHalide; 'none': no baseline)"),
    cl::value_desc("plugin.so|none"), cl::cat(tuneCategory));
cl::opt<unsigned> tuneCandidates("candidates", cl::init(16),
                                 cl::desc("With --target cuda: GPU schedules per GEMM, the "
                                          "default included (1-256, default 16)"),
                                 cl::cat(tuneCategory));
cl::opt<std::string> tuneReport("report",
                                cl::desc("Write a JSON report (per kernel: default, tuned, "
                                         "baselines, best-so-far over time)"),
                                cl::value_desc("file"), cl::cat(tuneCategory));

cl::opt<bool>
    train("train", cl::init(false),
          cl::desc("Add the training step (Alg. 13): @loss_and_gradients(tokens, targets), the "
                   "next-token loss and every checkpoint tensor's gradient (xf-differentiate, "
                   "docs/training.md); with -o, the trainer executable (its --help)"),
          cl::cat(xfcCategory));

cl::list<std::string> defines("D", cl::Prefix,
                              cl::desc("Override a hyperparameter (repeatable): -D L=2 or -DL=2"),
                              cl::value_desc("NAME=VALUE"), cl::cat(xfcCategory));

bool tuneMode = false;    // `xfc tune ...`
std::string tuningDbPath; // resolved --tuning-db (empty: none)
} // namespace xfc

using namespace xfc;

int64_t xfc::threadCount() {
  return threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

/// --tuning-db, else $XF_TUNING_DB, else ~/.cache/xf/tuning.db; `mustExist`
/// is false for the last, which is only used when it is there.
static std::string defaultTuningDb(bool &mustExist) {
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
std::optional<double> xfc::parseDuration(llvm::StringRef text) {
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

/// --lengths: comma-separated lengths from 1 to 8192.
mlir::LogicalResult xfc::parseLengths(std::vector<int64_t> &lengths) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(tuneLengths).split(parts, ',');
  for (llvm::StringRef part : parts) {
    int64_t length;
    if (part.trim().getAsInteger(10, length) || length < 1 || length > 8192) {
      llvm::errs() << "xfc: error: --lengths " << xfrt::quoteInput(tuneLengths)
                   << ": expected comma-separated lengths from 1 to 8192\n";
      return mlir::failure();
    }
    lengths.push_back(length);
  }
  return mlir::success();
}

namespace {
// The short spellings' aliases and their help, registered for the whole run.
std::vector<std::unique_ptr<cl::alias>> aliases;
std::vector<std::string> aliasHelp;
} // namespace

/// --tuning-db (or `xfc tune`'s --db) resolved into tuningDbPath; false after the error line.
static bool resolveTuningDatabase() {
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
    return false;
  }
  tuningDbPath = chosen;
  return true;
}

/// --gpu-matmul=tf32|bf16 needs a CUDA target of capability sm_80 or newer, and
/// --emit=mlir-gpu|nvvm of a spec a CUDA target (the MLIR kernels: tensor cores, or fp32's
/// FMA attention; a host module names its target itself); false after the error line.
static bool checkGpuMatmul() {
  bool tensorCores = gpuMatmul != mlir::xf::GpuMatmul::Fp32;
  bool hostModule = llvm::StringRef(inputFilename).ends_with(".mlir");
  if ((emitAction == Emit::MlirGpu || emitAction == Emit::Nvvm) && !hostModule &&
      !mlir::xf::isCudaTarget(target)) {
    llvm::errs() << "xfc: error: --emit=" << (emitAction == Emit::Nvvm ? "nvvm" : "mlir-gpu")
                 << " prints a CUDA build's MLIR kernels: give --target cuda (or cuda-sm_NN)\n";
    return false;
  }
  if (!tensorCores)
    return true;
  const char *name = mlir::xf::gpuMatmulName(gpuMatmul);
  if (!mlir::xf::isCudaTarget(target)) {
    llvm::errs() << "xfc: error: --gpu-matmul=" << name
                 << " is for CUDA builds (--target cuda-sm_80 or newer)\n";
    return false;
  }
  llvm::Expected<std::string> halide = mlir::xf::halideTargetString(target);
  int capability = halide ? mlir::xf::cudaCapabilityOf(*halide) : 0;
  if (!halide)
    llvm::consumeError(halide.takeError());
  if (capability < 80) {
    llvm::errs() << "xfc: error: --gpu-matmul=" << name << " needs tensor cores of sm_80 or newer, "
                 << "--target " << target << " is sm_" << capability
                 << ": give --target cuda-sm_80 (an H100 or H200 runs it)\n";
    return false;
  }
  return true;
}

/// A --target that does not parse (e.g. a capability Halide has no PTX for) says why
/// before an option that needs a CUDA target says it has none; false after that line.
static bool printTargetError() {
  if (llvm::Expected<std::string> parsed = mlir::xf::halideTargetString(target); !parsed) {
    llvm::errs() << "xfc: error: " << llvm::toString(parsed.takeError()) << "\n";
    return false;
  }
  return true;
}

/// `xfc tune --target cuda` (docs/tuning.md, "CUDA GEMMs"), --export, --import and
/// --gpu-name: what they do not take; false after the error line.
static bool refuseCudaTuneCombinations() {
  const bool cuda = mlir::xf::isCudaTarget(target);
  if (!tuneImport.empty()) {
    if (inputFilename != "-" || !tuneExport.empty() || target.getNumOccurrences() ||
        tuneLengths.getNumOccurrences() || tuneCandidates.getNumOccurrences() ||
        tuneBudget.getNumOccurrences() || tuneSeed.getNumOccurrences() || !defines.empty() ||
        tuneAnderson2021.getNumOccurrences()) {
      llvm::errs() << "xfc: error: `xfc tune --import FILE --db DB` reads the times file alone; "
                      "it takes no spec, --export, --target, -D, --lengths, --candidates, "
                      "--anderson2021, --budget or --seed\n";
      return false;
    }
    return true;
  }
  if (!tuneExport.empty() && !cuda) {
    if (!printTargetError())
      return false;
    llvm::errs() << "xfc: error: --export builds the timing program of a CUDA build's GEMMs: "
                    "give --target cuda (or cuda-sm_NN)\n";
    return false;
  }
  if (tuneCandidates.getNumOccurrences() && (!cuda || tuneCandidates < 1 || tuneCandidates > 256)) {
    llvm::errs() << "xfc: error: --candidates is 1-256 GPU schedules a GEMM, with --target cuda\n";
    return false;
  }
  if (tuneAnderson2021.getNumOccurrences() && (!cuda || tuneAnderson2021.empty())) {
    llvm::errs() << "xfc: error: --anderson2021 names the plugin (or 'none') of the baseline "
                    "`xfc tune --target cuda` times: give --target cuda and a path\n";
    return false;
  }
  if (!gpuName.empty() && (tuneMode || !cuda || tuningDbPath.empty())) {
    llvm::errs() << "xfc: error: --gpu-name picks the CUDA schedules of a tuning database for a "
                    "CUDA build: give --target cuda and --tuning-db\n";
    return false;
  }
  if (!tuneMode || !cuda)
    return true;
  if (gpuMatmul != mlir::xf::GpuMatmul::Fp32 || tuneBaselines || !tuneCompare.empty()) {
    llvm::errs() << "xfc: error: --target " << target << ": xfc tune times the Halide fp32 "
                 << "GEMMs' GPU schedules; "
                 << (tuneBaselines ? "--baselines" : !tuneCompare.empty() ? "--compare" : "--gpu-matmul")
                 << " is not supported for CUDA targets yet\n";
    return false;
  }
  if (tuneExport.empty())
    if (xfrt::Status s = xfrt::checkCudaDriver(); !s) {
      llvm::errs() << "xfc: error: --target " << target << ": xfc tune times the GEMMs on a "
                   << "GPU and this machine has none usable (" << s.message()
                   << "); give --export DIR to build the timing program for a GPU machine "
                      "(docs/tuning.md)\n";
      return false;
    }
  return true;
}

/// The option combinations xfc does not build, and options given twice or out of range;
/// false after the error line.
static bool refuseCombinations() {
  if (check && (tuneMode || emitAction.getNumOccurrences() || outputFilename.getNumOccurrences() ||
                bf16GemmInputs || q8GemmInputs)) {
    llvm::errs() << "xfc: error: --check builds and runs the model itself with random float32 "
                    "(or --weight-type=bf16, or --quantized-like blocks) weights; it takes no "
                    "tune, --emit, -o, --bf16-gemm-inputs or --q8-gemm-inputs\n";
    return false;
  }
  if (check && !quantizedLike.empty() && weightType == WeightType::BF16) {
    llvm::errs() << "xfc: error: --quantized-like and --weight-type=bf16 are exclusive\n";
    return false;
  }
  if (target.getNumOccurrences() && mlir::xf::isCudaTarget(target)) {
    // What the CUDA build does not do yet (docs/gpu.md, "Not yet").
    const char *refused = train                    ? "--train"
                          : check                  ? "--check"
                          : !quantizedLike.empty() ? "--quantized-like"
                          : bf16GemmInputs         ? "--bf16-gemm-inputs"
                                                   : nullptr;
    if (refused) {
      llvm::errs() << "xfc: error: --target " << target << ": " << refused
                   << " is not supported for CUDA targets yet\n";
      return false;
    }
  } else if (emitAction == Emit::Ptx) {
    if (!printTargetError())
      return false;
    llvm::errs() << "xfc: error: --emit=ptx needs a CUDA target (--target cuda)\n";
    return false;
  }
  if (!refuseCudaTuneCombinations())
    return false;
  if (!checkGpuMatmul())
    return false;
  if (checkFault.getNumOccurrences() && (!check || !mlir::xf::check::isCheckFault(checkFault))) {
    llvm::errs()
        << "xfc: error: --check-fault=" << checkFault
        << ": expected epilogue, schedule, loop, fusion, packed or cached-packed, with --check\n";
    return false;
  }
  // Options given twice would silently keep the last; ranges LLVM's parser does not check.
  for (cl::Option *o :
       {(cl::Option *)&outputFilename, (cl::Option *)&emitAction, (cl::Option *)&optLevel,
        (cl::Option *)&target, (cl::Option *)&weightType, (cl::Option *)&gpuMatmul, (cl::Option *)&bf16Products,
        (cl::Option *)&tuningDb,
        (cl::Option *)&quantizedLike, (cl::Option *)&threads, (cl::Option *)&tuneBudget,
        (cl::Option *)&tuneDb, (cl::Option *)&tuneLengths, (cl::Option *)&tuneSeed,
        (cl::Option *)&tuneBatch, (cl::Option *)&tuneReport, (cl::Option *)&tuneCompare,
        (cl::Option *)&tuneExport, (cl::Option *)&tuneImport, (cl::Option *)&tuneCandidates,
        (cl::Option *)&tuneAnderson2021,
        (cl::Option *)&gpuName})
    if (o->getNumOccurrences() > 1) {
      llvm::errs() << "xfc: error: " << (o->ArgStr.size() == 1 ? "-" : "--") << o->ArgStr
                   << " given twice\n";
      return false;
    }
  if (optLevel > 3) {
    llvm::errs() << "xfc: error: -O" << optLevel.getValue()
                 << ": the optimization level is 0, 1, 2 or 3\n";
    return false;
  }
  if (threads < 0) {
    llvm::errs() << "xfc: error: --num-threads " << threads.getValue() << " is negative\n";
    return false;
  }
  return true;
}

bool xfc::parseCommandLine(int argc, char **argv) {
  // The short spellings of DESIGN.md: --print-ir-after-all, --print-ir-after=PASS, ...
  auto &registered = cl::getRegisteredOptions();
  aliasHelp.reserve(4);
  for (const char *name :
       {"print-ir-after-all", "print-ir-before-all", "print-ir-after", "print-ir-before"}) {
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
  cl::ParseCommandLineOptions(
      int(args.size()), args.data(),
      "xfc: compiles a transformer written as the "
      "algorithm boxes of Phuong & Hutter\n\n"
      "  xfc FILE.xf -o EXE [--tuning-db DB]   build an executable\n"
      "  xfc FILE.xf --emit=lib -o libm.so     build a library with xf.h's C API\n"
      "  xfc FILE.xf --emit=STAGE              print a stage\n"
      "  xfc FILE.xf --check [--lengths 1,37,128] [--seed S]\n"
      "                                        compare a build with the xf semantics\n"
      "  xfc FILE.xf --train --emit=kernels    print the training step\n"
      "  xfc tune FILE.xf [--budget 10m] [--db DB] [--lengths 1,128]\n"
      "                                        tune its kernels here\n"
      "  xfc tune HOST.mlir ...                tune the kernels a host module declares\n"
      "  xfc tune FILE.xf --target cuda --export DIR\n"
      "                                        a program timing the GEMMs' GPU schedules\n"
      "  xfc tune --import TIMES.json --db DB  its times into the database\n"
      "  xfc import DIR [-o FILE.xf]           a spec from a Hugging Face model directory\n");
  for (cl::Option *o :
       {(cl::Option *)&tuneBudget, (cl::Option *)&tuneDb, (cl::Option *)&tuneLengths,
        (cl::Option *)&tuneSeed, (cl::Option *)&tuneBatch, (cl::Option *)&tuneBaselines,
        (cl::Option *)&tuneReport, (cl::Option *)&tuneCompare, (cl::Option *)&tuneExport,
        (cl::Option *)&tuneImport, (cl::Option *)&tuneCandidates, (cl::Option *)&tuneAnderson2021})
    if (!tuneMode && o->getNumOccurrences() && !(check && (o == &tuneLengths || o == &tuneSeed))) {
      llvm::errs() << "xfc: error: --" << o->ArgStr << " is an option of `xfc tune`\n";
      return false;
    }
  if (tuneMode && (emitAction.getNumOccurrences() || outputFilename.getNumOccurrences() ||
                   tuningDb.getNumOccurrences())) {
    llvm::errs() << "xfc: error: `xfc tune` writes the database given by --db; it takes no "
                    "--emit, -o or --tuning-db\n";
    return false;
  }
  if (!resolveTuningDatabase() || !refuseCombinations())
    return false;

  // `xfc model.xf -o model` builds an executable; without -o, print xf.
  bool binaryOutput = emitAction == Emit::Exe || emitAction == Emit::Obj || emitAction == Emit::Lib;
  if (!tuneMode && emitAction.getNumOccurrences() == 0 && outputFilename != "-")
    emitAction = Emit::Exe, binaryOutput = true;
  if (!tuneMode && binaryOutput && outputFilename == "-") {
    llvm::errs() << "xfc: error: --emit=exe, --emit=lib and --emit=obj need -o FILE\n";
    return false;
  }
  if (train && emitAction == Emit::Lib) {
    llvm::errs() << "xfc: error: --emit=lib builds an inference library; --train builds the "
                    "trainer executable (docs/training.md)\n";
    return false;
  }
  if (bf16Products.getNumOccurrences() && !bf16GemmInputs) {
    llvm::errs() << "xfc: error: --bf16-products chooses the products of --bf16-gemm-inputs; "
                    "give that too\n";
    return false;
  }
  if (train && (tuneMode || check)) {
    llvm::errs() << "xfc: error: --train builds the trainer; "
                 << (tuneMode ? "xfc tune" : "--check")
                 << " works on inference builds (docs/training.md)\n";
    return false;
  }
  // A trainer keeps float32 master weights and its backward reads them as such.
  if (train && (weightType == WeightType::BF16 || !quantizedLike.empty())) {
    llvm::errs() << "xfc: error: --train keeps float32 weights; "
                 << (quantizedLike.empty() ? "--weight-type=bf16" : "--quantized-like")
                 << " is for inference builds (docs/training.md)\n";
    return false;
  }
  return true;
}
