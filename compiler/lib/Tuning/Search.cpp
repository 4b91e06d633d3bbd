//===- Search.cpp - evolutionary search ranked by a surrogate -------------===//
//
// In: a SearchSpace, measurements (record) and seeds. Out: batches of new
// points (propose). The method is described in xf/Tuning/Search.h; the
// constants below are tuned on the synthetic cost functions of
// test/unit/TuningSearchTest.cpp (a separable bowl and a rugged function
// with interactions), not on any one kernel.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/Search.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir::xf::tuning;

namespace {
// Proposals that are random points, for exploration, once the model has
// data; before that, half of them.
constexpr double kExplore = 0.1;
constexpr double kExploreEarly = 0.5;
// Children bred per proposal slot: the surrogate picks the best of them.
constexpr size_t kPoolPerSlot = 8;
constexpr size_t kMinPool = 32;
// Mutation: one knob (else two); a neighbouring value (else a random one);
// a step of two instead of one.
constexpr double kOneKnob = 0.6;
constexpr double kNeighbour = 0.8;
constexpr double kDoubleStep = 0.2;
constexpr double kCrossover = 0.5;
constexpr double kMutateAfterCrossover = 0.3;
constexpr size_t kTournament = 3;
// Surrogate: ridge shrinkage of the per-value effects, weight of the
// evidence of values 1 and 2 steps away, backfitting sweeps, neighbours.
constexpr double kRidge = 1.0;
constexpr double kSmooth1 = 0.3;
constexpr double kSmooth2 = 0.05;
constexpr int kSweeps = 4;
constexpr size_t kNeighbours = 5;
// A phantom neighbour with zero residual, so that the correction fades when
// the measured neighbours are far away.
constexpr double kPriorWeight = 2.0;
// Only the most recent measurements feed the model, bounding its cost.
constexpr size_t kMaxModelPoints = 4096;
// Random draws per random proposal before falling back to enumeration.
constexpr size_t kRandomAttempts = 256;
constexpr size_t kLastRandomAttempts = 4096;
// Spaces up to this size may be enumerated to find the last free points.
constexpr double kMaxEnumerate = double(1 << 20);

uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// |a - b| without signed overflow.
uint64_t absDiff(int64_t a, int64_t b) {
  return a >= b ? uint64_t(a) - uint64_t(b) : uint64_t(b) - uint64_t(a);
}
} // namespace

//===----------------------------------------------------------------------===//
// Generator and point helpers
//===----------------------------------------------------------------------===//

Search::Search(SearchSpace space, uint64_t seed) : spaceDef(std::move(space)) {
  uint64_t s = seed;
  for (uint64_t &w : state)
    w = splitmix64(s);
  spaceSize = 1;
  for (const Knob &k : spaceDef.knobs) {
    spaceSize *= double(k.values.size());
    if (k.values.empty())
      exhausted = true;
  }
}

uint64_t Search::next() {
  uint64_t result = rotl(state[1] * 5, 7) * 9;
  uint64_t t = state[1] << 17;
  state[2] ^= state[0];
  state[3] ^= state[1];
  state[1] ^= state[2];
  state[0] ^= state[3];
  state[2] ^= t;
  state[3] = rotl(state[3], 45);
  return result;
}

uint64_t Search::below(uint64_t n) {
  // Rejection sampling: no modulo bias.
  uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do
    x = next();
  while (x >= limit);
  return x % n;
}

double Search::unit() { return double(next() >> 11) * 0x1.0p-53; }

bool Search::snap(llvm::ArrayRef<int64_t> p, Index &out) const {
  const auto &knobs = spaceDef.knobs;
  if (p.size() != knobs.size())
    return false;
  out.assign(knobs.size(), 0);
  for (size_t k = 0; k < knobs.size(); ++k) {
    const std::vector<int64_t> &vals = knobs[k].values;
    if (vals.empty())
      return false;
    size_t bestI = 0;
    for (size_t i = 1; i < vals.size(); ++i) {
      uint64_t d = absDiff(vals[i], p[k]), bd = absDiff(vals[bestI], p[k]);
      if (d < bd || (d == bd && vals[i] < vals[bestI]))
        bestI = i;
    }
    out[k] = uint32_t(bestI);
  }
  return true;
}

