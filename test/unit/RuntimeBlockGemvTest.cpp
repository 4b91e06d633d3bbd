// xfrt_block_gemv (runtime/lib/BlockGemv.cpp): decode GEMMs on ggml blocks with activations
// rounded to Q8_0. Checked in double against the weights dequantized by the load path
// (GgmlType.cpp, itself bitwise-checked against ggml's definitions) on every instruction set
// this CPU has:
//   * against x̂ (the stated rounding of x): the integer dot products are exact, so the only
//     difference is float32 summation: ≤ 2^-20 · Σ|w·x̂| per output;
//   * against the exact x: ≤ Σ_blocks (d_x/2)·Σ|w| (each |x̂ − x| ≤ d_x/2) plus that slack —
//     the bound docs/correctness.md states;
// and for every epilogue, bias, residual, SwiGLU's gate/up rows, strides, row counts 1..5,
// N not a multiple of the 4-row groups, and tasks run out of order on two threads.
#include "xfrt/Amx.h"
#include "xfrt/BlockGemv.h"
#include "xfrt/GgmlType.h"

#include "TwoThreadParallelFor.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>


namespace {

using xfrt::BlockDotIsa;
using xfrt::BlockEpilogue;
using xfrt::BlockGemmTiles;

constexpr int kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8;

int blockBytes(int type) { return type == kQ8_0 ? 34 : type == kQ4_1 ? 20 : 18; }

/// A float16 bit pattern: mostly normal scales of 2^-12..2^2, sometimes 0 or subnormal.
uint16_t randomHalf(std::mt19937 &rng) {
  int kind = int(rng() % 16);
  uint16_t sign = uint16_t((rng() & 1) << 15), mantissa = uint16_t(rng() & 0x3ff);
  if (kind == 0)
    return sign;
  if (kind == 1)
    return uint16_t(sign | mantissa);
  return uint16_t(sign | (3 + rng() % 14) << 10 | mantissa);
}

std::vector<uint8_t> randomBlocks(int type, int64_t rows, int64_t K, std::mt19937 &rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * K / 32 * blockBytes(type)));
  for (uint8_t &b : bytes)
    b = uint8_t(rng());
  for (size_t at = 0; at < bytes.size(); at += blockBytes(type)) {
    uint16_t d = randomHalf(rng);
    std::memcpy(&bytes[at], &d, 2);
    if (type == kQ4_1) {
      uint16_t m = randomHalf(rng);
      std::memcpy(&bytes[at + 2], &m, 2);
    }
  }
  return bytes;
}

std::vector<float> dequantized(int type, const std::vector<uint8_t> &bytes, int64_t rows,
                               int64_t K) {
  std::vector<float> w(static_cast<size_t>(rows * K));
  EXPECT_TRUE(xfrt::dequantizeToF32(xfrt::GgmlType(type), bytes.data(), w.size(), w.data()).ok());
  return w;
}

double activate(BlockEpilogue e, double a) {
  switch (e) {
  case BlockEpilogue::Relu: return std::max(a, 0.0);
  case BlockEpilogue::GeluTanh:
    return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
  case BlockEpilogue::GeluErf: return 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
  case BlockEpilogue::Silu:
  case BlockEpilogue::SwiGlu: return a / (1 + std::exp(-a));
  default: return a;
  }
}

struct Case {
  int type;
  int64_t rows, K, N;
  BlockEpilogue epilogue = BlockEpilogue::None;
  bool bias = false, residual = false;
  bool weightAtPageEnd = false; // the weight's last byte just before an unreadable page
};

/// `bytes` copied to the end of readable memory: a read past them faults.
class GuardedCopy {
public:
  explicit GuardedCopy(const std::vector<uint8_t> &bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    size_ = (bytes.size() + page - 1) / page * page + page;
    void *map = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(map, MAP_FAILED);
    base_ = static_cast<uint8_t *>(map);
    EXPECT_EQ(mprotect(base_ + size_ - page, page, PROT_NONE), 0);
    data_ = base_ + size_ - page - bytes.size();
    std::memcpy(data_, bytes.data(), bytes.size());
  }
  ~GuardedCopy() { munmap(base_, size_); }
  GuardedCopy(const GuardedCopy &) = delete;
  GuardedCopy &operator=(const GuardedCopy &) = delete;
  const uint8_t *data() const { return data_; }

private:
  uint8_t *base_ = nullptr, *data_ = nullptr;
  size_t size_ = 0;
};

using BlockCall = int32_t (*)(const float *, int64_t, int64_t, int64_t, const uint8_t *, int64_t,
                              int64_t, const float *, const float *, int64_t, int64_t, float *,
                              int64_t, int64_t);

