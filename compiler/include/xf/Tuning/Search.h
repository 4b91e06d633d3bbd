//===- Search.h - the auto-tuner's search over schedule knobs ---*- C++ -*-===//
//
// In: a search space (ordered integer knobs plus an optional legality
// predicate), a seed for the random generator, candidate points to try first
// and the measured cost of every point tried so far. Out: batches of new,
// legal, never-tried points to measure next, and the best point measured.
// The search knows nothing about kernels or schedules: the caller maps a
// point to a schedule and measures it.
//
// Method (an evolutionary search ranked by a surrogate model):
//  1. Seeds (the default schedule, an autoscheduler's choice, ...) are
//     proposed first, in the order given, each snapped to the nearest listed
//     value of every knob.
//  2. Every later proposal is, with probability 0.1 (0.5 while fewer than
//     max(4, 2 * knobs) points have a cost), a uniformly random legal point
//     for exploration. Otherwise it is the best of a pool of children bred
//     from the population, the best measured points: a child is either a
//     parent mutated in 1 or 2 knobs (mostly to a neighbouring value,
//     sometimes a random one) or a uniform crossover of two parents, each
//     picked by a tournament of 3, then mutated with probability 0.3.
//  3. The pool is ranked by a surrogate fitted to log-cost: a per-knob
//     additive model (backfitting, with neighbouring values of an ordered
//     knob sharing evidence so unmeasured values get an estimate) plus the
//     inverse-distance-weighted residual of the 5 nearest measured points,
//     which captures interactions between knobs. Failed trials enter the
//     model at the worst measured log-cost plus log(2), steering the search
//     away from regions that fail.
//  4. When neither breeding nor random sampling finds an untried legal point,
//     spaces of at most 2^20 points are enumerated to find the last ones; an
//     empty batch then means the space is exhausted. (For larger spaces an
//     empty batch means that thousands of random draws found nothing legal
//     and untried.)
// Everything is deterministic for a given seed and sequence of calls: the
// generator is our own (xoshiro256**), not the standard library's
// distributions, so the proposals are also the same across C++ libraries.
//
// A proposed point counts as taken at once, so a batch being measured is not
// proposed again; record() its outcome (a cost, or nullopt for a failure:
// crash, wrong result, compile error, timeout). Old measurements given to
// record() when resuming are never proposed again either.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_SEARCH_H
#define XF_TUNING_SEARCH_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir::xf::tuning {

/// One tunable parameter. Values are ordered so that neighbours behave
/// similarly (e.g. tile sizes ascending); mutations mostly step to a
/// neighbour.
struct Knob {
  std::string name;
  std::vector<int64_t> values;
};

/// A point: one value per knob (values, not indices into Knob::values).
using Point = std::vector<int64_t>;

struct SearchSpace {
  std::vector<Knob> knobs;
  /// Optional; points for which it returns false are never proposed.
  std::function<bool(llvm::ArrayRef<int64_t>)> legal;
};

/// One measurement. cost == nullopt: the point failed (crash, wrong result,
/// compile error, timeout); it counts as tried.
struct Trial {
  Point point;
  std::optional<double> cost;
};

class Search {
public:
  Search(SearchSpace space, uint64_t seed);

  /// Adds a candidate to propose before any other (in the order added). A
  /// value not in its knob's list is snapped to the nearest listed value
  /// (ties go to the smaller value). Points of the wrong arity, illegal
  /// points and points already taken are dropped.
  void seed(const Point &p);

  /// Records a measurement; the point (snapped like a seed) is never
  /// proposed again. Costs should be positive (they are modelled in log
  /// space; non-positive or non-finite costs are treated as failures by the
  /// model but still count for best() if finite). A point of the wrong arity
  /// is counted in trials() but otherwise ignored.
  void record(const Trial &t);

  /// Marks a point as taken without measuring it: it is never proposed. For
  /// a point measured by other means before its cost is known (the tuner's
  /// default, timed as the anchor of every batch and recorded after the
  /// first). Not counted in trials(); a point not exactly in the space is
  /// ignored (it is not snapped: that would exclude a different point).
  void exclude(const Point &p);

  /// Up to n new, legal, never-proposed, never-recorded points, seeds first.
  /// Empty when the space is exhausted.
  std::vector<Point> propose(size_t n);

  /// The recorded trial with the lowest finite cost (the earliest on ties),
  /// as it was recorded; nullopt when none succeeded.
  std::optional<Trial> best() const;

  /// Number of record() calls.
  size_t trials() const { return numTrials; }

  const SearchSpace &space() const { return spaceDef; }

private:
  using Index = std::vector<uint32_t>; // one index into Knob::values per knob

  struct Measured {
    Index index;
    std::optional<double> cost; // finite and positive, else a failure
  };

  // Deterministic generator (xoshiro256**) and helpers.
  uint64_t next();
  uint64_t below(uint64_t n); // uniform in [0, n), n > 0
  double unit();              // uniform in [0, 1)

  bool snap(llvm::ArrayRef<int64_t> p, Index &out) const;
  Point toPoint(const Index &idx) const;
  bool isLegal(const Index &idx) const;
  bool isFree(const Index &idx) const; // legal and not taken
  Index randomIndex();
  bool randomFree(Index &out, size_t attempts);

  struct Model;
  void fitModel(Model &m) const;
  double predict(const Model &m, const Index &idx) const;
  std::vector<Index> breed(size_t want, const std::vector<size_t> &population);
  void mutate(Index &idx);
  void enumerateFree(size_t want, std::vector<Index> &out);

  SearchSpace spaceDef;
  uint64_t state[4];
  std::vector<Index> pendingSeeds;
  size_t nextSeed = 0;
  std::set<Index> taken; // proposed or recorded
  std::vector<Measured> measured;
  std::optional<Trial> bestTrial;
  size_t numTrials = 0;
  bool exhausted = false;
  double spaceSize = 0; // product of the knob sizes (as double: no overflow)
};

} // namespace mlir::xf::tuning

#endif // XF_TUNING_SEARCH_H
