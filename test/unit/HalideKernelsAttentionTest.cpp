//===- HalideKernelsAttentionTest.cpp - Attention against a float64 loop --===//
//
// Each case builds one attention pipeline exactly as compileAttentionKernel
// does, JITs it once and runs it for several (M, Mz): self-attention, cross
// attention with M != Mz, causal masking with the offset rule (query t sees
// keys t' <= t + Mz - M, as in KV-cache decoding), heads 1 and 4, block
// sizes that leave query- and key-block tails, and the decode path (M <= 4);
// rotary positions fused into the loads (spec.rope). K and V go in both
// layouts the kernel meets: heads side by side in a row (a column slice of
// the fused QKV activation) and each head's rows contiguous (a KV cache
// slot, [H_kv][positions][d]), the latter with a head stride larger than
// the rows (a cache's capacity exceeds its context). The batched decode step
// (`<name>_batched`: one query row per sequence, each on its own cache slot).
// A half KV cache (spec.halfKeyValues): K and V handed over as float16, the
// reference on the same float16 values (the kernel's arithmetic is float32),
// with and without F16C.
//
// Tolerance: each output is a convex combination of values in [-1, 1]; the
// float32 error comes from the dK-long score dot products (relative error
// ~sqrt(dK)·eps, amplified by at most |score| in the exponent) and from the
// blockwise rescaling, so 1e-5 absolute (about 100 eps) is ample, while a
// wrong mask, a missing block or a lost rescale changes outputs by ~1e-2.
//
//===----------------------------------------------------------------------===//

#include "AttentionAlgorithm.h"
#include "HalideKernelsTestUtil.h"

#include <cmath>

using namespace mlir::xf;

