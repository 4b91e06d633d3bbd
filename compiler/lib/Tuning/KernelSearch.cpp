//===- KernelSearch.cpp - one kernel's tuning ---------------------------===//
//
// Each path of the kernel searched on its own cases (PathSearch.cpp), the paths' choices
// combined and checked against the default (FinalCheck.cpp); here the order of those steps,
// resuming from the recorded trials, the entry while the search runs, the kernel's report
// and, with --baselines, Halide's autoschedulers beside it.
//
//===----------------------------------------------------------------------===//

#include "KernelTuning.h"
#include "xf/Version.h"

#include <algorithm>
#include <cmath>
#include <ctime>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

/// The part of a kernel's share its paths' searches get; the rest is for the
/// settling and final batches and the A/B, which would otherwise run past
/// the share (and, for the last kernel, past the budget).
static constexpr double kSearchShare = 0.7;

llvm::json::Object tuning::finalCheckReport(const std::string &schedule, size_t batches,
                                            const PairedVerdict &v, bool kept,
                                            const std::string &why) {
  return llvm::json::Object{{"schedule", schedule},
                            {"batches", int64_t(batches)},
                            {"rounds", int64_t(v.rounds)},
                            {"ratio", v.ratio},
                            {"gain", v.gain()},
                            {"noise", v.noise},
                            {"margin", v.margin},
                            {"outcome", outcomeName(v.outcome)},
                            {"kept", kept ? "tuned" : "default"},
                            {"why", why}};
}

std::string tuning::isoNow() {
  std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}

PathTuning::PathTuning(const TunedKernel &k, const SchedulePath &path, uint64_t seed)
    : path(path), search(pathSpace(k.space, path, k.defaultPoint), seed),
      points{projectPoint(path, k.defaultPoint)} {
  // The default is timed in every batch as the anchor; it is recorded
  // after the first batch, and must not be proposed in that one either.
  search.exclude(points[0]);
}

size_t PathTuning::id(const Point &p) {
  auto it = std::find(points.begin(), points.end(), p);
  if (it != points.end())
    return size_t(it - points.begin());
  points.push_back(p);
  return points.size() - 1;
}

double PathTuning::ratio() const {
  return ledger.best().value_or(0) != 0 && ledger.defaultCost() > 0
             ? ledger.bestCost() / ledger.defaultCost()
             : 1.0;
}

KernelTuning::KernelTuning(ProgramTuner &run, TunedKernel &k, size_t index, double share)
    : run(run), k(k), index(index), share(share),
      entry(run.db.upsert(k.signature, run.target, run.options.threads, kXfVersion)),
      previouslySpent(entry.secondsSpent) {
  if (!entry.schedule.empty())
    previous = pointOf(run.ctx, k, entry.schedule);
  for (size_t p = 0; p < k.paths.size(); ++p)
    paths.push_back(std::make_unique<PathTuning>(k, k.paths[p],
                                                 run.options.seed + index + 7919 * uint64_t(p)));
  defaultTimes.cases.resize(k.caseRows.size());
}

