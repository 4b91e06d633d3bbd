// xfrt_decode_attention (runtime/lib/DecodeAttention.cpp): one KV-cache decode step of causal
// attention, checked in double against the equations (DecodeAttention.h) written here again:
// store the step's new key (rotated) and value rows at position keys − 1, rotate each query
// head to that position, softmax over the keys of its K/V head, the weighted sum of the
// values. For float32 and float16 caches, no / adjacent / split-halves rotary positions,
// grouped-query heads (1, 3 and 8 query heads per K/V head), head widths 64 and 128 (mixed
// too), key counts around the vector width and the key-range split, on every instruction set
// this CPU has, with the cache past the keys poisoned with NaN (never read), and tasks run out
// of order on two threads.
#include "xfrt/DecodeAttention.h"
#include "xfrt/DType.h"

#include "TwoThreadParallelFor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace {

using xfrt::AttentionIsa;

double halfValue(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double sign = h & 0x8000 ? -1.0 : 1.0;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

struct Case {
  int heads, kvHeads, dK, dV, keys, rope; // rope: 0 none, 1 adjacent, 2 halves
  bool half;
};

struct Cache {
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  double at(int64_t i) const { return f16.empty() ? double(f32[size_t(i)]) : halfValue(f16[size_t(i)]); }
  const void *data() const {
    return f16.empty() ? static_cast<const void *>(f32.data()) : f16.data();
  }
};

/// [kvHeads][capacity][width] with values in about ±2 for the first `keys` rows of each head
/// and NaN after them (float16: its NaN pattern).
Cache randomCache(const Case &c, int width, int capacity, std::mt19937 &rng) {
  Cache cache;
  const size_t n = size_t(c.kvHeads) * capacity * width;
  std::uniform_real_distribution<float> value(-2.f, 2.f);
  if (c.half) {
    cache.f16.assign(n, 0x7e00);
    for (int g = 0; g < c.kvHeads; ++g)
      for (int64_t i = 0; i < int64_t(c.keys) * width; ++i) // sign, exponent 2^-4..2^1, mantissa
        cache.f16[size_t(g) * capacity * width + i] =
            uint16_t((rng() & 1) << 15 | (11 + rng() % 6) << 10 | (rng() & 0x3ff));
  } else {
    cache.f32.assign(n, std::numeric_limits<float>::quiet_NaN());
    for (int g = 0; g < c.kvHeads; ++g)
      for (int64_t i = 0; i < int64_t(c.keys) * width; ++i)
        cache.f32[size_t(g) * capacity * width + i] = value(rng);
  }
  return cache;
}

/// Head vectors of `heads` × d turned to `position` in double (no rotation: as they are).
std::vector<double> rotated(const std::vector<float> &x, int heads, int d, int rope, int position,
                            double base) {
  std::vector<double> out(x.begin(), x.end());
  if (!rope)
    return out;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < d / 2; ++i) {
      const int a = h * d + (rope == 1 ? 2 * i : i), b = h * d + (rope == 1 ? 2 * i + 1 : i + d / 2);
      const double theta = position * std::pow(base, -2.0 * i / d);
      out[a] = x[a] * std::cos(theta) - x[b] * std::sin(theta);
      out[b] = x[a] * std::sin(theta) + x[b] * std::cos(theta);
    }
  return out;
}

/// The equations in double: out[h·dV + d].
std::vector<double> reference(const Case &c, const std::vector<float> &q, const Cache &k,
                              const Cache &v, int capacity, double scale, double base) {
  const int group = c.heads / c.kvHeads, position = c.keys - 1;
  std::vector<double> out(size_t(c.heads) * c.dV);
  for (int h = 0; h < c.heads; ++h) {
    const int g = h / group;
    const std::vector<double> all = rotated(q, c.heads, c.dK, c.rope, position, base);
    const std::vector<double> query(all.begin() + h * c.dK, all.begin() + (h + 1) * c.dK);
    std::vector<double> score(size_t(c.keys));
    double top = -1e300;
    for (int s = 0; s < c.keys; ++s) {
      double dot = 0;
      for (int i = 0; i < c.dK; ++i)
        dot += query[i] * k.at((int64_t(g) * capacity + s) * c.dK + i);
      score[s] = scale * dot;
      top = std::max(top, score[s]);
    }
    double total = 0;
    for (double &x : score)
      total += x = std::exp(x - top);
    for (int d = 0; d < c.dV; ++d) {
      double sum = 0;
      for (int s = 0; s < c.keys; ++s)
        sum += score[s] * v.at((int64_t(g) * capacity + s) * c.dV + d);
      out[size_t(h) * c.dV + d] = sum / total;
    }
  }
  return out;
}

