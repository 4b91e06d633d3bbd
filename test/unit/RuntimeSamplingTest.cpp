//===- RuntimeSamplingTest.cpp - sampling, pooling, generation options ----===//
#include "RuntimeUnitTest.h"
#include "RuntimeTestSupport.h"

#include "xfrt/Cli.h"
#include "xfrt/Embeddings.h"
#include "xfrt/Manifest.h"
#include "xfrt/Memory.h"
#include "xfrt/Sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace xfrt;
using namespace xfrt::test;

namespace {

Pcg32 rng(uint64_t seed = 1) { return Pcg32(seed, 54); }

std::map<int64_t, int> histogram(const std::vector<float> &row, SamplingOptions o, int draws,
                                 uint64_t seed = 3) {
  Pcg32 r = rng(seed);
  std::map<int64_t, int> counts;
  for (int i = 0; i < draws; ++i)
    ++counts[sampleToken(row.data(), int64_t(row.size()), o, r)];
  return counts;
}

TEST(RuntimeSampling, GreedyTiesAndNaN) {
  std::vector<float> row = {1, 5, 5, NAN, -2};
  EXPECT_EQ(argmaxToken(row.data(), 5), 1);
  std::vector<float> nanFirst = {NAN, -1, -1};
  EXPECT_EQ(argmaxToken(nanFirst.data(), 3), 1);
  std::vector<float> allNan = {NAN, NAN};
  EXPECT_EQ(argmaxToken(allNan.data(), 2), 0);
  Pcg32 r = rng();
  SamplingOptions greedy; // temperature 0
  EXPECT_EQ(sampleToken(row.data(), 5, greedy, r), 1);
  // Greedy draws nothing from the generator.
  Pcg32 a = rng(), b = rng();
  sampleToken(row.data(), 5, greedy, a);
  EXPECT_EQ(a.next(), b.next());
}

TEST(RuntimeSampling, TopKOneIsGreedy) {
  std::vector<float> row = {0.1f, 2, 2, 1.9f, -3};
  SamplingOptions o;
  o.temperature = 5;
  o.topK = 1;
  Pcg32 r = rng();
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(sampleToken(row.data(), 5, o, r), 1);
}

TEST(RuntimeSampling, TemperatureShapesTheDistribution) {
  std::vector<float> row = {0, std::log(3.0f)}; // p = 1/4, 3/4 at τ = 1
  SamplingOptions o;
  o.temperature = 1;
  auto counts = histogram(row, o, 20000);
  EXPECT_NEAR(counts[1] / 20000.0, 0.75, 0.015);
  o.temperature = 1e-3; // nearly greedy
  EXPECT_EQ(histogram(row, o, 500)[1], 500);
  o.temperature = 1e6; // nearly uniform
  EXPECT_NEAR(histogram(row, o, 20000)[1] / 20000.0, 0.5, 0.015);
}

TEST(RuntimeSampling, TopKAndTopPRestrict) {
  std::vector<float> row = {3, 2, 1, 0, 2}; // ids 1 and 4 tie
  SamplingOptions o;
  o.temperature = 1;
  o.topK = 2; // {0, 1}: the tie at 2 goes to the lower id
  for (auto &[id, n] : histogram(row, o, 2000))
    EXPECT_TRUE(id == 0 || id == 1) << id;
  o.topK = 100; // larger than the vocabulary: everything
  EXPECT_EQ(histogram(row, o, 5000).size(), 5u);
  o.topK = 0;
  // softmax(3,2,1,0,2) ≈ .521 .191 .070 .026 .191 (sorted .521 .191 .191 .070
  // .026)
  o.topP = 0.6; // .521 < .6: needs a second token, the lower-id tie (1)
  auto counts = histogram(row, o, 4000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
  o.topP = 0.5; // the first token alone
  EXPECT_EQ(histogram(row, o, 500)[0], 500);
  o.topP = 1e-9; // never empty
  EXPECT_EQ(histogram(row, o, 100)[0], 100);
  o.topP = 1;
  EXPECT_EQ(histogram(row, o, 5000).size(), 5u);
}

TEST(RuntimeSampling, NonFiniteLogitsGetNoMass) {
  std::vector<float> row = {-INFINITY, 1, NAN, 1, INFINITY};
  SamplingOptions o;
  o.temperature = 1;
  for (auto &[id, n] : histogram(row, o, 1000))
    EXPECT_TRUE(id == 1 || id == 3) << id;
  std::vector<float> none = {NAN, -INFINITY};
  Pcg32 r = rng();
  EXPECT_EQ(sampleToken(none.data(), 2, o, r), 1); // greedy's answer
}

TEST(RuntimeSampling, Deterministic) {
  std::vector<float> row(50);
  for (size_t i = 0; i < row.size(); ++i)
    row[i] = float(std::sin(double(i)));
  SamplingOptions o;
  o.temperature = 0.9;
  o.topP = 0.9;
  auto draw = [&](uint64_t seed) {
    Pcg32 r = rng(seed);
    std::vector<int64_t> ids;
    for (int i = 0; i < 40; ++i)
      ids.push_back(sampleToken(row.data(), 50, o, r));
    return ids;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(RuntimeEmbeddings, MeanClsNormalize) {
  float h[] = {1, 2, 3, 6}; // [2, 2]
  float out[2];
  poolHidden(h, 2, 2, Pooling::Mean, false, out);
  EXPECT_FLOAT_EQ(out[0], 2);
  EXPECT_FLOAT_EQ(out[1], 4);
  poolHidden(h, 2, 2, Pooling::Cls, false, out);
  EXPECT_FLOAT_EQ(out[0], 1);
  EXPECT_FLOAT_EQ(out[1], 2);
  poolHidden(h, 2, 2, Pooling::Mean, true, out);
  EXPECT_FLOAT_EQ(out[0], float(2 / std::sqrt(20.0)));
  EXPECT_FLOAT_EQ(out[1], float(4 / std::sqrt(20.0)));
  float zero[] = {0, 0};
  poolHidden(zero, 1, 2, Pooling::Mean, true, out); // no NaN for a zero vector
  EXPECT_EQ(out[0], 0);
}

TEST(RuntimeMemory, ReadsProcStatus) {
  // Read the current size first: the peak read afterwards covers it even if the process
  // grew in between (the two values come from two reads of /proc/self/status).
  int64_t now = residentBytes();
  int64_t peak = peakResidentBytes();
  EXPECT_GT(peak, 0);
  EXPECT_GE(peak, now);
  EXPECT_CONTAINS(memoryReport(1 << 20, 2 << 20), "checkpoint 1.0 MiB on disk");
  EXPECT_EQ(memoryReport(1 << 20, 2 << 20).find("when ready"), std::string::npos);
  EXPECT_CONTAINS(memoryReport(1 << 20, 2 << 20, 3 << 20), "resident when ready 3.0 MiB (VmRSS)");
}

TEST(RuntimeCliGeneration, ParsesGenerationFlags) {
  Expected<Options> o =
      parse({"--random-weights", "1", "--tokens", "1,2", "--tokens=3", "--max-new-tokens", "5",
             "--temperature", "0.7", "--top-k=3", "--top-p", "0.9", "--seed", "42", "--eos", "2",
             "--no-cache", "--print-memory"});
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->tokens, (std::vector<std::string>{"1,2", "3"}));
  EXPECT_EQ(o->maxNewTokens, 5);
  EXPECT_DOUBLE_EQ(o->sampling.temperature, 0.7);
  EXPECT_EQ(o->sampling.topK, 3);
  EXPECT_DOUBLE_EQ(o->sampling.topP, 0.9);
  EXPECT_EQ(o->samplingSeed, 42u);
  EXPECT_EQ(o->eos, 2);
  EXPECT_TRUE(o->noCache && o->printMemory && o->generating());
  EXPECT_TRUE(parse({"--eos", "none"})->noEos);
  o = parse({"--prompt", "hi", "--tokenizer", "dir"});
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->generating());
  o = parse({"--text", "a", "--text", "b", "--pool", "cls", "--normalize"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->texts.size(), 2u);
  EXPECT_EQ(o->pool, Pooling::Cls);
}

TEST(RuntimeCliGeneration, RejectsBadValues) {
  EXPECT_CONTAINS(parse({"--temperature", "-1"}).message(), "negative");
  EXPECT_CONTAINS(parse({"--temperature", "nan"}).message(), "not a finite number");
  EXPECT_CONTAINS(parse({"--temperature", "1e999"}).message(), "not a finite number");
  EXPECT_CONTAINS(parse({"--top-p", "0"}).message(), "not in (0, 1]");
  EXPECT_CONTAINS(parse({"--top-p", "1.5"}).message(), "not in (0, 1]");
  EXPECT_CONTAINS(parse({"--top-k", "0"}).message(), "not an integer in [1, 1000000]");
  EXPECT_CONTAINS(parse({"--eos", "x"}).message(), "not a token id");
  EXPECT_CONTAINS(parse({"--seed", "-3"}).message(), "not an unsigned 64-bit");
  EXPECT_CONTAINS(parse({"--pool", "max"}).message(), "not 'mean' or 'cls'");
  EXPECT_CONTAINS(parse({"--max-new-tokens", "0"}).message(), "not an integer in [1, 1000000]");
}

TEST(RuntimeCliGeneration, ChecksAgainstManifest) {
  Manifest dec = *parseManifest(
      R"({"model":"d","output":"logits","vocab":9,"d_out":9,"max_positions":8,"parameters":[]})");
  Manifest enc =
      *parseManifest(R"({"model":"e","output":"hidden","vocab":9,"d_out":3,"parameters":[]})");
  Manifest ed = *parseManifest(
      R"({"model":"ed","output":"logits","encoder_decoder":true,"vocab":9,"d_out":9,"parameters":[]})");
  auto check = [](const Manifest &m, std::vector<const char *> args) {
    args.insert(args.begin(), {"--random-weights", "1"});
    Expected<Options> o = parse(args);
    EXPECT_TRUE(o) << o.message();
    return checkOptions(*o, m).message();
  };
  EXPECT_EQ(check(dec, {"--tokens", "1", "--max-new-tokens", "3"}), "");
  EXPECT_EQ(check(dec, {"--tokens", "1", "--tokens", "2", "--logits-out", "x"}), "");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--temperature", "1"}), "needs generation");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--seed", "1"}), "needs generation");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--max-new-tokens", "3", "--logits-out", "x"}),
                  "for forward passes");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--max-new-tokens", "3", "--top-k", "3"}),
                  "need --temperature > 0");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--max-new-tokens", "3", "--eos", "9"}),
                  "out of range");
  EXPECT_CONTAINS(check(dec, {"--prompt", "hi"}), "needs a tokenizer");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--text", "hi", "--vocab", "v.txt"}),
                  "one kind of input");
  EXPECT_CONTAINS(check(dec, {"--tokenizer", "d", "--vocab", "v", "--tokens", "1"}), "not both");
  EXPECT_CONTAINS(check(dec, {"--merges", "m.txt", "--tokens", "1"}), "--merges needs --vocab");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--embeddings-out", "e"}), "outputs logits");
  EXPECT_CONTAINS(check(dec, {"--tokens", "1", "--bos", "1", "--max-new-tokens", "1"}),
                  "not an encoder-decoder");
  EXPECT_CONTAINS(check(enc, {"--tokens", "1", "--max-new-tokens", "3"}), "cannot generate");
  EXPECT_CONTAINS(check(enc, {"--tokens", "1", "--normalize"}), "needs --embeddings-out");
  EXPECT_EQ(check(enc, {"--tokens", "1", "--embeddings-out", "e", "--pool", "cls"}), "");
  EXPECT_EQ(check(ed, {"--bos", "1", "--source-tokens", "2", "--max-new-tokens", "2"}), "");
  EXPECT_CONTAINS(check(ed, {"--max-new-tokens", "2", "--source-tokens", "2"}),
                  "--tokens IDS or --bos ID");
  EXPECT_CONTAINS(check(ed, {"--tokens", "1", "--tokens", "1", "--tokens", "1", "--source-tokens",
                             "2", "--source-tokens", "3"}),
                  "2 sources for 3 target sequences");
  EXPECT_EQ(check(ed, {"--tokens", "1", "--tokens", "1", "--source-tokens", "2"}), "");
}

} // namespace
