//===- GpuTimingExport.cpp - the CUDA kernels' timing program -------------===//
//
// Half 1 of `xfc tune --target cuda` (GpuTiming.h): per distinct GEMM and attention its
// candidates, each compiled as Halide CUDA pipelines `<kernel>_c<i>` (an attention's also
// `<kernel>_c<i>_decode_ranges` where a length takes the decode path; a candidate the
// generator refuses is left out and named in the manifest), what each measurement passes
// and calls (GpuTimingArguments.h), one Halide runtime, the C table of
// xfrt/GpuTimingTable.h, linked with the timing main into DIR/xf-gpu-timing; DIR/manifest.json
// says what it holds. Beside the candidates, per GEMM and length, the baseline: the GEMM
// scheduled by Halide's Anderson2021 autoscheduler for that M (`<kernel>_a<i>`); where the
// plugin does not load or fails for a kernel, one line says so and the export goes on.
//
//===----------------------------------------------------------------------===//

#include "TunedKernel.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Conversion/KernelDeclarations.h"
#include "xf/Pipelines/Pipelines.h"
#include "xf/Target/TensorCoreAttention.h"
#include "xf/Target/TensorCoreGemm.h"
#include "xf/Tuning/GpuScheduleSpace.h"
#include "xf/Tuning/GpuTiming.h"
#include "xf/Tuning/GpuTimingArguments.h"
#include "xf/Version.h"
#include "xfrt/OutputFile.h"
#include "xfrt/RuntimePaths.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <array>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

