//===- Tokenizer.h - Text <-> token ids (GPT-2 BPE, BERT WordPiece) -*- C++ -*-===//
//
// Two tokenizers that reproduce Hugging Face `tokenizers` ids exactly:
//  - GPT-2 byte-level BPE from vocab.json + merges.txt (no special tokens added on encode;
//    any byte string encodes, and decode returns the exact bytes);
//  - BERT WordPiece from vocab.txt (BasicTokenizer + WordpieceTokenizer, [CLS] ... [SEP]).
// The GPT-2 BPE is also built from a vocabulary in memory (makeByteLevelBpe: a GGUF file's
// tokenizer.ggml.*, see GgufTokenizer.h), with special tokens and SmolLM's pre-tokenizer.
// Loaders validate their files completely; an error is one line naming the file and line.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_TOKENIZER_H
#define XFRT_TOKENIZER_H

#include "xfrt/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

// The bytes [begin, end) of a text.
struct TextSpan {
  size_t begin = 0, end = 0;
};

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  // Text → ids. GPT-2: byte-level BPE, no special tokens added. WordPiece: [CLS] ... [SEP]
  // added. WordPiece replaces each invalid UTF-8 sequence with U+FFFD before normalizing.
  // A vocabulary with special tokens (GGUF) maps them, wherever the text spells them out.
  virtual Expected<std::vector<int32_t>> encode(std::string_view text) const = 0;
  // Like encode, but special tokens are recognised only inside `markup` (sorted, disjoint
  // spans of `text`, e.g. a chat template's own text); the rest is data, such as a chat
  // message's content, whose "<|im_end|>" encodes as its characters. Tokenizers that find no
  // special tokens in text (WordPiece) encode as encode does.
  virtual Expected<std::vector<int32_t>> encodeMarkup(std::string_view text,
                                                      const std::vector<TextSpan> &markup) const {
    (void)markup;
    return encode(text);
  }
  // ids → text (GPT-2: exact bytes; WordPiece: joined with "##" continuation handling,
  // specials skipped). An id outside [0, vocabSize()) is an error.
  virtual Expected<std::string> decode(const std::vector<int32_t> &ids) const = 0;
  virtual int64_t vocabSize() const = 0;
  virtual std::optional<int32_t> endOfText() const = 0; // GPT-2 <|endoftext|>; WordPiece [SEP]
  // The id of a vocabulary entry (GPT-2: byte-level form, e.g. "Ġworld"), if present.
  virtual std::optional<int32_t> tokenToId(std::string_view token) const = 0;
};

// Limits on tokenizer files; a file over a limit is rejected with a one-line error.
struct TokenizerLimits {
  size_t maxFileBytes = size_t(64) << 20; // each of vocab.json / merges.txt / vocab.txt
  size_t maxVocab = size_t(1) << 21;      // entries
  size_t maxTokenBytes = 1024;            // one vocabulary entry
};

// vocab.json + merges.txt (Hugging Face GPT-2 layout), given as paths.
Expected<std::unique_ptr<Tokenizer>> loadGpt2Tokenizer(const std::string &vocabJson,
                                                       const std::string &merges);
// vocab.txt (BERT); lowercase + strip accents as bert-base-uncased / all-MiniLM-L6-v2 do.
Expected<std::unique_ptr<Tokenizer>> loadWordPieceTokenizer(const std::string &vocabTxt,
                                                            bool lowercase = true);

// The same, from file contents already in memory (`*Name` is used in error messages).
Expected<std::unique_ptr<Tokenizer>>
parseGpt2Tokenizer(std::string_view vocabJsonText, std::string_view mergesText,
                   const std::string &vocabName = "vocab.json",
                   const std::string &mergesName = "merges.txt",
                   const TokenizerLimits &limits = {});
Expected<std::unique_ptr<Tokenizer>>
parseWordPieceTokenizer(std::string_view vocabText, bool lowercase = true,
                        const std::string &vocabName = "vocab.txt",
                        const TokenizerLimits &limits = {});

// How byte-level BPE splits text before merging (llama.cpp's tokenizer.ggml.pre):
//   Gpt2           the GPT-2 pattern ("gpt2");
//   DigitsThenGpt2 every \p{N} character is a piece of its own, then the GPT-2 pattern on the
//                  text between ("smollm", "starcoder"; HF: Digits(individual_digits=True)).
enum class ByteLevelPreTokenizer { Gpt2, DigitsThenGpt2 };

// A byte-level BPE vocabulary given as lists (views must outlive makeByteLevelBpe only).
struct ByteLevelBpeVocab {
  std::vector<std::string_view> tokens; // byte-level strings ("Ġthe"), index = id
  std::vector<std::string_view> merges; // "left right", rank = index
  // Tokens cut out of the text before pre-tokenizing and encoded as their single id (the
  // leftmost match, the longest at one position), e.g. <|im_start|>.
  std::vector<int32_t> specialIds;
  ByteLevelPreTokenizer preTokenizer = ByteLevelPreTokenizer::Gpt2;
  std::optional<int32_t> endOfText;
};
// A byte whose byte-level character is not among the tokens (SmolLM2 lacks a few that UTF-8
// text rarely or never holds) merges with nothing and is left out of the ids, as llama.cpp
// does. `sourceName` prefixes errors ("model.gguf: merge 17: ...").
Expected<std::unique_ptr<Tokenizer>> makeByteLevelBpe(const ByteLevelBpeVocab &vocab,
                                                      const std::string &sourceName,
                                                      const TokenizerLimits &limits = {});

} // namespace xfrt

#endif // XFRT_TOKENIZER_H