Point Search::toPoint(const Index &idx) const {
  Point p(idx.size());
  for (size_t k = 0; k < idx.size(); ++k)
    p[k] = spaceDef.knobs[k].values[idx[k]];
  return p;
}

bool Search::isLegal(const Index &idx) const {
  return !spaceDef.legal || spaceDef.legal(toPoint(idx));
}

bool Search::isFree(const Index &idx) const { return !taken.count(idx) && isLegal(idx); }

Search::Index Search::randomIndex() {
  Index idx(spaceDef.knobs.size());
  for (size_t k = 0; k < idx.size(); ++k)
    idx[k] = uint32_t(below(spaceDef.knobs[k].values.size()));
  return idx;
}

bool Search::randomFree(Index &out, size_t attempts) {
  for (size_t i = 0; i < attempts; ++i) {
    out = randomIndex();
    if (isFree(out))
      return true;
  }
  return false;
}

void Search::enumerateFree(size_t want, std::vector<Index> &out) {
  if (spaceSize > kMaxEnumerate || exhausted)
    return;
  // Start at a random point and wrap, so that the last free points are not
  // always found in lexicographic order.
  uint64_t total = uint64_t(spaceSize);
  uint64_t start = below(total);
  size_t found = 0;
  Index idx(spaceDef.knobs.size());
  for (uint64_t t = 0; t < total && found < want; ++t) {
    uint64_t lin = (start + t) % total;
    for (size_t k = idx.size(); k-- > 0;) {
      uint64_t n = spaceDef.knobs[k].values.size();
      idx[k] = uint32_t(lin % n);
      lin /= n;
    }
    if (isFree(idx)) {
      out.push_back(idx);
      ++found;
    }
  }
  if (found < want)
    exhausted = true; // every legal point is now taken or in `out`
}

//===----------------------------------------------------------------------===//
// Seeds and measurements
//===----------------------------------------------------------------------===//

void Search::seed(const Point &p) {
  Index idx;
  if (snap(p, idx))
    pendingSeeds.push_back(std::move(idx));
}

void Search::record(const Trial &t) {
  ++numTrials;
  Index idx;
  if (!snap(t.point, idx))
    return;
  if (t.cost && std::isfinite(*t.cost) && (!bestTrial || *t.cost < *bestTrial->cost))
    bestTrial = t;
  std::optional<double> cost;
  if (t.cost && std::isfinite(*t.cost) && *t.cost > 0)
    cost = t.cost;
  taken.insert(idx);
  measured.push_back({std::move(idx), cost});
}

void Search::exclude(const Point &p) {
  Index idx;
  if (snap(p, idx) && toPoint(idx) == p)
    taken.insert(std::move(idx));
}

std::optional<Trial> Search::best() const { return bestTrial; }

//===----------------------------------------------------------------------===//
// Surrogate: additive model of log-cost plus nearest-neighbour residuals
//===----------------------------------------------------------------------===//

struct Search::Model {
  bool valid = false;
  double mu = 0;
  std::vector<std::vector<double>> effect; // [knob][value index]
  std::vector<const Index *> points;
  std::vector<double> resid;
};

