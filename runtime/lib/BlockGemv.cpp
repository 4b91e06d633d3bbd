//===- BlockGemv.cpp - Decode GEMMs on ggml blocks with 8-bit activations -===//
//
// xfrt/BlockGemv.h. Called by generated code in place of the Halide GEMM when a block-weight
// GEMM (xfc --q8-gemm-inputs) has fewer rows than its gemv_rows_below: every input row is
// rounded to Q8_0 once, then tasks of output columns run each weight row against every input
// row (the row's blocks stay in L1 across input rows).
//
//===----------------------------------------------------------------------===//
#include "xfrt/BlockGemv.h"
#include "GemmEpilogue.h"
#include "KernelTasks.h"
#include "xfrt/Amx.h"
#include "xfrt/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define XF_BLOCK_GEMV_X86 1
#include <immintrin.h>
#endif

namespace xfrt {
namespace {

using gemm::Epilogue;
using gemm::finishGroup;
using gemm::finishPanelRows;
using gemm::prefetchEpilogueRows;

constexpr int kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8;

/// How far ahead of the block being read its row is prefetched (measured on Zen 4: rows of
/// a 30 MB Q8_0 matrix read 1.5x faster with it, in-cache ones no slower).
constexpr int kPrefetchBytes = 256;

constexpr int64_t ggmlBlockBytes(int type) {
  return type == kQ8_0 ? 34 : type == kQ4_1 ? 20 : 18;
}

/// How far ahead a four-row kernel (dots4) prefetches: the same bytes 16 rows on, since four
/// rows side by side defeat the hardware's stream prefetch that a single row's walk gets and
/// one group ahead is too close to hide DRAM's latency (Zen 5, one thread, Q8_0 [49152, 576]
/// from DRAM: 43 → 47 GB/s against one row at a time at 16 rows, 40 at 4), and for Q8_0 at
/// least 12 KiB on. Measured in SmolLM2 q8 decode, 2 threads, Zen 5: its Q8_0
/// unembedding [49152, 576] took 9-13 % less time at 12 KiB (21 rows) than at 16 rows, while
/// the Q4_1 GEMVs (rows of 360 bytes) took 3-5 % more at 8 or 12 KiB than at 16 rows.
template <int Type> inline int64_t fourRowPrefetchAhead(int64_t blocks) {
  const int64_t rowBytes = blocks * ggmlBlockBytes(Type), atLeast = Type == kQ8_0 ? 12 << 10 : 0;
  return std::max<int64_t>(16, (atLeast + rowBytes - 1) / rowBytes) * rowBytes;
}

/// The dot product of one weight row (at `w`) with one row of x̂.
struct DotArgs {
  const uint8_t *w;
  int64_t blocks;
  const int8_t *xq;    // x̂'s q, K bytes
  const float *xMeta; // per block: its scale d, then d·Σq
};
using DotFn = float (*)(const DotArgs &);
/// Four rows' dots with the same x̂ (rows[i] the weight rows; args.w unused), each block
/// prefetching the byte `ahead` on, where an instruction set has one.
using Dot4Fn = void (*)(const DotArgs &, const uint8_t *const *, float *, int64_t ahead);

// ---- Portable ------------------------------------------------------------------------------

float halfToFloat(const uint8_t *p) {
  uint32_t h = uint32_t(p[0]) | uint32_t(p[1]) << 8;
  uint32_t sign = (h & 0x8000u) << 16, magnitude = (h & 0x7fffu) << 13;
  float value;
  if ((h & 0x7c00u) == 0x7c00u) { // inf / NaN
    uint32_t bits = magnitude | 0x7f800000u;
    std::memcpy(&value, &bits, 4);
  } else {
    std::memcpy(&value, &magnitude, 4);
    value *= 0x1p112f; // exact for normals and subnormals
  }
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits |= sign;
  std::memcpy(&value, &bits, 4);
  return value;
}

template <int Type>
float portableDots(const DotArgs &a) {
  constexpr int64_t blockBytes = ggmlBlockBytes(Type);
  float sum = 0.f, offset = 0.f;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const uint8_t *block = a.w + b * blockBytes;
    const int8_t *xq = a.xq + 32 * b;
    const float d = halfToFloat(block);
    int32_t dot = 0;
    if constexpr (Type == kQ8_0) {
      for (int i = 0; i < 32; ++i)
        dot += int32_t(int8_t(block[2 + i])) * xq[i];
    } else {
      const uint8_t *qs = block + (Type == kQ4_1 ? 4 : 2);
      for (int i = 0; i < 16; ++i)
        dot += int32_t(qs[i] & 15) * xq[i] + int32_t(qs[i] >> 4) * xq[16 + i];
      offset += (Type == kQ4_1 ? halfToFloat(block + 2) : -8.f * d) * a.xMeta[2 * b + 1];
    }
    sum = std::fma(d * a.xMeta[2 * b], float(dot), sum);
  }
  return sum + offset;
}

// ---- x86 -------------------------------------------------------------------------------------

#ifdef XF_BLOCK_GEMV_X86
#define XF_ISA avx2
#define XF_TARGET __attribute__((target("avx2,fma,f16c")))
#define XF_DOT32(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#include "BlockGemvDots.inc"
#undef XF_ISA
#undef XF_TARGET
#undef XF_DOT32

#define XF_ISA avxvnni
#define XF_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define XF_DOT32(u, s) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s)
#include "BlockGemvDots.inc"
#undef XF_ISA
#undef XF_TARGET
#undef XF_DOT32

#define XF_ISA avx512vnni
#define XF_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define XF_DOT32(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
#include "BlockGemvDots.inc"
#undef XF_ISA
#undef XF_TARGET
#undef XF_DOT32

#include "BlockGemvAvx512.inc"
#include "BlockGemmAvx512.inc"
#include "BlockGemmAmx.inc"
#endif

template <int Type>
DotFn dotsFor(BlockDotIsa isa) {
  switch (isa) {
#ifdef XF_BLOCK_GEMV_X86
  case BlockDotIsa::Avx512Vnni: return avx512::dots<Type>;
  case BlockDotIsa::AvxVnni: return avxvnni::dots<Type>;
  case BlockDotIsa::Avx2: return avx2::dots<Type>;
#endif
  default: return portableDots<Type>;
  }
}

template <int Type> Dot4Fn dots4For(BlockDotIsa isa) {
  // In 256 bits only Q8_0 gains (Zen 5 running the AVX2 copy, one thread, from DRAM: Q8_0
  // [49152, 576] 27 → 37 GB/s); Q4's nibbles and scalar offsets keep its 16 ymm registers
  // busy and four rows at once ran slower (16 → 12 GB/s).
  switch (isa) {
#ifdef XF_BLOCK_GEMV_X86
  case BlockDotIsa::Avx512Vnni:
    return avx512::dots4<Type>;
  case BlockDotIsa::AvxVnni:
    return Type == kQ8_0 ? avxvnni::dots4<Type> : nullptr;
  case BlockDotIsa::Avx2:
    return Type == kQ8_0 ? avx2::dots4<Type> : nullptr;
#endif
  default:
    return nullptr;
  }
}

// ---- The call --------------------------------------------------------------------------------

/// Where a call's kernel threads start reading: its weight rows and their split, as
/// xfrt_block_gemv last called it on this thread after a call with the same weights.
struct CallHead {
  const uint8_t *weight = nullptr;
  int64_t N, rowBytes, chunk, tasks;
  bool gated;
};

/// Prefetches rows [task·chunk, +16) of the call at `head` (and their up rows).
void prefetchHead(const CallHead &head, int64_t task) {
  const int64_t begin = task * head.chunk;
  const int64_t rows = std::max<int64_t>(0, std::min({int64_t(16), head.chunk, head.N - begin}));
  const int64_t streamLines = (rows * head.rowBytes + 63) / 64,
                lines = streamLines * (head.gated ? 2 : 1);
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t stream = line / streamLines, row = begin + stream * head.N;
    __builtin_prefetch(head.weight + row * head.rowBytes + 64 * (line % streamLines));
  }
}


