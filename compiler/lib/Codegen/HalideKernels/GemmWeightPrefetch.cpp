//===- GemmWeightPrefetch.cpp - a packed weight's next panels, prefetched --===//
//
// The tiled CPU path over a weight packed at load (GemmScheduleCpu.cpp) reads
// a task's panel from DRAM in its first row tile: that pass asks for the
// panel at the rate of the FMAs (8 × 48 tiles: 192 bytes per 24 FMAs, ~60 GB/s
// a Zen 5 core), several times what one core pulls from DRAM, and stalls; the
// other row tiles find the panel in L2. Measured on GPT-2 small's GEMMs at
// ℓ = 128, 2 threads, Zen 5: 94-97 % of the FMA peak with the weight in L3,
// 85-90 % with it in DRAM (`xf-bench-gemm --cold-weights`) — as in a model,
// whose weights never stay in L3.
//
// So each register tile's K loop also prefetches the same tile of the panel
// kPrefetchPanels tasks ahead, one cache line every few steps: over the
// task's row tiles and K blocks the whole future tile arrives, at the pace of
// the FMAs instead of in one burst. Halide's prefetch directive cannot say
// this (it prefetches the whole box one iteration touches, 3 lines a step,
// which cost more than the stalls: 20 % slower with the weight in L3), so a
// custom lowering pass inserts one prefetch instruction, behind a test of the
// step's low bits, at the top of the K loop. The loops are found by the names
// Halide gives them (<func>.s<stage>.<var>); a missing name leaves the kernel
// as it was, which GemmWeightPrefetch's test would report.
//
//===----------------------------------------------------------------------===//

#include "GemmSchedules.h"
#include "GemmTiling.h"

using namespace Halide;
using namespace Halide::Internal;

namespace mlir::xf {
namespace {

/// How many tasks ahead a task prefetches. Measured on GPT-2 small's GEMMs at
/// ℓ = 128 with cold weights (GFLOP/s, 2 threads, Zen 5): 1 ahead 417-467
/// (the other thread is already reading that panel), 2 ahead 464-485, 3 ahead
/// 478-496, 4 ahead 476-486; without the prefetch 439-463, warm 493-500.
constexpr int kPrefetchPanels = 3;
constexpr int kCacheLineBytes = 64;

/// The K loop's first load of the weight: the index of its first lane.
class FirstWeightIndex : public IRVisitor {
public:
  explicit FirstWeightIndex(std::string weight) : weight(std::move(weight)) {}
  Expr index;

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    if (!index.defined() && op->name == weight)
      index = op->index.as<Ramp>() ? op->index.as<Ramp>()->base : op->index;
    IRVisitor::visit(op);
  }
  std::string weight;
};

class InsertPanelPrefetch : public IRMutator {
public:
  InsertPanelPrefetch(const GemmKernelSpec &spec, const GemmCpuFuncs &f, std::string weight)
      : weight(std::move(weight)) {
    const int panelTiles = int(spec.schedule.panelCols ? spec.schedule.panelCols / f.tileCols
                                                       : defaultPanelTiles(spec));
    const bool pairs = f.dot;
    elementBytes = pairs ? 2 : 4;
    stepsPerTile = pairs ? (f.K + 1) / 2 : f.K; // one step: a row of the tile (a pair of rows)
    stepsPerBlock = pairs ? f.kBlock / 2 : f.kBlock;
    rowElements = pairs ? 2 * f.tileCols : f.tileCols;
    tileElements = int64_t(rowElements) * stepsPerTile;
    aheadElements = int64_t(kPrefetchPanels) * panelTiles * (f.gated ? 2 : 1) * tileElements;
    const std::string product = f.product.name() + ".s1.";
    passLoop = product + f.m.name() + "." + f.mt.name();
    blockLoop = f.fullKBlocks > 1 ? product + f.kBlocks.x.name() : "";
    kLoop = f.blockProduct.name() + ".s1." + (pairs ? f.kPairs.y.name() : f.ki.x.name());
  }
  int inserted = 0;

private:
  using IRMutator::visit;

  Stmt visit(const For *op) override {
    if (op->name == passLoop) {
      rowTiles = op->extent;
      passVar = Variable::make(Int(32), op->name);
    } else if (op->name == blockLoop) {
      blockVar = Variable::make(Int(32), op->name);
    }
    Stmt body = mutate(op->body);
    if (op->name == kLoop && rowTiles.defined())
      body = Block::make(prefetch(Variable::make(Int(32), op->name), body), body);
    return For::make(op->name, op->min, op->extent, op->for_type, op->partition_policy,
                     op->device_api, body);
  }

  /// At step `k` of the current tile's K loop: every `every` steps the line
  /// step · lines-per-row / row tiles of the same tile kPrefetchPanels tasks on.
  Stmt prefetch(Expr k, const Stmt &body) {
    FirstWeightIndex first(weight);
    body.accept(&first);
    if (!first.index.defined())
      return Evaluate::make(0);
    ++inserted;
    Expr kb = blockVar.defined() ? blockVar : Expr(0);
    // The first element of this tile (loop-invariant: hoisted by LLVM).
    Expr rowBase = cast<int64_t>(first.index - k * rowElements);
    Expr tileStart = rowBase / Expr(tileElements) * Expr(tileElements);
    Expr step = cast<int64_t>((kb * rowTiles + passVar) * stepsPerBlock + k);
    const int linesPerRow = std::max(1, rowElements * elementBytes / kCacheLineBytes);
    // line = step · linesPerRow / rowTiles as a multiply by 2^20 / rowTiles
    // (rounded up: at most 0.2 of a line too far) and a shift.
    Expr perStep = Expr(int64_t(1) << 20) / cast<int64_t>(max(rowTiles, 1)) + Expr(int64_t(1));
    Expr line = (step * Expr(int64_t(linesPerRow)) * perStep) >> 20;
    // A line per `every` steps covers the linesPerRow / rowTiles lines a step needs.
    Expr every = select(rowTiles >= 8 * linesPerRow, 8, rowTiles >= 4 * linesPerRow, 4,
                        rowTiles >= 2 * linesPerRow, 2, 1);
    Expr address = tileStart + Expr(aheadElements) +
                   line * Expr(int64_t(kCacheLineBytes / elementBytes));
    Type type = elementBytes == 2 ? UInt(16) : Float(32);
    Expr call = Call::make(type, Call::prefetch,
                           {Variable::make(Handle(), weight), cast<int>(address), 1, 1},
                           Call::Intrinsic);
    return simplify(IfThenElse::make((k & (every - 1)) == 0, Evaluate::make(call)));
  }

  std::string weight, passLoop, blockLoop, kLoop;
  int elementBytes = 4, stepsPerTile = 0, stepsPerBlock = 0, rowElements = 0;
  int64_t tileElements = 0, aheadElements = 0;
  Expr rowTiles, passVar, blockVar;
};

} // namespace

void prefetchPackedWeightPanels(const GemmKernelSpec &spec, const GemmCpuFuncs &f,
                                Pipeline &pipeline) {
  if (!f.prePacked)
    return;
  pipeline.add_custom_lowering_pass(new InsertPanelPrefetch(spec, f, f.weight.name()));
}

} // namespace mlir::xf
