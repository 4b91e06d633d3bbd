//===- RuntimeSessionWeightsTest.cpp - where a session keeps the weights --===//
//
// Session::create (runtime/lib/Session.cpp) runs xf_prepare on the checkpoint's mapped
// tensors, then copies the parameters the manifest says the forward reads whole
// ("forward_reads": "all") into its weight region and drops their file pages; parameters read
// by rows or only by xf_prepare stay in the mapping. A fake ABI records the pointers each
// entry point gets.
//
//===----------------------------------------------------------------------===//
#include "GgufTestFiles.h"
#include "RuntimeTestSupport.h"

#include "xfrt/Session.h"
#include "xfrt/Weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace xfrt;
using namespace xfrt::test;

namespace {

constexpr int kParams = 4;
// "p" [64, 1024] (only xf_prepare), "w" [64, 1024] (all), "e" [16, 64] (rows), "g" [64] (all).
const int64_t kNumel[kParams] = {64 * 1024, 64 * 1024, 16 * 64, 64};
void *seenByPrepare[kParams], *seenByForward[kParams], *derivedSeen;

int32_t prepare(void *const *params, void *const *derived) {
  std::memcpy(seenByPrepare, params, sizeof seenByPrepare);
  derivedSeen = derived[0];
  return 0;
}
int64_t scratchBytes(int64_t, int64_t) { return 64; }
int32_t forward(void *const *params, void *const *, const int32_t *, int64_t, const int32_t *,
                int64_t, float *out, void *) {
  std::memcpy(seenByForward, params, sizeof seenByForward);
  std::memset(out, 0, 16 * sizeof(float));
  return 0;
}

Manifest manifest() {
  Expected<Manifest> m = parseManifest(R"({"model": "m", "vocab": 16, "d_out": 16,
    "parameters": [{"name": "p", "shape": [64, 1024], "forward_reads": "none"},
                   {"name": "w", "shape": [64, 1024], "forward_reads": "all"},
                   {"name": "e", "shape": [16, 64], "forward_reads": "rows"},
                   {"name": "g", "shape": [64], "forward_reads": "all"}],
    "derived": [{"bytes": 4096}]})");
  EXPECT_TRUE(m) << m.message();
  return *m;
}

// Pages of [p, p + bytes) this process has mapped (/proc/self/pagemap bit 63), or -1.
int64_t presentPages(const void *p, size_t bytes) {
  int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0)
    return -1;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  int64_t present = 0;
  for (uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
       a < reinterpret_cast<uintptr_t>(p) + bytes; a += page) {
    uint64_t entry = 0;
    if (::pread(fd, &entry, sizeof entry, off_t(a / page * sizeof entry)) != sizeof entry) {
      ::close(fd);
      return -1;
    }
    present += int64_t(entry >> 63);
  }
  ::close(fd);
  return present;
}

// The manifest's four parameters as a safetensors file of `values` (528640 bytes).
std::string writeCheckpoint(TempDir &dir, const std::vector<float> &values) {
  std::string header = R"({"p":{"dtype":"F32","shape":[64,1024],"data_offsets":[0,262144]},)"
                       R"("w":{"dtype":"F32","shape":[64,1024],"data_offsets":[262144,524288]},)"
                       R"("e":{"dtype":"F32","shape":[16,64],"data_offsets":[524288,528384]},)"
                       R"("g":{"dtype":"F32","shape":[64],"data_offsets":[528384,528640]}})";
  return dir.write("w.safetensors", makeSafetensors(header, floatBytes(values)));
}

TEST(RuntimeSessionWeights, ParametersTheForwardReadsWholeMoveIntoTheRegion) {
  TempDir dir;
  std::vector<float> values(528640 / 4);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i % 1000) - 500.0f;
  Manifest m = manifest();
  Expected<WeightSet> w = loadWeights(writeCheckpoint(dir, values), m);
  ASSERT_TRUE(w) << w.message();
  ASSERT_EQ(w->zeroCopy, size_t(kParams));
  ModelAbi abi{nullptr, prepare, scratchBytes, forward, nullptr};
  Expected<Session> s = Session::create(m, abi, *w);
  ASSERT_TRUE(s) << s.message();
  for (int j = 0; j < kParams; ++j)
    EXPECT_EQ(seenByPrepare[j], w->params[j]) << "xf_prepare reads the checkpoint, " << j;
  std::vector<float> out(16);
  ASSERT_TRUE(s->forward({1}, {}, out.data()));
  for (int j : {0, 2})
    EXPECT_EQ(seenByForward[j], w->params[j]) << "stays in the mapping: " << j;
  // Before anything reads the file again (a fault maps its neighbours too).
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  for (int j : {0, 1, 3})
    EXPECT_EQ(presentPages(w->params[j], size_t(kNumel[j]) * 4), 0) << "file pages dropped: " << j;
  EXPECT_EQ(presentPages(seenByForward[1], size_t(kNumel[1]) * 4), int64_t(kNumel[1] * 4 / page));
  for (int j : {1, 3}) {
    SCOPED_TRACE(j);
    EXPECT_NE(seenByForward[j], w->params[j]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(seenByForward[j]) % 64, 0u);
    EXPECT_GT(seenByForward[j], derivedSeen) << "in the region, after the derived buffer";
    EXPECT_EQ(std::memcmp(seenByForward[j], w->params[j], size_t(kNumel[j]) * 4), 0);
  }
}

