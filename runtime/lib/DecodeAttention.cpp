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
#include "KernelTasks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define XF_DECODE_ATTENTION_X86 1
#include <immintrin.h>
#endif

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
/// kernels' rotary table). Kept per thread for the last 64 positions asked (by position mod 64):
/// every layer of a decode step asks for the same positions.
const std::vector<float> &rotaryTable(int64_t position, double base, int64_t dK) {
  struct Entry {
    int64_t position = -1, dK = -1;
    double base = 0;
    std::vector<float> table;
  };
  thread_local Entry entries[64];
  Entry &e = entries[position & 63];
  if (position != e.position || base != e.base || dK != e.dK) {
    e.table.resize(size_t(dK));
    const double step = -2.0 * std::log(base) / double(dK);
    for (int64_t i = 0; i < dK / 2; ++i) {
      const double angle = double(position) * std::exp(double(i) * step);
      e.table[2 * i] = float(std::cos(angle));
      e.table[2 * i + 1] = float(std::sin(angle));
    }
    e.position = position, e.base = base, e.dK = dK;
  }
  return e.table;
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

namespace xfrt {
namespace {

bool handles(int64_t heads, int64_t kvHeads, int64_t dK, int64_t dV, int64_t rope,
             double ropeBase) {
  auto supported = [](int64_t d) { return d == 64 || d == 128; };
  return kvHeads >= 1 && heads >= kvHeads && heads % kvHeads == 0 && heads / kvHeads <= kMaxGroup &&
         supported(dK) && supported(dV) && rope >= 0 && rope <= 2 && (rope == 0 || ropeBase > 1.0);
}

AttentionIsa isaOf(int64_t ceiling) {
  static const AttentionIsa byCeiling[] = {attentionIsaOfCpu(AttentionIsa::Portable),
                                           attentionIsaOfCpu(AttentionIsa::Avx2),
                                           attentionIsaOfCpu(AttentionIsa::Avx512)};
  return byCeiling[std::clamp<int64_t>(ceiling, 0, 2)];
}

TaskFn taskFnFor(AttentionIsa isa, bool half, int dK, int dV) {
  switch (isa) {
#ifdef XF_DECODE_ATTENTION_X86
  case AttentionIsa::Avx512:
    return avx512::decodeRangeFor(half, dK, dV);
  case AttentionIsa::Avx2:
    return avx2::decodeRangeFor(half, dK, dV);
#endif
  default:
    return portableRangeFor(half);
  }
}

/// One sequence's tasks: its rotated queries `q`, its K/V cache slot, `keys` keys cut into
/// `ranges` ranges (at most; every range non-empty), its partial results from `parts`.
TaskArgs sequenceTasks(const float *q, const void *k, const void *v, int64_t keyHeadStride,
                       int64_t valueHeadStride, int64_t heads, int64_t kvHeads, int64_t dK,
                       int64_t dV, float scale, int64_t keys, int ranges, TaskFn fn, float *parts) {
  TaskArgs args{};
  args.q = q, args.k = k, args.v = v, args.keyHeadStride = keyHeadStride,
  args.valueHeadStride = valueHeadStride;
  args.group = int(heads / kvHeads), args.dK = int(dK), args.dV = int(dV), args.keys = int(keys);
  args.scale = scale, args.fn = fn;
  args.range = int((keys + ranges - 1) / ranges);
  args.ranges = int((keys + args.range - 1) / args.range);
  const int64_t tasks = kvHeads * args.ranges;
  args.partOut = parts;
  args.partMax = args.partOut + tasks * args.group * dV;
  args.partSum = args.partMax + tasks * args.group;
  return args;
}

/// Floats of partial results a sequence's tasks write.
int64_t partFloats(int64_t kvHeads, int ranges, int64_t heads, int64_t dV) {
  return kvHeads * ranges * (heads / kvHeads) * (dV + 2);
}

/// Each query head's output from its ranges' (output, max, sum): weights e^(range max − top)
/// (1 with one range).
void mergeRanges(const TaskArgs &a, int64_t heads, float *out) {
  const int group = a.group, dV = a.dV;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / group, local = h % group;
    float top = kNoScore;
    for (int p = 0; p < a.ranges; ++p)
      top = std::max(top, a.partMax[(g * a.ranges + p) * group + local]);
    float *to = out + h * dV;
    std::fill(to, to + dV, 0.f);
    float total = 0.f;
    for (int p = 0; p < a.ranges; ++p) {
      const int64_t task = g * a.ranges + p;
      const float w = a.ranges == 1 ? 1.f : std::exp(a.partMax[task * group + local] - top);
      const float *part = a.partOut + (task * group + local) * dV;
      for (int64_t d = 0; d < dV; ++d)
        to[d] += part[d] * w;
      total += a.partSum[task * group + local] * w;
    }
    const float inverse = total > 0.f ? 1.f / total : 0.f;
    for (int64_t d = 0; d < dV; ++d)
      to[d] *= inverse;
  }
}

/// The tasks of one or several sequences as one parallel loop: task t belongs to the last
/// sequence whose first task is <= t.
struct Batch {
  const TaskArgs *sequences;
  const int *firstTask; // n + 1 entries
  int n;
};

int runBatchTask(void *, int task, uint8_t *closure) {
  const Batch &b = *reinterpret_cast<const Batch *>(closure);
  const int i = int(std::upper_bound(b.firstTask, b.firstTask + b.n + 1, task) - b.firstTask) - 1;
  b.sequences[i].fn(b.sequences[i], task - b.firstTask[i]);
  return 0;
}

/// The batch's tasks on the thread pool (in a loop without one, as in unit tests).
int32_t runTasks(const Batch &batch) {
  return xfrt::runTasks(runBatchTask, batch.firstTask[batch.n], const_cast<Batch *>(&batch));
}

} // namespace
} // namespace xfrt

