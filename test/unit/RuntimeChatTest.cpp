//===- RuntimeChatTest.cpp - --interactive on a fake cached decoder --------===//
//
// A stand-in for generated code whose next token is 'h' after anything but 'h' and <|im_end|>
// after 'h', so every reply is "h". Its KV cache records which positions were written, and a
// cached call that starts past an unwritten position fails: the test sees exactly which tokens
// each turn runs on top of the cache.
//
//===----------------------------------------------------------------------===//
#include "GgufTestFiles.h"

#include "xfrt/Chat.h"
#include "xfrt/GgufTokenizer.h"
#include "xfrt/Weights.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace xfrt;
using namespace xfrt::test;

namespace {

constexpr int32_t kImStart = 1, kImEnd = 2, kBytes = 3, kVocab = kBytes + 256;
constexpr int32_t kH = kBytes + 'h';

struct Call {
  int64_t start, l;
  bool operator==(const Call &o) const { return start == o.start && l == o.l; }
};
std::vector<Call> calls;
int64_t cacheAsked = 0;

void nextTokenLogits(int32_t last, float *row) {
  std::fill(row, row + kVocab, 0.f);
  row[last == kH ? kImEnd : kH] = 1.f;
}

int32_t prepare(void *const *, void *const *) { return 0; }
int64_t scratchBytes(int64_t, int64_t) { return 64; }
int32_t forward(void *const *, void *const *, const int32_t *tokens, int64_t l, const int32_t *,
                int64_t, float *out, void *) {
  for (int64_t t = 0; t < l; ++t)
    nextTokenLogits(tokens[t], out + t * kVocab);
  return 0;
}
// One byte per position: 1 once written.
int64_t cacheBytes(int64_t positions) { return cacheAsked = positions; }
int32_t forwardCached(void *const *, void *const *, const int32_t *tokens, int64_t l, int64_t start,
                      float *out, void *, void *cache, int64_t positions) {
  calls.push_back({start, l});
  auto *written = static_cast<uint8_t *>(cache);
  if (positions != cacheAsked || start + l > positions)
    return 1;
  for (int64_t p = 0; p < start; ++p)
    if (!written[p])
      return 2; // an earlier position is not in this cache
  std::memset(written + start, 1, size_t(l));
  nextTokenLogits(tokens[l - 1], out);
  return 0;
}

std::string manifestJson(int positions) {
  return R"({"model": "fake-chat", "output": "logits", "encoder_decoder": false, "vocab": 259,
             "d_out": 259, "max_positions": )" +
         std::to_string(positions) + R"(, "cached": true, "cache_positions": )" +
         std::to_string(positions) + R"(, "parameters": [], "derived": [], "kernels": []})";
}

struct Outcome {
  int code;
  std::string out, err;
};

class RuntimeChat : public ::testing::Test {
protected:
  void SetUp() override {
    std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    std::vector<int32_t> types = {3, 3, 3};
    for (int b = 0; b < 256; ++b)
      tokens.push_back(byteLevelChar(b)), types.push_back(1);
    GgufParts p;
    p.kvs = {kvString("tokenizer.ggml.model", "gpt2"),
             kvString("tokenizer.ggml.pre", "gpt2"),
             kvStringArray("tokenizer.ggml.tokens", tokens),
             kvI32Array("tokenizer.ggml.token_type", types),
             kvStringArray("tokenizer.ggml.merges", {}),
             kvU32("tokenizer.ggml.eos_token_id", 2)};
    bytes_ = buildGguf(p);
    Expected<GgufHeader> h = parseGguf(bytes_.data(), bytes_.size(), "t.gguf");
    ASSERT_TRUE(h) << h.message();
    Expected<GgufTokenizer> t = loadGgufTokenizer(*h);
    ASSERT_TRUE(t) << t.message();
    tok_ = std::move(t->tokenizer);
    chat_.chatTemplate.format = ChatFormat::ChatMl;
    chat_.endOfTurn = kImEnd;
    calls.clear();
  }

  Outcome interactive(const std::string &turns, int positions,
                      std::vector<const char *> flags = {}) {
    Expected<Manifest> m = parseManifest(manifestJson(positions));
    EXPECT_TRUE(m) << m.message();
    ModelAbi abi{nullptr, prepare, scratchBytes, forward, nullptr, cacheBytes, forwardCached};
    Expected<WeightSet> w = randomWeights(1, *m);
    Expected<Session> session = Session::create(*m, abi, *w);
    flags.insert(flags.begin(), {"prog", "--random-weights", "1", "--interactive"});
    Expected<Options> o = parseCommandLine(int(flags.size()), flags.data());
    EXPECT_TRUE(o) << o.message();
    std::FILE *in = fmemopen(const_cast<char *>(turns.data()), turns.size(), "r");
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    int code = runInteractive(*o, *m, *session, *tok_, chat_, in);
    Outcome r{code, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
    std::fclose(in);
    return r;
  }

  int64_t count(const std::string &text) { return int64_t(tok_->encode(text)->size()); }

  Bytes bytes_;
  std::unique_ptr<Tokenizer> tok_;
  ChatSetup chat_;
};

TEST_F(RuntimeChat, TurnsRunOnlyTheirNewTokensOnOneCache) {
  Outcome r = interactive("hi\n\nyo\n", 2048);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "h\nh\n"); // <|im_end|> ends each reply and is not printed
  int64_t first = count("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  int64_t second = count("\n<|im_start|>user\nyo<|im_end|>\n<|im_start|>assistant\n");
  // Turn 1: the prompt, then 'h'. Turn 2 starts with the reply's <|im_end|>, which was
  // generated but not yet run, then the new turn; the blank line is no turn.
  std::vector<Call> want = {
      {0, first}, {first, 1}, {first + 1, 1 + second}, {first + 2 + second, 1}};
  EXPECT_EQ(calls, want);
  EXPECT_EQ(cacheAsked, 1024) << "the first capacity";
  EXPECT_NE(r.err.find("turn 2: 2 new tokens (stop: eos, KV cache); " + std::to_string(1 + second) +
                       " tokens run"),
            std::string::npos)
      << r.err;
}

TEST_F(RuntimeChat, WithoutCacheTheReplyIsTheSame) {
  Outcome r = interactive("hi\nyo\n", 2048, {"--no-cache"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "h\nh\n");
  EXPECT_TRUE(calls.empty());
  EXPECT_NE(r.err.find("re-running the prefix"), std::string::npos) << r.err;
}

TEST_F(RuntimeChat, TheCacheGrowsByRunningTheConversationAgain) {
  std::string longTurn(1100, 'x');
  Outcome r = interactive("hi\n" + longTurn + "\n", 4096);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "h\nh\n");
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[2].start, 0) << "a larger cache starts empty";
  EXPECT_EQ(cacheAsked, 2048);
}

TEST_F(RuntimeChat, AConversationPastTheContextIsAnError) {
  Outcome r = interactive("hi\nyo\n", 40);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "h\n");
  int64_t total = count("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nh<|im_end|>\n"
                        "<|im_start|>user\nyo<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(r.err.find("error: turn 2: the conversation has " + std::to_string(total) +
                       " tokens, more than the model's 40 positions; start a new conversation"),
            std::string::npos)
      << r.err;
}

TEST_F(RuntimeChat, EofBeforeAnyTurn) {
  Outcome r = interactive("", 2048);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(calls.empty());
}

} // namespace