/// The call: stores newKey / newValue at position keys − 1 of the caches, then attends.
std::vector<float> run(const Case &c, const std::vector<float> &q, const std::vector<float> &newKey,
                       const std::vector<float> &newValue, Cache &k, Cache &v, int capacity,
                       float scale, double base, AttentionIsa isa) {
  std::vector<float> out(size_t(c.heads) * c.dV, -7.f);
  void *kData = const_cast<void *>(k.data()), *vData = const_cast<void *>(v.data());
  EXPECT_EQ(xfrt_decode_attention(q.data(), c.keys, newKey.data(), newValue.data(), kData, vData,
                                  int64_t(capacity) * c.dK, int64_t(capacity) * c.dV, c.half,
                                  c.heads, c.kvHeads, c.dK, c.dV, scale, c.rope, base, out.data(),
                                  int64_t(isa)),
            0);
  return out;
}

std::vector<float> randomVector(size_t n, float range, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-range, range);
  std::vector<float> x(n);
  for (float &e : x)
    e = value(rng);
  return x;
}

std::vector<AttentionIsa> isasOfThisCpu() {
  std::vector<AttentionIsa> isas{AttentionIsa::Portable};
  for (AttentionIsa isa : {AttentionIsa::Avx2, AttentionIsa::Avx512})
    if (xfrt::attentionIsaOfCpu(isa) == isa)
      isas.push_back(isa);
  return isas;
}

TEST(RuntimeDecodeAttention, MatchesTheEquations) {
  std::mt19937 rng(7);
  const double base = 10000.0;
  int checked = 0;
  for (AttentionIsa isa : isasOfThisCpu())
    for (Case shape : {Case{9, 3, 64, 64, 0, 0, false}, Case{4, 4, 64, 64, 0, 0, false},
                       Case{8, 1, 128, 128, 0, 0, false}, Case{2, 2, 128, 64, 0, 0, false},
                       Case{6, 2, 64, 128, 0, 0, false}})
      for (int keys : {1, 7, 16, 17, 33, 64, 100, 257})
        for (int rope : {0, 1, 2})
          for (bool half : {false, true}) {
            Case c = shape;
            c.keys = keys, c.rope = rope, c.half = half;
            const int capacity = keys + 40;
            std::vector<float> q = randomVector(size_t(c.heads) * c.dK, 1.f, rng);
            std::vector<float> newKey = randomVector(size_t(c.kvHeads) * c.dK, 2.f, rng);
            std::vector<float> newValue = randomVector(size_t(c.kvHeads) * c.dV, 2.f, rng);
            Cache k = randomCache(c, c.dK, capacity, rng), v = randomCache(c, c.dV, capacity, rng);
            const float scale = 1.f / std::sqrt(float(c.dK));
            std::vector<float> got = run(c, q, newKey, newValue, k, v, capacity, scale, base, isa);
            // The new rows as stored: the key rotated, both rounded to the cache's type (half:
            // within 2^-11 relative; float32: the rounding of the rotation's products).
            const std::vector<double> key = rotated(newKey, c.kvHeads, c.dK, c.rope, keys - 1, base);
            const double rounding = c.half ? 0x1p-11 : 1e-6;
            for (int g = 0; g < c.kvHeads; ++g) {
              for (int i = 0; i < c.dK; ++i) {
                const double want = key[size_t(g) * c.dK + i];
                ASSERT_NEAR(k.at((int64_t(g) * capacity + keys - 1) * c.dK + i), want,
                            rounding * std::abs(want) + 1e-6)
                    << "stored key, head " << g << " element " << i;
              }
              for (int i = 0; i < c.dV; ++i) {
                const double want = newValue[size_t(g) * c.dV + i];
                ASSERT_NEAR(v.at((int64_t(g) * capacity + keys - 1) * c.dV + i), want,
                            c.half ? 0x1p-11 * std::abs(want) : 0.0)
                    << "stored value, head " << g << " element " << i;
                if (c.half) // every ISA's conversion rounds as floatToHalf does, to the bit
                  ASSERT_EQ(v.f16[size_t((int64_t(g) * capacity + keys - 1) * c.dV + i)],
                            xfrt::floatToHalf(newValue[size_t(g) * c.dV + i]))
                      << "stored value, head " << g << " element " << i;
              }
            }
            // The attention over the cache as it now holds them.
            std::vector<double> want = reference(c, q, k, v, capacity, scale, base);
            double worst = 0, largest = 0;
            for (size_t i = 0; i < want.size(); ++i) {
              ASSERT_TRUE(std::isfinite(got[i])) << "read past the keys? element " << i;
              worst = std::max(worst, std::abs(got[i] - want[i]));
              largest = std::max(largest, std::abs(want[i]));
            }
            // float32 sums of ≤ 257 terms of size ≤ 2 after a float32 softmax: a few ulp of
            // the outputs' scale; 1e-5 of it fails for a wrong key, head, position or weight.
            EXPECT_LE(worst, 1e-5 * std::max(largest, 1.0))
                << "isa " << int(isa) << " H " << c.heads << " H_kv " << c.kvHeads << " d "
                << c.dK << " keys " << keys << " rope " << rope << " half " << half;
            ++checked;
          }
  EXPECT_GE(checked, 240);
}

