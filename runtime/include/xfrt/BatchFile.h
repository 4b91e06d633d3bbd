//===- BatchFile.h - JSON Lines results of --batch-file -----------*- C++ -*-===//
//
// One line per input, in input order:
//   encoders: {"index": I, "line": N, "tokens": T, "embedding": [...]}
//   decoders: {"index": I, "line": N, "prompt_tokens": P, "ids": [...], "text": "...",
//              "stop": "max-new-tokens" | "eos" | "position limit"}
// index counts inputs from 0, line is the input's 1-based line in the file; floats are
// written as the shortest decimal that reads back as the same float32 (appendJsonFloat);
// "text" is present with a tokenizer, invalid UTF-8 in it replaced by U+FFFD.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_BATCHFILE_H
#define XFRT_BATCHFILE_H

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace xfrt {

void writeEmbeddingLine(std::FILE *out, size_t index, int64_t line, int64_t tokens,
                        const float *embedding, int64_t d);

// `line` < 0 (inputs not from --batch-file) leaves out the "line" field.
void writeGenerationLine(std::FILE *out, size_t index, int64_t line, int64_t promptTokens,
                         const std::vector<int32_t> &ids, const std::optional<std::string> &text,
                         const std::string &stop);

// `text` with every ill-formed UTF-8 byte replaced by U+FFFD.
std::string validUtf8(const std::string &text);

// Appends `v` as the shortest decimal that reads back as the same float32 (std::to_chars:
// exact, and ~4x cheaper than "%.9g", which 384 floats per sentence made a measurable part of
// an embedding run), or null when it is not finite (JSON has no NaN or infinity).
void appendJsonFloat(std::string &out, float v);

} // namespace xfrt

#endif // XFRT_BATCHFILE_H