void check(const Case &c, BlockDotIsa isa, std::mt19937 &rng, BlockCall call = xfrt_block_gemv) {
  SCOPED_TRACE(::testing::Message() << xfrt::blockDotIsaName(isa) << " type " << c.type
                                    << " rows " << c.rows << " K " << c.K << " N " << c.N
                                    << " epilogue " << int(c.epilogue));
  const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
  const int64_t weightRows = gated ? 2 * c.N : c.N, blocks = c.K / 32;
  std::vector<uint8_t> bytes = randomBlocks(c.type, weightRows, c.K, rng);
  std::vector<float> w = dequantized(c.type, bytes, weightRows, c.K);
  // x with a row stride past K, blocks of very different magnitudes, and a zero block.
  const int64_t xStride = c.K + 5, outStride = c.N + 3;
  std::normal_distribution<float> normal;
  std::vector<float> x(size_t(c.rows * xStride), 1e30f);
  for (int64_t m = 0; m < c.rows; ++m)
    for (int64_t k = 0; k < c.K; ++k)
      x[m * xStride + k] = k / 32 == 1 ? 0.f : normal(rng) * std::ldexp(1.f, int(k / 32 % 7) - 3);
  std::vector<float> bias(static_cast<size_t>(weightRows)), residual(static_cast<size_t>(c.rows * outStride));
  for (float &v : bias)
    v = normal(rng);
  for (float &v : residual)
    v = normal(rng);
  std::vector<float> out(size_t(c.rows * outStride), -7.f);
  std::optional<GuardedCopy> guarded;
  if (c.weightAtPageEnd)
    guarded.emplace(bytes);
  ASSERT_EQ(call(x.data(), xStride, c.rows, c.K, guarded ? guarded->data() : bytes.data(), c.type,
                 c.N,
                 c.bias ? bias.data() : nullptr, c.residual ? residual.data() : nullptr, outStride,
                 int64_t(c.epilogue), out.data(), outStride, int64_t(isa)),
            0);

  for (int64_t m = 0; m < c.rows; ++m) {
    std::vector<int8_t> q(static_cast<size_t>(c.K));
    std::vector<float> meta(static_cast<size_t>(2 * blocks)), d(static_cast<size_t>(blocks));
    xfrt::quantizeRowQ8(&x[m * xStride], c.K, q.data(), meta.data());
    for (int64_t b = 0; b < blocks; ++b)
      d[b] = meta[2 * b];
    // Per weight row: Σ w·x̂, Σ w·x, Σ|w·x̂| and the rounding bound Σ_b d_b/2·Σ|w|.
    auto sums = [&](int64_t row, double &hat, double &exact, double &magnitude, double &bound) {
      hat = exact = magnitude = bound = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        double absW = 0;
        for (int i = 0; i < 32; ++i) {
          int64_t k = 32 * b + i;
          double wk = w[row * c.K + k], xh = double(d[b]) * q[k];
          hat += wk * xh, exact += wk * x[m * xStride + k], magnitude += std::fabs(wk * xh);
          absW += std::fabs(wk);
        }
        bound += d[b] / 2.0 * absW;
      }
    };
    for (int64_t n = 0; n < c.N; ++n) {
      double hat, exact, magnitude, bound, upHat = 0, upExact = 0, upMag = 0, upBound = 0;
      sums(n, hat, exact, magnitude, bound);
      if (gated)
        sums(c.N + n, upHat, upExact, upMag, upBound);
      auto finish = [&](double gate, double up) {
        double b0 = c.bias ? bias[n] : 0, b1 = c.bias && gated ? bias[c.N + n] : 0;
        double v = activate(c.epilogue, gate + b0);
        if (gated)
          v *= up + b1;
        return v + (c.residual ? residual[m * outStride + n] : 0);
      };
      const double got = out[m * outStride + n];
      const double slack = std::ldexp(magnitude + upMag, -20) + 1e-30;
      if (c.epilogue == BlockEpilogue::None) {
        // Linear: the two bounds apply to the output directly.
        double base = c.bias ? bias[n] : 0, res = c.residual ? residual[m * outStride + n] : 0;
        double tie = std::ldexp(std::fabs(base) + std::fabs(res), -22);
        ASSERT_LE(std::fabs(got - (hat + base + res)), slack + tie) << "m " << m << " n " << n;
        ASSERT_LE(std::fabs(got - (exact + base + res)), bound + slack + tie)
            << "m " << m << " n " << n;
      } else {
        // Non-linear epilogues: against the reference on x̂, relative to the value's scale.
        double want = finish(hat, upHat);
        double scale = 1 + std::fabs(want) + magnitude + upMag + std::fabs(hat * upMag);
        ASSERT_LE(std::fabs(got - want), 1e-5 * scale) << "m " << m << " n " << n;
      }
    }
    for (int64_t n = c.N; n < outStride; ++n)
      ASSERT_EQ(out[m * outStride + n], -7.f) << "wrote past N";
  }
}

