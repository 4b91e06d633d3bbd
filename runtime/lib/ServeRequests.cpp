//===- ServeRequests.cpp - The JSON bodies --serve accepts ----------------===//
#include "xfrt/ServeRequests.h"

#include "xfrt/Json.h"
#include "xfrt/KvCacheSlots.h"

#include <cmath>

namespace xfrt {
namespace {

using Error = std::optional<RequestError>;

Error fail(std::string param, std::string message) {
  return RequestError{std::move(param), std::move(message), 400};
}

Error tooLarge(std::string param, std::string message) {
  return RequestError{std::move(param), std::move(message), 413};
}

std::string overPositions(const std::string &param, size_t tokens, const ServeLimits &limits) {
  return param + " has " + std::to_string(tokens) + " tokens, more than " +
         limits.maxTokensName + " " + std::to_string(limits.maxTokens) + " positions";
}

// The body as one JSON object (bounded: depth 8 is enough for every accepted shape).
Error parseObject(std::string_view body, JsonValue &out) {
  JsonLimits limits;
  limits.maxBytes = kMaxServeBodyBytes;
  limits.maxDepth = 8;
  Expected<JsonValue> v = parseJson(body, limits);
  if (!v)
    return fail("", "the body is not valid JSON: " + v.message());
  if (!v->isObject())
    return fail("", "the body must be a JSON object, not " + describeJson(*v));
  out = v.take();
  return std::nullopt;
}

Error checkMembers(const JsonValue &body, std::initializer_list<const char *> known) {
  for (const std::string &key : body.keys) {
    bool ok = key == "model" || key == "user";
    for (const char *k : known)
      ok |= key == k;
    if (!ok)
      return fail(key, "unknown or unsupported parameter '" + key + "'");
  }
  return std::nullopt;
}

// A JSON array of token ids, each in [0, vocab), 1 .. maxTokens of them.
Error parseIds(const JsonValue &v, const ServeLimits &limits, const std::string &param,
               std::vector<int32_t> &out) {
  if (v.items.empty())
    return fail(param, param + " is an empty list of token ids");
  if (int64_t(v.items.size()) > limits.maxTokens)
    return fail(param, overPositions(param, v.items.size(), limits));
  out.clear();
  for (size_t i = 0; i < v.items.size(); ++i) {
    const JsonValue &id = v.items[i];
    if (!id.isInteger || id.integer < 0 || id.integer >= limits.vocab)
      return fail(param, param + "[" + std::to_string(i) + "]: " + describeJson(id) +
                             " is not a token id in [0, " + std::to_string(limits.vocab) + ")");
    out.push_back(int32_t(id.integer));
  }
  return std::nullopt;
}

// A text, tokenized; `withBos` puts the tokenizer file's BOS first (text prompts).
Error parseText(const JsonValue &v, const ServeLimits &limits, const std::string &param,
                bool withBos, std::vector<int32_t> &out,
                const std::vector<TextSpan> *markup = nullptr) {
  if (!limits.tokenizer)
    return fail(param, param + " is text, but the server has no tokenizer: send token ids "
                               "(start it with --tokenizer, --vocab or a .gguf file)");
  if (v.string.empty())
    return fail(param, param + " is an empty string");
  // A chat's messages are plain text: special tokens only from the template's markup.
  Expected<std::vector<int32_t>> ids = markup ? limits.tokenizer->encodeMarkup(v.string, *markup)
                                              : limits.tokenizer->encode(v.string);
  if (!ids)
    return fail(param, param + ": " + ids.message());
  out.clear();
  if (withBos && limits.bos)
    out.push_back(*limits.bos);
  out.insert(out.end(), ids->begin(), ids->end());
  if (out.empty())
    return fail(param, param + " has no tokens");
  if (int64_t(out.size()) > limits.maxTokens)
    return fail(param, overPositions(param, out.size(), limits));
  for (int32_t id : out)
    if (id >= limits.vocab)
      return fail(param, param + ": the tokenizer gave id " + std::to_string(id) +
                             ", outside the model's vocabulary of " +
                             std::to_string(limits.vocab));
  return std::nullopt;
}

Error parseInteger(const JsonValue *v, const char *param, int64_t lo, int64_t hi, int64_t &out) {
  if (!v || v->isNull())
    return std::nullopt;
  if (!v->isInteger || v->integer < lo || v->integer > hi)
    return fail(param, std::string(param) + " must be an integer in [" + std::to_string(lo) +
                           ", " + std::to_string(hi) + "], not " + describeJson(*v));
  out = v->integer;
  return std::nullopt;
}

Error parseNumber(const JsonValue *v, const char *param, double &out) {
  if (!v || v->isNull())
    return std::nullopt;
  if (!v->isNumber() || !std::isfinite(v->number))
    return fail(param, std::string(param) + " must be a number, not " + describeJson(*v));
  out = v->number;
  return std::nullopt;
}

} // namespace

namespace {

// The members completions and chat completions share: max_tokens (or max_completion_tokens),
// sampling, seed, stream, n, logprobs.
Error parseGeneration(const JsonValue &body, const ServeLimits &limits,
                      const CompletionDefaults &defaults, CompletionRequest &out) {
  out.maxTokens = defaults.maxTokens;
  out.sampling = defaults.sampling;
  out.seed = defaults.seed;
  if (body.find("max_tokens") && body.find("max_completion_tokens"))
    return fail("max_completion_tokens", "give max_tokens or max_completion_tokens, not both");
  for (const char *name : {"max_tokens", "max_completion_tokens"})
    if (Error e = parseInteger(body.find(name), name, 1, kMaxServeNewTokens, out.maxTokens))
      return e;
  if (Error e = parseNumber(body.find("temperature"), "temperature", out.sampling.temperature))
    return e;
  if (out.sampling.temperature < 0)
    return fail("temperature", "temperature must be >= 0 (0 is greedy)");
  if (Error e = parseInteger(body.find("top_k"), "top_k", 0, limits.vocab, out.sampling.topK))
    return e;
  if (Error e = parseNumber(body.find("top_p"), "top_p", out.sampling.topP))
    return e;
  if (!(out.sampling.topP > 0 && out.sampling.topP <= 1))
    return fail("top_p", "top_p must be in (0, 1]");
  if (out.sampling.temperature == 0 && (out.sampling.topK > 1 || out.sampling.topP < 1))
    return fail(out.sampling.topK > 1 ? "top_k" : "top_p",
                "top_k/top_p need temperature > 0 (0 is greedy)");
  int64_t seed = 0;
  if (const JsonValue *s = body.find("seed"); s && !s->isNull()) {
    if (Error e = parseInteger(s, "seed", 0, INT64_MAX, seed))
      return e;
    out.seed = uint64_t(seed);
  }
  out.stream = false;
  if (const JsonValue *s = body.find("stream"); s && !s->isNull()) {
    if (!s->isBool())
      return fail("stream", "stream must be true or false, not " + describeJson(*s));
    out.stream = s->boolean;
  }
  int64_t n = 1;
  if (Error e = parseInteger(body.find("n"), "n", 1, 1, n))
    return e;
  if (const JsonValue *s = body.find("logprobs");
      s && !s->isNull() && !(s->isBool() && !s->boolean))
    return fail("logprobs", "logprobs are not supported (only null or false)");
  return std::nullopt;
}

// The request's worst case against the KV memory budget (413 naming --kv-memory).
Error checkKvBudget(const ServeLimits &limits, const CompletionRequest &r) {
  int64_t positions = kvReservedPositions(int64_t(r.prompt.size()), r.maxTokens, limits.maxTokens);
  if (std::optional<std::string> why =
          kvBudgetRefusal(positions, limits.kvBlockBytes, limits.kvMemoryBytes))
    return tooLarge("max_tokens", *why);
  return std::nullopt;
}

} // namespace

std::optional<RequestError> parseCompletionRequest(std::string_view text, const ServeLimits &limits,
                                                   const CompletionDefaults &defaults,
                                                   CompletionRequest &out) {
  JsonValue body;
  if (Error e = parseObject(text, body))
    return e;
  if (Error e = checkMembers(body, {"prompt", "max_tokens", "temperature", "top_k", "top_p", "seed",
                                    "stream", "n", "echo", "logprobs"}))
    return e;
  const JsonValue *prompt = body.find("prompt");
  if (!prompt)
    return fail("prompt", "prompt is required");
  if (prompt->isString()) {
    if (Error e = parseText(*prompt, limits, "prompt", true, out.prompt))
      return e;
  } else if (prompt->isArray() && !prompt->items.empty() &&
             (prompt->items[0].isString() || prompt->items[0].isArray())) {
    return fail("prompt", "one prompt per request: prompt must be a string or an array of "
                          "token ids");
  } else if (prompt->isArray()) {
    if (Error e = parseIds(*prompt, limits, "prompt", out.prompt))
      return e;
  } else {
    return fail("prompt", "prompt must be a string or an array of token ids, not " +
                              describeJson(*prompt));
  }
  if (const JsonValue *s = body.find("echo"); s && !s->isNull() && !(s->isBool() && !s->boolean))
    return fail("echo", "echo is not supported (only false)");
  if (Error e = parseGeneration(body, limits, defaults, out))
    return e;
  return checkKvBudget(limits, out);
}

std::optional<RequestError> parseChatRequest(std::string_view text, const ServeLimits &limits,
                                             const CompletionDefaults &defaults,
                                             const ChatTemplate &chat, CompletionRequest &out) {
  JsonValue body;
  if (Error e = parseObject(text, body))
    return e;
  if (Error e = checkMembers(body, {"messages", "max_tokens", "max_completion_tokens",
                                    "temperature", "top_k", "top_p", "seed", "stream", "n",
                                    "logprobs"}))
    return e;
  const JsonValue *messages = body.find("messages");
  if (!messages)
    return fail("messages", "messages is required");
  if (!messages->isArray() || messages->items.empty())
    return fail("messages", "messages must be a non-empty array of {\"role\", \"content\"} "
                            "objects, not " + describeJson(*messages));
  std::vector<ChatMessage> conversation;
  for (size_t i = 0; i < messages->items.size(); ++i) {
    const JsonValue &m = messages->items[i];
    std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.isObject())
      return fail(param, param + " must be an object, not " + describeJson(m));
    for (const std::string &key : m.keys)
      if (key != "role" && key != "content")
        return fail(param, param + ": unknown or unsupported member '" + key + "'");
    const JsonValue *role = m.find("role"), *content = m.find("content");
    if (!role || !role->isString() ||
        (role->string != "system" && role->string != "user" && role->string != "assistant"))
      return fail(param, param + ".role must be \"system\", \"user\" or \"assistant\"");
    if (!content || !content->isString())
      return fail(param, param + ".content must be a string" +
                             (content ? ", not " + describeJson(*content) : std::string()));
    conversation.push_back({role->string, content->string});
  }
  if (!limits.tokenizer)
    return fail("messages", "chat needs a tokenizer");
  JsonValue rendered;
  rendered.kind = JsonValue::Kind::String;
  RenderedChat marked = chat.renderMarked(conversation, true);
  rendered.string = std::move(marked.text);
  // The template writes its own BOS text; the rendered prompt is checked like a text prompt.
  if (Error e = parseText(rendered, limits, "messages", false, out.prompt, &marked.markup))
    return e;
  if (Error e = parseGeneration(body, limits, defaults, out))
    return e;
  return checkKvBudget(limits, out);
}

