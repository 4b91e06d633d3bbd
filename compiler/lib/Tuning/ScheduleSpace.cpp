//===- ScheduleSpace.cpp - knobs of a kernel's schedule -------------------===//

#include "xf/Tuning/ScheduleSpace.h"

#include <algorithm>

using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {
// Knob order of a GEMM point; panel is counted in register tiles so that it
// stays a multiple of tile_cols whatever tile_cols is.
enum GemmKnob {
  TileCols,
  TileRows,
  KBlock,
  Pack,
  RowsPerTask,
  PanelTiles,
  GemvRowsBelow,
  GemvRowsPerPass,
  GemvTasks,
  NumGemmKnobs
};
enum AttentionKnob { QueryBlock, KeyBlock, RowTile, DecodeKeyTile, NumAttentionKnobs };
// Up to this many query rows take the attention's decode path (AttentionKernel.cpp).
constexpr int64_t kDecodeQueryRows = 4;

/// `values` with `keep` added, sorted and unique.
std::vector<int64_t> withValue(std::vector<int64_t> values, int64_t keep) {
  values.push_back(keep);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

bool anyLength(const std::vector<int64_t> &lengths, bool (*pred)(int64_t, int64_t), int64_t x) {
  return std::any_of(lengths.begin(), lengths.end(), [&](int64_t l) { return pred(l, x); });
}
} // namespace

Point mlir::xf::tuning::gemmPoint(const GemmSchedule &s) {
  return {s.tileCols,      s.tileRows,        s.kBlock,
          s.packWeights,   s.rowsPerTask,     s.panelCols / std::max<int64_t>(1, s.tileCols),
          s.gemvRowsBelow, s.gemvRowsPerPass, s.gemvTasks};
}

GemmSchedule mlir::xf::tuning::gemmScheduleAt(const Point &p) {
  GemmSchedule s;
  s.tileCols = p[TileCols], s.tileRows = p[TileRows], s.kBlock = p[KBlock];
  s.packWeights = p[Pack] != 0, s.rowsPerTask = p[RowsPerTask];
  s.panelCols = p[PanelTiles] * p[TileCols], s.gemvRowsBelow = p[GemvRowsBelow];
  s.gemvRowsPerPass = p[GemvRowsPerPass], s.gemvTasks = p[GemvTasks];
  return s;
}

SearchSpace mlir::xf::tuning::gemmSpace(const GemmKernelSpec &spec, const VectorShape &shape,
                                        const std::vector<int64_t> &lengths) {
  const GemmSchedule &d = spec.schedule;
  const int64_t vw = shape.floatsPerVector, regs = shape.registers;
  const bool gemmPath = anyLength(
      lengths, [](int64_t l, int64_t x) { return l >= x; }, d.gemvRowsBelow);
  const bool gemvPath = anyLength(
      lengths, [](int64_t l, int64_t x) { return l < x; }, d.gemvRowsBelow);
  // The GEMV path reads a weight packed at load in its tile layout.
  const bool layoutUsed = gemmPath || (gemvPath && spec.weightBlocks == WeightBlocks::None);
  auto knob = [](const char *name, bool used, std::vector<int64_t> values, int64_t dflt) {
    return Knob{name, used ? withValue(std::move(values), dflt) : std::vector<int64_t>{dflt}};
  };
  std::vector<int64_t> tileCols, kBlocks;
  for (int64_t v = 1; v <= 4 && v * vw <= 256; ++v)
    tileCols.push_back(v * vw);
  for (int64_t k : {32, 64, 128, 192, 256, 384, 512, 768, 1024})
    if (k < spec.K && (!spec.bf16Activations || k % 2 == 0))
      kBlocks.push_back(k);
  kBlocks.push_back(std::min<int64_t>(spec.K, 1 << 16));
  SearchSpace space;
  space.knobs = {
      knob("tile_cols", layoutUsed, tileCols, d.tileCols),
      knob("tile_rows", gemmPath, {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16}, d.tileRows),
      knob("k_block", gemmPath, kBlocks, d.kBlock),
      knob("pack_weights", layoutUsed, {0, 1}, d.packWeights),
      knob("rows_per_task", gemmPath, {8, 16, 32, 64, 128, 256, 512}, d.rowsPerTask),
      knob("panel_tiles", gemmPath, {0, 1, 2, 4, 8, 16, 32, 64}, d.panelCols / d.tileCols),
      knob("gemv_rows_below", false, {}, d.gemvRowsBelow),
      knob("gemv_rows_per_pass", gemvPath, {2, 4, 8, 12, 16, 24, 32}, d.gemvRowsPerPass),
      knob("gemv_tasks", gemvPath, {0, 2, 4, 8, 16, 32, 64}, d.gemvTasks),
  };
  space.legal = [vw, regs, gemmPath](llvm::ArrayRef<int64_t> p) {
    int64_t vectors = p[TileCols] / vw;
    // Accumulators plus the weight vectors and a broadcast must fit the
    // register file (the tuner may still find that a spill pays).
    if (gemmPath && vectors * p[TileRows] + vectors + 1 > regs + 2)
      return false;
    return p[TileCols] * p[TileRows] <= 1024 && p[PanelTiles] * p[TileCols] <= (1 << 20);
  };
  return space;
}

std::vector<SchedulePath> mlir::xf::tuning::gemmPaths(const GemmKernelSpec &spec,
                                                      const std::vector<int64_t> &lengths) {
  SchedulePath gemv{"gemv", {GemvRowsPerPass, GemvTasks}, {}};
  if (spec.weightBlocks == WeightBlocks::None)
    gemv.knobs = {TileCols, Pack, GemvRowsPerPass, GemvTasks};
  SchedulePath gemm{"gemm", {TileCols, TileRows, KBlock, Pack, RowsPerTask, PanelTiles}, {}};
  return splitPathsByRows(std::move(gemv), std::move(gemm), lengths,
                          spec.schedule.gemvRowsBelow - 1);
}

std::vector<SchedulePath> mlir::xf::tuning::attentionPaths(const std::vector<int64_t> &lengths) {
  SchedulePath decode{"decode", {DecodeKeyTile}, {}};
  SchedulePath prefill{"prefill", {QueryBlock, KeyBlock, RowTile}, {}};
  return splitPathsByRows(std::move(decode), std::move(prefill), lengths, kDecodeQueryRows);
}

Point mlir::xf::tuning::attentionPoint(const AttentionSchedule &s) {
  return {s.queryBlock, s.keyBlock, s.rowTile, s.decodeKeyTile};
}

AttentionSchedule mlir::xf::tuning::attentionScheduleAt(const Point &p) {
  AttentionSchedule s;
  s.queryBlock = p[QueryBlock], s.keyBlock = p[KeyBlock], s.rowTile = p[RowTile];
  s.decodeKeyTile = p[DecodeKeyTile];
  return s;
}

SearchSpace mlir::xf::tuning::attentionSpace(const AttentionKernelSpec &spec,
                                             const VectorShape &shape,
                                             const std::vector<int64_t> &lengths) {
  const AttentionSchedule &d = spec.schedule;
  const int64_t vw = shape.floatsPerVector, regs = shape.registers;
  const bool prefill = anyLength(
      lengths, [](int64_t l, int64_t x) { return l > x; }, kDecodeQueryRows);
  const bool decode = anyLength(
      lengths, [](int64_t l, int64_t x) { return l <= x; }, kDecodeQueryRows);
  auto knob = [](const char *name, bool used, std::vector<int64_t> values, int64_t dflt) {
    return Knob{name, used ? withValue(std::move(values), dflt) : std::vector<int64_t>{dflt}};
  };
  std::vector<int64_t> keyBlocks;
  for (int64_t v = 1; v <= 8 && v * vw <= 1024; ++v)
    keyBlocks.push_back(v * vw);
  SearchSpace space;
  space.knobs = {
      knob("query_block", prefill, {16, 32, 64, 128, 256}, d.queryBlock),
      knob("key_block", prefill, keyBlocks, d.keyBlock),
      knob("row_tile", prefill, {1, 2, 3, 4, 6, 8}, d.rowTile),
      knob("decode_key_tile", decode, {1, 2, 4, 8}, d.decodeKeyTile),
  };
  space.legal = [vw, regs](llvm::ArrayRef<int64_t> p) {
    return p[KeyBlock] * p[RowTile] <= 4096 && (p[KeyBlock] + vw - 1) / vw * p[RowTile] <= 2 * regs;
  };
  (void)spec;
  return space;
}