std::string cString(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// A baseline's pipeline: Anderson2021's schedule for `rows` rows, or why there is none.
struct ExportedBaseline {
  std::string function; // "" where refused
  int64_t rows;
  std::string refused;
};

/// One kernel of the program: its signature, its compiled candidates (the default first) and
/// what each one's measurement passes and calls.
struct ExportedKernel {
  std::string name, signature;
  GemmKernelSpec gemm; // a GEMM's spec (default schedule), for its baselines
  std::vector<std::string> functions, schedules; // compiled
  std::vector<TimingCalls> calls;                // per compiled candidate
  llvm::json::Array failed;                      // refused by the generator
  std::vector<ExportedBaseline> baselines;       // Anderson2021's, per length (GEMMs)

  /// Each memory as large as any candidate's (an attention's partials: its key ranges).
  std::vector<TimingMemory> memories() const {
    std::vector<TimingMemory> largest = calls.front().memories;
    for (const TimingCalls &c : calls)
      for (size_t m = 0; m < largest.size(); ++m)
        largest[m].elements = std::max(largest[m].elements, c.memories[m].elements);
    return largest;
  }
};

constexpr const char *kAnderson2021 = "anderson2021";

/// A size of the timed length as the table spells it.
std::string tableSize(int64_t v) {
  return v == kTimingRows   ? "XF_TIMING_ROWS"
         : v == kTimingKeys ? "XF_TIMING_KEYS"
                            : std::to_string(v);
}

/// `calls`' arguments as an xf_timing_argument initializer list.
std::string tableArguments(const TimingCalls &calls) {
  std::string c;
  for (const TimingArgument &a : calls.arguments) {
    c += llvm::formatv("  {{{0}, {1}, {2}, {{", a.memory, a.offset, a.dims.size()).str();
    for (auto [extent, stride] : a.dims)
      c += "{" + tableSize(extent) + ", " + std::to_string(stride) + "}, ";
    c += "}, " + tableSize(a.value) + "},\n";
  }
  return c;
}

/// Kernel `i`'s candidates, their arguments (one array per distinct set) and baselines.
std::string tableCandidates(const ExportedKernel &k, size_t i) {
  std::string c;
  std::vector<std::string> argumentNames;
  for (size_t j = 0; j < k.calls.size(); ++j) {
    auto same = llvm::find_if(llvm::seq<size_t>(0, j), [&](size_t e) {
      return k.calls[e].arguments == k.calls[j].arguments;
    });
    if (*same != j) {
      argumentNames.push_back(argumentNames[*same]);
      continue;
    }
    argumentNames.push_back(llvm::formatv("arguments{0}_{1}", i, j).str());
    c += "static const xf_timing_argument " + argumentNames.back() + "[] = {\n" +
         tableArguments(k.calls[j]) + "};\n";
  }
  c += llvm::formatv("static const xf_timing_candidate candidates{0}[] = {{\n", i).str();
  for (size_t j = 0; j < k.functions.size(); ++j) {
    c += "  {" + cString(k.schedules[j]) + ", {";
    for (const TimingCall &call : k.calls[j].calls)
      c += "(void *)" + k.functions[j] + call.suffix + "_argv, ";
    c += "}, " + argumentNames[j] + "},\n";
  }
  c += "};\n";
  if (k.baselines.empty())
    return c;
  c += llvm::formatv("static const xf_timing_baseline baselines{0}[] = {{\n", i).str();
  for (const ExportedBaseline &b : k.baselines)
    c += llvm::formatv("  {{{0}, {1}, {{(void *){2}}, {3}},\n", cString(kAnderson2021), b.rows,
                       b.function.empty() ? "0" : b.function + "_argv",
                       b.function.empty() ? cString(b.refused) : "0")
             .str();
  return c + "};\n";
}

/// Kernel `i`'s xf_timing_kernel initializer.
std::string tableKernel(const ExportedKernel &k, size_t i) {
  std::string c = "  {" + cString(k.name) + ", " + cString(k.signature) + ", ";
  const std::vector<TimingMemory> memories = k.memories();
  c += std::to_string(memories.size()) + ", {";
  for (const TimingMemory &m : memories)
    c += llvm::formatv("{{{0}, {1}}, ", m.elements, int(m.bf16)).str();
  const TimingCalls &first = k.calls.front();
  c += llvm::formatv("}, {0}, {1}, {2}, {{", first.arguments.size(), first.output,
                     first.calls.size())
           .str();
  for (const TimingCall &call : first.calls) {
    c += "{" + std::to_string(call.mostRows) + ", " + std::to_string(call.arguments.size()) + ", {";
    for (int a : call.arguments)
      c += std::to_string(a) + ", ";
    c += "}}, ";
  }
  return c + llvm::formatv("}, {0}, candidates{1}, {2}, {3}},\n", k.functions.size(), i,
                           k.baselines.size(),
                           k.baselines.empty() ? "0" : "baselines" + std::to_string(i))
                 .str();
}

std::string tableSource(const std::vector<ExportedKernel> &kernels, const std::string &target,
                        const std::string &baselinesLeftOut, const std::vector<int64_t> &lengths) {
  std::string c = "/* Generated by xfc tune --export: the timing program's table. */\n"
                  "#include " +
                  cString(XFRT_GPU_TIMING_TABLE_HEADER_PATH) + "\n";
  for (const ExportedKernel &k : kernels) {
    for (size_t j = 0; j < k.functions.size(); ++j)
      for (const TimingCall &call : k.calls[j].calls)
        c += "extern int " + k.functions[j] + call.suffix + "_argv(void **);\n";
    for (const ExportedBaseline &b : k.baselines)
      if (!b.function.empty())
        c += "extern int " + b.function + "_argv(void **);\n";
  }
  for (size_t i = 0; i < kernels.size(); ++i)
    c += tableCandidates(kernels[i], i);
  const int64_t longest = *llvm::max_element(lengths);
  std::string lengthList, keyList;
  for (int64_t l : lengths) {
    lengthList += std::to_string(l) + ", ";
    keyList += std::to_string(timingKeys(l, longest)) + ", ";
  }
  c += "static const int64_t lengths[] = {" + lengthList + "};\nstatic const int64_t keys[] = {" +
       keyList + "};\nstatic const xf_timing_kernel kernels[] = {\n";
  for (size_t i = 0; i < kernels.size(); ++i)
    c += tableKernel(kernels[i], i);
  c += llvm::formatv("};\nconst xf_timing_program xf_timing = {{{0}, {1}, {2}, lengths, keys, "
                     "{3}, kernels, {4}};\n",
                     cString(kXfVersion), cString(target), lengths.size(), kernels.size(),
                     cString(baselinesLeftOut))
           .str();
  return c;
}

/// A size of the timed length as the manifest spells it.
llvm::json::Value manifestSize(int64_t v) {
  return v == kTimingRows   ? llvm::json::Value("M")
         : v == kTimingKeys ? llvm::json::Value("keys")
                            : llvm::json::Value(v);
}

/// `calls`' arguments: a buffer's cols (dim 0), rows (dim 1; 0 for a vector), type, dims,
/// memory and offset; a scalar's type and value.
llvm::json::Array manifestArguments(const TimingCalls &calls) {
  llvm::json::Array list;
  for (const TimingArgument &a : calls.arguments) {
    if (a.memory < 0) {
      list.push_back(llvm::json::Object{{"type", "i32"}, {"value", manifestSize(a.value)}});
      continue;
    }
    llvm::json::Array dims;
    for (auto [extent, stride] : a.dims)
      dims.push_back(llvm::json::Array{manifestSize(extent), stride});
    list.push_back(llvm::json::Object{
        {"cols", manifestSize(a.dims[0].first)},
        {"rows", a.dims.size() > 1 ? manifestSize(a.dims[1].first) : llvm::json::Value(0)},
        {"type", calls.memories[size_t(a.memory)].bf16 ? "bf16" : "f32"},
        {"dims", std::move(dims)},
        {"memory", a.memory},
        {"offset", a.offset}});
  }
  return list;
}

/// Kernel `k` in the manifest: its memories, arguments (the default's) and calls, its
/// candidates (their arguments where they differ from the default's) and baselines.
llvm::json::Object manifestKernel(const ExportedKernel &k) {
  llvm::json::Array candidates, memories, calls, baselines;
  for (size_t j = 0; j < k.functions.size(); ++j) {
    llvm::json::Array functions;
    for (const TimingCall &call : k.calls[j].calls)
      functions.push_back(k.functions[j] + call.suffix);
    llvm::json::Object candidate{{"function", k.functions[j]},
                                 {"functions", std::move(functions)},
                                 {"schedule", k.schedules[j]}};
    if (!(k.calls[j].arguments == k.calls.front().arguments))
      candidate["buffers"] = manifestArguments(k.calls[j]);
    candidates.push_back(std::move(candidate));
  }
  for (const TimingMemory &m : k.memories())
    memories.push_back(
        llvm::json::Object{{"elements", m.elements}, {"type", m.bf16 ? "bf16" : "f32"}});
  for (const TimingCall &call : k.calls.front().calls)
    calls.push_back(llvm::json::Object{{"suffix", call.suffix},
                                       {"most_rows", call.mostRows},
                                       {"arguments", llvm::json::Array(call.arguments)}});
  for (const ExportedBaseline &b : k.baselines)
    baselines.push_back(b.function.empty() ? llvm::json::Object{{"baseline", kAnderson2021},
                                                                {"rows", b.rows},
                                                                {"refused", b.refused}}
                                           : llvm::json::Object{{"function", b.function},
                                                                {"baseline", kAnderson2021},
                                                                {"rows", b.rows}});
  return llvm::json::Object{{"name", k.name},
                            {"kernel", k.signature},
                            {"memories", std::move(memories)},
                            {"buffers", manifestArguments(k.calls.front())},
                            {"output", k.calls.front().output},
                            {"calls", std::move(calls)},
                            {"candidates", std::move(candidates)},
                            {"refused", llvm::json::Array(k.failed)},
                            {"baselines", std::move(baselines)}};
}

llvm::json::Value manifestOf(const std::vector<ExportedKernel> &kernels, const std::string &target,
                             const std::vector<int64_t> &lengths, llvm::json::Object anderson2021) {
  llvm::json::Array list, keys;
  for (const ExportedKernel &k : kernels)
    list.push_back(manifestKernel(k));
  for (int64_t l : lengths)
    keys.push_back(timingKeys(l, *llvm::max_element(lengths)));
  return llvm::json::Object{{"format", "xf-gpu-timing-manifest"},
                            {"version", 1},
                            {"xf_version", kXfVersion},
                            {"target", target},
                            {"program", "xf-gpu-timing"},
                            {"lengths", llvm::json::Array(lengths)},
                            {"keys", std::move(keys)},
                            {"anderson2021", std::move(anderson2021)},
                            {"kernels", std::move(list)}};
}

/// Anderson2021's schedule of `k` at each length compiled into `objects`; the lengths it
/// fails at are left out, stated in one line (the first failure's reason), in the manifest
/// and in the table (so in the times file).
void compileBaselines(const GpuExportOptions &options, llvm::StringRef scratch, ExportedKernel &k,
                      std::vector<std::string> &objects, llvm::raw_ostream &log) {
  std::string failedRows, firstWhy;
  for (size_t i = 0; i < options.lengths.size(); ++i) {
    GemmKernelSpec spec = k.gemm;
    spec.name = k.name + "_a" + std::to_string(i);
    llvm::SmallString<256> object(scratch);
    llvm::sys::path::append(object, spec.name + ".o");
    if (llvm::Error e =
            compileGemmKernelAnderson2021(spec, options.lengths[i], options.target, object)) {
      const std::string why = llvm::StringRef(llvm::toString(std::move(e))).trim().str();
      k.baselines.push_back({"", options.lengths[i], why});
      failedRows += (failedRows.empty() ? "" : ", ") + std::to_string(options.lengths[i]);
      if (firstWhy.empty())
        firstWhy = why;
      continue;
    }
    k.baselines.push_back({spec.name, options.lengths[i], ""});
    objects.push_back(std::string(object));
  }
  if (!failedRows.empty())
    log << "xfc tune: " << k.name << " (" << k.signature
        << ") has no Anderson2021 baseline at M = " << failedRows << ": " << firstWhy << "\n";
}

/// Compiles one candidate of `k` named `function`: the pipeline of each of `calls`' calls
/// (`compile(suffix, object)`), into `objects` where all compile. A candidate the generator
/// refuses is left out, named in `k.failed`; the default (the first) must compile.
llvm::Error addCandidate(
    ExportedKernel &k, const std::string &function, const std::string &schedule, TimingCalls calls,
    llvm::StringRef scratch, std::vector<std::string> &objects,
    llvm::function_ref<llvm::Error(llvm::StringRef suffix, llvm::StringRef object)> compile) {
  std::vector<std::string> compiled;
  for (const TimingCall &call : calls.calls) {
    llvm::SmallString<256> object(scratch);
    llvm::sys::path::append(object, function + call.suffix + ".o");
    if (llvm::Error e = compile(call.suffix, object)) {
      if (k.functions.empty()) // the default must compile
        return e;
      k.failed.push_back(
          llvm::json::Object{{"schedule", schedule}, {"failure", llvm::toString(std::move(e))}});
      return llvm::Error::success();
    }
    compiled.push_back(std::string(object));
  }
  objects.insert(objects.end(), compiled.begin(), compiled.end());
  k.functions.push_back(function);
  k.schedules.push_back(schedule);
  k.calls.push_back(std::move(calls));
  return llvm::Error::success();
}

llvm::Error notDefault(llvm::StringRef name) {
  return llvm::createStringError(
      name + "'s GPU schedule is not the default: the host module was lowered with a tuning "
             "database; lower it with --tuning-db none");
}

/// The distinct GEMMs of `host`, each with its candidates compiled into `objects`.
llvm::Error compileGemmCandidates(MLIRContext &ctx, const HostKernels &host,
                                  const GpuExportOptions &options, llvm::StringRef scratch,
                                  bool baselines, std::vector<ExportedKernel> &kernels,
                                  std::vector<std::string> &objects, llvm::raw_ostream &log) {
  llvm::StringSet<> seen;
  const int64_t longest = *llvm::max_element(options.lengths);
  for (const GemmKernelSpec &spec : host.gemms) {
    // xf-assign-schedules' default for this GEMM (its GEMV blocks narrowed unless it may merge
    // key ranges: either is a default).
    const GpuGemmScheduleAttr given = gpuGemmScheduleAttr(&ctx, spec.gpuSchedule);
    if (llvm::none_of(std::array{false, true}, [&](bool mayMerge) {
          return given == gpuGemmScheduleAttr(
                              &ctx, defaultGpuGemmSchedule(spec.N, spec.transposeWeight, mayMerge));
        }))
      return notDefault(spec.name);
    ExportedKernel k{spec.name, tunedKernel(ctx, spec).signature, spec, {}, {}, {}, {}, {}};
    if (!seen.insert(k.signature).second)
      continue;
    // Where the fp32 FMA kernel runs the GEMM from kFmaGemmMinRows rows (TensorCoreGemm.h),
    // the schedule's tile fields reach no kernel that runs: only the shorter lengths (the GEMV
    // and batch GEMV) vary the candidates and call Halide's pipeline, and without one the GEMM
    // has nothing to tune.
    const bool fma = tensorCoreGemmPlan(spec, GpuMatmul::Fp32).mlirKernel;
    GpuExportOptions halide = options;
    if (fma)
      llvm::erase_if(halide.lengths, [](int64_t l) { return l >= kFmaGemmMinRows; });
    if (halide.lengths.empty()) {
      log << "xfc tune: " << spec.name << " not timed: the fp32 FMA kernel (no schedule) runs it "
          << "from " << kFmaGemmMinRows << " rows, and no --lengths is shorter\n";
      continue;
    }
    size_t index = 0;
    for (const GpuGemmSchedule &s :
         gpuGemmCandidates(ctx, spec, halide.lengths, options.candidates, options.seed)) {
      GemmKernelSpec candidate = spec;
      candidate.gpuSchedule = s;
      candidate.name = spec.name + "_c" + std::to_string(index++);
      TimingCalls calls = gemmTimingCalls(candidate, longest);
      for (TimingCall &call : calls.calls)
        if (fma && !call.mostRows)
          call.mostRows = kFmaGemmMinRows - 1;
      if (llvm::Error e =
              addCandidate(k, candidate.name, kernelText(gpuGemmScheduleAttr(&ctx, s)), calls,
                           scratch, objects, [&](llvm::StringRef, llvm::StringRef object) {
                             return compileGemmKernel(candidate, options.target, object);
                           }))
        return e;
    }
    if (baselines)
      compileBaselines(halide, scratch, k, objects, log);
    kernels.push_back(std::move(k));
  }
  return llvm::Error::success();
}

/// Each attention attentionsByDatabaseKey gives, with its candidates compiled into `objects`:
/// `<name>` and, where a length takes the decode path, `<name>_decode_ranges`.
llvm::Error compileAttentionCandidates(MLIRContext &ctx, const HostKernels &host,
                                       const GpuExportOptions &options, llvm::StringRef scratch,
                                       std::vector<ExportedKernel> &kernels,
                                       std::vector<std::string> &objects, llvm::raw_ostream &log) {
  const GpuAttentionScheduleAttr dflt = gpuAttentionScheduleAttr(&ctx, GpuAttentionSchedule());
  const int64_t longest = *llvm::max_element(options.lengths);
  const bool decode = *llvm::min_element(options.lengths) <= kCudaDecodeRows;
  for (const AttentionKernelSpec &spec : host.attentions)
    if (!spec.segmented && gpuAttentionScheduleAttr(&ctx, spec.gpuSchedule) != dflt)
      return notDefault(spec.name);
  for (const auto &[key, spec] : attentionsByDatabaseKey(ctx, host.attentions)) {
    // Where the fp32 FMA kernel runs the prefill (TensorCoreAttention.h), the schedule's
    // prefill fields reach no kernel that runs: only its decode lengths vary the candidates
    // and call Halide's pipeline, and without one the attention has nothing to tune.
    const bool fmaPrefill = tensorCoreAttentionPlan(spec, GpuMatmul::Fp32).mlirKernel;
    std::vector<int64_t> lengths = options.lengths;
    if (fmaPrefill)
      llvm::erase_if(lengths, [](int64_t l) { return l > kCudaDecodeRows; });
    if (lengths.empty()) {
      log << "xfc tune: " << spec.name << " not timed: the fp32 FMA kernel (no schedule) runs its "
          << "prefill, and no --lengths is a decode step (<= " << kCudaDecodeRows << " rows)\n";
      continue;
    }
    ExportedKernel k{spec.name, key, {}, {}, {}, {}, {}, {}};
    size_t index = 0;
    for (const GpuAttentionSchedule &s :
         gpuAttentionCandidates(ctx, spec, lengths, options.candidates, options.seed)) {
      AttentionKernelSpec candidate = spec;
      candidate.gpuSchedule = s;
      candidate.batchedDecode = false; // the batched step's kernels are objects of their own
      candidate.name = spec.name + "_c" + std::to_string(index++);
      TimingCalls calls = attentionTimingCalls(candidate, longest, decode);
      for (TimingCall &call : calls.calls)
        if (fmaPrefill && !call.mostRows)
          call.mostRows = kCudaDecodeRows;
      if (llvm::Error e = addCandidate(
              k, candidate.name, kernelText(gpuAttentionScheduleAttr(&ctx, s)), calls, scratch,
              objects,
              [&](llvm::StringRef suffix, llvm::StringRef object) {
                return suffix.empty()
                           ? compileAttentionKernel(candidate, options.target, object)
                           : compileAttentionRangesKernel(candidate, options.target, object);
              }))
        return e;
    }
    kernels.push_back(std::move(k));
  }
  return llvm::Error::success();
}

/// What the export compiled, in a few lines: the baselines, the GEMMs' and the attentions'
/// candidates (kernels [0, gemms) are GEMMs), and what to run where.
void logExport(const std::vector<ExportedKernel> &kernels, size_t gemms, bool baselines,
               size_t lengths, llvm::StringRef program, llvm::raw_ostream &log) {
  size_t gemmCandidates = 0, attentionCandidates = 0, baselineCount = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    (i < gemms ? gemmCandidates : attentionCandidates) += kernels[i].functions.size();
    baselineCount += size_t(llvm::count_if(
        kernels[i].baselines, [](const ExportedBaseline &b) { return !b.function.empty(); }));
  }
  if (baselines)
    log << llvm::formatv("xfc tune: the baseline: {0} of {1} GEMMs at each length also "
                         "scheduled by Halide's Anderson2021 autoscheduler\n",
                         baselineCount, gemms * lengths);
  log << llvm::formatv("xfc tune: {0} GEMM kernels, {1} candidates compiled into {2}\n", gemms,
                       gemmCandidates, program);
  if (kernels.size() > gemms)
    log << llvm::formatv("xfc tune: {0} attention kernel{1}, {2} candidates compiled into {3}\n",
                         kernels.size() - gemms, kernels.size() - gemms == 1 ? "" : "s",
                         attentionCandidates, program);
  log << llvm::formatv("xfc tune: on the GPU machine: {0} --budget 55 --out gpu-times.json; "
                       "then here: xfc tune --import gpu-times.json --db DB\n",
                       program);
}

} // namespace

