//===- TrainingData.cpp - --data files, held-out split, sequence sampling -===//
#include "xfrt/TrainingData.h"

#include "xfrt/MappedFile.h"
#include "xfrt/Tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace xfrt {

Expected<std::vector<int32_t>> parseTokenIds(std::string_view text, int64_t vocab,
                                             const std::string &name, int64_t firstLine) {
  std::vector<int32_t> ids;
  int64_t line = firstLine;
  size_t i = 0;
  auto isSeparator = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == ','; };
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line, ++i;
      continue;
    }
    if (isSeparator(c)) {
      ++i;
      continue;
    }
    size_t start = i;
    int64_t value = 0;
    bool digits = true;
    while (i < text.size() && text[i] != '\n' && !isSeparator(text[i])) {
      char d = text[i++];
      if (d < '0' || d > '9')
        digits = false;
      else if (value <= vocab) // stop growing once out of range: no overflow
        value = value * 10 + (d - '0');
    }
    std::string word(text.substr(start, std::min<size_t>(i - start, 32)));
    if (!digits)
      return makeError(name + ":" + std::to_string(line) + ": not a token id: '" + word + "'");
    if (value >= vocab)
      return makeError(name + ":" + std::to_string(line) + ": token id " + word +
                       " is outside the vocabulary (N_V = " + std::to_string(vocab) + ")");
    ids.push_back(int32_t(value));
  }
  if (ids.empty())
    return makeError(name + ": no token ids");
  return ids;
}

namespace {

bool isIdsFile(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".ids") == 0;
}

Status needsTokenizer(const std::string &path, const Tokenizer *tokenizer) {
  if (tokenizer || isIdsFile(path))
    return Status::success();
  return makeError(path + ": a text file needs the model's tokenizer (--tokenizer), or give "
                          "token ids in a file ending in .ids");
}

/// `text` through the tokenizer, every id checked against the vocabulary;
/// errors start with `where`.
Expected<std::vector<int32_t>> encodeChecked(const Tokenizer &tokenizer, std::string_view text,
                                             int64_t vocab, const std::string &where) {
  Expected<std::vector<int32_t>> ids = tokenizer.encode(text);
  if (!ids)
    return makeError(where + ": " + ids.message());
  for (int32_t id : *ids)
    if (id < 0 || id >= vocab)
      return makeError(where + ": the tokenizer gives id " + std::to_string(id) +
                       ", outside the model's vocabulary (N_V = " + std::to_string(vocab) + ")");
  return ids;
}

} // namespace

Expected<std::vector<int32_t>> readTrainingTokens(const std::string &path,
                                                  const Tokenizer *tokenizer, int64_t vocab,
                                                  size_t maxBytes) {
  Expected<std::string> text = readTextFile(path, maxBytes);
  if (!text)
    return text.status();
  if (isIdsFile(path))
    return parseTokenIds(*text, vocab, path);
  if (Status s = needsTokenizer(path, tokenizer); !s)
    return s;
  Expected<std::vector<int32_t>> ids = encodeChecked(*tokenizer, *text, vocab, path);
  if (ids && ids->empty())
    return makeError(path + ": the text encodes to no tokens");
  return ids;
}

Expected<std::vector<SequencePair>> readTrainingPairs(const std::string &path,
                                                      const Tokenizer *tokenizer, int64_t vocab,
                                                      size_t maxBytes) {
  Expected<std::string> text = readTextFile(path, maxBytes);
  if (!text)
    return text.status();
  bool idsFile = isIdsFile(path);
  if (Status s = needsTokenizer(path, tokenizer); !s)
    return s;
  std::vector<SequencePair> pairs;
  std::string_view all = *text;
  int64_t lineNo = 0;
  while (!all.empty()) {
    size_t end = all.find('\n');
    std::string_view line = all.substr(0, end);
    all = end == std::string_view::npos ? std::string_view() : all.substr(end + 1);
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos)
      continue;
    std::string where = path + ":" + std::to_string(lineNo);
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      return makeError(where + ": expected a source and a target separated by a tab");
    SequencePair pair;
    for (auto [side, out] : {std::pair{line.substr(0, tab), &pair.source},
                             std::pair{line.substr(tab + 1), &pair.target}}) {
      const char *what = out == &pair.source ? "source" : "target";
      if (side.find_first_not_of(" ,\t") == std::string_view::npos)
        return makeError(where + ": the " + what + " is empty");
      Expected<std::vector<int32_t>> ids = idsFile
                                               ? parseTokenIds(side, vocab, path, lineNo)
                                               : encodeChecked(*tokenizer, side, vocab, where);
      if (!ids)
        return ids.status();
      if (ids->empty())
        return makeError(where + ": the " + what + " encodes to no tokens");
      *out = ids.take();
    }
    if (pair.target.size() < 2)
      return makeError(where + ": the target has " + std::to_string(pair.target.size()) +
                       " id; it needs two (its first predicts its second)");
    pairs.push_back(std::move(pair));
  }
  if (pairs.empty())
    return makeError(path + ": no pairs (lines of source<TAB>target)");
  return pairs;
}

