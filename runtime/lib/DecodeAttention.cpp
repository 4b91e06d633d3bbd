//===- DecodeAttention.cpp - One KV-cache decode step of attention --------===//
//
// xfrt/DecodeAttention.h. Called by generated code in place of the Halide attention kernel when
// a cached call has one query row: the query heads are rotated once (a table of the position's
// cos/sin, computed in double as the Halide kernels do and kept while the position stays the
// same — every layer of a step shares it), then tasks of (K/V head, key range) run on the
// thread pool, then the ranges merge.
//
//===----------------------------------------------------------------------===//
#include "xfrt/DecodeAttention.h"
#include "xfrt/DType.h"
#include "xfrt/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define XF_DECODE_ATTENTION_X86 1
#include <immintrin.h>
#endif

// The Halide runtime's parallel loop (BlockGemv.cpp says why it is weak).
extern "C" int halide_do_par_for(void *userContext, int (*task)(void *, int, uint8_t *), int min,
                                 int size, uint8_t *closure) __attribute__((weak));

namespace xfrt {
namespace {

/// A finite stand-in for −∞ (as the Halide kernels'): differences of two are 0, not NaN.
constexpr float kNoScore = -1e30f;
/// Query heads per K/V head that a task's registers of running maxima allow.
constexpr int kMaxGroup = 64;
/// Keys a range holds at least, so that short contexts stay one range per K/V head.
constexpr int kMinKeysPerRange = 32;
/// How far ahead of the key (value) row being read its cache lines are prefetched: a task's
/// rows are a short stream (a few KiB) that the hardware prefetchers pick up late.
constexpr int kPrefetchKeys = 32;

struct TaskArgs;
using TaskFn = void (*)(const TaskArgs &, int);

struct TaskArgs {
  const float *q; // the rotated query heads, [H][dK]
  const void *k, *v;
  int64_t keyHeadStride, valueHeadStride;
  int group, dK, dV, keys, range, ranges;
  float scale;
  float *partOut, *partMax, *partSum; // per task: [group][dV], [group], [group]
  TaskFn fn;
};

// ---- Portable ------------------------------------------------------------------------------

float widen(float x) { return x; }
float widen(uint16_t h) { return halfToFloat(h); }

template <typename KV>
void portableRange(const TaskArgs &a, int task) {
  const int g = task / a.ranges, p = task % a.ranges, G = a.group, dK = a.dK, dV = a.dV;
  const int first = p * a.range, n = std::min(a.range, a.keys - first);
  const KV *keys = static_cast<const KV *>(a.k) + g * a.keyHeadStride + int64_t(first) * dK;
  const KV *values = static_cast<const KV *>(a.v) + g * a.valueHeadStride + int64_t(first) * dV;
  thread_local std::vector<float> scores;
  scores.resize(size_t(n));
  for (int h = 0; h < G; ++h) {
    const float *query = a.q + int64_t(g * G + h) * dK;
    float m = kNoScore;
    for (int s = 0; s < n; ++s) {
      float dot = 0.f;
      for (int c = 0; c < dK; ++c)
        dot += query[c] * widen(keys[int64_t(s) * dK + c]);
      scores[s] = dot * a.scale;
      m = std::max(m, scores[s]);
    }
    float total = 0.f;
    for (int s = 0; s < n; ++s)
      total += scores[s] = std::exp(scores[s] - m);
    float *out = a.partOut + (int64_t(task) * G + h) * dV;
    std::fill(out, out + dV, 0.f);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < dV; ++d)
        out[d] += scores[s] * widen(values[int64_t(s) * dV + d]);
    a.partMax[task * G + h] = m;
    a.partSum[task * G + h] = total;
  }
}

TaskFn portableRangeFor(bool half) { return half ? portableRange<uint16_t> : portableRange<float>; }

#ifdef XF_DECODE_ATTENTION_X86
// e^x for x <= 0 (Cephes' expf: x = n·ln2 + r, |r| <= ln2/2, a degree-6 polynomial in r, times
// 2^n through the exponent bits), within 2 ulp; below −87 it returns e^−87 (the callers zero
// masked lanes themselves).
#define XF_EXP_BODY(V, set1, add, mul, fma, max, round, pow2)                                      \
  x = max(x, set1(-87.f));                                                                         \
  V n = round(mul(x, set1(1.44269504088896341f)));                                                 \
  V r = fma(n, set1(-0.693359375f), x);                                                            \
  r = fma(n, set1(2.12194440e-4f), r);                                                             \
  V poly = set1(1.9875691500e-4f);                                                                 \
  poly = fma(poly, r, set1(1.3981999507e-3f));                                                     \
  poly = fma(poly, r, set1(8.3334519073e-3f));                                                     \
  poly = fma(poly, r, set1(4.1665795894e-2f));                                                     \
  poly = fma(poly, r, set1(1.6666665459e-1f));                                                     \
  poly = fma(poly, r, set1(5.0000001201e-1f));                                                     \
  V y = add(fma(poly, mul(r, r), r), set1(1.f));                                                   \
  return mul(y, pow2(n));

inline void prefetch(const char *p) { _mm_prefetch(p, _MM_HINT_T0); }

namespace avx2 {
#define XF_TARGET __attribute__((target("avx2,fma,f16c")))
using V = __m256;
constexpr int W = 8, kAccumulators = 8; // 16 ymm registers: 8 accumulators, the rest loads
XF_TARGET inline V vzero() { return _mm256_setzero_ps(); }
XF_TARGET inline V vset1(float x) { return _mm256_set1_ps(x); }
XF_TARGET inline V vload(const float *p) { return _mm256_loadu_ps(p); }
XF_TARGET inline void vstore(float *p, V x) { _mm256_storeu_ps(p, x); }
XF_TARGET inline V vloadKv(const float *p) { return _mm256_loadu_ps(p); }
XF_TARGET inline V vloadKv(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
XF_TARGET inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
XF_TARGET inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
XF_TARGET inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
XF_TARGET inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
XF_TARGET inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
XF_TARGET inline float vhsum(V x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
XF_TARGET inline float vhmax(V x) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}
/// Lane i: the sum of the lanes of v[i].
XF_TARGET inline V vsumEach(const V *v) {
  V a = _mm256_hadd_ps(v[0], v[1]), b = _mm256_hadd_ps(v[2], v[3]);
  V c = _mm256_hadd_ps(v[4], v[5]), d = _mm256_hadd_ps(v[6], v[7]);
  V low = _mm256_hadd_ps(a, b), high = _mm256_hadd_ps(c, d); // per 128-bit half
  return _mm256_add_ps(_mm256_permute2f128_ps(low, high, 0x20),
                       _mm256_permute2f128_ps(low, high, 0x31));
}
XF_TARGET inline V vkeepFirst(V x, int valid, float fill) {
  if (valid >= W)
    return x;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const V keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), lane));
  return _mm256_blendv_ps(_mm256_set1_ps(fill), x, keep);
}
XF_TARGET inline V roundNearest(V x) {
  return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
XF_TARGET inline V pow2(V n) { // n in [-126, 0]
  __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_castsi256_ps(bits);
}
XF_TARGET inline V vexp(V x) {
  XF_EXP_BODY(V, vset1, vadd, vmul, vfma, vmax, roundNearest, pow2)
}
/// n floats (a multiple of W) to float16, W at a time: vcvtps2ph rounds to nearest even as
/// floatToHalf does, to the same bits for every float but NaNs (all 2^32 compared; a NaN stays a
/// quiet NaN of its sign, with its top payload bits, as the host code's truncf keeps them), and
/// replaces floatToHalf's ~6 cycles a value (384 values a SmolLM2 call, 1,536 a GPT-2 one).
XF_TARGET inline void storeHalves(const float *from, int64_t n, uint16_t *to) {
  for (int64_t i = 0; i < n; i += W)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(to + i),
        _mm256_cvtps_ph(vload(from + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#include "DecodeAttentionTask.inc"
#undef XF_TARGET
} // namespace avx2

namespace avx512 {
#define XF_TARGET __attribute__((target("avx2,fma,f16c,avx512f")))
using V = __m512;
constexpr int W = 16, kAccumulators = 16; // 32 zmm registers
XF_TARGET inline V vzero() { return _mm512_setzero_ps(); }
XF_TARGET inline V vset1(float x) { return _mm512_set1_ps(x); }
XF_TARGET inline V vload(const float *p) { return _mm512_loadu_ps(p); }
XF_TARGET inline void vstore(float *p, V x) { _mm512_storeu_ps(p, x); }
XF_TARGET inline V vloadKv(const float *p) { return _mm512_loadu_ps(p); }
XF_TARGET inline V vloadKv(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
}
XF_TARGET inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
XF_TARGET inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
XF_TARGET inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
XF_TARGET inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
XF_TARGET inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
XF_TARGET inline float vhsum(V x) { return _mm512_reduce_add_ps(x); }
XF_TARGET inline float vhmax(V x) { return _mm512_reduce_max_ps(x); }
/// Lanes 0..7: pairwise sums of a's lanes; 8..15: of b's.
XF_TARGET inline V pairSums(V a, V b, __m512i even, __m512i odd) {
  return _mm512_add_ps(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
}
/// Lane i: the sum of the lanes of v[i] — four levels of adding even and odd lanes pairwise.
XF_TARGET inline V vsumEach(const V *v) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  V l1[8], l2[4], l3[2];
  for (int i = 0; i < 8; ++i)
    l1[i] = pairSums(v[2 * i], v[2 * i + 1], even, odd);
  for (int i = 0; i < 4; ++i)
    l2[i] = pairSums(l1[2 * i], l1[2 * i + 1], even, odd);
  for (int i = 0; i < 2; ++i)
    l3[i] = pairSums(l2[2 * i], l2[2 * i + 1], even, odd);
  return pairSums(l3[0], l3[1], even, odd);
}
XF_TARGET inline V vkeepFirst(V x, int valid, float fill) {
  if (valid >= W)
    return x;
  return _mm512_mask_blend_ps(__mmask16((1u << valid) - 1), _mm512_set1_ps(fill), x);
}
XF_TARGET inline V roundNearest(V x) {
  return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
XF_TARGET inline V pow2(V n) { // n in [-126, 0]
  __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_castsi512_ps(bits);
}
XF_TARGET inline V vexp(V x) {
  XF_EXP_BODY(V, vset1, vadd, vmul, vfma, vmax, roundNearest, pow2)
}
#include "DecodeAttentionTask.inc"
#undef XF_TARGET
} // namespace avx512
#undef XF_EXP_BODY
#endif

int runTask(void *, int task, uint8_t *closure) {
  const TaskArgs &a = *reinterpret_cast<const TaskArgs *>(closure);
  a.fn(a, task);
  return 0;
}

/// Key ranges per K/V head: the fewest that give every kernel thread the same number of tasks
/// (SmolLM2's 3 K/V heads on 2 threads: 2, 6 tasks; GPT-2's 12: 1), at most 8, and none
/// shorter than kMinKeysPerRange keys.
int keyRanges(int kvHeads, int keys, int threads) {
  int ranges = 1;
  while (ranges < 8 && (kvHeads * ranges < threads || kvHeads * ranges % threads != 0))
    ++ranges;
  return std::max(1, std::min(ranges, (keys + kMinKeysPerRange - 1) / kMinKeysPerRange));
}

/// cos and sin of position·base^(−2i/dK), i < dK/2, in double rounded to float (the Halide
/// kernels' rotary table). Kept per thread for the last (position, base, dK) asked.
const std::vector<float> &rotaryTable(int64_t position, double base, int64_t dK) {
  thread_local std::vector<float> table;
  thread_local int64_t lastPosition = -1, lastDK = -1;
  thread_local double lastBase = 0;
  if (position != lastPosition || base != lastBase || dK != lastDK) {
    table.resize(size_t(dK));
    const double step = -2.0 * std::log(base) / double(dK);
    for (int64_t i = 0; i < dK / 2; ++i) {
      const double angle = double(position) * std::exp(double(i) * step);
      table[2 * i] = float(std::cos(angle));
      table[2 * i + 1] = float(std::sin(angle));
    }
    lastPosition = position, lastBase = base, lastDK = dK;
  }
  return table;
}

/// `heads` heads of width d from `in` to `out`, each pair turned by the table's angle (copied
/// without a table).
void rotate(const float *in, int64_t heads, int64_t d, AttentionRope rope,
            const std::vector<float> *table, float *out) {
  if (!table) {
    std::copy(in, in + heads * d, out);
    return;
  }
  const int64_t half = d / 2;
  for (int64_t h = 0; h < heads; ++h) {
    const float *from = in + h * d;
    float *to = out + h * d;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t x = rope == AttentionRope::Adjacent ? 2 * i : i;
      const int64_t y = rope == AttentionRope::Adjacent ? 2 * i + 1 : i + half;
      const float a = from[x], b = from[y], cosine = (*table)[2 * i], sine = (*table)[2 * i + 1];
      to[x] = a * cosine - b * sine;
      to[y] = a * sine + b * cosine;
    }
  }
}

/// n floats (dK or dV: a multiple of 8) from `from` to element `at` of a float32 or float16
/// array.
void store(const float *from, int64_t n, void *to, int64_t at, bool half, AttentionIsa isa) {
  if (!half) {
    std::copy(from, from + n, static_cast<float *>(to) + at);
    return;
  }
  uint16_t *out = static_cast<uint16_t *>(to) + at;
#ifdef XF_DECODE_ATTENTION_X86
  if (isa == AttentionIsa::Avx2 || isa == AttentionIsa::Avx512) { // F16C either way
    avx2::storeHalves(from, n, out);
    return;
  }
#endif
  (void)isa;
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToHalf(from[i]); // ties to even, as the host code's truncf
}

} // namespace

AttentionIsa attentionIsaOfCpu(AttentionIsa ceiling) {
#ifdef XF_DECODE_ATTENTION_X86
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  if (ceiling >= AttentionIsa::Avx512 && avx2 && __builtin_cpu_supports("avx512f"))
    return AttentionIsa::Avx512;
  if (ceiling >= AttentionIsa::Avx2 && avx2)
    return AttentionIsa::Avx2;
#endif
  (void)ceiling;
  return AttentionIsa::Portable;
}

} // namespace xfrt

extern "C" int32_t xfrt_decode_attention(const float *q, int64_t keys, const float *newKey,
                                         const float *newValue, void *k, void *v,
                                         int64_t keyHeadStride,
                                         int64_t valueHeadStride, int64_t halfKeyValues,
                                         int64_t heads, int64_t kvHeads, int64_t dK, int64_t dV,
                                         float scale, int64_t rope, double ropeBase, float *out,
                                         int64_t isaCeiling) {
  using namespace xfrt;
  auto supported = [](int64_t d) { return d == 64 || d == 128; };
  if (keys < 1 || keys > (int64_t(1) << 30) || kvHeads < 1 || heads < kvHeads ||
      heads % kvHeads != 0 || heads / kvHeads > kMaxGroup || !supported(dK) || !supported(dV) ||
      rope < 0 || rope > 2 || (rope != 0 && !(ropeBase > 1.0)))
    return -1;
  static const AttentionIsa byCeiling[] = {attentionIsaOfCpu(AttentionIsa::Portable),
                                           attentionIsaOfCpu(AttentionIsa::Avx2),
                                           attentionIsaOfCpu(AttentionIsa::Avx512)};
  const AttentionIsa isa = byCeiling[std::clamp<int64_t>(isaCeiling, 0, 2)];
  const int group = int(heads / kvHeads);

  // The new key heads rotated into the cache, the value heads copied, at position keys − 1;
  // then the query heads rotated to it.
  const std::vector<float> *table =
      rope == int64_t(AttentionRope::None) ? nullptr : &rotaryTable(keys - 1, ropeBase, dK);
  thread_local std::vector<float> rotated;
  rotated.resize(size_t(std::max(heads, kvHeads) * dK));
  rotate(newKey, kvHeads, dK, AttentionRope(rope), table, rotated.data());
  for (int64_t g = 0; g < kvHeads; ++g) {
    store(rotated.data() + g * dK, dK, k, g * keyHeadStride + (keys - 1) * dK, halfKeyValues, isa);
    store(newValue + g * dV, dV, v, g * valueHeadStride + (keys - 1) * dV, halfKeyValues, isa);
  }
  rotate(q, heads, dK, AttentionRope(rope), table, rotated.data());

  TaskArgs args{};
  args.q = rotated.data(), args.k = k, args.v = v, args.keyHeadStride = keyHeadStride,
  args.valueHeadStride = valueHeadStride;
  args.group = group, args.dK = int(dK), args.dV = int(dV), args.keys = int(keys);
  args.scale = scale;
  args.ranges = keyRanges(int(kvHeads), int(keys), std::max(1, kernelThreads()));
  args.range = int((keys + args.ranges - 1) / args.ranges);
  args.ranges = int((keys + args.range - 1) / args.range); // every range non-empty
  switch (isa) {
#ifdef XF_DECODE_ATTENTION_X86
  case AttentionIsa::Avx512: args.fn = avx512::decodeRangeFor(halfKeyValues, int(dK), int(dV)); break;
  case AttentionIsa::Avx2: args.fn = avx2::decodeRangeFor(halfKeyValues, int(dK), int(dV)); break;
#endif
  default: args.fn = portableRangeFor(halfKeyValues); break;
  }
  const int tasks = int(kvHeads) * args.ranges;
  thread_local std::vector<float> parts;
  parts.resize(size_t(tasks) * group * (dV + 2));
  args.partOut = parts.data();
  args.partMax = args.partOut + int64_t(tasks) * group * dV;
  args.partSum = args.partMax + int64_t(tasks) * group;
  uint8_t *closure = reinterpret_cast<uint8_t *>(&args);
  if (halide_do_par_for && tasks > 1) {
    if (int32_t status = halide_do_par_for(nullptr, runTask, 0, tasks, closure))
      return status;
  } else {
    for (int t = 0; t < tasks; ++t)
      runTask(nullptr, t, closure);
  }

  // Merge the ranges of each query head: weights e^(range max − top) (1 with one range).
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / group, local = h % group;
    float top = kNoScore;
    for (int p = 0; p < args.ranges; ++p)
      top = std::max(top, args.partMax[(g * args.ranges + p) * group + local]);
    float *to = out + h * dV;
    std::fill(to, to + dV, 0.f);
    float total = 0.f;
    for (int p = 0; p < args.ranges; ++p) {
      const int64_t task = g * args.ranges + p;
      const float w = args.ranges == 1 ? 1.f : std::exp(args.partMax[task * group + local] - top);
      const float *part = args.partOut + (task * group + local) * dV;
      for (int64_t d = 0; d < dV; ++d)
        to[d] += part[d] * w;
      total += args.partSum[task * group + local] * w;
    }
    const float inverse = total > 0.f ? 1.f / total : 0.f;
    for (int64_t d = 0; d < dV; ++d)
      to[d] *= inverse;
  }
  return 0;
}