struct Call {
  DotFn dot;
  Dot4Fn dot4;     // null: one row at a time
  int64_t rows, N, rowBytes, blocks, chunk, tasks;
  int64_t ahead;        // dot4's prefetch distance
  const CallHead *next; // the call expected after this one, or null
  const uint8_t *weight;
  const int8_t *xq;
  const float *xMeta;
  Epilogue epilogueArgs;
};

/// Output columns [task·chunk, +chunk), sixteen at a time: each weight row (and its up row)
/// against every row of x̂ (four weight rows per dot4 call where the CPU has one), so a row read
/// from memory is reused from L1 by the other rows;
/// then the epilogue over the sixteen (silu in vectors where the CPU has AVX-512).
int runTask(void *, int task, uint8_t *closure) {
  const Call &c = *reinterpret_cast<const Call *>(closure);
  constexpr int kGroup = 16;
  const bool gated = c.epilogueArgs.epilogue == BlockEpilogue::SwiGlu;
  const int64_t begin = task * c.chunk, end = std::min(c.N, begin + c.chunk);
  // With one range per kernel thread, the thread that ran range t here is likely to run range
  // t of the next call: once done (its last group prefetches nothing past its range), it
  // prefetches the first rows of that one, which no dot4 prefetch covers (each call's first
  // group read from DRAM without them took ~1 µs longer than the others).
  const CallHead *next = c.next && c.tasks == kernelThreads() ? c.next : nullptr;
  for (int64_t n0 = begin; n0 < end; n0 += kGroup) {
    const int count = int(std::min<int64_t>(kGroup, end - n0));
    const bool last = n0 + kGroup >= end;
    for (int64_t m = 0; m < c.rows; ++m) {
      float pre[kGroup], up[kGroup];
      DotArgs args{nullptr, c.blocks, c.xq + m * c.blocks * 32, c.xMeta + m * c.blocks * 2};
      // The weight rows of the group (gate rows, then up rows) and where each dot goes.
      const uint8_t *rows[2 * kGroup];
      float *dest[2 * kGroup];
      int total = 0;
      for (int i = 0; i < count; ++i)
        rows[total] = c.weight + (n0 + i) * c.rowBytes, dest[total++] = &pre[i];
      for (int i = 0; gated && i < count; ++i)
        rows[total] = c.weight + (c.N + n0 + i) * c.rowBytes, dest[total++] = &up[i];
      int r = 0;
      for (; c.dot4 && r + 4 <= total; r += 4) {
        float four[4];
        c.dot4(args, rows + r, four, last ? 0 : c.ahead);
        for (int j = 0; j < 4; ++j)
          *dest[r + j] = four[j];
      }
      for (; r < total; ++r) {
        args.w = rows[r];
        *dest[r] = c.dot(args);
      }
      finishGroup(c.epilogueArgs, m, n0, count, pre, up);
    }
  }
  if (next)
    prefetchHead(*next, task % next->tasks);
  return 0;
}

} // namespace

