//===- TrainingData.h - Token streams and batches for training (issue 15) -*- C++ -*-===//
//
// A trainer's --data: a text file encoded by the model's tokenizer, or token ids written
// as decimal numbers separated by whitespace or commas (a file ending in `.ids`). Windows
// of seq_len + 1 consecutive ids give one sequence (inputs: the first seq_len, targets: the
// last seq_len — Alg. 13's next token). Windows start at offsets drawn with PCG32 from
// the seed, so a seed gives the same batches everywhere; the last part of the stream can be
// held out for evaluation. Errors are one line naming the file (and line for ids).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_TRAININGDATA_H
#define XFRT_TRAININGDATA_H

#include "xfrt/Random.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

class Tokenizer;

/// Ids from the text of an `.ids` file: decimal numbers in [0, vocab) separated by
/// whitespace or commas. `name` is the file name used in errors, `firstLine` the line
/// number `text` starts at.
Expected<std::vector<int32_t>> parseTokenIds(std::string_view text, int64_t vocab,
                                             const std::string &name, int64_t firstLine = 1);

/// --data FILE: `.ids` files are parsed as ids; anything else is text encoded by
/// `tokenizer` (an error naming the file when there is none). Ids are checked against
/// `vocab`; at most `maxBytes` are read.
Expected<std::vector<int32_t>> readTrainingTokens(const std::string &path,
                                                  const Tokenizer *tokenizer, int64_t vocab,
                                                  size_t maxBytes = size_t(1) << 30);

/// One training pair of an encoder-decoder (Alg. 11): the source (context) sequence z
/// and the target sequence x, whose next tokens are predicted given z.
struct SequencePair {
  std::vector<int32_t> source, target;
};

/// The stream split into training ids and the held-out last `heldOutFraction` of it.
struct TrainingSplit {
  std::vector<int32_t> train, heldOut;
};
TrainingSplit splitHeldOut(const std::vector<int32_t> &ids, double heldOutFraction);
/// Pairs split the same way: the last `heldOutFraction` of them held out.
struct PairSplit {
  std::vector<SequencePair> train, heldOut;
};
PairSplit splitHeldOut(const std::vector<SequencePair> &pairs, double heldOutFraction);

/// Draws windows of seqLen + 1 ids from a stream, uniformly over the start offsets.
class SequenceSampler {
public:
  /// Fails (naming `name`) when the stream holds fewer than seqLen + 1 ids. `ids` must
  /// outlive the sampler.
  static Expected<SequenceSampler> create(const std::vector<int32_t> &ids, int64_t seqLen,
                                          uint64_t seed, const std::string &name);
  /// Writes one sequence: inputs[t] = ids[o + t], targets[t] = ids[o + t + 1], t < seqLen.
  void next(int32_t *inputs, int32_t *targets);
  int64_t windows() const { return int64_t(ids_->size()) - seqLen_; }

private:
  SequenceSampler(const std::vector<int32_t> &ids, int64_t seqLen, uint64_t seed)
      : ids_(&ids), seqLen_(seqLen), rng_(seed, 0x7472616e) {}
  const std::vector<int32_t> *ids_;
  int64_t seqLen_;
  Pcg32 rng_;
};

/// --data for an encoder-decoder: one pair per line, the source and the target separated
/// by a tab; in a file ending in `.ids` each side is ids as above, in any other file text
/// that `tokenizer` encodes. Blank lines are skipped. A source needs one id, a target two
/// (its first predicts its second). Errors name the file and line.
Expected<std::vector<SequencePair>> readTrainingPairs(const std::string &path,
                                                      const Tokenizer *tokenizer, int64_t vocab,
                                                      size_t maxBytes = size_t(1) << 30);

/// Draws pairs uniformly (PCG32 from the seed); a side longer than the sequence length
/// is cut: the source to seqLen ids, the target to seqLen + 1.
class PairSampler {
public:
  /// Fails (naming `name`) when there is no pair. `pairs` must outlive the sampler.
  static Expected<PairSampler> create(const std::vector<SequencePair> &pairs, int64_t seqLen,
                                      uint64_t seed, const std::string &name);
  /// Writes source[0, lz), inputs[0, l) = target[0, l), targets[0, l) = target[1, l + 1).
  void next(int32_t *source, int64_t &lz, int32_t *inputs, int32_t *targets, int64_t &l);

private:
  PairSampler(const std::vector<SequencePair> &pairs, int64_t seqLen, uint64_t seed)
      : pairs_(&pairs), seqLen_(seqLen), rng_(seed, 0x70616972) {}
  const std::vector<SequencePair> *pairs_;
  int64_t seqLen_;
  Pcg32 rng_;
};

/// Alg. 12's masking rule: each input token is replaced by the mask token with
/// probability p, independently; a replaced position's target is the token it
/// held, every other position has none (-1: xf.cross_entropy skips it). The
/// draws come from their own PCG32 stream, so a seed gives the same masks
/// everywhere and the windows are those of a next-token run with that seed.
class TokenMasker {
public:
  TokenMasker(double probability, int32_t maskToken, uint64_t seed)
      : probability_(probability), maskToken_(maskToken), rng_(seed, 0x6d61736b) {}
  /// inputs[t] stays or becomes the mask token; targets[t] is set (t < n).
  void apply(int32_t *inputs, int32_t *targets, int64_t n);

private:
  double probability_;
  int32_t maskToken_;
  Pcg32 rng_;
};

} // namespace xfrt

#endif // XFRT_TRAININGDATA_H
