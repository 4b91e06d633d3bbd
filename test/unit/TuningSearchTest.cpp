//===- TuningSearchTest.cpp - the tuner's search on synthetic costs -------===//
//
// In: synthetic cost functions over integer knobs (a separable bowl, a
// rugged function with interactions and pseudo-noise). Out: checks that the
// search finds the bowl's optimum on a small budget, beats random search at
// equal budget on the rugged function, and keeps its contract (seeds first,
// legality, no repeats, exhaustion, failures, determinism). No timing.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/Search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

using namespace mlir::xf::tuning;

namespace {

using CostFn = std::function<std::optional<double>(const Point &)>;

/// Knob k takes `sizes[k]` ascending, unevenly spaced values (like tile
/// sizes): 4, 8, 12, 16, 24, 32, ... so values and indices differ.
SearchSpace makeSpace(const std::vector<size_t> &sizes) {
  SearchSpace space;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Knob knob{"k" + std::to_string(k), {}};
    int64_t v = 4;
    for (size_t i = 0; i < sizes[k]; ++i) {
      knob.values.push_back(v);
      v += i < 3 ? 4 : 8;
    }
    space.knobs.push_back(knob);
  }
  return space;
}

/// The index of each value of `p` in its knob's list.
std::vector<double> indices(const SearchSpace &space, const Point &p) {
  std::vector<double> idx;
  for (size_t k = 0; k < p.size(); ++k) {
    const auto &vals = space.knobs[k].values;
    idx.push_back(double(std::find(vals.begin(), vals.end(), p[k]) - vals.begin()));
  }
  return idx;
}

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

/// Deterministic pseudo-noise in [0, 1) per point.
double noise(const Point &p) {
  uint64_t h = 0x1234567;
  for (int64_t v : p)
    h = mix(h ^ uint64_t(v) * 0x9e3779b97f4a7c15ULL);
  return double(h >> 11) * 0x1.0p-53;
}

/// Separable bowl with its minimum 1.0 at index `opt[k]` of each knob.
CostFn bowl(const SearchSpace &space, std::vector<double> opt) {
  return [&space, opt](const Point &p) -> std::optional<double> {
    std::vector<double> x = indices(space, p);
    double c = 1;
    for (size_t k = 0; k < x.size(); ++k)
      c += (0.5 + 0.25 * double(k)) * (x[k] - opt[k]) * (x[k] - opt[k]);
    return c;
  };
}

/// A bowl in normalised coordinates, two interaction terms, and noise
/// comparable to the bowl's depth near its optimum.
CostFn rugged(const SearchSpace &space) {
  return [&space](const Point &p) -> std::optional<double> {
    std::vector<double> x = indices(space, p);
    std::vector<double> d(x.size());
    const double opt[] = {2, 7, 4, 1, 8, 5, 3};
    for (size_t k = 0; k < x.size(); ++k)
      d[k] = (x[k] - opt[k % 7]) / double(space.knobs[k].values.size() - 1);
    double c = 1;
    for (size_t k = 0; k < d.size(); ++k)
      c += (1 + 0.4 * double(k)) * d[k] * d[k];
    c += 3 * (d[0] - d[1]) * (d[0] - d[1]);
    c += 2 * std::fabs(d[2] * d[3]);
    c += 0.6 * noise(p);
    return c;
  };
}

/// Runs `search` for `budget` trials in batches; returns the best cost.
double runSearch(Search &search, const CostFn &cost, size_t budget, size_t batch = 4,
                 std::optional<double> stopAt = std::nullopt) {
  while (search.trials() < budget) {
    std::vector<Point> pts = search.propose(std::min(batch, budget - search.trials()));
    if (pts.empty())
      break;
    for (const Point &p : pts)
      search.record({p, cost(p)});
    if (stopAt && search.best() && *search.best()->cost <= *stopAt)
      break;
  }
  return search.best() ? *search.best()->cost : INFINITY;
}

/// Random search: uniformly random legal untried points.
double runRandom(const SearchSpace &space, const CostFn &cost, size_t budget, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<Point> tried;
  double best = INFINITY;
  while (tried.size() < budget) {
    Point p;
    for (const Knob &k : space.knobs)
      p.push_back(k.values[rng() % k.values.size()]);
    if ((space.legal && !space.legal(p)) || !tried.insert(p).second)
      continue;
    if (std::optional<double> c = cost(p))
      best = std::min(best, *c);
  }
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double spaceSize(const SearchSpace &space) {
  double n = 1;
  for (const Knob &k : space.knobs)
    n *= double(k.values.size());
  return n;
}

} // namespace

//===----------------------------------------------------------------------===//
// Quality
//===----------------------------------------------------------------------===//

