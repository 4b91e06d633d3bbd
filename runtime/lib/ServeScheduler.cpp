//===- ServeScheduler.cpp - One thread runs the model for every client ----===//
#include "xfrt/ServeScheduler.h"

#include "xfrt/PackedBatch.h"

#include <algorithm>

namespace xfrt {
namespace {

ServeConfig withDefaults(ServeConfig c, const Session &session) {
  c.places = std::max<int64_t>(c.places, 1);
  c.maxQueued = std::max<size_t>(c.maxQueued, 1);
  c.stepTokens = c.stepTokens > 0 ? c.stepTokens : kDefaultStepTokens;
  c.maxContext = c.maxContext > 0 ? std::min(c.maxContext, session.cachePositions())
                                  : session.cachePositions();
  return c;
}

ServeConfig legacyConfig(int64_t places, Pooling pool, bool normalize, size_t maxQueued) {
  ServeConfig c;
  c.places = places, c.pool = pool, c.normalize = normalize, c.maxQueued = maxQueued;
  return c;
}

} // namespace

ServeScheduler::ServeScheduler(Session &session, const ServeConfig &config)
    : session_(session), config_(withDefaults(config, session)),
      decoder_(session, config_.places, config_.maxContext,
               BatchLimits{config_.stepTokens, config_.kvMemoryBytes}) {
  positionLimit_ = decoder_.positionLimit();
  if (session.canPackCached())
    if (Expected<int64_t> block = decoder_.kvBlockBytes(); block)
      kvBlockBytes_ = *block;
  kv_ = decoder_.kvUse();
  thread_ = std::thread([this] { loop(); });
}

ServeScheduler::ServeScheduler(Session &session, int64_t places, Pooling pool, bool normalize,
                               size_t maxQueued)
    : ServeScheduler(session, legacyConfig(places, pool, normalize, maxQueued)) {}

ServeScheduler::~ServeScheduler() { stop(); }

bool ServeScheduler::submit(BatchRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || incoming_.size() + embeddings_.size() + waiting_ >= config_.maxQueued)
      return false;
    incoming_.push_back(std::move(request));
  }
  wake_.notify_one();
  return true;
}

bool ServeScheduler::submit(EmbeddingJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || incoming_.size() + embeddings_.size() + waiting_ >= config_.maxQueued)
      return false;
    embeddings_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void ServeScheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable())
    thread_.join();
}

void ServeScheduler::abandon(const std::string &why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abandon_ = why;
  }
  wake_.notify_one();
}

bool ServeScheduler::waitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_.wait_for(lock, timeout, [this] { return idleLocked(); });
}

ServeScheduler::Load ServeScheduler::load() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Load l = embedMirror_;
  l.running = running_;
  l.waiting = waiting_ + incoming_.size() + embeddings_.size();
  l.decode = stats_;
  l.kv = kv_;
  return l;
}

void ServeScheduler::abandonAll(const Status &why, std::vector<BatchRequest> &requests) {
  for (BatchRequest &r : requests)
    if (r.onError)
      r.onError(why);
  requests.clear();
  for (EmbeddingWork &w : embedding_)
    w.job.done(why, {});
  embedding_.clear();
  decoder_.abandonAll(why);
}

void ServeScheduler::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || abandon_ || !idleLocked(); });
    if (idleLocked() && !abandon_) // stopping, and nothing left to do
      break;
    std::vector<BatchRequest> requests = std::move(incoming_);
    std::vector<EmbeddingJob> jobs = std::move(embeddings_);
    incoming_.clear();
    embeddings_.clear();
    std::optional<std::string> abandon = std::move(abandon_);
    abandon_.reset();
    lock.unlock();
    const int64_t d = session_.manifest().dOut;
    for (EmbeddingJob &job : jobs) {
      EmbeddingWork w;
      w.vectors.resize(job.inputs.size() * size_t(d));
      w.job = std::move(job);
      embedding_.push_back(std::move(w));
    }
    if (abandon)
      abandonAll(makeError(*abandon), requests);
    for (BatchRequest &r : requests) {
      std::function<void(const Status &)> onError = r.onError;
      if (Status s = decoder_.add(std::move(r)); !s && onError)
        onError(s);
    }
    if (!embedding_.empty())
      runEmbeddingPass();
    if (!decoder_.idle())
      if (Status s = decoder_.step(); !s)
        decoder_.abandonAll(s);
    lock.lock();
    running_ = decoder_.running() + embedding_.size();
    waiting_ = decoder_.waiting();
    stats_ = decoder_.stats();
    kv_ = decoder_.kvUse();
    embedMirror_ = embedTotals_;
    if (idleLocked())
      idle_.notify_all();
  }
  idle_.notify_all();
}

