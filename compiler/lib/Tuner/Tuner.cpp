//===- Tuner.cpp - `xfc tune`: search each kernel's schedule space --------===//
//
// The model's distinct kernels as the tuner sees them (TunedKernel.h: collected from the
// lowered program, described to the worker, their costs), then the run: this machine's
// ceilings, the budget shared among the kernels, the progress line, the summary table and
// the JSON report. Each kernel's search is KernelSearch.cpp's.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/Tuner.h"
#include "ProgramTuner.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Conversion/LowerToHost.h"
#include "xf/Version.h"
#include "xfrt/OutputFile.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <thread>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

llvm::json::Object tuning::kernelJson(const TunedKernel &k) {
  if (k.isGemm) {
    const GemmKernelSpec &s = k.gemm;
    const char *epilogue[] = {"none", "relu", "gelu_tanh", "gelu_erf", "silu", "swiglu"};
    return llvm::json::Object{{"kind", "gemm"},
                              {"K", s.K},
                              {"N", s.N},
                              {"transpose_weight", s.transposeWeight},
                              {"bf16_weights", s.bf16Weights},
                              {"bf16_activations", s.bf16Activations},
                              {"bias", s.hasBias},
                              {"residual", s.hasResidual},
                              {"epilogue", epilogue[int(s.epilogue)]},
                              {"weight_blocks", s.weightBlocks == WeightBlocks::None
                                                    ? "none"
                                                    : weightBlocksName(s.weightBlocks)}};
  }
  const AttentionKernelSpec &s = k.attention;
  llvm::json::Object attention{{"kind", "attention"}, {"heads", s.heads},   {"dk", s.dK},
                               {"dv", s.dV},          {"causal", s.causal}, {"scale", s.scale}};
  if (s.keyValueHeads() != s.heads)
    attention["kv_heads"] = s.keyValueHeads();
  if (s.rope != AttentionKernelSpec::Rope::None) {
    attention["rope"] = s.rope == AttentionKernelSpec::Rope::Adjacent ? "adjacent" : "halves";
    attention["rope_base"] = s.ropeBase;
    attention["rope_keys"] = s.ropeKeys;
  }
  return attention;
}

llvm::json::Value tuning::candidateJson(const TunedKernel &k, const Point &p) {
  if (k.isGemm) {
    GemmSchedule s = gemmScheduleAt(p);
    return llvm::json::Object{{"tile_cols", s.tileCols},
                              {"tile_rows", s.tileRows},
                              {"k_block", s.kBlock},
                              {"pack_weights", s.packWeights},
                              {"rows_per_task", s.rowsPerTask},
                              {"panel_cols", s.panelCols},
                              {"gemv_rows_below", s.gemvRowsBelow},
                              {"gemv_rows_per_pass", s.gemvRowsPerPass},
                              {"gemv_tasks", s.gemvTasks}};
  }
  AttentionSchedule s = attentionScheduleAt(p);
  return llvm::json::Object{{"query_block", s.queryBlock},
                            {"key_block", s.keyBlock},
                            {"row_tile", s.rowTile},
                            {"decode_key_tile", s.decodeKeyTile}};
}