std::vector<BlockDotIsa> isasOfThisCpu() {
  std::vector<BlockDotIsa> isas;
  for (BlockDotIsa isa : {BlockDotIsa::Portable, BlockDotIsa::Avx2, BlockDotIsa::AvxVnni,
                          BlockDotIsa::Avx512Vnni})
    if (xfrt::blockDotIsaOfCpu(isa) == isa)
      isas.push_back(isa);
    else
      std::printf("not on this CPU: %s\n", xfrt::blockDotIsaName(isa));
  return isas;
}

TEST(RuntimeBlockGemv, QuantizeRowQ8) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> x(96);
  for (float &v : x)
    v = normal(rng);
  std::fill(x.begin() + 32, x.begin() + 64, 0.f);
  x[70] = -1e-40f; // a subnormal block maximum
  for (int i = 64; i < 96; ++i)
    if (i != 70)
      x[i] = 0.f;
  std::vector<int8_t> q(96);
  float meta[6];
  xfrt::quantizeRowQ8(x.data(), 96, q.data(), meta);
  float d[3] = {meta[0], meta[2], meta[4]}, s[3] = {meta[1], meta[3], meta[5]};
  for (int b = 0; b < 3; ++b) {
    float amax = 0;
    int sum = 0;
    for (int i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(x[32 * b + i])), sum += q[32 * b + i];
    EXPECT_EQ(d[b], amax / 127.f);
    EXPECT_EQ(s[b], d[b] * float(sum));
    for (int i = 0; i < 32; ++i) {
      EXPECT_LE(std::abs(int(q[32 * b + i])), 127);
      double want = amax > 0 ? std::nearbyint(double(x[32 * b + i]) / double(d[b])) : 0;
      EXPECT_EQ(q[32 * b + i], std::clamp(want, -127.0, 127.0));
      EXPECT_LE(std::fabs(double(d[b]) * q[32 * b + i] - x[32 * b + i]), d[b] / 2.0 * 1.0001);
    }
  }
  EXPECT_EQ(d[1], 0.f);
  EXPECT_EQ(q[70], -127);
  // Non-finite inputs give a NaN scale: the outputs they touch are NaN, not garbage.
  x[5] = INFINITY;
  xfrt::quantizeRowQ8(x.data(), 96, q.data(), meta);
  EXPECT_TRUE(std::isnan(meta[0]));
  EXPECT_FALSE(std::isnan(meta[4]));
  // So does a NaN, wherever it is in the block (max() would skip it).
  x[5] = 1.f;
  x[70] = NAN;
  xfrt::quantizeRowQ8(x.data(), 96, q.data(), meta);
  EXPECT_FALSE(std::isnan(meta[0]));
  EXPECT_TRUE(std::isnan(meta[4]));
  EXPECT_TRUE(std::isnan(meta[5]));
}