extern "C" int32_t xfrt_decode_attention(const float *q, int64_t keys, const float *newKey,
                                         const float *newValue, void *k, void *v,
                                         int64_t keyHeadStride, int64_t valueHeadStride,
                                         int64_t halfKeyValues, int64_t heads, int64_t kvHeads,
                                         int64_t dK, int64_t dV, float scale, int64_t rope,
                                         double ropeBase, float *out, int64_t isaCeiling) {
  using namespace xfrt;
  if (keys < 1 || keys > (int64_t(1) << 30) || !handles(heads, kvHeads, dK, dV, rope, ropeBase))
    return -1;
  const AttentionIsa isa = isaOf(isaCeiling);

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

  const int ranges = keyRanges(int(kvHeads), int(keys), std::max(1, kernelThreads()));
  thread_local std::vector<float> parts;
  parts.resize(size_t(partFloats(kvHeads, ranges, heads, dV)));
  TaskArgs args = sequenceTasks(rotated.data(), k, v, keyHeadStride, valueHeadStride, heads,
                                kvHeads, dK, dV, scale, keys, ranges,
                                taskFnFor(isa, halfKeyValues, int(dK), int(dV)), parts.data());
  const int firstTask[] = {0, int(kvHeads) * args.ranges};
  if (int32_t status = runTasks(Batch{&args, firstTask, 1}))
    return status;
  mergeRanges(args, heads, out);
  return 0;
}

extern "C" int32_t
xfrt_decode_attention_batched(const float *q, int64_t qStride, int64_t n, const int64_t *slots,
                              const int64_t *starts, const void *k, const void *v,
                              int64_t slotStride, int64_t keyHeadStride, int64_t valueHeadStride,
                              int64_t halfKeyValues, int64_t heads, int64_t kvHeads, int64_t dK,
                              int64_t dV, float scale, int64_t rope, double ropeBase, float *out,
                              int64_t outStride, int64_t isaCeiling) {
  using namespace xfrt;
  if (n < 0 || !handles(heads, kvHeads, dK, dV, rope, ropeBase))
    return -1;
  for (int64_t i = 0; i < n; ++i)
    if (starts[i] < 0 || starts[i] >= (int64_t(1) << 30) || slots[i] < 0)
      return -1;
  if (n == 0)
    return 0;
  const AttentionIsa isa = isaOf(isaCeiling);
  const TaskFn fn = taskFnFor(isa, halfKeyValues, int(dK), int(dV));
  const size_t elementBytes = halfKeyValues ? 2 : 4;
  // Several sequences give the threads their tasks; one alone is split into key ranges.
  const int threads = std::max(1, kernelThreads());
  thread_local std::vector<float> rotated, parts;
  thread_local std::vector<TaskArgs> sequences;
  thread_local std::vector<int> firstTask;
  rotated.resize(size_t(n * heads * dK));
  sequences.resize(size_t(n));
  firstTask.assign(size_t(n + 1), 0);
  thread_local std::vector<int> ranges;
  ranges.resize(size_t(n));
  int64_t floats = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t keys = starts[i] + 1;
    ranges[i] = n * kvHeads >= 2 * threads ? 1 : keyRanges(int(kvHeads), int(keys), threads);
    floats += partFloats(kvHeads, ranges[i], heads, dV);
  }
  parts.resize(size_t(floats));
  float *part = parts.data();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t keys = starts[i] + 1;
    const std::vector<float> *table =
        rope == int64_t(AttentionRope::None) ? nullptr : &rotaryTable(keys - 1, ropeBase, dK);
    float *query = rotated.data() + i * heads * dK;
    rotate(q + i * qStride, heads, dK, AttentionRope(rope), table, query);
    const char *slotK = static_cast<const char *>(k) + size_t(slots[i] * slotStride) * elementBytes;
    const char *slotV = static_cast<const char *>(v) + size_t(slots[i] * slotStride) * elementBytes;
    sequences[i] = sequenceTasks(query, slotK, slotV, keyHeadStride, valueHeadStride, heads,
                                 kvHeads, dK, dV, scale, keys, ranges[i], fn, part);
    part += partFloats(kvHeads, ranges[i], heads, dV);
    firstTask[i + 1] = firstTask[i] + int(kvHeads) * sequences[i].ranges;
  }
  if (int32_t status = runTasks(Batch{sequences.data(), firstTask.data(), int(n)}))
    return status;
  for (int64_t i = 0; i < n; ++i)
    mergeRanges(sequences[i], heads, out + i * outStride);
  return 0;
}
