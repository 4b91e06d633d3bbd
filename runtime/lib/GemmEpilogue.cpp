//===- GemmEpilogue.cpp - libxfrt's GEMM epilogues ------------------------===//
//
// GemmEpilogue.h.
//
//===----------------------------------------------------------------------===//
#include "GemmEpilogue.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define XF_EPILOGUE_X86 1
#include <immintrin.h>
#endif

namespace xfrt::gemm {

float activate(BlockEpilogue epilogue, float a) {
  switch (epilogue) {
  case BlockEpilogue::Relu:
    return std::max(a, 0.f);
  case BlockEpilogue::GeluTanh: { // as the Halide epilogue: tanh(y) = 1 − 2/(e^(2y) + 1)
    float y = float(0.7978845608028654) * (a + 0.044715f * a * a * a);
    return 0.5f * a * (1.f + (1.f - 2.f / (std::exp(2.f * y) + 1.f)));
  }
  case BlockEpilogue::GeluErf:
    return 0.5f * a * (1.f + std::erf(a * float(0.7071067811865476)));
  case BlockEpilogue::Silu:
  case BlockEpilogue::SwiGlu:
    return a / (1.f + std::exp(-a));
  default:
    return a;
  }
}

#ifdef XF_EPILOGUE_X86
namespace {
/// e^x for 16 floats: x = n·ln 2 + r (|r| ≤ ln2/2, ln 2 in two parts), Cephes' degree-6
/// polynomial for e^r (about 1 ulp), then ×2^n (vscalefps). x is clamped to [−87.3, 88.7]
/// first; a NaN stays NaN (the clamps return x when x is NaN).
__attribute__((target("avx2,fma,f16c,avx512f"))) inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.33654f), _mm512_min_ps(_mm512_set1_ps(88.72283f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, n);
}

} // namespace
#endif

#ifdef XF_EPILOGUE_X86
namespace {
/// finishGroup for no activation, ReLU, SiLU and SwiGLU in 512-bit vectors: the same IEEE
/// operations in the same order, so the same bits as the scalar loop.
__attribute__((target("avx2,fma,f16c,avx512f"))) void finishGroupAvx512(const Epilogue &c,
                                                                        int64_t m, int64_t n0,
                                                                        int count, const float *pre,
                                                                        const float *up) {
  const __mmask16 lanes = __mmask16((1u << count) - 1);
  __m512 v = _mm512_maskz_loadu_ps(lanes, pre);
  const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
  if (c.bias)
    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, c.bias + n0));
  if (c.epilogue == BlockEpilogue::Relu)
    v = _mm512_max_ps(_mm512_setzero_ps(), v); // (0 > v ? 0 : v): std::max's NaN and −0
  if (c.epilogue == BlockEpilogue::Silu || gated)
    v = _mm512_div_ps(
        v, _mm512_add_ps(_mm512_set1_ps(1.f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), v))));
  if (gated) {
    __m512 u = _mm512_maskz_loadu_ps(lanes, up);
    if (c.bias)
      u = _mm512_add_ps(u, _mm512_maskz_loadu_ps(lanes, c.bias + c.N + n0));
    v = _mm512_mul_ps(v, u);
  }
  if (c.residual)
    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, c.residual + m * c.residualStride + n0));
  _mm512_mask_storeu_ps(c.out + m * c.outStride + n0, lanes, v);
}
} // namespace
#endif

void finishGroup(const Epilogue &c, int64_t m, int64_t n0, int count, float *pre, const float *up) {
#ifdef XF_EPILOGUE_X86
  if (c.vector512 && (c.epilogue == BlockEpilogue::None || c.epilogue == BlockEpilogue::Relu ||
                      c.epilogue == BlockEpilogue::Silu || c.epilogue == BlockEpilogue::SwiGlu))
    return finishGroupAvx512(c, m, n0, count, pre, up);
#endif
  const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
  float upBiased[16];
  for (int i = 0; i < count; ++i)
    upBiased[i] = gated ? up[i] + (c.bias ? c.bias[c.N + n0 + i] : 0.f) : 0.f;
  for (int i = 0; c.bias && i < count; ++i)
    pre[i] += c.bias[n0 + i];
  for (int i = 0; i < count; ++i)
    pre[i] = activate(c.epilogue, pre[i]);
  for (int i = 0; i < count; ++i) {
    const int64_t n = n0 + i;
    float value = gated ? pre[i] * upBiased[i] : pre[i];
    if (c.residual)
      value += c.residual[m * c.residualStride + n];
    c.out[m * c.outStride + n] = value;
  }
}