TEST(RuntimeBlockGemv, QuantizeRowQ8EveryInstructionSetBitwise) {
  // The vector paths round exactly as the portable loop: same q bytes, same meta bits, for
  // ties (x = (k + ½)·d), values at ±127·d, zero, subnormal, infinite and NaN blocks; the
  // twelve blocks three times over, so that each kind also lands in the AVX-512 copy's groups
  // of sixteen blocks, at different places.
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  const int64_t K = 32 * 12 * 3;
  std::vector<float> x(K);
  for (int64_t k = 0; k < K; ++k)
    x[k] = normal(rng) * std::ldexp(1.f, int(k / 32 % 9) - 4);
  for (int i = 0; i < 32; ++i) { // block 1: d = 1 exactly, every value a tie or an integer
    x[32 + i] = float(i % 2 ? i - 16 : i) + (i % 3 == 0 ? 0.5f : 0.f) - 8.f;
    x[32 + i] = std::clamp(x[32 + i], -126.5f, 126.5f);
  }
  x[33] = 127.f;
  std::fill(x.begin() + 64, x.begin() + 96, 0.f); // block 2: zero
  for (int i = 96; i < 128; ++i)                    // block 3: subnormal
    x[i] = float(i - 112) * 1e-42f;
  x[130] = -INFINITY; // block 4
  x[190] = NAN;       // block 5
  x[191] = 3.f;
  std::copy(x.begin(), x.begin() + K / 3, x.begin() + K / 3);
  std::copy(x.begin(), x.begin() + K / 3, x.begin() + 2 * K / 3);
  std::vector<int8_t> want(K), got(K);
  std::vector<float> wantMeta(K / 16), gotMeta(K / 16);
  xfrt::quantizeRowQ8(x.data(), K, want.data(), wantMeta.data(), BlockDotIsa::Portable);
  EXPECT_TRUE(std::isnan(wantMeta[8]) && std::isnan(wantMeta[10]));
  EXPECT_TRUE(std::isnan(wantMeta[8 + 24]) && std::isnan(wantMeta[10 + 48]));
  for (BlockDotIsa isa : isasOfThisCpu()) {
    std::fill(got.begin(), got.end(), int8_t(99));
    xfrt::quantizeRowQ8(x.data(), K, got.data(), gotMeta.data(), isa);
    EXPECT_EQ(got, want) << xfrt::blockDotIsaName(isa);
    EXPECT_EQ(std::memcmp(gotMeta.data(), wantMeta.data(), wantMeta.size() * 4), 0)
        << xfrt::blockDotIsaName(isa);
  }
}

TEST(RuntimeBlockGemv, QuantizeRowQ8ManyBlocksBitwise) {
  // 2048 blocks: normal values over scales 2^-140..2^40 (subnormal scales included), and
  // blocks of ties x = (k + ½)·d for scales d with few mantissa bits (0.75·2^e, 1.25·2^e, and
  // 16 bits), where a vector path that rounded differently from the portable division would
  // show.
  std::mt19937 rng(29);
  std::normal_distribution<float> normal;
  const int64_t blocks = 2048, K = 32 * blocks;
  std::vector<float> x(K);
  for (int64_t b = 0; b < blocks; ++b) {
    float *v = x.data() + 32 * b;
    const int e = int(rng() % 181) - 140;
    if (b % 2 == 0) {
      for (int i = 0; i < 32; ++i)
        v[i] = std::ldexp(normal(rng), e);
      continue;
    }
    // A 16-bit mantissa keeps (k + ½)·d exact while 1/d is not: x·(1/d) then lands beside
    // the tie (the AVX-512 copy's multiply rounds 6 % of these the wrong way; it must divide).
    const float mantissa[3] = {0.75f, 1.25f, float(32768 + rng() % 32768) / 65536.f};
    const float d = std::ldexp(mantissa[b / 2 % 3], std::max(e, -100));
    v[0] = 127.f * d; // the block's maximum: its scale is d again
    for (int i = 1; i < 32; ++i)
      v[i] = (float(int(rng() % 254) - 127) + 0.5f) * d * (rng() % 2 ? 1.f : -1.f);
  }
  std::vector<int8_t> want(K), got(K);
  std::vector<float> wantMeta(K / 16), gotMeta(K / 16);
  xfrt::quantizeRowQ8(x.data(), K, want.data(), wantMeta.data(), BlockDotIsa::Portable);
  for (BlockDotIsa isa : isasOfThisCpu()) {
    xfrt::quantizeRowQ8(x.data(), K, got.data(), gotMeta.data(), isa);
    EXPECT_EQ(got, want) << xfrt::blockDotIsaName(isa);
    EXPECT_EQ(std::memcmp(gotMeta.data(), wantMeta.data(), wantMeta.size() * 4), 0)
        << xfrt::blockDotIsaName(isa);
  }
}

TEST(RuntimeBlockGemv, EveryTypeAndInstructionSet) {
  std::mt19937 rng(7);
  for (BlockDotIsa isa : isasOfThisCpu())
    for (int type : {kQ8_0, kQ4_0, kQ4_1}) {
      check({type, 1, 576, 70}, isa, rng);
      check({type, 3, 96, 9}, isa, rng);
      check({type, 5, 1536, 13, BlockEpilogue::None, true, true}, isa, rng);
      check({type, 2, 64, 6, BlockEpilogue::SwiGlu, true, true}, isa, rng);
      check({type, 1, 576, 33, BlockEpilogue::SwiGlu}, isa, rng);
    }
}