void KernelTuning::resume() {
  // A path's default (whose recorded cost stays the anchor) and its best
  // recorded point are contenders again. Trials without a path (an older
  // tuner's, timed on all lengths at once) are on another scale and are not
  // reused.
  for (auto &pt : paths) {
    std::optional<double> defaultCost;
    std::optional<Trial> best;
    for (const TrialRecord &t : entry.trials) {
      if (t.path != pt->path.name)
        continue;
      std::optional<Point> full = pointOf(run.ctx, k, t.schedule);
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
}

double KernelTuning::defaultEstimate() const {
  double logSum = 0;
  const double numCases = double(k.caseRows.size());
  for (auto &pt : paths)
    if (pt->ledger.defaultCost() > 0)
      logSum += double(pt->path.cases.size()) / numCases * std::log(pt->ledger.defaultCost());
  return std::exp(logSum);
}

double KernelTuning::ratioEstimate() const {
  double logSum = 0;
  const double numCases = double(k.caseRows.size());
  for (auto &pt : paths)
    logSum += double(pt->path.cases.size()) / numCases * std::log(pt->ratio());
  return std::exp(logSum);
}

std::vector<Point> KernelTuning::combined() const {
  std::vector<Point> choices;
  std::vector<std::vector<Trial>> measured;
  for (auto &pt : paths)
    choices.push_back(pt->choice()), measured.push_back(pt->measured);
  return combinations(k.space, k.paths, k.defaultPoint, choices, measured);
}

void KernelTuning::noteBest(double c) {
  if (c > 0 &&
      (history.empty() || history.back().getAsArray()->back().getAsNumber().value_or(0) != c))
    history.push_back(llvm::json::Array{secondsSince(kernelStart), c});
}

llvm::Error KernelTuning::saveInterim() {
  noteBest(defaultEstimate() * ratioEstimate());
  if (!previous && defaultEstimate() > 0) {
    entry.schedule = scheduleText(run.ctx, k, k.defaultPoint);
    entry.costMs = entry.defaultCostMs = defaultEstimate();
    entry.measuredAt = isoNow();
  } // else (resuming) the choice an earlier run made stays until the final check
  return save();
}

llvm::Error KernelTuning::save() {
  entry.secondsSpent = previouslySpent + secondsSince(kernelStart);
  // Until something has worked the entry has no schedule and is held back
  // from the file (its trials are kept in memory).
  if (entry.schedule.empty())
    return llvm::Error::success();
  return run.db.save(run.options.dbPath);
}

bool KernelTuning::interrupted() const {
  return run.options.interrupted && *run.options.interrupted;
}

llvm::Expected<std::optional<KernelTuning::Results>>
KernelTuning::runBudgeted(llvm::json::Object request, const std::vector<llvm::json::Value> &all,
                          double timeout) {
  // Within the budget, a batch is cut at the deadline; a batch cut there
  // measured nothing it can keep (the candidate it was compiling did not
  // fail: time ran out).
  const double limit = std::min(timeout, run.deadlineLeft());
  if (limit <= 0)
    return std::nullopt;
  auto results = run.worker.run(std::move(request), all, limit);
  if (!results)
    return results.takeError();
  if (limit < timeout && run.deadlineLeft() <= 0)
    return std::nullopt;
  return std::optional<Results>(std::move(*results));
}

llvm::Expected<std::optional<KernelTuning::Results>>
KernelTuning::timeAnchored(CostLedger &ledger, llvm::json::Object request,
                           std::vector<llvm::json::Value> others, double timeout, bool budgeted) {
  others.insert(others.begin(), candidateJson(k, k.defaultPoint));
  std::optional<Results> results;
  if (budgeted) {
    auto timed = runBudgeted(std::move(request), others, timeout);
    if (!timed)
      return timed.takeError();
    results = std::move(*timed);
  } else {
    auto timed = run.worker.run(std::move(request), others, timeout);
    if (!timed)
      return timed.takeError();
    results = std::move(*timed);
  }
  if (!results)
    return std::nullopt;
  const CandidateResult &anchor = results->front();
  if (anchor.ran && !anchor.failure.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the default schedule of " + k.name +
                                       " failed in the worker: " + anchor.failure);
  if (!anchor.ran || !ledger.beginBatch(costOf(anchor)))
    return std::nullopt;
  return results;
}

llvm::json::Object KernelTuning::report() {
  size_t totalTrials = 0;
  llvm::json::Array pathReports;
  for (auto &pt : paths) {
    totalTrials += pt->search.trials();
    llvm::json::Array lengths;
    for (size_t c : pt->path.cases)
      lengths.push_back(k.caseRows[c]);
    pathReports.push_back(llvm::json::Object{
        {"path", pt->path.name},
        {"lengths", std::move(lengths)},
        {"trials", int64_t(pt->search.trials())},
        {"default_ms", pt->ledger.defaultCost()},
        {"best_ms", pt->ledger.best() ? pt->ledger.bestCost() : pt->ledger.defaultCost()},
        {"schedule",
         scheduleText(run.ctx, k, embedPoint(pt->path, pt->choice(), k.defaultPoint))}});
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
  if (checked) {
    // Per length, the default and the checked candidate side by side (raw
    // wall minimum over the A/B batches): which path the tuning helped.
    llvm::json::Array cases;
    for (size_t c = 0; c < checked->dflt.cases.size() && c < checked->best.cases.size(); ++c)
      cases.push_back(llvm::json::Object{{"rows", checked->dflt.cases[c].rows},
                                         {"keys", checked->dflt.cases[c].keys},
                                         {"default_ms", checked->dflt.cases[c].wallMinMs},
                                         {"tuned_ms", checked->best.cases[c].wallMinMs}});
    kernelReport["cases"] = std::move(cases);
    kernelReport["final_check"] =
        finalCheckReport(scheduleText(run.ctx, k, checked->candidate), checked->batches,
                         checked->verdict, checked->kept, checked->why);
  }
  return kernelReport;
}

llvm::Error KernelTuning::baselines(llvm::json::Object &kernelReport) {
  std::optional<Point> chosen = pointOf(run.ctx, k, entry.schedule);
  if (!run.options.baselines || !chosen || interrupted())
    return llvm::Error::success();
  // Halide's autoschedulers on the same algorithm, timed beside the
  // default (the anchor, as in every batch) and the chosen schedule.
  std::vector<llvm::json::Value> candidates{candidateJson(k, *chosen)};
  const char *names[] = {"Adams2019", "Li2018", "Mullapudi2016"};
  for (const char *name : names)
    candidates.push_back(llvm::json::Object{{"autoscheduler", name}});
  CostLedger anchored(entry.defaultCostMs);
  Clock::time_point baselinesStart = Clock::now();
  auto timed = timeAnchored(anchored, requestFor(k, everyCase(k), run.options.target, 5, 4.0),
                            std::move(candidates), 900, /*budgeted=*/false);
  run.baselineSeconds += secondsSince(baselinesStart);
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
  return llvm::Error::success();
}

llvm::Error ProgramTuner::tune(TunedKernel &k, size_t index, double share,
                               llvm::json::Array &report) {
  KernelTuning tuning(*this, k, index, share);
  tuning.resume();
  // Each path gets the search's part of the kernel's time left, shared among
  // the paths left by their number of knobs; a path that exhausts its space
  // early leaves its time to the next.
  const Clock::time_point kernelStart = Clock::now();
  double knobsLeft = 0;
  for (auto &pt : tuning.paths)
    knobsLeft += double(pt->path.knobs.size());
  for (auto &pt : tuning.paths) {
    const double pathShare = std::max(0.0, kSearchShare * share - secondsSince(kernelStart)) *
                             double(pt->path.knobs.size()) / std::max(1.0, knobsLeft);
    knobsLeft -= double(pt->path.knobs.size());
    if (llvm::Error err = tuning.searchPath(*pt, pathShare))
      return err;
  }
  if (llvm::Error err = tuning.finalCheck())
    return err;
  if (tuning.checked)
    load.noteNoise(k.name, tuning.checked->verdict.noise);
  load.noteDuring(readLoadAverage());
  if (llvm::Error err = tuning.save())
    return err;
  llvm::json::Object kernelReport = tuning.report();
  if (llvm::Error err = tuning.baselines(kernelReport))
    return err;
  report.push_back(std::move(kernelReport));
  return llvm::Error::success();
}
