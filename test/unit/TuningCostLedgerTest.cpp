//===- TuningCostLedgerTest.cpp - costs anchored on the default schedule --===//
//
// In: simulated batches on a noisy, loaded machine (every schedule's raw
// time = its true time × the batch's load × per-measurement noise). Out:
// checks that anchored costs do not drift however many batches run (the
// tuner once ratcheted a "best" cost 36× below the truth by anchoring on the
// best-so-far), that load cancels, and that a truly faster schedule wins.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/CostLedger.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir::xf::tuning;

namespace {

struct NoisyMachine {
  std::mt19937_64 rng{7};
  std::lognormal_distribution<double> load{0.0, 0.3};   // per batch
  std::lognormal_distribution<double> noise{0.0, 0.08}; // per measurement
};

TEST(TuningCostLedger, NoDriftAmongEqualSchedules) {
  // Every candidate is exactly as fast as the default: the best cost must
  // stay near the default's, not fall batch after batch.
  NoisyMachine m;
  const double truth = 1.0;
  CostLedger ledger;
  for (int batch = 0; batch < 2000; ++batch) {
    double load = m.load(m.rng);
    ASSERT_TRUE(ledger.beginBatch(truth * load * m.noise(m.rng)));
    if (batch == 0)
      ledger.offer(ledger.defaultCost());
    ledger.remeasureBest(truth * load * m.noise(m.rng));
    for (int i = 0; i < 4; ++i)
      ledger.offer(ledger.cost(truth * load * m.noise(m.rng)));
  }
  // Per-measurement noise of 8% (twice: candidate and anchor): the winner
  // of a batch may look ~25% faster, but that must not compound.
  EXPECT_GT(ledger.bestCost() / ledger.defaultCost(), 0.7);
}

TEST(TuningCostLedger, LoadCancels) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.beginBatch(2.0)); // the default took 2 ms: its cost
  EXPECT_DOUBLE_EQ(ledger.defaultCost(), 2.0);
  EXPECT_DOUBLE_EQ(ledger.cost(1.0), 1.0);
  ASSERT_TRUE(ledger.beginBatch(6.0)); // three times the load
  EXPECT_DOUBLE_EQ(ledger.cost(3.0), 1.0);
  EXPECT_DOUBLE_EQ(ledger.defaultCost(), 2.0);
}

TEST(TuningCostLedger, FasterScheduleWinsAndIsEstimatedWell) {
  NoisyMachine m;
  CostLedger ledger;
  const double dflt = 1.0, fast = 0.6;
  for (int batch = 0; batch < 200; ++batch) {
    double load = m.load(m.rng);
    ASSERT_TRUE(ledger.beginBatch(dflt * load * m.noise(m.rng)));
    if (batch == 0)
      ledger.offer(ledger.defaultCost());
    ledger.remeasureBest(
        (ledger.bestCost() < 0.8 * ledger.defaultCost() ? fast : dflt) * load * m.noise(m.rng));
    if (batch == 10)
      EXPECT_TRUE(ledger.offer(ledger.cost(fast * load * m.noise(m.rng))));
  }
  double ratio = ledger.bestCost() / ledger.defaultCost();
  EXPECT_NEAR(ratio, fast / dflt, 0.1);
}

TEST(TuningCostLedger, ResumeKeepsAnchorAndRejectsBadTimes) {
  CostLedger ledger(/*defaultCost=*/4.0, /*bestCost=*/3.0);
  EXPECT_TRUE(ledger.hasBest());
  EXPECT_FALSE(ledger.beginBatch(0.0));
  EXPECT_FALSE(ledger.beginBatch(std::nan("")));
  ASSERT_TRUE(ledger.beginBatch(8.0));
  EXPECT_DOUBLE_EQ(ledger.defaultCost(), 4.0);
  EXPECT_DOUBLE_EQ(ledger.cost(4.0), 2.0);
  EXPECT_FALSE(ledger.offer(3.5));
  EXPECT_FALSE(ledger.offer(-1.0));
  EXPECT_TRUE(ledger.offer(2.5));
  EXPECT_DOUBLE_EQ(ledger.bestCost(), 2.5);
}

} // namespace