void Search::fitModel(Model &m) const {
  const auto &knobs = spaceDef.knobs;
  size_t first = measured.size() > kMaxModelPoints ? measured.size() - kMaxModelPoints : 0;
  double worst = -std::numeric_limits<double>::infinity();
  for (size_t i = first; i < measured.size(); ++i)
    if (measured[i].cost)
      worst = std::max(worst, std::log(*measured[i].cost));
  if (!std::isfinite(worst))
    return; // no successes: nothing to model
  std::vector<double> y;
  for (size_t i = first; i < measured.size(); ++i) {
    m.points.push_back(&measured[i].index);
    // A failure looks like a point twice as slow as the worst one.
    y.push_back(measured[i].cost ? std::log(*measured[i].cost) : worst + std::log(2.0));
  }
  size_t n = y.size();
  if (n < 3)
    return;
  m.valid = true;
  double sum = 0;
  for (double v : y)
    sum += v;
  m.mu = sum / double(n);
  m.effect.resize(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k)
    m.effect[k].assign(knobs[k].values.size(), 0.0);
  std::vector<double> fit(n, m.mu);
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    for (size_t k = 0; k < knobs.size(); ++k) {
      size_t nv = knobs[k].values.size();
      std::vector<double> sumR(nv, 0.0), cnt(nv, 0.0);
      std::vector<double> &e = m.effect[k];
      for (size_t i = 0; i < n; ++i) {
        uint32_t v = (*m.points[i])[k];
        sumR[v] += y[i] - fit[i] + e[v]; // residual without this knob's effect
        cnt[v] += 1;
      }
      std::vector<double> ne(nv);
      for (size_t v = 0; v < nv; ++v) {
        double num = 0, den = kRidge;
        for (int d = -2; d <= 2; ++d) {
          int64_t u = int64_t(v) + d;
          if (u < 0 || u >= int64_t(nv))
            continue;
          double w = d == 0 ? 1.0 : (d == 1 || d == -1) ? kSmooth1 : kSmooth2;
          num += w * sumR[u];
          den += w * cnt[u];
        }
        ne[v] = num / den;
      }
      for (size_t i = 0; i < n; ++i) {
        uint32_t v = (*m.points[i])[k];
        fit[i] += ne[v] - e[v];
      }
      e = std::move(ne);
    }
  }
  m.resid.resize(n);
  for (size_t i = 0; i < n; ++i)
    m.resid[i] = y[i] - fit[i];
}

double Search::predict(const Model &m, const Index &idx) const {
  if (!m.valid)
    return 0;
  const auto &knobs = spaceDef.knobs;
  double additive = m.mu;
  for (size_t k = 0; k < idx.size(); ++k)
    additive += m.effect[k][idx[k]];
  // The kNeighbours nearest measured points by normalised ordinal distance.
  std::pair<double, double> near[kNeighbours]; // (distance, residual)
  size_t have = 0;
  for (size_t i = 0; i < m.points.size(); ++i) {
    const Index &p = *m.points[i];
    double d = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      size_t span = knobs[k].values.size() - 1;
      if (span)
        d += double(idx[k] > p[k] ? idx[k] - p[k] : p[k] - idx[k]) / double(span);
    }
    if (have < kNeighbours) {
      near[have++] = {d, m.resid[i]};
    } else {
      auto worst = std::max_element(near, near + have);
      if (d < worst->first)
        *worst = {d, m.resid[i]};
    }
  }
  double num = 0, den = kPriorWeight;
  for (size_t i = 0; i < have; ++i) {
    double w = 1.0 / (near[i].first + 0.05);
    num += w * near[i].second;
    den += w;
  }
  return additive + num / den;
}

//===----------------------------------------------------------------------===//
// Breeding
//===----------------------------------------------------------------------===//

void Search::mutate(Index &idx) {
  const auto &knobs = spaceDef.knobs;
  std::vector<size_t> movable;
  for (size_t k = 0; k < knobs.size(); ++k)
    if (knobs[k].values.size() > 1)
      movable.push_back(k);
  if (movable.empty())
    return;
  int changes = unit() < kOneKnob ? 1 : 2;
  for (int c = 0; c < changes; ++c) {
    size_t k = movable[below(movable.size())];
    int64_t n = int64_t(knobs[k].values.size());
    int64_t v = idx[k];
    if (unit() < kNeighbour) {
      int64_t step = unit() < kDoubleStep ? 2 : 1;
      if (next() & 1)
        step = -step;
      int64_t to = v + step;
      if (to < 0 || to >= n)
        to = v - step; // reflect at the ends of the list
      v = std::clamp<int64_t>(to, 0, n - 1);
    } else {
      // A different value, uniformly.
      int64_t r = int64_t(below(uint64_t(n - 1)));
      v = r >= v ? r + 1 : r;
    }
    idx[k] = uint32_t(v);
  }
}