namespace {

struct Lengths {
  int queries, keys;
};

/// `m` (a byHead buffer) as float16, in the same shape and strides (NaN elsewhere).
Halide::Runtime::Buffer<Halide::float16_t> toHalf(const Halide::Runtime::Buffer<float> &m,
                                                  int capacity) {
  Halide::Runtime::Buffer<Halide::float16_t> half(m.dim(0).extent(), capacity, m.dim(2).extent());
  half.fill(Halide::float16_t(std::nanf("")));
  half.crop(1, 0, m.dim(1).extent());
  half.for_each_element(
      [&](int c, int r, int g) { half(c, r, g) = Halide::float16_t(m(c, r, g)); });
  return half;
}

/// x rounded to float16 (to nearest even), as a half KV cache stores it.
float roundToHalf(float x) { return float(Halide::float16_t(x)); }

void checkAttention(const AttentionKernelSpec &spec, std::vector<Lengths> lengths,
                    Halide::Target target = hostHalideTarget()) {
  Halide::Callable kernel = xftest::jit(buildAttentionPipeline(spec, target));
  ASSERT_TRUE(kernel.defined());
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv; // grouped-query attention
  std::mt19937 rng(7);
  for (Lengths len : lengths) {
    const int M = len.queries, Mz = len.keys;
    SCOPED_TRACE("M=" + std::to_string(M) + " Mz=" + std::to_string(Mz));
    auto q = xftest::randomMatrix(M, H * dK, rng);
    auto k = xftest::randomMatrix(Mz, Hkv * dK, rng);
    auto v = xftest::randomMatrix(Mz, Hkv * dV, rng);
    // Scale the queries up so the softmax is far from uniform.
    q.for_each_value([](float &x) { x *= 4.f; });
    // Rotary positions, in float64 from the definition (xf.rope): the kernel
    // rotates q (row t at t + Mz − M) and, with ropeKeys, k (row s at s).
    auto reference = [&](Halide::Runtime::Buffer<float> &x, int heads, int rows, int first) {
      std::vector<double> r(size_t(rows) * heads * dK);
      for (int t = 0; t < rows; ++t)
        for (int c = 0; c < heads * dK; ++c)
          r[size_t(t) * heads * dK + c] = x(c, t);
      if (spec.rope == AttentionKernelSpec::Rope::None)
        return r;
      bool adjacent = spec.rope == AttentionKernelSpec::Rope::Adjacent;
      for (int t = 0; t < rows; ++t)
        for (int h = 0; h < heads; ++h)
          for (int i = 0; i < dK / 2; ++i) {
            double angle = double(first + t) * std::pow(spec.ropeBase, -2.0 * i / dK);
            int ia = h * dK + (adjacent ? 2 * i : i), ib = ia + (adjacent ? 1 : dK / 2);
            double a = x(ia, t), b = x(ib, t);
            r[size_t(t) * heads * dK + ia] = a * std::cos(angle) - b * std::sin(angle);
            r[size_t(t) * heads * dK + ib] = a * std::sin(angle) + b * std::cos(angle);
          }
      return r;
    };
    std::vector<double> qr = reference(q, H, M, Mz - M);
    std::vector<double> kr = reference(k, Hkv, Mz, 0);
    if (!spec.ropeKeys) // keys come rotated (a KV cache): hand the kernel the rotated ones
      for (int s = 0; s < Mz; ++s)
        for (int c = 0; c < Hkv * dK; ++c)
          k(c, s) = float(kr[size_t(s) * Hkv * dK + c]);
    if (spec.halfKeyValues) { // the cache's float16 values are the reference's K and V
      ASSERT_FALSE(spec.rope != AttentionKernelSpec::Rope::None && spec.ropeKeys);
      k.for_each_value([](float &x) { x = roundToHalf(x); });
      v.for_each_value([](float &x) { x = roundToHalf(x); });
      for (int s = 0; s < Mz; ++s)
        for (int c = 0; c < Hkv * dK; ++c)
          kr[size_t(s) * Hkv * dK + c] = k(c, s);
    }
    for (bool cacheSlot : {false, true}) {
      if (spec.halfKeyValues && !cacheSlot)
        continue; // only a cache holds float16
      SCOPED_TRACE(cacheSlot ? "K/V in a cache slot" : "K/V heads side by side");
      Halide::Runtime::Buffer<float> kHeads = xftest::byHead(k, Hkv, cacheSlot, Mz + 19);
      Halide::Runtime::Buffer<float> vHeads = xftest::byHead(v, Hkv, cacheSlot, Mz + 19);
      Halide::Runtime::Buffer<Halide::float16_t> kHalf, vHalf;
      if (spec.halfKeyValues)
        kHalf = toHalf(kHeads, Mz + 19), vHalf = toHalf(vHeads, Mz + 19);
      Halide::Runtime::Buffer<float> out(H * dV, M);
      out.fill(std::nanf(""));
      ASSERT_EQ(xftest::call(kernel, {q.raw_buffer(),
                                      spec.halfKeyValues ? kHalf.raw_buffer() : kHeads.raw_buffer(),
                                      spec.halfKeyValues ? vHalf.raw_buffer() : vHeads.raw_buffer(),
                                      out.raw_buffer()}),
                0);

      double maxError = 0;
      std::vector<double> score(Mz);
      for (int h = 0; h < H; ++h)
        for (int t = 0; t < M; ++t) {
          double maxScore = -INFINITY;
          for (int s = 0; s < Mz; ++s) {
            bool visible = !spec.causal || s <= t + (Mz - M);
            double dot = 0;
            for (int c = 0; c < dK; ++c)
              dot += qr[size_t(t) * H * dK + h * dK + c] *
                     kr[size_t(s) * Hkv * dK + (h / group) * dK + c];
            score[s] = visible ? dot * spec.scale : -INFINITY;
            maxScore = std::max(maxScore, score[s]);
          }
          double sum = 0;
          for (int s = 0; s < Mz; ++s)
            sum += score[s] == -INFINITY ? 0 : std::exp(score[s] - maxScore);
          for (int d = 0; d < dV; ++d) {
            double ref = 0;
            for (int s = 0; s < Mz && sum > 0; ++s)
              if (score[s] != -INFINITY)
                ref += std::exp(score[s] - maxScore) / sum * v((h / group) * dV + d, s);
            double error = std::abs(out(h * dV + d, t) - ref);
            if (!(error <= 1e-5))
              FAIL() << "out[" << t << ", " << h * dV + d << "] = " << out(h * dV + d, t)
                     << ", expected " << ref;
            maxError = std::max(maxError, error);
          }
        }
      EXPECT_LE(maxError, 1e-5);
    }
  }
}

AttentionKernelSpec attention(int64_t heads, int64_t dK, int64_t dV, bool causal) {
  AttentionKernelSpec spec;
  spec.name = "attention_test";
  spec.heads = heads;
  spec.dK = dK;
  spec.dV = dV;
  spec.causal = causal;
  spec.scale = 1.0 / std::sqrt(double(dK));
  return spec;
}

TEST(HalideKernelsAttention, BidirectionalOneHead) {
  checkAttention(attention(1, 16, 16, false), {{1, 1}, {7, 7}, {65, 65}, {130, 130}});
}

TEST(HalideKernelsAttention, CausalFourHeads) {
  checkAttention(attention(4, 32, 32, true), {{1, 1}, {7, 7}, {65, 65}, {128, 128}, {130, 130}});
}

TEST(HalideKernelsAttention, CausalWithCacheOffset) {
  // Decoding with a KV cache: the M new queries are the last M positions.
  checkAttention(attention(4, 16, 16, true), {{1, 65}, {7, 130}, {65, 130}});
}

TEST(HalideKernelsAttention, CrossAttentionDifferentDims) {
  checkAttention(attention(4, 24, 40, false), {{7, 130}, {130, 7}, {1, 65}, {65, 1}});
}

TEST(HalideKernelsAttention, SmallBlocksLeaveTails) {
  AttentionKernelSpec spec = attention(2, 16, 16, true);
  spec.schedule.queryBlock = 16;
  spec.schedule.keyBlock = 32;
  checkAttention(spec, {{1, 1}, {7, 7}, {65, 65}, {130, 130}, {7, 100}});
}

TEST(HalideKernelsAttention, ValueTileRowsFitHalfTheRegisters) {
  EXPECT_EQ(valueRowTile(3, 64, 8, 16), 1);   // AVX2, dV = 64: 8 accumulators a row
  EXPECT_EQ(valueRowTile(4, 64, 16, 32), 4);  // AVX-512: 4 a row, 4 rows are half of 32
  EXPECT_EQ(valueRowTile(3, 16, 8, 16), 3);   // narrow heads keep the score tile's rows
  EXPECT_EQ(valueRowTile(4, 256, 16, 32), 1); // never fewer than one row
}

TEST(HalideKernelsAttention, ValueTileOfFewerRowsThanScoreTile) {
  // dV = 256: P·V's tile is one row on every x86 target while Q·Kᵀ's is 3, neither dividing
  // the query block of 16.
  AttentionKernelSpec spec = attention(2, 16, 256, true);
  spec.schedule.queryBlock = 16;
  spec.schedule.rowTile = 3;
  checkAttention(spec, {{1, 1}, {7, 7}, {65, 65}, {130, 130}, {5, 131}});
}

TEST(HalideKernelsAttention, WideKeyBlocks) {
  // The block's row max and sum: one vector reduction up to 16 vectors of keys (the
  // default 64), one vector at a time beyond (512), scalar where the block is not whole
  // vectors (300).
  for (int64_t keyBlock : {512, 300}) {
    AttentionKernelSpec spec = attention(2, 16, 16, true);
    spec.schedule.keyBlock = keyBlock;
    checkAttention(spec, {{7, 7}, {65, 65}, {130, 700}});
  }
}

TEST(HalideKernelsAttention, CausalQueriesWithoutKeysGetZeros) {
  // Mz < M: query 0 sees keys t' <= 0 + (2 - 5) < 0, i.e. none.
  checkAttention(attention(1, 16, 16, true), {{5, 2}});
}

TEST(HalideKernelsAttention, DecodePathFewQueries) {
  // M <= 4 takes the per-head two-pass path (KV-cache decoding); M = 5 the
  // flash-style one. Key counts that are not multiples of the key tile.
  checkAttention(attention(3, 64, 64, true),
                 {{1, 1}, {1, 130}, {2, 2}, {3, 70}, {4, 4}, {4, 131}, {5, 131}});
  checkAttention(attention(2, 24, 40, false), {{1, 3}, {2, 67}, {4, 1}});
  // Mz < M: query 0 sees no key, query 1 sees key 0.
  checkAttention(attention(1, 16, 16, true), {{3, 2}});
}

// Grouped-query attention: 6 query heads on 2 or 3 K/V heads, and multi-query
// (1 K/V head); flash path (prefill, with a cache offset) and decode path.
TEST(HalideKernelsAttention, GroupedKeyValueHeads) {
  for (int64_t kvHeads : {1, 2, 3}) {
    SCOPED_TRACE("kv_heads=" + std::to_string(kvHeads));
    AttentionKernelSpec spec = attention(6, 16, 8, true);
    spec.kvHeads = kvHeads;
    checkAttention(spec, {{1, 1}, {1, 37}, {3, 70}, {9, 9}, {65, 130}});
  }
}

// The decode path runs groups of heads per task (3 of 12 heads, 2 of 8, 4 of
// 16): every head of a group, incl. grouped K/V heads shared inside a group
// (8 query heads on 2 K/V heads: one group reads both) or across groups.
TEST(HalideKernelsAttention, DecodePathHeadGroups) {
  checkAttention(attention(12, 64, 64, true), {{1, 1}, {1, 150}, {2, 37}, {4, 131}});
  checkAttention(attention(16, 16, 24, false), {{1, 5}, {3, 70}});
  for (int64_t kvHeads : {1, 2, 4}) {
    SCOPED_TRACE("kv_heads=" + std::to_string(kvHeads));
    AttentionKernelSpec spec = attention(8, 32, 32, true);
    spec.kvHeads = kvHeads;
    checkAttention(spec, {{1, 1}, {1, 67}, {4, 33}});
  }
}

// The decode path cuts the keys into ranges of at least 32 (one range up to
// 32 keys), up to 4 per K/V head for 3 K/V heads and 8 for one, and merges
// the ranges' states: key counts at and around the range boundaries, ranges
// of unequal length (the last is shorter) and long contexts, causal with
// several query rows (the newest keys invisible to the first rows).
TEST(HalideKernelsAttention, DecodePathKeyRanges) {
  for (int64_t kvHeads : {3, 1}) {
    SCOPED_TRACE("kv_heads=" + std::to_string(kvHeads));
    AttentionKernelSpec spec = attention(9, 64, 64, true);
    spec.kvHeads = kvHeads;
    checkAttention(spec, {{1, 32}, {1, 33}, {1, 64}, {1, 65}, {4, 97}, {1, 129}, {3, 255},
                          {1, 256}, {2, 257}, {1, 1000}});
  }
}

TEST(HalideKernelsAttention, RejectsInvalidSpec) {
  AttentionKernelSpec spec = attention(0, 16, 16, false);
  llvm::Expected<KernelPipeline> built = buildAttentionPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("heads"), std::string::npos);
}

} // namespace

