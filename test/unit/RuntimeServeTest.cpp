//===- RuntimeServeTest.cpp - --serve's options and request bodies --------===//
#include "RuntimeUnitTest.h"
#include "RuntimeTestSupport.h"

#include "xfrt/Cli.h"
#include "xfrt/ServeRequests.h"

#include <gtest/gtest.h>

using namespace xfrt;
using namespace xfrt::test;

namespace {

std::string check(std::vector<const char *> args, const Manifest &m) {
  Expected<Options> o = parse(args);
  if (!o)
    return o.message();
  return checkOptions(*o, m).message();
}

TEST(RuntimeServe, Options) {
  Manifest decoder = *parseManifest(testManifestJson());
  Expected<Options> o = parse({"--serve"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->host, "127.0.0.1"); // loopback unless asked
  EXPECT_EQ(o->port, kDefaultServePort);
  o = parse({"--serve", "--host", "0.0.0.0", "--port", "0"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->host, "0.0.0.0");
  EXPECT_EQ(o->port, 0);
  EXPECT_CONTAINS(parse({"--port", "65536"}).message(), "not a port number in [0, 65535]");
  EXPECT_CONTAINS(parse({"--port", "-1"}).message(), "not a port number");
  EXPECT_CONTAINS(parse({"--host", ""}).message(), "needs a non-empty value");
  EXPECT_EQ(check({"--random-weights", "1", "--serve", "--temperature", "0.7", "--seed", "3",
                   "--max-new-tokens", "9"}, decoder),
            "");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--port", "1"}, decoder), "--port needs --serve");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--host", "::1"}, decoder),
                  "--host needs --serve");
  EXPECT_CONTAINS(check({"--serve"}, decoder), "give --weights FILE or --random-weights SEED");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--prompt", "x"}, decoder),
                  "--serve takes its inputs from HTTP requests");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--chat"}, decoder),
                  "--chat/--interactive is not for --serve");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--no-cache"}, decoder),
                  "--no-cache is not for --serve");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--eos", "5"}, decoder),
                  "--eos: token id 5 is out of range [0, 5)");
  Manifest encoder = *parseManifest(
      R"({"model":"enc","output":"hidden","vocab":9,"d_out":3,"parameters":[]})");
  EXPECT_EQ(check({"--random-weights", "1", "--serve", "--pool", "cls", "--normalize"}, encoder),
            "");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve", "--seed", "1"}, encoder),
                  "are for decoders");
  Manifest seq2seq = *parseManifest(
      R"({"model":"ed","output":"logits","encoder_decoder":true,"vocab":9,"d_out":3,"parameters":[]})");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--serve"}, seq2seq), "is an encoder-decoder");
}

ServeLimits limits() {
  ServeLimits l;
  l.vocab = 50;
  l.maxTokens = 6;
  return l;
}

TEST(RuntimeServe, CompletionDefaultsAndOverrides) {
  CompletionDefaults d;
  d.maxTokens = 7;
  d.sampling.temperature = 0.5;
  d.seed = 11;
  CompletionRequest r;
  ASSERT_FALSE(parseCompletionRequest(R"({"prompt": [1, 2]})", limits(), d, r));
  EXPECT_EQ(r.prompt, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r.maxTokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.seed, 11u);
  EXPECT_FALSE(r.stream);
  ASSERT_FALSE(parseCompletionRequest(
      R"({"prompt": [49], "max_tokens": 3, "temperature": 0, "seed": 4, "stream": true,
          "model": "anything", "n": 1, "echo": false, "logprobs": null, "top_p": null})",
      limits(), d, r));
  EXPECT_EQ(r.maxTokens, 3);
  EXPECT_EQ(r.sampling.temperature, 0);
  EXPECT_EQ(r.seed, 4u);
  EXPECT_TRUE(r.stream);
  // Defaults that ask for top-k sampling are checked together with the request's temperature.
  d.sampling.topK = 5;
  std::optional<RequestError> e =
      parseCompletionRequest(R"({"prompt": [1], "temperature": 0})", limits(), d, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "top_k");
}

