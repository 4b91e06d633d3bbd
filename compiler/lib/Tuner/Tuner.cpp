//===- Tuner.cpp - `xfc tune`: search each kernel's schedule space --------===//

#include "xf/Tuning/Tuner.h"
#include "WorkerClient.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Tuning/CostLedger.h"
#include "xf/Tuning/SchedulePaths.h"
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
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <memory>
#include <thread>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

using Clock = std::chrono::steady_clock;

/// Worker batches (fresh processes) per kernel of --compare; the minimum
/// over them is reported.
constexpr int kCompareBatches = 2;

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
  std::vector<SchedulePath> paths; // each searched on its own cases
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

/// Indices of all of a kernel's lengths.
std::vector<size_t> everyCase(const Kernel &k) {
  std::vector<size_t> cases(k.caseRows.size());
  for (size_t i = 0; i < cases.size(); ++i)
    cases[i] = i;
  return cases;
}

/// A worker request timing kernel `k` on `cases` (indices into its lengths),
/// everything but the candidates.
llvm::json::Object requestFor(const Kernel &k, llvm::ArrayRef<size_t> cases,
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

class Tuner {
public:
  Tuner(MLIRContext &ctx, const TuneOptions &options, llvm::raw_ostream &log)
      : ctx(ctx), options(options), log(log), worker(options.workerPath, options.threads),
        interactive(log.is_displayed()) {}

  llvm::Error run(const HostProgram &program);
  /// --compare: the schedules of two databases timed side by side.
  llvm::Error compare(const HostProgram &program);

private:
  /// What run and compare share: the target, the model's distinct kernels
  /// and this machine's ceilings.
  llvm::Error prepare(const HostProgram &program);
  llvm::Error collect(const HostProgram &program, const VectorShape &shape);
  llvm::Error tune(Kernel &k, size_t index, double share, llvm::json::Array &report);
  void progress(const std::string &label, size_t index, double spent, double share,
                size_t trials, double best, double dflt, bool final);

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
  /// --baselines runs outside the budget: their seconds are not the kernels'.
  double baselineSeconds = 0;
  double budgetLeft() const {
    return options.budgetSeconds - (secondsSince(start) - baselineSeconds);
  }
};

llvm::Error Tuner::prepare(const HostProgram &program) {
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
    Kernel k;
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

void Tuner::progress(const std::string &label, size_t index, double spent, double share,
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

/// What tuning one path of a kernel keeps (SchedulePaths.h): its own search
/// over its knobs, timed on its own cases, with costs anchored on the
/// default's time on those cases.
struct PathTuning {
  PathTuning(const Kernel &k, const SchedulePath &path, uint64_t seed)
      : path(path), search(pathSpace(k.space, path, k.defaultPoint), seed),
        points{projectPoint(path, k.defaultPoint)} {
    // The default is timed in every batch as the anchor; it is recorded
    // after the first batch, and must not be proposed in that one either.
    search.exclude(points[0]);
  }
  const SchedulePath &path;
  Search search;
  CostLedger ledger;
  std::vector<Point> points; // sub-points by ledger id; 0 is the default's
  std::vector<Trial> measured;
  bool defaultRecorded = false;
  size_t id(const Point &p) {
    auto it = std::find(points.begin(), points.end(), p);
    if (it != points.end())
      return size_t(it - points.begin());
    points.push_back(p);
    return points.size() - 1;
  }
  /// The ledger's best relative to the default (1 before anything ran, and
  /// when the best is the default: its mean is not its anchored cost).
  double ratio() const {
    return ledger.best().value_or(0) != 0 && ledger.defaultCost() > 0
               ? ledger.bestCost() / ledger.defaultCost()
               : 1.0;
  }
  Point choice() const { return points[ledger.best().value_or(0)]; }
};

llvm::Error Tuner::tune(Kernel &k, size_t index, double share, llvm::json::Array &report) {
  Clock::time_point kernelStart = Clock::now();
  TuningEntry &entry = db.upsert(k.signature, target, options.threads, kXfVersion);
  const double previouslySpent = entry.secondsSpent;
  // Resuming: the schedule chosen last time competes in the final batch.
  std::optional<Point> previous;
  if (!entry.schedule.empty())
    previous = pointOf(ctx, k, entry.schedule);
  const double numCases = double(k.caseRows.size());

  std::vector<std::unique_ptr<PathTuning>> paths;
  for (size_t p = 0; p < k.paths.size(); ++p)
    paths.push_back(
        std::make_unique<PathTuning>(k, k.paths[p], options.seed + index + 7919 * uint64_t(p)));
  // Resume: a path's recorded trials are never measured again; its default
  // (whose recorded cost stays the anchor) and its best recorded point are
  // contenders again. Trials without a path (an older tuner's, timed on all
  // lengths at once) are on another scale and are not reused.
  for (auto &pt : paths) {
    std::optional<double> defaultCost;
    std::optional<Trial> best;
    for (const TrialRecord &t : entry.trials) {
      if (t.path != pt->path.name)
        continue;
      std::optional<Point> full = pointOf(ctx, k, t.schedule);
      if (!full)
        continue;
      Trial trial{projectPoint(pt->path, *full), t.costMs};
      pt->search.record(trial);
      pt->measured.push_back(trial);
      if (*full == k.defaultPoint && t.costMs)
        defaultCost = t.costMs;
      else if (t.costMs && (!best || *t.costMs < *best->cost))
        best = trial;
    }
    if (defaultCost) {
      pt->defaultRecorded = true;
      pt->ledger = CostLedger(*defaultCost);
      pt->ledger.record(0, *defaultCost, 2);
      if (best)
        pt->ledger.record(pt->id(best->point), *best->cost, 1);
    }
  }

  const std::vector<size_t> allCases = everyCase(k);

  // The combined estimate on all cases: the geometric mean over all cases is
  // the product of the paths' geometric means, each to the power of its share
  // of the cases.
  auto defaultEstimate = [&] {
    double logSum = 0;
    for (auto &pt : paths)
      if (pt->ledger.defaultCost() > 0)
        logSum += double(pt->path.cases.size()) / numCases * std::log(pt->ledger.defaultCost());
    return std::exp(logSum);
  };
  auto ratioEstimate = [&] {
    double logSum = 0;
    for (auto &pt : paths)
      logSum += double(pt->path.cases.size()) / numCases * std::log(pt->ratio());
    return std::exp(logSum);
  };
  auto combined = [&] {
    std::vector<Point> choices;
    std::vector<std::vector<Trial>> measured;
    for (auto &pt : paths)
      choices.push_back(pt->choice()), measured.push_back(pt->measured);
    return combinations(k.space, k.paths, k.defaultPoint, choices, measured);
  };

  llvm::json::Array history; // [seconds, combined best estimate] when it changes
  auto noteBest = [&](double c) {
    if (c > 0 &&
        (history.empty() || history.back().getAsArray()->back().getAsNumber().value_or(0) != c))
      history.push_back(llvm::json::Array{secondsSince(kernelStart), c});
  };
  // While the paths are searched, the entry holds the first combination of
  // their bests and the estimate of its cost; the final batch replaces both.
  auto saveInterim = [&]() -> llvm::Error {
    std::vector<Point> points = combined();
    const bool better = !points.empty() && ratioEstimate() < 1.0;
    if (defaultEstimate() > 0 && (better || !previous)) {
      const Point &p = better ? points.front() : k.defaultPoint;
      entry.schedule = scheduleText(ctx, k, p);
      entry.costMs = defaultEstimate() * (better ? ratioEstimate() : 1.0);
      entry.defaultCostMs = defaultEstimate();
      entry.measuredAt = isoNow();
    } // else (resuming, nothing better yet) the previous choice stays
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
  auto timeAnchored = [&](CostLedger &ledger, llvm::json::Object batchRequest,
                          std::vector<llvm::json::Value> others,
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
  auto interrupted = [&] { return options.interrupted && *options.interrupted; };

  // The default's fastest time per length over the path batches (each
  // length is timed by its path's batches): its roofline fraction when no
  // final batch runs (0 ms: not measured).
  CandidateResult defaultTimes;
  defaultTimes.cases.resize(k.caseRows.size());

  size_t totalTrials = 0;
  double knobsLeft = 0;
  for (auto &pt : paths)
    knobsLeft += double(pt->path.knobs.size());
  for (auto &ptr : paths) {
    PathTuning &pt = *ptr;
    const SchedulePath &path = pt.path;
    // The kernel's time left, shared among the paths left by their number
    // of knobs; a path that exhausts its space early leaves its time to the
    // next.
    const double pathShare = std::max(0.0, share - secondsSince(kernelStart)) *
                             double(path.knobs.size()) / std::max(1.0, knobsLeft);
    knobsLeft -= double(path.knobs.size());
    const Clock::time_point pathStart = Clock::now();
    const llvm::json::Object request = requestFor(k, path.cases, options.target, 5, 4.0);
    const std::string label = k.name + "/" + path.name;
    auto full = [&](const Point &sub) { return embedPoint(path, sub, k.defaultPoint); };
    auto candidatesOf = [&](llvm::ArrayRef<size_t> ids) {
      std::vector<llvm::json::Value> candidates;
      for (size_t id : ids)
        candidates.push_back(candidateJson(k, full(pt.points[id])));
      return candidates;
    };
    // The default's and the re-timed points' costs in this batch's scale
    // (results[1 + i] is ids[i]).
    auto recordAnchorAndRetimed = [&](const Results &results, llvm::ArrayRef<size_t> ids) {
      pt.ledger.record(0, pt.ledger.defaultCost());
      const std::vector<CaseTime> &anchor = results[0].cases;
      for (size_t j = 0; j < anchor.size() && j < path.cases.size(); ++j) {
        CaseTime &fastest = defaultTimes.cases[path.cases[j]];
        if (fastest.wallMinMs <= 0 || anchor[j].wallMinMs < fastest.wallMinMs)
          fastest = anchor[j];
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        const CandidateResult &r = results[1 + i];
        if (r.ran && r.failure.empty())
          pt.ledger.record(ids[i], pt.ledger.cost(costOf(r)));
      }
    };
    // At least one batch per path, however little budget is left, so that
    // every kernel gets an entry (the default timed, a few candidates tried).
    size_t batches = 0;
    for (bool first = true; first || secondsSince(pathStart) < pathShare; first = false) {
      if (interrupted())
        break;
      std::vector<Point> batch = pt.search.propose(options.batch);
      if (batch.empty())
        break; // the space is exhausted
      // [default, contenders other than the default, batch...]
      std::vector<size_t> again;
      for (size_t id : pt.ledger.contenders())
        if (id != 0)
          again.push_back(id);
      std::vector<llvm::json::Value> candidates = candidatesOf(again);
      for (const Point &p : batch)
        candidates.push_back(candidateJson(k, full(p)));
      double timeout = 90.0 * double(candidates.size() + 1) + 60;
      auto timed =
          timeAnchored(pt.ledger, llvm::json::Object(request), std::move(candidates), timeout);
      if (!timed)
        return timed.takeError();
      if (interrupted())
        break;
      if (!*timed)
        continue; // its points stay unmeasured
      const Results &results = **timed;
      ++batches;
      if (!pt.defaultRecorded) {
        // The default is timed in every batch (the anchor): recorded once so
        // that the search does not propose it and the model knows its cost.
        Trial trial{pt.points[0], pt.ledger.defaultCost()};
        pt.search.record(trial);
        pt.measured.push_back(trial);
        entry.trials.push_back(
            {scheduleText(ctx, k, k.defaultPoint), pt.ledger.defaultCost(), "", path.name});
        pt.defaultRecorded = true;
      }
      recordAnchorAndRetimed(results, again);
      const size_t offset = 1 + again.size();
      for (size_t i = 0; i < batch.size(); ++i) {
        const CandidateResult &r = results[offset + i];
        if (!r.ran)
          continue; // never reached (the batch was cut short); counts as taken
        Trial trial{batch[i], std::nullopt};
        TrialRecord record{scheduleText(ctx, k, full(batch[i])), std::nullopt, r.failure,
                           path.name};
        if (r.failure.empty()) {
          double cost = pt.ledger.cost(costOf(r));
          trial.cost = record.costMs = cost;
          pt.ledger.record(pt.id(batch[i]), cost);
        }
        pt.search.record(trial);
        pt.measured.push_back(trial);
        entry.trials.push_back(std::move(record));
      }
      noteBest(defaultEstimate() * ratioEstimate());
      if (llvm::Error err = saveInterim())
        return err;
      progress(label, index, secondsSince(pathStart), pathShare, pt.search.trials(),
               pt.ledger.bestCost(), pt.ledger.defaultCost(), false);
    }
    // Settle: the path's finalists (the default among them) re-timed
    // together in a fresh batch with more rounds; the path's choice comes
    // from it alone, free of the luck that made them finalists. Not after a
    // single batch (a tiny budget): its finalists were measured once, beside
    // the default, and the final batch below times their combination again.
    std::vector<size_t> finalists = pt.ledger.contenders();
    finalists.erase(std::remove(finalists.begin(), finalists.end(), size_t(0)), finalists.end());
    if (batches > 1 && !finalists.empty() && !interrupted()) {
      llvm::json::Object settleRequest(request);
      settleRequest["repeats"] = 9;
      settleRequest["max_seconds"] = 8.0;
      auto timed = timeAnchored(pt.ledger, std::move(settleRequest), candidatesOf(finalists),
                                90.0 * double(finalists.size() + 1) + 60);
      if (!timed)
        return timed.takeError();
      if (*timed) {
        // Only now forget the search-phase estimates: a failed settling
        // batch leaves them as they were.
        pt.ledger.settle();
        recordAnchorAndRetimed(**timed, finalists);
        noteBest(defaultEstimate() * ratioEstimate());
        if (llvm::Error err = saveInterim())
          return err;
      }
    }
    totalTrials += pt.search.trials();
    progress(label, index, pathShare, pathShare, pt.search.trials(), pt.ledger.bestCost(),
             pt.ledger.defaultCost(), true);
  }

  // The paths' choices combined (one point per disagreement on a shared
  // knob, and the previous run's choice when resuming), timed with the
  // default on all cases in one fresh batch: the entry's schedule, its cost
  // and the default's come from this batch alone.
  llvm::json::Array cases;
  bool finalTimed = false;
  const double historyDefault = defaultEstimate();
  std::vector<Point> finalists = combined();
  if (previous && std::find(finalists.begin(), finalists.end(), *previous) == finalists.end())
    finalists.push_back(*previous);
  finalists.erase(std::remove(finalists.begin(), finalists.end(), k.defaultPoint),
                  finalists.end());
  if (!interrupted() && !finalists.empty() &&
      std::any_of(paths.begin(), paths.end(),
                  [](auto &pt) { return pt->ledger.best().has_value(); })) {
    std::vector<llvm::json::Value> candidates;
    for (const Point &p : finalists)
      candidates.push_back(candidateJson(k, p));
    llvm::json::Object finalRequest = requestFor(k, allCases, options.target, 9, 8.0);
    CostLedger whole;
    auto timed = timeAnchored(whole, std::move(finalRequest), std::move(candidates),
                              90.0 * double(finalists.size() + 1) + 60);
    if (!timed)
      return timed.takeError();
    if (*timed) {
      finalTimed = true;
      const Results &results = **timed;
      size_t bestAt = 0; // 0: the default
      double bestCost = whole.defaultCost();
      for (size_t i = 1; i < results.size(); ++i)
        if (results[i].ran && results[i].failure.empty() &&
            whole.cost(costOf(results[i])) < bestCost)
          bestAt = i, bestCost = whole.cost(costOf(results[i]));
      const Point &chosen = bestAt ? finalists[bestAt - 1] : k.defaultPoint;
      entry.schedule = scheduleText(ctx, k, chosen);
      entry.costMs = bestCost;
      entry.defaultCostMs = whole.defaultCost();
      entry.rooflineFraction = rooflineOf(k, results[bestAt], machine);
      entry.measuredAt = isoNow();
      noteBest(historyDefault * bestCost / whole.defaultCost());
      // Per length, the default and the chosen schedule side by side (raw
      // wall minimum, same batch): which path the tuning helped.
      const CandidateResult &anchor = results[0], &best = results[bestAt];
      for (size_t c = 0; c < anchor.cases.size() && c < best.cases.size(); ++c)
        cases.push_back(llvm::json::Object{{"rows", anchor.cases[c].rows},
                                           {"keys", anchor.cases[c].keys},
                                           {"default_ms", anchor.cases[c].wallMinMs},
                                           {"tuned_ms", best.cases[c].wallMinMs}});
    } // else the entry keeps the combination saved during the search
  }
  // No final batch (every path kept the default): an entry holding the
  // default takes its roofline from the default's times in the path batches.
  if (!finalTimed && entry.schedule == scheduleText(ctx, k, k.defaultPoint) &&
      std::all_of(defaultTimes.cases.begin(), defaultTimes.cases.end(),
                  [](const CaseTime &c) { return c.wallMinMs > 0; }))
    entry.rooflineFraction = rooflineOf(k, defaultTimes, machine);
  entry.secondsSpent = previouslySpent + secondsSince(kernelStart);
  if (!entry.schedule.empty())
    if (llvm::Error err = db.save(options.dbPath))
      return err;

  llvm::json::Array pathReports;
  for (auto &pt : paths) {
    llvm::json::Array lengths;
    for (size_t c : pt->path.cases)
      lengths.push_back(k.caseRows[c]);
    pathReports.push_back(llvm::json::Object{
        {"path", pt->path.name},
        {"lengths", std::move(lengths)},
        {"trials", int64_t(pt->search.trials())},
        {"default_ms", pt->ledger.defaultCost()},
        {"best_ms", pt->ledger.best() ? pt->ledger.bestCost() : pt->ledger.defaultCost()},
        {"schedule", scheduleText(ctx, k, embedPoint(pt->path, pt->choice(), k.defaultPoint))}});
  }
  llvm::json::Object kernelReport{{"name", k.name},
                                  {"kernel", k.signature},
                                  {"trials", int64_t(totalTrials)},
                                  {"default_ms", entry.defaultCostMs},
                                  {"best_ms", entry.costMs},
                                  {"roofline_fraction", entry.rooflineFraction},
                                  {"schedule", entry.schedule},
                                  {"paths", std::move(pathReports)},
                                  {"history_default_ms", historyDefault},
                                  {"history", std::move(history)},
                                  {"share_s", share}};
  if (!cases.empty())
    kernelReport["cases"] = std::move(cases);
  std::optional<Point> chosen = pointOf(ctx, k, entry.schedule);
  if (options.baselines && chosen && !interrupted()) {
    // Halide's autoschedulers on the same algorithm, timed beside the
    // default (the anchor, as in every batch) and the chosen schedule.
    std::vector<llvm::json::Value> candidates{candidateJson(k, *chosen)};
    const char *names[] = {"Adams2019", "Li2018", "Mullapudi2016"};
    for (const char *name : names)
      candidates.push_back(llvm::json::Object{{"autoscheduler", name}});
    CostLedger anchored(entry.defaultCostMs);
    Clock::time_point baselinesStart = Clock::now();
    auto timed = timeAnchored(anchored, requestFor(k, allCases, options.target, 5, 4.0),
                              std::move(candidates), 900);
    baselineSeconds += secondsSince(baselinesStart);
    if (!timed)
      return timed.takeError();
    llvm::json::Object baselines;
    if (*timed) {
      const Results &results = **timed;
      for (size_t i = 1; i < results.size(); ++i) {
        const CandidateResult &r = results[i];
        std::string key = i == 1 ? "xf_tuned" : names[i - 2];
        if (r.ran && r.failure.empty())
          baselines[key] = anchored.cost(costOf(r));
        else
          baselines[key] = r.ran ? r.failure : "not run";
      }
    }
    kernelReport["baselines"] = std::move(baselines);
  }
  report.push_back(std::move(kernelReport));
  return llvm::Error::success();
}

llvm::Error Tuner::run(const HostProgram &program) {
  llvm::Expected<TuningDatabase> loaded = TuningDatabase::loadOrEmpty(options.dbPath);
  if (!loaded)
    return loaded.takeError();
  db = std::move(*loaded);
  if (llvm::Error err = prepare(program))
    return err;
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

llvm::Error Tuner::compare(const HostProgram &program) {
  // Both must exist: comparing with nothing is a mistake, not an empty result.
  llvm::Expected<TuningDatabase> a = TuningDatabase::load(options.dbPath);
  if (!a)
    return a.takeError();
  llvm::Expected<TuningDatabase> b = TuningDatabase::load(options.comparePath);
  if (!b)
    return b.takeError();
  if (llvm::Error err = prepare(program))
    return err;
  log << llvm::formatv("xfc tune --compare: A = {0}, B = {1}; {2} threads; this machine now: "
                       "{3:f0} GFLOP/s fp32 FMA peak, {4:f1} GB/s read\n",
                       options.dbPath, options.comparePath, options.threads, machine.fmaGflops,
                       machine.readGBs);
  log << "  kernel           rows  keys  default ms       A ms       B ms    A / B\n";
  llvm::json::Array kernelsReport;
  for (Kernel &k : kernels) {
    if (options.interrupted && *options.interrupted)
      break;
    const TuningEntry *ea = a->find(k.signature, target, options.threads, kXfVersion);
    const TuningEntry *eb = b->find(k.signature, target, options.threads, kXfVersion);
    std::optional<Point> pa = ea ? pointOf(ctx, k, ea->schedule) : std::nullopt;
    std::optional<Point> pb = eb ? pointOf(ctx, k, eb->schedule) : std::nullopt;
    if (!pa || !pb) {
      log << llvm::formatv("  {0,-16} not compared: no usable entry in {1}\n", k.name,
                           !pa ? options.dbPath : options.comparePath);
      continue;
    }
    const llvm::json::Object request = requestFor(k, everyCase(k), options.target, 9, 8.0);
    // Minimum wall time per case over the batches: [default, A, B].
    const size_t numCases = k.caseRows.size();
    std::vector<std::array<double, 3>> best(numCases, {INFINITY, INFINITY, INFINITY});
    std::string failure;
    for (int batch = 0; batch < kCompareBatches; ++batch) {
      // A then B in even batches, B then A in odd ones: neither always
      // runs right after the default.
      const bool swap = batch % 2 == 1;
      std::vector<llvm::json::Value> candidates{candidateJson(k, k.defaultPoint),
                                                candidateJson(k, swap ? *pb : *pa),
                                                candidateJson(k, swap ? *pa : *pb)};
      auto results = worker.run(llvm::json::Object(request), candidates,
                                90.0 * double(candidates.size()) + 60);
      if (!results)
        return results.takeError();
      for (size_t slot = 0; slot < 3; ++slot) {
        const CandidateResult &r = (*results)[slot == 0 ? 0 : (slot == 1) != swap ? 1 : 2];
        if (!r.ran || !r.failure.empty()) {
          failure = r.ran ? r.failure : "not run";
          continue;
        }
        for (size_t c = 0; c < numCases && c < r.cases.size(); ++c)
          best[c][slot] = std::min(best[c][slot], r.cases[c].wallMinMs);
      }
    }
    llvm::json::Array caseReports;
    double logRatio = 0;
    bool complete = true;
    for (size_t c = 0; c < numCases; ++c) {
      complete &= std::isfinite(best[c][1]) && std::isfinite(best[c][2]);
      double ratio = best[c][1] / best[c][2];
      logRatio += std::log(ratio);
      log << llvm::formatv("  {0,-16} {1,4} {2,5} {3,11:f4} {4,10:f4} {5,10:f4} {6,8:f3}\n",
                           k.name, k.caseRows[c], k.isGemm ? 0 : k.caseKeys[c], best[c][0],
                           best[c][1], best[c][2], ratio);
      caseReports.push_back(llvm::json::Object{{"rows", k.caseRows[c]},
                                               {"keys", k.isGemm ? 0 : k.caseKeys[c]},
                                               {"default_ms", best[c][0]},
                                               {"a_ms", best[c][1]},
                                               {"b_ms", best[c][2]}});
    }
    if (!complete) {
      log << llvm::formatv("  {0,-16} not compared: a schedule failed in the worker: {1}\n",
                           k.name, failure);
      continue;
    }
    double ratio = std::exp(logRatio / double(std::max<size_t>(1, numCases)));
    log << llvm::formatv("  {0,-16} all lengths (geometric mean)          A / B {1,8:f3}\n",
                         k.name, ratio);
    kernelsReport.push_back(llvm::json::Object{{"name", k.name},
                                               {"kernel", k.signature},
                                               {"a_schedule", ea->schedule},
                                               {"b_schedule", eb->schedule},
                                               {"a_over_b", ratio},
                                               {"cases", std::move(caseReports)}});
  }
  if (!options.reportPath.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}",
                        llvm::json::Value(llvm::json::Object{{"a", options.dbPath},
                                                             {"b", options.comparePath},
                                                             {"target", target},
                                                             {"threads", options.threads},
                                                             {"batches", kCompareBatches},
                                                             {"fma_gflops", machine.fmaGflops},
                                                             {"read_gbs", machine.readGBs},
                                                             {"kernels", std::move(kernelsReport)}}))
       << "\n";
    if (xfrt::Status s = xfrt::writeFileAtomically(options.reportPath, text.data(), text.size());
        !s)
      return llvm::createStringError("cannot write the report: " + s.message());
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error mlir::xf::tuning::tuneProgram(MLIRContext &ctx, const HostProgram &program,
                                          const TuneOptions &options, llvm::raw_ostream &log) {
  TuneOptions resolved = options;
  if (resolved.threads <= 0)
    resolved.threads = std::max(1u, std::thread::hardware_concurrency());
  Tuner tuner(ctx, resolved, log);
  return resolved.comparePath.empty() ? tuner.run(program) : tuner.compare(program);
}
