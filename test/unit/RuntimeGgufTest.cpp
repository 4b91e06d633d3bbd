//===- RuntimeGgufTest.cpp - libxfrt GGUF validation, metadata, dequantization ===//
#include "RuntimeUnitTest.h"
#include "GgufTestFiles.h"

#include "xfrt/DType.h"
#include "xfrt/Gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

using namespace xfrt;
using namespace xfrt::test;

namespace {

constexpr uint32_t kTypeF32 = 0, kTypeF16 = 1, kTypeQ4_0 = 2, kTypeQ4_1 = 3, kTypeQ8_0 = 8,
                   kTypeQ5_K = 13, kTypeBF16 = 30, kTypeIQ2_XXS = 16;

Bytes floatData(const std::vector<float> &v) {
  Bytes b;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    putLE(b, bits, 4);
  }
  return b;
}

// A valid file: metadata of each kind, and an F32 [2, 3] matrix (ne = {3, 2}), a Q8_0 row,
// a Q4_0 row and a Q4_1 row, each tensor at a multiple of 32.
GgufParts validParts() {
  GgufParts p;
  p.kvs = {kvString("general.architecture", "llama"),
           kvU32("llama.block_count", 30),
           kvF32("llama.attention.layer_norm_rms_epsilon", 1e-5f),
           kvBool("tokenizer.ggml.add_bos_token", false),
           kvStringArray("tokenizer.ggml.tokens", {"a", "b", "\xC4\xA0the"}),
           kvI32Array("tokenizer.ggml.token_type", {1, 3, -7})};
  p.data = floatData({1, 2, 3, 4, 5, 6}); // 24 bytes
  p.data.resize(32);
  Bytes q8 = {0x00, 0x3C}; // d = 1.0
  for (int j = 0; j < 32; ++j)
    q8.push_back(uint8_t(int8_t(j - 16)));
  p.data.insert(p.data.end(), q8.begin(), q8.end()); // [32, 66)
  p.data.resize(96);
  Bytes q4 = {0x00, 0x38}; // d = 0.5
  for (int j = 0; j < 16; ++j)
    q4.push_back(uint8_t(j | ((15 - j) << 4)));
  p.data.insert(p.data.end(), q4.begin(), q4.end()); // [96, 114)
  p.data.resize(128);
  Bytes q41 = {0x00, 0x40, 0x00, 0xBC}; // d = 2, m = -1
  for (int j = 0; j < 16; ++j)
    q41.push_back(uint8_t(j | (j << 4)));
  p.data.insert(p.data.end(), q41.begin(), q41.end()); // [128, 148)
  p.tensors = {{"a", kTypeF32, {3, 2}, 0},
               {"q8", kTypeQ8_0, {32}, 32},
               {"q4", kTypeQ4_0, {32}, 96},
               {"q41", kTypeQ4_1, {32}, 128}};
  return p;
}

Expected<GgufHeader> parseBytes(const Bytes &b) { return parseGguf(b.data(), b.size(), "f.gguf"); }

// The error of parsing `p`; fails the test when it parses.
std::string errorOf(const GgufParts &p) {
  Expected<GgufHeader> h = parseBytes(buildGguf(p));
  EXPECT_FALSE(h) << "accepted";
  EXPECT_EQ(h.message().find('\n'), std::string::npos) << h.message();
  EXPECT_EQ(h.message().rfind("f.gguf: ", 0), 0u) << h.message();
  return h ? std::string() : h.message();
}

TEST(RuntimeGguf, ValidFile) {
  Bytes b = buildGguf(validParts());
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ(h->version, 3u);
  EXPECT_EQ(h->alignment, 32u);
  EXPECT_EQ(h->dataStart % 32, 0u);
  EXPECT_EQ(h->dataSize, 148u);
  ASSERT_EQ(h->metadata.size(), 6u);
  ASSERT_EQ(h->tensors.size(), 4u);
  const GgufTensor &a = h->tensors[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.numel, 6);
  EXPECT_EQ(a.bytes, 24u);
  EXPECT_EQ(a.data, b.data() + h->dataStart);
  EXPECT_EQ(h->findTensor("q41")->bytes, 20u);
  EXPECT_EQ(h->findTensor("q41")->data, b.data() + h->dataStart + 128);
  EXPECT_EQ(h->findTensor("nope"), nullptr);
}

