//===- TuningGpuTimingArgumentsTest.cpp - what the timing program passes a kernel ===//
//
// In: GEMM and attention specs as `xfc tune --target cuda --export` compiles them, attention
// schedules that change the partials' key ranges, lengths of both paths. Out: checks that a
// GEMM's measurement passes its buffers as the timing table always had them (one memory a
// buffer, x / residual / out of M rows); that an attention's decode lengths call the range
// pass (the appending form where K and V heads have one width: start = the keys, 11
// arguments) then `<name>`, its prefill lengths `<name>` alone; that the partials and the
// range pass's views hold the schedule's ranges; and that every view a call passes lies in
// its memory at every length (the views of 4 rows end at the partials' last float).
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/GpuScheduleSpace.h"
#include "xf/Tuning/GpuTimingArguments.h"

#include <gtest/gtest.h>

using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

AttentionKernelSpec attention(int64_t heads, int64_t kvHeads, int64_t dK, int64_t dV) {
  AttentionKernelSpec s;
  s.name = "a", s.heads = heads, s.kvHeads = kvHeads, s.dK = dK, s.dV = dV, s.causal = true;
  s.scale = 0.125;
  return s;
}

TEST(GpuTimingArguments, GemmBuffersOneMemoryEach) {
  GemmKernelSpec g;
  g.K = 768, g.N = 3072, g.hasBias = true, g.hasResidual = true, g.bf16Weights = true;
  g.prologue = GemmPrologue::LayerNorm, g.normGamma = g.normBeta = true;
  const TimingCalls t = gemmTimingCalls(g, 128);
  // x, W [K, N], bias, residual, γ, β, out.
  ASSERT_EQ(t.arguments.size(), 7u);
  ASSERT_EQ(t.memories.size(), 7u);
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].mostRows, 0);
  EXPECT_EQ(t.calls[0].arguments, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.output, 6);
  using Dims = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(t.arguments[0].dims, (Dims{{768, 1}, {kTimingRows, 768}}));
  EXPECT_EQ(t.arguments[1].dims, (Dims{{3072, 1}, {768, 3072}}));
  EXPECT_EQ(t.arguments[2].dims, (Dims{{3072, 1}}));
  EXPECT_EQ(t.arguments[6].dims, (Dims{{3072, 1}, {kTimingRows, 3072}}));
  EXPECT_TRUE(t.memories[1].bf16);
  EXPECT_FALSE(t.memories[0].bf16);
  EXPECT_EQ(t.memories[0].elements, 768 * 128);
  EXPECT_EQ(t.memories[1].elements, 768 * 3072);
  EXPECT_EQ(t.memories[2].elements, 3072);
  for (int64_t rows : {1, 17, 128})
    EXPECT_TRUE(timingViewsFit(t, rows, 0));
  EXPECT_FALSE(timingViewsFit(t, 129, 0));
  // [N, K] SwiGLU: W holds 2·N rows of K.
  g.transposeWeight = true, g.epilogue = GemmEpilogue::SwiGlu, g.hasBias = false;
  EXPECT_EQ(gemmTimingCalls(g, 128).arguments[1].dims, (Dims{{768, 1}, {6144, 768}}));
}

TEST(GpuTimingArguments, AttentionDecodeThenMergePrefillAlone) {
  const std::vector<int64_t> lengths{1, 4, 5, 17, 1024};
  const int64_t longest = 1024;
  GpuAttentionSchedule wide, narrow;
  wide.decodeBlocks = 1056, wide.decodeBlockHeads = 8;
  narrow.decodeBlocks = 132, narrow.decodeBlockHeads = 1;
  for (AttentionKernelSpec spec : {attention(12, 0, 64, 64), attention(9, 3, 64, 64),
                                   attention(8, 2, 32, 48), attention(2, 0, 8, 8)})
    for (const GpuAttentionSchedule &schedule : {GpuAttentionSchedule(), wide, narrow}) {
      spec.gpuSchedule = schedule;
      const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
      const bool append = spec.dK == spec.dV;
      const TimingCalls t = attentionTimingCalls(spec, longest, /*decode=*/true);
      ASSERT_EQ(t.calls.size(), 2u);
      EXPECT_EQ(t.calls[0].suffix, "_decode_ranges");
      EXPECT_EQ(t.calls[0].mostRows, kCudaDecodeRows);
      EXPECT_EQ(t.calls[0].arguments.size(), append ? 11u : 4u);
      EXPECT_EQ(t.calls[1].suffix, "");
      EXPECT_EQ(t.calls[1].mostRows, 0);
      EXPECT_EQ(t.calls[1].arguments, (std::vector<int>{0, 1, 2, 3, 4}));
      EXPECT_EQ(t.output, 4);
      // The partials: the schedule's ranges, dense.
      EXPECT_EQ(t.arguments[3].dims.back().first, shape.ranges);
      EXPECT_EQ(t.memories[3].elements, shape.floats());
      if (append) {
        // start = the keys; the views of the output, max and sum span the ranges.
        EXPECT_EQ(t.arguments[5].memory, -1);
        EXPECT_EQ(t.arguments[5].value, kTimingKeys);
        for (int view = 6; view < 9; ++view)
          EXPECT_EQ(t.arguments[size_t(view)].dims[4].first, shape.ranges);
      }
      for (int64_t rows : lengths)
        EXPECT_TRUE(timingViewsFit(t, rows, timingKeys(rows, longest)))
            << spec.heads << " heads, " << shape.ranges << " ranges, " << rows << " rows";
      // The range pass's views reach the partials' last float at 4 rows, not at 3: one
      // float short, 4 rows fail.
      TimingCalls ranges = t;
      ranges.calls.pop_back();
      ranges.memories[3].elements -= 1;
      EXPECT_FALSE(timingViewsFit(ranges, 4, longest));
      EXPECT_EQ(timingViewsFit(ranges, 3, longest), append);
      // No decode length: `<name>` alone.
      const TimingCalls prefill = attentionTimingCalls(spec, longest, /*decode=*/false);
      ASSERT_EQ(prefill.calls.size(), 1u);
      EXPECT_EQ(prefill.calls[0].suffix, "");
    }
}

TEST(GpuTimingArguments, KeysOfALength) {
  EXPECT_EQ(timingKeys(1, 1024), 1024);
  EXPECT_EQ(timingKeys(4, 1024), 1024);
  EXPECT_EQ(timingKeys(5, 1024), 5);
  EXPECT_EQ(timingKeys(128, 1024), 128);
}

} // namespace
