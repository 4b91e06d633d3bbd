//===- Generate.h - Alg. 14 / 15: prompting a decoder ------------*- C++
//-*-===//
//
// generate() extends a prompt one token at a time, sampling each from the last
// row of the logits (Sampling.h). With a KV cache (Session::canCache and not
// disabled) the prompt is prefilled once (xf_forward_cached, start 0) and each
// step runs one token; otherwise every step re-runs xf_forward on the whole
// prefix (Alg. 14 as written; Alg. 15 with the source fixed for
// encoder-decoders). Both paths compute the same logits, so greedy ids agree.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_GENERATE_H
#define XFRT_GENERATE_H

#include "xfrt/Random.h"
#include "xfrt/Sampling.h"
#include "xfrt/Session.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace xfrt {

struct GenerateOptions {
  int64_t maxNewTokens = 0;
  SamplingOptions sampling;
  std::optional<int32_t> eos; // stop right after emitting it (it is included)
  bool useCache = true;       // use xf_forward_cached when the session can
  // Positions of the prompt already in the session's KV cache (a conversation's earlier turns):
  // the first step runs only prompt[cachedPrefix..] at start = cachedPrefix.
  int64_t cachedPrefix = 0;
  // The caller sized the KV cache (Session::reserveCache) for more than this call; otherwise
  // generate sizes it for the prompt and maxNewTokens when it starts from position 0.
  bool cacheSizedByCaller = false;
};

struct GenerateResult {
  std::vector<int32_t> newTokens;
  bool cached = false;    // the KV-cache path ran
  std::string stopReason; // "max-new-tokens", "eos" or the position-limit message
  bool hitPositionLimit = false;
  double prefillMs = 0; // the forward pass over the prompt (and the first sample)
  double decodeMs = 0;  // every later step
  int64_t promptTokens = 0;
};

// The most positions a sequence may reach: the cache's capacity on the cached
// path, else max_positions (or kMaxTokensWithoutLimit when the model has none).
int64_t positionLimit(const Session &session, bool cached);

// `onToken` sees each new id as soon as it is chosen. `source` is empty except
// for encoder-decoders. The prompt must be non-empty and within the position
// limit.
Expected<GenerateResult> generate(Session &session, const std::vector<int32_t> &prompt,
                                  const std::vector<int32_t> &source,
                                  const GenerateOptions &options, Pcg32 &rng,
                                  const std::function<void(int32_t)> &onToken);

} // namespace xfrt

#endif // XFRT_GENERATE_H
