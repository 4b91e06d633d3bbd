//===- TuningGpuSpaceTest.cpp - a CUDA GEMM's candidate schedules ---------===//
//
// In: GEMM specs of GPT-2 small's shapes ([K, N] with the register path, the [N, K] tied
// unembedding, N off the register tile: the staged path) and the lengths tuned. Out: checks
// that gpuGemmCandidates gives the default first, at most the limit, distinct points, each one
// the #xf.gpu_gemm_schedule verifier takes, varying only knobs of paths the lengths reach, the
// same list for the same seed; and that the one-knob moves come first, knob by knob.
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

GemmKernelSpec gemm(int64_t K, int64_t N, bool transposed) {
  GemmKernelSpec s;
  s.name = "g", s.K = K, s.N = N, s.transposeWeight = transposed, s.hasBias = true;
  return s;
}

int differences(const Point &a, const Point &b) {
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    n += a[i] != b[i];
  return n;
}

struct GpuSpace : ::testing::Test {
  mlir::MLIRContext ctx;
  void SetUp() override { ctx.loadDialect<XfDialect>(); }
};

TEST_F(GpuSpace, CandidatesAreBoundedLegalDistinctDefaultFirst) {
  for (const GemmKernelSpec &spec : {gemm(768, 2304, false), gemm(768, 50257, true),
                                     gemm(16, 48, false), gemm(3072, 768, false)}) {
    const std::vector<int64_t> lengths{1, 128, 1024};
    std::vector<GpuGemmSchedule> c = gpuGemmCandidates(ctx, spec, lengths, 16, 1);
    ASSERT_FALSE(c.empty());
    EXPECT_LE(c.size(), 16u);
    EXPECT_GE(c.size(), 8u) << "too few candidates for K=" << spec.K << " N=" << spec.N;
    EXPECT_EQ(gpuGemmPoint(c[0]), gpuGemmPoint(GpuGemmSchedule()));
    std::set<Point> seen;
    SearchSpace space = gpuGemmSpace(ctx, spec, lengths);
    for (const GpuGemmSchedule &s : c) {
      EXPECT_TRUE(seen.insert(gpuGemmPoint(s)).second) << "a candidate twice";
      EXPECT_TRUE(space.legal(gpuGemmPoint(s)));
      EXPECT_EQ(gpuGemmPoint(gpuGemmScheduleAt(gpuGemmPoint(s))), gpuGemmPoint(s));
    }
    // The one-knob moves come first.
    for (size_t i = 1; i < std::min<size_t>(c.size(), 6); ++i)
      EXPECT_EQ(differences(gpuGemmPoint(c[i]), gpuGemmPoint(c[0])), 1);
    std::vector<GpuGemmSchedule> again = gpuGemmCandidates(ctx, spec, lengths, 16, 1);
    ASSERT_EQ(again.size(), c.size());
    for (size_t i = 0; i < c.size(); ++i)
      EXPECT_EQ(gpuGemmPoint(again[i]), gpuGemmPoint(c[i]));
  }
}

TEST_F(GpuSpace, OnlyTheKnobsOfReachedPathsVary) {
  const GemmKernelSpec spec = gemm(768, 2304, false);
  const Point dflt = gpuGemmPoint(GpuGemmSchedule());
  // Decode only: the [K, N] GEMV's two knobs.
  std::set<size_t> varied;
  for (const GpuGemmSchedule &s : gpuGemmCandidates(ctx, spec, {1}, 64, 3))
    for (size_t k = 0; k < dflt.size(); ++k)
      if (gpuGemmPoint(s)[k] != dflt[k])
        varied.insert(k);
  std::vector<SchedulePath> paths = gpuGemmPaths(spec, {1});
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].name, "gemv");
  EXPECT_EQ(varied, std::set<size_t>(paths[0].knobs.begin(), paths[0].knobs.end()));
  // Prefill only: the register path's knobs, split K among them ([K, N]), never the GEMV's.
  paths = gpuGemmPaths(spec, {128});
  ASSERT_EQ(paths.size(), 1u);
  std::set<size_t> tiled(paths[0].knobs.begin(), paths[0].knobs.end());
  for (const GpuGemmSchedule &s : gpuGemmCandidates(ctx, spec, {128}, 64, 3))
    for (size_t k = 0; k < dflt.size(); ++k)
      if (gpuGemmPoint(s)[k] != dflt[k])
        EXPECT_TRUE(tiled.count(k)) << "knob " << k << " varied outside the tiled path";
  EXPECT_EQ(gpuGemmScheduleAt(dflt).regSplitK, 4);
  bool splitVaried = false;
  for (const GpuGemmSchedule &s : gpuGemmCandidates(ctx, spec, {128}, 64, 3))
    splitVaried |= s.regSplitK != 4;
  EXPECT_TRUE(splitVaried);
}