namespace {
/// A block of x̂ whose largest |x| is 0 (q = 0, scale 0) or not finite (q = 0, a NaN scale that
/// carries into every output): written, and true; false for the blocks that round. The
/// portable loop and both vector copies share it (NaN never compares greater).
bool quantizeBlockWithoutScale(float amax, int8_t *q, float *meta) {
  if (amax > 0.f && std::isfinite(amax))
    return false;
  std::memset(q, 0, 32);
  meta[0] = amax == 0.f ? 0.f : std::numeric_limits<float>::quiet_NaN();
  meta[1] = meta[0] * 0.f;
  return true;
}
} // namespace

#ifdef XF_BLOCK_GEMV_X86
namespace {
#define XF_TARGET_Q8 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

/// quantizeRowQ8's rounding of 16 values of a block with scale d > 0, on AVX-512, by the
/// division: the same steps in vectors (float to double is exact, vdivpd rounds like the
/// scalar division, vrndscalepd to nearest even is nearbyint in the default rounding mode, then
/// the same clamp).
XF_TARGET_Q8 inline __m512i roundQ8ByDivision(__m512 f, float d) {
  const __m512d dd = _mm512_set1_pd(double(d));
  const __m512d low = _mm512_set1_pd(-127.0), high = _mm512_set1_pd(127.0);
  const __m512d halves[2] = {
      _mm512_cvtps_pd(_mm512_castps512_ps256(f)),
      _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)))};
  __m256i ints[2];
  for (int h = 0; h < 2; ++h) {
    const __m512d r = _mm512_roundscale_pd(_mm512_div_pd(halves[h], dd),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    ints[h] = _mm512_cvtpd_epi32(_mm512_min_pd(_mm512_max_pd(r, low), high));
  }
  return _mm512_inserti64x4(_mm512_castsi256_si512(ints[0]), ints[1], 1);
}

/// The same 16 roundings, usually without a division: n = x·(1/d) rounded in float, kept when
/// its remainder proves it, |x − n·d| < d/2 (vfnmadd rounds once and rounding is monotone, so
/// a computed remainder below the representable d/2 means the exact one is: n is the nearest
/// integer to x/d, ties excluded). Any lane that fails (a product within an ulp of a half, or
/// an exact tie, where round-half-even needs the quotient) takes roundQ8ByDivision for all 16;
/// a d below 2^-125 (d/2 may round, 1/d overflow) always does. Bitwise the same q; the
/// divisions were a quarter of x̂'s time (Zen 5, one thread, 128 rows: K = 576 18.0 → 13.4 µs,
/// K = 1536 45.5 → 35.5 µs).
XF_TARGET_Q8 inline __m512i roundQ8(__m512 f, float d) {
  if (d >= 0x1p-125f) {
    const __m512 vd = _mm512_set1_ps(d);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(f, _mm512_set1_ps(1.f / d)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 remainder = _mm512_abs_ps(_mm512_fnmadd_ps(n, vd, f));
    if (_mm512_cmp_ps_mask(remainder, _mm512_set1_ps(0.5f * d), _CMP_LT_OQ) == 0xffff)
      return _mm512_cvtps_epi32(
          _mm512_min_ps(_mm512_max_ps(n, _mm512_set1_ps(-127.f)), _mm512_set1_ps(127.f)));
  }
  return roundQ8ByDivision(f, d);
}

/// Whether a block's 32 values hold a NaN (vmaxps would drop it from the maximum).
XF_TARGET_Q8 inline bool hasNan(__m512 lo, __m512 hi) {
  return _mm512_cmp_ps_mask(lo, hi, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q);
}

/// One block of quantizeRowQ8 on AVX-512.
XF_TARGET_Q8 void quantizeBlockQ8Avx512(const float *v, int8_t *q, float *meta) {
  const __m512 lo = _mm512_loadu_ps(v), hi = _mm512_loadu_ps(v + 16);
  float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
  if (hasNan(lo, hi))
    amax = std::numeric_limits<float>::quiet_NaN();
  if (quantizeBlockWithoutScale(amax, q, meta))
    return;
  meta[0] = amax / 127.f;
  __m512i sum = _mm512_setzero_si512();
  for (int part = 0; part < 2; ++part) {
    const __m512i ints = roundQ8(part ? hi : lo, meta[0]);
    sum = _mm512_add_epi32(sum, ints);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 16 * part), _mm512_cvtepi32_epi8(ints));
  }
  meta[1] = meta[0] * float(_mm512_reduce_add_epi32(sum));
}

/// Which block's vector goes in which slot of reduceEach16 so that lane j of its result is
/// block j's (the shuffles below leave lanes in this order, an involution).
constexpr int kBlockInSlot[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};

