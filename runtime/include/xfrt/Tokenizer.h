//===- Tokenizer.h - Text <-> token ids (GPT-2 BPE, BERT WordPiece) -*- C++ -*-===//
//
// Two tokenizers that reproduce Hugging Face `tokenizers` ids exactly:
//  - GPT-2 byte-level BPE from vocab.json + merges.txt (no special tokens added on encode;
//    any byte string encodes, and decode returns the exact bytes);
//  - BERT WordPiece from vocab.txt (BasicTokenizer + WordpieceTokenizer, [CLS] ... [SEP]).
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

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  // Text → ids. GPT-2: byte-level BPE, no special tokens added. WordPiece: [CLS] ... [SEP]
  // added. WordPiece replaces each invalid UTF-8 sequence with U+FFFD before normalizing.
  virtual Expected<std::vector<int32_t>> encode(std::string_view text) const = 0;
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

} // namespace xfrt

#endif // XFRT_TOKENIZER_H