TEST(TuningSearch, FindsSeparableBowlOptimum) {
  struct Case {
    std::vector<size_t> sizes;
    std::vector<double> opt;
  };
  const Case cases[] = {{{6, 8, 10, 12, 9}, {1, 6, 3, 10, 4}},
                        {{7, 6, 12, 8, 10, 9, 11}, {6, 0, 5, 2, 9, 4, 7}}};
  for (const Case &c : cases) {
    SearchSpace space = makeSpace(c.sizes);
    CostFn cost = bowl(space, c.opt);
    size_t budget = size_t(0.15 * spaceSize(space));
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      Search search(space, seed);
      double best = runSearch(search, cost, budget, 4, 1.0);
      EXPECT_EQ(best, 1.0) << c.sizes.size() << " knobs, seed " << seed;
      // Informational: how much of the budget it needed.
      std::printf("bowl %zu knobs seed %llu: optimum after %zu trials (budget %zu)\n",
                  c.sizes.size(), (unsigned long long)seed, search.trials(), budget);
    }
  }
}

TEST(TuningSearch, BeatsRandomSearchOnRuggedFunction) {
  SearchSpace space = makeSpace({10, 10, 10, 10, 10, 10});
  CostFn cost = rugged(space);
  for (size_t budget : {60, 200}) {
    std::vector<double> searchBest, randomBest;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      Search search(space, seed);
      searchBest.push_back(runSearch(search, cost, budget));
      randomBest.push_back(runRandom(space, cost, budget, seed));
    }
    double s = median(searchBest), r = median(randomBest);
    std::printf("rugged, %zu trials: median best %.4f (search) vs %.4f (random)\n", budget, s, r);
    EXPECT_LT(s, r) << "budget " << budget;
  }
}

TEST(TuningSearch, BeatsRandomSearchWithOneAtATimeProposals) {
  // The driver may measure one point at a time.
  SearchSpace space = makeSpace({8, 12, 6, 10, 9});
  CostFn cost = rugged(space);
  std::vector<double> searchBest, randomBest;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Search search(space, seed);
    searchBest.push_back(runSearch(search, cost, 120, /*batch=*/1));
    randomBest.push_back(runRandom(space, cost, 120, seed + 100));
  }
  EXPECT_LT(median(searchBest), median(randomBest));
}

//===----------------------------------------------------------------------===//
// Contract
//===----------------------------------------------------------------------===//

TEST(TuningSearch, SeedsAreProposedFirstAndSnapped) {
  SearchSpace space = makeSpace({6, 6, 6}); // values 4 8 12 16 24 32
  Search search(space, 7);
  search.seed({16, 16, 16});
  search.seed({9, 30, 100}); // snaps to 8, 32, 32
  search.seed({10, 4, 4});   // a tie between 8 and 12: the smaller value
  search.seed({16, 16, 16}); // a repeat: dropped
  search.seed({1, 2});       // wrong arity: dropped
  std::vector<Point> first = search.propose(2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0], (Point{16, 16, 16}));
  EXPECT_EQ(first[1], (Point{8, 32, 32}));
  std::vector<Point> next = search.propose(3);
  ASSERT_EQ(next.size(), 3u);
  EXPECT_EQ(next[0], (Point{8, 4, 4}));
  EXPECT_NE(next[1], (Point{16, 16, 16}));
  EXPECT_NE(next[2], (Point{16, 16, 16}));
}

TEST(TuningSearch, SkipsIllegalAndAlreadyRecordedSeeds) {
  SearchSpace space = makeSpace({6, 6});
  space.legal = [](llvm::ArrayRef<int64_t> p) { return p[0] <= p[1]; };
  Search search(space, 1);
  search.seed({32, 4}); // illegal
  search.seed({4, 8});  // recorded below
  search.seed({8, 8});
  search.record({{4, 8}, 2.0});
  std::vector<Point> pts = search.propose(1);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0], (Point{8, 8}));
}

TEST(TuningSearch, RespectsLegalityAndNeverRepeatsUntilExhausted) {
  SearchSpace space = makeSpace({5, 6, 4}); // 120 points
  space.legal = [](llvm::ArrayRef<int64_t> p) { return (p[0] + p[1] + p[2]) % 8 != 0; };
  size_t legalCount = 0;
  for (int64_t a : space.knobs[0].values)
    for (int64_t b : space.knobs[1].values)
      for (int64_t c : space.knobs[2].values)
        legalCount += space.legal({a, b, c});
  ASSERT_GT(legalCount, 0u);
  ASSERT_LT(legalCount, 120u);

  Search search(space, 3);
  // Old measurements, as when resuming: never proposed again.
  std::set<Point> seen;
  for (Point p : {Point{4, 4, 12}, Point{8, 16, 4}, Point{16, 24, 12}}) {
    ASSERT_TRUE(space.legal(p));
    search.record({p, 5.0});
    seen.insert(p);
  }
  CostFn cost = bowl(space, {2, 3, 1});
  for (int round = 0; round < 1000; ++round) {
    std::vector<Point> pts = search.propose(7);
    if (pts.empty())
      break;
    for (const Point &p : pts) {
      EXPECT_TRUE(space.legal(p));
      EXPECT_TRUE(seen.insert(p).second) << "proposed twice";
      search.record({p, cost(p)});
    }
  }
  EXPECT_EQ(seen.size(), legalCount);
  EXPECT_TRUE(search.propose(5).empty());
  EXPECT_TRUE(search.propose(1).empty());
  EXPECT_EQ(*search.best()->cost, 1.0);
}

