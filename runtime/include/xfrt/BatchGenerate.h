//===- BatchGenerate.h - Sequences decoding together ---------------*- C++ -*-===//
//
// A BatchDecoder generates for many sequences at once (continuous batching): up to
// `maxActive` sequences run together, one xf_forward_cached_packed call per step — a
// joining sequence's whole prompt (its prefill) and every running sequence's newest token
// share the call, so each GEMM sees all their rows — each on its own KV cache, a slot of one
// allocation (so that a step of single rows runs each attention once over every sequence). A
// sequence that stops (max-new-tokens, eos, the position limit) leaves at once and the next
// waiting one takes its place and its cache slot. Each sequence samples with its own options and
// generator, exactly as generate() does for one sequence (Generate.h): the same rule, the same
// draws. Its logits equal a single run's up to the GEMMs' summation order (docs/abi.md, "Packed
// batches"), so greedy and sampled ids match a single run unless two candidates are within
// float32 rounding of each other.
//
// Work and memory per step are bounded (BatchLimits): a call runs at most `stepTokens` token
// rows — every decoding sequence's one row first, then prefill rows, the prompt with the fewest
// left first, a long prompt split over as many steps as it needs (chunked prefill), so a long
// prompt holds neither the sequences decoding nor a short prompt that arrives during it. The caches are KvCacheSlots (memory only where positions
// were written, given back when a sequence ends); with a KV budget a sequence is admitted only
// when its worst case — prompt + max-new-tokens positions, within the position limit, in
// blocks of kKvBlockPositions — fits beside those running, in arrival order.
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
#include "xfrt/KvCacheSlots.h"
#include "xfrt/Random.h"
#include "xfrt/Session.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace xfrt {

struct BatchRequest {
  std::vector<int32_t> prompt; // 1 <= size <= the decoder's position limit
  std::vector<int32_t> source; // an encoder-decoder's (a re-running decoder), else empty
  GenerateOptions options;     // maxNewTokens, sampling, eos (useCache and cachedPrefix unused)
  uint64_t seed = 0;           // a fresh Pcg32(seed, fnv1a64("xfrt.sampling")), as single runs
  std::function<void(int32_t)> onToken;               // each new id as soon as it is chosen
  std::function<void(const GenerateResult &)> onDone; // once, when the sequence stops
  // The cancellation of a request (a client that went away), set from any thread: polled on
  // the decoder's thread before every step, waiting or running; true drops the sequence
  // before that step's call — its place and KV cache are free for the next — and onError is
  // called with kCancelledMessage instead of onDone. Must not block.
  std::function<bool()> cancelled;
  // Called instead of onDone when the sequence is abandoned (BatchDecoder::abandonAll) or
  // cancelled: every request gets exactly one of onDone and onError.
  std::function<void(const Status &)> onError;
};

// The onError message of a cancelled request.
constexpr const char *kCancelledMessage = "cancelled: the client went away";

// What one step may run and the caches may hold.
struct BatchLimits {
  int64_t stepTokens = 0;    // token rows one call runs (at least one per running sequence);
                             // 0: no bound (every prompt whole in one call)
  int64_t kvBudgetBytes = 0; // the running sequences' reserved KV blocks; 0: no budget
};

struct BatchStats {
  int64_t steps = 0, decodeSteps = 0;   // packed calls; those without a prefill
  int64_t tokens = 0, decodeTokens = 0; // new tokens; those sampled in decode steps
  double ms = 0, decodeMs = 0;
  int64_t maxActive = 0;             // the most sequences that ran together
  int64_t rows = 0, maxStepRows = 0; // token rows run; the most in one call
  int64_t prefillChunks = 0;         // prompt slices that did not end their prompt
  int64_t cancelled = 0;             // sequences dropped by their `cancelled`
};

// The KV caches' memory, in blocks of kKvBlockPositions positions of one sequence.
struct KvUse {
  int64_t blockBytes = 0;           // one block: kKvBlockPositions positions of every layer's K, V
  int64_t blocksInUse = 0;          // positions the running sequences have written
  int64_t blocksReserved = 0;       // what their admission reserved (prompt + max-new-tokens)
  int64_t peakBlocksReserved = 0;   // the most blocksReserved has been
  int64_t budgetBlocks = 0;         // BatchLimits::kvBudgetBytes in whole blocks (0 without one)
  int64_t slots = 0, slotBytes = 0; // the places' address space (slots × slotBytes)
};

class BatchDecoder {
public:
  // The session must be able to run xf_forward_cached_packed (Session::canPackCached).
  // Every KV cache holds `cachePositions` positions (<= the session's cachePositions()).
  BatchDecoder(Session &session, int64_t maxActive, int64_t cachePositions,
               BatchLimits limits = {});
  // A decoder that re-runs every prefix with its source (an encoder-decoder's; the session must
  // be able to run xf_forward_packed, Session::canPack).
  static BatchDecoder rerunning(Session &session, int64_t maxActive);

  // Queues a request; it joins at the next step with a free place (and room in the KV
  // budget). Fails when its prompt cannot run (empty, or longer than the position limit) or
  // its KV blocks alone exceed the budget (kvRefusal).
  Status add(BatchRequest request);
  // Bytes of one KV block (kKvBlockPositions positions of a sequence); 0 for a re-running
  // decoder. The first call asks the session (xf_cache_bytes).
  Expected<int64_t> kvBlockBytes();
  // Why a request of `promptTokens` and `maxNewTokens` can never run within the KV budget, or
  // nullopt when it can.
  std::optional<std::string> kvRefusal(int64_t promptTokens, int64_t maxNewTokens);
  const KvUse &kvUse() const { return kv_; }
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
    Pcg32 rng{0, 0};
    std::vector<int32_t> tokens; // prompt and new tokens so far
    int64_t ran = 0;             // positions already in the cache
    GenerateResult result;
    int64_t slot = -1;  // its KV cache: slot `slot` of caches_
    int64_t blocks = 0; // KV blocks its admission reserved
    int64_t rows = 0;   // token rows in this step's call (0: not in it)
  };
  // The positions a sequence may reach: its prompt and new tokens, within the limit.
  int64_t worstPositions(int64_t promptTokens, int64_t maxNewTokens) const;
  void dropCancelled();
  Status admit();
  // Ends a running sequence's use of its place and cache (it finished or was dropped).
  void retire(Sequence &s);
  // This step's rows: decoding sequences first, then prefill slices within stepTokens.
  void planCall();
  Status runCall();
  void sampleAndFinish();
  Session &session_;
  int64_t maxActive_, cachePositions_, limit_;
  BatchLimits limits_;
  bool rerun_ = false;  // rerunning(): no caches, the whole prefix every step
  KvCacheSlots caches_; // maxActive_ slots of cachePositions_, reserved at the first admission
  KvUse kv_;
  std::vector<int64_t> freeSlots_;
  std::vector<std::unique_ptr<Sequence>> active_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  AlignedBuffer logits_;
  std::vector<int32_t> tokens_, sources_;
  std::vector<int64_t> lengths_, starts_, sourceLengths_, slots_;
  std::vector<Sequence *> inCall_; // the sequences of this step's call, in row order
  std::vector<Sequence *> prefilling_; // planCall's: those whose prompt is not all run
  std::vector<int64_t> rowOf_;     // re-running: each one's last row in the output
  bool prefill_ = false;           // this step's call runs a prompt slice
  BatchStats stats_;
};

} // namespace xfrt

#endif // XFRT_BATCHGENERATE_H
