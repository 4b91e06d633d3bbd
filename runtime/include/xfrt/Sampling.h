//===- Sampling.h - The next token from a row of logits ----------*- C++
//-*-===//
//
// Alg. 14's "y ~ p" with the usual restrictions. Temperature 0 is greedy: the
// argmax, ties to the lowest id, NaN below everything. Otherwise, in double
// precision:
//   1. candidates: every id; with top_k = K > 0, the K largest logits (ties to
//   lower ids);
//   2. q_i ∝ exp((logit_i − max) / τ) over the candidates;
//   3. with top_p = P < 1, the fewest highest-q candidates (ties to lower ids)
//   whose q sums to
//      at least P·Σq are kept;
//   4. the kept ids in increasing order, cumulative sums c_i; one draw u =
//   nextOpenUnit()·c_last
//      from the caller's PCG32 picks the first id with c_i > u (the oracle's
//      inverse-CDF rule, test/reference/inference.py).
// top_k = 1 therefore equals greedy. Non-finite logits never get probability
// mass (unless all are, then the result is greedy's).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SAMPLING_H
#define XFRT_SAMPLING_H

#include "xfrt/Random.h"

#include <cstdint>

namespace xfrt {

struct SamplingOptions {
  double temperature = 0; // 0: greedy
  int64_t topK = 0;       // 0: no limit
  double topP = 1;        // 1: no limit; (0, 1]
};

// Greedy: the index of the largest value of row[0, n) (lowest index among ties,
// NaN last).
int64_t argmaxToken(const float *row, int64_t n);

// The next token for logits row[0, n) (n ≥ 1). Draws from `rng` only when
// sampling.
int64_t sampleToken(const float *row, int64_t n, const SamplingOptions &options, Pcg32 &rng);

} // namespace xfrt

#endif // XFRT_SAMPLING_H
