//===- PairedComparison.cpp - does a schedule beat the default? ----------===//

#include "xf/Tuning/PairedComparison.h"

#include <algorithm>
#include <cmath>

using namespace mlir::xf::tuning;

void PairedRounds::addBatch(const std::vector<std::vector<double>> &defaultMs,
                            const std::vector<std::vector<double>> &candidateMs) {
  const size_t cases = std::min(defaultMs.size(), candidateMs.size());
  if (cases == 0)
    return;
  size_t rounds = SIZE_MAX;
  for (size_t c = 0; c < cases; ++c)
    rounds = std::min({rounds, defaultMs[c].size(), candidateMs[c].size()});
  for (size_t r = 0; r < rounds; ++r) {
    double logSum = 0;
    bool usable = true;
    for (size_t c = 0; c < cases; ++c) {
      const double d = defaultMs[c][r], x = candidateMs[c][r];
      usable &= d > 0 && x > 0 && std::isfinite(d) && std::isfinite(x);
      if (usable)
        logSum += std::log(x / d);
    }
    if (usable)
      add(logSum / double(cases));
  }
}

static double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

PairedVerdict PairedRounds::judge(const PairedRule &rule) const {
  PairedVerdict v;
  v.rounds = logRatios.size();
  if (v.rounds == 0)
    return v;
  // Median and median absolute deviation: a round in which another process
  // preempted one of the two (a 5-20x outlier on a loaded machine) moves
  // neither, where it would move a mean and standard deviation.
  const double center = median(logRatios);
  std::vector<double> deviations;
  for (double d : logRatios)
    deviations.push_back(std::fabs(d - center));
  v.noise = v.rounds > 1 ? kMadToSigma * median(deviations) : 0;
  v.ratio = std::exp(center);
  const double bar = std::log(1 - rule.minGain);
  const double halfWidth = rule.z * kMedianEfficiency * v.noise / std::sqrt(double(v.rounds));
  v.margin = 1 - std::exp(bar - halfWidth);
  if (v.rounds < rule.minRounds)
    v.outcome = PairedOutcome::Undecided;
  else if (center + halfWidth < bar)
    v.outcome = PairedOutcome::Wins;
  else if (center - halfWidth >= bar)
    v.outcome = PairedOutcome::CannotWin;
  else
    v.outcome = PairedOutcome::Undecided;
  return v;
}

bool mlir::xf::tuning::needsAnotherBatch(const PairedVerdict &v, size_t batches,
                                         const PairedRule &rule) {
  if (batches >= rule.maxBatches || v.outcome == PairedOutcome::CannotWin)
    return false;
  return v.outcome == PairedOutcome::Undecided || batches < rule.minBatchesToWin;
}

bool mlir::xf::tuning::keepsCandidate(const PairedVerdict &v, size_t batches,
                                      const PairedRule &rule) {
  return v.outcome == PairedOutcome::Wins && batches >= rule.minBatchesToWin;
}

const char *mlir::xf::tuning::outcomeName(PairedOutcome outcome) {
  switch (outcome) {
  case PairedOutcome::Wins:
    return "wins";
  case PairedOutcome::CannotWin:
    return "cannot win";
  case PairedOutcome::Undecided:
    return "undecided";
  }
  return "?";
}

std::string mlir::xf::tuning::whyDefaultKept(const PairedVerdict &v, size_t batches, bool cut) {
  if (v.outcome == PairedOutcome::CannotWin)
    return v.ratio > 1 ? "slower than the default" : "not faster than the default by the margin";
  if (cut)
    return "not decided before the budget ran out";
  return "not separated from the noise in " + std::to_string(batches) + " batches";
}