/// Lane j: `op` over the 16 lanes of v[kBlockInSlot[j]] (op associative and commutative) —
/// sixteen horizontal reductions in 15 steps of two shuffles each, not 16 chains of four.
template <class Op> XF_TARGET_Q8 inline __m512 reduceEach16(__m512 v[16], Op op) {
  for (int j = 0; j < 8; ++j) // 256-bit halves of v[j] and v[j + 8]
    v[j] = op(_mm512_shuffle_f32x4(v[j], v[j + 8], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_f32x4(v[j], v[j + 8], _MM_SHUFFLE(3, 2, 3, 2)));
  for (int j = 0; j < 4; ++j) // 128-bit lanes
    v[j] = op(_mm512_shuffle_f32x4(v[j], v[j + 4], _MM_SHUFFLE(2, 0, 2, 0)),
              _mm512_shuffle_f32x4(v[j], v[j + 4], _MM_SHUFFLE(3, 1, 3, 1)));
  for (int j = 0; j < 2; ++j) // pairs of floats
    v[j] = op(_mm512_shuffle_ps(v[j], v[j + 2], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_ps(v[j], v[j + 2], _MM_SHUFFLE(3, 2, 3, 2)));
  return op(_mm512_shuffle_ps(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
            _mm512_shuffle_ps(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
}
struct MaxOp {
  XF_TARGET_Q8 __m512 operator()(__m512 a, __m512 b) const { return _mm512_max_ps(a, b); }
};
struct AddInt32Op {
  XF_TARGET_Q8 __m512 operator()(__m512 a, __m512 b) const {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
  }
};

/// quantizeRowQ8 on AVX-512, bitwise the portable loop's: sixteen blocks at a time, their
/// maxima, scales and sums of q reduced side by side (one block at a time, each block's chain
/// of reductions and divisions left the vector units idle: 23 → 18 µs for 128 rows of 576).
XF_TARGET_Q8 void quantizeRowQ8Avx512(const float *x, int64_t K, int8_t *q, float *meta) {
  const int64_t blocks = K / 32;
  int64_t b0 = 0;
  for (; b0 + 16 <= blocks; b0 += 16) {
    const float *v = x + 32 * b0;
    __m512 m[16];
    __mmask16 nan = 0;
    for (int s = 0; s < 16; ++s) {
      const int j = kBlockInSlot[s];
      const __m512 lo = _mm512_loadu_ps(v + 32 * j), hi = _mm512_loadu_ps(v + 32 * j + 16);
      m[s] = _mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi));
      nan |= __mmask16(hasNan(lo, hi) << j);
    }
    const __m512 amax = _mm512_mask_mov_ps(reduceEach16(m, MaxOp()), nan,
                                           _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    // quantizeBlockWithoutScale's blocks: amax 0 (scale 0) or not finite (a NaN scale).
    const __mmask16 rounded =
        _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_GT_OQ) &
        _mm512_cmp_ps_mask(amax, _mm512_set1_ps(std::numeric_limits<float>::infinity()),
                           _CMP_LT_OQ);
    const __m512 d = _mm512_div_ps(amax, _mm512_set1_ps(127.f));
    alignas(64) float dOf[16];
    _mm512_store_ps(dOf, d);
    __m512 sums[16];
    for (int s = 0; s < 16; ++s) {
      const int j = kBlockInSlot[s];
      int8_t *qb = q + 32 * (b0 + j);
      if (!(rounded >> j & 1)) {
        std::memset(qb, 0, 32);
        sums[s] = _mm512_setzero_ps();
        continue;
      }
      __m512i sum = _mm512_setzero_si512();
      for (int part = 0; part < 2; ++part) {
        const __m512i ints = roundQ8(_mm512_loadu_ps(v + 32 * j + 16 * part), dOf[j]);
        sum = _mm512_add_epi32(sum, ints);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(qb + 16 * part),
                         _mm512_cvtepi32_epi8(ints));
      }
      sums[s] = _mm512_castsi512_ps(sum);
    }
    const __m512 sumQ = _mm512_cvtepi32_ps(_mm512_castps_si512(reduceEach16(sums, AddInt32Op())));
    // The other blocks: scale 0 or NaN, and that scale · 0.
    const __m512 unscaled = _mm512_maskz_mov_ps(
        _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_NEQ_UQ),
        _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    const __m512 scale = _mm512_mask_mov_ps(unscaled, rounded, d);
    const __m512 offset = _mm512_mask_mov_ps(_mm512_mul_ps(unscaled, _mm512_setzero_ps()), rounded,
                                             _mm512_mul_ps(d, sumQ));
    const __m512i first = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    _mm512_storeu_ps(meta + 2 * b0, _mm512_permutex2var_ps(scale, first, offset));
    _mm512_storeu_ps(meta + 2 * b0 + 16,
                     _mm512_permutex2var_ps(scale, _mm512_add_epi32(first, _mm512_set1_epi32(8)),
                                            offset));
  }
  for (int64_t b = b0; b < blocks; ++b)
    quantizeBlockQ8Avx512(x + 32 * b, q + 32 * b, meta + 2 * b);
}
#undef XF_TARGET_Q8

/// quantizeRowQ8's finite, nonzero blocks on AVX2, as the AVX-512 copy in 256 bits (vroundpd
/// to nearest even, then the clamp). The portable loop it replaces took 1.2 µs for K = 576
/// and 3.2 µs for K = 1536 on Zen 5, each call's x̂ on one thread before the tasks fork.
__attribute__((target("avx2,fma,f16c"))) void quantizeRowQ8Avx2(const float *x, int64_t K,
                                                                int8_t *q, float *meta) {
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t b = 0; b < K / 32; ++b) {
    const float *v = x + 32 * b;
    __m256 f[4], unordered = _mm256_setzero_ps(), amax8 = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      f[i] = _mm256_loadu_ps(v + 8 * i);
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(f[i], f[i], _CMP_UNORD_Q));
      amax8 = _mm256_max_ps(amax8, _mm256_and_ps(f[i], magnitude));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    if (_mm256_movemask_ps(unordered))
      amax = std::numeric_limits<float>::quiet_NaN(); // vmaxps would drop a NaN
    if (quantizeBlockWithoutScale(amax, q + 32 * b, meta + 2 * b))
      continue;
    meta[2 * b] = amax / 127.f;
    const __m256d d = _mm256_set1_pd(double(meta[2 * b]));
    const __m256d low = _mm256_set1_pd(-127.0), high = _mm256_set1_pd(127.0);
    __m128i ints[8], sum = _mm_setzero_si128();
    for (int i = 0; i < 8; ++i) {
      const __m128 four =
          i % 2 ? _mm256_extractf128_ps(f[i / 2], 1) : _mm256_castps256_ps128(f[i / 2]);
      const __m256d r = _mm256_round_pd(_mm256_div_pd(_mm256_cvtps_pd(four), d),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      ints[i] = _mm256_cvtpd_epi32(_mm256_min_pd(_mm256_max_pd(r, low), high));
      sum = _mm_add_epi32(sum, ints[i]);
    }
    for (int half = 0; half < 2; ++half) {
      const __m128i *p = ints + 4 * half;
      _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * b + 16 * half),
                       _mm_packs_epi16(_mm_packs_epi32(p[0], p[1]), _mm_packs_epi32(p[2], p[3])));
    }
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(1, 0, 3, 2)));
    sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(2, 3, 0, 1)));
    meta[2 * b + 1] = meta[2 * b] * float(_mm_cvtsi128_si32(sum));
  }
}
} // namespace
#endif