// xfrt_block_gemm (prefill rows, AVX-512 VNNI): the same bounds as the GEMV, on row counts
// around its tile of six, column counts around its panels of 32 (16 for SwiGLU), every type.
TEST(RuntimeBlockGemm, EveryTypeEpilogueAndTail) {
  if (xfrt::blockDotIsaOfCpu(BlockDotIsa::Avx512Vnni) != BlockDotIsa::Avx512Vnni)
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU: xfrt_block_gemm leaves every call to Halide";
  std::mt19937 rng(11);
  for (int type : {kQ8_0, kQ4_0, kQ4_1}) {
    check({type, 1, 576, 70}, BlockDotIsa::Avx512Vnni, rng, xfrt_block_gemm);
    check({type, 7, 96, 32}, BlockDotIsa::Avx512Vnni, rng, xfrt_block_gemm);
    check({type, 13, 1536, 45, BlockEpilogue::None, true, true}, BlockDotIsa::Avx512Vnni, rng,
          xfrt_block_gemm);
    check({type, 6, 64, 17, BlockEpilogue::SwiGlu, true, true}, BlockDotIsa::Avx512Vnni, rng,
          xfrt_block_gemm);
    check({type, 128, 576, 33, BlockEpilogue::SwiGlu}, BlockDotIsa::Avx512Vnni, rng,
          xfrt_block_gemm);
  }
  for (BlockEpilogue e : {BlockEpilogue::Relu, BlockEpilogue::GeluTanh, BlockEpilogue::GeluErf,
                          BlockEpilogue::Silu})
    check({kQ4_1, 11, 128, 40, e, true, true}, BlockDotIsa::Avx512Vnni, rng, xfrt_block_gemm);
}

// Where xfrt_block_gemm's blocking has edges: input rows around its tiles (6 on AVX-512, 16
// on AMX) and past them, output columns around its panels (32; 16 gate + 16 up for SwiGLU)
// with ragged last panels and several panels per task (each prefetching the next one's rows),
// and K of one block and of odd block counts (the last block of a row decoded alone), every
// type, the weight's last byte against an unreadable page so that a read past it faults.
TEST(RuntimeBlockGemm, RowTilesPanelsAndBlockTailsAtTheirEdges) {
  if (xfrt::blockDotIsaOfCpu(BlockDotIsa::Avx512Vnni) != BlockDotIsa::Avx512Vnni)
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU: xfrt_block_gemm leaves every call to Halide";
  std::mt19937 rng(23);
  for (int type : {kQ8_0, kQ4_0, kQ4_1}) {
    for (int64_t rows : {5, 7, 17, 131})
      for (int64_t K : {32, 608}) {
        check({type, rows, K, 47, BlockEpilogue::None, false, true, true}, BlockDotIsa::Avx512Vnni,
              rng, xfrt_block_gemm);
        check({type, rows, K, 17, BlockEpilogue::SwiGlu, true, false, true},
              BlockDotIsa::Avx512Vnni, rng, xfrt_block_gemm);
      }
    // 41 and 37 panels: tasks of several panels, the last task and panel short.
    check({type, 13, 96, 32 * 40 + 9, BlockEpilogue::None, true, true, true},
          BlockDotIsa::Avx512Vnni, rng, xfrt_block_gemm);
    check({type, 7, 160, 16 * 36 + 5, BlockEpilogue::SwiGlu, false, true, true},
          BlockDotIsa::Avx512Vnni, rng, xfrt_block_gemm);
  }
}

// The AMX path (16-row tiles, the correction added after the tile sums) gives the AVX-512 VNNI
// path's bits: row counts around both tiles (6 and 16), panels of 32 and 16 (SwiGLU), every type
// and epilogue, x with a stride past K. Its tile operations written out in C++ run on any CPU
// with AVX-512 VNNI; the AMX instructions where this process may use them.
std::vector<float> blockGemmOn(BlockGemmTiles tiles, const Case &c, const std::vector<float> &x,
                               int64_t xStride, const std::vector<uint8_t> &w,
                               const std::vector<float> &bias, const std::vector<float> &residual,
                               int64_t outStride) {
  std::vector<float> out(size_t(c.rows * outStride), -7.f);
  EXPECT_EQ(xfrt::blockGemm(x.data(), xStride, c.rows, c.K, w.data(), c.type, c.N,
                            c.bias ? bias.data() : nullptr, c.residual ? residual.data() : nullptr,
                            outStride, int64_t(c.epilogue), out.data(), outStride, tiles),
            0);
  return out;
}

