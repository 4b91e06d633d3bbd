//===- RuntimeSafetensorsTest.cpp - libxfrt safetensors validation and loading ===//
#include "RuntimeUnitTest.h"
#include "RuntimeTestSupport.h"

#include "xfrt/Safetensors.h"
#include "xfrt/Weights.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace xfrt;
using namespace xfrt::test;

namespace {

Expected<SafetensorsHeader> parseBytes(const std::vector<uint8_t> &b) {
  return parseSafetensors(b.data(), b.size(), "f.safetensors");
}

// The error of parsing `header` + `data`; fails the test when it parses.
std::string errorOf(const std::string &header, const std::vector<uint8_t> &data) {
  Expected<SafetensorsHeader> h = parseBytes(makeSafetensors(header, data));
  EXPECT_FALSE(h) << "accepted: " << header;
  return h ? std::string() : h.message();
}

Manifest testManifest() {
  Expected<Manifest> m = parseManifest(testManifestJson());
  EXPECT_TRUE(m) << m.message();
  return *m;
}

TEST(RuntimeSafetensors, ValidHeader) {
  Expected<SafetensorsHeader> h =
      parseBytes(makeSafetensors(testHeader(), floatBytes(testValues())));
  ASSERT_TRUE(h) << h.message();
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->tensors[0].name, "a");
  EXPECT_EQ(h->tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h->tensors[1].begin, 24u);
  EXPECT_EQ(h->dataSize, 40u);
  EXPECT_EQ(h->dataStart % 8, 0u);
  ASSERT_EQ(h->metadata.size(), 1u);
  EXPECT_EQ(h->metadata[0].second, "pt");
}

TEST(RuntimeSafetensors, Truncated) {
  std::vector<uint8_t> b = makeSafetensors(testHeader(), floatBytes(testValues()));
  Expected<SafetensorsHeader> h = parseSafetensors(b.data(), 5, "f.safetensors");
  ASSERT_FALSE(h);
  EXPECT_CONTAINS(h.message(), "f.safetensors: file is 5 bytes");
  // Data cut short: the last tensor's offsets run out of the data section.
  h = parseSafetensors(b.data(), b.size() - 4, "f.safetensors");
  ASSERT_FALSE(h);
  EXPECT_CONTAINS(h.message(), "f.safetensors: tensor 'b': data_offsets [24, 40] out of range");
  // Header cut short.
  h = parseSafetensors(b.data(), 30, "f.safetensors");
  ASSERT_FALSE(h);
  EXPECT_CONTAINS(h.message(), "runs past the end");
}

TEST(RuntimeSafetensors, BadHeaderLength) {
  std::vector<uint8_t> b = makeSafetensors(testHeader(), floatBytes(testValues()));
  b[7] = 0x7f; // ~2^63
  Expected<SafetensorsHeader> h = parseBytes(b);
  ASSERT_FALSE(h);
  EXPECT_CONTAINS(h.message(), "exceeds the limit");
  b[7] = 0;
  b[0] = 0xff, b[1] = 0xff, b[2] = 0x0f; // 1 MB, inside the limit, past the end
  h = parseBytes(b);
  ASSERT_FALSE(h);
  EXPECT_CONTAINS(h.message(), "runs past the end");
}

TEST(RuntimeSafetensors, BadJson) {
  EXPECT_CONTAINS(errorOf("{\"a\": {", {}), "f.safetensors: header: invalid JSON");
  EXPECT_CONTAINS(errorOf("[1, 2]", {}), "not a JSON object");
  EXPECT_CONTAINS(errorOf("{\"a\": 3}", {}), "tensor 'a': entry is 3, not an object");
  EXPECT_CONTAINS(errorOf(R"({"a": {"dtype": "F32", "shape": [1]}})", {}),
                  "tensor 'a': entry lacks 'data_offsets'");
  EXPECT_CONTAINS(errorOf(R"({"__metadata__": {"x": 1}})", {}), "__metadata__ value");
}

TEST(RuntimeSafetensors, UnknownDtype) {
  EXPECT_CONTAINS(
      errorOf(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", {0, 0, 0, 0}),
      "f.safetensors: tensor 'a': unknown dtype \"F33\"");
}

TEST(RuntimeSafetensors, BadShape) {
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", {}),
                  "tensor 'a': shape [-1] is not a list of non-negative integers");
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}})", {}),
                  "non-negative integers");
  EXPECT_CONTAINS(
      errorOf(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", {}),
      "overflows");
  EXPECT_CONTAINS(
      errorOf(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", {}),
      "overflows");
}

TEST(RuntimeSafetensors, OffsetsOutOfRange) {
  std::vector<uint8_t> d(8);
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d),
                  "tensor 'a': data_offsets [0, 16] out of range of the 8-byte data section");
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", d),
                  "begin > end");
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", d),
                  "is not [begin, end]");
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", d),
                  "non-negative integers");
  EXPECT_CONTAINS(
      errorOf(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551616]}})",
          d),
      "non-negative integers");
}

