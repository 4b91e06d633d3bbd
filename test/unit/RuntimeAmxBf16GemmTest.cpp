// xfrt_amx_bf16_gemm (runtime/lib/AmxBf16Gemm.cpp): the multi-row GEMMs of --bf16-gemm-inputs
// on AMX tiles, weights packed at load in pairs of K. Three checks:
//   (a) the path with AMX's tile operations written out in C++ (Bf16GemmTiles::AmxEmulated)
//       equals, bit for bit, a plain loop per output written here from Intel's SDM pseudo-code
//       of tdpbf16ps (two float32 FMA chains per output over each block of 16 pairs, even and
//       odd products, then dest + (even + odd); bf16 denormals read as zero, denormal results
//       flushed) — so the layout, the edges and the order are the ones the SDM states;
//   (b) the whole GEMM (every epilogue, SwiGLU, bias, residual, strides) against float64 on the
//       same rounded inputs within the float32 summation bound, and against the exact x within
//       it plus bf16's rounding of x (2^-8 relative): the per-GEMM bound docs/correctness.md
//       states — for M, N, K that are not multiples of the tiles;
//   (c) the instructions themselves where this process may use AMX bf16 (within (b)'s bounds
//       and the summation bound of the emulation; how many outputs match it bitwise is
//       printed), else "skipped: no AMX (why)".
#include "xfrt/Amx.h"
#include "xfrt/AmxBf16Gemm.h"
#include "xfrt/BlockGemv.h"
#include "xfrt/MachinePeak.h"

#include "TwoThreadParallelFor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

using xfrt::Bf16GemmTiles;
using xfrt::BlockEpilogue;

constexpr double kU = 0x1p-24; // float32's unit roundoff

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

bool hasAvx512() { return __builtin_cpu_supports("avx512bw"); }

struct Case {
  int64_t rows, K, N, tileCols;
  BlockEpilogue epilogue = BlockEpilogue::None;
  bool bias = false, residual = false;
};

/// A GEMM's operands: W [N or 2N gated][K] as bf16, x with a stride, bias, residual.
struct Operands {
  Case c;
  int64_t xStride, outStride, weightCols;
  std::vector<float> x, bias, residual;
  std::vector<uint16_t> w; // W(n, k) at n·K + k
  std::vector<uint16_t> packed;

  Operands(const Case &c, std::mt19937 &rng) : c(c) {
    const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
    weightCols = gated ? 2 * c.N : c.N;
    xStride = c.K + 3, outStride = c.N + 5;
    std::normal_distribution<float> normal;
    x.resize(size_t(c.rows * xStride));
    bias.resize(size_t(weightCols));
    residual.resize(size_t(c.rows * outStride));
    for (std::vector<float> *v : {&x, &bias, &residual})
      for (float &e : *v)
        e = normal(rng);
    w.resize(size_t(weightCols * c.K));
    for (uint16_t &e : w)
      e = xfrt::roundToBf16(normal(rng) / std::sqrt(float(c.K)));
    pack();
  }

  /// The layout xf_prepare packs (docs/pipeline.md): tile t of tileCols columns, pairs of K,
  /// (r + 2·nj, kk, t) = W(t·tileCols + nj, 2·kk + r), zero past N and K; gated, tile 2i the
  /// gate's columns i·tileCols.. and tile 2i + 1 the same up columns.
  void pack() {
    const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
    const int64_t tc = c.tileCols, pairs = (c.K + 1) / 2, perHalf = (c.N + tc - 1) / tc;
    const int64_t tiles = gated ? 2 * perHalf : perHalf;
    packed.assign(size_t(tiles * pairs * 2 * tc), 0);
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t kk = 0; kk < pairs; ++kk)
        for (int64_t nj = 0; nj < tc; ++nj)
          for (int r = 0; r < 2; ++r) {
            const int64_t col = (gated ? t / 2 : t) * tc + nj, k = 2 * kk + r;
            if (col >= c.N || k >= c.K)
              continue;
            const int64_t stored = gated && t % 2 ? c.N + col : col;
            packed[size_t(((t * pairs + kk) * tc + nj) * 2 + r)] = w[size_t(stored * c.K + k)];
          }
  }

  std::vector<float> run(Bf16GemmTiles tiles, int32_t *status = nullptr) const {
    std::vector<float> out(size_t(c.rows * outStride), -7.f);
    int32_t s =
        xfrt::amxBf16Gemm(x.data(), xStride, c.rows, c.K, packed.data(), c.tileCols, c.N,
                          c.bias ? bias.data() : nullptr, c.residual ? residual.data() : nullptr,
                          outStride, int64_t(c.epilogue), out.data(), outStride, tiles);
    if (status)
      *status = s;
    else
      EXPECT_EQ(s, 0);
    return out;
  }
};