std::vector<Search::Index> Search::breed(size_t want, const std::vector<size_t> &population) {
  std::vector<Index> pool;
  std::set<Index> inPool;
  auto tournament = [&]() {
    // population is sorted best first: the smallest position wins.
    size_t winner = population.size();
    for (size_t i = 0; i < kTournament; ++i)
      winner = std::min<size_t>(winner, below(population.size()));
    return population[winner];
  };
  for (size_t attempts = 20 * want; pool.size() < want && attempts > 0; --attempts) {
    Index child;
    if (population.size() >= 2 && unit() < kCrossover) {
      const Index &a = measured[tournament()].index;
      const Index &b = measured[tournament()].index;
      child = a;
      for (size_t k = 0; k < child.size(); ++k)
        if (next() & 1)
          child[k] = b[k];
      if (unit() < kMutateAfterCrossover || taken.count(child))
        mutate(child);
    } else {
      child = measured[tournament()].index;
      mutate(child);
    }
    if (!inPool.count(child) && isFree(child)) {
      inPool.insert(child);
      pool.push_back(std::move(child));
    }
  }
  return pool;
}

//===----------------------------------------------------------------------===//
// Proposals
//===----------------------------------------------------------------------===//

std::vector<Point> Search::propose(size_t n) {
  std::vector<Index> chosen;
  auto take = [&](Index idx) {
    taken.insert(idx);
    chosen.push_back(std::move(idx));
  };

  // Seeds first, even once the space is otherwise exhausted (they are then
  // taken and skipped anyway).
  while (chosen.size() < n && nextSeed < pendingSeeds.size()) {
    Index s = pendingSeeds[nextSeed++];
    if (isFree(s))
      take(std::move(s));
  }

  if (chosen.size() < n && !exhausted) {
    size_t remaining = n - chosen.size();
    // The population: the best measured points, best first.
    std::vector<size_t> ok;
    for (size_t i = 0; i < measured.size(); ++i)
      if (measured[i].cost)
        ok.push_back(i);
    // Ties go to the earlier measurement (std::sort with a total order is
    // deterministic).
    std::sort(ok.begin(), ok.end(), [&](size_t a, size_t b) {
      return std::make_pair(*measured[a].cost, a) < std::make_pair(*measured[b].cost, b);
    });
    size_t popSize = std::min(ok.size(), std::clamp<size_t>(ok.size() / 4, 8, 32));
    ok.resize(popSize);

    size_t early = std::max<size_t>(4, 2 * spaceDef.knobs.size());
    double explore = popSize == 0 ? 1.0 : measured.size() < early ? kExploreEarly : kExplore;
    size_t numRandom = 0;
    for (size_t i = 0; i < remaining; ++i)
      if (unit() < explore)
        ++numRandom;
    size_t numBred = remaining - numRandom;

    if (numBred > 0) {
      std::vector<Index> pool = breed(std::max(kMinPool, kPoolPerSlot * numBred), ok);
      if (pool.size() > numBred) {
        Model model;
        fitModel(model);
        std::vector<std::pair<double, size_t>> ranked;
        for (size_t i = 0; i < pool.size(); ++i)
          ranked.push_back({predict(model, pool[i]), i});
        std::sort(ranked.begin(), ranked.end()); // (prediction, pool position)
        std::vector<Index> best;
        for (size_t i = 0; i < numBred; ++i)
          best.push_back(std::move(pool[ranked[i].second]));
        pool = std::move(best);
      }
      for (Index &c : pool)
        take(std::move(c));
      numRandom += numBred - pool.size(); // breeding fell short: explore instead
    }

    for (size_t i = 0; i < numRandom; ++i) {
      Index r;
      if (!randomFree(r, kRandomAttempts)) {
        // Few free points left (or few legal ones): enumerate small spaces,
        // try harder at random in large ones.
        size_t want = numRandom - i;
        std::vector<Index> rest;
        if (spaceSize <= kMaxEnumerate) {
          enumerateFree(want, rest);
        } else {
          for (size_t j = 0; j < want && randomFree(r, kLastRandomAttempts); ++j)
            take(std::move(r));
        }
        for (Index &x : rest)
          take(std::move(x));
        break;
      }
      take(std::move(r));
    }
  }

  std::vector<Point> out;
  out.reserve(chosen.size());
  for (const Index &idx : chosen)
    out.push_back(toPoint(idx));
  return out;
}
