//===- PairedComparison.h - does a schedule beat the default? ---*- C++ -*-===//
//
// In: the per-round wall times of the default schedule and of one candidate, timed in the
// same worker batches (interleaved: each round times both on every length, so a load spike
// hits both). Out: the candidate's time relative to the default's, the noise of that ratio
// as measured in those same rounds, the margin the candidate must win by, and the verdict.
//
// Per round r, d_r = mean over the lengths of log(candidate / default): one paired
// observation (the geometric mean over lengths is the tuner's cost, so a decode GEMV counts
// as much as a prefill GEMM). Over n rounds, median m and median absolute deviation M (robust:
// a round in which another process preempted one side is an outlier, not a shift):
//   ratio  = exp(m)                                   candidate / default
//   noise  = s = 1.4826·M                             one round's spread (σ for normal noise)
//   margin = 1 - exp(log(1 - minGain) - z·1.2533·s/√n)  the gain needed to count as a win
//   gain   = 1 - ratio
// (1.2533·s/√n is the median's standard error.)
// The candidate wins when gain > margin: its ratio's upper confidence bound (z standard
// errors above m) lies below 1 - minGain. It cannot win (stop measuring, keep the default)
// when even its lower bound lies above 1 - minGain — slower, or equal within the noise.
// Otherwise more rounds are needed: another batch, up to maxBatches; out of batches, the
// default is kept. A win also needs minBatchesToWin batches (the caller alternates which of
// the two runs first in a batch, so both orders are measured); a loss may be called after
// one. z is 2.5 rather than 2 because the rule looks at the data after every batch, which
// would otherwise inflate the false wins (TuningPairedComparisonTest: equal schedules under
// 10 % noise win in < 2 % of simulated checks).
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_PAIREDCOMPARISON_H
#define XF_TUNING_PAIREDCOMPARISON_H

#include <cstddef>
#include <string>
#include <vector>

namespace mlir::xf::tuning {

/// σ of normal noise from its median absolute deviation, and the median's
/// standard error over the mean's.
constexpr double kMadToSigma = 1.4826;
constexpr double kMedianEfficiency = 1.2533;

struct PairedRule {
  double z = 2.5;        // standard errors the win must clear
  double minGain = 0.01; // wins smaller than this are not worth a database entry
  size_t minRounds = 6;  // fewer paired rounds decide nothing
  size_t maxBatches = 4; // worker batches at most (9 rounds each in FinalCheck)
  size_t minBatchesToWin = 2;
};

enum class PairedOutcome { Wins, CannotWin, Undecided };

struct PairedVerdict {
  size_t rounds = 0;
  double ratio = 1;  // candidate / default, geometric mean over rounds and lengths
  double noise = 0;  // spread of one round's log ratio (1.4826 × its MAD)
  double margin = 0; // gain the candidate had to show
  PairedOutcome outcome = PairedOutcome::Undecided;
  double gain() const { return 1 - ratio; }
};

/// Paired observations of one candidate against the default.
class PairedRounds {
public:
  /// One batch's per-round times: `defaultMs[c][r]` and `candidateMs[c][r]` for length c,
  /// round r. Rounds either side lacks, or with a non-positive time, are skipped.
  void addBatch(const std::vector<std::vector<double>> &defaultMs,
                const std::vector<std::vector<double>> &candidateMs);
  /// One paired observation (log of candidate / default, geometric mean over lengths).
  void add(double logRatio) { logRatios.push_back(logRatio); }
  size_t rounds() const { return logRatios.size(); }
  PairedVerdict judge(const PairedRule &rule = {}) const;

private:
  std::vector<double> logRatios;
};

/// After `batches` batches judged `v`: whether another batch is needed.
bool needsAnotherBatch(const PairedVerdict &v, size_t batches, const PairedRule &rule = {});

/// Once no batch is needed (or none can run): whether the candidate is kept.
bool keepsCandidate(const PairedVerdict &v, size_t batches, const PairedRule &rule = {});

/// "wins", "cannot win" or "undecided".
const char *outcomeName(PairedOutcome outcome);

/// Why a candidate that is not kept lost, after `batches` batches judged `v` (`cut`: the
/// budget ended the batches early): "slower than the default", "not faster than the default
/// by the margin", "not decided before the budget ran out" or "not separated from the noise
/// in N batches".
std::string whyDefaultKept(const PairedVerdict &v, size_t batches, bool cut);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_PAIREDCOMPARISON_H