TEST(HalideKernelsAttention, WideHeadsKeepLoops) {
  // Heads wider than 16 vectors keep loops over their width instead of unrolling it (a
  // 13377-wide head overflowed the stack in Halide's simplifier). Both paths stay exact;
  // 300 and 301 are not multiples of the vector width (one-lane dot products on decode).
  checkAttention(attention(2, 300, 301, true), {{1, 40}, {3, 3}, {7, 7}, {70, 70}});
  checkAttention(attention(1, 1100, 1024, false), {{2, 5}, {9, 9}});
}

// Rotary positions fused into the attention (xf.attention `rope`): both
// pairings; flash path (prefill) and decode path (M <= 4); without a cache
// (K rotated by the kernel) and with one (K already rotated, queries at the
// last positions, far enough that f32 angles would be visibly off); grouped
// K/V heads.
TEST(HalideKernelsAttention, RotaryPositions) {
  for (auto pairing : {AttentionKernelSpec::Rope::Adjacent, AttentionKernelSpec::Rope::Halves}) {
    SCOPED_TRACE(pairing == AttentionKernelSpec::Rope::Adjacent ? "adjacent" : "halves");
    AttentionKernelSpec spec = attention(6, 16, 8, true);
    spec.kvHeads = 2, spec.rope = pairing, spec.ropeBase = 10000.0;
    checkAttention(spec, {{1, 1}, {3, 3}, {9, 9}, {65, 65}, {130, 130}});
    spec.ropeKeys = false;
    checkAttention(spec, {{1, 1}, {1, 3000}, {4, 70}, {65, 130}, {7, 2500}});
    AttentionKernelSpec wide = attention(2, 64, 64, false);
    wide.rope = pairing, wide.ropeBase = 1e5;
    checkAttention(wide, {{1, 1}, {2, 2}, {33, 33}});
  }
}