// ---- (a) the SDM's tdpbf16ps, one output at a time ----------------------------------------

float widenDaz(uint16_t h) {
  return std::fpclassify(bf16ToFloat(h)) == FP_SUBNORMAL ? std::copysign(0.f, bf16ToFloat(h))
                                                         : bf16ToFloat(h);
}
float flushToZero(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.f, v) : v;
}

/// Σ_k x̂(m, k)·W(col, k) as a chain of tdpbf16ps over blocks of 32 K (zeros past K).
float sdmSum(const Operands &o, int64_t m, int64_t col) {
  const int64_t K = o.c.K;
  float dest = 0.f;
  for (int64_t k0 = 0; k0 < K; k0 += 32) {
    float even = 0.f, odd = 0.f;
    for (int64_t k = k0; k < k0 + 32; k += 2) {
      auto xb = [&](int64_t kk) {
        return kk < K ? xfrt::roundToBf16(o.x[size_t(m * o.xStride + kk)]) : uint16_t(0);
      };
      auto wb = [&](int64_t kk) { return kk < K ? o.w[size_t(col * K + kk)] : uint16_t(0); };
      even = flushToZero(std::fma(widenDaz(xb(k)), widenDaz(wb(k)), even));
      odd = flushToZero(std::fma(widenDaz(xb(k + 1)), widenDaz(wb(k + 1)), odd));
    }
    dest = flushToZero(dest + flushToZero(even + odd));
  }
  return dest;
}

TEST(RuntimeAmxBf16Gemm, EmulatedTilesGiveTheSdmBits) {
  if (!hasAvx512())
    GTEST_SKIP() << "no AVX-512 on this CPU: the emulated path needs it";
  std::mt19937 rng(5);
  int cases = 0;
  for (int64_t tileCols : {16, 48})
    for (int64_t rows : {1, 15, 16, 17, 33, 70})
      for (int64_t K : {7, 32, 33, 50, 96})
        for (int64_t N : {5, 16, 40, 61}) {
          const Case c{
              rows, K, N, tileCols, BlockEpilogue::None, (rows + K) % 2 == 0, (rows + N) % 2 == 1};
          SCOPED_TRACE(::testing::Message()
                       << "rows " << rows << " K " << K << " N " << N << " tileCols " << tileCols);
          Operands o(c, rng);
          std::vector<float> got = o.run(Bf16GemmTiles::AmxEmulated);
          for (int64_t m = 0; m < rows; ++m)
            for (int64_t n = 0; n < o.outStride; ++n) {
              float want = -7.f; // columns past N untouched
              if (n < N) {
                want = sdmSum(o, m, n);
                if (c.bias)
                  want += o.bias[size_t(n)];
                if (c.residual)
                  want += o.residual[size_t(m * o.outStride + n)];
              }
              const float have = got[size_t(m * o.outStride + n)];
              ASSERT_EQ(std::memcmp(&have, &want, 4), 0)
                  << "at (" << m << ", " << n << "): " << have << " vs " << want;
            }
          ++cases;
        }
  EXPECT_EQ(cases, 2 * 6 * 5 * 4);
}

/// One output of x = (1, 1, 1, 1) by a weight column: the SDM's order, DAZ and FTZ, values
/// chosen so that another order or exact arithmetic gives another result.
float oneOutput(const std::vector<float> &x, const std::vector<float> &column, Bf16GemmTiles t) {
  const int64_t K = int64_t(x.size()), tileCols = 16, pairs = (K + 1) / 2;
  std::vector<uint16_t> packed(size_t(pairs * 2 * tileCols), 0);
  for (int64_t k = 0; k < K; ++k)
    packed[size_t((k / 2) * 2 * tileCols + k % 2)] = xfrt::roundToBf16(column[size_t(k)]);
  float out = -7.f;
  EXPECT_EQ(xfrt::amxBf16Gemm(x.data(), K, 1, K, packed.data(), tileCols, 1, nullptr, nullptr, 0, 0,
                              &out, 1, t),
            0);
  return out;
}