void checkTilesAgree(const Case &c, std::mt19937 &rng, bool hardware) {
  SCOPED_TRACE(::testing::Message() << "type " << c.type << " rows " << c.rows << " K " << c.K
                                    << " N " << c.N << " epilogue " << int(c.epilogue));
  const bool gated = c.epilogue == BlockEpilogue::SwiGlu;
  const int64_t weightRows = gated ? 2 * c.N : c.N, xStride = c.K + 3, outStride = c.N + 2;
  std::vector<uint8_t> w = randomBlocks(c.type, weightRows, c.K, rng);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(c.rows * xStride));
  std::vector<float> bias(static_cast<size_t>(weightRows));
  std::vector<float> residual(static_cast<size_t>(c.rows * outStride));
  for (std::vector<float> *v : {&x, &bias, &residual})
    for (float &e : *v)
      e = normal(rng);
  std::vector<float> want =
      blockGemmOn(BlockGemmTiles::Avx512Vnni, c, x, xStride, w, bias, residual, outStride);
  std::vector<BlockGemmTiles> others = {BlockGemmTiles::AmxEmulated};
  if (hardware)
    others.push_back(BlockGemmTiles::Amx);
  for (BlockGemmTiles tiles : others) {
    std::vector<float> got = blockGemmOn(tiles, c, x, xStride, w, bias, residual, outStride);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
          << (tiles == BlockGemmTiles::Amx ? "AMX" : "emulated AMX") << " at " << i << ": "
          << got[i] << " vs " << want[i];
  }
}

TEST(RuntimeBlockGemm, AmxTilesGiveTheAvx512Bits) {
  if (xfrt::blockDotIsaOfCpu(BlockDotIsa::Avx512Vnni) != BlockDotIsa::Avx512Vnni)
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU: xfrt_block_gemm leaves every call to Halide";
  const bool hardware = xfrt::amxInt8Usable();
  if (!hardware)
    std::printf("skipped: no AMX (%s): the AMX instructions are not run, their C++ form is\n",
                xfrt::amxInt8Unusable());
  std::mt19937 rng(17);
  for (int type : {kQ8_0, kQ4_0, kQ4_1})
    for (int64_t rows : {1, 6, 15, 16, 17, 40}) {
      checkTilesAgree({type, rows, 96, 45, BlockEpilogue::None, true, true}, rng, hardware);
      checkTilesAgree({type, rows, 64, 17, BlockEpilogue::SwiGlu, true, false}, rng, hardware);
    }
  for (BlockEpilogue e : {BlockEpilogue::Relu, BlockEpilogue::GeluTanh, BlockEpilogue::GeluErf,
                          BlockEpilogue::Silu})
    checkTilesAgree({kQ4_1, 33, 576, 40, e, true, true}, rng, hardware);
}

// Where this process may not use AMX, asking for it takes nothing: 1, out untouched.
TEST(RuntimeBlockGemm, AmxOnlyWhereUsable) {
  if (xfrt::amxInt8Usable())
    GTEST_SKIP() << "AMX is usable here";
  std::vector<uint8_t> w(size_t(2 * 20), 0);
  std::vector<float> x(64, 1.f), out(2, -7.f);
  EXPECT_EQ(xfrt::blockGemm(x.data(), 64, 1, 64, w.data(), kQ4_1, 2, nullptr, nullptr, 0, 0,
                            out.data(), 2, BlockGemmTiles::Amx),
            1);
  EXPECT_EQ(out[0], -7.f);
  EXPECT_NE(std::string(xfrt::amxInt8Unusable()), "");
}

// Below AVX-512 VNNI (the CPU's or the executable's ceiling) it takes nothing: 1, out untouched.
TEST(RuntimeBlockGemm, LeavesOtherInstructionSetsToTheCaller) {
  std::vector<uint8_t> w(size_t(4 * 20), 0);
  std::vector<float> x(64, 1.f), out(4, -7.f);
  for (BlockDotIsa ceiling : {BlockDotIsa::Portable, BlockDotIsa::Avx2, BlockDotIsa::AvxVnni}) {
    EXPECT_EQ(xfrt_block_gemm(x.data(), 64, 1, 64, w.data(), kQ4_1, 2, nullptr, nullptr, 0, 0,
                              out.data(), 2, int64_t(ceiling)),
              1);
    EXPECT_EQ(out[0], -7.f);
  }
  EXPECT_EQ(xfrt_block_gemm(x.data(), 64, 1, 63, w.data(), kQ4_1, 2, nullptr, nullptr, 0, 0,
                            out.data(), 2, 3),
            -1); // K not a multiple of 32
}

TEST(RuntimeBlockGemv, Epilogues) {
  std::mt19937 rng(3);
  for (BlockDotIsa isa : isasOfThisCpu())
    for (BlockEpilogue e : {BlockEpilogue::Relu, BlockEpilogue::GeluTanh, BlockEpilogue::GeluErf,
                            BlockEpilogue::Silu})
      check({kQ4_1, 2, 128, 11, e, true, true}, isa, rng);
}