std::string tuning::scheduleText(MLIRContext &ctx, const TunedKernel &k, const Point &p) {
  Attribute attr = k.isGemm ? Attribute(gemmScheduleAttr(&ctx, gemmScheduleAt(p)))
                            : Attribute(attentionScheduleAttr(&ctx, attentionScheduleAt(p)));
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// The point of a recorded schedule; nullopt if it is not one of this kind.
std::optional<Point> tuning::pointOf(MLIRContext &ctx, const TunedKernel &k, llvm::StringRef text) {
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  Attribute attr = parseAttribute(text, &ctx);
  if (auto g = dyn_cast_or_null<GemmScheduleAttr>(attr); g && k.isGemm)
    return gemmPoint(gemmScheduleOf(g));
  if (auto a = dyn_cast_or_null<AttentionScheduleAttr>(attr); a && !k.isGemm)
    return attentionPoint(attentionScheduleOf(a));
  return std::nullopt;
}

/// Geometric mean of the cases' minimum wall times: every length counts
/// alike, whatever its absolute time (a 1-row decode GEMV as much as a
/// 128-row prefill GEMM).
double tuning::costOf(const CandidateResult &r) {
  double logSum = 0;
  for (const CaseTime &c : r.cases)
    logSum += std::log(std::max(c.wallMinMs, 1e-6));
  return std::exp(logSum / std::max<size_t>(1, r.cases.size()));
}

/// How close each case runs to this machine's bound (FMA peak or read
/// bandwidth, whichever is slower), as a geometric mean over the cases.
double tuning::rooflineOf(const TunedKernel &k, const CandidateResult &r,
                          const MachineCeilings &m) {
  if (m.fmaGflops <= 0 || m.readGBs <= 0 || r.cases.empty())
    return 0;
  double logSum = 0;
  KernelWork work = k.isGemm ? kernelWork(k.gemm) : kernelWork(k.attention);
  for (const CaseTime &c : r.cases) {
    double flops = work.flops(double(c.rows), double(c.keys));
    double bytes = work.bytes(double(c.rows), double(c.keys));
    double boundMs = std::max(flops / (m.fmaGflops * 1e9), bytes / (m.readGBs * 1e9)) * 1e3;
    logSum += std::log(std::min(1.0, boundMs / std::max(c.wallMinMs, 1e-9)));
  }
  return std::exp(logSum / double(r.cases.size()));
}

/// Indices of all of a kernel's lengths.
std::vector<size_t> tuning::everyCase(const TunedKernel &k) {
  std::vector<size_t> cases(k.caseRows.size());
  for (size_t i = 0; i < cases.size(); ++i)
    cases[i] = i;
  return cases;
}

/// A worker request timing kernel `k` on `cases` (indices into its lengths),
/// everything but the candidates.
llvm::json::Object tuning::requestFor(const TunedKernel &k, llvm::ArrayRef<size_t> cases,
                                      const std::string &target, int repeats, double maxSeconds) {
  llvm::json::Object request{{"target", target},
                             {"repeats", repeats},
                             {"max_seconds", maxSeconds},
                             {"kernel", kernelJson(k)}};
  llvm::json::Array list;
  for (size_t i : cases) {
    llvm::json::Object c{{"rows", k.caseRows[i]}};
    if (!k.isGemm)
      c["keys"] = k.caseKeys[i];
    list.push_back(std::move(c));
  }
  request["cases"] = std::move(list);
  return request;
}

static std::string formatDuration(double s) {
  if (s < 60)
    return llvm::formatv("{0}s", int(s));
  return llvm::formatv("{0}m{1:2}s", int(s) / 60, int(s) % 60);
}

llvm::Error ProgramTuner::prepare(const HostProgram &program) {
  llvm::Expected<VectorShape> shape = vectorShapeOf(options.target);
  if (!shape)
    return shape.takeError();
  llvm::Expected<std::string> targetString = halideTargetString(options.target);
  if (!targetString)
    return targetString.takeError();
  target = *targetString;
  if (llvm::Error err = collect(program, *shape))
    return err;
  llvm::Expected<MachineCeilings> ceilings = worker.measureMachine();
  if (!ceilings)
    return ceilings.takeError();
  machine = *ceilings;
  return llvm::Error::success();
}

llvm::Error ProgramTuner::collect(const HostProgram &program, const VectorShape &shape) {
  llvm::StringSet<> seen;
  int64_t longest = 1;
  for (int64_t l : options.lengths)
    longest = std::max(longest, l);
  for (const GemmKernelSpec &spec : program.gemms) {
    TunedKernel k;
    k.isGemm = true, k.gemm = spec, k.name = spec.name, k.signature = kernelSignature(spec);
    if (!seen.insert(k.signature).second)
      continue;
    k.space = gemmSpace(spec, shape, options.lengths);
    k.paths = gemmPaths(spec, options.lengths);
    k.defaultPoint = gemmPoint(spec.schedule);
    for (int64_t l : options.lengths)
      k.caseRows.push_back(l), k.caseKeys.push_back(0);
    kernels.push_back(std::move(k));
  }
  for (const AttentionKernelSpec &spec : program.attentions) {
    // A packed batch's one call (its lengths are inputs the tune worker does not make): it
    // takes the schedule its op is tuned to as the per-sequence kernel.
    if (spec.segmented)
      continue;
    TunedKernel k;
    k.isGemm = false, k.attention = spec, k.name = spec.name, k.signature = kernelSignature(spec);
    if (!seen.insert(k.signature).second)
      continue;
    k.space = attentionSpace(spec, shape, options.lengths);
    k.paths = attentionPaths(options.lengths);
    k.defaultPoint = attentionPoint(spec.schedule);
    // Prefill attends over its own rows; a decode step (1 row) over the
    // longest context.
    for (int64_t l : options.lengths) {
      if (l <= 4)
        k.caseRows.push_back(l), k.caseKeys.push_back(longest);
      else
        k.caseRows.push_back(l), k.caseKeys.push_back(l);
    }
    kernels.push_back(std::move(k));
  }
  return llvm::Error::success();
}

void ProgramTuner::progress(const std::string &label, size_t index, double spent, double share,
                            size_t trials, double best, double dflt, bool final) {
  const int width = 20;
  int filled = share > 0 ? int(std::min(1.0, spent / share) * width) : width;
  if (final)
    filled = width;
  double remaining = std::max(0.0, budgetLeft());
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string line = llvm::formatv("[{0}/{1}] {2,-22} [{3}] {4} trials  best {5:f4} ms ({6:f2}x "
                                   "default)  ETA {7}",
                                   index + 1, kernels.size(), label, bar, trials, best,
                                   best > 0 ? dflt / best : 0.0, formatDuration(remaining));
  if (interactive)
    log << "\r" << line << "\x1b[K" << (final ? "\n" : "");
  else if (!final)
    log << line << "\n";
  log.flush();
}

llvm::Error ProgramTuner::run(const HostProgram &program) {
  // Held until the run ends: read, tuned and saved by this run alone.
  llvm::Expected<TuningDatabaseLock> lock = TuningDatabaseLock::acquire(options.dbPath);
  if (!lock)
    return lock.takeError();
  llvm::Expected<TuningDatabase> loaded = TuningDatabase::loadOrEmpty(options.dbPath);
  if (!loaded)
    return loaded.takeError();
  db = std::move(*loaded);
  if (llvm::Error err = prepare(program))
    return err;
  // Kernels this database has no entry for go first: a run whose budget ends before the last
  // kernel leaves those to the next run, which starts with them (not with the ones tuned).
  std::stable_partition(kernels.begin(), kernels.end(), [&](const TunedKernel &k) {
    const TuningEntry *e = db.find(k.signature, target, options.threads, kXfVersion);
    return !e || e->schedule.empty();
  });
  log << llvm::formatv("xfc tune: {0} kernels, budget {1}, {2} threads, lengths", kernels.size(),
                       formatDuration(options.budgetSeconds), options.threads);
  for (int64_t l : options.lengths)
    log << " " << l;
  log << llvm::formatv("\nxfc tune: this machine: {0:f0} GFLOP/s fp32 FMA peak, {1:f1} GB/s read "
                       "({2}); database {3}\n",
                       machine.fmaGflops, machine.readGBs, machine.isa, options.dbPath);
  llvm::json::Array report;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (options.interrupted && *options.interrupted)
      break;
    if (budgetSpent()) {
      log << llvm::formatv("\nxfc tune: the budget is spent; {0} of {1} kernels were not "
                           "reached and keep what {2} holds for them (run again to go on)\n",
                           kernels.size() - i, kernels.size(), options.dbPath);
      break;
    }
    double share = std::max(0.0, budgetLeft() / double(kernels.size() - i));
    if (llvm::Error err = tune(kernels[i], i, share, report))
      return err;
  }
  log << "\n  kernel           default ms   tuned ms  speedup  roofline  signature\n";
  for (const llvm::json::Value &v : report) {
    const llvm::json::Object &o = *v.getAsObject();
    double d = o.getNumber("default_ms").value_or(0), b = o.getNumber("best_ms").value_or(0);
    log << llvm::formatv("  {0,-16} {1,10:f4} {2,10:f4} {3,7:f2}x {4,8:p}  {5}\n",
                         o.getString("name").value_or(""), d, b, b > 0 ? d / b : 0.0,
                         o.getNumber("roofline_fraction").value_or(0),
                         o.getString("kernel").value_or(""));
  }
  if (!options.reportPath.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}",
                        llvm::json::Value(llvm::json::Object{{"target", target},
                                                             {"threads", options.threads},
                                                             {"fma_gflops", machine.fmaGflops},
                                                             {"read_gbs", machine.readGBs},
                                                             {"budget_s", options.budgetSeconds},
                                                             {"baselines_s", baselineSeconds},
                                                             {"kernels", std::move(report)}}))
       << "\n";
    // Written whole or not at all, like every output of xfc (xfrt/OutputFile.h).
    if (xfrt::Status s = xfrt::writeFileAtomically(options.reportPath, text.data(), text.size());
        !s)
      return llvm::createStringError("cannot write the report: " + s.message());
  }
  if (options.interrupted && *options.interrupted)
    log << "xfc tune: interrupted; everything measured so far is in " << options.dbPath
        << " (run again to resume)\n";
  return llvm::Error::success();
}

llvm::Error mlir::xf::tuning::tuneProgram(MLIRContext &ctx, const HostProgram &program,
                                          const TuneOptions &options, llvm::raw_ostream &log) {
  TuneOptions resolved = options;
  if (resolved.threads <= 0)
    resolved.threads = std::max(1u, std::thread::hardware_concurrency());
  ProgramTuner tuner(ctx, resolved, log);
  return resolved.comparePath.empty() ? tuner.run(program) : tuner.compare(program);
}