TEST(RuntimeServe, CompletionErrorsNameTheParameter) {
  struct Case {
    const char *body, *param, *message;
  } cases[] = {
      {"", "", "not valid JSON"},
      {"{\"prompt\": [1]} x", "", "not valid JSON"},
      {"\"text\"", "", "must be a JSON object"},
      {R"({"prompt": [1], "prompt": [2]})", "", "duplicate key"},
      {R"({})", "prompt", "prompt is required"},
      {R"({"prompt": [0, 1, 2, 3, 4, 5, 6]})", "prompt", "7 tokens, more than the model's 6"},
      {R"({"prompt": [50]})", "prompt", "prompt[0]: 50 is not a token id in [0, 50)"},
      {R"({"prompt": [true]})", "prompt", "is not a token id"},
      {R"({"prompt": [[1]]})", "prompt", "one prompt per request"},
      {R"({"prompt": "hi"})", "prompt", "the server has no tokenizer"},
      {R"({"prompt": [1], "max_tokens": 1000001})", "max_tokens", "[1, 1000000]"},
      {R"({"prompt": [1], "max_tokens": 2.0})", "max_tokens", "must be an integer"},
      {R"({"prompt": [1], "temperature": 1, "top_k": 51})", "top_k", "[0, 50]"},
      {R"({"prompt": [1], "temperature": 1, "top_p": 0})", "top_p", "(0, 1]"},
      {R"({"prompt": [1], "seed": 1e3})", "seed", "must be an integer"},
      {R"({"prompt": [1], "seed": 9223372036854775808})", "seed", "must be an integer"},
      {R"({"prompt": [1], "echo": true})", "echo", "not supported"},
      {R"({"prompt": [1], "logprobs": 2})", "logprobs", "not supported"},
      {R"({"prompt": [1], "stop": "\n"})", "stop", "unknown or unsupported parameter 'stop'"},
  };
  for (const Case &c : cases) {
    CompletionRequest r;
    std::optional<RequestError> e = parseCompletionRequest(c.body, limits(), {}, r);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    EXPECT_CONTAINS(e->message, c.message);
  }
}

TEST(RuntimeServe, ChatMessages) {
  ChatTemplate chatml;
  struct Case {
    const char *body, *param, *message;
  } cases[] = {
      {R"({"messages": "hi"})", "messages", "non-empty array"},
      {R"({"messages": [3]})", "messages[0]", "must be an object"},
      {R"({"messages": [{"role": "user"}]})", "messages[0]", "content must be a string"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0]", ".role must be"},
      {R"({"messages": [{"role": "user", "content": "x", "name": "a"}]})", "messages[0]",
       "unknown or unsupported member 'name'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "echo": false})", "echo",
       "unknown or unsupported parameter"},
      // Messages are checked before the tokenizer is needed.
      {R"({"messages": [{"role": "user", "content": "x"}]})", "messages", "needs a tokenizer"},
  };
  for (const Case &c : cases) {
    CompletionRequest r;
    std::optional<RequestError> e = parseChatRequest(c.body, limits(), {}, chatml, r);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    EXPECT_CONTAINS(e->message, c.message);
  }
}

TEST(RuntimeServe, EmbeddingInputs) {
  EmbeddingRequest r;
  ASSERT_FALSE(parseEmbeddingRequest(R"({"input": [[1, 2], [3]]})", limits(), r));
  EXPECT_EQ(r.inputs, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
  EXPECT_EQ(r.tokens, 3);
  ASSERT_FALSE(parseEmbeddingRequest(R"({"input": [4, 5, 6], "encoding_format": "float"})",
                                     limits(), r));
  EXPECT_EQ(r.inputs, (std::vector<std::vector<int32_t>>{{4, 5, 6}}));
  std::optional<RequestError> e = parseEmbeddingRequest(R"({"input": [[1], []]})", limits(), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "input[1]");
  e = parseEmbeddingRequest(R"({"input": [[1], "x"]})", limits(), r);
  ASSERT_TRUE(e);
  EXPECT_CONTAINS(e->message, "input[1] is text, but the server has no tokenizer");
  std::string many = "{\"input\": [";
  for (int i = 0; i <= kMaxEmbeddingInputs; ++i)
    many += i ? ",[1]" : "[1]";
  e = parseEmbeddingRequest(many + "]}", limits(), r);
  ASSERT_TRUE(e);
  EXPECT_CONTAINS(e->message, "more than 2048 per request");
  e = parseEmbeddingRequest(R"({"input": 3})", limits(), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "input");
  e = parseEmbeddingRequest(R"({"input": [1], "dimensions": 3})", limits(), r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "dimensions");
}

} // namespace
