//===- RuntimeTrainingDataTest.cpp - libxfrt --data files and sampling ----===//
#include "RuntimeTestSupport.h"

#include "xfrt/Tokenizer.h"
#include "xfrt/TrainingData.h"

#include <gtest/gtest.h>

#include <set>

using namespace xfrt;
using namespace xfrt::test;

namespace {

TEST(RuntimeTrainingData, ParsesIdsWithSeparators) {
  Expected<std::vector<int32_t>> ids = parseTokenIds("1, 2,3\n\n 40\t5\r\n", 64, "d.ids");
  ASSERT_TRUE(ids) << ids.message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 2, 3, 40, 5}));
}

TEST(RuntimeTrainingData, BadIdsAreOneLineErrors) {
  EXPECT_EQ(parseTokenIds("1 2\n3 x7\n", 64, "d.ids").message(), "d.ids:2: not a token id: 'x7'");
  EXPECT_EQ(parseTokenIds("1 -2", 64, "d.ids").message(), "d.ids:1: not a token id: '-2'");
  EXPECT_EQ(parseTokenIds("\n\n64", 64, "d.ids").message(),
            "d.ids:3: token id 64 is outside the vocabulary (N_V = 64)");
  // Huge numbers neither overflow nor wrap into the vocabulary.
  EXPECT_EQ(parseTokenIds("99999999999999999999999", 64, "d.ids").message(),
            "d.ids:1: token id 99999999999999999999999 is outside the vocabulary (N_V = 64)");
  EXPECT_EQ(parseTokenIds(" ,\n", 64, "d.ids").message(), "d.ids: no token ids");
}

TEST(RuntimeTrainingData, ReadsFiles) {
  TempDir dir;
  Expected<std::vector<int32_t>> ids =
      readTrainingTokens(dir.write("a.ids", std::string("7 8 9")), nullptr, 10);
  ASSERT_TRUE(ids) << ids.message();
  EXPECT_EQ(ids->size(), 3u);
  std::string text = dir.write("a.txt", std::string("hello"));
  EXPECT_EQ(readTrainingTokens(text, nullptr, 10).message(),
            text + ": a text file needs the model's tokenizer (--tokenizer), or give token ids "
                   "in a file ending in .ids");
  EXPECT_FALSE(readTrainingTokens(dir.file("missing.ids"), nullptr, 10));
  EXPECT_FALSE(readTrainingTokens(dir.file(""), nullptr, 10)); // a directory
}

TEST(RuntimeTrainingData, TextThroughTheTokenizer) {
  TempDir dir;
  auto tokenizer = parseGpt2Tokenizer(R"({"h": 0, "e": 1, "l": 2, "o": 3, "he": 4})",
                                      "#version: 0.2\nh e\n");
  ASSERT_TRUE(tokenizer) << tokenizer.message();
  std::string text = dir.write("a.txt", std::string("hello"));
  Expected<std::vector<int32_t>> ids = readTrainingTokens(text, tokenizer->get(), 5);
  ASSERT_TRUE(ids) << ids.message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{4, 2, 2, 3}));
  EXPECT_EQ(readTrainingTokens(text, tokenizer->get(), 4).message(),
            text + ": the tokenizer gives id 4, outside the model's vocabulary (N_V = 4)");
  EXPECT_EQ(readTrainingTokens(dir.write("e.txt", std::string("")), tokenizer->get(), 5).message(),
            dir.file("e.txt") + ": the text encodes to no tokens");
}

TEST(RuntimeTrainingData, HeldOutIsTheEnd) {
  std::vector<int32_t> ids{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  TrainingSplit s = splitHeldOut(ids, 0.25);
  EXPECT_EQ(s.train, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(s.heldOut, (std::vector<int32_t>{8, 9}));
  EXPECT_TRUE(splitHeldOut(ids, 0.0).heldOut.empty());
}

TEST(RuntimeTrainingData, SamplerWindowsAreNextTokenPairs) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 20; ++i)
    ids.push_back(100 + i);
  Expected<SequenceSampler> sampler = SequenceSampler::create(ids, 4, 1, "d.ids");
  ASSERT_TRUE(sampler) << sampler.message();
  EXPECT_EQ(sampler->windows(), 16);
  std::set<int32_t> starts;
  for (int k = 0; k < 400; ++k) {
    int32_t in[4], out[4];
    sampler->next(in, out);
    for (int t = 0; t < 4; ++t) {
      EXPECT_EQ(in[t], in[0] + t);      // consecutive ids
      EXPECT_EQ(out[t], in[t] + 1);     // the next token
    }
    starts.insert(in[0]);
  }
  EXPECT_EQ(starts.size(), 16u); // every window is drawn
  EXPECT_EQ(*starts.begin(), 100);
  EXPECT_EQ(*starts.rbegin(), 115);
}

TEST(RuntimeTrainingData, SamplerIsDeterministicPerSeed) {
  std::vector<int32_t> ids(1000);
  for (int i = 0; i < 1000; ++i)
    ids[i] = i;
  auto draw = [&](uint64_t seed) {
    SequenceSampler s = SequenceSampler::create(ids, 8, seed, "d").take();
    std::vector<int32_t> starts;
    for (int k = 0; k < 32; ++k) {
      int32_t in[8], out[8];
      s.next(in, out);
      starts.push_back(in[0]);
    }
    return starts;
  };
  EXPECT_EQ(draw(5), draw(5));
  EXPECT_NE(draw(5), draw(6));
}

TEST(RuntimeTrainingData, TooShortForTheSequence) {
  std::vector<int32_t> ids{1, 2, 3};
  EXPECT_EQ(SequenceSampler::create(ids, 3, 1, "d.ids").message(),
            "d.ids: 3 tokens, but --seq-len 3 needs at least 4");
  EXPECT_EQ(SequenceSampler::create(ids, 0, 1, "d.ids").message(),
            "--seq-len must be at least 1, got 0");
}

// Alg. 12's rule: a masked position's input is the mask token and its target the id it
// held; every other input is unchanged and has target -1; a seed gives the same masks.
TEST(RuntimeTrainingData, MaskerFollowsTheRule) {
  auto mask = [](double p, uint64_t seed) {
    TokenMasker masker(p, 99, seed);
    std::vector<int32_t> in(4000), out(4000);
    for (int i = 0; i < 4000; ++i)
      in[i] = i % 50;
    masker.apply(in.data(), out.data(), 4000);
    int64_t masked = 0;
    for (int i = 0; i < 4000; ++i) {
      if (out[i] >= 0) {
        EXPECT_EQ(in[i], 99);
        EXPECT_EQ(out[i], i % 50);
        ++masked;
      } else {
        EXPECT_EQ(out[i], -1);
        EXPECT_EQ(in[i], i % 50);
      }
    }
    return std::make_pair(masked, in);
  };
  auto [n, in] = mask(0.25, 3);
  // 4000 draws at p = 0.25: σ ≈ 27; 5σ either side.
  EXPECT_NEAR(double(n), 1000.0, 140.0);
  EXPECT_EQ(mask(0.25, 3).second, in);
  EXPECT_NE(mask(0.25, 4).second, in);
  EXPECT_EQ(mask(1.0, 3).first, 4000);
}

} // namespace