/// Several sequences in one call, each on its own cache slot at its own position, against the
/// equations per sequence: slots given out of order (slot i is not sequence i), starts from 0 to
/// 257, query and output rows at strides wider than a row.
TEST(RuntimeDecodeAttention, BatchedSequencesMatchTheEquations) {
  std::mt19937 rng(5);
  const double base = 10000.0;
  const std::vector<int64_t> starts{6, 0, 257, 31, 100}, slots{3, 0, 4, 1, 2};
  const int64_t n = int64_t(starts.size()), capacity = 300;
  for (AttentionIsa isa : isasOfThisCpu())
    for (Case shape : {Case{9, 3, 64, 64, 0, 0, false}, Case{4, 4, 128, 64, 0, 0, false}})
      for (int rope : {0, 1, 2})
        for (bool half : {false, true}) {
          Case c = shape;
          c.rope = rope, c.half = half, c.keys = int(capacity);
          // One slot: its K heads, then its V heads (as a cache slot holds both).
          const int64_t kElements = int64_t(c.kvHeads) * capacity * c.dK;
          const int64_t slotElements = kElements + int64_t(c.kvHeads) * capacity * c.dV;
          std::vector<Cache> kSlots, vSlots;
          Cache all;
          for (int64_t s = 0; s < n; ++s) {
            kSlots.push_back(randomCache(c, c.dK, int(capacity), rng));
            vSlots.push_back(randomCache(c, c.dV, int(capacity), rng));
            if (half) {
              all.f16.insert(all.f16.end(), kSlots.back().f16.begin(), kSlots.back().f16.end());
              all.f16.insert(all.f16.end(), vSlots.back().f16.begin(), vSlots.back().f16.end());
            } else {
              all.f32.insert(all.f32.end(), kSlots.back().f32.begin(), kSlots.back().f32.end());
              all.f32.insert(all.f32.end(), vSlots.back().f32.begin(), vSlots.back().f32.end());
            }
          }
          const int64_t qStride = int64_t(c.heads) * c.dK + 7,
                        outStride = int64_t(c.heads) * c.dV + 3;
          std::vector<float> q = randomVector(size_t(n * qStride), 1.f, rng);
          std::vector<float> out(size_t(n * outStride), -7.f);
          const float scale = 1.f / std::sqrt(float(c.dK));
          const char *k = static_cast<const char *>(all.data());
          const char *v = k + kElements * (half ? 2 : 4);
          ASSERT_EQ(xfrt_decode_attention_batched(
                        q.data(), qStride, n, slots.data(), starts.data(), k, v, slotElements,
                        capacity * c.dK, capacity * c.dV, half, c.heads, c.kvHeads, c.dK, c.dV,
                        scale, rope, base, out.data(), outStride, int64_t(isa)),
                    0);
          for (int64_t i = 0; i < n; ++i) {
            Case one = c;
            one.keys = int(starts[size_t(i)] + 1);
            std::vector<float> query(q.begin() + i * qStride,
                                     q.begin() + i * qStride + int64_t(c.heads) * c.dK);
            const size_t slot = size_t(slots[size_t(i)]);
            std::vector<double> want =
                reference(one, query, kSlots[slot], vSlots[slot], int(capacity), scale, base);
            double worst = 0, largest = 0;
            for (size_t j = 0; j < want.size(); ++j) {
              worst = std::max(worst, std::abs(out[size_t(i * outStride) + j] - want[j]));
              largest = std::max(largest, std::abs(want[j]));
            }
            EXPECT_LE(worst, 1e-5 * std::max(largest, 1.0))
                << "isa " << int(isa) << " H " << c.heads << " rope " << rope << " half " << half
                << " sequence " << i << " at " << starts[size_t(i)];
            EXPECT_EQ(out[size_t(i * outStride) + want.size()], -7.f) << "wrote past its row";
          }
        }
}

TEST(RuntimeDecodeAttention, InstructionSetsAgree) {
  std::mt19937 rng(11);
  Case c{9, 3, 64, 64, 300, 1, true};
  const int capacity = 512;
  std::vector<float> q = randomVector(size_t(c.heads) * c.dK, 3.f, rng);
  std::vector<float> newKey = randomVector(size_t(c.kvHeads) * c.dK, 2.f, rng);
  std::vector<float> newValue = randomVector(size_t(c.kvHeads) * c.dV, 2.f, rng);
  Cache k = randomCache(c, c.dK, capacity, rng), v = randomCache(c, c.dV, capacity, rng);
  std::vector<float> portable =
      run(c, q, newKey, newValue, k, v, capacity, 0.125f, 1e5, AttentionIsa::Portable);
  for (AttentionIsa isa : isasOfThisCpu()) {
    std::vector<float> got = run(c, q, newKey, newValue, k, v, capacity, 0.125f, 1e5, isa);
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], portable[i], 2e-6 * (1 + std::abs(portable[i]))) << int(isa) << " " << i;
  }
}

