//===- xf-tune-worker.cpp - Compile, check and time candidate schedules ---===//
//
// The measurement worker of `xfc tune`. The tuner runs it in a child process
// per batch of candidate schedules, so a candidate that crashes, hangs or
// fails to compile cannot take the tuner down: the parent reads the JSON
// lines as they come and, if the worker dies, knows from the last
// "compiling" line which candidate killed it.
//
//   xf-tune-worker REQUEST.json|-      measure (request from a file or stdin)
//   xf-tune-worker --machine [--threads N]
//   xf-tune-worker --help
//
// The request and the output lines are documented in kUsage below. Every
// candidate is compiled with Halide's JIT and checked against a float64
// reference on every case before any is timed; the timing rounds then
// interleave all correct candidates (see Timing.h).
//
//===----------------------------------------------------------------------===//

#include "Autoscheduler.h"
#include "JsonLines.h"
#include "PlainKernels.h"
#include "Request.h"
#include "Timing.h"
#include "Workload.h"

#ifdef XF_TUNE_WORKER_HAVE_PEAK
#include "xfrt/MachinePeak.h"
#endif

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <thread>

using namespace xftune;
using namespace mlir::xf;

namespace {

const char *const kUsage = R"(usage: xf-tune-worker REQUEST.json|-
       xf-tune-worker --machine [--threads N]
       xf-tune-worker --help

Compiles each candidate schedule of a GEMM or attention kernel with Halide's
JIT, checks it against a float64 reference and times the correct ones.
Output: JSON Lines on stdout, one flushed line per event.

Request:
  {"target": "host" | Halide target runnable here, "threads": N (Halide
   threads, default: all cores), "repeats": 7 (timing rounds), "max_seconds":
   20 (no new round once the worker has run this long, but at least
   min(3, repeats) rounds),
   "kernel": the kernel's description, as the compiler prints it (docs/pipeline.md,
             "Kernel descriptions"): "#xf.gemm_kernel<k = .., n = .., weight = kn|nk,
             storage = f32|bf16|q8_0|q4_0|q4_1, bf16_inputs, bias, residual, activation,
             schedule = #xf.gemm_schedule<..>>" (ggml blocks: random blocks; not packed:
             the worker packs per candidate) or "#xf.attention_kernel<heads = .., kv_heads,
             dk, dv, causal, scale, rope = adjacent|halves, rope_base, rope_keys (false: K
             arrives rotated), schedule = #xf.attention_schedule<..>>",
   "cases": [{"rows": M} ...] (GEMM) or [{"rows": M, "keys": Mz (default M)} ...],
   "candidates": [{"tile_cols", "tile_rows", "k_block", "pack_weights",
                   "rows_per_task", "panel_cols", "gemv_rows_below",
                   "gemv_rows_per_pass", "gemv_tasks"} (GEMM) or
                  {"query_block", "key_block", "row_tile", "decode_key_tile"}
                  (attention; missing fields: the description's schedule),
                  or {"autoscheduler": "Adams2019|Li2018|Mullapudi2016"}: the
                  same algorithm unscheduled, built for each case's static
                  sizes (bounds and estimates) and autoscheduled]}
  A GEMM candidate that packs its weight (pack_weights, no weight blocks)
  takes it packed at load, as xfc's executables do: the weight is packed
  once per tile width, outside the timed calls.
Lines:
  {"candidate": i, "status": "compiling"}
  {"candidate": i, "status": "ok|compile_error|wrong|invalid", "error": ..,
   "compile_s": .., "max_rel_err": .., "tolerance": ..}
  {"candidate": i, "status": "timed", "rounds": R, "cases": [{"rows", "keys",
   "wall_min_ms", "wall_median_ms", "cpu_median_ms", "gflops", "gbs",
   "calls_per_sample", "wall_ms": [one per round, in order]} ...]}
  {"status": "done"}
A malformed request: one {"status": "error", "error": ..} line, exit code 2.
--machine: {"fma_gflops", "read_gbs", "isa", "cpu", "flags", "threads"}.
Environment: XF_HALIDE_PLUGIN_DIR, the directory of libautoschedule_*.so;
XF_TUNE_WORKER_PRINT_SCHEDULES=1 prints the autoschedulers' schedules to stderr.
)";

void emitError(const std::string &message) {
  emitLine([&](llvm::json::OStream &j) {
    j.attribute("status", "error");
    j.attribute("error", message);
  });
}