// Inputs in turn from the active requests (the front one first, then the next, ... round and
// round) until the pass holds `places` inputs or the next would pass stepTokens; a pass holds
// at least one input. The front request then goes to the back, so each leads in turn.
void ServeScheduler::runEmbeddingPass() {
  Status cancelled = makeError(kCancelledMessage);
  for (EmbeddingWork &w : embedding_)
    if (w.job.cancelled && w.job.cancelled()) {
      w.job.done(cancelled, {});
      w.next = w.finished = w.job.inputs.size() + 1; // marks it dropped
      embedTotals_.embeddingsCancelled += 1;
    }
  embedding_.erase(
      std::remove_if(embedding_.begin(), embedding_.end(),
                     [](const EmbeddingWork &w) { return w.finished > w.job.inputs.size(); }),
      embedding_.end());
  if (embedding_.empty())
    return;
  std::vector<std::vector<int32_t>> sequences;
  std::vector<std::pair<size_t, size_t>> owner; // (request, input) of each sequence
  int64_t tokens = 0;
  for (bool full = false, progress = true; !full && progress;) {
    progress = false;
    for (size_t j = 0; j < embedding_.size() && !full; ++j) {
      EmbeddingWork &w = embedding_[j];
      if (w.next == w.job.inputs.size())
        continue;
      int64_t length = int64_t(w.job.inputs[w.next].size());
      if (!sequences.empty() && tokens + length > config_.stepTokens) {
        full = true;
        break;
      }
      sequences.push_back(w.job.inputs[w.next]);
      owner.emplace_back(j, w.next++);
      tokens += length;
      progress = true;
      full = int64_t(sequences.size()) >= config_.places;
    }
  }
  const int64_t d = session_.manifest().dOut;
  Status status = forwardSequences(
      session_, sequences, int64_t(sequences.size()), [&](size_t i, const float *rows) {
        EmbeddingWork &w = embedding_[owner[i].first];
        poolHidden(rows, int64_t(sequences[i].size()), d, config_.pool, config_.normalize,
                   w.vectors.data() + owner[i].second * size_t(d));
        w.finished += 1;
        return Status::success();
      });
  embedTotals_.embeddingCalls += 1;
  embedTotals_.embeddedInputs += int64_t(sequences.size());
  embedTotals_.embeddedTokens += tokens;
  embedTotals_.maxEmbeddingCallTokens = std::max(embedTotals_.maxEmbeddingCallTokens, tokens);
  // A failed pass fails the requests it held; the others go on.
  std::vector<bool> inPass(embedding_.size(), false);
  for (auto &[j, input] : owner)
    inPass[j] = true;
  std::deque<EmbeddingWork> rest;
  bool frontGoesOn = false;
  for (size_t j = 0; j < embedding_.size(); ++j) {
    EmbeddingWork &w = embedding_[j];
    if (!status && inPass[j]) {
      w.job.done(status, {});
    } else if (w.finished == w.job.inputs.size()) {
      w.job.done(Status::success(), std::move(w.vectors));
    } else {
      frontGoesOn |= j == 0;
      rest.push_back(std::move(w));
    }
  }
  if (frontGoesOn && rest.size() > 1) // the front one, unfinished, goes to the back
    std::rotate(rest.begin(), rest.begin() + 1, rest.end());
  embedding_ = std::move(rest);
}

} // namespace xfrt