void quantizeRowQ8(const float *x, int64_t K, int8_t *q, float *meta, BlockDotIsa isa) {
#ifdef XF_BLOCK_GEMV_X86
  if (isa == BlockDotIsa::Avx512Vnni)
    return quantizeRowQ8Avx512(x, K, q, meta);
  if (isa == BlockDotIsa::Avx2 || isa == BlockDotIsa::AvxVnni)
    return quantizeRowQ8Avx2(x, K, q, meta);
#endif
  (void)isa;
  for (int64_t b = 0; b < K / 32; ++b) {
    const float *v = x + 32 * b;
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) // a NaN sticks (std::max would drop it)
      amax = std::fabs(v[i]) > amax || std::isnan(v[i]) ? std::fabs(v[i]) : amax;
    if (quantizeBlockWithoutScale(amax, q + 32 * b, meta + 2 * b))
      continue;
    // x / d in double: exact enough for any float d (also subnormal, where 127 / amax
    // overflows); the clamp takes the last ulp.
    meta[2 * b] = amax / 127.f;
    const double d = meta[2 * b];
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
      double r = std::nearbyint(double(v[i]) / d);
      q[32 * b + i] = int8_t(std::clamp(r, -127.0, 127.0));
      sum += q[32 * b + i];
    }
    meta[2 * b + 1] = meta[2 * b] * float(sum);
  }
}

BlockDotIsa blockDotIsaOfCpu(BlockDotIsa ceiling) {
#ifdef XF_BLOCK_GEMV_X86
  // Not a chain: Zen 4 has AVX-512 VNNI but not AVX-VNNI (the VEX form), Alder Lake the reverse.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool has[] = {true, avx2, avx2 && __builtin_cpu_supports("avxvnni"),
                      avx2 && __builtin_cpu_supports("avx512vnni") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")};
  for (int isa = std::clamp(int(ceiling), 0, 3); isa > 0; --isa)
    if (has[isa])
      return BlockDotIsa(isa);
#endif
  (void)ceiling;
  return BlockDotIsa::Portable;
}

const char *blockDotIsaName(BlockDotIsa isa) {
  switch (isa) {
  case BlockDotIsa::Avx512Vnni: return "avx512-vnni";
  case BlockDotIsa::AvxVnni: return "avx-vnni";
  case BlockDotIsa::Avx2: return "avx2";
  default: return "portable";
  }
}

