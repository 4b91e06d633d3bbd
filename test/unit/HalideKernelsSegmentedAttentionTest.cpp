//===- HalideKernelsSegmentedAttentionTest.cpp - Packed-batch attention ---===//
//
// The segmented kernel (one call per packed batch) against a float64 loop
// over each sequence alone, with the block table the host lowering builds:
// mixed lengths incl. 1, sequences longer than a query block (several blocks,
// the last partial), many 1-row sequences, empty sequences, causal masking
// per sequence, cross attention with other key lengths (incl. fewer keys than
// queries, causal: some rows see nothing and get zeros), grouped K/V heads,
// the default segmented schedule and others with tails. Tolerance as in
// HalideKernelsAttentionTest.cpp: 1e-5, while attending across a sequence
// boundary changes outputs by ~1e-1.
//
//===----------------------------------------------------------------------===//

#include "HalideKernelsTestUtil.h"

#include <array>
#include <cmath>
#include <numeric>

using namespace mlir::xf;

namespace {

AttentionKernelSpec segmented(int64_t heads, int64_t dK, int64_t dV, bool causal,
                              AttentionSchedule schedule = defaultSegmentedAttentionSchedule({})) {
  AttentionKernelSpec spec;
  spec.name = "segmented_attention_test";
  spec.heads = heads, spec.dK = dK, spec.dV = dV, spec.causal = causal;
  spec.scale = 1.0 / std::sqrt(double(dK));
  spec.segmented = true;
  spec.schedule = schedule;
  return spec;
}

/// One packed batch: query lengths and key lengths (empty: the same).
void checkBatch(Halide::Callable &kernel, const AttentionKernelSpec &spec,
                std::vector<int64_t> lengths, std::vector<int64_t> keyLengths = {}) {
  if (keyLengths.empty())
    keyLengths = lengths;
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv;
  const int n = int(lengths.size());
  const int M = int(std::accumulate(lengths.begin(), lengths.end(), int64_t(0)));
  const int Mz = int(std::accumulate(keyLengths.begin(), keyLengths.end(), int64_t(0)));
  std::mt19937 rng(M * 131 + Mz);
  auto q = xftest::randomMatrix(M, H * dK, rng);
  auto k = xftest::randomMatrix(Mz, Hkv * dK, rng);
  auto v = xftest::randomMatrix(Mz, Hkv * dV, rng);
  q.for_each_value([](float &x) { x *= 4.f; }); // far from a uniform softmax
  // The table the host lowering builds: each sequence cut into query blocks.
  std::vector<std::array<int32_t, 5>> table;
  for (int i = 0, row = 0, key = 0; i < n; row += int(lengths[i]), key += int(keyLengths[i]), ++i)
    for (int first = 0; first < lengths[i]; first += int(spec.schedule.queryBlock))
      table.push_back({row + first,
                       int(std::min<int64_t>(spec.schedule.queryBlock, lengths[i] - first)), key,
                       int(keyLengths[i]), first + int(keyLengths[i] - lengths[i])});
  Halide::Runtime::Buffer<int32_t> blocks(5, std::max<int>(table.size(), 1));
  for (size_t b = 0; b < table.size(); ++b)
    for (int f = 0; f < 5; ++f)
      blocks(f, int(b)) = table[b][f];
  blocks.crop(1, 0, int(table.size()));
  Halide::Runtime::Buffer<float> out(H * dV, M);
  out.fill(std::nanf(""));
  ASSERT_EQ(xftest::call(kernel, {q.raw_buffer(), k.raw_buffer(), v.raw_buffer(),
                                  blocks.raw_buffer(), out.raw_buffer()}),
            0);
  double maxError = 0;
  int first = 0, firstKey = 0;
  for (int i = 0; i < n; ++i) {
    const int l = int(lengths[i]), lk = int(keyLengths[i]);
    for (int h = 0; h < H; ++h)
      for (int r = 0; r < l; ++r) {
        std::vector<double> score(lk, -INFINITY);
        double maxScore = -INFINITY;
        for (int p = 0; p < lk; ++p) {
          if (spec.causal && p > r + (lk - l))
            continue;
          double dot = 0;
          for (int c = 0; c < dK; ++c)
            dot += double(q(h * dK + c, first + r)) * k((h / group) * dK + c, firstKey + p);
          score[p] = dot * spec.scale;
          maxScore = std::max(maxScore, score[p]);
        }
        double sum = 0;
        for (double s : score)
          sum += s == -INFINITY ? 0 : std::exp(s - maxScore);
        for (int d = 0; d < dV; ++d) {
          double ref = 0;
          for (int p = 0; p < lk && sum > 0; ++p)
            if (score[p] != -INFINITY)
              ref += std::exp(score[p] - maxScore) / sum * v((h / group) * dV + d, firstKey + p);
          double error = std::abs(out(h * dV + d, first + r) - ref);
          if (!(error <= 1e-5))
            FAIL() << "sequence " << i << " row " << r << " head " << h << " column " << d << ": "
                   << out(h * dV + d, first + r) << ", expected " << ref;
          maxError = std::max(maxError, error);
        }
      }
    first += l, firstKey += lk;
  }
  EXPECT_LE(maxError, 1e-5);
}

Halide::Callable jitted(const AttentionKernelSpec &spec) {
  return xftest::jit(buildAttentionPipeline(spec, hostHalideTarget()));
}

// Sentence-like batches: lengths around and below the 16-row query block, and
// 1-row sequences, so most query blocks span two to sixteen sequences.
const std::vector<std::vector<int64_t>> kMixed = {
    {1},
    {7},
    {1, 1, 1},
    {15, 1, 9, 17, 3, 16, 1, 40},
    {33, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 20},
    {130, 5, 64}};

TEST(HalideKernelsSegmentedAttention, Bidirectional) {
  AttentionKernelSpec spec = segmented(4, 32, 32, false);
  Halide::Callable kernel = jitted(spec);
  ASSERT_TRUE(kernel.defined());
  for (const auto &lengths : kMixed) {
    SCOPED_TRACE("lengths " + std::to_string(lengths.size()));
    checkBatch(kernel, spec, lengths);
  }
}

TEST(HalideKernelsSegmentedAttention, Causal) {
  AttentionKernelSpec spec = segmented(3, 16, 24, true);
  Halide::Callable kernel = jitted(spec);
  ASSERT_TRUE(kernel.defined());
  for (const auto &lengths : kMixed)
    checkBatch(kernel, spec, lengths);
}

TEST(HalideKernelsSegmentedAttention, EmptySequences) {
  AttentionKernelSpec spec = segmented(2, 16, 16, false);
  Halide::Callable kernel = jitted(spec);
  ASSERT_TRUE(kernel.defined());
  checkBatch(kernel, spec, {0, 5, 0, 0, 3, 0});
  checkBatch(kernel, spec, {4, 0});
}

TEST(HalideKernelsSegmentedAttention, CrossAttentionKeyLengths) {
  AttentionKernelSpec spec = segmented(4, 24, 40, false);
  Halide::Callable kernel = jitted(spec);
  ASSERT_TRUE(kernel.defined());
  checkBatch(kernel, spec, {7, 1, 19, 12, 64}, {5, 9, 1, 80, 14});
  checkBatch(kernel, spec, {1, 1, 1}, {30, 1, 2});
  // Causal with fewer keys than queries: rows before the keys see none (zeros).
  AttentionKernelSpec causal = segmented(2, 16, 16, true);
  Halide::Callable causalKernel = jitted(causal);
  ASSERT_TRUE(causalKernel.defined());
  checkBatch(causalKernel, causal, {5, 3, 20}, {2, 3, 40});
}

TEST(HalideKernelsSegmentedAttention, GroupedKeyValueHeads) {
  for (int64_t kvHeads : {1, 2, 3}) {
    SCOPED_TRACE("kv_heads=" + std::to_string(kvHeads));
    AttentionKernelSpec spec = segmented(6, 16, 8, true);
    spec.kvHeads = kvHeads;
    Halide::Callable kernel = jitted(spec);
    ASSERT_TRUE(kernel.defined());
    checkBatch(kernel, spec, {1, 9, 37, 2});
  }
}

TEST(HalideKernelsSegmentedAttention, OtherSchedulesWithTails) {
  // Blocks that are not multiples of each other or of the vector; the per-sequence
  // default (64-row blocks, so one block spans many sequences); wide key blocks.
  for (AttentionSchedule s : {AttentionSchedule{7, 20, 3, 4}, AttentionSchedule{64, 64, 4, 4},
                              AttentionSchedule{16, 512, 6, 4}}) {
    SCOPED_TRACE("queryBlock " + std::to_string(s.queryBlock) + " keyBlock " +
                 std::to_string(s.keyBlock));
    AttentionKernelSpec spec = segmented(2, 16, 16, true, s);
    Halide::Callable kernel = jitted(spec);
    ASSERT_TRUE(kernel.defined());
    checkBatch(kernel, spec, {15, 1, 9, 17, 3, 16, 1, 40});
    checkBatch(kernel, spec, {100, 1, 70});
  }
}

TEST(HalideKernelsSegmentedAttention, RejectsRotaryPositions) {
  AttentionKernelSpec spec = segmented(2, 16, 16, true);
  spec.rope = AttentionKernelSpec::Rope::Halves;
  llvm::Expected<KernelPipeline> built = buildAttentionPipeline(spec, hostHalideTarget());
  ASSERT_FALSE(bool(built));
  EXPECT_NE(llvm::toString(built.takeError()).find("rotary"), std::string::npos);
}

} // namespace
