//===- TuningPathsTest.cpp - a schedule searched path by path -------------===//
//
// In: small search spaces split into paths (knobs each path reads, cases
// that take it), and a synthetic two-path kernel with noisy measurements.
// Out: checks that a path's sub-space keeps the full space's legality, that
// combinations() joins the paths' choices (one point per disagreement on a
// shared knob, each path's best measured point there), and that searching
// path by path keeps a worse decode setting from riding along with a better
// prefill one, which searching all knobs on all cases does not. No timing.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/SchedulePaths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

using namespace mlir::xf::tuning;

namespace {

// Knobs: 0 = layout (shared), 1, 2 = decode path, 3, 4 = prefill path.
SearchSpace fiveKnobs() {
  SearchSpace s;
  s.knobs = {{"layout", {1, 2, 3}},
             {"a", {0, 1, 2, 3, 4, 5}},
             {"b", {0, 1, 2, 3, 4, 5}},
             {"c", {0, 1, 2, 3, 4, 5}},
             {"d", {0, 1, 2, 3, 4, 5}}};
  // Couples the shared layout with a prefill knob (like tile_cols with
  // tile_rows in the register file).
  s.legal = [](llvm::ArrayRef<int64_t> p) { return p[0] * p[3] <= 10; };
  return s;
}

std::vector<SchedulePath> twoPaths() {
  return {{"decode", {0, 1, 2}, {0}}, {"prefill", {0, 3, 4}, {1}}};
}

TEST(TuningPaths, SubSpaceKeepsTheKnobsAndTheirLegality) {
  SearchSpace full = fiveKnobs();
  Point base{2, 0, 0, 4, 0};
  SearchSpace decode = pathSpace(full, twoPaths()[0], base);
  ASSERT_EQ(decode.knobs.size(), 3u);
  EXPECT_EQ(decode.knobs[0].name, "layout");
  EXPECT_EQ(decode.knobs[2].name, "b");
  ASSERT_TRUE(decode.legal);
  // layout 3 with the base's c = 4 is illegal in the full space.
  EXPECT_TRUE(decode.legal(Point{2, 5, 5}));
  EXPECT_FALSE(decode.legal(Point{3, 0, 0}));
  Point sub = projectPoint(twoPaths()[1], Point{3, 1, 2, 3, 4});
  EXPECT_EQ(sub, (Point{3, 3, 4}));
  EXPECT_EQ(embedPoint(twoPaths()[1], sub, base), (Point{3, 0, 0, 3, 4}));
  EXPECT_EQ(sharedKnobs(twoPaths()), (std::vector<size_t>{0}));
  EXPECT_TRUE(sharedKnobs({{"x", {1}, {0}}, {"y", {2}, {1}}}).empty());
}

TEST(TuningPaths, CombinesChoicesThatAgree) {
  SearchSpace full = fiveKnobs();
  Point base{2, 0, 0, 4, 0};
  auto points = combinations(full, twoPaths(), base, {{2, 5, 1}, {2, 3, 2}}, {{}, {}});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0], (Point{2, 5, 1, 3, 2}));
  // Without shared knobs: each path's choice, the other knobs the base's.
  std::vector<SchedulePath> apart{{"decode", {1, 2}, {0}}, {"prefill", {3}, {1}}};
  points = combinations(full, apart, base, {{4, 4}, {1}}, {{}, {}});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0], (Point{2, 4, 4, 1, 0}));
}

TEST(TuningPaths, OnePointPerDisagreementOnASharedKnob) {
  SearchSpace full = fiveKnobs();
  Point base{2, 0, 0, 4, 0};
  // decode prefers layout 1, prefill layout 3.
  std::vector<Point> choices{{1, 5, 5}, {3, 3, 1}};
  std::vector<std::vector<Trial>> measured{
      {{{1, 5, 5}, 1.0}, {{3, 2, 2}, 1.5}, {{3, 4, 4}, 1.2}, {{3, 1, 1}, std::nullopt}},
      {{{3, 3, 1}, 2.0}, {{1, 2, 2}, 2.6}, {{1, 5, 5}, 2.4}, {{2, 1, 1}, 2.2}}};
  auto points = combinations(full, twoPaths(), base, choices, measured);
  ASSERT_EQ(points.size(), 2u);
  // At layout 1: decode's choice, prefill's best measured with layout 1.
  EXPECT_EQ(points[0], (Point{1, 5, 5, 5, 5}));
  // At layout 3: decode's best measured there (the failure is no candidate).
  EXPECT_EQ(points[1], (Point{3, 4, 4, 3, 1}));
  // Nothing measured at a layout: the base's own knobs there; and a
  // combination the full space forbids is left out (layout 3, c = 4).
  points = combinations(full, twoPaths(), base, {{3, 1, 1}, {2, 2, 2}}, {{}, {}});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0], (Point{2, 0, 0, 2, 2}));
}

