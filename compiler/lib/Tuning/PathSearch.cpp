//===- PathSearch.cpp - one path of a kernel searched and settled -------===//
//
// A path (SchedulePaths.h) is searched on its own lengths in worker batches, each holding
// the default (the anchor), the contenders and the search's next proposals; then its
// finalists are settled: re-timed together in a fresh batch with more rounds, so that the
// path's choice is free of the luck that made them finalists.
//
//===----------------------------------------------------------------------===//

#include "KernelTuning.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

void KernelTuning::recordAnchorAndRetimed(PathTuning &pt, const Results &results,
                                          llvm::ArrayRef<size_t> ids) {
  // The default's and the re-timed points' costs in this batch's scale
  // (results[1 + i] is ids[i]).
  pt.ledger.record(0, pt.ledger.defaultCost());
  const std::vector<CaseTime> &anchor = results[0].cases;
  for (size_t j = 0; j < anchor.size() && j < pt.path.cases.size(); ++j) {
    CaseTime &fastest = defaultTimes.cases[pt.path.cases[j]];
    if (fastest.wallMinMs <= 0 || anchor[j].wallMinMs < fastest.wallMinMs)
      fastest = anchor[j];
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const CandidateResult &r = results[1 + i];
    if (r.ran && r.failure.empty())
      pt.ledger.record(ids[i], pt.ledger.cost(costOf(r)));
  }
}

llvm::Error KernelTuning::searchPath(PathTuning &pt, double pathShare) {
  const Clock::time_point pathStart = Clock::now();
  const SchedulePath &path = pt.path;
  const llvm::json::Object request = requestFor(k, path.cases, run.options.target, 5, 4.0);
  const std::string label = k.name + "/" + path.name;
  auto full = [&](const Point &sub) { return embedPoint(path, sub, k.defaultPoint); };
  // At least one batch per path, however little budget is left, so that
  // every kernel gets an entry (the default timed, a few candidates tried).
  for (bool first = true; first || secondsSince(pathStart) < pathShare; first = false) {
    if (interrupted() || run.budgetSpent())
      break;
    std::vector<Point> batch = pt.search.propose(run.options.batch);
    if (batch.empty())
      break; // the space is exhausted
    // [default, contenders other than the default, batch...]
    std::vector<size_t> again;
    for (size_t id : pt.ledger.contenders())
      if (id != 0)
        again.push_back(id);
    std::vector<llvm::json::Value> candidates;
    for (size_t id : again)
      candidates.push_back(candidateJson(k, full(pt.points[id])));
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
    ++pt.batches;
    if (!pt.defaultRecorded) {
      // The default is timed in every batch (the anchor): recorded once so
      // that the search does not propose it and the model knows its cost.
      Trial trial{pt.points[0], pt.ledger.defaultCost()};
      pt.search.record(trial);
      pt.measured.push_back(trial);
      entry.trials.push_back({scheduleText(run.ctx, k, k.defaultPoint), pt.ledger.defaultCost(),
                              "", path.name});
      pt.defaultRecorded = true;
    }
    recordAnchorAndRetimed(pt, results, again);
    const size_t offset = 1 + again.size();
    for (size_t i = 0; i < batch.size(); ++i) {
      const CandidateResult &r = results[offset + i];
      if (!r.ran)
        continue; // never reached (the batch was cut short); counts as taken
      Trial trial{batch[i], std::nullopt};
      TrialRecord record{scheduleText(run.ctx, k, full(batch[i])), std::nullopt, r.failure,
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
    if (llvm::Error err = saveInterim())
      return err;
    run.progress(label, index, secondsSince(pathStart), pathShare, pt.search.trials(),
                 pt.ledger.bestCost(), pt.ledger.defaultCost(), false);
  }
  if (llvm::Error err = settlePath(pt, request))
    return err;
  run.progress(label, index, pathShare, pathShare, pt.search.trials(), pt.ledger.bestCost(),
               pt.ledger.defaultCost(), true);
  return llvm::Error::success();
}

llvm::Error KernelTuning::settlePath(PathTuning &pt, const llvm::json::Object &request) {
  // Not after a single batch (a tiny budget): its finalists were measured
  // once, beside the default, and the final check times their combination
  // again.
  std::vector<size_t> finalists = pt.ledger.contenders();
  finalists.erase(std::remove(finalists.begin(), finalists.end(), size_t(0)), finalists.end());
  if (pt.batches <= 1 || finalists.empty() || interrupted() || run.budgetSpent())
    return llvm::Error::success();
  llvm::json::Object settleRequest(request);
  settleRequest["repeats"] = 9;
  settleRequest["max_seconds"] = 8.0;
  std::vector<llvm::json::Value> candidates;
  for (size_t id : finalists)
    candidates.push_back(candidateJson(k, embedPoint(pt.path, pt.points[id], k.defaultPoint)));
  auto timed = timeAnchored(pt.ledger, std::move(settleRequest), std::move(candidates),
                            90.0 * double(finalists.size() + 1) + 60);
  if (!timed)
    return timed.takeError();
  if (!*timed)
    return llvm::Error::success();
  // Only now forget the search-phase estimates: a failed settling batch
  // leaves them as they were.
  pt.ledger.settle();
  recordAnchorAndRetimed(pt, **timed, finalists);
  return saveInterim();
}
