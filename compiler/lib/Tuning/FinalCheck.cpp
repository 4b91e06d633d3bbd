//===- FinalCheck.cpp - the kernel's choice against the default ---------===//
//
// The paths' choices are combined (one point per disagreement on a shared knob, and the
// previous run's choice when resuming); where there are several, they are timed with the
// default on all lengths in one final batch. The fastest goes into a paired, interleaved A/B against the default: worker
// batches of the two alone, in alternating order, until PairedComparison.h's rule decides or
// PairedRule::maxBatches have run (9 rounds each, ≤ 8 s of timing). The entry holds the candidate only if it wins; otherwise the
// default is stored (with the trials, so a later run resumes), and the report says why.
//
//===----------------------------------------------------------------------===//

#include "KernelTuning.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

llvm::Expected<std::optional<Point>> KernelTuning::chooseFinalist() {
  std::vector<Point> finalists = combined();
  if (previous && std::find(finalists.begin(), finalists.end(), *previous) == finalists.end())
    finalists.push_back(*previous);
  finalists.erase(std::remove(finalists.begin(), finalists.end(), k.defaultPoint),
                  finalists.end());
  if (interrupted() || finalists.empty() ||
      std::none_of(paths.begin(), paths.end(),
                   [](auto &pt) { return pt->ledger.best().has_value(); }))
    return std::nullopt;
  if (finalists.size() == 1)
    return std::optional<Point>(finalists.front()); // no choice to make: straight to the A/B
  std::vector<llvm::json::Value> candidates;
  for (const Point &p : finalists)
    candidates.push_back(candidateJson(k, p));
  CostLedger whole;
  auto timed = timeAnchored(whole, requestFor(k, everyCase(k), run.options.target, 9, 8.0),
                            std::move(candidates), 90.0 * double(finalists.size() + 1) + 60);
  if (!timed)
    return timed.takeError();
  if (!*timed)
    return std::nullopt;
  const Results &results = **timed;
  size_t bestAt = 0;
  double bestCost = 0;
  for (size_t i = 1; i < results.size(); ++i)
    if (results[i].ran && results[i].failure.empty() &&
        (!bestAt || whole.cost(costOf(results[i])) < bestCost))
      bestAt = i, bestCost = whole.cost(costOf(results[i]));
  if (!bestAt)
    return std::nullopt;
  return std::optional<Point>(finalists[bestAt - 1]);
}

llvm::Error KernelTuning::pairedCheck(const Point &candidate) {
  FinalCheckResult check;
  check.candidate = candidate;
  PairedRounds rounds;
  std::vector<CandidateResult> dflt, cand;
  auto add = [&](const CandidateResult &d, const CandidateResult &c) {
    rounds.addBatch(roundTimes(d), roundTimes(c));
    dflt.push_back(d), cand.push_back(c);
    ++check.batches;
  };
  const llvm::json::Object request = requestFor(k, everyCase(k), run.options.target, 9, 8.0);
  bool cut = false;
  // A loss may be called after one batch; a win needs both orders (the
  // candidate before the default, and after it).
  while (needsAnotherBatch(rounds.judge(), check.batches) && !interrupted()) {
    const bool candidateFirst = check.batches % 2 == 1;
    std::vector<llvm::json::Value> both{candidateJson(k, k.defaultPoint),
                                        candidateJson(k, candidate)};
    if (candidateFirst)
      std::swap(both[0], both[1]);
    auto timed = runBudgeted(llvm::json::Object(request), both, 90.0 * 3 + 60);
    if (!timed)
      return timed.takeError();
    if (!*timed) {
      cut = true;
      break;
    }
    const CandidateResult &d = (**timed)[candidateFirst ? 1 : 0];
    const CandidateResult &c = (**timed)[candidateFirst ? 0 : 1];
    if (d.ran && !d.failure.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the default schedule of " + k.name +
                                         " failed in the worker: " + d.failure);
    if (c.ran && !c.failure.empty()) {
      check.why = "the candidate failed in the final check: " + c.failure;
      break;
    }
    if (!d.ran || !c.ran) {
      cut = true;
      break;
    }
    add(d, c);
  }
  if (check.batches == 0)
    return llvm::Error::success(); // nothing measured: the entry stays as the search left it
  check.verdict = rounds.judge();
  check.kept = check.why.empty() && keepsCandidate(check.verdict, check.batches);
  if (!check.kept && check.why.empty())
    check.why = whyDefaultKept(check.verdict, check.batches, cut || interrupted());
  check.dflt = fastestOf(dflt);
  check.best = fastestOf(cand);
  checked = std::move(check);
  keepCheckedChoice();
  return llvm::Error::success();
}

void KernelTuning::keepCheckedChoice() {
  const FinalCheckResult &check = *checked;
  entry.schedule = scheduleText(run.ctx, k, check.kept ? check.candidate : k.defaultPoint);
  entry.defaultCostMs = costOf(check.dflt);
  entry.costMs = check.kept ? costOf(check.best) : entry.defaultCostMs;
  entry.rooflineFraction = rooflineOf(k, check.kept ? check.best : check.dflt, run.machine);
  entry.measuredAt = isoNow();
  if (check.kept)
    noteBest(historyDefault * check.verdict.ratio);
}

llvm::Error KernelTuning::finalCheck() {
  historyDefault = defaultEstimate();
  auto chosen = chooseFinalist();
  if (!chosen)
    return chosen.takeError();
  if (*chosen)
    if (llvm::Error err = pairedCheck(**chosen))
      return err;
  // No final check (every path kept the default): an entry holding the
  // default takes its roofline from the default's times in the path batches.
  if (!checked && entry.schedule == scheduleText(run.ctx, k, k.defaultPoint) &&
      std::all_of(defaultTimes.cases.begin(), defaultTimes.cases.end(),
                  [](const CaseTime &c) { return c.wallMinMs > 0; }))
    entry.rooflineFraction = rooflineOf(k, defaultTimes, run.machine);
  return llvm::Error::success();
}
