//===- BatchGenerate.cpp - Sequences decoding together --------------------===//
#include "xfrt/BatchGenerate.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace xfrt {

BatchDecoder::BatchDecoder(Session &session, int64_t maxActive, int64_t cachePositions,
                           BatchLimits limits)
    : session_(session), maxActive_(std::max<int64_t>(maxActive, 1)),
      cachePositions_(std::min(cachePositions, session.cachePositions())),
      limit_(std::min(xfrt::positionLimit(session, true), cachePositions_)), limits_(limits) {}

BatchDecoder BatchDecoder::rerunning(Session &session, int64_t maxActive) {
  BatchDecoder d(session, maxActive, 0);
  d.rerun_ = true;
  d.limit_ = xfrt::positionLimit(session, false);
  return d;
}

Expected<int64_t> BatchDecoder::kvBlockBytes() {
  if (rerun_ || kv_.blockBytes)
    return kv_.blockBytes;
  // A cache of ⌈positions⌉₁₆ rows: one block's bytes are exactly kKvBlockPositions rows.
  Expected<int64_t> bytes = session_.cacheBytes(kKvBlockPositions);
  if (!bytes)
    return bytes.status();
  kv_.blockBytes = *bytes;
  kv_.budgetBlocks = limits_.kvBudgetBytes > 0 ? limits_.kvBudgetBytes / kv_.blockBytes : 0;
  return kv_.blockBytes;
}

std::optional<std::string> BatchDecoder::kvRefusal(int64_t promptTokens, int64_t maxNewTokens) {
  if (rerun_ || limits_.kvBudgetBytes <= 0)
    return std::nullopt;
  Expected<int64_t> block = kvBlockBytes();
  if (!block)
    return block.message();
  return kvBudgetRefusal(kvReservedPositions(promptTokens, maxNewTokens, limit_), *block,
                         limits_.kvBudgetBytes);
}

Status BatchDecoder::add(BatchRequest request) {
  if (request.prompt.empty())
    return makeError("generation needs a non-empty prompt");
  if (rerun_ != !request.source.empty())
    return makeError(rerun_ ? "an encoder-decoder's request needs a source"
                            : "a source is for an encoder-decoder's decoder only");
  if (int64_t(request.prompt.size()) > limit_)
    return makeError("the prompt has " + std::to_string(request.prompt.size()) +
                     " tokens, more than the model's " + std::to_string(limit_) + " positions");
  int64_t promptTokens = int64_t(request.prompt.size());
  if (std::optional<std::string> why = kvRefusal(promptTokens, request.options.maxNewTokens))
    return makeError(*why);
  auto s = std::make_unique<Sequence>();
  s->request = std::move(request);
  s->rng = Pcg32(s->request.seed, fnv1a64("xfrt.sampling"));
  s->tokens = s->request.prompt;
  s->result.cached = !rerun_;
  s->result.promptTokens = promptTokens;
  s->result.stopReason = "max-new-tokens";
  if (!rerun_)
    s->blocks =
        kvBlocks(kvReservedPositions(promptTokens, s->request.options.maxNewTokens, limit_));
  waiting_.push_back(std::move(s));
  return Status::success();
}

void BatchDecoder::retire(Sequence &s) {
  if (rerun_ || s.slot < 0)
    return;
  caches_.release(s.slot);
  freeSlots_.push_back(s.slot);
  kv_.blocksReserved -= s.blocks;
  s.slot = -1;
}

void BatchDecoder::dropCancelled() {
  auto gone = [](const std::unique_ptr<Sequence> &s) {
    return s->request.cancelled && s->request.cancelled();
  };
  Status why = makeError(kCancelledMessage);
  auto drop = [&](std::unique_ptr<Sequence> &s) {
    retire(*s);
    stats_.cancelled += 1;
    if (s->request.onError)
      s->request.onError(why);
    s.reset();
  };
  for (auto &s : active_)
    if (gone(s))
      drop(s);
  active_.erase(std::remove(active_.begin(), active_.end(), nullptr), active_.end());
  for (auto &s : waiting_)
    if (gone(s))
      drop(s);
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), nullptr), waiting_.end());
}