namespace {
/// x̂ of every input row (q [rows][K], meta [rows][2·K/32]), once per call; thread_local so
/// repeated calls reuse the storage.
std::pair<const int8_t *, const float *> quantizeInput(const float *x, int64_t xStride,
                                                      int64_t rows, int64_t K, BlockDotIsa isa) {
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> meta;
  q.resize(size_t(rows * K));
  meta.resize(size_t(2 * rows * (K / 32)));
  for (int64_t m = 0; m < rows; ++m)
    quantizeRowQ8(x + m * xStride, K, q.data() + m * K, meta.data() + 2 * m * (K / 32), isa);
  return {q.data(), meta.data()};
}

/// The call's arguments as xfrt_block_gemv and xfrt_block_gemm take them, checked; false for
/// a type, K, epilogue or row count neither handles.
bool validBlockCall(int64_t rows, int64_t K, int64_t ggmlType, int64_t N, int64_t epilogue) {
  return K > 0 && K % 32 == 0 && N > 0 && rows >= 0 && epilogue >= 0 && epilogue <= 5 &&
         (ggmlType == kQ4_0 || ggmlType == kQ4_1 || ggmlType == kQ8_0);
}

/// The widest instruction set at most `ceiling` of this CPU, looked up once per ceiling.
BlockDotIsa isaForCeiling(int64_t ceiling) {
  static const BlockDotIsa byCeiling[] = {
      blockDotIsaOfCpu(BlockDotIsa::Portable), blockDotIsaOfCpu(BlockDotIsa::Avx2),
      blockDotIsaOfCpu(BlockDotIsa::AvxVnni), blockDotIsaOfCpu(BlockDotIsa::Avx512Vnni)};
  return byCeiling[std::clamp<int64_t>(ceiling, 0, 3)];
}


#ifdef XF_BLOCK_GEMV_X86
/// xfrt_block_gemm's x̂: rows [task·kRows, +kRows) rounded (AVX-512, quantizeRowQ8) and
/// offset to u8 (avx512gemm::offsetInput).
struct QuantizeCall {
  static constexpr int64_t kRows = 8;
  const float *x;
  int64_t xStride, K, rows;
  int8_t *q;
  float *meta;
  uint8_t *xu;
};

int quantizeTask(void *, int task, uint8_t *closure) {
  const QuantizeCall &c = *reinterpret_cast<const QuantizeCall *>(closure);
  const int64_t begin = task * QuantizeCall::kRows,
                end = std::min(c.rows, begin + QuantizeCall::kRows);
  for (int64_t m = begin; m < end; ++m)
    quantizeRowQ8(c.x + m * c.xStride, c.K, c.q + m * c.K, c.meta + 2 * m * (c.K / 32),
                  BlockDotIsa::Avx512Vnni);
  if (c.xu) // null where the tiles read q itself (avx512gemm::kUnsignedWeights)
    avx512gemm::offsetInput(c.q + begin * c.K, (end - begin) * c.K, c.xu + begin * c.K);
  return 0;
}

/// xfrt_block_gemm's call: a task per range of `panelsPerTask` panels of output columns (32, or
/// 16 gate + 16 up rows for SwiGLU), every input row run against each packed panel.
struct GemmCall {
  int64_t rows, N, blocks, rowBytes, panelCols, panelsPerTask;
  const uint8_t *weight;
  const uint8_t *xu; // x̂'s q + 128, rows padded to a multiple of amxgemm::kTileRows
  const int8_t *xq;  // x̂'s q
  bool unsignedWeights; // the AVX-512 tiles read xq (avx512gemm::kUnsignedWeights), not xu
  const float *xMeta;
  Epilogue epilogueArgs;
  BlockGemmTiles tiles;
};

/// The weight rows of the panel of output columns [n0, +count) (gate rows, then up rows for
/// SwiGLU): `count` rows from `rows[0]` and, gated, from `rows[1]`, back to back.
struct PanelSource {
  const uint8_t *rows[2];
  int64_t bytes; // of each stream
  int streams;

  PanelSource(const GemmCall &c, int64_t n0, int count) {
    const bool gated = c.epilogueArgs.epilogue == BlockEpilogue::SwiGlu;
    rows[0] = c.weight + n0 * c.rowBytes;
    rows[1] = gated ? c.weight + (c.N + n0) * c.rowBytes : nullptr;
    bytes = count * c.rowBytes, streams = gated ? 2 : 1;
  }
  /// Prefetches part `part` of `parts` of the rows, so that the next panel's rows arrive while
  /// this one's input rows run (from DRAM, packing a panel cold took a third as long as
  /// running 128 input rows over it; into L1 or L2 measured the same).
  void prefetch(int64_t part, int64_t parts) const {
    const int64_t lines = (bytes + 63) / 64, per = (lines + parts - 1) / parts;
    for (int s = 0; s < streams; ++s)
      for (int64_t line = part * per; line < std::min(lines, (part + 1) * per); ++line)
        _mm_prefetch(reinterpret_cast<const char *>(rows[s] + 64 * line), _MM_HINT_T0);
  }
};

/// Every input row over the packed panel, `kRows` at a time, the epilogue of each tile's rows
/// after it, prefetching `next` (null: none) as they go. `tile(m0, tileRows, out)` computes the
/// sums of input rows [m0, +tileRows).
template <int kRows, class TileFn>
void runPanelRows(const GemmCall &c, int64_t n0, int count, const PanelSource *next,
                  TileFn &&tile) {
  float out[kRows][avx512gemm::kPanelRows];
  const int64_t tiles = (c.rows + kRows - 1) / kRows;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t m0 = t * kRows;
    const int tileRows = int(std::min<int64_t>(kRows, c.rows - m0));
    if (next)
      next->prefetch(t, tiles);
    prefetchEpilogueRows(c.epilogueArgs, m0 + kRows, std::min<int64_t>(kRows, c.rows - m0 - kRows),
                         n0, count);
    tile(m0, tileRows, out);
    finishPanelRows(c.epilogueArgs, m0, tileRows, n0, count, out);
  }
}

/// Every input row over the packed panel on `Tiles` (amxgemm::kTileRows at a time).
template <int Type, class Tiles>
void runPanelOnTiles(const GemmCall &c, const avx512gemm::Panel &panel, int64_t n0, int count,
                     const PanelSource *next) {
  const int64_t K = 32 * c.blocks;
  Tiles tiles;
  tiles.begin();
  runPanelRows<amxgemm::kTileRows>(
      c, n0, count, next, [&](int64_t m0, int tileRows, float (*out)[avx512gemm::kPanelRows]) {
        amxgemm::tile<Type>(tiles, tileRows, panel, c.blocks, c.xu + m0 * K,
                            c.xMeta + m0 * 2 * c.blocks, out);
      });
  tiles.end();
}