llvm::Error mlir::xf::tuning::exportGpuTiming(MLIRContext &ctx, ModuleOp host,
                                              const GpuExportOptions &options,
                                              llvm::raw_ostream &log) {
  llvm::Expected<std::string> target = halideTargetString(options.target);
  if (!target)
    return target.takeError();
  if (std::error_code ec = llvm::sys::fs::create_directories(options.directory))
    return llvm::createStringError("--export " + options.directory + ": " + ec.message());
  llvm::SmallString<128> scratch;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("xf-gpu-timing", scratch))
    return llvm::createStringError("a scratch directory: " + ec.message());
  llvm::scope_exit cleanUp([&] { llvm::sys::fs::remove_directories(scratch); });
  // The baseline: Anderson2021's plugin loaded once, or left out in one line.
  llvm::json::Object anderson2021{{"parallelism", kAnderson2021Parallelism}};
  bool baselines = options.anderson2021Plugin != "none";
  if (!baselines) {
    anderson2021["left_out"] = "--anderson2021 none";
    log << "xfc tune: no Anderson2021 baseline (--anderson2021 none)\n";
  } else if (llvm::Error e = loadAnderson2021(options.anderson2021Plugin)) {
    const std::string why = llvm::StringRef(llvm::toString(std::move(e))).trim().str();
    anderson2021["left_out"] = why;
    log << "xfc tune: the export goes on without the Anderson2021 baseline: " << why << "\n";
    baselines = false;
  }
  std::vector<ExportedKernel> kernels;
  std::vector<std::string> objects;
  const HostKernels declared = hostKernelsOf(host);
  if (llvm::Error e =
          compileGemmCandidates(ctx, declared, options, scratch, baselines, kernels, objects, log))
    return e;
  const size_t gemms = kernels.size();
  if (llvm::Error e =
          compileAttentionCandidates(ctx, declared, options, scratch, kernels, objects, log))
    return e;
  if (kernels.empty())
    return llvm::createStringError("the model has no Halide GEMM or attention to tune at these "
                                   "--lengths (the lines above say why)");
  llvm::SmallString<256> runtime(scratch), table(scratch), program(options.directory),
      manifest(options.directory);
  llvm::sys::path::append(runtime, "halide_runtime.o");
  if (llvm::Error e = compileHalideRuntime(options.target, runtime))
    return e;
  objects.push_back(std::string(runtime));
  llvm::sys::path::append(table, "table.c");
  const std::string source = tableSource(
      kernels, *target, anderson2021.getString("left_out").value_or("").str(), options.lengths);
  if (xfrt::Status s = xfrt::writeFileAtomically(std::string(table), source.data(), source.size());
      !s)
    return llvm::createStringError(s.message());
  llvm::sys::path::append(program, "xf-gpu-timing");
  if (llvm::Error e = linkGpuTimingProgram(objects, table, program))
    return e;
  llvm::sys::path::append(manifest, "manifest.json");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}",
                      manifestOf(kernels, *target, options.lengths, std::move(anderson2021)))
     << "\n";
  if (xfrt::Status s = xfrt::writeFileAtomically(std::string(manifest), text.data(), text.size());
      !s)
    return llvm::createStringError(s.message());
  logExport(kernels, gemms, baselines, options.lengths.size(), program, log);
  return llvm::Error::success();
}