TEST(RuntimeSafetensors, SizeMismatch) {
  EXPECT_CONTAINS(
      errorOf(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::vector<uint8_t>(8)),
      "tensor 'a': F32[3] needs 12 bytes but data_offsets [0, 8] span 8");
}

TEST(RuntimeSafetensors, Overlap) {
  std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_CONTAINS(errorOf(h, std::vector<uint8_t>(12)), "tensor 'b': data_offsets [4, 12] "
                                                        "overlap tensor 'a' [0, 8]");
  // Empty tensors may share an offset.
  std::string ok = R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                   R"("b":{"dtype":"F32","shape":[2,0],"data_offsets":[0,0]}})";
  EXPECT_TRUE(parseBytes(makeSafetensors(ok, {})));
}

TEST(RuntimeSafetensors, DuplicateTensor) {
  EXPECT_CONTAINS(errorOf(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                          R"("a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
                          {}),
                  "duplicate key");
}

TEST(RuntimeWeights, LoadsZeroCopyAndIgnoresExtras) {
  TempDir dir;
  std::string header = R"({"h.0.attn.bias":{"dtype":"U8","shape":[2,2],"data_offsets":[40,44]},)" +
                       testHeader().substr(1);
  std::vector<uint8_t> data = floatBytes(testValues());
  data.insert(data.end(), {1, 0, 1, 1});
  std::string path = dir.write("w.safetensors", makeSafetensors(header, data));
  Expected<WeightSet> w = loadWeights(path, testManifest());
  ASSERT_TRUE(w) << w.message();
  EXPECT_EQ(w->zeroCopy, 2u);
  EXPECT_FLOAT_EQ(w->params[0][5], 6);
  EXPECT_FLOAT_EQ(w->params[1][0], 0.5f);
  EXPECT_FLOAT_EQ(w->params[1][3], 8);
}

TEST(RuntimeWeights, MisalignedF32IsCopied) {
  TempDir dir;
  // "a" starts at data offset 2: not 4-byte aligned.
  std::string header = R"({"pad":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                       R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[2,26]},)"
                       R"("b":{"dtype":"F32","shape":[4],"data_offsets":[26,42]}})";
  std::vector<uint8_t> data = {9, 9};
  std::vector<uint8_t> values = floatBytes(testValues());
  data.insert(data.end(), values.begin(), values.end());
  Expected<WeightSet> w =
      loadWeights(dir.write("w.safetensors", makeSafetensors(header, data)), testManifest());
  ASSERT_TRUE(w) << w.message();
  EXPECT_EQ(w->zeroCopy, 0u);
  EXPECT_FLOAT_EQ(w->params[0][0], 1);
  EXPECT_FLOAT_EQ(w->params[1][3], 8);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->params[0]) % 64, 0u);
}

TEST(RuntimeWeights, ConvertsF16AndBF16) {
  TempDir dir;
  std::vector<float> v = testValues();
  std::vector<uint8_t> data;
  for (size_t i = 0; i < 6; ++i) {
    uint16_t h = floatToHalf(v[i]);
    data.push_back(uint8_t(h)), data.push_back(uint8_t(h >> 8));
  }
  for (size_t i = 6; i < 10; ++i) {
    uint16_t h = floatToBfloat16(v[i]);
    data.push_back(uint8_t(h)), data.push_back(uint8_t(h >> 8));
  }
  std::string header = R"({"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},)"
                       R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[12,20]}})";
  Expected<WeightSet> w =
      loadWeights(dir.write("w.safetensors", makeSafetensors(header, data)), testManifest());
  ASSERT_TRUE(w) << w.message();
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(w->params[0][i], v[i]);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(w->params[1][i], v[6 + i]);
}

TEST(RuntimeWeights, HalfConversionEdgeCases) {
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), 5.9604644775390625e-8f); // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03FF), 6.097555160522461e-05f); // largest subnormal
  EXPECT_TRUE(std::isinf(halfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_EQ(bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xC0A0), -5.0f);
  // Every half round-trips through float.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (!std::isnan(f))
      ASSERT_EQ(floatToHalf(f), h) << h;
  }
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);        // rounds to infinity
  EXPECT_EQ(floatToBfloat16(1.00390625f), 0x3F80); // tie to even
}