/// Panel `p`: packed, then every input row over it on the call's tiles.
template <int Type>
void runPanel(const GemmCall &c, int64_t p, const PanelSource *next) {
  using namespace avx512gemm;
  const bool gated = c.epilogueArgs.epilogue == BlockEpilogue::SwiGlu;
  const int64_t n0 = p * c.panelCols;
  const int count = int(std::min(c.panelCols, c.N - n0));
  PanelRows rows{{c.weight + n0 * c.rowBytes, c.weight + (n0 + 16) * c.rowBytes},
                 {std::min(count, 16), std::max(count - 16, 0)},
                 c.rowBytes};
  if (gated)
    rows.base[1] = c.weight + (c.N + n0) * c.rowBytes, rows.count[1] = count;
  thread_local Panel panel;
  pack<Type>(rows, c.blocks, panel, /*corrections=*/!c.unsignedWeights);
  if (c.tiles == BlockGemmTiles::Amx)
    return runPanelOnTiles<Type, amxgemm::AmxTiles>(c, panel, n0, count, next);
  if (c.tiles == BlockGemmTiles::AmxEmulated)
    return runPanelOnTiles<Type, amxgemm::EmulatedTiles>(c, panel, n0, count, next);
  const int64_t K = 32 * c.blocks;
  runPanelRows<kRowTile>(c, n0, count, next,
                         [&](int64_t m0, int tileRows, float (*out)[kPanelRows]) {
                           const uint8_t *x = c.unsignedWeights
                                                  ? reinterpret_cast<const uint8_t *>(c.xq)
                                                  : c.xu;
                           tileOf<Type>(tileRows, panel, c.blocks, x + m0 * K,
                                        c.xMeta + m0 * 2 * c.blocks, out);
                         });
}

/// Panels [task·panelsPerTask, +panelsPerTask): consecutive, so that each prefetches the next.
template <int Type> int runGemmTask(void *, int task, uint8_t *closure) {
  const GemmCall &c = *reinterpret_cast<const GemmCall *>(closure);
  const int64_t panels = (c.N + c.panelCols - 1) / c.panelCols;
  const int64_t begin = task * c.panelsPerTask, end = std::min(panels, begin + c.panelsPerTask);
  for (int64_t p = begin; p < end; ++p) {
    const int64_t n1 = (p + 1) * c.panelCols;
    const PanelSource next(c, n1, int(std::min(c.panelCols, c.N - n1)));
    runPanel<Type>(c, p, p + 1 < end ? &next : nullptr);
  }
  return 0;
}
#endif
} // namespace

} // namespace xfrt

int32_t xfrt::blockGemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                        const uint8_t *weight, int64_t ggmlType, int64_t N, const float *bias,
                        const float *residual, int64_t residualStride, int64_t epilogue,
                        float *out, int64_t outStride, BlockGemmTiles tiles) {
  if (!validBlockCall(rows, K, ggmlType, N, epilogue))
    return -1;
  if (isaForCeiling(int64_t(BlockDotIsa::Avx512Vnni)) != BlockDotIsa::Avx512Vnni ||
      (tiles == BlockGemmTiles::Amx && !amxInt8Usable()))
    return 1; // the caller's Halide kernel takes it
  if (rows == 0)
    return 0;
#ifdef XF_BLOCK_GEMV_X86
  GemmCall c{};
  c.rows = rows, c.N = N, c.blocks = K / 32, c.rowBytes = c.blocks * ggmlBlockBytes(int(ggmlType));
  c.weight = weight;
  c.panelCols = epilogue == int64_t(BlockEpilogue::SwiGlu) ? 16 : avx512gemm::kPanelRows;
  c.epilogueArgs = {bias, residual, N, residualStride, outStride, BlockEpilogue(epilogue),
                    /*vector512=*/true, out};
  c.tiles = tiles;
  // x̂ (its meta, and q + 128 as the tiles read it) in parallel tasks of 8 rows: serial, it
  // took ~15 % of SmolLM2's prefill GEMM time at 2 threads. The AMX tiles load 16 rows at a
  // time: rows past the last are zeros, their sums never read.
  const int64_t paddedRows = (rows + amxgemm::kTileRows - 1) / amxgemm::kTileRows *
                             amxgemm::kTileRows;
  thread_local std::vector<int8_t> q;
  thread_local std::vector<uint8_t> xu;
  thread_local std::vector<float> meta;
  q.resize(size_t(rows * K)), meta.resize(size_t(2 * rows * c.blocks));
  xu.resize(size_t(paddedRows * K));
  std::memset(xu.data() + rows * K, 0, size_t((paddedRows - rows) * K));
  // One range of panels per kernel thread, so that each panel's rows can be prefetched while
  // the one before runs; the first panel of each range while x̂ is computed.
  const int64_t panels = (N + c.panelCols - 1) / c.panelCols;
  const int64_t tasks = std::min<int64_t>(panels, kernelThreads());
  c.panelsPerTask = (panels + tasks - 1) / tasks;
  for (int64_t p = 0; p < panels; p += c.panelsPerTask) {
    const int64_t n0 = p * c.panelCols;
    PanelSource(c, n0, int(std::min(c.panelCols, N - n0))).prefetch(0, 1);
  }
  c.unsignedWeights =
      avx512gemm::unsignedWeights(ggmlType) && tiles == BlockGemmTiles::Avx512Vnni;
  QuantizeCall quantize{x, xStride, K, rows, q.data(), meta.data(),
                        c.unsignedWeights ? nullptr : xu.data()};
  runTasks(quantizeTask, (rows + QuantizeCall::kRows - 1) / QuantizeCall::kRows, &quantize);
  c.xu = xu.data(), c.xq = q.data(), c.xMeta = meta.data();
  auto task = ggmlType == kQ8_0   ? runGemmTask<kQ8_0>
              : ggmlType == kQ4_1 ? runGemmTask<kQ4_1>
                                  : runGemmTask<kQ4_0>;
  return runTasks(task, (panels + c.panelsPerTask - 1) / c.panelsPerTask, &c);
#else
  return 0;
#endif
}