TEST(RuntimeGguf, TypedMetadata) {
  Bytes b = buildGguf(validParts());
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ(*h->getString("general.architecture"), "llama");
  EXPECT_EQ(*h->getU32("llama.block_count"), 30u);
  EXPECT_EQ(*h->getI64("llama.block_count"), 30);
  EXPECT_EQ(*h->getF32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_FALSE(*h->getBool("tokenizer.ggml.add_bos_token"));
  Expected<std::vector<std::string_view>> tokens = h->getStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  EXPECT_EQ(*tokens, (std::vector<std::string_view>{"a", "b", "\xC4\xA0the"}));
  EXPECT_EQ(*h->getI32Array("tokenizer.ggml.token_type"), (std::vector<int32_t>{1, 3, -7}));

  Expected<uint32_t> missing = h->getU32("llama.context_length");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message(), "f.gguf: metadata 'llama.context_length' is missing (expected an "
                               "unsigned 32-bit integer)");
  Expected<uint32_t> wrong = h->getU32("general.architecture");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.message(), "f.gguf: metadata 'general.architecture' is string \"llama\", not an "
                             "unsigned 32-bit integer");
  EXPECT_CONTAINS(h->getF32("llama.block_count").message(), "is u32 30, not a float");
  EXPECT_CONTAINS(h->getString("tokenizer.ggml.tokens").message(),
                  "is array of 3 string, not a string");
  EXPECT_CONTAINS(h->getI32Array("tokenizer.ggml.tokens").message(), "not an array of integers");
  EXPECT_CONTAINS(h->getStringArray("llama.block_count").message(), "not an array of strings");
}

TEST(RuntimeGguf, IntegerRanges) {
  GgufParts p;
  Bytes neg;
  putLE(neg, uint32_t(-5), 4);
  Bytes big;
  putLE(big, uint64_t(1) << 40, 8);
  p.kvs = {kvRaw("neg", kI32, neg), kvRaw("big", kU64, big)};
  Bytes b = buildGguf(p);
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ(*h->getI64("neg"), -5);
  EXPECT_CONTAINS(h->getU32("neg").message(), "'neg' is i32 -5, not an unsigned 32-bit integer");
  EXPECT_EQ(*h->getI64("big"), int64_t(1) << 40);
  EXPECT_CONTAINS(h->getU32("big").message(), "is u64 1099511627776, not");
}

TEST(RuntimeGguf, Dequantize) {
  Bytes b = buildGguf(validParts());
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  Expected<AlignedBuffer> a = dequantizeTensor(*h, *h->findTensor("a"));
  ASSERT_TRUE(a) << a.message();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(a->floats()[i], float(i + 1));
  Expected<AlignedBuffer> q8 = dequantizeTensor(*h, *h->findTensor("q8"));
  ASSERT_TRUE(q8);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(q8->floats()[j], float(j - 16)) << j;
  // Q4_0: low nibble j → element j, high nibble 15 - j → element j + 16; (q - 8) · 0.5.
  Expected<AlignedBuffer> q4 = dequantizeTensor(*h, *h->findTensor("q4"));
  ASSERT_TRUE(q4);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(q4->floats()[j], float(j - 8) * 0.5f) << j;
    EXPECT_EQ(q4->floats()[j + 16], float(7 - j) * 0.5f) << j;
  }
  // Q4_1: q · 2 + (-1), both nibbles j.
  Expected<AlignedBuffer> q41 = dequantizeTensor(*h, *h->findTensor("q41"));
  ASSERT_TRUE(q41);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(q41->floats()[j], float(2 * j - 1)) << j;
    EXPECT_EQ(q41->floats()[j + 16], float(2 * j - 1)) << j;
  }
  std::vector<uint16_t> bf(32);
  ASSERT_TRUE(dequantizeToBf16(GgmlType::Q4_1, h->findTensor("q41")->data, 32, bf.data()));
  EXPECT_EQ(bfloat16ToFloat(bf[5]), 9.0f);
}

