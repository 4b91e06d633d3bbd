//===- RuntimeDriverTest.cpp - libxfrt runMain with in-process fake models ===//
//
// Exit codes of runMain when the generated code misbehaves (bad manifest, negative scratch,
// failing forward); the normal paths are covered end to end by test/Runtime/runtime_e2e.py.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestSupport.h"

#include "xfrt/Driver.h"
#include "xfrt/Npy.h"

#include <gtest/gtest.h>

using namespace xfrt;
using namespace xfrt::test;

namespace {

int64_t scratchResult = 64;
int32_t forwardResult = 0;
int preparedCount = 0;
bool alignedSeen = true;

int32_t prepare(void *const *params, void *const *derived) {
  ++preparedCount;
  alignedSeen &= reinterpret_cast<uintptr_t>(derived[0]) % 64 == 0 && params[0] && params[1];
  return 0;
}
int64_t scratch(int64_t, int64_t) { return scratchResult; }
int32_t forward(void *const *params, void *const *, const int32_t *tokens, int64_t l,
                const int32_t *, int64_t, float *out, void *scratchPtr) {
  alignedSeen &= reinterpret_cast<uintptr_t>(scratchPtr) % 64 == 0;
  const float *a = static_cast<const float *>(params[0]);
  for (int64_t t = 0; t < l; ++t)
    for (int v = 0; v < 5; ++v)
      out[t * 5 + v] = a[(tokens[t] + v) % 6];
  return forwardResult;
}

int run(const char *manifest, std::vector<const char *> args) {
  args.insert(args.begin(), "fake");
  ModelAbi abi{manifest, prepare, scratch, forward, nullptr};
  return runMain(int(args.size()), args.data(), abi);
}

class RuntimeDriver : public ::testing::Test {
protected:
  void SetUp() override {
    scratchResult = 64;
    forwardResult = 0;
    preparedCount = 0;
    alignedSeen = true;
  }
};

TEST_F(RuntimeDriver, RunsAndWrites) {
  TempDir dir;
  std::string out = dir.file("l.npy");
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "3", "--tokens", "1,2", "--logits-out",
                                     out.c_str(), "--threads", "2"}),
            0);
  EXPECT_EQ(preparedCount, 1);
  EXPECT_TRUE(alignedSeen);
  Expected<NpyArray> a = readNpy(out);
  ASSERT_TRUE(a) << a.message();
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 5}));
}

TEST_F(RuntimeDriver, ExitCodes) {
  EXPECT_EQ(run(testManifestJson(), {"--help"}), 0);
  EXPECT_EQ(run(testManifestJson(), {"--bogus"}), 2);
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "1", "--tokens", "9"}), 2);
  EXPECT_EQ(run("{not json", {"--help"}), 1);
  EXPECT_EQ(run(nullptr, {"--help"}), 1);
  EXPECT_EQ(run(testManifestJson(), {"--weights", "/nonexistent/w.safetensors", "--tokens", "1"}),
            1);
  forwardResult = 3;
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "1", "--tokens", "1"}), 1);
  forwardResult = 0;
  scratchResult = -1;
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "1", "--tokens", "1"}), 1);
  scratchResult = int64_t(1) << 62;
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "1", "--tokens", "1"}), 1);
}

TEST_F(RuntimeDriver, SaveOnly) {
  TempDir dir;
  std::string w = dir.file("w.safetensors");
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "1", "--save-weights", w.c_str()}), 0);
  EXPECT_EQ(preparedCount, 0);
  EXPECT_EQ(run(testManifestJson(), {"--weights", w.c_str(), "--tokens", "4,4,4,4"}), 0);
  // An output in a missing directory is a bad command line, found before any work.
  EXPECT_EQ(run(testManifestJson(), {"--random-weights", "1", "--save-weights",
                                     dir.file("no/dir.safetensors").c_str()}),
            2);
}

} // namespace
