//===- GpuScheduleSpace.cpp - a CUDA GEMM's schedule knobs ----------------===//

#include "xf/Tuning/GpuScheduleSpace.h"
#include "xf/Codegen/KernelSchedules.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {
// Knob order of a point: the fields of #xf.gpu_gemm_schedule.
enum GpuKnob {
  RegisterTiles,
  RegTileCols,
  RegTileRows,
  RegTallRows,
  RegTallTileRows,
  RegThreadRows,
  RegUnrollK,
  RegSplitK,
  RegFillBlocks,
  NkThreadRows,
  TileCols,
  TileRows,
  ThreadCols,
  ThreadRows,
  SliceK,
  GemvCols,
  GemvSlices,
  GemvLaneCols,
  BatchCols,
  BatchSlices,
  BatchLaneCols,
  NumGpuKnobs
};

std::vector<int64_t> withValue(std::vector<int64_t> values, int64_t keep) {
  values.push_back(keep);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

/// Whether the default schedule takes a register path for this weight (GemmAlgorithm.cpp's
/// usesCudaRegisterTiles / usesCudaNkRegisterTiles, from the spec alone).
bool registerPathTaken(const GemmKernelSpec &spec) {
  const GpuGemmSchedule &s = spec.gpuSchedule;
  if (!s.registerTiles)
    return false;
  return spec.transposeWeight ? spec.K % 4 == 0 && spec.prologue == GemmPrologue::None
                              : spec.N % s.regTileCols == 0;
}

/// The tiled path's knobs this weight reads: the register path's ([K, N] with split K,
/// [N, K] with its thread rows) where the default takes it, else the staged path's.
std::vector<size_t> tiledKnobs(const GemmKernelSpec &spec) {
  if (!registerPathTaken(spec))
    return {RegisterTiles, TileCols, TileRows, ThreadCols, ThreadRows, SliceK};
  std::vector<size_t> knobs{RegisterTiles, RegTileCols,     RegTileRows, RegTallRows,
                            RegTallTileRows, RegThreadRows, RegUnrollK};
  if (spec.transposeWeight)
    knobs.push_back(NkThreadRows);
  else
    knobs.insert(knobs.end(), {RegSplitK, RegFillBlocks});
  return knobs;
}

std::vector<size_t> gemvKnobs(const GemmKernelSpec &spec) {
  if (spec.transposeWeight)
    return {GemvLaneCols};
  return {GemvCols, GemvSlices};
}

std::vector<size_t> batchGemvKnobs(const GemmKernelSpec &spec) {
  if (spec.transposeWeight)
    return {BatchLaneCols};
  return {BatchCols, BatchSlices};
}

/// Whether the attribute's verifier takes point `p` (its message swallowed).
bool verifies(MLIRContext &ctx, llvm::ArrayRef<int64_t> p) {
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  auto emitError = [&] { return mlir::emitError(UnknownLoc::get(&ctx)); };
  return bool(GpuGemmScheduleAttr::getChecked(
      emitError, &ctx, p[RegisterTiles] != 0, p[RegTileCols], p[RegTileRows], p[RegTallRows],
      p[RegTallTileRows], p[RegThreadRows], p[RegUnrollK], p[TileCols], p[TileRows],
      p[ThreadCols], p[ThreadRows], p[SliceK], p[GemvCols], p[GemvSlices], p[GemvLaneCols],
      p[RegSplitK], p[RegFillBlocks], p[NkThreadRows], p[BatchCols], p[BatchSlices],
      p[BatchLaneCols]));
}
} // namespace

Point mlir::xf::tuning::gpuGemmPoint(const GpuGemmSchedule &s) {
  Point p(NumGpuKnobs);
  p[RegisterTiles] = s.registerTiles, p[RegTileCols] = s.regTileCols;
  p[RegTileRows] = s.regTileRows, p[RegTallRows] = s.regTallRows;
  p[RegTallTileRows] = s.regTallTileRows, p[RegThreadRows] = s.regThreadRows;
  p[RegUnrollK] = s.regUnrollK, p[RegSplitK] = s.regSplitK, p[RegFillBlocks] = s.regFillBlocks;
  p[NkThreadRows] = s.nkThreadRows, p[TileCols] = s.tileCols, p[TileRows] = s.tileRows;
  p[ThreadCols] = s.threadCols, p[ThreadRows] = s.threadRows, p[SliceK] = s.sliceK;
  p[GemvCols] = s.gemvCols, p[GemvSlices] = s.gemvSlices, p[GemvLaneCols] = s.gemvLaneCols;
  p[BatchCols] = s.batchCols, p[BatchSlices] = s.batchSlices;
  p[BatchLaneCols] = s.batchLaneCols;
  return p;
}

GpuGemmSchedule mlir::xf::tuning::gpuGemmScheduleAt(const Point &p) {
  GpuGemmSchedule s;
  s.registerTiles = p[RegisterTiles] != 0, s.regTileCols = p[RegTileCols];
  s.regTileRows = p[RegTileRows], s.regTallRows = p[RegTallRows];
  s.regTallTileRows = p[RegTallTileRows], s.regThreadRows = p[RegThreadRows];
  s.regUnrollK = p[RegUnrollK], s.regSplitK = p[RegSplitK], s.regFillBlocks = p[RegFillBlocks];
  s.nkThreadRows = p[NkThreadRows], s.tileCols = p[TileCols], s.tileRows = p[TileRows];
  s.threadCols = p[ThreadCols], s.threadRows = p[ThreadRows], s.sliceK = p[SliceK];
  s.gemvCols = p[GemvCols], s.gemvSlices = p[GemvSlices], s.gemvLaneCols = p[GemvLaneCols];
  s.batchCols = p[BatchCols], s.batchSlices = p[BatchSlices];
  s.batchLaneCols = p[BatchLaneCols];
  return s;
}