// Parameters only xf_prepare reads are freed where the WeightSet owns them (dequantized,
// converted, random) and nulled for the forward; the others stay where they were.
TEST(RuntimeSessionWeights, ParametersOnlyPrepareReadsAreReleased) {
  Manifest m = manifest();
  Expected<WeightSet> w = randomWeights(3, m);
  ASSERT_TRUE(w) << w.message();
  std::vector<float *> before = w->params;
  ModelAbi abi{nullptr, prepare, scratchBytes, forward, nullptr};
  Expected<Session> s = Session::create(m, abi, *w);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(seenByPrepare[0], before[0]);
  EXPECT_EQ(s->releaseUnreadParameters(*w), uint64_t(kNumel[0]) * 4);
  EXPECT_EQ(w->params[0], nullptr);
  for (const AlignedBuffer &b : w->buffers)
    EXPECT_NE(b.data(), static_cast<void *>(before[0])) << "the buffer of p is gone";
  std::vector<float> out(16);
  ASSERT_TRUE(s->forward({1}, {}, out.data()));
  EXPECT_EQ(seenByForward[0], nullptr);
  for (int j = 1; j < kParams; ++j)
    EXPECT_EQ(seenByForward[j], before[j]) << j;
  EXPECT_EQ(s->releaseUnreadParameters(*w), 0u) << "a second call frees nothing";
}

// In a mapped checkpoint nothing is freed: create() already dropped the file's pages.
TEST(RuntimeSessionWeights, MappedParametersAreNotReleased) {
  TempDir dir;
  std::vector<float> values(528640 / 4, 1.0f);
  Manifest m = manifest();
  Expected<WeightSet> w = loadWeights(writeCheckpoint(dir, values), m);
  ASSERT_TRUE(w) << w.message();
  ModelAbi abi{nullptr, prepare, scratchBytes, forward, nullptr};
  Expected<Session> s = Session::create(m, abi, *w);
  ASSERT_TRUE(s) << s.message();
  std::vector<float *> before = w->params;
  EXPECT_EQ(s->releaseUnreadParameters(*w), 0u);
  EXPECT_EQ(w->params, before);
}

// Weights in memory of their own (random, converted) are not copied.
TEST(RuntimeSessionWeights, WeightsOutsideAMappedFileStay) {
  Manifest m = manifest();
  Expected<WeightSet> w = randomWeights(3, m);
  ASSERT_TRUE(w) << w.message();
  ModelAbi abi{nullptr, prepare, scratchBytes, forward, nullptr};
  Expected<Session> s = Session::create(m, abi, *w);
  ASSERT_TRUE(s) << s.message();
  std::vector<float> out(16);
  ASSERT_TRUE(s->forward({1}, {}, out.data()));
  for (int j = 0; j < kParams; ++j)
    EXPECT_EQ(seenByForward[j], w->params[j]) << j;
}

// A GGUF file's parts of a concatenation that only xf_prepare reads are dequantized straight
// into it: xf_prepare gets the loader's buffer as that derived buffer, already filled (its
// copies of the parts change nothing), and the parts and the concatenation are freed together.
std::vector<float> concatenationSeen;
void *partsSeen[3];
int32_t prepareConcatenation(void *const *params, void *const *derived) {
  std::memcpy(partsSeen, params, sizeof partsSeen);
  const float *c = static_cast<const float *>(derived[0]);
  concatenationSeen.assign(c, c + 3 * 32);
  return 0;
}

std::string writeGgufOfThree(TempDir &dir, std::vector<float> &values) {
  // "a" [2, 32], "b" [1, 32], "c" [32], float32, back to back.
  test::GgufParts parts;
  parts.tensors = {{"a", 0, {32, 2}, 0}, {"b", 0, {32, 1}, 256}, {"c", 0, {32}, 384}};
  values.resize(4 * 32);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) * 0.5f - 7.0f;
  parts.data = floatBytes(values);
  return dir.write("w.gguf", test::buildGguf(parts));
}

Manifest concatenationManifest(const char *readsOfB) {
  Expected<Manifest> m = parseManifest(std::string(R"({"model": "m", "vocab": 16, "d_out": 16,
    "parameters": [{"name": "a", "shape": [2, 32], "forward_reads": "none"},
                   {"name": "b", "shape": [1, 32], "forward_reads": ")") +
                                       readsOfB + R"("},
                   {"name": "c", "shape": [32], "forward_reads": "all"}],
    "derived": [{"bytes": 384, "forward_reads": "none", "parts": [0, 1]}, {"bytes": 64}]})");
  EXPECT_TRUE(m) << m.message();
  return *m;
}

