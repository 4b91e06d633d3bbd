//===- ServeScheduler.h - One thread runs the model for every client --*- C++ -*-===//
//
// The server's connection threads hand requests to a ServeScheduler; its one thread owns the
// Session and runs it:
//  - completions go into a BatchDecoder (BatchGenerate.h): a request that arrives while
//    others are decoding joins at the next step (its prefill shares that packed call) and
//    leaves when it stops, so up to `places` sequences decode together at any time;
//  - embedding requests queued while a step ran are run together: all their inputs in packed
//    forward passes of up to `places` sequences, then pooled (Embeddings.h).
// Callbacks (BatchRequest::onToken/onDone/onError, EmbeddingJob::done) run on that thread;
// they must not block. The queue is bounded: submit() refuses work past `maxQueued` waiting
// requests, which the server answers with 503.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SERVESCHEDULER_H
#define XFRT_SERVESCHEDULER_H

#include "xfrt/BatchGenerate.h"
#include "xfrt/Embeddings.h"
#include "xfrt/Session.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace xfrt {

struct EmbeddingJob {
  std::vector<std::vector<int32_t>> inputs; // checked ids, 1 .. max_positions each
  // On success `vectors` holds inputs.size() rows of d_out floats.
  std::function<void(const Status &status, std::vector<float> vectors)> done;
};

class ServeScheduler {
public:
  // Completions need session.canPackCached(); every KV cache holds the session's
  // cachePositions().
  ServeScheduler(Session &session, int64_t places, Pooling pool, bool normalize,
                 size_t maxQueued);
  ~ServeScheduler();
  ServeScheduler(const ServeScheduler &) = delete;
  ServeScheduler &operator=(const ServeScheduler &) = delete;

  // False (and nothing queued) when maxQueued requests are already waiting or after stop().
  bool submit(BatchRequest request);
  bool submit(EmbeddingJob job);
  // Finishes what is queued and running, then joins the thread.
  void stop();
  // Ends every queued and running request at the next step with `why` (onError, or an
  // embedding job's done with the error): a shutdown that does not wait.
  void abandon(const std::string &why);
  // Waits until nothing is running or queued; false on timeout.
  bool waitIdle(std::chrono::milliseconds timeout);
  // The most positions a generated sequence may reach (prompt included).
  int64_t positionLimit() const { return decoder_.positionLimit(); }
  struct Load {
    size_t running = 0, waiting = 0; // sequences decoding; requests not yet started
    BatchStats decode;               // the decoder's totals
    int64_t embeddingCalls = 0, embeddedInputs = 0;
  };
  Load load() const;

private:
  void loop();
  void runEmbeddings(std::vector<EmbeddingJob> &jobs);
  bool idleLocked() const {
    return incoming_.empty() && embeddings_.empty() && running_ == 0 && waiting_ == 0;
  }

  Session &session_;
  int64_t places_;
  Pooling pool_;
  bool normalize_;
  size_t maxQueued_;
  BatchDecoder decoder_; // touched by the scheduler thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<BatchRequest> incoming_;
  std::vector<EmbeddingJob> embeddings_;
  bool stopping_ = false;
  std::optional<std::string> abandon_; // set by abandon(), taken by the thread
  // Mirrors of the decoder's state and totals, updated under mutex_ after every step.
  size_t running_ = 0, waiting_ = 0;
  BatchStats stats_;
  int64_t embeddingCalls_ = 0, embeddedInputs_ = 0;
  std::thread thread_;
};

} // namespace xfrt

#endif // XFRT_SERVESCHEDULER_H
