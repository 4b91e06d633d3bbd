//===- BatchGenerate.cpp - Sequences decoding together --------------------===//
#include "xfrt/BatchGenerate.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace xfrt {

BatchDecoder::BatchDecoder(Session &session, int64_t maxActive, int64_t cachePositions)
    : session_(session), maxActive_(std::max<int64_t>(maxActive, 1)),
      cachePositions_(std::min(cachePositions, session.cachePositions())),
      limit_(std::min(xfrt::positionLimit(session, true), cachePositions_)) {}

BatchDecoder BatchDecoder::rerunning(Session &session, int64_t maxActive) {
  BatchDecoder d(session, maxActive, 0);
  d.rerun_ = true;
  d.limit_ = xfrt::positionLimit(session, false);
  return d;
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
  auto s = std::make_unique<Sequence>(
      Sequence{std::move(request), Pcg32(0, fnv1a64("xfrt.sampling")), {}, 0, {}, -1});
  s->rng = Pcg32(s->request.seed, fnv1a64("xfrt.sampling"));
  s->tokens = s->request.prompt;
  s->result.cached = !rerun_;
  s->result.promptTokens = int64_t(s->request.prompt.size());
  s->result.stopReason = "max-new-tokens";
  waiting_.push_back(std::move(s));
  return Status::success();
}

Status BatchDecoder::growCaches(int64_t slots) {
  if (!slotBytes_) {
    Expected<int64_t> bytes = session_.cacheBytes(cachePositions_);
    if (!bytes)
      return bytes.status();
    slotBytes_ = *bytes;
  }
  uint64_t total = 0;
  if (!checkedMul(uint64_t(slots), uint64_t(slotBytes_), total))
    return makeError("KV caches: " + std::to_string(slots) + " slots are too large");
  Expected<AlignedBuffer> caches = AlignedBuffer::allocate(total);
  if (!caches)
    return makeError("KV cache: " + caches.message());
  if (cacheSlots_) // the running sequences keep their slots
    std::memcpy(caches->data(), caches_.data(), size_t(cacheSlots_ * slotBytes_));
  caches_ = caches.take();
  for (int64_t k = slots - 1; k >= cacheSlots_; --k) // the lowest slot is taken first
    freeSlots_.push_back(k);
  cacheSlots_ = slots;
  return Status::success();
}

Status BatchDecoder::step() {
  auto start = std::chrono::steady_clock::now();
  // Sequences whose clients went away leave first.
  auto gone = [](const std::unique_ptr<Sequence> &s) {
    return s->request.cancelled && s->request.cancelled();
  };
  for (auto &s : active_)
    if (gone(s)) {
      if (!rerun_)
        freeSlots_.push_back(s->slot);
      s.reset();
    }
  active_.erase(std::remove(active_.begin(), active_.end(), nullptr), active_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), gone), waiting_.end());
  // Admit: a free cache slot per joining sequence (more slots first, if they are too few).
  if (!rerun_) {
    int64_t want = std::min<int64_t>(maxActive_, int64_t(active_.size() + waiting_.size()));
    if (want > cacheSlots_)
      if (Status st = growCaches(want); !st)
        return st;
  }
  while (int64_t(active_.size()) < maxActive_ && !waiting_.empty()) {
    std::unique_ptr<Sequence> s = std::move(waiting_.front());
    waiting_.pop_front();
    if (s->request.options.maxNewTokens <= 0) {
      if (s->request.onDone)
        s->request.onDone(s->result);
      continue;
    }
    if (rerun_) {
      active_.push_back(std::move(s));
      continue;
    }
    s->slot = freeSlots_.back();
    freeSlots_.pop_back();
    active_.push_back(std::move(s));
  }
  if (active_.empty())
    return Status::success();
  // One call: each sequence's rows not yet in its cache (the prompt, then the newest token);
  // re-running, each whole prefix with its source.
  tokens_.clear(), lengths_.clear(), starts_.clear(), slots_.clear();
  sources_.clear(), sourceLengths_.clear();
  bool prefill = false;
  std::vector<int64_t> rowOf; // re-running: each sequence's last row in the output
  for (auto &s : active_) {
    prefill |= s->ran == 0;
    int64_t from = rerun_ ? 0 : s->ran;
    tokens_.insert(tokens_.end(), s->tokens.begin() + from, s->tokens.end());
    lengths_.push_back(int64_t(s->tokens.size()) - from);
    if (rerun_) {
      rowOf.push_back(int64_t(tokens_.size()) - 1);
      sources_.insert(sources_.end(), s->request.source.begin(), s->request.source.end());
      sourceLengths_.push_back(int64_t(s->request.source.size()));
      continue;
    }
    starts_.push_back(s->ran);
    slots_.push_back(s->slot);
  }
  const Manifest &m = session_.manifest();
  int64_t n = int64_t(active_.size());
  int64_t rows = rerun_ ? int64_t(tokens_.size()) : n;
  uint64_t bytes = uint64_t(rows) * uint64_t(m.dOut) * sizeof(float);
  if (!logits_.data() || logits_.size() < bytes) {
    Expected<AlignedBuffer> b = AlignedBuffer::allocate(bytes);
    if (!b)
      return makeError("logits: " + b.message());
    logits_ = b.take();
  }
  if (Status st = rerun_ ? session_.forwardPacked(tokens_.data(), lengths_, logits_.floats(),
                                                  sources_.data(), sourceLengths_)
                         : session_.forwardCachedPacked(tokens_.data(), lengths_, starts_,
                                                        caches_.data(), slots_, cachePositions_,
                                                        logits_.floats());
      !st)
    return st;
  int64_t vocab = std::min(m.dOut, m.vocab);
  for (int64_t i = 0; i < n; ++i) {
    Sequence &s = *active_[size_t(i)];
    s.ran = int64_t(s.tokens.size());
    const GenerateOptions &o = s.request.options;
    const float *row = logits_.floats() + (rerun_ ? rowOf[size_t(i)] : i) * m.dOut;
    int32_t y = int32_t(sampleToken(row, vocab, o.sampling, s.rng));
    s.tokens.push_back(y);
    s.result.newTokens.push_back(y);
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
      s.result.stopReason = "the sequence reached the model's " + std::to_string(limit_) +
                            (rerun_ ? " positions (max_positions)" : " positions (cache_positions)");
      done = true;
    }
    if (done) {
      if (s.request.onDone)
        s.request.onDone(s.result);
      if (!rerun_)
        freeSlots_.push_back(s.slot);
      active_[size_t(i)].reset();
    }
  }
  active_.erase(std::remove(active_.begin(), active_.end(), nullptr), active_.end());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  stats_.steps += 1;
  stats_.tokens += n;
  stats_.ms += ms;
  stats_.maxActive = std::max(stats_.maxActive, n);
  if (!prefill) {
    stats_.decodeSteps += 1;
    stats_.decodeTokens += n;
    stats_.decodeMs += ms;
  }
  return Status::success();
}

void BatchDecoder::abandonAll(const Status &why) {
  for (auto &s : active_) {
    if (!rerun_)
      freeSlots_.push_back(s->slot);
    if (s->request.onError)
      s->request.onError(why);
  }
  for (auto &s : waiting_)
    if (s->request.onError)
      s->request.onError(why);
  active_.clear();
  waiting_.clear();
}

Status BatchDecoder::run() {
  while (!idle())
    if (Status s = step(); !s)
      return s;
  return Status::success();
}

} // namespace xfrt