std::vector<SchedulePath> mlir::xf::tuning::gpuGemmPaths(const GemmKernelSpec &spec,
                                                         const std::vector<int64_t> &lengths) {
  SchedulePath gemv{"gemv", gemvKnobs(spec), {}};
  SchedulePath batch{"batch_gemv", batchGemvKnobs(spec), {}};
  SchedulePath tiled{"gemm", tiledKnobs(spec), {}};
  for (size_t i = 0; i < lengths.size(); ++i)
    (lengths[i] <= kCudaGemvRows          ? gemv
     : lengths[i] <= kCudaBatchGemvRows ? batch
                                          : tiled)
        .cases.push_back(i);
  std::vector<SchedulePath> paths;
  for (SchedulePath *p : {&gemv, &batch, &tiled})
    if (!p->cases.empty())
      paths.push_back(std::move(*p));
  return paths;
}

SearchSpace mlir::xf::tuning::gpuGemmSpace(MLIRContext &ctx, const GemmKernelSpec &spec,
                                           const std::vector<int64_t> &lengths) {
  const Point d = gpuGemmPoint(spec.gpuSchedule);
  std::vector<bool> used(NumGpuKnobs, false);
  for (const SchedulePath &path : gpuGemmPaths(spec, lengths))
    for (size_t k : path.knobs)
      used[k] = true;
  const std::vector<std::pair<const char *, std::vector<int64_t>>> values = {
      {"register_tiles", {0, 1}},
      {"reg_tile_cols", {32, 64, 128}},
      {"reg_tile_rows", {4, 8, 16, 32}},
      {"reg_tall_rows", {128, 256, 512, 1024, 1 << 20}},
      {"reg_tall_tile_rows", {16, 32, 64}},
      {"reg_thread_rows", {2, 4, 8}},
      {"reg_unroll_k", {4, 8, 16}},
      {"reg_split_k", {1, 2, 4, 8}},
      {"reg_fill_blocks", {132, 264, 528}},
      {"nk_thread_rows", {1, 2, 4}},
      {"tile_cols", {32, 64, 128}},
      {"tile_rows", {16, 32, 64}},
      {"thread_cols", {2, 4, 8}},
      {"thread_rows", {2, 4, 8}},
      {"slice_k", {8, 16, 32}},
      {"gemv_cols", {8, 16, 32, 64, 128}},
      {"gemv_slices", {4, 8, 16, 32, 64}},
      {"gemv_lane_cols", {4, 8, 16}},
      {"batch_cols", {4, 8, 16}},
      {"batch_slices", {16, 32, 64}},
      {"batch_lane_cols", {2, 4, 8}},
  };
  SearchSpace space;
  for (size_t k = 0; k < NumGpuKnobs; ++k)
    space.knobs.push_back(Knob{values[k].first, used[k] ? withValue(values[k].second, d[k])
                                                        : std::vector<int64_t>{d[k]}});
  MLIRContext *context = &ctx;
  space.legal = [context](llvm::ArrayRef<int64_t> p) { return verifies(*context, p); };
  return space;
}

std::vector<Point> mlir::xf::tuning::gpuCandidatePoints(const SearchSpace &space, const Point &dflt,
                                                        size_t limit, uint64_t seed) {
  Search search(space, seed);
  search.exclude(dflt);
  // One-knob moves, the knobs in turn: each knob's first other value, then each one's
  // second, ...; Search drops the illegal ones and proposes them before its own points.
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (size_t k = 0; k < space.knobs.size(); ++k) {
      std::vector<int64_t> others;
      for (int64_t v : space.knobs[k].values)
        if (v != dflt[k])
          others.push_back(v);
      // Nearest the default first.
      std::stable_sort(others.begin(), others.end(), [&](int64_t a, int64_t b) {
        return std::abs(a - dflt[k]) < std::abs(b - dflt[k]);
      });
      if (round >= others.size())
        continue;
      Point moved = dflt;
      moved[k] = others[round];
      search.seed(moved);
      any = true;
    }
    if (!any)
      break;
  }
  std::vector<Point> points{dflt};
  if (limit > 1)
    for (const Point &p : search.propose(limit - 1))
      points.push_back(p);
  return points;
}

std::vector<GpuGemmSchedule>
mlir::xf::tuning::gpuGemmCandidates(MLIRContext &ctx, const GemmKernelSpec &spec,
                                    const std::vector<int64_t> &lengths, size_t limit,
                                    uint64_t seed) {
  std::vector<GpuGemmSchedule> candidates;
  for (const Point &p : gpuCandidatePoints(gpuGemmSpace(ctx, spec, lengths),
                                           gpuGemmPoint(spec.gpuSchedule), limit, seed))
    candidates.push_back(gpuGemmScheduleAt(p));
  return candidates;
}
