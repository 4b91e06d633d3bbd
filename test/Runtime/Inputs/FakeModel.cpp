//===- FakeModel.cpp - A hand-written stand-in for a generated model object
//===//
//
// Implements the ABI of docs/abi.md for a tiny model so libxfrt's main() can be
// tested end to end without the compiler. Built twice:
//   decoder (default): out[t, v] = sum_k wte[tok_t, k] * g[k] * wte[v, k]
//   (logits [l, 16])
//     derived[0] = wteᵀ [4, 16], filled by xf_prepare; xf_forward reads rows of wte
//     ("forward_reads": "rows": it stays in the mapped checkpoint, which runtime-hostile
//     truncates under the run).
//   -DFAKE_SEQ2SEQ: encoder-decoder with hidden output,
//     out[t, k] = wte[tok_t, k] * g[k] + mean_s wte[src_s, k] (hidden [l, 4])
//   -DFAKE_CACHED: a causal decoder with a KV cache ("cached": true,
//   cache_positions 10,
//     max_positions 12): with x_t = wte[tok_t] * g and c_t = mean_{s<=t} x_s,
//     out[t, v] = sum_k (x_t + c_t)[k] * wte[v, k] (logits [l, 16])
//     xf_forward_cached keeps x_s of earlier positions in the cache.
//   -DFAKE_SEQ2SEQ_LOGITS: the encoder-decoder with logits, out[t, v] = sum_k
//   h[t, k] wte[v, k]
//     for the hidden h above (so it can generate).
// Forward checks the alignment and sizes the ABI promises and returns nonzero
// when violated.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Abi.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

namespace {
constexpr int64_t V = 16, D = 4;
bool prepared = false;
int64_t scratchAsked = -1;

bool aligned64(const void *p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }
} // namespace

extern "C" {

#if defined(FAKE_CACHED)
const char xf_model_manifest[] = R"({
  "model": "fake-cached", "output": "logits", "encoder_decoder": false,
  "vocab": 16, "max_positions": 12, "d_out": 16, "cached": true, "cache_positions": 10,
  "hyperparameters": {"d_e": 4, "N_V": 16},
  "parameters": [{"name": "wte.weight", "shape": [16, 4], "init": "normal"},
                 {"name": "ln_f.weight", "shape": [4], "init": "ones"}],
  "derived": [{"bytes": 256}],
  "kernels": [{"name": "xf_k0_gemm", "kind": "gemm", "flops_per_row": 128}]
})";
#elif defined(FAKE_SEQ2SEQ_LOGITS)
const char xf_model_manifest[] = R"({
  "model": "fake-seq2seq-logits", "output": "logits", "encoder_decoder": true,
  "vocab": 16, "max_positions": 0, "d_out": 16, "cached": false, "cache_positions": 0,
  "hyperparameters": {"d_e": 4},
  "parameters": [{"name": "wte.weight", "shape": [16, 4]},
                 {"name": "ln_f.weight", "shape": [4], "init": "ones"}],
  "derived": [{"bytes": 256}],
  "kernels": []
})";
#elif !defined(FAKE_SEQ2SEQ)
const char xf_model_manifest[] = R"({
  "model": "fake-decoder", "output": "logits", "encoder_decoder": false,
  "vocab": 16, "max_positions": 8, "d_out": 16,
  "hyperparameters": {"d_e": 4, "N_V": 16},
  "parameters": [{"name": "wte.weight", "shape": [16, 4], "init": "normal",
                  "forward_reads": "rows"},
                 {"name": "ln_f.weight", "shape": [4], "init": "ones"}],
  "derived": [{"bytes": 256}],
  "kernels": [{"name": "xf_k0_gemm", "kind": "gemm", "flops_per_row": 128}]
})";
#else
const char xf_model_manifest[] = R"({
  "model": "fake-seq2seq", "output": "hidden", "encoder_decoder": true,
  "vocab": 16, "max_positions": 0, "d_out": 4,
  "hyperparameters": {"d_e": 4},
  "parameters": [{"name": "wte.weight", "shape": [16, 4]},
                 {"name": "ln_f.weight", "shape": [4], "init": "ones"}],
  "derived": [],
  "kernels": []
})";
#endif

int halide_set_num_threads(int n) {
  std::fprintf(stderr, "fake: halide_set_num_threads(%d)\n", n);
  return 1;
}

// Stand-ins for the Halide runtime's error handler and the profiling hooks of generated code.
typedef void (*HalideErrorHandler)(void *, const char *);
static HalideErrorHandler errorHandler = nullptr;
HalideErrorHandler halide_set_error_handler(HalideErrorHandler handler) {
  HalideErrorHandler old = errorHandler;
  errorHandler = handler;
  return old;
}
void xfrt_profile_enter(int32_t site);
void xfrt_profile_exit(int32_t site, int64_t rows, int64_t context_rows);

#if defined(FAKE_SEQ2SEQ) || defined(FAKE_SEQ2SEQ_LOGITS)
#define FAKE_ENCODER_DECODER 1
#endif
#ifndef FAKE_SEQ2SEQ
#define FAKE_UNEMBED 1 // derived[0] = wteᵀ, logits = h · wteᵀ
#endif

int32_t xf_prepare(void *const *params, void *const *derived) {
#ifdef FAKE_UNEMBED
  const float *wte = static_cast<const float *>(params[0]);
  float *wteT = static_cast<float *>(derived[0]); // [D, V]
  for (int64_t v = 0; v < V; ++v)
    for (int64_t k = 0; k < D; ++k)
      wteT[k * V + v] = wte[v * D + k];
#else
  (void)params;
  (void)derived;
#endif
  prepared = true;
  return 0;
}