TEST(TuningSearch, ProposedButUnrecordedPointsAreNotProposedAgain) {
  SearchSpace space = makeSpace({3, 2}); // 6 points
  Search search(space, 11);
  std::set<Point> seen;
  for (const Point &p : search.propose(4))
    EXPECT_TRUE(seen.insert(p).second);
  for (const Point &p : search.propose(4))
    EXPECT_TRUE(seen.insert(p).second);
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_TRUE(search.propose(4).empty());
}

// The tuner's default is timed as every batch's anchor and recorded only
// after the first batch; excluded up front, it is never proposed as a
// candidate (a decode attention path of 4 values used to get it back in its
// first batch of 4).
TEST(TuningSearch, ExcludedPointsAreNeverProposed) {
  SearchSpace space{{Knob{"decode_key_tile", {1, 2, 4, 8}}}, nullptr};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Search search(space, seed);
    search.exclude({4});
    search.exclude({3}); // not a listed value: ignored, not snapped to 2 or 4
    search.exclude({1, 2}); // wrong arity: ignored
    std::vector<Point> first = search.propose(4);
    std::set<Point> got(first.begin(), first.end());
    EXPECT_EQ(got, (std::set<Point>{{1}, {2}, {8}})) << "seed " << seed;
    EXPECT_TRUE(search.propose(4).empty());
    EXPECT_EQ(search.trials(), 0u);
  }
}

TEST(TuningSearch, HandlesFailures) {
  SearchSpace space = makeSpace({8, 8, 8});
  CostFn base = bowl(space, {5, 2, 6});
  // Everything with a large first knob fails (as a too-large tile would).
  CostFn cost = [&](const Point &p) -> std::optional<double> {
    if (p[0] >= 40)
      return std::nullopt;
    return base(p);
  };
  Search search(space, 5);
  std::set<Point> seen;
  size_t failures = 0;
  while (search.trials() < 150) {
    std::vector<Point> pts = search.propose(5);
    ASSERT_FALSE(pts.empty());
    for (const Point &p : pts) {
      EXPECT_TRUE(seen.insert(p).second);
      std::optional<double> c = cost(p);
      failures += !c;
      search.record({p, c});
    }
  }
  EXPECT_GT(failures, 0u);
  ASSERT_TRUE(search.best());
  EXPECT_LT(search.best()->point[0], 40);
  EXPECT_EQ(search.trials(), seen.size());

  // Nothing but failures: no best, proposals go on.
  Search allFail(space, 5);
  for (int i = 0; i < 10; ++i)
    for (const Point &p : allFail.propose(3))
      allFail.record({p, std::nullopt});
  EXPECT_FALSE(allFail.best());
  EXPECT_EQ(allFail.trials(), 30u);
  EXPECT_EQ(allFail.propose(3).size(), 3u);
}

TEST(TuningSearch, IsDeterministicForASeed) {
  SearchSpace space = makeSpace({9, 7, 11, 6});
  CostFn cost = rugged(space);
  auto trace = [&](uint64_t seed) {
    Search search(space, seed);
    search.seed({8, 8, 8, 8});
    std::vector<Point> all;
    for (int round = 0; round < 30; ++round) {
      for (const Point &p : search.propose(3)) {
        all.push_back(p);
        // Some failures, so that the failure path is part of the trace.
        search.record({p, noise(p) < 0.1 ? std::nullopt : cost(p)});
      }
    }
    return all;
  };
  std::vector<Point> a = trace(42), b = trace(42), c = trace(43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), 90u);
}

TEST(TuningSearch, DegenerateSpaces) {
  // A knob with no values: nothing to propose.
  SearchSpace empty = makeSpace({3, 0});
  Search e(empty, 1);
  e.seed({4, 4});
  EXPECT_TRUE(e.propose(3).empty());

  // No knobs: exactly one (empty) point.
  Search none(SearchSpace{}, 1);
  std::vector<Point> pts = none.propose(3);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_TRUE(pts[0].empty());
  EXPECT_TRUE(none.propose(3).empty());

  // Nothing legal.
  SearchSpace illegal = makeSpace({4, 4});
  illegal.legal = [](llvm::ArrayRef<int64_t>) { return false; };
  Search i(illegal, 1);
  EXPECT_TRUE(i.propose(3).empty());

  // A wrong-arity record counts but changes nothing else.
  Search w(makeSpace({2, 2}), 1);
  w.record({{4}, 1.0});
  EXPECT_EQ(w.trials(), 1u);
  EXPECT_FALSE(w.best());
  EXPECT_EQ(w.propose(10).size(), 4u);
}
