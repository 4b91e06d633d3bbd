//===- GgufTokenizer.h - The tokenizer a GGUF file describes -----*- C++ -*-===//
//
// tokenizer.ggml.model "gpt2" (byte-level BPE) from tokenizer.ggml.tokens / merges /
// token_type, with the pre-tokenizer named by tokenizer.ggml.pre: "gpt2" (and the models
// llama.cpp splits the same way: "mpt", "olmo", "jais") or "smollm" (and "starcoder",
// "refact", "command-r", "codeshell", "exaone", "minerva": digits isolated first). Tokens of
// type control, user-defined or unknown (token_type 3, 4, 2) are matched in input text and
// encoded as single ids, as llama.cpp's tokenize does with special-token parsing on and Hugging
// Face does for added tokens. Errors name the file and the key.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_GGUFTOKENIZER_H
#define XFRT_GGUFTOKENIZER_H

#include "xfrt/Gguf.h"
#include "xfrt/Tokenizer.h"

#include <memory>
#include <optional>

namespace xfrt {

struct GgufTokenizer {
  std::unique_ptr<Tokenizer> tokenizer; // endOfText() is eos
  std::optional<int32_t> bos, eos;      // tokenizer.ggml.bos_token_id / eos_token_id
  bool addBos = false;                  // tokenizer.ggml.add_bos_token (absent: false)
};

Expected<GgufTokenizer> loadGgufTokenizer(const GgufHeader &header);

} // namespace xfrt

#endif // XFRT_GGUFTOKENIZER_H
