//===- CostLedger.h - load-independent costs of measured schedules -*- C++ -*-===//
//
// In: raw wall times from batches measured on a shared, noisy machine. Out:
// costs comparable across batches, and which schedule is best.
//
// Every batch times the kernel's default schedule beside its candidates (in
// the same process, interleaved), and a candidate's cost is its raw time
// relative to the default's in that batch, times the default's cost
// (fixed at its first measurement): cost = raw / defaultRaw · defaultCost.
// The anchor never moves, so a noisy batch cannot shift the level of all
// later ones. (Anchoring on the best schedule so far instead lets the
// winner's curse compound: each batch's luckiest measurement becomes the new
// reference, and costs ratchet down without bound; the tuner once reported
// a 36x "speedup" that was all drift.)
//
// A single measurement still flatters the luckiest of many candidates, so
// the ledger keeps a few contenders — the best-looking schedules so far —
// that the caller re-times in every batch. A contender's cost is the mean
// of its measurements, and the best is the contender with the lowest mean
// among those measured at least twice (or the lowest at all while none
// has been): a lucky candidate regresses toward the truth before it wins.
// Some selection bias remains (contenders survive on lucky re-timings), but
// it is bounded, not compounding; the tuner re-times the final contenders
// in a fresh batch and reports those times.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_COSTLEDGER_H
#define XF_TUNING_COSTLEDGER_H

#include <cstddef>
#include <optional>
#include <vector>

namespace mlir::xf::tuning {

class CostLedger {
public:
  /// Contenders kept and re-timed in every batch.
  static constexpr size_t kContenders = 2;

  /// Resuming: the default's cost as recorded (0: none yet).
  explicit CostLedger(double defaultCost = 0);

  /// Starts a batch in which the default schedule took `defaultRaw`. The
  /// first batch fixes the default's cost. Returns false (and leaves the
  /// batch unusable) for a non-positive or non-finite time.
  bool beginBatch(double defaultRaw);

  /// The cost of a candidate that took `raw` in the current batch.
  double cost(double raw) const;

  /// A measured cost of schedule `id` (the caller's numbering): updates
  /// the mean of a contender, or makes `id` a contender when there is room
  /// or it beats the worst one (which is then dropped). `samples` > 1 when
  /// resuming from a recorded mean.
  void record(size_t id, double cost, size_t samples = 1);

  /// Contenders to re-time in the next batch, best first.
  std::vector<size_t> contenders() const;

  /// Forgets the contenders' measurements (not the anchor) and returns
  /// them, best first: the caller re-times them in fresh batches and
  /// record()s those times, so the final choice and its reported cost are
  /// free of the selection that made them contenders.
  std::vector<size_t> settle();

  /// The best schedule and its mean cost; nullopt before any record().
  std::optional<size_t> best() const;
  double bestCost() const;
  double defaultCost() const { return defaultCost_; }

private:
  struct Contender {
    size_t id;
    double sum;
    size_t samples;
    double mean() const { return sum / double(samples); }
  };
  double defaultCost_ = 0, defaultRaw_ = 0;
  std::vector<Contender> contenders_;
};

} // namespace mlir::xf::tuning

#endif // XF_TUNING_COSTLEDGER_H
