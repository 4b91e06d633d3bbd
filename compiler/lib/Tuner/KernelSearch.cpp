//===- KernelSearch.cpp - one kernel's schedule search ------------------===//
//
// Each path of the kernel (SchedulePaths.h) searched on its own cases in worker batches
// anchored on the default's time, its finalists settled in a fresh batch; the paths'
// choices combined and timed with the default on all cases; the database entry, the
// kernel's report and, with --baselines, Halide's autoschedulers beside it.
//
//===----------------------------------------------------------------------===//

#include "ProgramTuner.h"
#include "xf/Tuning/CostLedger.h"
#include "xf/Tuning/Search.h"
#include "xf/Version.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

std::string isoNow() {
  std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

/// What tuning one path of a kernel keeps (SchedulePaths.h): its own search
/// over its knobs, timed on its own cases, with costs anchored on the
/// default's time on those cases.
struct PathTuning {
  PathTuning(const TunedKernel &k, const SchedulePath &path, uint64_t seed)
      : path(path),
        search(pathSpace(k.space, path, k.defaultPoint), seed), points{projectPoint(
                                                                    path, k.defaultPoint)} {
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

} // namespace

llvm::Error ProgramTuner::tune(TunedKernel &k, size_t index, double share,
                               llvm::json::Array &report) {
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
  // Within the budget (all but --baselines' batch), a batch is cut at the
  // budget's deadline; a batch cut there measured nothing it can keep (the
  // candidate it was compiling did not fail: time ran out).
  auto timeAnchored = [&](CostLedger &ledger, llvm::json::Object batchRequest,
                          std::vector<llvm::json::Value> others, double timeout,
                          bool budgeted = true) -> llvm::Expected<std::optional<Results>> {
    double limit = budgeted ? std::min(timeout, deadlineLeft()) : timeout;
    if (limit <= 0)
      return std::nullopt;
    others.insert(others.begin(), candidateJson(k, k.defaultPoint));
    auto results = worker.run(std::move(batchRequest), others, limit);
    if (!results)
      return results.takeError();
    if (budgeted && limit < timeout && deadlineLeft() <= 0)
      return std::nullopt;
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
      if (interrupted() || budgetSpent())
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
    if (batches > 1 && !finalists.empty() && !interrupted() && !budgetSpent()) {
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
  finalists.erase(std::remove(finalists.begin(), finalists.end(), k.defaultPoint), finalists.end());
  if (!interrupted() && !budgetSpent() && !finalists.empty() &&
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
                              std::move(candidates), 900, /*budgeted=*/false);
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
