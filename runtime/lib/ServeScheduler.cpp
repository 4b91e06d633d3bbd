//===- ServeScheduler.cpp - One thread runs the model for every client ----===//
#include "xfrt/ServeScheduler.h"

#include "xfrt/PackedBatch.h"

#include <algorithm>

namespace xfrt {

ServeScheduler::ServeScheduler(Session &session, int64_t places, Pooling pool, bool normalize,
                               size_t maxQueued)
    : session_(session), places_(std::max<int64_t>(places, 1)), pool_(pool),
      normalize_(normalize), maxQueued_(std::max<size_t>(maxQueued, 1)),
      decoder_(session, places_, session.cachePositions()) {
  thread_ = std::thread([this] { loop(); });
}

ServeScheduler::~ServeScheduler() { stop(); }

bool ServeScheduler::submit(BatchRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || incoming_.size() + embeddings_.size() + waiting_ >= maxQueued_)
      return false;
    incoming_.push_back(std::move(request));
  }
  wake_.notify_one();
  return true;
}

bool ServeScheduler::submit(EmbeddingJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || incoming_.size() + embeddings_.size() + waiting_ >= maxQueued_)
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
  Load l;
  l.running = running_;
  l.waiting = waiting_ + incoming_.size() + embeddings_.size();
  l.decode = stats_;
  l.embeddingCalls = embeddingCalls_;
  l.embeddedInputs = embeddedInputs_;
  return l;
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
    if (abandon) {
      Status why = makeError(*abandon);
      for (BatchRequest &r : requests)
        if (r.onError)
          r.onError(why);
      for (EmbeddingJob &job : jobs)
        job.done(why, {});
      requests.clear();
      jobs.clear();
      decoder_.abandonAll(why);
    }
    for (BatchRequest &r : requests) {
      std::function<void(const Status &)> onError = r.onError;
      if (Status s = decoder_.add(std::move(r)); !s && onError)
        onError(s);
    }
    if (!jobs.empty())
      runEmbeddings(jobs);
    if (!decoder_.idle())
      if (Status s = decoder_.step(); !s)
        decoder_.abandonAll(s);
    lock.lock();
    running_ = decoder_.running();
    waiting_ = decoder_.waiting();
    stats_ = decoder_.stats();
    if (idleLocked())
      idle_.notify_all();
  }
  idle_.notify_all();
}

void ServeScheduler::runEmbeddings(std::vector<EmbeddingJob> &jobs) {
  // Every queued input in one list: packed calls of up to `places` sequences across requests.
  std::vector<std::vector<int32_t>> sequences;
  std::vector<size_t> jobOf;
  for (size_t j = 0; j < jobs.size(); ++j)
    for (const auto &input : jobs[j].inputs) {
      sequences.push_back(input);
      jobOf.push_back(j);
    }
  const int64_t d = session_.manifest().dOut;
  std::vector<std::vector<float>> vectors(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j)
    vectors[j].resize(jobs[j].inputs.size() * size_t(d));
  std::vector<size_t> next(jobs.size(), 0);
  int64_t calls = 0;
  Status status = forwardSequences(
      session_, sequences, places_, [&](size_t i, const float *rows) {
        size_t j = jobOf[i];
        poolHidden(rows, int64_t(sequences[i].size()), d, pool_, normalize_,
                   vectors[j].data() + next[j]++ * size_t(d));
        return Status::success();
      });
  calls = (int64_t(sequences.size()) + places_ - 1) / places_;
  for (size_t j = 0; j < jobs.size(); ++j)
    jobs[j].done(status, status ? std::move(vectors[j]) : std::vector<float>());
  std::lock_guard<std::mutex> lock(mutex_);
  embeddingCalls_ += calls;
  embeddedInputs_ += int64_t(sequences.size());
}

} // namespace xfrt
