//===- ServeRequests.h - The JSON bodies --serve accepts ----------*- C++ -*-===//
//
// Parses and checks the bodies of POST /v1/completions, /v1/chat/completions and /v1/embeddings
// (docs/serving.md)
// without any HTTP: the server answers a RequestError with its status (400, or 413 for a
// request over one of the server's per-request limits) and an OpenAI-style error object
// naming `param`. Everything a sequence needs is checked here (ids in the vocabulary,
// lengths within the model's positions, sampling parameters in range), so a request that parses
// cannot fail in the scheduler. Unknown members are errors (a misspelt "max_token" would
// otherwise be ignored silently), except "model" and "user", which OpenAI clients send.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SERVEREQUESTS_H
#define XFRT_SERVEREQUESTS_H

#include "xfrt/ChatTemplate.h"
#include "xfrt/Sampling.h"
#include "xfrt/Tokenizer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

// The largest request body the server reads; larger ones get 413 before they are parsed.
constexpr size_t kMaxServeBodyBytes = size_t(4) << 20;
// Embedding inputs in one request.
constexpr int64_t kMaxEmbeddingInputs = 2048;
// Tokens of all inputs of one embeddings request, unless --max-request-tokens says otherwise
// (OpenAI's limit on its embeddings endpoint).
constexpr int64_t kDefaultMaxRequestTokens = 300000;
// max_tokens above this is an error (a sequence also stops at the model's positions).
constexpr int64_t kMaxServeNewTokens = 1000000;

// What requests are checked against.
struct ServeLimits {
  int64_t vocab = 0;     // every id < vocab
  int64_t maxTokens = 0; // positions of one prompt or input (>= 1)
  std::string maxTokensName = "the model's"; // whose positions they are, for messages
  int64_t maxRequestTokens = kDefaultMaxRequestTokens; // Σ tokens of an embeddings request
  // Completions: a request's worst case (prompt + max_tokens, within maxTokens) in KV blocks
  // of kvBlockBytes must fit kvMemoryBytes (KvCacheSlots.h); 0: no budget.
  int64_t kvBlockBytes = 0, kvMemoryBytes = 0;
  const Tokenizer *tokenizer = nullptr; // text inputs need one
  std::optional<int32_t> bos;           // text prompts start with it (LoadedTokenizer::bos)
};

// The command line's generation options stand in for members a request leaves out.
struct CompletionDefaults {
  int64_t maxTokens = 16;
  SamplingOptions sampling;
  uint64_t seed = 0;
};

struct CompletionRequest {
  std::vector<int32_t> prompt;
  int64_t maxTokens = 16;
  SamplingOptions sampling;
  uint64_t seed = 0;
  bool stream = false;
};

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;
  int64_t tokens = 0; // Σ lengths, for "usage"
};

struct RequestError {
  std::string param; // the member at fault; empty for the body as a whole
  std::string message;
  int status = 400;  // 413: over a per-request limit of the server (the message names it)
};

// prompt: a string (tokenized) or an array of token ids; max_tokens, temperature, top_k, top_p,
// seed, stream; n (only 1), echo (only false), logprobs (only null).
std::optional<RequestError> parseCompletionRequest(std::string_view body, const ServeLimits &limits,
                                                   const CompletionDefaults &defaults,
                                                   CompletionRequest &out);

// POST /v1/chat/completions: messages (an array of {"role": "system" | "user" | "assistant",
// "content": string}), rendered by `chat` with the assistant's header appended and tokenized;
// max_tokens or max_completion_tokens and the rest as completions (no echo).
std::optional<RequestError> parseChatRequest(std::string_view body, const ServeLimits &limits,
                                             const CompletionDefaults &defaults,
                                             const ChatTemplate &chat, CompletionRequest &out);

// input: a string, an array of strings, an array of ids, or an array of id arrays;
// encoding_format (only "float").
std::optional<RequestError> parseEmbeddingRequest(std::string_view body, const ServeLimits &limits,
                                                  EmbeddingRequest &out);

} // namespace xfrt

#endif // XFRT_SERVEREQUESTS_H
