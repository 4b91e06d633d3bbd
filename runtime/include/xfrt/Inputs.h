//===- Inputs.h - The sequences a run works on, from the command line -*- C++
//-*-===//
//
// loadTokenizer resolves --tokenizer PATH / --vocab FILE [--merges FILE] (a
// directory holding vocab.json + merges.txt is GPT-2 byte-level BPE; one
// holding vocab.txt is BERT WordPiece; a vocab.json file takes merges.txt from
// --merges or from its directory). buildBatch turns
// --tokens / --text / --prompt / --bos and the sources into id lists checked
// against the manifest (ids < vocab, 1 <= l <= max_positions), one target per
// sequence, with one source per sequence for encoder-decoders (a single source
// is shared by all).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_INPUTS_H
#define XFRT_INPUTS_H

#include "xfrt/Cli.h"
#include "xfrt/Manifest.h"
#include "xfrt/Status.h"
#include "xfrt/Tokenizer.h"

#include <memory>
#include <vector>

namespace xfrt {

// Null (no error) when the options name no tokenizer.
Expected<std::unique_ptr<Tokenizer>> loadTokenizer(const Options &options);

struct Batch {
  std::vector<std::vector<int32_t>> targets,
      sources; // sources empty or one per target
  size_t size() const { return targets.size(); }
};

// Errors are command-line errors (exit 2), except tokenizer failures, which
// read
// "--text 2: ..." and are reported the same way.
Expected<Batch> buildBatch(const Options &options, const Manifest &manifest,
                           const Tokenizer *tokenizer);

} // namespace xfrt

#endif // XFRT_INPUTS_H