namespace {

/// `<name>_batched` against float64: sequences at positions `starts` (keys
/// 0..start each) on cache slots `slots` of one allocation, in the layout
/// [slot][K|V][position][kv head][d] (perHead false) or
/// [slot][K|V][kv head][position][d] (perHead true); the slots not named and
/// the positions past each start hold NaN, which must never be read.
void checkBatchedDecode(const AttentionKernelSpec &spec, std::vector<int64_t> starts,
                        std::vector<int64_t> slots, int positions, int slotCount, bool perHead,
                        Halide::Target target = hostHalideTarget()) {
  Halide::Callable kernel = xftest::jit(buildAttentionBatchedPipeline(spec, target));
  ASSERT_TRUE(kernel.defined());
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv;
  const int n = int(starts.size());
  const int64_t kFloats = int64_t(positions) * Hkv * dK, vFloats = int64_t(positions) * Hkv * dV;
  const int64_t slotFloats = kFloats + vFloats;
  std::vector<float> caches(size_t(slotFloats * slotCount), std::nanf(""));
  auto view = [&](int64_t offset, int d) {
    halide_dimension_t dims[4] = {{0, d, 1, 0},
                                  {0, positions, perHead ? d : Hkv * d, 0},
                                  {0, Hkv, perHead ? positions * d : d, 0},
                                  {0, slotCount, int32_t(slotFloats), 0}};
    return Halide::Runtime::Buffer<float>(caches.data() + offset, 4, dims);
  };
  Halide::Runtime::Buffer<float> kc = view(0, dK), vc = view(kFloats, dV);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int i = 0; i < n; ++i)
    for (int p = 0; p <= starts[size_t(i)]; ++p)
      for (int g = 0; g < Hkv; ++g) {
        for (int c = 0; c < dK; ++c)
          kc(c, p, g, int(slots[size_t(i)])) = dist(rng);
        for (int c = 0; c < dV; ++c)
          vc(c, p, g, int(slots[size_t(i)])) = dist(rng);
      }
  // A half cache: the same layout in float16, and the reference on its values.
  std::vector<Halide::float16_t> halves;
  Halide::Runtime::Buffer<Halide::float16_t> kh, vh;
  if (spec.halfKeyValues) {
    for (float &x : caches)
      x = roundToHalf(x);
    for (float x : caches)
      halves.push_back(Halide::float16_t(x));
    auto halfView = [&](const Halide::Runtime::Buffer<float> &b, int64_t offset) {
      std::vector<halide_dimension_t> dims(b.raw_buffer()->dim, b.raw_buffer()->dim + 4);
      return Halide::Runtime::Buffer<Halide::float16_t>(halves.data() + offset, 4, dims.data());
    };
    kh = halfView(kc, 0), vh = halfView(vc, kFloats);
  }
  auto q = xftest::randomMatrix(n, H * dK, rng);
  q.for_each_value([](float &x) { x *= 4.f; });
  Halide::Runtime::Buffer<int64_t> slotBuffer(slots.data(), n), startBuffer(starts.data(), n);
  Halide::Runtime::Buffer<float> out(H * dV, n);
  out.fill(std::nanf(""));
  ASSERT_EQ(
      xftest::call(kernel, {q.raw_buffer(), spec.halfKeyValues ? kh.raw_buffer() : kc.raw_buffer(),
                            spec.halfKeyValues ? vh.raw_buffer() : vc.raw_buffer(),
                            slotBuffer.raw_buffer(), startBuffer.raw_buffer(), out.raw_buffer()}),
      0);
  const bool adjacent = spec.rope == AttentionKernelSpec::Rope::Adjacent;
  double maxError = 0;
  for (int i = 0; i < n; ++i) {
    const int start = int(starts[size_t(i)]), slot = int(slots[size_t(i)]);
    SCOPED_TRACE("sequence " + std::to_string(i) + " at " + std::to_string(start));
    std::vector<double> qr(size_t(H) * dK);
    for (int c = 0; c < H * dK; ++c)
      qr[size_t(c)] = q(c, i);
    if (spec.rope != AttentionKernelSpec::Rope::None)
      for (int h = 0; h < H; ++h)
        for (int p = 0; p < dK / 2; ++p) {
          double angle = double(start) * std::pow(spec.ropeBase, -2.0 * p / dK);
          int ia = h * dK + (adjacent ? 2 * p : p), ib = ia + (adjacent ? 1 : dK / 2);
          double a = q(ia, i), b = q(ib, i);
          qr[size_t(ia)] = a * std::cos(angle) - b * std::sin(angle);
          qr[size_t(ib)] = a * std::sin(angle) + b * std::cos(angle);
        }
    for (int h = 0; h < H; ++h) {
      std::vector<double> score(size_t(start) + 1);
      double best = -INFINITY, sum = 0;
      for (int p = 0; p <= start; ++p) {
        double dot = 0;
        for (int c = 0; c < dK; ++c)
          dot += qr[size_t(h * dK + c)] * kc(c, p, h / group, slot);
        score[size_t(p)] = dot * spec.scale;
        best = std::max(best, score[size_t(p)]);
      }
      for (double x : score)
        sum += std::exp(x - best);
      for (int c = 0; c < dV; ++c) {
        double ref = 0;
        for (int p = 0; p <= start; ++p)
          ref += std::exp(score[size_t(p)] - best) / sum * vc(c, p, h / group, slot);
        double error = std::abs(out(h * dV + c, i) - ref);
        if (!(error <= 1e-5))
          FAIL() << "out[" << i << ", " << h * dV + c << "] = " << out(h * dV + c, i)
                 << ", expected " << ref;
        maxError = std::max(maxError, error);
      }
    }
  }
  EXPECT_LE(maxError, 1e-5);
}

} // namespace