TEST(RuntimeSessionWeights, GgufPartsAreDequantizedIntoTheirConcatenation) {
  TempDir dir;
  std::vector<float> values;
  std::string path = writeGgufOfThree(dir, values);
  Manifest m = concatenationManifest("none");
  Expected<WeightSet> w = loadWeights(path, m);
  ASSERT_TRUE(w) << w.message();
  ASSERT_EQ(w->filledDerived.size(), 2u);
  float *concatenation = w->filledDerived[0];
  ASSERT_NE(concatenation, nullptr);
  EXPECT_EQ(w->filledDerived[1], nullptr);
  EXPECT_EQ(w->params[0], concatenation);
  EXPECT_EQ(w->params[1], concatenation + 64);
  EXPECT_EQ(std::memcmp(concatenation, values.data(), 96 * sizeof(float)), 0);
  ModelAbi abi{nullptr, prepareConcatenation, scratchBytes, forward, nullptr};
  Expected<Session> s = Session::create(m, abi, *w);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(partsSeen[0], concatenation);
  EXPECT_EQ(concatenationSeen, std::vector<float>(values.begin(), values.begin() + 96));
  EXPECT_EQ(s->releaseUnreadParameters(*w), 384u) << "the parts and the concatenation, once";
  EXPECT_EQ(w->params[0], nullptr);
  EXPECT_EQ(w->params[1], nullptr);
  EXPECT_EQ(w->filledDerived[0], nullptr);
  ASSERT_NE(w->params[2], nullptr);
  EXPECT_EQ(w->params[2][31], values[127]);
}

// A part the forward reads keeps a buffer of its own; xf_prepare fills the concatenation.
TEST(RuntimeSessionWeights, GgufPartsTheForwardReadsStayApart) {
  TempDir dir;
  std::vector<float> values;
  std::string path = writeGgufOfThree(dir, values);
  Manifest m = concatenationManifest("all");
  Expected<WeightSet> w = loadWeights(path, m);
  ASSERT_TRUE(w) << w.message();
  EXPECT_EQ(w->filledDerived, std::vector<float *>(2, nullptr));
  EXPECT_EQ(std::memcmp(w->params[1], values.data() + 64, 32 * sizeof(float)), 0);
  ModelAbi abi{nullptr, prepareConcatenation, scratchBytes, forward, nullptr};
  Expected<Session> s = Session::create(m, abi, *w);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(partsSeen[0], w->params[0]);
  EXPECT_EQ(s->releaseUnreadParameters(*w), 256u) << "a alone";
  EXPECT_NE(w->params[1], nullptr);
}

// The same for a safetensors file: BF16 parts are converted into their concatenation, F32 ones
// copied there (xf_prepare would copy them), and their file pages dropped; the other F32
// parameters stay views of the mapped file.
TEST(RuntimeSessionWeights, ConvertedSafetensorsPartsGoIntoTheirConcatenation) {
  TempDir dir;
  std::vector<float> values(4 * 32);
  std::vector<uint8_t> bf16;
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = float(i) * 0.5f - 7.0f; // exact in bfloat16
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    bf16.push_back(uint8_t(bits >> 16)), bf16.push_back(uint8_t(bits >> 24));
  }
  Manifest m = concatenationManifest("none");
  auto file = [&](const char *dtype, std::vector<uint8_t> data, int width) {
    auto end = [&](int n) { return std::to_string(n * width); };
    return dir.write(
        std::string(dtype) + ".safetensors",
        makeSafetensors(
            std::string(R"({"a":{"dtype":")") + dtype + R"(","shape":[2,32],"data_offsets":[0,)" +
                end(64) + R"(]},"b":{"dtype":")" + dtype + R"(","shape":[1,32],"data_offsets":[)" +
                end(64) + "," + end(96) + R"(]},"c":{"dtype":")" + dtype +
                R"(","shape":[32],"data_offsets":[)" + end(96) + "," + end(128) + "]}}",
            data));
  };
  Expected<WeightSet> w = loadWeights(file("BF16", bf16, 2), m);
  ASSERT_TRUE(w) << w.message();
  ASSERT_NE(w->filledDerived.at(0), nullptr);
  EXPECT_EQ(w->params[0], w->filledDerived[0]);
  EXPECT_EQ(w->params[1], w->filledDerived[0] + 64);
  EXPECT_EQ(std::memcmp(w->params[0], values.data(), 96 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(w->params[2], values.data() + 96, 32 * sizeof(float)), 0);
  ASSERT_EQ(w->files.size(), 1u);
  EXPECT_EQ(presentPages(w->files[0]->data(), w->files[0]->size()), 0)
      << "every tensor converted: the file's pages dropped";
  w = loadWeights(file("F32", floatBytes(values), 4), m);
  ASSERT_TRUE(w) << w.message();
  ASSERT_NE(w->filledDerived.at(0), nullptr);
  EXPECT_EQ(w->params[1], w->filledDerived[0] + 64);
  EXPECT_EQ(std::memcmp(w->params[0], values.data(), 96 * sizeof(float)), 0);
  EXPECT_EQ(w->zeroCopy, 1u) << "c";
  EXPECT_EQ(std::memcmp(w->params[2], values.data() + 96, 32 * sizeof(float)), 0);
}

} // namespace