TEST(RuntimeGguf, HalfAndBfloat16) {
  GgufParts p;
  p.data = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x00, 0x7C}; // f16 1, -2, 2^-24, inf
  p.data.resize(32);
  putLE(p.data, 0x3FC0, 2); // bf16 1.5
  putLE(p.data, 0xC040, 2); // bf16 -3
  p.tensors = {{"h", kTypeF16, {4}, 0}, {"bf", kTypeBF16, {2}, 32}};
  Bytes b = buildGguf(p);
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  Expected<AlignedBuffer> half = dequantizeTensor(*h, h->tensors[0]);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->floats()[0], 1.0f);
  EXPECT_EQ(half->floats()[1], -2.0f);
  EXPECT_EQ(half->floats()[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half->floats()[3]));
  Expected<AlignedBuffer> bf = dequantizeTensor(*h, h->tensors[1]);
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->floats()[0], 1.5f);
  EXPECT_EQ(bf->floats()[1], -3.0f);
}

TEST(RuntimeGguf, UnsupportedTypeParsesButDoesNotDequantize) {
  GgufParts p;
  p.data.assign(66, 0);
  p.tensors = {{"k", kTypeIQ2_XXS, {256}, 0}};
  Bytes b = buildGguf(p);
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ(h->tensors[0].bytes, 66u);
  Expected<AlignedBuffer> d = dequantizeTensor(*h, h->tensors[0]);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.message(), "f.gguf: tensor 'k': cannot dequantize tensor type IQ2_XXS (supported: "
                         "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, "
                         "Q5_K, Q6_K, IQ4_XS)");
}

TEST(RuntimeGguf, MagicAndVersion) {
  Bytes b = buildGguf(validParts());
  b[0] = 'X';
  EXPECT_EQ(parseBytes(b).message(),
            "f.gguf: not a GGUF file (the first 4 bytes are not \"GGUF\")");
  GgufParts p = validParts();
  p.version = 1;
  EXPECT_EQ(errorOf(p), "f.gguf: GGUF version 1 is not supported (only 2 and 3)");
  p.version = 4;
  EXPECT_CONTAINS(errorOf(p), "version 4 is not supported");
  p.version = 0x03000000; // a big-endian file read as little-endian
  EXPECT_CONTAINS(errorOf(p), "big-endian GGUF files are not supported");
  p.version = 2;
  EXPECT_TRUE(parseBytes(buildGguf(p)));
}

TEST(RuntimeGguf, EveryTruncationFails) {
  Bytes b = buildGguf(validParts());
  for (size_t n = 0; n < b.size(); ++n) {
    Expected<GgufHeader> h = parseGguf(b.data(), n, "f.gguf");
    ASSERT_FALSE(h) << "a " << n << "-byte prefix parsed";
    EXPECT_EQ(h.message().rfind("f.gguf: ", 0), 0u) << h.message();
  }
  Expected<GgufHeader> h = parseGguf(b.data(), b.size() - 1, "f.gguf");
  EXPECT_EQ(h.message(), "f.gguf: tensor 'q41': offset 128 + 20 bytes of Q4_1[32] runs past the "
                         "end of the 147-byte data section (truncated?)");
  h = parseGguf(b.data(), 20, "f.gguf");
  EXPECT_EQ(h.message(),
            "f.gguf: kv_count at byte 16 runs past the end of the 20-byte file (truncated?)");
}

TEST(RuntimeGguf, LyingCounts) {
  Bytes b = buildGguf(validParts());
  Bytes huge = b;
  huge[8 + 7] = 0x10; // tensor_count ~ 2^60
  EXPECT_CONTAINS(parseBytes(huge).message(),
                  "f.gguf: tensor_count 1152921504606846980 cannot fit");
  huge = b;
  huge[16 + 4] = 0x01; // kv_count = 2^32 + 6
  EXPECT_CONTAINS(parseBytes(huge).message(), "f.gguf: kv_count 4294967302 cannot fit");
  // More key-values than the file holds: the parser runs into the tensor infos and then off
  // the end; some field fails, never a crash.
  huge = b;
  huge[16] = 7;
  EXPECT_FALSE(parseBytes(huge));
}