/// What compiling and checking one candidate gave.
struct Outcome {
  std::string status = "ok", error;
  double compileSeconds = -1, maxRelErr = NAN;
  /// One kernel for all cases, or (autoscheduler baselines) one per case.
  std::vector<Halide::Callable> kernels;
  /// A GEMM taking its weight packed at load: the workloads with the weight
  /// packed for its tiles (shared by candidates of the same tile width).
  std::shared_ptr<std::vector<Workload>> packedWorkloads;

  Halide::Callable &kernelFor(size_t c) { return kernels[kernels.size() == 1 ? 0 : c]; }
  std::vector<Workload> &workloads(std::vector<Workload> &plain) {
    return packedWorkloads ? *packedWorkloads : plain;
  }
};

/// Packed weights per tile width: candidates sharing one share their copies.
using PackedWorkloadCache = std::map<int64_t, std::shared_ptr<std::vector<Workload>>>;

/// xf's GEMM with a candidate's schedule, as xfc builds it for a constant
/// weight: packed at load whenever the schedule packs the weight at all.
GemmKernelSpec candidateGemm(const Request &request, const Candidate &candidate) {
  GemmKernelSpec spec = request.kernel.gemm;
  spec.schedule = candidate.gemm;
  spec.packedWeight = canPackWeightAtLoad(spec);
  return spec;
}

/// Builds the candidate's pipeline: xf's with the candidate's schedule, or
/// the plain algorithm for `size` scheduled by a Halide autoscheduler.
llvm::Expected<KernelPipeline> buildCandidate(const Request &request, const Candidate &candidate,
                                              const Case &size, std::string &status) {
  const KernelDesc &kernel = request.kernel;
  if (!candidate.autoscheduler.empty()) {
    status = "compile_error";
    llvm::Expected<KernelPipeline> built = buildPlainPipeline(kernel, size);
    if (!built)
      return built.takeError();
    if (llvm::Error err = applyAutoscheduler(built->pipeline, candidate.autoscheduler,
                                             request.target, request.threads))
      return std::move(err);
    return built;
  }
  // The kernel's own validation and scheduling errors: the schedule is illegal.
  status = "invalid";
  if (kernel.kind == KernelKind::Gemm)
    return buildGemmPipeline(candidateGemm(request, candidate), request.target);
  AttentionKernelSpec spec = kernel.attention;
  spec.schedule = candidate.attention;
  return buildAttentionPipeline(spec, request.target);
}

/// Packs the workloads' weight for a candidate that takes it packed (once per
/// tile width); an error message, or empty.
std::string packWorkloads(const Request &request, const Candidate &candidate,
                          std::vector<Workload> &workloads, PackedWorkloadCache &cache,
                          Outcome &outcome) {
  if (request.kernel.kind != KernelKind::Gemm || !candidate.autoscheduler.empty())
    return "";
  GemmKernelSpec spec = candidateGemm(request, candidate);
  if (!spec.packedWeight)
    return "";
  std::shared_ptr<std::vector<Workload>> &packed = cache[spec.schedule.tileCols];
  if (!packed) {
    llvm::Expected<KernelPipeline> built = buildGemmPackPipeline(spec, request.target);
    if (!built)
      return llvm::toString(built.takeError());
    std::optional<Halide::Callable> pack;
    if (llvm::Error err = catchHalideErrors("compiling the weight packing", [&] {
          pack.emplace(built->pipeline.compile_to_callable(built->arguments(), request.target));
        }))
      return llvm::toString(std::move(err));
    llvm::Expected<std::vector<Workload>> result = withPackedWeights(*pack, spec, workloads);
    if (!result)
      return llvm::toString(result.takeError());
    packed = std::make_shared<std::vector<Workload>>(std::move(*result));
  }
  outcome.packedWorkloads = packed;
  return "";
}

/// The largest relative error a candidate's output may have against the float64 reference:
/// x rounded to bfloat16 (the reference keeps it float32) costs ~2^-9 per product.
double outputTolerance(const Request &request) {
  const bool bf16Activations =
      request.kernel.kind == KernelKind::Gemm && request.kernel.gemm.bf16Activations;
  return bf16Activations ? 2e-2 : 1e-4;
}