extern "C" int32_t xfrt_block_gemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                                   const uint8_t *weight, int64_t ggmlType, int64_t N,
                                   const float *bias, const float *residual,
                                   int64_t residualStride, int64_t epilogue, float *out,
                                   int64_t outStride, int64_t isaCeiling) {
  using namespace xfrt;
  if (!validBlockCall(rows, K, ggmlType, N, epilogue))
    return -1;
  if (isaForCeiling(isaCeiling) != BlockDotIsa::Avx512Vnni)
    return 1; // the caller's Halide kernel takes it
  // AMX where this process may use it (every AMX CPU has AVX-512 VNNI); its C++ form where
  // XF_AMX=emulate asks.
  const BlockGemmTiles tiles = amxInt8Usable() ? BlockGemmTiles::Amx
                               : amxEmulated() ? BlockGemmTiles::AmxEmulated
                                               : BlockGemmTiles::Avx512Vnni;
  return blockGemm(x, xStride, rows, K, weight, ggmlType, N, bias, residual, residualStride,
                   epilogue, out, outStride, tiles);
}

extern "C" int32_t xfrt_block_gemv(const float *x, int64_t xStride, int64_t rows, int64_t K,
                                   const uint8_t *weight, int64_t ggmlType, int64_t N,
                                   const float *bias, const float *residual,
                                   int64_t residualStride, int64_t epilogue, float *out,
                                   int64_t outStride, int64_t isaCeiling) {
  using namespace xfrt;
  if (!validBlockCall(rows, K, ggmlType, N, epilogue))
    return -1;
  if (rows == 0)
    return 0;
  const BlockDotIsa isa = isaForCeiling(isaCeiling);
  Call c{};
  c.dot = ggmlType == kQ8_0   ? dotsFor<kQ8_0>(isa)
          : ggmlType == kQ4_1 ? dotsFor<kQ4_1>(isa)
                              : dotsFor<kQ4_0>(isa);
  c.ahead = ggmlType == kQ8_0   ? fourRowPrefetchAhead<kQ8_0>(K / 32)
            : ggmlType == kQ4_1 ? fourRowPrefetchAhead<kQ4_1>(K / 32)
                                : fourRowPrefetchAhead<kQ4_0>(K / 32);
  c.dot4 = ggmlType == kQ8_0   ? dots4For<kQ8_0>(isa)
           : ggmlType == kQ4_1 ? dots4For<kQ4_1>(isa)
                               : dots4For<kQ4_0>(isa);
  c.rows = rows, c.N = N, c.blocks = K / 32, c.rowBytes = c.blocks * ggmlBlockBytes(int(ggmlType));
  c.weight = weight;
  c.epilogueArgs = {bias,      residual, N, residualStride, outStride, BlockEpilogue(epilogue),
                    isa == BlockDotIsa::Avx512Vnni, out};
  const bool gated = c.epilogueArgs.epilogue == BlockEpilogue::SwiGlu;

  std::tie(c.xq, c.xMeta) = quantizeInput(x, xStride, rows, K, isa);

  // One contiguous range of rows per kernel thread (a multiple of the threads past 1 MiB of
  // weights each): each thread streams its range, where tasks of 64 KiB taken in turn made
  // SmolLM2 q8 decode 13 % slower (3.85 against 3.36 ms/token at 2 threads).
  const int64_t bytes = N * c.rowBytes * (gated ? 2 : 1);
  const int64_t threads = kernelThreads(), perTask = int64_t(1) << 20;
  int64_t tasks =
      threads * std::max<int64_t>(1, (bytes + threads * perTask - 1) / (threads * perTask));
  c.chunk = (N + tasks - 1) / tasks;
  tasks = (N + c.chunk - 1) / c.chunk;
  c.tasks = tasks;

  // Learn which call follows which (decode steps repeat their calls in the same order): the
  // last call on this thread is told this one's head under its weights, and this one looks up
  // its own successor. A wrong or stale guess costs only useless prefetches.
  struct Successor {
    const uint8_t *after;
    CallHead head;
  };
  thread_local Successor successors[512];
  thread_local const uint8_t *previous = nullptr;
  auto slot = [](const uint8_t *w) -> Successor & {
    return successors[(reinterpret_cast<uintptr_t>(w) >> 6) * 0x9E3779B97F4A7C15ull >> 55];
  };
  if (previous)
    slot(previous) = {previous,
                      {weight, N, c.rowBytes, c.chunk, tasks, gated}};
  previous = weight;
  const Successor &successor = slot(weight);
  c.next = successor.after == weight ? &successor.head : nullptr;

  return runTasks(runTask, tasks, &c);
}