// A synthetic GEMM-like kernel: case 0 (decode) depends on the layout and
// knobs a, b; case 1 (prefill) on the layout and c, d, e, f with a wider
// range of costs. Measurements carry 8 % log-normal noise.
struct Synthetic {
  SearchSpace space;
  Point base{2, 2, 2, 2, 2, 2, 2};
  Synthetic() {
    std::vector<int64_t> six{0, 1, 2, 3, 4, 5};
    space.knobs = {{"layout", {0, 1, 2, 3}}, {"a", six}, {"b", six}, {"c", six},
                   {"d", six},               {"e", six}, {"f", six}};
  }
  static double sq(double x) { return x * x; }
  double decode(const Point &p) const {
    return 1.0 + 0.04 * sq(double(p[1] - 3)) + 0.03 * sq(double(p[2] - 1)) +
           0.05 * std::abs(double(p[0] - 1));
  }
  double prefill(const Point &p) const {
    return 1.0 + 0.15 * sq(double(p[3] - 4)) + 0.1 * sq(double(p[4] - 1)) +
           0.12 * sq(double(p[5] - 5)) + 0.08 * sq(double(p[6] - 0)) +
           0.05 * std::abs(double(p[0] - 2));
  }
};

TEST(TuningPaths, AWorseDecodeSettingNoLongerRidesAlong) {
  Synthetic k;
  std::vector<SchedulePath> paths{{"decode", {0, 1, 2}, {0}}, {"prefill", {0, 3, 4, 5, 6}, {1}}};
  const size_t budget = 60; // candidates timed, either way
  int jointWorseDecode = 0, splitWorseDecode = 0, splitNoWorse = 0;
  double jointLog = 0, splitLog = 0;
  const int seeds = 20;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.08);
    auto measure = [&](double truth) { return truth * std::exp(noise(rng)); };
    auto whole = [&](const Point &p) { return std::sqrt(k.decode(p) * k.prefill(p)); };

    // All knobs on both cases: the geometric mean decides.
    Search joint(k.space, seed);
    joint.seed(k.base);
    std::vector<Trial> jointTrials;
    for (size_t n = 0; n < budget;)
      for (const Point &p : joint.propose(4)) {
        Trial t{p, measure(whole(p))};
        joint.record(t), jointTrials.push_back(t), ++n;
      }
    // Settling, as the tuner does: the two best measured points and the
    // default re-measured 9 times, the lowest mean kept.
    auto settle = [&](std::vector<Trial> trials, const Point &dflt, auto truth) {
      std::sort(trials.begin(), trials.end(), [](const Trial &x, const Trial &y) {
        return x.cost.value_or(1e300) < y.cost.value_or(1e300);
      });
      std::vector<Point> finalists{dflt};
      for (size_t i = 0; i < trials.size() && finalists.size() < 3; ++i)
        if (trials[i].point != dflt)
          finalists.push_back(trials[i].point);
      Point best = dflt;
      double bestMean = 1e300;
      for (const Point &p : finalists) {
        double sum = 0;
        for (int r = 0; r < 9; ++r)
          sum += measure(truth(p));
        if (sum / 9 < bestMean)
          bestMean = sum / 9, best = p;
      }
      return best;
    };
    Point jointBest = settle(jointTrials, k.base, whole);

    // Path by path, each on its own case, the candidates shared by the
    // paths' numbers of knobs (as the tuner shares its time).
    std::vector<Point> choices;
    std::vector<std::vector<Trial>> measured(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      Search s(pathSpace(k.space, paths[i], k.base), seed + 100 * i);
      s.seed(projectPoint(paths[i], k.base));
      for (size_t n = 0; n < budget * paths[i].knobs.size() / 8;)
        for (const Point &sub : s.propose(4)) {
          Point full = embedPoint(paths[i], sub, k.base);
          Trial t{sub, measure(i == 0 ? k.decode(full) : k.prefill(full))};
          s.record(t), measured[i].push_back(t), ++n;
        }
      const Point dflt = projectPoint(paths[i], k.base);
      choices.push_back(settle(measured[i], dflt, [&](const Point &sub) {
        Point full = embedPoint(paths[i], sub, k.base);
        return i == 0 ? k.decode(full) : k.prefill(full);
      }));
    }
    std::vector<Point> finalists = combinations(k.space, paths, k.base, choices, measured);
    ASSERT_FALSE(finalists.empty());
    // The final batch: every finalist and the base measured once on both cases.
    Point splitBest = k.base;
    double bestMeasured = measure(whole(k.base));
    for (const Point &p : finalists)
      if (double m = measure(whole(p)); m < bestMeasured)
        bestMeasured = m, splitBest = p;

    jointWorseDecode += k.decode(jointBest) > k.decode(k.base);
    splitWorseDecode += k.decode(splitBest) > k.decode(k.base);
    splitNoWorse += whole(splitBest) <= whole(jointBest) * 1.001;
    jointLog += std::log(whole(jointBest));
    splitLog += std::log(whole(splitBest));
  }
  // With these seeds: worse decode split 2 vs joint 4 of 20, geometric mean
  // of the true cost 1.081 vs 1.088, split no worse in 13 of 20.
  std::cerr << "worse decode: split " << splitWorseDecode << " joint " << jointWorseDecode
            << "; geomean split " << std::exp(splitLog / seeds) << " joint "
            << std::exp(jointLog / seeds) << "; split no worse in " << splitNoWorse << "\n";
  EXPECT_LT(splitWorseDecode, jointWorseDecode)
      << "split " << splitWorseDecode << " joint " << jointWorseDecode;
  EXPECT_LE(splitWorseDecode, 2);
  EXPECT_LT(splitLog, jointLog) << "geomean split " << std::exp(splitLog / seeds) << " joint "
                                << std::exp(jointLog / seeds);
  EXPECT_GE(splitNoWorse, seeds / 2) << splitNoWorse;
}

} // namespace