Outcome compileAndCheck(const Request &request, const Candidate &candidate,
                        std::vector<Workload> &plainWorkloads, PackedWorkloadCache &cache) {
  Outcome outcome;
  if (!candidate.invalid.empty()) {
    outcome.status = "invalid", outcome.error = candidate.invalid;
    return outcome;
  }
  const double start = wallSeconds();
  // xf's kernels take any M; an autoscheduled pipeline is built for one
  // static size (see PlainKernels.h), so each case gets its own.
  const size_t pipelines = candidate.autoscheduler.empty() ? 1 : request.cases.size();
  for (size_t c = 0; c < pipelines; ++c) {
    llvm::Expected<KernelPipeline> built =
        buildCandidate(request, candidate, request.cases[c], outcome.status);
    if (!built) {
      outcome.error = llvm::toString(built.takeError());
      return outcome;
    }
    outcome.status = "compile_error";
    if (llvm::Error err = catchHalideErrors("compiling", [&] {
          outcome.kernels.push_back(
              built->pipeline.compile_to_callable(built->arguments(), request.target));
        })) {
      outcome.error = llvm::toString(std::move(err));
      return outcome;
    }
  }
  outcome.compileSeconds = wallSeconds() - start;
  if (std::string error = packWorkloads(request, candidate, plainWorkloads, cache, outcome);
      !error.empty()) {
    outcome.status = "compile_error", outcome.error = error;
    return outcome;
  }
  std::vector<Workload> &workloads = outcome.workloads(plainWorkloads);

  const double tolerance = outputTolerance(request);
  outcome.maxRelErr = 0;
  for (size_t c = 0; c < workloads.size(); ++c) {
    Workload &w = workloads[c];
    llvm::Expected<double> error = checkKernel(outcome.kernelFor(c), w);
    if (!error) {
      outcome.status = "wrong", outcome.error = llvm::toString(error.takeError());
      outcome.maxRelErr = NAN;
      return outcome;
    }
    outcome.maxRelErr = std::isnan(*error) ? *error : std::max(outcome.maxRelErr, *error);
    if (!(*error <= tolerance)) {
      outcome.status = "wrong";
      outcome.error =
          "rows=" + std::to_string(w.size.rows) +
          (request.kernel.kind == KernelKind::Attention ? " keys=" + std::to_string(w.size.keys)
                                                        : std::string()) +
          ": max relative error " + std::to_string(*error) + " exceeds " +
          std::to_string(tolerance);
      return outcome;
    }
  }
  outcome.status = "ok";
  return outcome;
}

void emitOutcome(size_t index, const Outcome &outcome, double tolerance) {
  emitLine([&](llvm::json::OStream &j) {
    j.attribute("candidate", int64_t(index));
    j.attribute("status", outcome.status);
    if (!outcome.error.empty())
      j.attribute("error", outcome.error);
    if (outcome.compileSeconds >= 0)
      j.attribute("compile_s", outcome.compileSeconds);
    if (outcome.status == "ok" || outcome.status == "wrong")
      numberAttribute(j, "max_rel_err", outcome.maxRelErr);
    if (outcome.compileSeconds >= 0)
      j.attribute("tolerance", tolerance);
  });
}