TEST(HalideKernelsAttention, BatchedDecodeMixedLengths) {
  // GPT-2's heads (12 × 64, three heads per task); 1 key up to the whole cache.
  AttentionKernelSpec spec = attention(12, 64, 64, true);
  spec.batchedDecode = true;
  for (bool perHead : {false, true}) {
    SCOPED_TRACE(perHead ? "per-head layout" : "row layout");
    checkBatchedDecode(spec, {0, 129, 5, 1, 160, 37, 0, 64}, {3, 0, 7, 1, 5, 2, 8, 4}, 161, 9,
                       perHead);
    checkBatchedDecode(spec, {6}, {0}, 7, 1, perHead);
  }
}

TEST(HalideKernelsAttention, BatchedDecodeGroupedRotary) {
  // Grouped K/V heads with rotary queries; heads that are not whole vectors.
  for (auto pairing : {AttentionKernelSpec::Rope::Adjacent, AttentionKernelSpec::Rope::Halves}) {
    AttentionKernelSpec spec = attention(6, 16, 8, true);
    spec.kvHeads = 2, spec.rope = pairing, spec.ropeKeys = false, spec.batchedDecode = true;
    checkBatchedDecode(spec, {0, 300, 2, 3}, {2, 1, 0, 4}, 301, 5, true);
  }
  AttentionKernelSpec odd = attention(3, 6, 5, true);
  odd.batchedDecode = true;
  checkBatchedDecode(odd, {4, 0, 9}, {1, 2, 0}, 10, 3, false);
}