TEST(RuntimeBlockGemv, SiluOverItsRange) {
  // Zero weights, so each output is silu(bias) (SwiGLU: times an up bias of 1): silu in vectors
  // (AVX-512: a polynomial e^x) and std::exp agree with float64 to 8 ulp (+1e-30 absolute,
  // for the far negative tail where silu underflows) from −100 to 100, and NaN stays NaN.
  const int64_t K = 32, N = 1001;
  std::vector<uint8_t> zeros(size_t(2 * N * blockBytes(kQ4_1)), 0);
  std::vector<float> x(K, 1.f), bias(size_t(2 * N), 1.f), out(N);
  for (int64_t n = 0; n < N; ++n)
    bias[n] = float(-100.0 + 0.2 * double(n)) + float(n % 7) * 1e-3f;
  bias[N / 2] = NAN;
  for (BlockDotIsa isa : isasOfThisCpu())
    for (BlockEpilogue e : {BlockEpilogue::Silu, BlockEpilogue::SwiGlu}) {
      ASSERT_EQ(xfrt_block_gemv(x.data(), K, 1, K, zeros.data(), kQ4_1, N, bias.data(), nullptr, 0,
                                int64_t(e), out.data(), N, int64_t(isa)),
                0);
      for (int64_t n = 0; n < N; ++n) {
        if (n == N / 2) {
          EXPECT_TRUE(std::isnan(out[n])) << xfrt::blockDotIsaName(isa);
          continue;
        }
        double a = bias[n], want = a / (1 + std::exp(-a));
        EXPECT_LE(std::fabs(out[n] - want), std::ldexp(std::fabs(want), -20) + 1e-30)
            << xfrt::blockDotIsaName(isa) << " silu(" << a << ")";
      }
    }
}

TEST(RuntimeBlockGemv, TasksOnTheThreadPool) {
  // 2048 rows of Q8_0 with K = 1024: 2.2 MB of weights, many tasks.
  std::mt19937 rng(5);
  int before = parallelCalls;
  check({kQ8_0, 1, 1024, 2048}, xfrt::blockDotIsaOfCpu(BlockDotIsa::Avx512Vnni), rng);
  EXPECT_GT(parallelCalls, before);
}

TEST(RuntimeBlockGemv, InstructionSetsAgree) {
  // Integer dot products are exact: the paths differ only in float32 summation order.
  std::mt19937 rng(11);
  const int64_t K = 1024, N = 37;
  std::vector<uint8_t> bytes = randomBlocks(kQ4_1, N, K, rng);
  std::vector<float> x(K);
  std::normal_distribution<float> normal;
  for (float &v : x)
    v = normal(rng);
  std::vector<float> reference(N);
  ASSERT_EQ(xfrt_block_gemv(x.data(), K, 1, K, bytes.data(), kQ4_1, N, nullptr, nullptr, 0, 0,
                            reference.data(), N, int64_t(BlockDotIsa::Portable)),
            0);
  for (BlockDotIsa isa : isasOfThisCpu()) {
    std::vector<float> out(N);
    ASSERT_EQ(xfrt_block_gemv(x.data(), K, 1, K, bytes.data(), kQ4_1, N, nullptr, nullptr, 0, 0,
                              out.data(), N, int64_t(isa)),
              0);
    for (int64_t n = 0; n < N; ++n)
      EXPECT_NEAR(out[n], reference[n], 1e-5 * (1 + std::fabs(reference[n])))
          << xfrt::blockDotIsaName(isa);
  }
}