// Places in arrival order, each with a free cache slot and, under a KV budget, room for its
// reserved blocks: the first request that does not fit waits, and so do those behind it.
Status BatchDecoder::admit() {
  if (!rerun_ && !caches_.data() && !waiting_.empty()) {
    if (Expected<int64_t> block = kvBlockBytes(); !block)
      return block.status();
    Expected<int64_t> slotBytes = session_.cacheBytes(cachePositions_);
    if (!slotBytes)
      return slotBytes.status();
    Expected<KvCacheSlots> caches = session_.reserveCacheSlots(maxActive_, *slotBytes);
    if (!caches)
      return caches.status();
    caches_ = caches.take();
    for (int64_t k = maxActive_ - 1; k >= 0; --k) // the lowest slot is taken first
      freeSlots_.push_back(k);
    kv_.slots = maxActive_;
    kv_.slotBytes = *slotBytes;
  }
  while (int64_t(active_.size()) < maxActive_ && !waiting_.empty()) {
    Sequence &next = *waiting_.front();
    if (next.request.options.maxNewTokens <= 0) {
      if (next.request.onDone)
        next.request.onDone(next.result);
      waiting_.pop_front();
      continue;
    }
    if (!rerun_ && limits_.kvBudgetBytes > 0 && kv_.blocksReserved + next.blocks > kv_.budgetBlocks)
      break;
    std::unique_ptr<Sequence> s = std::move(waiting_.front());
    waiting_.pop_front();
    if (!rerun_) {
      s->slot = freeSlots_.back();
      freeSlots_.pop_back();
      kv_.blocksReserved += s->blocks;
      kv_.peakBlocksReserved = std::max(kv_.peakBlocksReserved, kv_.blocksReserved);
    }
    active_.push_back(std::move(s));
  }
  return Status::success();
}

void BatchDecoder::planCall() {
  tokens_.clear(), lengths_.clear(), starts_.clear(), slots_.clear();
  sources_.clear(), sourceLengths_.clear(), inCall_.clear(), rowOf_.clear();
  prefill_ = false;
  if (rerun_) { // each whole prefix with its source
    for (auto &s : active_) {
      s->rows = int64_t(s->tokens.size());
      prefill_ |= s->result.newTokens.empty();
    }
  } else {
    // Decoding sequences' newest tokens first, then prompt slices, the prompt with the fewest
    // rows left first (ties in arrival order): a short prompt that arrives while a long one is
    // being prefilled runs in the next step instead of after it.
    int64_t left = limits_.stepTokens > 0 ? limits_.stepTokens : INT64_MAX;
    bool any = false;
    prefilling_.clear();
    for (auto &s : active_) {
      s->rows = s->result.newTokens.empty() ? 0 : 1;
      left -= s->rows;
      any |= s->rows > 0;
      if (s->result.newTokens.empty())
        prefilling_.push_back(s.get());
    }
    std::stable_sort(prefilling_.begin(), prefilling_.end(), [](Sequence *a, Sequence *b) {
      return a->tokens.size() - size_t(a->ran) < b->tokens.size() - size_t(b->ran);
    });
    for (Sequence *s : prefilling_) {
      // A call always makes progress: its first slice gets a row whatever the bound.
      int64_t room = left > 0 ? left : any ? 0 : 1;
      s->rows = std::min(int64_t(s->tokens.size()) - s->ran, room);
      left -= s->rows;
      any |= s->rows > 0;
      prefill_ |= s->rows > 0;
    }
  }
  for (auto &s : active_) {
    if (s->rows == 0)
      continue;
    inCall_.push_back(s.get());
    int64_t from = rerun_ ? 0 : s->ran;
    tokens_.insert(tokens_.end(), s->tokens.begin() + from, s->tokens.begin() + from + s->rows);
    lengths_.push_back(s->rows);
    if (rerun_) {
      rowOf_.push_back(int64_t(tokens_.size()) - 1);
      sources_.insert(sources_.end(), s->request.source.begin(), s->request.source.end());
      sourceLengths_.push_back(int64_t(s->request.source.size()));
      continue;
    }
    starts_.push_back(s->ran);
    slots_.push_back(s->slot);
  }
}

