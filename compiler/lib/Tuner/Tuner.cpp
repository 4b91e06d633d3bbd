//===- Tuner.cpp - `xfc tune`: search each kernel's schedule space --------===//

#include "xf/Tuning/Tuner.h"
#include "WorkerClient.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Tuning/CostLedger.h"
#include "xf/Tuning/ScheduleSpace.h"
#include "xf/Tuning/Search.h"
#include "xf/Tuning/TuningDatabase.h"
#include "xf/Version.h"
#include "xfrt/OutputFile.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <thread>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string isoNow() {
  std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

std::string formatDuration(double s) {
  if (s < 60)
    return llvm::formatv("{0}s", int(s));
  return llvm::formatv("{0}m{1:2}s", int(s) / 60, int(s) % 60);
}

/// One kernel of the model, as the tuner sees it.
struct Kernel {
  bool isGemm = true;
  GemmKernelSpec gemm;
  AttentionKernelSpec attention;
  std::string name, signature;
  SearchSpace space;
  Point defaultPoint;
  std::vector<int64_t> caseRows, caseKeys;
};

llvm::json::Object kernelJson(const Kernel &k) {
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

llvm::json::Value candidateJson(const Kernel &k, const Point &p) {
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

std::string scheduleText(MLIRContext &ctx, const Kernel &k, const Point &p) {
  Attribute attr = k.isGemm ? Attribute(gemmScheduleAttr(&ctx, gemmScheduleAt(p)))
                            : Attribute(attentionScheduleAttr(&ctx, attentionScheduleAt(p)));
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// The point of a recorded schedule; nullopt if it is not one of this kind.
std::optional<Point> pointOf(MLIRContext &ctx, const Kernel &k, llvm::StringRef text) {
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
double costOf(const CandidateResult &r) {
  double logSum = 0;
  for (const CaseTime &c : r.cases)
    logSum += std::log(std::max(c.wallMinMs, 1e-6));
  return std::exp(logSum / std::max<size_t>(1, r.cases.size()));
}

/// How close each case runs to this machine's bound (FMA peak or read
/// bandwidth, whichever is slower), as a geometric mean over the cases.
double rooflineOf(const Kernel &k, const CandidateResult &r, const MachineCeilings &m) {
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

class Tuner {
public:
  Tuner(MLIRContext &ctx, const TuneOptions &options, llvm::raw_ostream &log)
      : ctx(ctx), options(options), log(log), worker(options.workerPath, options.threads),
        interactive(log.is_displayed()) {}

  llvm::Error run(const HostProgram &program);

private:
  llvm::Error collect(const HostProgram &program, const VectorShape &shape);
  llvm::Error tune(Kernel &k, size_t index, double share, llvm::json::Array &report);
  void progress(const Kernel &k, size_t index, double spent, double share, size_t trials,
                double best, double dflt, bool final);

  MLIRContext &ctx;
  const TuneOptions &options;
  llvm::raw_ostream &log;
  WorkerClient worker;
  bool interactive;
  std::vector<Kernel> kernels;
  TuningDatabase db;
  std::string target;
  MachineCeilings machine;
  Clock::time_point start = Clock::now();
};

llvm::Error Tuner::collect(const HostProgram &program, const VectorShape &shape) {
  llvm::StringSet<> seen;
  int64_t longest = 1;
  for (int64_t l : options.lengths)
    longest = std::max(longest, l);
  for (const GemmKernelSpec &spec : program.gemms) {
    Kernel k;
    k.isGemm = true, k.gemm = spec, k.name = spec.name, k.signature = kernelSignature(spec);
    if (!seen.insert(k.signature).second)
      continue;
    k.space = gemmSpace(spec, shape, options.lengths);
    k.defaultPoint = gemmPoint(spec.schedule);
    for (int64_t l : options.lengths)
      k.caseRows.push_back(l), k.caseKeys.push_back(0);
    kernels.push_back(std::move(k));
  }
  for (const AttentionKernelSpec &spec : program.attentions) {
    Kernel k;
    k.isGemm = false, k.attention = spec, k.name = spec.name, k.signature = kernelSignature(spec);
    if (!seen.insert(k.signature).second)
      continue;
    k.space = attentionSpace(spec, shape, options.lengths);
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

void Tuner::progress(const Kernel &k, size_t index, double spent, double share, size_t trials,
                     double best, double dflt, bool final) {
  const int width = 20;
  int filled = share > 0 ? int(std::min(1.0, spent / share) * width) : width;
  if (final)
    filled = width;
  double remaining = std::max(0.0, options.budgetSeconds - secondsSince(start));
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string line = llvm::formatv("[{0}/{1}] {2,-14} [{3}] {4} trials  best {5:f4} ms ({6:f2}x "
                                   "default)  ETA {7}",
                                   index + 1, kernels.size(), k.name, bar, trials, best,
                                   best > 0 ? dflt / best : 0.0, formatDuration(remaining));
  if (interactive)
    log << "\r" << line << "\x1b[K" << (final ? "\n" : "");
  else if (!final)
    log << line << "\n";
  log.flush();
}

llvm::Error Tuner::tune(Kernel &k, size_t index, double share, llvm::json::Array &report) {
  Clock::time_point kernelStart = Clock::now();
  Search search(k.space, options.seed + index);
  TuningEntry &entry = db.upsert(k.signature, target, options.threads, kXfVersion);
  const double previouslySpent = entry.secondsSpent;
  // Resume: recorded trials are never measured again; the recorded best
  // and the default (whose recorded cost stays the anchor) are contenders
  // again, counted as measured twice.
  std::vector<Point> points{k.defaultPoint}; // ledger ids: 0 is the default
  auto idOf = [&](const Point &p) {
    auto it = std::find(points.begin(), points.end(), p);
    if (it != points.end())
      return size_t(it - points.begin());
    points.push_back(p);
    return points.size() - 1;
  };
  bool defaultRecorded = false;
  for (const TrialRecord &t : entry.trials)
    if (std::optional<Point> p = pointOf(ctx, k, t.schedule)) {
      search.record({*p, t.costMs});
      defaultRecorded |= *p == k.defaultPoint && t.costMs.has_value();
    }
  CostLedger ledger(defaultRecorded ? entry.defaultCostMs : 0);
  if (defaultRecorded) {
    ledger.record(0, entry.defaultCostMs, 2);
    if (!entry.schedule.empty())
      if (std::optional<Point> p = pointOf(ctx, k, entry.schedule); p && entry.costMs > 0)
        ledger.record(idOf(*p), entry.costMs, 2);
  }

  llvm::json::Object request{
      {"target", options.target}, {"repeats", 5}, {"max_seconds", 4.0}, {"kernel", kernelJson(k)}};
  llvm::json::Array cases;
  for (size_t i = 0; i < k.caseRows.size(); ++i) {
    llvm::json::Object c{{"rows", k.caseRows[i]}};
    if (!k.isGemm)
      c["keys"] = k.caseKeys[i];
    cases.push_back(std::move(c));
  }
  request["cases"] = std::move(cases);

  llvm::json::Array history; // [seconds, best cost] whenever the estimate changes
  std::map<size_t, CandidateResult> lastResult; // raw times, for the roofline
  auto noteBest = [&] {
    double c = ledger.bestCost();
    if (c > 0 &&
        (history.empty() || history.back().getAsArray()->back().getAsNumber().value_or(0) != c))
      history.push_back(llvm::json::Array{secondsSince(kernelStart), c});
  };
  // The ledger's best into the entry, and the database to disk.
  auto saveBest = [&]() -> llvm::Error {
    if (std::optional<size_t> best = ledger.best()) {
      entry.schedule = scheduleText(ctx, k, points[*best]);
      entry.costMs = ledger.bestCost();
      entry.defaultCostMs = ledger.defaultCost();
      if (lastResult.count(*best))
        entry.rooflineFraction = rooflineOf(k, lastResult[*best], machine);
      entry.measuredAt = isoNow();
    }
    entry.secondsSpent = previouslySpent + secondsSince(kernelStart);
    // Until something has worked the entry has no schedule and is held back
    // from the file (its trials are kept in memory).
    if (entry.schedule.empty())
      return llvm::Error::success();
    return db.save(options.dbPath);
  };
  // One worker batch: the default first — the anchor every cost of the
  // batch is scaled by — then `others`. Nothing when the anchor did not run
  // (the batch's times mean nothing); an error when it failed its check (a
  // bug in the default, not a tuning result).
  using Results = std::vector<CandidateResult>;
  auto timeAnchored = [&](llvm::json::Object batchRequest, std::vector<llvm::json::Value> others,
                          double timeout) -> llvm::Expected<std::optional<Results>> {
    others.insert(others.begin(), candidateJson(k, k.defaultPoint));
    auto results = worker.run(std::move(batchRequest), others, timeout);
    if (!results)
      return results.takeError();
    const CandidateResult &anchor = results->front();
    if (anchor.ran && !anchor.failure.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the default schedule of " + k.name +
                                         " failed in the worker: " + anchor.failure);
    if (!anchor.ran || !ledger.beginBatch(costOf(anchor)))
      return std::nullopt;
    return std::optional<Results>(std::move(*results));
  };
  auto candidatesOf = [&](llvm::ArrayRef<size_t> ids) {
    std::vector<llvm::json::Value> candidates;
    for (size_t id : ids)
      candidates.push_back(candidateJson(k, points[id]));
    return candidates;
  };
  // The default's and the re-timed points' costs in this batch's scale
  // (results[1 + i] is ids[i]).
  auto recordAnchorAndRetimed = [&](const Results &results, llvm::ArrayRef<size_t> ids) {
    ledger.record(0, ledger.defaultCost());
    lastResult[0] = results[0];
    for (size_t i = 0; i < ids.size(); ++i) {
      const CandidateResult &r = results[1 + i];
      if (r.ran && r.failure.empty())
        ledger.record(ids[i], ledger.cost(costOf(r))), lastResult[ids[i]] = r;
    }
  };
  // At least one batch per kernel, however little budget is left, so that
  // every kernel gets an entry (the default timed, a few candidates tried).
  for (bool first = true; first || secondsSince(kernelStart) < share; first = false) {
    if (options.interrupted && *options.interrupted)
      break;
    std::vector<Point> batch = search.propose(options.batch);
    if (batch.empty())
      break; // the space is exhausted
    // [default, contenders other than the default, batch...]
    std::vector<size_t> again;
    for (size_t id : ledger.contenders())
      if (id != 0)
        again.push_back(id);
    std::vector<llvm::json::Value> candidates = candidatesOf(again);
    for (const Point &p : batch)
      candidates.push_back(candidateJson(k, p));
    double timeout = 90.0 * double(candidates.size() + 1) + 60;
    auto timed = timeAnchored(llvm::json::Object(request), std::move(candidates), timeout);
    if (!timed)
      return timed.takeError();
    if (options.interrupted && *options.interrupted)
      break;
    if (!*timed)
      continue; // its points stay unmeasured
    const Results &results = **timed;
    if (!defaultRecorded) {
      // The default is timed in every batch (the anchor): recorded once so
      // that the search does not propose it and the model knows its cost.
      search.record({k.defaultPoint, ledger.defaultCost()});
      entry.trials.push_back({scheduleText(ctx, k, k.defaultPoint), ledger.defaultCost(), ""});
      defaultRecorded = true;
    }
    recordAnchorAndRetimed(results, again);
    const size_t offset = 1 + again.size();
    for (size_t i = 0; i < batch.size(); ++i) {
      const CandidateResult &r = results[offset + i];
      if (!r.ran)
        continue; // never reached (the batch was cut short); counts as taken
      Trial trial{batch[i], std::nullopt};
      TrialRecord record{scheduleText(ctx, k, batch[i]), std::nullopt, r.failure};
      if (r.failure.empty()) {
        double cost = ledger.cost(costOf(r));
        trial.cost = record.costMs = cost;
        size_t id = idOf(batch[i]);
        ledger.record(id, cost);
        lastResult[id] = r;
      }
      search.record(trial);
      entry.trials.push_back(std::move(record));
    }
    noteBest();
    if (llvm::Error err = saveBest())
      return err;
    progress(k, index, secondsSince(kernelStart), share, search.trials(), ledger.bestCost(),
             ledger.defaultCost(), false);
  }
  // Settle: the finalists (the default among them) re-timed together in a
  // fresh batch with more rounds; the choice and the reported cost come from
  // it alone, free of the luck that made them finalists.
  if (ledger.best() && !(options.interrupted && *options.interrupted)) {
    std::vector<size_t> finalists = ledger.contenders();
    finalists.erase(std::remove(finalists.begin(), finalists.end(), size_t(0)), finalists.end());
    llvm::json::Object settleRequest(request);
    settleRequest["repeats"] = 9;
    settleRequest["max_seconds"] = 8.0;
    auto timed = timeAnchored(std::move(settleRequest), candidatesOf(finalists),
                              90.0 * double(finalists.size() + 1) + 60);
    if (!timed)
      return timed.takeError();
    if (*timed) {
      // Only now forget the search-phase estimates: a failed settling batch
      // leaves them (and the entry saved from them) as they were.
      ledger.settle();
      recordAnchorAndRetimed(**timed, finalists);
      noteBest();
      if (llvm::Error err = saveBest())
        return err;
    } // else the entry keeps the best saved during the search
  }
  progress(k, index, share, share, search.trials(), ledger.bestCost(), ledger.defaultCost(), true);

  llvm::json::Object kernelReport{{"name", k.name},
                                  {"kernel", k.signature},
                                  {"trials", int64_t(search.trials())},
                                  {"default_ms", entry.defaultCostMs},
                                  {"best_ms", ledger.bestCost()},
                                  {"roofline_fraction", entry.rooflineFraction},
                                  {"schedule", entry.schedule},
                                  {"history", std::move(history)}};
  std::optional<size_t> best = ledger.best();
  if (options.baselines && best && !(options.interrupted && *options.interrupted)) {
    // Halide's autoschedulers on the same algorithm, timed beside the
    // default (the anchor, as in every batch) and the best schedule.
    std::vector<llvm::json::Value> candidates = candidatesOf({*best});
    const char *names[] = {"Adams2019", "Li2018", "Mullapudi2016"};
    for (const char *name : names)
      candidates.push_back(llvm::json::Object{{"autoscheduler", name}});
    auto timed = timeAnchored(llvm::json::Object(request), std::move(candidates), 900);
    if (!timed)
      return timed.takeError();
    llvm::json::Object baselines;
    if (*timed) {
      const Results &results = **timed;
      const CandidateResult &anchor = results[0];
      for (size_t i = 1; i < results.size(); ++i) {
        const CandidateResult &r = results[i];
        std::string key = i == 1 ? "xf_tuned" : names[i - 2];
        if (r.ran && r.failure.empty())
          baselines[key] = ledger.cost(costOf(r));
        else
          baselines[key] = r.ran ? r.failure : "not run";
      }
      // Per length, the default and the best side by side (raw wall
      // minimum, same batch): which path the tuning helped.
      const CandidateResult &best = results[1];
      if (best.ran && best.failure.empty() && best.cases.size() == anchor.cases.size()) {
        llvm::json::Array cases;
        for (size_t c = 0; c < anchor.cases.size(); ++c)
          cases.push_back(llvm::json::Object{{"rows", anchor.cases[c].rows},
                                             {"keys", anchor.cases[c].keys},
                                             {"default_ms", anchor.cases[c].wallMinMs},
                                             {"tuned_ms", best.cases[c].wallMinMs}});
        kernelReport["cases"] = std::move(cases);
      }
    }
    kernelReport["baselines"] = std::move(baselines);
  }
  report.push_back(std::move(kernelReport));
  return llvm::Error::success();
}

llvm::Error Tuner::run(const HostProgram &program) {
  llvm::Expected<VectorShape> shape = vectorShapeOf(options.target);
  if (!shape)
    return shape.takeError();
  llvm::Expected<std::string> targetString = halideTargetString(options.target);
  if (!targetString)
    return targetString.takeError();
  target = *targetString;
  llvm::Expected<TuningDatabase> loaded = TuningDatabase::loadOrEmpty(options.dbPath);
  if (!loaded)
    return loaded.takeError();
  db = std::move(*loaded);
  if (llvm::Error err = collect(program, *shape))
    return err;
  llvm::Expected<MachineCeilings> ceilings = worker.measureMachine();
  if (!ceilings)
    return ceilings.takeError();
  machine = *ceilings;
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
    double remaining = options.budgetSeconds - secondsSince(start);
    double share = std::max(0.0, remaining / double(kernels.size() - i));
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

} // namespace

llvm::Error mlir::xf::tuning::tuneProgram(MLIRContext &ctx, const HostProgram &program,
                                          const TuneOptions &options, llvm::raw_ostream &log) {
  TuneOptions resolved = options;
  if (resolved.threads <= 0)
    resolved.threads = std::max(1u, std::thread::hardware_concurrency());
  Tuner tuner(ctx, resolved, log);
  return tuner.run(program);
}