TEST(RuntimeGguf, HugeStringsAndArrays) {
  GgufParts p = validParts();
  Bytes value;
  putLE(value, uint64_t(1) << 62, 8);
  p.kvs.push_back(kvRaw("general.name", kString, value));
  EXPECT_CONTAINS(errorOf(p), "f.gguf: metadata 'general.name': string of 4611686018427387904 "
                              "bytes at byte");
  EXPECT_CONTAINS(errorOf(p), "runs past the end of the");

  p = validParts();
  value.clear();
  putLE(value, kString, 4);
  putLE(value, uint64_t(1) << 61, 8);
  p.kvs.push_back(kvRaw("tokenizer.ggml.merges", kArray, value));
  EXPECT_CONTAINS(errorOf(p), "f.gguf: metadata 'tokenizer.ggml.merges': array of "
                              "2305843009213693952 string at byte");

  p = validParts();
  value.clear();
  putLE(value, kString, 4);
  putLE(value, 2, 8);
  putString(value, "ok");
  putLE(value, 1000000, 8); // the second string's length
  p.kvs.push_back(kvRaw("tokenizer.ggml.merges", kArray, value));
  EXPECT_CONTAINS(errorOf(p), "metadata 'tokenizer.ggml.merges': string 1 of 1000000 bytes");

  p = validParts();
  p.kvs.insert(p.kvs.begin(), kvRaw(std::string(70000, 'k'), kU8, Bytes{1}));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata key 0 of 7: key of 70000 bytes exceeds the limit of "
                        "65536");
}

TEST(RuntimeGguf, BadValues) {
  GgufParts p = validParts();
  p.kvs.push_back(kvRaw("x", 13, Bytes{0, 0, 0, 0}));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'x': unknown value type 13");
  p = validParts();
  p.kvs.push_back(kvRaw("x", kBool, Bytes{2}));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'x': bool value 2 is neither 0 nor 1");
  p = validParts();
  Bytes nested;
  putLE(nested, kArray, 4);
  putLE(nested, 0, 8);
  p.kvs.push_back(kvRaw("x", kArray, nested));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'x': arrays of arrays are not supported");
  p = validParts();
  Bytes badElement;
  putLE(badElement, 77, 4);
  putLE(badElement, 0, 8);
  p.kvs.push_back(kvRaw("x", kArray, badElement));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'x': unknown array element type 77");
  p = validParts();
  p.kvs.push_back(kvU32("llama.block_count", 2));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'llama.block_count': duplicate key");
  p = validParts();
  p.kvs.push_back(kvRaw("", kU8, Bytes{0}));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata key 6 of 7: key is empty");
}

TEST(RuntimeGguf, Alignment) {
  GgufParts p = validParts();
  p.kvs.push_back(kvU32("general.alignment", 64));
  p.alignment = 64;
  p.tensors = {{"a", kTypeF32, {3, 2}, 0}, {"q8", kTypeQ8_0, {32}, 64}};
  p.data.resize(64);
  p.data.resize(64 + 34, 0);
  Bytes b = buildGguf(p);
  Expected<GgufHeader> h = parseBytes(b);
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ(h->alignment, 64u);
  EXPECT_EQ(h->dataStart % 64, 0u);

  p.tensors[1].offset = 32; // a multiple of 32, not of 64
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'q8': offset 32 is not a multiple of the alignment 64");
  p = validParts();
  p.kvs.push_back(kvU32("general.alignment", 48));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'general.alignment': alignment 48 is not a power of two");
  p = validParts();
  p.kvs.push_back(kvU32("general.alignment", 0));
  EXPECT_CONTAINS(errorOf(p), "alignment 0 is not a power of two");
  p = validParts();
  p.kvs.push_back(kvString("general.alignment", "32"));
  EXPECT_EQ(errorOf(p), "f.gguf: metadata 'general.alignment': is string \"32\", not a u32");
}

