//===- GgufTokenizer.cpp - The tokenizer a GGUF file describes ------------===//
//
// Reads tokenizer.ggml.* and hands the lists to makeByteLevelBpe, the GPT-2 tokenizer's
// builder, so both tokenizers share one BPE.
//
//===----------------------------------------------------------------------===//
#include "xfrt/GgufTokenizer.h"

#include <algorithm>
#include <string>

namespace xfrt {
namespace {

constexpr int32_t kTokenTypeUnknown = 2, kTokenTypeControl = 3, kTokenTypeUserDefined = 4;

std::optional<ByteLevelPreTokenizer> preTokenizerNamed(std::string_view name) {
  for (std::string_view gpt2 : {"gpt2", "mpt", "olmo", "jais"})
    if (name == gpt2)
      return ByteLevelPreTokenizer::Gpt2;
  for (std::string_view digits :
       {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"})
    if (name == digits)
      return ByteLevelPreTokenizer::DigitsThenGpt2;
  return std::nullopt;
}

// An optional u32 id key: absent is nullopt, anything but an integer is an error.
Status readOptionalId(const GgufHeader &h, std::string_view key, std::optional<int32_t> &out) {
  if (!h.find(key))
    return Status::success();
  Expected<uint32_t> id = h.getU32(key);
  if (!id)
    return id.status();
  out = int32_t(std::min<uint32_t>(*id, uint32_t(INT32_MAX)));
  return Status::success();
}

} // namespace

Expected<GgufTokenizer> loadGgufTokenizer(const GgufHeader &h) {
  auto fail = [&](std::string_view key, const std::string &what) {
    return makeError(h.fileName + ": metadata '" + std::string(key) + "': " + what);
  };
  Expected<std::string_view> model = h.getString("tokenizer.ggml.model");
  if (!model)
    return model.status();
  if (*model != "gpt2")
    return fail("tokenizer.ggml.model", "tokenizer model \"" + std::string(*model) +
                                            "\" is not supported (only \"gpt2\", byte-level BPE)");
  Expected<std::string_view> pre = h.getString("tokenizer.ggml.pre");
  if (!pre)
    return pre.status();
  std::optional<ByteLevelPreTokenizer> preTokenizer = preTokenizerNamed(*pre);
  if (!preTokenizer)
    return fail("tokenizer.ggml.pre", "pre-tokenizer \"" + std::string(*pre) +
                                          "\" is not supported (gpt2, smollm and those llama.cpp "
                                          "splits the same way)");

  ByteLevelBpeVocab vocab;
  vocab.preTokenizer = *preTokenizer;
  Expected<std::vector<std::string_view>> tokens = h.getStringArray("tokenizer.ggml.tokens");
  if (!tokens)
    return tokens.status();
  vocab.tokens = tokens.take();
  Expected<std::vector<std::string_view>> merges = h.getStringArray("tokenizer.ggml.merges");
  if (!merges)
    return merges.status();
  vocab.merges = merges.take();
  if (h.find("tokenizer.ggml.token_type")) {
    Expected<std::vector<int32_t>> types = h.getI32Array("tokenizer.ggml.token_type");
    if (!types)
      return types.status();
    if (types->size() != vocab.tokens.size())
      return fail("tokenizer.ggml.token_type", "has " + std::to_string(types->size()) +
                                                   " entries for " +
                                                   std::to_string(vocab.tokens.size()) + " tokens");
    for (size_t id = 0; id < types->size(); ++id) {
      int32_t t = (*types)[id];
      if (t == kTokenTypeControl || t == kTokenTypeUserDefined || t == kTokenTypeUnknown)
        vocab.specialIds.push_back(int32_t(id));
    }
  }

  GgufTokenizer out;
  if (Status s = readOptionalId(h, "tokenizer.ggml.bos_token_id", out.bos); !s)
    return s;
  if (Status s = readOptionalId(h, "tokenizer.ggml.eos_token_id", out.eos); !s)
    return s;
  if (h.find("tokenizer.ggml.add_bos_token")) {
    Expected<bool> addBos = h.getBool("tokenizer.ggml.add_bos_token");
    if (!addBos)
      return addBos.status();
    out.addBos = *addBos;
  }
  for (const auto &[id, key] : {std::pair{out.bos, "tokenizer.ggml.bos_token_id"},
                                std::pair{out.eos, "tokenizer.ggml.eos_token_id"}})
    if (id && size_t(*id) >= vocab.tokens.size())
      return fail(key, "id " + std::to_string(*id) + " is not in the " +
                           std::to_string(vocab.tokens.size()) + "-token vocabulary");
  vocab.endOfText = out.eos;
  Expected<std::unique_ptr<Tokenizer>> tok = makeByteLevelBpe(vocab, h.fileName);
  if (!tok)
    return tok.status();
  out.tokenizer = tok.take();
  return Expected<GgufTokenizer>(std::move(out));
}

} // namespace xfrt