TEST(HalideKernelsAttention, HalfKeyValues) {
  // A float16 KV cache: the flash path (a prefill reads its keys back from the cache) and the
  // decode path, plain and grouped rotary heads (keys rotated before they were stored), with
  // F16C's conversion and without it (integer operations).
  AttentionKernelSpec plain = attention(4, 16, 16, true);
  AttentionKernelSpec grouped = attention(9, 64, 64, true);
  grouped.kvHeads = 3, grouped.rope = AttentionKernelSpec::Rope::Adjacent;
  grouped.ropeBase = 100000, grouped.ropeKeys = false;
  const Halide::Target host = hostHalideTarget();
  for (const Halide::Target &target : {host, host.without_feature(Halide::Target::F16C)}) {
    SCOPED_TRACE(target.to_string());
    for (AttentionKernelSpec spec : {plain, grouped}) {
      spec.halfKeyValues = true;
      checkAttention(spec, {{1, 1}, {1, 77}, {3, 40}, {17, 17}, {40, 300}}, target);
      spec.batchedDecode = true;
      checkBatchedDecode(spec, {0, 129, 5, 64}, {3, 0, 1, 2}, 130, 4, true, target);
    }
  }
}

TEST(HalideKernelsAttention, HalfKeyValuesOnlyFromACache) {
  // The packed batch's segmented kernel reads its own float32 rows, never a cache.
  AttentionKernelSpec spec = attention(2, 8, 8, true);
  spec.segmented = true, spec.halfKeyValues = true;
  llvm::Expected<KernelPipeline> built = buildSegmentedAttentionPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("reads float32 keys and values"),
            std::string::npos);
}

TEST(HalideKernelsAttention, BatchedDecodeNeedsCausalCachedKeys) {
  for (bool causal : {false, true}) {
    AttentionKernelSpec spec = attention(2, 8, 8, causal);
    spec.rope = AttentionKernelSpec::Rope::Halves; // rotating keys itself: no cache
    llvm::Expected<KernelPipeline> built = buildAttentionBatchedPipeline(spec, hostHalideTarget());
    ASSERT_FALSE(bool(built));
    EXPECT_NE(llvm::toString(built.takeError()).find("causal attention with keys in a cache"),
              std::string::npos);
  }
}