int64_t xf_scratch_bytes(int64_t l, int64_t l_z) {
  scratchAsked = (l + l_z) * D * int64_t(sizeof(float));
  return scratchAsked;
}

namespace {
#ifdef FAKE_UNEMBED
// out[t, :] = h[t, :] · wteᵀ for t < l.
void unembed(const float *h, int64_t l, const float *wteT, float *out) {
  for (int64_t t = 0; t < l; ++t)
    for (int64_t v = 0; v < V; ++v) {
      float acc = 0;
      for (int64_t k = 0; k < D; ++k)
        acc += h[t * D + k] * wteT[k * V + v];
      out[t * V + v] = acc;
    }
}
#endif
#ifdef FAKE_CACHED
constexpr int64_t kCachePositions = 10;
// h[t] = x[t] + mean_{s <= t} x[s], where x holds positions 0 .. start + l - 1
// and t runs over start .. start + l - 1 (written to h[t - start]).
void causalMix(const float *x, int64_t start, int64_t l, float *h) {
  for (int64_t t = start; t < start + l; ++t)
    for (int64_t k = 0; k < D; ++k) {
      float sum = 0;
      for (int64_t s = 0; s <= t; ++s)
        sum += x[s * D + k];
      h[(t - start) * D + k] = x[t * D + k] + sum / float(t + 1);
    }
}
#endif
} // namespace

int32_t xf_forward(void *const *params, void *const *derived, const int32_t *tokens, int64_t l,
                   const int32_t *source, int64_t l_z, float *out, void *scratch) {
  if (!prepared)
    return 10;
  if (scratchAsked != (l + l_z) * D * int64_t(sizeof(float)) || !aligned64(scratch))
    return 11;
  // Hostile-environment hooks (test/Runtime/hostile_e2e.py): a kernel failing the way Halide
  // reports running out of memory, and the checkpoint truncated while mapped.
  if (std::getenv("XF_FAKE_HALIDE_ERROR")) {
    if (errorHandler)
      errorHandler(nullptr, "Out of memory (halide_malloc returned nullptr)\n");
    return -3; // halide_error_code_out_of_memory
  }
  if (const char *victim = std::getenv("XF_FAKE_TRUNCATE"))
    if (::truncate(victim, 0) != 0)
      return 14;
  xfrt_profile_enter(0);
  const float *wte = static_cast<const float *>(params[0]);
  const float *g = static_cast<const float *>(params[1]);
  float *x = static_cast<float *>(scratch); // [l, D]
  for (int64_t t = 0; t < l; ++t) {
    if (tokens[t] < 0 || tokens[t] >= V)
      return 12;
    for (int64_t k = 0; k < D; ++k)
      x[t * D + k] = wte[tokens[t] * D + k] * g[k];
  }
#ifndef FAKE_ENCODER_DECODER
  if (source || l_z != 0 || !aligned64(derived[0]))
    return 13;
  const float *wteT = static_cast<const float *>(derived[0]);
#ifdef FAKE_CACHED
  std::vector<float> h(size_t(l * D));
  causalMix(x, 0, l, h.data());
  unembed(h.data(), l, wteT, out);
#else
  unembed(x, l, wteT, out);
#endif
#else
  if (!source || l_z < 1)
    return 13;
  float *mean = x + l * D; // [D]
  for (int64_t k = 0; k < D; ++k) {
    float acc = 0;
    for (int64_t s = 0; s < l_z; ++s)
      acc += wte[source[s] * D + k];
    mean[k] = acc / float(l_z);
  }
#ifdef FAKE_SEQ2SEQ
  (void)derived;
  for (int64_t t = 0; t < l; ++t)
    for (int64_t k = 0; k < D; ++k)
      out[t * D + k] = x[t * D + k] + mean[k];
#else
  std::vector<float> h(size_t(l * D));
  for (int64_t t = 0; t < l; ++t)
    for (int64_t k = 0; k < D; ++k)
      h[size_t(t * D + k)] = x[t * D + k] + mean[k];
  unembed(h.data(), l, static_cast<const float *>(derived[0]), out);
#endif
#endif
  xfrt_profile_exit(0, l, 0);
  return 0;
}

#ifdef FAKE_CACHED
int64_t cacheAsked = 0; // positions of the last xf_cache_bytes query

int64_t xf_cache_bytes(int64_t positions) {
  if (positions < 1 || positions > kCachePositions)
    return -1;
  cacheAsked = positions;
  return positions * D * int64_t(sizeof(float));
}

int32_t xf_forward_cached(void *const *params, void *const *derived, const int32_t *tokens,
                          int64_t l, int64_t start, float *out, void *scratch, void *cache,
                          int64_t cachePositions) {
  if (!prepared)
    return 10;
  if (scratchAsked < l * D * int64_t(sizeof(float)) || !aligned64(scratch) || !aligned64(cache))
    return 11;
  if (cachePositions != cacheAsked)
    return 15; // the cache was sized for another capacity
  if (l < 1 || start < 0 || start + l > cachePositions)
    return 14;
  const float *wte = static_cast<const float *>(params[0]);
  const float *g = static_cast<const float *>(params[1]);
  float *x = static_cast<float *>(cache); // [cache_positions, D]
  for (int64_t t = 0; t < l; ++t) {
    if (tokens[t] < 0 || tokens[t] >= V)
      return 12;
    for (int64_t k = 0; k < D; ++k)
      x[(start + t) * D + k] = wte[tokens[t] * D + k] * g[k];
  }
  float *h = static_cast<float *>(scratch); // [l, D]
  causalMix(x, start, l, h);
  // Like generated code: only the newest token's row is returned.
  unembed(h + (l - 1) * D, 1, static_cast<const float *>(derived[0]), out);
  return 0;
}
#endif

} // extern "C"
