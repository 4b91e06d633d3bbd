//===- TuningGpuAttentionSpaceTest.cpp - a CUDA attention's candidate schedules ===//
//
// In: attention specs of GPT-2 small (12 heads of their own) and SmolLM2 (9 query heads over
// 3 K/V heads) and the lengths tuned. Out: checks that gpuAttentionCandidates gives the
// default (#xf.gpu_attention_schedule's defaults, the sizes of the fixed schedule) first, at
// most the limit, distinct points the verifier takes, the same list for the same seed; that
// decode lengths vary only flash-decoding's knobs and prefill lengths only the query and key
// blocks; and that heads a block is searched only where a K/V head has several query heads.
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/KernelSchedules.h"
#include "xf/IR/XfDialect.h"
#include "xf/Tuning/GpuScheduleSpace.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <set>

using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

AttentionKernelSpec attention(int64_t heads, int64_t kvHeads) {
  AttentionKernelSpec s;
  s.name = "a", s.heads = heads, s.kvHeads = kvHeads, s.dK = 64, s.dV = 64, s.causal = true;
  s.scale = 0.125;
  return s;
}

struct GpuAttentionSpace : ::testing::Test {
  mlir::MLIRContext ctx;
  void SetUp() override { ctx.loadDialect<XfDialect>(); }
};

TEST_F(GpuAttentionSpace, CandidatesAreBoundedLegalDistinctDefaultFirst) {
  for (const AttentionKernelSpec &spec : {attention(12, 0), attention(9, 3)}) {
    const std::vector<int64_t> lengths{1, 128, 1024};
    std::vector<GpuAttentionSchedule> c = gpuAttentionCandidates(ctx, spec, lengths, 16, 1);
    ASSERT_EQ(c.size(), 16u);
    const Point dflt = gpuAttentionPoint(GpuAttentionSchedule());
    EXPECT_EQ(gpuAttentionPoint(c[0]), dflt);
    EXPECT_EQ(dflt, (Point{16, 32, 32, 264, 4})); // the fixed schedule's sizes
    std::set<Point> seen;
    SearchSpace space = gpuAttentionSpace(ctx, spec, lengths);
    for (const GpuAttentionSchedule &s : c) {
      const Point p = gpuAttentionPoint(s);
      EXPECT_TRUE(seen.insert(p).second) << "a candidate twice";
      EXPECT_TRUE(space.legal(p));
      EXPECT_EQ(gpuAttentionPoint(gpuAttentionScheduleAt(p)), p);
      EXPECT_LE(s.keyBlock * s.queryBlock, 1024);
    }
    std::vector<GpuAttentionSchedule> again = gpuAttentionCandidates(ctx, spec, lengths, 16, 1);
    ASSERT_EQ(again.size(), c.size());
    for (size_t i = 0; i < c.size(); ++i)
      EXPECT_EQ(gpuAttentionPoint(again[i]), gpuAttentionPoint(c[i]));
  }
}

TEST_F(GpuAttentionSpace, EachPathVariesItsOwnKnobs) {
  const Point dflt = gpuAttentionPoint(GpuAttentionSchedule());
  auto varied = [&](const AttentionKernelSpec &spec, const std::vector<int64_t> &lengths) {
    std::set<size_t> knobs;
    for (const GpuAttentionSchedule &s : gpuAttentionCandidates(ctx, spec, lengths, 64, 3))
      for (size_t k = 0; k < dflt.size(); ++k)
        if (gpuAttentionPoint(s)[k] != dflt[k])
          knobs.insert(k);
    return knobs;
  };
  // Knob order: query_block, key_block, decode_key_block, decode_blocks, decode_block_heads.
  EXPECT_EQ(varied(attention(12, 0), {1}), (std::set<size_t>{2, 3}));
  EXPECT_EQ(varied(attention(9, 3), {1}), (std::set<size_t>{2, 3, 4}));
  EXPECT_EQ(varied(attention(9, 3), {128, 1024}), (std::set<size_t>{0, 1}));
  std::vector<SchedulePath> paths = gpuAttentionPaths(attention(9, 3), {1, 128});
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0].name, "decode");
  EXPECT_EQ(paths[1].name, "prefill");
}

TEST_F(GpuAttentionSpace, AFirstCandidateOnlyWithALimitOfOne) {
  std::vector<GpuAttentionSchedule> c =
      gpuAttentionCandidates(ctx, attention(12, 0), {1, 128}, 1, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(gpuAttentionPoint(c[0]), gpuAttentionPoint(GpuAttentionSchedule()));
}

} // namespace