TEST(RuntimeAmxBf16Gemm, EmulatedTdpbf16psOrderDazFtz) {
  if (!hasAvx512())
    GTEST_SKIP() << "no AVX-512 on this CPU: the emulated path needs it";
  const float big = 0x1p24f;
  // Even chain 2^24 + 1 = 2^24 (nearest even), odd chain 1 − 2^24: their sum 1. One chain in
  // k order (the Intrinsics Guide's text) gives 0, exact arithmetic 2.
  EXPECT_EQ(oneOutput({1, 1, 1, 1}, {big, 1, 1, -big}, Bf16GemmTiles::AmxEmulated), 1.f);
  // Two blocks of 32 K: each block's (even + odd) is added to the sum in turn.
  std::vector<float> x(64, 1.f), w(64, 0.f);
  w[0] = big, w[32] = 1, w[33] = 1; // block 0: 2^24; block 1: 2 → 2^24 + 2
  EXPECT_EQ(oneOutput(x, w, Bf16GemmTiles::AmxEmulated), big + 2);
  // DAZ: a bf16 denormal input reads as zero (2^-130 · 2^100 would be 2^-30).
  EXPECT_EQ(oneOutput({0x1p-130f, 0}, {0x1p100f, 0}, Bf16GemmTiles::AmxEmulated), 0.f);
  // FTZ: a product below float32's normals (2^-70 · 2^-70) is flushed.
  EXPECT_EQ(oneOutput({0x1p-70f, 0}, {0x1p-70f, 0}, Bf16GemmTiles::AmxEmulated), 0.f);
  EXPECT_EQ(oneOutput({0x1p-60f, 0}, {0x1p-60f, 0}, Bf16GemmTiles::AmxEmulated), 0x1p-120f);
}

// ---- (b) against float64 -------------------------------------------------------------------

double activation(BlockEpilogue e, double v) {
  switch (e) {
  case BlockEpilogue::Relu:
    return std::max(v, 0.0);
  case BlockEpilogue::GeluTanh:
    return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  case BlockEpilogue::GeluErf:
    return 0.5 * v * (1 + std::erf(v * 0.7071067811865476));
  case BlockEpilogue::Silu:
  case BlockEpilogue::SwiGlu:
    return v / (1 + std::exp(-v));
  default:
    return v;
  }
}

/// Every output within its bound of float64: of the product on x̂ (`exact` false) or on x
/// itself (`exact`: plus 2^-8·Σ|x·w|, bf16's rounding of x). The product's bound is float32
/// summation's, (16 + 2 + blocks)·u·Σ|x̂·w| (16 FMAs a chain, the pair's sum, one addition a
/// block), the epilogue's a few u of its terms, an activation's slope at most 1.13 (GELU,
/// SiLU: 1.1) times that plus 4 u of its value (its own rounding).
/// Returns max|Δ|/max|float64| over the outputs (printed by the tests: the measured error).
double checkAgainstFloat64(const Operands &o, const std::vector<float> &got, bool exact,
                           const char *what) {
  const Case &c = o.c;
  const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
  const int64_t blocks = (c.K + 31) / 32;
  const double sumBound = (16 + 2 + blocks) * kU * 1.01;
  double largestError = 0, largest = 0;
  for (int64_t m = 0; m < c.rows; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double pre[2], err[2];
      for (int h = 0; h < (gated ? 2 : 1); ++h) {
        const int64_t col = h ? c.N + n : n;
        double s = 0, magnitude = 0, inputs = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const float xv = o.x[size_t(m * o.xStride + k)];
          const double xr = bf16ToFloat(xfrt::roundToBf16(xv)),
                       wv = bf16ToFloat(o.w[size_t(col * c.K + k)]);
          s += (exact ? double(xv) : xr) * wv;
          magnitude += std::fabs(xr * wv);
          inputs += std::fabs(double(xv) * wv);
        }
        const double b = c.bias ? o.bias[size_t(col)] : 0;
        pre[h] = s + b;
        err[h] = sumBound * magnitude + kU * (std::fabs(s) + std::fabs(b)) +
                 (exact ? 0x1p-8 * inputs : 0);
      }
      double want = activation(c.epilogue, pre[0]);
      double bound =
          (c.epilogue == BlockEpilogue::None ? 1 : 1.13) * err[0] + 4 * kU * std::fabs(want);
      if (gated) {
        bound = 1.1 * err[0] * std::fabs(pre[1]) + std::fabs(want) * err[1] +
                8 * kU * std::fabs(want * pre[1]);
        want *= pre[1];
      }
      if (c.residual) {
        const double r = o.residual[size_t(m * o.outStride + n)];
        want += r;
        bound += kU * (std::fabs(want) + std::fabs(r));
      }
      const double have = got[size_t(m * o.outStride + n)];
      EXPECT_LE(std::fabs(have - want), bound + 1e-30)
          << what << " at (" << m << ", " << n << "): " << have << " vs float64 " << want;
      if (std::fabs(have - want) > bound + 1e-30)
        return INFINITY;
      largestError = std::max(largestError, std::fabs(have - want));
      largest = std::max(largest, std::fabs(want));
    }
  return largestError / std::max(largest, 1e-30);
}

