//===- Inputs.h - The sequences a run works on, from the command line -*- C++
//-*-===//
//
// loadTokenizer resolves --tokenizer PATH / --vocab FILE [--merges FILE] (a
// directory holding vocab.json + merges.txt is GPT-2 byte-level BPE; one
// holding vocab.txt is BERT WordPiece; a vocab.json file takes merges.txt from
// --merges or from its directory; a .gguf file, or --weights X.gguf without
// either flag, the tokenizer in its metadata). buildBatch turns
// --tokens / --text / --prompt / --bos and the sources into id lists checked
// against the manifest (ids < vocab, 1 <= l <= max_positions), one target per
// sequence, with one source per sequence for encoder-decoders (a single source
// is shared by all).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_INPUTS_H
#define XFRT_INPUTS_H

#include "xfrt/ChatTemplate.h"
#include "xfrt/Cli.h"
#include "xfrt/Manifest.h"
#include "xfrt/Status.h"
#include "xfrt/Tokenizer.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace xfrt {

// A tokenizer and what its file says about chat.
struct LoadedTokenizer {
  std::unique_ptr<Tokenizer> tokenizer; // null when the options name none
  std::string source;                   // the file or directory it came from
  // A GGUF file's tokenizer.chat_template (Jinja text); nullopt when it has none.
  std::optional<std::string> chatTemplate;
  // A GGUF file's bos_token_id when its tokenizer.ggml.add_bos_token is true: --text and plain
  // --prompt inputs start with it, as llama.cpp's tokenize(add_bos) does.
  std::optional<int32_t> bos;
};

// --tokenizer X.gguf, or --weights X.gguf without --tokenizer/--vocab, loads the GGUF file's
// tokenizer (GgufTokenizer.h). A null tokenizer (no error) when the options name none.
Expected<LoadedTokenizer> loadTokenizer(const Options &options);

struct Batch {
  std::vector<std::vector<int32_t>> targets,
      sources; // sources empty or one per target
  // --batch-file: the line (1-based) each target came from; empty otherwise.
  std::vector<int64_t> lines;
  size_t size() const { return targets.size(); }
};

// Errors are command-line errors (exit 2), except tokenizer failures, which
// read
// "--text 2: ..." and are reported the same way.
// With `chat`, each --prompt is the user's turn of a conversation rendered by the template.
// With `bos` (LoadedTokenizer::bos), --text and plain --prompt ids start with it.
Expected<Batch> buildBatch(const Options &options, const Manifest &manifest,
                           const Tokenizer *tokenizer, const ChatTemplate *chat = nullptr,
                           std::optional<int32_t> bos = std::nullopt);

} // namespace xfrt

#endif // XFRT_INPUTS_H