TEST(RuntimeWeights, MissingTensor) {
  TempDir dir;
  std::string header = R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  std::string path =
      dir.write("w.safetensors", makeSafetensors(header, floatBytes({1, 2, 3, 4, 5, 6})));
  Expected<WeightSet> w = loadWeights(path, testManifest());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.message(), path + ": tensor 'b': missing (the model needs shape [4])");
}

TEST(RuntimeWeights, WrongShape) {
  TempDir dir;
  std::string header = R"({"a":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]},)"
                       R"("b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}})";
  std::string path = dir.write("w.safetensors", makeSafetensors(header, floatBytes(testValues())));
  Expected<WeightSet> w = loadWeights(path, testManifest());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.message(),
            path + ": tensor 'a': shape [3, 2] in the file, but the model expects [2, 3]");
}

TEST(RuntimeWeights, UnsupportedDtype) {
  TempDir dir;
  std::string header = R"({"a":{"dtype":"I32","shape":[2,3],"data_offsets":[0,24]},)"
                       R"("b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]}})";
  Expected<WeightSet> w =
      loadWeights(dir.write("w.safetensors", makeSafetensors(header, floatBytes(testValues()))),
                  testManifest());
  ASSERT_FALSE(w);
  EXPECT_CONTAINS(w.message(), "tensor 'a': dtype I32 is not supported");
}

TEST(RuntimeWeights, FileErrors) {
  TempDir dir;
  Expected<WeightSet> w = loadWeights(dir.file("absent.safetensors"), testManifest());
  ASSERT_FALSE(w);
  EXPECT_CONTAINS(w.message(), "absent.safetensors: cannot open");
  w = loadWeights(dir.write("empty.safetensors", std::string()), testManifest());
  ASSERT_FALSE(w);
  EXPECT_CONTAINS(w.message(), "empty.safetensors: file is 0 bytes");
}

TEST(RuntimeWeights, ShardedIndex) {
  TempDir dir;
  dir.write("s1.safetensors",
            makeSafetensors(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})",
                            floatBytes({1, 2, 3, 4, 5, 6})));
  dir.write("s2.safetensors",
            makeSafetensors(R"({"b":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})",
                            {0, 0x3f, 0, 0x40, 0, 0x40, 0, 0x41}));
  std::string index = dir.write(
      "model.safetensors.index.json",
      std::string(R"({"metadata": {"total_size": 32}, "weight_map": {"a": "s1.safetensors", )"
                  R"("b": "s2.safetensors", "extra": "s3.safetensors"}})"));
  Expected<WeightSet> w = loadWeights(index, testManifest());
  ASSERT_TRUE(w) << w.message();
  EXPECT_EQ(w->files.size(), 2u); // s3 is never opened
  EXPECT_FLOAT_EQ(w->params[0][2], 3);
  EXPECT_FLOAT_EQ(w->params[1][0], 0.5f);
  EXPECT_FLOAT_EQ(w->params[1][3], 8);

  std::string bad =
      dir.write("bad.index.json", std::string(R"({"weight_map": {"a": "s1.safetensors"}})"));
  w = loadWeights(bad, testManifest());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.message(), bad + ": tensor 'b': missing from weight_map (the model needs shape [4])");

  std::string wrong =
      dir.write("wrong.index.json",
                std::string(R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}})"));
  w = loadWeights(wrong, testManifest());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.message(),
            dir.file("s1.safetensors") + ": tensor 'b': missing (the model needs shape [4])");

  std::string escape = dir.write(
      "escape.index.json",
      std::string(R"({"weight_map": {"a": "../s1.safetensors", "b": "s2.safetensors"}})"));
  w = loadWeights(escape, testManifest());
  ASSERT_FALSE(w);
  EXPECT_CONTAINS(w.message(), "tensor 'a': shard \"../s1.safetensors\" is not a relative");

  std::string notIndex = dir.write("x.json", std::string("{}"));
  EXPECT_FALSE(loadWeights(notIndex, testManifest()));
}

TEST(RuntimeWeights, SaveRoundTrip) {
  TempDir dir;
  Manifest m = testManifest();
  Expected<WeightSet> w = randomWeights(7, m);
  ASSERT_TRUE(w) << w.message();
  std::string path = dir.file("out.safetensors");
  ASSERT_TRUE(saveWeights(path, m, *w));
  Expected<WeightSet> back = loadWeights(path, m);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(back->zeroCopy, 2u);
  for (size_t p = 0; p < m.parameters.size(); ++p)
    for (int64_t i = 0; i < m.parameters[p].numel; ++i)
      EXPECT_EQ(back->params[p][i], w->params[p][i]);
  EXPECT_FALSE(saveWeights(dir.file("no/such/dir/x.safetensors"), m, *w));
}

} // namespace
