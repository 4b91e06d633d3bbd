//===- ServeScheduler.h - One thread runs the model for every client --*- C++ -*-===//
//
// The server's connection threads hand requests to a ServeScheduler; its one thread owns the
// Session and runs it, one bounded piece of work at a time so that no request holds the
// others (ServeConfig::stepTokens):
//  - completions go into a BatchDecoder (BatchGenerate.h): a request that arrives while
//    others are decoding joins at the next step and leaves when it stops, so up to `places`
//    sequences decode together; a step runs at most stepTokens token rows — every decoding
//    sequence's newest token, then slices of prompts (chunked prefill) — and a sequence is
//    admitted only within the KV memory budget;
//  - embedding requests are taken apart into one packed forward pass per iteration of up to
//    `places` inputs and stepTokens tokens, inputs taken from the active requests in turn
//    (round robin), so a small request is answered within a few passes however large the
//    others; each iteration runs one such pass and one decoder step.
//
// Cancellation (a client that went away): BatchRequest::cancelled and EmbeddingJob::cancelled
// are polled on the scheduler thread before every step / packed pass; once one returns true
// the request does no more work and its callback (onError / done) gets kCancelledMessage. An
// HTTP layer sets them from any thread, e.g. a shared std::atomic<bool> it stores when the
// connection closes:
//     auto gone = std::make_shared<std::atomic<bool>>(false);
//     request.cancelled = [gone] { return gone->load(); };   // ... on hang-up: *gone = true;
//
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
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace xfrt {

// Token rows one packed call runs, unless --step-tokens says otherwise.
constexpr int64_t kDefaultStepTokens = 512;

struct EmbeddingJob {
  std::vector<std::vector<int32_t>> inputs; // checked ids, 1 .. max_positions each
  // On success `vectors` holds inputs.size() rows of d_out floats.
  std::function<void(const Status &status, std::vector<float> vectors)> done;
  // As BatchRequest::cancelled: polled before every packed pass; true drops the job.
  std::function<bool()> cancelled;
};

struct ServeConfig {
  int64_t places = 32;    // sequences decoding together; inputs of one embeddings pass
  int64_t maxContext = 0; // positions of one sequence (prompt + new tokens): each place's
                          // KV cache; 0: the model's cache_positions
  int64_t stepTokens = kDefaultStepTokens; // token rows one call runs (at least one input or
                                           // one row per decoding sequence)
  int64_t kvMemoryBytes = 0; // the running sequences' reserved KV blocks; 0: no budget
  Pooling pool = Pooling::Mean;
  bool normalize = false;
  size_t maxQueued = 1024;
};

class ServeScheduler {
public:
  // Completions need session.canPackCached().
  ServeScheduler(Session &session, const ServeConfig &config);
  ServeScheduler(Session &session, int64_t places, Pooling pool, bool normalize, size_t maxQueued);
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
  int64_t positionLimit() const { return positionLimit_; }
  // Bytes of one KV block (kKvBlockPositions positions of a sequence); 0 for an encoder.
  int64_t kvBlockBytes() const { return kvBlockBytes_; }
  const ServeConfig &config() const { return config_; }
  struct Load {
    size_t running = 0, waiting = 0; // sequences decoding and embedding jobs under way;
                                     // requests not yet started
    BatchStats decode;               // the decoder's totals
    KvUse kv;                        // the KV caches now (BatchGenerate.h)
    // Embeddings: packed passes; inputs and tokens they ran; the most tokens of one pass;
    // jobs dropped by their `cancelled`.
    int64_t embeddingCalls = 0, embeddedInputs = 0, embeddedTokens = 0;
    int64_t maxEmbeddingCallTokens = 0, embeddingsCancelled = 0;
  };
  Load load() const;

private:
  // An embedding request under way: its inputs are run a few at a time.
  struct EmbeddingWork {
    EmbeddingJob job;
    std::vector<float> vectors;
    size_t next = 0, finished = 0; // inputs taken into a pass; inputs pooled
  };
  void loop();
  // Ends every request with `why`.
  void abandonAll(const Status &why, std::vector<BatchRequest> &requests);
  // One packed pass over inputs of the active embedding requests, in turn.
  void runEmbeddingPass();
  bool idleLocked() const {
    return incoming_.empty() && embeddings_.empty() && running_ == 0 && waiting_ == 0;
  }

  Session &session_;
  ServeConfig config_;
  BatchDecoder decoder_; // touched by the scheduler thread only
  int64_t positionLimit_ = 0, kvBlockBytes_ = 0;
  std::deque<EmbeddingWork> embedding_; // the scheduler thread's; the front goes first
  Load embedTotals_;                    // the scheduler thread's (its embedding fields)

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<BatchRequest> incoming_;
  std::vector<EmbeddingJob> embeddings_;
  bool stopping_ = false;
  std::optional<std::string> abandon_; // set by abandon(), taken by the thread
  // Mirrors of the thread's state and totals, updated under mutex_ after every iteration.
  size_t running_ = 0, waiting_ = 0;
  BatchStats stats_;
  KvUse kv_;
  Load embedMirror_;
  std::thread thread_;
};

} // namespace xfrt

#endif // XFRT_SERVESCHEDULER_H
