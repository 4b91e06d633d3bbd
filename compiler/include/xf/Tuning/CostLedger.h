//===- CostLedger.h - load-independent costs of measured schedules -*- C++ -*-===//
//
// In: raw wall times from batches measured on a shared, noisy machine. Out:
// costs comparable across batches, and the best schedule's cost estimate.
//
// Every batch times the kernel's default schedule beside its candidates (in
// the same process, interleaved), and a candidate's cost is its raw time
// relative to the default's in that batch, times the default's cost
// (fixed at its first measurement): cost = raw / defaultRaw · defaultCost.
// The anchor never moves, so a noisy batch cannot shift the level of all
// later ones. (Anchoring on the best schedule so far instead lets the
// winner's curse compound: each batch's luckiest measurement becomes the new
// reference, and costs ratchet down without bound; the tuner once reported
// a 36x "speedup" that was all drift.) The best schedule is re-timed in
// every batch too, and its cost is the mean of all its anchored
// measurements, so a lucky first measurement regresses to the truth and a
// truly better candidate can still overtake it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_COSTLEDGER_H
#define XF_TUNING_COSTLEDGER_H

#include <cstddef>

namespace mlir::xf::tuning {

class CostLedger {
public:
  /// Resuming: the default's cost and the best one's, as recorded (0: none).
  CostLedger(double defaultCost = 0, double bestCost = 0, size_t bestSamples = 1);

  /// Starts a batch in which the default schedule took `defaultRaw`. The
  /// first batch fixes the default's cost. Returns false (and leaves the
  /// batch unusable) for a non-positive or non-finite time.
  bool beginBatch(double defaultRaw);

  /// The cost of a candidate that took `raw` in the current batch.
  double cost(double raw) const;

  /// The best schedule's re-measurement in this batch (call before offer()).
  void remeasureBest(double raw);

  /// A candidate's cost: true when it becomes the best (its estimate then
  /// starts from this one measurement).
  bool offer(double cost);

  bool hasBest() const { return bestSamples_ > 0 && bestCost_ > 0; }
  double bestCost() const { return bestCost_; }
  double defaultCost() const { return defaultCost_; }

private:
  double defaultCost_ = 0, defaultRaw_ = 0;
  double bestCost_ = 0;
  size_t bestSamples_ = 0;
};

} // namespace mlir::xf::tuning

#endif // XF_TUNING_COSTLEDGER_H