TEST(RuntimeBlockGemv, RowGroupsAreBitwiseOneRowAtATime) {
  // Rows of a call go four at a time where an instruction set has a four-row kernel (AVX-512
  // VNNI), the rest one at a time: each row's value must not depend on which, so every row of
  // a 13-row call (gate and up rows for SwiGLU) equals the same row alone (N = 1, one-row
  // path), bit for bit. K of 18 blocks (an odd last pair) and of 19 (an odd last block).
  std::mt19937 rng(17);
  std::normal_distribution<float> normal;
  for (BlockDotIsa isa : isasOfThisCpu())
    for (int type : {kQ4_0, kQ4_1, kQ8_0})
      for (int64_t K : {576, 608})
        for (BlockEpilogue e : {BlockEpilogue::None, BlockEpilogue::SwiGlu}) {
          SCOPED_TRACE(::testing::Message() << xfrt::blockDotIsaName(isa) << " type " << type
                                            << " K " << K << " epilogue " << int(e));
          const int64_t N = 13, rowBytes = K / 32 * blockBytes(type);
          const bool gated = e == BlockEpilogue::SwiGlu;
          std::vector<uint8_t> bytes = randomBlocks(type, gated ? 2 * N : N, K, rng);
          std::vector<float> x(K), all(N);
          for (float &v : x)
            v = normal(rng);
          ASSERT_EQ(xfrt_block_gemv(x.data(), K, 1, K, bytes.data(), type, N, nullptr, nullptr, 0,
                                    int64_t(e), all.data(), N, int64_t(isa)),
                    0);
          for (int64_t n = 0; n < N; ++n) {
            std::vector<uint8_t> row(bytes.begin() + n * rowBytes,
                                     bytes.begin() + (n + 1) * rowBytes);
            if (gated)
              row.insert(row.end(), bytes.begin() + (N + n) * rowBytes,
                         bytes.begin() + (N + n + 1) * rowBytes);
            float alone = -1.f;
            ASSERT_EQ(xfrt_block_gemv(x.data(), K, 1, K, row.data(), type, 1, nullptr, nullptr, 0,
                                      int64_t(e), &alone, 1, int64_t(isa)),
                      0);
            uint32_t a, b;
            std::memcpy(&a, &all[n], 4), std::memcpy(&b, &alone, 4);
            EXPECT_EQ(a, b) << "row " << n << ": " << all[n] << " vs " << alone;
          }
        }
}

TEST(RuntimeBlockGemv, RepeatedCallSequencesGiveTheSameResults) {
  // A call learns which call followed it last time and prefetches that one's first rows over
  // its last group (its own rows then prefetch nothing further): a sequence of calls of
  // different types, shapes, epilogues and successors of fewer than 16 rows, repeated, gives
  // bitwise the same outputs as the first time round.
  std::mt19937 rng(31);
  std::normal_distribution<float> normal;
  struct Step {
    int type;
    int64_t K, N;
    BlockEpilogue epilogue;
  };
  const Step steps[] = {{kQ4_1, 576, 960, BlockEpilogue::None},
                        {kQ4_1, 576, 9, BlockEpilogue::SwiGlu},
                        {kQ8_0, 1024, 2048, BlockEpilogue::None},
                        {kQ4_0, 608, 37, BlockEpilogue::SwiGlu},
                        {kQ4_1, 1536, 576, BlockEpilogue::None}};
  std::vector<std::vector<uint8_t>> weights;
  std::vector<std::vector<float>> xs, first;
  for (const Step &s : steps) {
    weights.push_back(
        randomBlocks(s.type, s.epilogue == BlockEpilogue::SwiGlu ? 2 * s.N : s.N, s.K, rng));
    xs.emplace_back(size_t(s.K));
    for (float &v : xs.back())
      v = normal(rng);
  }
  for (BlockDotIsa isa : isasOfThisCpu())
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < std::size(steps); ++i) {
        const Step &s = steps[i];
        std::vector<float> out(size_t(s.N), -1.f);
        ASSERT_EQ(xfrt_block_gemv(xs[i].data(), s.K, 1, s.K, weights[i].data(), s.type, s.N,
                                  nullptr, nullptr, 0, int64_t(s.epilogue), out.data(), s.N,
                                  int64_t(isa)),
                  0);
        if (round == 0) {
          first.push_back(out);
          continue;
        }
        EXPECT_EQ(std::memcmp(out.data(), first[first.size() - std::size(steps) + i].data(),
                              out.size() * 4),
                  0)
            << xfrt::blockDotIsaName(isa) << " call " << i << " round " << round;
      }
}

TEST(RuntimeBlockGemv, RefusesWhatItDoesNotHandle) {
  float x[64] = {}, out[2] = {};
  uint8_t w[2 * 40] = {};
  EXPECT_EQ(xfrt_block_gemv(x, 64, 1, 64, w, /*Q5_0*/ 6, 2, nullptr, nullptr, 0, 0, out, 2, 3), -1);
  EXPECT_EQ(xfrt_block_gemv(x, 48, 1, 48, w, kQ4_1, 2, nullptr, nullptr, 0, 0, out, 2, 3), -1);
  EXPECT_EQ(xfrt_block_gemv(x, 64, 1, 64, w, kQ4_1, 2, nullptr, nullptr, 0, 9, out, 2, 3), -1);
  EXPECT_EQ(xfrt_block_gemv(x, 64, 0, 64, w, kQ4_1, 2, nullptr, nullptr, 0, 0, out, 2, 3), 0);
}

} // namespace