TEST(RuntimeDecodeAttention, TasksOnTheThreadPool) {
  std::mt19937 rng(3);
  Case c{9, 3, 64, 64, 200, 0, false};
  std::vector<float> q(size_t(c.heads) * c.dK, 0.25f), newKey(3 * 64, 0.5f), newValue(3 * 64, 1.f);
  Cache k = randomCache(c, 64, 200, rng), v = randomCache(c, 64, 200, rng);
  const int before = parallelCalls;
  run(c, q, newKey, newValue, k, v, 200, 0.125f, 0, AttentionIsa::Portable);
  EXPECT_GT(parallelCalls, before); // 3 K/V heads: more than one task
}

TEST(RuntimeDecodeAttention, FloatToHalfRoundsAsTheCacheStores) {
  auto bitsOf = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return xfrt::floatToHalf(f);
  };
  EXPECT_EQ(xfrt::floatToHalf(1.f), 0x3c00);
  EXPECT_EQ(xfrt::floatToHalf(-2.f), 0xc000);
  EXPECT_EQ(xfrt::floatToHalf(65504.f), 0x7bff);
  EXPECT_EQ(xfrt::floatToHalf(65519.f), 0x7bff);
  EXPECT_EQ(xfrt::floatToHalf(65520.f), 0x7c00);            // the tie past the largest half: inf
  EXPECT_EQ(xfrt::floatToHalf(1.f + 0x1p-11f), 0x3c00);     // tie: to even
  EXPECT_EQ(xfrt::floatToHalf(1.f + 3 * 0x1p-11f), 0x3c02); // tie: to even (up)
  EXPECT_EQ(xfrt::floatToHalf(0x1p-24f), 0x0001);           // the smallest subnormal
  EXPECT_EQ(xfrt::floatToHalf(0x1p-25f), 0x0000);           // its half: tie to even 0
  EXPECT_EQ(xfrt::floatToHalf(0x1.8p-25f), 0x0001);
  EXPECT_EQ(xfrt::floatToHalf(0x1.ffcp-15f), 0x0400); // rounds up into the normals
  EXPECT_EQ(xfrt::floatToHalf(-0.f), 0x8000);
  EXPECT_EQ(bitsOf(0x7f800000u), 0x7c00);                 // inf
  EXPECT_EQ(bitsOf(0x7fc00000u) & 0x7e00, 0x7e00);        // NaN stays a NaN
  EXPECT_EQ(xfrt::floatToHalf(0x1.ffep-1f), 0x3c00);      // 1 − 2^-12: a tie, up to 1 (even)
}

TEST(RuntimeDecodeAttention, RejectsWhatItDoesNotHandle) {
  std::vector<float> q(128 * 8, 0.f), out(128 * 8), row(128 * 8, 0.f), cache(128 * 8 * 4, 0.f);
  auto call = [&](int64_t keys, int64_t heads, int64_t kvHeads, int64_t dK, int64_t dV,
                  int64_t rope, double base) {
    return xfrt_decode_attention(q.data(), keys, row.data(), row.data(), cache.data(),
                                 cache.data(), 4 * dK, 4 * dV, 0, heads, kvHeads, dK, dV, 0.125f,
                                 rope, base, out.data(), 2);
  };
  EXPECT_EQ(call(2, 4, 2, 64, 64, 0, 0), 0);
  EXPECT_EQ(call(0, 4, 2, 64, 64, 0, 0), -1);   // no keys
  EXPECT_EQ(call(2, 3, 2, 64, 64, 0, 0), -1);   // H not a multiple of H_kv
  EXPECT_EQ(call(2, 4, 0, 64, 64, 0, 0), -1);   // no K/V heads
  EXPECT_EQ(call(2, 4, 2, 32, 32, 0, 0), -1);   // head width without a vector path
  EXPECT_EQ(call(2, 4, 2, 64, 64, 3, 1e4), -1); // unknown rotary pairing
  EXPECT_EQ(call(2, 4, 2, 64, 64, 1, 1.0), -1); // rotary base <= 1
  const int64_t slot = 0, badStart = -1;
  EXPECT_EQ(xfrt_decode_attention_batched(q.data(), 64, 1, &slot, &badStart, cache.data(),
                                          cache.data(), 0, 256, 256, 0, 4, 2, 64, 64, 0.125f, 0, 0,
                                          out.data(), 64, 2),
            -1); // a negative position
}

} // namespace