std::vector<Case> boundCases() {
  std::vector<Case> cases;
  for (BlockEpilogue e : {BlockEpilogue::None, BlockEpilogue::Relu, BlockEpilogue::GeluTanh,
                          BlockEpilogue::GeluErf, BlockEpilogue::Silu, BlockEpilogue::SwiGlu})
    for (int64_t tileCols : {16, 32, 48}) {
      cases.push_back({37, 77, 45, tileCols, e, true, true});
      cases.push_back({16, 64, 17, tileCols, e, false, e != BlockEpilogue::Relu});
    }
  cases.push_back({128, 768, 100, 48, BlockEpilogue::GeluTanh, true, false}); // GPT-2's K
  cases.push_back({5, 3, 2, 16});
  return cases;
}

TEST(RuntimeAmxBf16Gemm, EmulatedTilesWithinTheBf16Bound) {
  if (!hasAvx512())
    GTEST_SKIP() << "no AVX-512 on this CPU: the emulated path needs it";
  std::mt19937 rng(23);
  double rounded = 0, exact = 0;
  for (const Case &c : boundCases()) {
    SCOPED_TRACE(::testing::Message()
                 << "rows " << c.rows << " K " << c.K << " N " << c.N << " tileCols " << c.tileCols
                 << " epilogue " << int(c.epilogue));
    Operands o(c, rng);
    std::vector<float> got = o.run(Bf16GemmTiles::AmxEmulated);
    rounded =
        std::max(rounded, checkAgainstFloat64(o, got, /*exact=*/false, "emulated, rounded x"));
    exact = std::max(exact, checkAgainstFloat64(o, got, /*exact=*/true, "emulated, exact x"));
    for (int64_t m = 0; m < c.rows; ++m) // past N untouched
      for (int64_t n = c.N; n < o.outStride; ++n)
        ASSERT_EQ(got[size_t(m * o.outStride + n)], -7.f);
  }
  std::printf("emulated AMX bf16: max|Δ|/max|float64| %.2g on the rounded x, %.2g on the exact x\n",
              rounded, exact);
}

// ---- (c) the instructions ------------------------------------------------------------------

TEST(RuntimeAmxBf16Gemm, AmxTilesWhereUsable) {
  if (!xfrt::amxBf16Usable()) {
    std::printf("skipped: no AMX (%s): the AMX bf16 instructions are not run, their C++ form "
                "is\n",
                xfrt::amxBf16Unusable());
    GTEST_SKIP() << "no AMX bf16: " << xfrt::amxBf16Unusable();
  }
  std::mt19937 rng(29);
  int64_t outputs = 0, bitwise = 0;
  for (const Case &c : boundCases()) {
    SCOPED_TRACE(::testing::Message()
                 << "rows " << c.rows << " K " << c.K << " N " << c.N << " tileCols " << c.tileCols
                 << " epilogue " << int(c.epilogue));
    Operands o(c, rng);
    std::vector<float> hardware = o.run(Bf16GemmTiles::Amx);
    std::vector<float> emulated = o.run(Bf16GemmTiles::AmxEmulated);
    checkAgainstFloat64(o, hardware, /*exact=*/false, "AMX, rounded x");
    checkAgainstFloat64(o, hardware, /*exact=*/true, "AMX, exact x");
    for (size_t i = 0; i < hardware.size(); ++i, ++outputs)
      bitwise += std::memcmp(&hardware[i], &emulated[i], 4) == 0;
  }
  std::printf("AMX bf16: %lld of %lld outputs bitwise equal to the SDM emulation; order probe "
              "%g (SDM: 1, one chain: 0)\n",
              (long long)bitwise, (long long)outputs,
              oneOutput({1, 1, 1, 1}, {0x1p24f, 1, 1, -0x1p24f}, Bf16GemmTiles::Amx));
}

