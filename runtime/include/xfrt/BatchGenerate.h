//===- BatchGenerate.h - Sequences decoding together ---------------*- C++ -*-===//
//
// A BatchDecoder generates for many sequences at once (continuous batching): up to
// `maxActive` sequences run together, one xf_forward_cached_packed call per step — a
// joining sequence's whole prompt (its prefill) and every running sequence's newest token
// share the call, so each GEMM sees all their rows — each on its own KV cache, a slot of one
// allocation (so that a step of single rows runs each attention once over every sequence). A
// sequence that stops (max-new-tokens, eos, the position limit) leaves at once and the next
// waiting one takes its place and its cache slot. Each sequence samples with its own options and generator,
// exactly as generate() does for one sequence (Generate.h): the same rule, the same draws.
// Its logits equal a single run's up to the GEMMs' summation order (docs/abi.md, "Packed
// batches"), so greedy and sampled ids match a single run unless two candidates are within
// float32 rounding of each other.
//
// An encoder-decoder has no KV cache: its decoder re-runs the whole prefix each step (Alg. 15
// as generate() runs it), so its pairs decode together in one xf_forward_packed call per step
// over every running pair's source and prefix, and each samples from its prefix's last row.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_BATCHGENERATE_H
#define XFRT_BATCHGENERATE_H

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Generate.h"
#include "xfrt/Random.h"
#include "xfrt/Session.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

namespace xfrt {

struct BatchRequest {
  std::vector<int32_t> prompt; // 1 <= size <= the decoder's position limit
  std::vector<int32_t> source; // an encoder-decoder's (a re-running decoder), else empty
  GenerateOptions options;     // maxNewTokens, sampling, eos (useCache and cachedPrefix unused)
  uint64_t seed = 0;           // a fresh Pcg32(seed, fnv1a64("xfrt.sampling")), as single runs
  std::function<void(int32_t)> onToken;              // each new id as soon as it is chosen
  std::function<void(const GenerateResult &)> onDone; // once, when the sequence stops
  // Polled before every step: true drops the sequence (a client that went away); onDone is
  // not called for it.
  std::function<bool()> cancelled;
  // Called instead of onDone when the sequence is abandoned (BatchDecoder::abandonAll).
  std::function<void(const Status &)> onError;
};

struct BatchStats {
  int64_t steps = 0, decodeSteps = 0; // packed calls; those without a prefill
  int64_t tokens = 0, decodeTokens = 0; // new tokens; those sampled in decode steps
  double ms = 0, decodeMs = 0;
  int64_t maxActive = 0; // the most sequences that ran together
};

class BatchDecoder {
public:
  // The session must be able to run xf_forward_cached_packed (Session::canPackCached).
  // Every KV cache holds `cachePositions` positions (<= the session's cachePositions()).
  BatchDecoder(Session &session, int64_t maxActive, int64_t cachePositions);
  // A decoder that re-runs every prefix with its source (an encoder-decoder's; the session must
  // be able to run xf_forward_packed, Session::canPack).
  static BatchDecoder rerunning(Session &session, int64_t maxActive);

  // Queues a request; it joins at the next step with a free place. Fails when its prompt
  // cannot run (empty, or longer than the position limit).
  Status add(BatchRequest request);
  // Whether nothing is running or waiting.
  bool idle() const { return active_.empty() && waiting_.empty(); }
  size_t running() const { return active_.size(); }
  size_t waiting() const { return waiting_.size(); }
  // One packed call: admits waiting sequences, runs, samples, retires the finished.
  Status step();
  // Steps until idle.
  Status run();
  // Drops every running and waiting sequence, telling each (onError) why: after a step
  // failed, so that a server can answer its clients and go on.
  void abandonAll(const Status &why);
  const BatchStats &stats() const { return stats_; }
  // The most positions a sequence may reach here.
  int64_t positionLimit() const { return limit_; }

private:
  struct Sequence {
    BatchRequest request;
    Pcg32 rng;
    std::vector<int32_t> tokens; // prompt and new tokens so far
    int64_t ran = 0;             // positions already in the cache
    GenerateResult result;
    int64_t slot = -1; // its KV cache: slot `slot` of caches_
  };
  // Makes room for `slots` caches (keeping the ones in use).
  Status growCaches(int64_t slots);
  Session &session_;
  int64_t maxActive_, cachePositions_, limit_;
  bool rerun_ = false; // rerunning(): no caches, the whole prefix every step
  AlignedBuffer caches_;        // cacheSlots_ slots of slotBytes_
  int64_t cacheSlots_ = 0, slotBytes_ = 0;
  std::vector<int64_t> freeSlots_;
  std::vector<std::unique_ptr<Sequence>> active_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  AlignedBuffer logits_;
  std::vector<int32_t> tokens_, sources_;
  std::vector<int64_t> lengths_, starts_, sourceLengths_, slots_;
  BatchStats stats_;
};

} // namespace xfrt

#endif // XFRT_BATCHGENERATE_H