PairSplit splitHeldOut(const std::vector<SequencePair> &pairs, double heldOutFraction) {
  size_t held = size_t(std::floor(double(pairs.size()) * std::clamp(heldOutFraction, 0.0, 1.0)));
  PairSplit split;
  split.train.assign(pairs.begin(), pairs.end() - ptrdiff_t(held));
  split.heldOut.assign(pairs.end() - ptrdiff_t(held), pairs.end());
  return split;
}

Expected<PairSampler> PairSampler::create(const std::vector<SequencePair> &pairs, int64_t seqLen,
                                          uint64_t seed, const std::string &name) {
  if (seqLen < 1)
    return makeError("--seq-len must be at least 1, got " + std::to_string(seqLen));
  if (pairs.empty())
    return makeError(name + ": no pairs");
  return PairSampler(pairs, seqLen, seed);
}

void PairSampler::next(int32_t *source, int64_t &lz, int32_t *inputs, int32_t *targets,
                       int64_t &l) {
  uint64_t n = pairs_->size(), limit = (uint64_t(1) << 32) / n * n, draw;
  do
    draw = rng_.next();
  while (n <= (uint64_t(1) << 32) && draw >= limit);
  const SequencePair &pair = (*pairs_)[size_t(draw % n)];
  lz = std::min<int64_t>(int64_t(pair.source.size()), seqLen_);
  l = std::min<int64_t>(int64_t(pair.target.size()) - 1, seqLen_);
  std::copy_n(pair.source.begin(), lz, source);
  std::copy_n(pair.target.begin(), l, inputs);
  std::copy_n(pair.target.begin() + 1, l, targets);
}

TrainingSplit splitHeldOut(const std::vector<int32_t> &ids, double heldOutFraction) {
  size_t held = size_t(std::floor(double(ids.size()) * std::clamp(heldOutFraction, 0.0, 1.0)));
  TrainingSplit split;
  split.train.assign(ids.begin(), ids.end() - ptrdiff_t(held));
  split.heldOut.assign(ids.end() - ptrdiff_t(held), ids.end());
  return split;
}

Expected<SequenceSampler> SequenceSampler::create(const std::vector<int32_t> &ids,
                                                  int64_t seqLen, uint64_t seed,
                                                  const std::string &name) {
  if (seqLen < 1)
    return makeError("--seq-len must be at least 1, got " + std::to_string(seqLen));
  if (int64_t(ids.size()) < seqLen + 1)
    return makeError(name + ": " + std::to_string(ids.size()) + " tokens, but --seq-len " +
                     std::to_string(seqLen) + " needs at least " + std::to_string(seqLen + 1));
  return SequenceSampler(ids, seqLen, seed);
}

void SequenceSampler::next(int32_t *inputs, int32_t *targets) {
  // Uniform over [0, windows()) by rejection, so every start is equally likely.
  uint64_t n = uint64_t(windows()), limit = (uint64_t(1) << 32) / n * n, draw;
  do
    draw = rng_.next();
  while (n <= (uint64_t(1) << 32) && draw >= limit);
  size_t offset = size_t(draw % n);
  for (int64_t t = 0; t < seqLen_; ++t) {
    inputs[t] = (*ids_)[offset + t];
    targets[t] = (*ids_)[offset + t + 1];
  }
}

void TokenMasker::apply(int32_t *inputs, int32_t *targets, int64_t n) {
  for (int64_t t = 0; t < n; ++t) {
    // u uniform in [0, 1) on a 2^-32 grid: P(u < p) = p to within 2^-32.
    double u = double(rng_.next()) * 0x1p-32;
    if (u < probability_) {
      targets[t] = inputs[t];
      inputs[t] = maskToken_;
    } else {
      targets[t] = -1;
    }
  }
}

} // namespace xfrt
