//===- RuntimeNpyRandomTest.cpp - libxfrt .npy writer and random weights --===//
#include "RuntimeTestSupport.h"

#include "xfrt/Npy.h"
#include "xfrt/Random.h"
#include "xfrt/Weights.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace xfrt;
using namespace xfrt::test;

namespace {

TEST(RuntimeNpy, HeaderIsAligned) {
  for (int64_t rows : {1, 3, 1024, 123456789})
    for (int64_t cols : {1, 50257, 768}) {
      std::string h = npyHeader({rows, cols});
      EXPECT_EQ(h.size() % 64, 0u);
      EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      EXPECT_EQ(size_t(uint8_t(h[8])) | size_t(uint8_t(h[9])) << 8, h.size() - 10);
      EXPECT_EQ(h.back(), '\n');
      EXPECT_NE(h.find("'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) + ")"),
                std::string::npos);
    }
  EXPECT_NE(npyHeader({5}).find("'shape': (5,)"), std::string::npos);
}

TEST(RuntimeNpy, WriteReadBack) {
  TempDir dir;
  std::vector<float> v = {1, -2, 3.5f, INFINITY, 0, 1e-30f};
  std::string path = dir.file("x.npy");
  ASSERT_TRUE(writeNpy(path, v.data(), 2, 3));
  Expected<NpyArray> a = readNpy(path);
  ASSERT_TRUE(a) << a.message();
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->data, v);
  EXPECT_FALSE(writeNpy(dir.file("none/x.npy"), v.data(), 2, 3));
  EXPECT_FALSE(readNpy(dir.write("bad.npy", std::string("\x93NUMPY\x01\x00\xff\x00", 10))));
}

TEST(RuntimeRandom, Pcg32KnownValues) {
  // The pcg32 reference demo (pcg32-global-demo): seed 42, sequence 54.
  Pcg32 rng(42, 54);
  uint32_t expect[] = {0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e};
  for (uint32_t e : expect)
    EXPECT_EQ(rng.next(), e);
}

TEST(RuntimeRandom, NormalStatistics) {
  Pcg32 rng(1, 2);
  std::vector<float> v(100001);
  fillNormal(rng, v.data(), v.size(), 0.0f, 1.0f);
  double mean = 0, sq = 0;
  for (float x : v)
    mean += x, sq += double(x) * x;
  mean /= double(v.size());
  double var = sq / double(v.size()) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.02);
  for (float x : v)
    ASSERT_TRUE(std::isfinite(x));
}

TEST(RuntimeRandom, WeightsAreDeterministic) {
  Expected<Manifest> m = parseManifest(testManifestJson());
  ASSERT_TRUE(m);
  Expected<WeightSet> a = randomWeights(7, *m), b = randomWeights(7, *m), c = randomWeights(8, *m);
  ASSERT_TRUE(a && b && c);
  bool differs = false;
  for (size_t p = 0; p < 2; ++p)
    for (int64_t i = 0; i < m->parameters[p].numel; ++i) {
      EXPECT_EQ(a->params[p][i], b->params[p][i]);
      differs |= a->params[p][i] != c->params[p][i];
    }
  EXPECT_TRUE(differs);
  // "ones" init is near 1, "normal" near 0.
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_NEAR(a->params[1][i], 1.0f, 0.6f);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(a->params[0][i], 0.0f, 0.12f);
  // Pinned values: a change here changes every --random-weights output.
  Pcg32 rng(7, fnv1a64("a"));
  float first[2];
  fillNormal(rng, first, 2, 0.0f, 0.02f);
  EXPECT_EQ(a->params[0][0], first[0]);
  EXPECT_EQ(a->params[0][1], first[1]);
}

TEST(RuntimeRandom, StreamsIndependentOfOrder) {
  Expected<Manifest> m1 = parseManifest(
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"p","shape":[3]},{"name":"q","shape":[3]}]})");
  Expected<Manifest> m2 =
      parseManifest(R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"q","shape":[3]}]})");
  ASSERT_TRUE(m1 && m2);
  Expected<WeightSet> a = randomWeights(3, *m1), b = randomWeights(3, *m2);
  ASSERT_TRUE(a && b);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(a->params[1][i], b->params[0][i]);
}

} // namespace
