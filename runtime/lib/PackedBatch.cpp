//===- PackedBatch.cpp - Forward passes over many sequences ---------------===//
#include "xfrt/PackedBatch.h"

#include "xfrt/AlignedBuffer.h"

#include <algorithm>
#include <cstring>

namespace xfrt {
namespace {

Status ensureFloats(AlignedBuffer &buffer, int64_t rows, int64_t cols) {
  int64_t count;
  uint64_t bytes;
  if (!checkedMul(rows, cols, count) || !checkedMul(uint64_t(count), uint64_t(4), bytes))
    return makeError("output of " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " floats is too large");
  if (buffer.data() && buffer.size() >= bytes)
    return Status::success();
  Expected<AlignedBuffer> b = AlignedBuffer::allocate(bytes);
  if (!b)
    return makeError("output: " + b.message());
  buffer = b.take();
  return Status::success();
}

} // namespace

Status forwardSequences(Session &session, const std::vector<std::vector<int32_t>> &sequences,
                        int64_t chunk, const SequenceRows &onSequence, size_t first,
                        const std::vector<std::vector<int32_t>> &sources, AlignedBuffer *rows) {
  const int64_t dOut = session.manifest().dOut;
  static const std::vector<int32_t> noSource;
  if (!sources.empty() && sources.size() != sequences.size())
    return makeError(std::to_string(sources.size()) + " sources for " +
                     std::to_string(sequences.size()) + " sequences");
  AlignedBuffer own;
  AlignedBuffer &out = rows ? *rows : own;
  std::vector<int32_t> tokens, sourceTokens;
  std::vector<int64_t> lengths, sourceLengths;
  chunk = std::max<int64_t>(chunk, 1);
  for (size_t begin = 0; begin < sequences.size(); begin += size_t(chunk)) {
    size_t end = std::min(sequences.size(), begin + size_t(chunk));
    if (end - begin == 1 || !session.canPack()) {
      for (size_t i = begin; i < end; ++i) {
        if (Status s = ensureFloats(out, int64_t(sequences[i].size()), dOut); !s)
          return s;
        if (Status s = session.forward(sequences[i], sources.empty() ? noSource : sources[i],
                                       out.floats());
            !s)
          return s;
        if (Status s = onSequence(first + i, out.floats()); !s)
          return s;
      }
      continue;
    }
    tokens.clear();
    lengths.clear();
    sourceTokens.clear();
    sourceLengths.clear();
    for (size_t i = begin; i < end; ++i) {
      tokens.insert(tokens.end(), sequences[i].begin(), sequences[i].end());
      lengths.push_back(int64_t(sequences[i].size()));
      if (!sources.empty()) {
        sourceTokens.insert(sourceTokens.end(), sources[i].begin(), sources[i].end());
        sourceLengths.push_back(int64_t(sources[i].size()));
      }
    }
    if (Status s = ensureFloats(out, int64_t(tokens.size()), dOut); !s)
      return s;
    if (Status s = session.forwardPacked(tokens.data(), lengths, out.floats(),
                                         sources.empty() ? nullptr : sourceTokens.data(),
                                         sourceLengths);
        !s)
      return s;
    int64_t row = 0;
    for (size_t i = begin; i < end; ++i) {
      if (Status s = onSequence(first + i, out.floats() + row * dOut); !s)
        return s;
      row += int64_t(sequences[i].size());
    }
  }
  return Status::success();
}

std::vector<int32_t> packedStepWords(const int32_t *tokens, const std::vector<int64_t> &lengths,
                                     const std::vector<int64_t> &starts,
                                     const std::vector<int64_t> &slots) {
  int64_t total = 0;
  for (int64_t l : lengths)
    total += l;
  const int64_t idWords = (total + 1) / 2 * 2;
  std::vector<int32_t> words(size_t(idWords + 4 * total), 0);
  std::copy(tokens, tokens + total, words.begin());
  std::vector<int64_t> table(size_t(2 * total));
  int64_t row = 0;
  for (size_t i = 0; i < lengths.size(); ++i)
    for (int64_t t = 0; t < lengths[i]; ++t, ++row) {
      table[size_t(row)] = starts[i] + t;
      table[size_t(total + row)] = slots[i];
    }
  std::memcpy(words.data() + idWords, table.data(), table.size() * sizeof(int64_t));
  return words;
}

} // namespace xfrt
