//===- FakeModel.cpp - A hand-written stand-in for a generated model object ===//
//
// Implements the ABI of docs/abi.md for a tiny model so libxfrt's main() can be tested end to
// end without the compiler. Built twice:
//   decoder (default): out[t, v] = sum_k wte[tok_t, k] * g[k] * wte[v, k]   (logits [l, 16])
//     derived[0] = wteᵀ [4, 16], filled by xf_prepare.
//   -DFAKE_SEQ2SEQ: encoder-decoder with hidden output,
//     out[t, k] = wte[tok_t, k] * g[k] + mean_s wte[src_s, k]                 (hidden [l, 4])
// Forward checks the alignment and sizes the ABI promises and returns nonzero when violated.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Abi.h"

#include <cstdint>
#include <cstdio>

namespace {
constexpr int64_t V = 16, D = 4;
bool prepared = false;
int64_t scratchAsked = -1;

bool aligned64(const void *p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }
} // namespace

extern "C" {

#ifndef FAKE_SEQ2SEQ
const char xf_model_manifest[] = R"({
  "model": "fake-decoder", "output": "logits", "encoder_decoder": false,
  "vocab": 16, "max_positions": 8, "d_out": 16,
  "hyperparameters": {"d_e": 4, "N_V": 16},
  "parameters": [{"name": "wte.weight", "shape": [16, 4], "init": "normal"},
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

void xf_prepare(void *const *params, void *const *derived) {
#ifndef FAKE_SEQ2SEQ
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
}

int64_t xf_scratch_bytes(int64_t l, int64_t l_z) {
  scratchAsked = (l + l_z) * D * int64_t(sizeof(float));
  return scratchAsked;
}

int32_t xf_forward(void *const *params, void *const *derived, const int32_t *tokens, int64_t l,
                   const int32_t *source, int64_t l_z, float *out, void *scratch) {
  if (!prepared)
    return 10;
  if (scratchAsked != (l + l_z) * D * int64_t(sizeof(float)) || !aligned64(scratch))
    return 11;
  const float *wte = static_cast<const float *>(params[0]);
  const float *g = static_cast<const float *>(params[1]);
  float *x = static_cast<float *>(scratch); // [l, D]
  for (int64_t t = 0; t < l; ++t) {
    if (tokens[t] < 0 || tokens[t] >= V)
      return 12;
    for (int64_t k = 0; k < D; ++k)
      x[t * D + k] = wte[tokens[t] * D + k] * g[k];
  }
#ifndef FAKE_SEQ2SEQ
  if (source || l_z != 0 || !aligned64(derived[0]))
    return 13;
  const float *wteT = static_cast<const float *>(derived[0]);
  for (int64_t t = 0; t < l; ++t)
    for (int64_t v = 0; v < V; ++v) {
      float acc = 0;
      for (int64_t k = 0; k < D; ++k)
        acc += x[t * D + k] * wteT[k * V + v];
      out[t * V + v] = acc;
    }
#else
  (void)derived;
  if (!source || l_z < 1)
    return 13;
  float *mean = x + l * D; // [D]
  for (int64_t k = 0; k < D; ++k) {
    float acc = 0;
    for (int64_t s = 0; s < l_z; ++s)
      acc += wte[source[s] * D + k];
    mean[k] = acc / float(l_z);
  }
  for (int64_t t = 0; t < l; ++t)
    for (int64_t k = 0; k < D; ++k)
      out[t * D + k] = x[t * D + k] + mean[k];
#endif
  return 0;
}

} // extern "C"