// Where this process may not use AMX bf16, asking for it takes nothing: 1, out untouched.
TEST(RuntimeAmxBf16Gemm, AmxOnlyWhereUsable) {
  if (xfrt::amxBf16Usable())
    GTEST_SKIP() << "AMX bf16 is usable here";
  std::vector<uint16_t> w(size_t(16 * 2 * 16), 0);
  std::vector<float> x(32, 1.f), out(2, -7.f);
  EXPECT_EQ(xfrt_amx_bf16_gemm(x.data(), 32, 1, 32, w.data(), 16, 2, nullptr, nullptr, 0, 0,
                               out.data(), 2),
            1);
  EXPECT_EQ(out[0], -7.f);
  EXPECT_NE(std::string(xfrt::amxBf16Unusable()), "");
}

// The AMX bf16 peak (--bf16-products=auto's, the benchmarks') is measured only where the tiles
// may run: 0 elsewhere, without executing an AMX instruction.
TEST(RuntimeAmxBf16Gemm, PeakOnlyWhereUsable) {
  const double peak = xfrt::measureAmxBf16Peak(1, 1000);
  if (xfrt::amxBf16Usable())
    EXPECT_GT(peak, 0);
  else
    EXPECT_EQ(peak, 0);
}

TEST(RuntimeAmxBf16Gemm, RefusesWhatItDoesNotHandle) {
  std::vector<uint16_t> w(size_t(16 * 2 * 48), 0);
  std::vector<float> x(32, 1.f), out(2, -7.f);
  auto call = [&](int64_t K, int64_t tileCols, int64_t N, int64_t epilogue) {
    return xfrt::amxBf16Gemm(x.data(), 32, 1, K, w.data(), tileCols, N, nullptr, nullptr, 0,
                             epilogue, out.data(), 2, Bf16GemmTiles::AmxEmulated);
  };
  EXPECT_EQ(call(32, 24, 2, 0), -1); // tiles of 24 columns: not whole B tiles
  EXPECT_EQ(call(0, 16, 2, 0), -1);
  EXPECT_EQ(call(32, 16, 0, 0), -1);
  EXPECT_EQ(call(32, 16, 2, 6), -1);
  EXPECT_EQ(out[0], -7.f);
}

// x̂ as the Halide GEMM rounds it (GemmAlgorithm.cpp): nearest even, NaN as 0x7fc0.
TEST(RuntimeAmxBf16Gemm, RoundsAsTheHalideKernel) {
  EXPECT_EQ(xfrt::roundToBf16(1.f), 0x3f80);
  EXPECT_EQ(xfrt::roundToBf16(1.f + 0x1p-8f), 0x3f80);     // tie: to even
  EXPECT_EQ(xfrt::roundToBf16(1.f + 3 * 0x1p-8f), 0x3f82); // tie: to even, up
  EXPECT_EQ(xfrt::roundToBf16(1.f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(xfrt::roundToBf16(-2.f), 0xc000);
  EXPECT_EQ(xfrt::roundToBf16(INFINITY), 0x7f80);
  EXPECT_EQ(xfrt::roundToBf16(std::nanf("")), 0x7fc0);
  EXPECT_EQ(xfrt::roundToBf16(-std::nanf("")), 0x7fc0);
  EXPECT_EQ(xfrt::roundToBf16(0x1p-130f), 0x0008); // denormals kept as bits
  EXPECT_EQ(xfrt::roundToBf16(3.4e38f), 0x7f80);   // past bf16's largest: infinity
}

} // namespace