Status BatchDecoder::runCall() {
  const Manifest &m = session_.manifest();
  int64_t rows = rerun_ ? int64_t(tokens_.size()) : int64_t(inCall_.size());
  uint64_t bytes = uint64_t(rows) * uint64_t(m.dOut) * sizeof(float);
  if (!logits_.data() || logits_.size() < bytes) {
    Expected<AlignedBuffer> b = AlignedBuffer::allocate(bytes);
    if (!b)
      return makeError("logits: " + b.message());
    logits_ = b.take();
  }
  return rerun_ ? session_.forwardPacked(tokens_.data(), lengths_, logits_.floats(),
                                         sources_.data(), sourceLengths_)
                : session_.forwardCachedPacked(tokens_.data(), lengths_, starts_, caches_.data(),
                                               slots_, cachePositions_, logits_.floats());
}

void BatchDecoder::sampleAndFinish() {
  const Manifest &m = session_.manifest();
  int64_t vocab = std::min(m.dOut, m.vocab);
  for (size_t i = 0; i < inCall_.size(); ++i) {
    Sequence &s = *inCall_[i];
    s.ran = rerun_ ? int64_t(s.tokens.size()) : s.ran + s.rows;
    if (s.ran < int64_t(s.tokens.size())) { // a slice of its prompt; the rest comes next step
      stats_.prefillChunks += 1;
      continue;
    }
    const GenerateOptions &o = s.request.options;
    const float *row = logits_.floats() + (rerun_ ? rowOf_[i] : int64_t(i)) * m.dOut;
    int32_t y = int32_t(sampleToken(row, vocab, o.sampling, s.rng));
    s.tokens.push_back(y);
    s.result.newTokens.push_back(y);
    stats_.tokens += 1;
    stats_.decodeTokens += prefill_ ? 0 : 1;
    if (s.request.onToken)
      s.request.onToken(y);
    bool done = false;
    if (o.eos && y == *o.eos) {
      s.result.stopReason = "eos";
      done = true;
    } else if (int64_t(s.result.newTokens.size()) >= o.maxNewTokens) {
      done = true;
    } else if (int64_t(s.tokens.size()) > limit_) {
      // The next step would need a position past the limit (as generate() stops).
      s.result.hitPositionLimit = true;
      s.result.stopReason =
          "the sequence reached the model's " + std::to_string(limit_) +
          (rerun_ ? " positions (max_positions)" : " positions (cache_positions)");
      done = true;
    }
    if (done) {
      if (s.request.onDone)
        s.request.onDone(s.result);
      retire(s);
      s.rows = -1; // finished: leaves active_ below
    }
  }
  active_.erase(std::remove_if(active_.begin(), active_.end(),
                               [](const std::unique_ptr<Sequence> &s) { return s->rows < 0; }),
                active_.end());
}

Status BatchDecoder::step() {
  auto start = std::chrono::steady_clock::now();
  dropCancelled(); // sequences whose clients went away leave first
  if (Status st = admit(); !st)
    return st;
  if (active_.empty()) {
    kv_.blocksInUse = 0;
    return Status::success();
  }
  planCall();
  if (Status st = runCall(); !st)
    return st;
  sampleAndFinish();
  int64_t inUse = 0;
  for (auto &s : active_)
    inUse += rerun_ ? 0 : kvBlocks(s->ran);
  kv_.blocksInUse = inUse;
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int64_t n = int64_t(inCall_.size()), rows = int64_t(tokens_.size());
  stats_.steps += 1;
  stats_.ms += ms;
  stats_.rows += rows;
  stats_.maxStepRows = std::max(stats_.maxStepRows, rows);
  stats_.maxActive = std::max(stats_.maxActive, n);
  if (!prefill_) {
    stats_.decodeSteps += 1;
    stats_.decodeMs += ms;
  }
  return Status::success();
}

void BatchDecoder::abandonAll(const Status &why) {
  for (auto &s : active_) {
    retire(*s);
    if (s->request.onError)
      s->request.onError(why);
  }
  for (auto &s : waiting_)
    if (s->request.onError)
      s->request.onError(why);
  active_.clear();
  waiting_.clear();
  kv_.blocksInUse = 0;
}

Status BatchDecoder::run() {
  while (!idle())
    if (Status s = step(); !s)
      return s;
  return Status::success();
}

} // namespace xfrt
