//===- RuntimeServeLimitsTest.cpp - --serve's bounds on work and memory ---===//
//
// The per-request limits (413 naming the server's option), the KV budget's arithmetic, the
// options that set them, and KvCacheSlots' memory following the positions written.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestSupport.h"
#include "RuntimeUnitTest.h"

#include "xfrt/Cli.h"
#include "xfrt/KvCacheSlots.h"
#include "xfrt/ServeRequests.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>

using namespace xfrt;
using namespace xfrt::test;

namespace {

ServeLimits limits() {
  ServeLimits l;
  l.vocab = 50;
  l.maxTokens = 100;
  return l;
}

TEST(RuntimeServeLimits, EmbeddingTokensPerRequest) {
  ServeLimits l = limits();
  l.maxRequestTokens = 10;
  EmbeddingRequest r;
  EXPECT_FALSE(parseEmbeddingRequest(R"({"input": [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]})", l, r));
  EXPECT_EQ(r.tokens, 10);
  std::optional<RequestError> e =
      parseEmbeddingRequest(R"({"input": [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [1]]})", l, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 413);
  EXPECT_EQ(e->param, "input");
  EXPECT_CONTAINS(e->message, "--max-request-tokens 10");
  EXPECT_CONTAINS(e->message, "11 in its first 3 inputs");
  // The other refusals stay 400.
  e = parseEmbeddingRequest(R"({"input": [1, 99]})", l, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
}

TEST(RuntimeServeLimits, CompletionKvBudget) {
  ServeLimits l = limits();
  l.kvBlockBytes = 1000;
  l.kvMemoryBytes = 2500; // two blocks: 32 positions
  CompletionRequest r;
  EXPECT_FALSE(parseCompletionRequest(R"({"prompt": [1, 2], "max_tokens": 30})", l, {}, r));
  std::optional<RequestError> e =
      parseCompletionRequest(R"({"prompt": [1, 2, 3], "max_tokens": 30})", l, {}, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 413);
  EXPECT_EQ(e->param, "max_tokens");
  EXPECT_CONTAINS(e->message, "33 positions");
  EXPECT_CONTAINS(e->message, "3 blocks of 16 positions, 3000 bytes");
  EXPECT_CONTAINS(e->message, "--kv-memory 2500 bytes");
  // Without a budget any max_tokens is taken (the sequence stops at the context).
  l.kvMemoryBytes = 0;
  EXPECT_FALSE(parseCompletionRequest(R"({"prompt": [1, 2, 3], "max_tokens": 30})", l, {}, r));
  // The prompt alone over the context is a 400 naming whose positions they are.
  l.maxTokens = 2;
  l.maxTokensName = "--max-context's";
  e = parseCompletionRequest(R"({"prompt": [1, 2, 3]})", l, {}, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_CONTAINS(e->message, "more than --max-context's 2 positions");
}

TEST(RuntimeServeLimits, KvArithmetic) {
  EXPECT_EQ(kvBlocks(1), 1);
  EXPECT_EQ(kvBlocks(16), 1);
  EXPECT_EQ(kvBlocks(17), 2);
  EXPECT_EQ(kvReservedPositions(90, 1000, 100), 100); // within the context
  EXPECT_EQ(kvReservedPositions(3, 4, 100), 7);
  EXPECT_FALSE(kvBudgetRefusal(100, 64, 0));      // no budget
  EXPECT_FALSE(kvBudgetRefusal(32, 64, 128));     // two blocks fit two blocks
  EXPECT_TRUE(kvBudgetRefusal(33, 64, 128 + 63)); // three do not
}

std::string check(std::vector<const char *> args, const Manifest &m) {
  Expected<Options> o = parse(args);
  if (!o)
    return o.message();
  return checkOptions(*o, m).message();
}

TEST(RuntimeServeLimits, Options) {
  Manifest decoder = *parseManifest(testManifestJson());
  decoder.cachePositions = 64;
  Expected<Options> o =
      parse({"--serve", "--kv-memory", "2G", "--max-context", "32", "--step-tokens", "8"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->kvMemory, uint64_t(2) << 30);
  EXPECT_EQ(o->maxContext, 32);
  EXPECT_EQ(o->stepTokens, 8);
  EXPECT_EQ(parse({"--kv-memory", "1536k"})->kvMemory, uint64_t(1536) << 10);
  EXPECT_EQ(parse({"--kv-memory", "1000"})->kvMemory, uint64_t(1000));
  EXPECT_CONTAINS(parse({"--kv-memory", "2T"}).message(), "not a size in bytes");
  EXPECT_CONTAINS(parse({"--kv-memory", "0"}).message(), "not a size in bytes");
  EXPECT_CONTAINS(parse({"--max-context", "0"}).message(), "--max-context");
  EXPECT_EQ(check({"--random-weights", "1", "--serve", "--max-context", "64", "--kv-memory", "1M"},
                  decoder),
            "");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--max-context", "65"}, decoder),
                  "--max-context: 65 is more than model 'tiny''s 64 cache positions");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--step-tokens", "4"}, decoder),
                  "--step-tokens needs --serve");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--max-request-tokens", "4"}, decoder),
                  "--max-request-tokens: model 'tiny' outputs logits");
  Manifest encoder =
      *parseManifest(R"({"model":"enc","output":"hidden","vocab":9,"d_out":3,"parameters":[]})");
  EXPECT_EQ(check({"--random-weights", "1", "--serve", "--max-request-tokens", "4", "--step-tokens",
                   "64"},
                  encoder),
            "");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--kv-memory", "1M"}, encoder),
                  "--kv-memory: model 'enc' outputs hidden states");
}

// Resident pages of this process (/proc/self/statm's second field) in bytes.
int64_t residentBytes() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  long long size = 0, resident = 0;
  if (!f || std::fscanf(f, "%lld %lld", &size, &resident) != 2)
    resident = -1;
  if (f)
    std::fclose(f);
  return int64_t(resident) * int64_t(::sysconf(_SC_PAGESIZE));
}

// 16 slots of 32 MiB: 512 MiB of address space, memory only where written, returned on release.
TEST(RuntimeServeLimits, KvCacheSlotsFollowWrites) {
  constexpr int64_t kSlot = int64_t(32) << 20, kMiB = int64_t(1) << 20;
  Expected<KvCacheSlots> slots = KvCacheSlots::reserve(16, kSlot);
  ASSERT_TRUE(slots) << slots.message();
  int64_t before = residentBytes();
  ASSERT_GT(before, 0);
  char *base = static_cast<char *>(slots->data());
  for (int64_t k = 0; k < 16; ++k) // one row at the start of each slot
    std::memset(base + k * kSlot, 1, 256);
  int64_t few = residentBytes() - before;
  EXPECT_LT(few, 2 * kMiB) << "16 rows written made " << few << " bytes resident";
  std::memset(base + 3 * kSlot, 2, size_t(kSlot)); // slot 3 in full
  int64_t full = residentBytes() - before;
  EXPECT_GE(full, kSlot - kMiB);
  slots->release(3);
  int64_t released = residentBytes() - before;
  EXPECT_LT(released, 2 * kMiB) << "after release: " << released << " bytes";
  EXPECT_EQ(base[3 * kSlot + 4096], 0); // a released slot reads as zeros
  EXPECT_EQ(base[5 * kSlot], 1);        // its neighbours keep their rows
  EXPECT_FALSE(KvCacheSlots::reserve(int64_t(1) << 40, int64_t(1) << 40));
}

} // namespace
