//===- TuningPairedComparisonTest.cpp - the final A/B's decision rule -----===//
//
// In: synthetic per-round times of the default and one candidate, with a load common to
// both in a round (what interleaving pairs away) and per-measurement noise. Out: checks
// that an entry that loses or ties within the noise is not kept, that one winning by more
// than the margin is, that the noise and margin reported are the ones measured, and the
// load warning's rule (MachineLoad.h).
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/MachineLoad.h"
#include "xf/Tuning/PairedComparison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

using namespace mlir::xf::tuning;

namespace {

struct Machine {
  std::mt19937_64 rng;
  double roundLoad;   // spread of the load shared by both in a round
  double measurement; // spread of each measurement
  explicit Machine(uint64_t seed, double roundLoad, double measurement)
      : rng(seed), roundLoad(roundLoad), measurement(measurement) {}
  /// One batch of 9 rounds over two lengths: [case][round] times.
  void batch(double candidateTruth, std::vector<std::vector<double>> &d,
             std::vector<std::vector<double>> &c) {
    std::lognormal_distribution<double> load(0, roundLoad), noise(0, measurement);
    const double lengths[] = {0.3, 3.0}; // ms: a decode and a prefill call
    d.assign(2, {}), c.assign(2, {});
    for (int r = 0; r < 9; ++r) {
      const double l = load(rng);
      for (int k = 0; k < 2; ++k) {
        d[k].push_back(lengths[k] * l * noise(rng));
        c[k].push_back(lengths[k] * candidateTruth * l * noise(rng));
      }
    }
  }
};

/// The final check as FinalCheck.cpp runs it: batches until the rule needs no more.
struct Check {
  PairedVerdict verdict;
  size_t batches = 0;
  bool kept = false;
};

Check runCheck(Machine &m, double candidateTruth) {
  PairedRounds rounds;
  Check check;
  while (needsAnotherBatch(rounds.judge(), check.batches)) {
    std::vector<std::vector<double>> d, c;
    m.batch(candidateTruth, d, c);
    rounds.addBatch(d, c);
    ++check.batches;
  }
  check.verdict = rounds.judge();
  check.kept = keepsCandidate(check.verdict, check.batches);
  return check;
}

double keptFraction(double candidateTruth, double roundLoad, double measurement, int trials) {
  int kept = 0;
  for (int t = 0; t < trials; ++t) {
    Machine m(1000 + t, roundLoad, measurement);
    kept += runCheck(m, candidateTruth).kept;
  }
  return double(kept) / trials;
}

TEST(TuningPairedComparison, ExactTimesFollowTheMinimumGain) {
  for (double truth : {0.995, 1.0, 1.02}) {
    PairedRounds rounds;
    for (int r = 0; r < 18; ++r)
      rounds.add(std::log(truth));
    PairedVerdict v = rounds.judge();
    EXPECT_NEAR(v.ratio, truth, 1e-12);
    EXPECT_NEAR(v.noise, 0, 1e-12);
    EXPECT_NEAR(v.margin, PairedRule().minGain, 1e-9);
    EXPECT_EQ(v.outcome, PairedOutcome::CannotWin) << truth;
  }
  PairedRounds faster;
  for (int r = 0; r < 18; ++r)
    faster.add(std::log(0.98));
  EXPECT_EQ(faster.judge().outcome, PairedOutcome::Wins);
  EXPECT_TRUE(keepsCandidate(faster.judge(), 2));
  EXPECT_FALSE(keepsCandidate(faster.judge(), 1)) << "a win needs both orders";
}

TEST(TuningPairedComparison, FewRoundsDecideNothing) {
  PairedRounds rounds;
  for (int r = 0; r < 5; ++r)
    rounds.add(std::log(0.5));
  EXPECT_EQ(rounds.judge().outcome, PairedOutcome::Undecided);
  EXPECT_TRUE(needsAnotherBatch(rounds.judge(), 1));
  EXPECT_FALSE(needsAnotherBatch(rounds.judge(), PairedRule().maxBatches));
  EXPECT_FALSE(keepsCandidate(rounds.judge(), PairedRule().maxBatches));
}

TEST(TuningPairedComparison, PairsRoundsAndSkipsUnusableOnes) {
  // Round 0: both lengths 10 % faster; round 1: a non-positive time (skipped);
  // round 2 only on one side (skipped).
  PairedRounds rounds;
  rounds.addBatch({{1.0, 1.0, 1.0}, {10.0, 10.0}}, {{0.9, 0.0, 0.9}, {9.0, 9.0, 9.0}});
  EXPECT_EQ(rounds.rounds(), 1u);
  EXPECT_NEAR(rounds.judge().ratio, 0.9, 1e-12);
}

TEST(TuningPairedComparison, NoiseIsTheMeasuredSpread) {
  // Log ratios -0.2, -0.1, 0, 0.1, 0.2 repeated: median 0, median absolute
  // deviation 0.1.
  PairedRounds rounds;
  for (int r = 0; r < 20; ++r)
    rounds.add(0.1 * (r % 5 - 2));
  PairedVerdict v = rounds.judge();
  EXPECT_NEAR(v.ratio, 1.0, 1e-12);
  EXPECT_NEAR(v.noise, kMadToSigma * 0.1, 1e-12);
  EXPECT_NEAR(v.margin,
              1 - std::exp(std::log(0.99) - 2.5 * kMedianEfficiency * v.noise / std::sqrt(20.0)),
              1e-12);
  // Equal on the median, but 20 rounds of this spread cannot exclude a 10 % gain.
  EXPECT_EQ(v.outcome, PairedOutcome::Undecided);
}

TEST(TuningPairedComparison, PreemptedRoundsDoNotMakeAWin) {
  // Equal schedules; in a fifth of the rounds another process preempted the
  // default (5x its time). A mean of the log ratios would be 0.32 below 0.
  PairedRounds rounds;
  for (int r = 0; r < 36; ++r)
    rounds.add((r % 5 == 0 ? -std::log(5.0) : 0.0) + 0.02 * ((r * 7) % 3 - 1));
  PairedVerdict v = rounds.judge();
  EXPECT_NEAR(v.ratio, 1.0, 0.03);
  EXPECT_FALSE(keepsCandidate(v, 4));
}

TEST(TuningPairedComparison, SlowerCandidatesAreNotKept) {
  EXPECT_EQ(keptFraction(1.05, 0.3, 0.05, 300), 0.0);
  // 1 % slower under 10 % noise per measurement is nearly a tie: rarely kept.
  EXPECT_LT(keptFraction(1.01, 0.3, 0.10, 300), 0.01);
}

TEST(TuningPairedComparison, TiesWithinTheNoiseAreRarelyKept) {
  // Equal schedules on a loaded machine: a false win is a slower build
  // nobody asked for; the rule keeps them below 2 %.
  EXPECT_LT(keptFraction(1.0, 0.3, 0.10, 500), 0.02);
  EXPECT_LT(keptFraction(1.0, 0.5, 0.03, 500), 0.02);
  // A gain smaller than the minimum is no gain worth an entry.
  EXPECT_LT(keptFraction(0.995, 0.2, 0.01, 300), 0.02);
}

TEST(TuningPairedComparison, ClearWinsAreKept) {
  // 10 % faster under 3 % noise and a heavy shared load (pairing cancels it).
  EXPECT_GT(keptFraction(0.90, 0.5, 0.03, 300), 0.98);
  // 5 % faster under 5 % noise: within 4 batches nearly always.
  EXPECT_GT(keptFraction(0.95, 0.3, 0.05, 300), 0.9);
  Machine m(1, 0.3, 0.03);
  Check check = runCheck(m, 0.9);
  ASSERT_TRUE(check.kept);
  EXPECT_EQ(check.batches, 2u) << "a clear win is decided in the first two batches";
  EXPECT_GT(check.verdict.gain(), check.verdict.margin);
  EXPECT_NEAR(check.verdict.ratio, 0.9, 0.03);
  EXPECT_NEAR(check.verdict.noise, 0.03, 0.02); // two measurements of 3 % over two lengths
}

TEST(TuningPairedComparison, ClearLossesStopAfterOneBatch) {
  Machine m(2, 0.3, 0.03);
  Check check = runCheck(m, 1.3);
  EXPECT_FALSE(check.kept);
  EXPECT_EQ(check.batches, 1u);
  EXPECT_EQ(check.verdict.outcome, PairedOutcome::CannotWin);
}

TEST(TuningMachineLoad, WarnsOnOtherLoadOrNoise) {
  LoadWatch quiet(2, 2);
  quiet.noteBefore(1.4);     // xfc itself and a little else
  quiet.noteDuring(2.6);     // the worker's 2 threads and a little else
  quiet.noteNoise("k", 0.04);
  EXPECT_FALSE(quiet.warning());

  LoadWatch before(2, 2);
  before.noteBefore(3.5);
  std::optional<std::string> w = before.warning();
  ASSERT_TRUE(w);
  EXPECT_NE(w->find("other load 2.5 before"), std::string::npos) << *w;
  EXPECT_EQ(w->find('\n'), std::string::npos) << "one line";

  LoadWatch during(2, 2);
  during.noteDuring(3.2);
  EXPECT_TRUE(during.warning());

  LoadWatch noisy(2, 2);
  noisy.noteNoise("xf_gemm_3", 0.14);
  w = noisy.warning();
  ASSERT_TRUE(w);
  EXPECT_NE(w->find("14.0 % (xf_gemm_3"), std::string::npos) << *w;

  // A bigger machine tolerates a quarter of its cores of other load.
  LoadWatch big(64, 64);
  big.noteDuring(64 + 10);
  EXPECT_FALSE(big.warning());
  big.noteDuring(64 + 20);
  EXPECT_TRUE(big.warning());
}

TEST(TuningMachineLoad, ReadsTheLoadAverageFile) {
  const char *path = "tuning-loadavg-test.txt";
  {
    FILE *f = std::fopen(path, "w");
    ASSERT_TRUE(f);
    std::fputs("7.25 6.00 5.00 3/400 1234\n", f);
    std::fclose(f);
  }
  setenv("XF_TUNE_LOADAVG_FILE", path, 1);
  EXPECT_EQ(readLoadAverage(), 7.25);
  setenv("XF_TUNE_LOADAVG_FILE", "/nonexistent/loadavg", 1);
  EXPECT_FALSE(readLoadAverage());
  unsetenv("XF_TUNE_LOADAVG_FILE");
  std::remove(path);
}

} // namespace