std::optional<RequestError> parseEmbeddingRequest(std::string_view text, const ServeLimits &limits,
                                                  EmbeddingRequest &out) {
  JsonValue body;
  if (Error e = parseObject(text, body))
    return e;
  if (Error e = checkMembers(body, {"input", "encoding_format"}))
    return e;
  if (const JsonValue *f = body.find("encoding_format");
      f && !f->isNull() && !(f->isString() && f->string == "float"))
    return fail("encoding_format", "encoding_format must be \"float\", not " + describeJson(*f));
  const JsonValue *input = body.find("input");
  if (!input)
    return fail("input", "input is required");
  out.inputs.clear();
  out.tokens = 0;
  auto add = [&](const JsonValue &v, const std::string &param) -> Error {
    out.inputs.emplace_back();
    Error e = v.isString()  ? parseText(v, limits, param, false, out.inputs.back())
              : v.isArray() ? parseIds(v, limits, param, out.inputs.back())
                            : fail(param, param + " must be a string or an array of token ids, "
                                                  "not " + describeJson(v));
    if (e)
      return e;
    out.tokens += int64_t(out.inputs.back().size());
    if (limits.maxRequestTokens > 0 && out.tokens > limits.maxRequestTokens)
      return tooLarge("input", "input has more than " + std::to_string(limits.maxRequestTokens) +
                                   " tokens (" + std::to_string(out.tokens) + " in its first " +
                                   std::to_string(out.inputs.size()) +
                                   " inputs): the server's limit of tokens a request "
                                   "(--max-request-tokens " +
                                   std::to_string(limits.maxRequestTokens) + ")");
    return e;
  };
  if (input->isString() || (input->isArray() && !input->items.empty() &&
                            !input->items[0].isString() && !input->items[0].isArray()))
    return add(*input, "input");
  if (!input->isArray())
    return fail("input", "input must be a string, an array of strings, an array of token ids "
                         "or an array of those, not " + describeJson(*input));
  if (input->items.empty())
    return fail("input", "input is an empty list");
  if (int64_t(input->items.size()) > kMaxEmbeddingInputs)
    return fail("input", "input has " + std::to_string(input->items.size()) +
                             " items, more than " + std::to_string(kMaxEmbeddingInputs) +
                             " per request");
  for (size_t i = 0; i < input->items.size(); ++i)
    if (Error e = add(input->items[i], "input[" + std::to_string(i) + "]"))
      return e;
  return std::nullopt;
}

} // namespace xfrt