TEST(RuntimeGguf, BadTensorInfos) {
  GgufParts p = validParts();
  p.tensors[1].name = std::string(64, 'n');
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 1 of 4: name of 64 bytes exceeds the limit of 63");
  p = validParts();
  p.tensors[1].name = "";
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 1 of 4: name is empty");
  p = validParts();
  p.tensors[2].name = "q8";
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'q8': duplicate tensor name");
  p = validParts();
  p.tensors[0].dims = {1, 1, 1, 1, 6};
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'a': n_dims 5 exceeds ggml's limit of 4");
  p = validParts();
  p.tensors[0].dims = {3, uint64_t(-2)};
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'a': ne[1] = 18446744073709551614 is negative");
  p = validParts();
  p.tensors[0].dims = {uint64_t(1) << 40, uint64_t(1) << 30};
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'a': dims [1099511627776, 1073741824] overflow");
  p = validParts();
  p.tensors[0].dims = {uint64_t(1) << 62};
  EXPECT_CONTAINS(errorOf(p), "f.gguf: tensor 'a': dims [4611686018427387904] overflow");
  p = validParts();
  p.tensors[0].type = 31;
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'a': unknown tensor type 31");
  p = validParts();
  p.tensors[1].dims = {16, 2};
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'q8': ne[0] = 16 is not a multiple of Q8_0's block of 32");
}

TEST(RuntimeGguf, BadOffsets) {
  GgufParts p = validParts();
  p.tensors[1].offset = 0; // on top of 'a'
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'q8': bytes [0, 34) overlap tensor 'a' [0, 24)");
  p = validParts();
  p.tensors[3].offset = 160;
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'q41': offset 160 + 20 bytes of Q4_1[32] runs past the "
                        "end of the 148-byte data section (truncated?)");
  p = validParts();
  p.tensors[3].offset = uint64_t(-32);
  EXPECT_CONTAINS(errorOf(p), "f.gguf: tensor 'q41': offset 18446744073709551584 + 20 bytes");
  p = validParts();
  p.tensors[0].offset = 4;
  EXPECT_EQ(errorOf(p), "f.gguf: tensor 'a': offset 4 is not a multiple of the alignment 32");
}

TEST(RuntimeGguf, OpenMapsAndValidates) {
  std::string path = ::testing::TempDir() + "/xf-gguf-test.gguf";
  Bytes b = buildGguf(validParts());
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
  Expected<std::unique_ptr<GgufFile>> file = GgufFile::open(path);
  ASSERT_TRUE(file) << file.message();
  EXPECT_EQ((*file)->fileSize(), b.size());
  Expected<const GgufTensor *> q8 = (*file)->tensor("q8");
  ASSERT_TRUE(q8);
  EXPECT_EQ((*q8)->type, GgmlType::Q8_0);
  EXPECT_EQ((*file)->tensor("zz").message(), path + ": no tensor 'zz'");

  f = std::fopen(path.c_str(), "wb");
  std::fwrite(b.data(), 1, 40, f);
  std::fclose(f);
  file = GgufFile::open(path);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.message().rfind(path + ": ", 0), 0u) << file.message();
  std::remove(path.c_str());
  EXPECT_FALSE(GgufFile::open(path));
}

TEST(RuntimeGguf, TypeTable) {
  EXPECT_EQ(ggmlTypeInfo(kTypeQ4_1)->blockBytes, 20u);
  EXPECT_EQ(ggmlTypeInfo(kTypeQ8_0)->blockBytes, 34u);
  EXPECT_EQ(ggmlTypeInfo(kTypeQ4_0)->blockBytes, 18u);
  EXPECT_EQ(ggmlTypeInfo(kTypeF16)->blockBytes, 2u);
  EXPECT_EQ(ggmlTypeInfo(4), nullptr); // Q4_2, removed from ggml
  EXPECT_STREQ(ggmlTypeName(GgmlType::BF16), "BF16");
  float out[32];
  Status s = dequantizeToF32(GgmlType::Q8_0, nullptr, 31, out);
  EXPECT_EQ(s.message(), "31 elements of Q8_0 are not whole blocks of 32");
}

} // namespace
