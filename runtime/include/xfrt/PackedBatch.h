//===- PackedBatch.h - Forward passes over many sequences --------*- C++ -*-===//
//
// forwardSequences runs a batch in chunks of at most `chunk` sequences, one
// xf_forward_packed call per chunk (all rows of the chunk in one [Σℓ, d_out]
// matrix, docs/abi.md "Packed batches"; an encoder-decoder's sources likewise
// in [Σℓ_z] rows), or one xf_forward per sequence when the model has no packed
// entry point. Each sequence's rows are handed to `onSequence` as soon as its
// chunk has run.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_PACKEDBATCH_H
#define XFRT_PACKEDBATCH_H

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Session.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace xfrt {

// --batch without a value: sequences per packed call.
constexpr int64_t kDefaultBatchChunk = 32;

// Sequence i's rows: [ℓ_i, d_out] row-major.
using SequenceRows = std::function<Status(size_t index, const float *rows)>;

// `sequences` are checked id lists (1 <= ℓ <= max_positions); `first` numbers them for
// onSequence. `sources`: an encoder-decoder's, one per sequence (checked likewise), else
// empty. A chunk of one sequence runs xf_forward. The rows are written into `rows` (grown
// when too small; a buffer of this call's own when null): a caller that runs again
// (--repeat) passes the same buffer, so that the next call neither allocates nor zeroes it
// again (GPT-2's 128 × 50257 logits are 25.7 MB: faulting in and zeroing fresh pages took
// milliseconds per forward, serially, inside the timed loop).
Status forwardSequences(Session &session, const std::vector<std::vector<int32_t>> &sequences,
                        int64_t chunk, const SequenceRows &onSequence, size_t first = 0,
                        const std::vector<std::vector<int32_t>> &sources = {},
                        AlignedBuffer *rows = nullptr);

// A packed cached step's token ids and, after them, its step table as the CUDA build's
// xf_forward_cached_packed reads it (docs/abi.md, "Packed batches"): from int32 word
// 2·⌈Σℓ / 2⌉ (8-byte aligned), Σℓ int64 positions (row t of sequence i: starts[i] + t − its
// first row), then Σℓ int64 cache slots (slots[i] for each of its rows). One upload a step.
std::vector<int32_t> packedStepWords(const int32_t *tokens, const std::vector<int64_t> &lengths,
                                     const std::vector<int64_t> &starts,
                                     const std::vector<int64_t> &slots);

} // namespace xfrt

#endif // XFRT_PACKEDBATCH_H