#ifdef XF_EPILOGUE_X86
namespace {
/// finishPanelRows of a full panel without an activation (bias and residual optional): the
/// additions of finishGroupAvx512 in its order, inline (a call per row and half of the panel
/// cost ~20 % of the epilogue's time).
__attribute__((target("avx2,fma,f16c,avx512f"))) void
finishPanelRowsLinear(const Epilogue &e, int64_t m0, int tileRows, int64_t n0,
                      float (*out)[kPanelCols]) {
  for (int r = 0; r < tileRows; ++r) {
    float *to = e.out + (m0 + r) * e.outStride + n0;
    const float *residual = e.residual ? e.residual + (m0 + r) * e.residualStride + n0 : nullptr;
    for (int h = 0; h < 2; ++h) {
      __m512 v = _mm512_loadu_ps(out[r] + 16 * h);
      if (e.bias)
        v = _mm512_add_ps(v, _mm512_loadu_ps(e.bias + n0 + 16 * h));
      if (residual)
        v = _mm512_add_ps(v, _mm512_loadu_ps(residual + 16 * h));
      _mm512_storeu_ps(to + 16 * h, v);
    }
  }
}

/// finishPanelRows of a full SwiGLU panel (16 gate and 16 up sums a row): finishGroupAvx512's
/// operations in its order, inline over the tile's rows, unmasked (a call per row through
/// finishGroup's dispatch cost a fifth of the epilogue).
__attribute__((target("avx2,fma,f16c,avx512f"))) void
finishPanelRowsSwiGlu(const Epilogue &e, int64_t m0, int tileRows, int64_t n0,
                      float (*out)[kPanelCols]) {
  for (int r = 0; r < tileRows; ++r) {
    __m512 v = _mm512_loadu_ps(out[r]), u = _mm512_loadu_ps(out[r] + 16);
    if (e.bias)
      v = _mm512_add_ps(v, _mm512_loadu_ps(e.bias + n0));
    v = _mm512_div_ps(
        v, _mm512_add_ps(_mm512_set1_ps(1.f), exp512(_mm512_sub_ps(_mm512_setzero_ps(), v))));
    if (e.bias)
      u = _mm512_add_ps(u, _mm512_loadu_ps(e.bias + e.N + n0));
    v = _mm512_mul_ps(v, u);
    if (e.residual)
      v = _mm512_add_ps(v, _mm512_loadu_ps(e.residual + (m0 + r) * e.residualStride + n0));
    _mm512_storeu_ps(e.out + (m0 + r) * e.outStride + n0, v);
  }
}

} // namespace
#endif

void finishPanelRows(const Epilogue &e, int64_t m0, int rows, int64_t n0, int count,
                     float (*out)[kPanelCols]) {
  const bool gated = e.epilogue == BlockEpilogue::SwiGlu;
#ifdef XF_EPILOGUE_X86
  if (e.epilogue == BlockEpilogue::None && count == kPanelCols && e.vector512)
    return finishPanelRowsLinear(e, m0, rows, n0, out);
  if (gated && count == kPanelCols / 2 && e.vector512)
    return finishPanelRowsSwiGlu(e, m0, rows, n0, out);
#endif
  for (int r = 0; r < rows; ++r) {
    if (gated) {
      finishGroup(e, m0 + r, n0, count, out[r], out[r] + 16);
      continue;
    }
    finishGroup(e, m0 + r, n0, std::min(count, 16), out[r], nullptr);
    if (count > 16)
      finishGroup(e, m0 + r, n0 + 16, count - 16, out[r] + 16, nullptr);
  }
}

void prefetchEpilogueRows(const Epilogue &e, int64_t m0, int64_t rows, int64_t n0, int count) {
  for (int64_t m = m0; m < m0 + rows; ++m)
    for (int64_t n = n0; n < n0 + count; n += 16) {
      __builtin_prefetch(e.out + m * e.outStride + n, 1);
      if (e.residual)
        __builtin_prefetch(e.residual + m * e.residualStride + n, 0);
    }
}

} // namespace xfrt::gemm