int measure(const Request &request, double startTime) {
  std::vector<Workload> workloads = makeWorkloads(request);
  const double tolerance = outputTolerance(request);

  std::vector<Outcome> outcomes;
  PackedWorkloadCache packedCache;
  std::vector<size_t> timed; // indices of the ok candidates
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    emitLine([&](llvm::json::OStream &j) {
      j.attribute("candidate", int64_t(i));
      j.attribute("status", "compiling");
    });
    outcomes.push_back(compileAndCheck(request, request.candidates[i], workloads, packedCache));
    emitOutcome(i, outcomes.back(), tolerance);
    if (outcomes.back().status == "ok")
      timed.push_back(i);
    else
      outcomes.back().kernels.clear(); // free the JIT modules now
  }

  if (!timed.empty()) {
    TimingResult timing =
        timeInterleaved(int(timed.size()), int(workloads.size()), request.repeats,
                        startTime + request.maxSeconds, [&](int candidate, int c) {
                          Outcome &outcome = outcomes[timed[candidate]];
                          return !llvm::errorToBool(callKernel(
                              outcome.kernelFor(c), outcome.workloads(workloads)[c]));
                        });
    for (size_t t = 0; t < timed.size(); ++t) {
      const size_t i = timed[t];
      if (timing.failed[t]) {
        emitLine([&](llvm::json::OStream &j) {
          j.attribute("candidate", int64_t(i));
          j.attribute("status", "wrong");
          j.attribute("error", "a call failed while timing");
        });
        continue;
      }
      emitLine([&](llvm::json::OStream &j) {
        j.attribute("candidate", int64_t(i));
        j.attribute("status", "timed");
        j.attribute("rounds", timing.rounds);
        j.attributeArray("cases", [&] {
          for (size_t c = 0; c < workloads.size(); ++c) {
            const Case &size = workloads[c].size;
            const Stats stats = summarize(timing.samples[t][c]);
            j.object([&] {
              j.attribute("rows", size.rows);
              j.attribute("keys", request.kernel.kind == KernelKind::Gemm ? 0 : size.keys);
              numberAttribute(j, "wall_min_ms", stats.wallMin * 1e3);
              numberAttribute(j, "wall_median_ms", stats.wallMedian * 1e3);
              numberAttribute(j, "cpu_median_ms", stats.cpuMedian * 1e3);
              numberAttribute(j, "gflops", flopsOf(request, size) / stats.wallMin * 1e-9);
              numberAttribute(j, "gbs", weightBytesOf(request, size) / stats.wallMin * 1e-9);
              j.attribute("calls_per_sample", timing.callsPerSample[c]);
              // Every round's time: the tuner pairs them with the default's same rounds.
              j.attributeArray("wall_ms", [&] {
                for (const Sample &s : timing.samples[t][c])
                  j.value(s.wall * 1e3);
              });
            });
          }
        });
      });
    }
  }
  emitLine([](llvm::json::OStream &j) { j.attribute("status", "done"); });
  return 0;
}

int machine(int threads) {
#ifdef XF_TUNE_WORKER_HAVE_PEAK
  xfrt::MachinePeak peak = xfrt::measurePeak(threads);
  emitLine([&](llvm::json::OStream &j) {
    j.attribute("fma_gflops", peak.gflops);
    j.attribute("read_gbs", peak.readGBs);
    j.attribute("isa", peak.isa);
    j.attribute("cpu", peak.cpu);
    j.attribute("flags", peak.flags);
    j.attribute("threads", threads);
  });
  return 0;
#else
  (void)threads;
  emitError("--machine is only available on x86-64");
  return 2;
#endif
}

/// A bad command line or request: one error line, exit code 2.
int requestError(const std::string &message, bool showUsage = false) {
  emitError(message);
  llvm::errs() << "xf-tune-worker: " << message << "\n" << (showUsage ? kUsage : "");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  const double startTime = wallSeconds();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    llvm::outs() << kUsage;
    return 0;
  }
  if (!args.empty() && args[0] == "--machine") {
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    if (args.size() == 3 && args[1] == "--threads") {
      char *end = nullptr;
      long n = std::strtol(args[2].c_str(), &end, 10);
      if (*end || n < 1 || n > 256)
        return requestError("--threads must be an integer in [1, 256]", true);
      threads = int(n);
    } else if (args.size() != 1) {
      return requestError("--machine takes only --threads N", true);
    }
    return machine(threads);
  }
  if (args.size() != 1 || (args[0] != "-" && llvm::StringRef(args[0]).starts_with("-")))
    return requestError("expected one request file, or - for stdin", true);

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFileOrSTDIN(args[0], /*IsText=*/true);
  if (!text)
    return requestError("cannot read " + args[0] + ": " + text.getError().message());
  if ((*text)->getBufferSize() > (64u << 20))
    return requestError("the request is larger than 64 MiB");
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*text)->getBuffer());
  if (!json)
    return requestError("the request is not JSON: " + llvm::toString(json.takeError()));
  llvm::Expected<Request> request = parseRequest(*json);
  if (!request)
    return requestError(llvm::toString(request.takeError()));

  // Halide's JIT runtime reads this when its thread pool starts, i.e. at the
  // first parallel loop, which is after this point.
  setenv("HL_NUM_THREADS", std::to_string(request->threads).c_str(), 1);
  try {
    return measure(*request, startTime);
  } catch (const std::exception &e) {
    // Out of memory and the like: say so in the protocol, not only on stderr.
    emitError(std::string("internal error: ") + e.what());
    return 1;
  }
}
