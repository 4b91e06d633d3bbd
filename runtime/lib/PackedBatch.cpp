//===- PackedBatch.cpp - Forward passes over many sequences ---------------===//
#include "xfrt/PackedBatch.h"

#include "xfrt/AlignedBuffer.h"

#include <algorithm>

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
                        int64_t chunk, const SequenceRows &onSequence, size_t first) {
  const int64_t dOut = session.manifest().dOut;
  static const std::vector<int32_t> noSource;
  AlignedBuffer out;
  std::vector<int32_t> tokens;
  std::vector<int64_t> lengths;
  chunk = std::max<int64_t>(chunk, 1);
  for (size_t begin = 0; begin < sequences.size(); begin += size_t(chunk)) {
    size_t end = std::min(sequences.size(), begin + size_t(chunk));
    if (end - begin == 1 || !session.canPack()) {
      for (size_t i = begin; i < end; ++i) {
        if (Status s = ensureFloats(out, int64_t(sequences[i].size()), dOut); !s)
          return s;
        if (Status s = session.forward(sequences[i], noSource, out.floats()); !s)
          return s;
        if (Status s = onSequence(first + i, out.floats()); !s)
          return s;
      }
      continue;
    }
    tokens.clear();
    lengths.clear();
    for (size_t i = begin; i < end; ++i) {
      tokens.insert(tokens.end(), sequences[i].begin(), sequences[i].end());
      lengths.push_back(int64_t(sequences[i].size()));
    }
    if (Status s = ensureFloats(out, int64_t(tokens.size()), dOut); !s)
      return s;
    if (Status s = session.forwardPacked(tokens.data(), lengths, out.floats()); !s)
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

} // namespace xfrt
