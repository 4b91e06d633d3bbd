//===- Generate.cpp - Alg. 14 / 15: prompting a decoder -------------------===//
#include "xfrt/Generate.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Cli.h"

#include <algorithm>
#include <chrono>

namespace xfrt {
namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// A float buffer of at least rows x cols, reused across steps.
Status ensureRows(AlignedBuffer &buffer, int64_t rows, int64_t cols) {
  int64_t count;
  uint64_t bytes;
  if (!checkedMul(rows, cols, count) || !checkedMul(uint64_t(count), uint64_t(4), bytes))
    return makeError("logits of " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " floats are too large");
  if (buffer.data() && buffer.size() >= bytes)
    return Status::success();
  Expected<AlignedBuffer> b = AlignedBuffer::allocate(bytes);
  if (!b)
    return makeError("logits: " + b.message());
  buffer = b.take();
  return Status::success();
}

} // namespace

int64_t positionLimit(const Session &session, bool cached) {
  const Manifest &m = session.manifest();
  int64_t limit = m.maxPositions > 0 ? m.maxPositions : kMaxTokensWithoutLimit;
  if (cached && session.cachePositions() < limit)
    limit = session.cachePositions();
  return limit;
}

Expected<GenerateResult> generate(Session &session, const std::vector<int32_t> &prompt,
                                  const std::vector<int32_t> &source, const GenerateOptions &o,
                                  Pcg32 &rng, const std::function<void(int32_t)> &onToken) {
  const Manifest &m = session.manifest();
  GenerateResult r;
  r.cached = o.useCache && session.canCache() && source.empty();
  int64_t reused = r.cached ? o.cachedPrefix : 0;
  r.promptTokens = int64_t(prompt.size()) - reused;
  int64_t limit = positionLimit(session, r.cached);
  if (prompt.empty())
    return makeError("generation needs a non-empty prompt");
  if (reused < 0 || reused >= int64_t(prompt.size()))
    return makeError("generation: " + std::to_string(reused) + " cached positions of a " +
                     std::to_string(prompt.size()) + "-token prompt leave nothing to run");
  if (int64_t(prompt.size()) > limit)
    return makeError("the prompt has " + std::to_string(prompt.size()) +
                     " tokens, more than the model's " + std::to_string(limit) + " positions");
  // The cache holds what this run can reach, not the model's whole context.
  if (r.cached && reused == 0 && !o.cacheSizedByCaller)
    session.reserveCache(std::min(limit, int64_t(prompt.size()) + std::max<int64_t>(o.maxNewTokens, 1)));

  std::vector<int32_t> x = prompt; // the sequence so far
  AlignedBuffer logits;
  r.stopReason = "max-new-tokens";
  for (int64_t step = 0; step < o.maxNewTokens; ++step) {
    if (int64_t(x.size()) > limit) {
      r.hitPositionLimit = true;
      r.stopReason = "the sequence reached the model's " + std::to_string(limit) + " positions (" +
                     (r.cached ? "cache_positions" : "max_positions") + ")";
      break;
    }
    auto start = std::chrono::steady_clock::now();
    const float *last;
    if (r.cached) {
      // Prefill the prompt (past what the cache holds) at step 0, then one token at position
      // |x| - 1.
      int64_t begin = step == 0 ? reused : int64_t(x.size()) - 1;
      int64_t l = int64_t(x.size()) - begin;
      if (Status s = ensureRows(logits, 1, m.dOut); !s)
        return s;
      // The cached entry point returns the newest token's row only.
      if (Status s = session.forwardCached(x.data() + begin, l, begin, logits.floats()); !s)
        return s;
      last = logits.floats();
    } else {
      int64_t l = int64_t(x.size());
      if (Status s = ensureRows(logits, l, m.dOut); !s)
        return s;
      if (Status s = session.forward(x, source, logits.floats()); !s)
        return s;
      last = logits.floats() + (l - 1) * m.dOut;
    }
    int32_t y = int32_t(sampleToken(last, std::min(m.dOut, m.vocab), o.sampling, rng));
    (step == 0 ? r.prefillMs : r.decodeMs) += msSince(start);
    x.push_back(y);
    r.newTokens.push_back(y);
    if (onToken)
      onToken(y);
    if (o.eos && y == *o.eos) {
      r.stopReason = "eos";
      break;
    }
  }
  return r;
}

} // namespace xfrt