// A decode step of several sequences (4 < M <= 16) takes the batch GEMV: its own path, whose
// candidates vary only batch_cols / batch_slices ([K, N]) or batch_lane_cols ([N, K]); with
// lengths 1, 8 and 128 the three paths, each with its length.
TEST_F(GpuSpace, BatchGemvPathOfItsOwn) {
  for (bool nk : {false, true}) {
    const GemmKernelSpec spec = gemm(768, nk ? 50257 : 2304, nk);
    const Point dflt = gpuGemmPoint(GpuGemmSchedule());
    std::vector<SchedulePath> paths = gpuGemmPaths(spec, {8, 16});
    ASSERT_EQ(paths.size(), 1u);
    EXPECT_EQ(paths[0].name, "batch_gemv");
    EXPECT_EQ(paths[0].cases, (std::vector<size_t>{0, 1}));
    std::set<size_t> varied;
    for (const GpuGemmSchedule &s : gpuGemmCandidates(ctx, spec, {8}, 64, 3))
      for (size_t k = 0; k < dflt.size(); ++k)
        if (gpuGemmPoint(s)[k] != dflt[k])
          varied.insert(k);
    EXPECT_EQ(varied, std::set<size_t>(paths[0].knobs.begin(), paths[0].knobs.end()));
    EXPECT_EQ(varied.size(), nk ? 1u : 2u);
    paths = gpuGemmPaths(spec, {1, 8, 128});
    ASSERT_EQ(paths.size(), 3u);
    EXPECT_EQ(paths[0].name, "gemv");
    EXPECT_EQ(paths[1].name, "batch_gemv");
    EXPECT_EQ(paths[1].cases, (std::vector<size_t>{1}));
    EXPECT_EQ(paths[2].name, "gemm");
  }
}

TEST_F(GpuSpace, AFirstCandidateOnlyWithALimitOfOne) {
  std::vector<GpuGemmSchedule> c = gpuGemmCandidates(ctx, gemm(768, 768, false), {1, 128}, 1, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(gpuGemmPoint(c[0]), gpuGemmPoint(GpuGemmSchedule()));
}

// xf-assign-schedules' default (defaultGpuGemmSchedule): a [K, N] GEMV's blocks halved in
// columns, doubled in K slices (threads kept), down to 8 columns, while N / columns is under
// regFillBlocks; [N, K] weights and GEMMs that may merge key ranges keep GpuGemmSchedule's.
TEST(GpuDefaultSchedule, GemvBlocksNarrowUntilTheGridFillsTheGpu) {
  const GpuGemmSchedule fixed;
  struct Case {
    int64_t n;
    bool nk, merge;
    int64_t cols, slices;
  } cases[] = {{768, false, false, 8, 64},   // 24 blocks → 96 (the floor: 8 columns)
               {2304, false, false, 8, 64},  // 72 → 288
               {3072, false, false, 8, 64},  // 96 → 384
               {8448, false, false, 32, 16}, // 264 blocks already
               {4224, false, false, 16, 32}, // 132 → 264
               {768, false, true, 32, 16},   // may merge key ranges: few blocks
               {50257, true, false, 32, 16}};
  for (const Case &c : cases) {
    GpuGemmSchedule s = defaultGpuGemmSchedule(c.n, c.nk, c.merge);
    EXPECT_EQ(s.gemvCols, c.cols) << "N = " << c.n;
    EXPECT_EQ(s.gemvSlices, c.slices) << "N = " << c.n;
    EXPECT_EQ(s.gemvCols * s.gemvSlices, fixed.gemvCols * fixed.gemvSlices);
    EXPECT_EQ(s.gemvLaneCols, fixed.gemvLaneCols);
    EXPECT_EQ(s.regTileCols, fixed.regTileCols);
  }
}

} // namespace
