//===- SegmentedAttentionKernel.cpp - One attention call per packed batch -===//
//
// spec.segmented: the attention of a packed batch (docs/abi.md "Packed
// batches") in one call. q is n sequences' query rows back to back,
// [Σℓ, H·dK]; k and v their keys' rows, [Σℓ_k, H_kv·dK] (self-attention:
// the same rows; cross attention: the sources'). `blocks` (int32
// [nBlocks, 5]) cuts every sequence into query blocks of at most queryBlock
// rows, one row each: (first row, rows, first key row of the sequence, its
// key count ℓ_k, position of the block's first row + ℓ_k − ℓ). Query row r
// of a block sees the sequence's keys p < ℓ_k — causally only p <= position
// of r + (ℓ_k − ℓ), as in AttentionKernel.cpp. The host lowering builds the
// table from the lengths (HostLowering::queryBlockTable).
//
// Why one call: a batch of 32 sentences ran 32 calls per layer of ~15 query
// rows each, and the Halide call, its K transpose and its thread-pool
// dispatch cost about as much as the ~0.35 MFLOP of each (a 1,000-sentence
// MiniLM run made ~6,000 of them). Here the parallel tasks are the query
// blocks of all sequences (every head in each), and a block attends over its
// own sequence's keys only: no query block spans two sequences, so no score
// is computed only to be masked (a block-diagonal mask over global row
// blocks computed about twice the useful work for sentences of ~15 tokens
// and ran slower than the calls it replaced).
//
// Per (block, head) the flash-style loop of the per-sequence kernel: key
// blocks streamed with a running (output, max, sum) per query row, the score
// tile and P·V register-blocked over rowTile rows. The loop over key blocks
// is bounded by the block's keys: Halide trims an RDom to its `where` when
// that is a pure expression (loads of inputs, no calls of Funcs), which is
// why the bounds come from the table. The output rows are written by an
// update over (row of block, block) whose blocks run in parallel: they write
// disjoint rows, which Halide cannot prove of rows read from a table.
// Rotary positions are not fused here (the host keeps per-sequence calls).
//
//===----------------------------------------------------------------------===//

#include "AttentionAlgorithm.h"

#include <optional>

using namespace Halide;

namespace mlir::xf {
namespace {

llvm::Expected<KernelPipeline> buildSegmented(const AttentionKernelSpec &spec,
                                              const Target &target) {
  llvm::Expected<AttentionShape> shape = attentionShapeOf(spec, target);
  if (!shape)
    return shape.takeError();
  if (spec.rope != AttentionKernelSpec::Rope::None)
    return attentionError("attention kernel '" + spec.name +
                          "': a segmented kernel does not fuse rotary positions");
  if (spec.halfKeyValues) // a packed batch's own K/V rows, never a cache
    return attentionError("attention kernel '" + spec.name +
                          "': a segmented kernel reads float32 keys and values");
  const int vw = shape->vw, H = shape->H, Hkv = shape->Hkv, group = shape->group;
  const int dK = shape->dK, dV = shape->dV;
  const float scale = shape->scale;
  const AttentionSchedule &sched = spec.schedule;
  const int queryBlock = int(sched.queryBlock), keyBlock = int(sched.keyBlock);
  const int rowTile = int(sched.rowTile);

  ImageParam q(Float(32), 2, "q");         // (h·dK + c, t): [Σℓ, H·dK]
  ImageParam k(Float(32), 2, "k");         // (g·dK + c, s): [Σℓ_k, H_kv·dK]
  ImageParam v(Float(32), 2, "v");         // (g·dV + d, s): [Σℓ_k, H_kv·dV]
  ImageParam blocks(Int(32), 2, "blocks"); // (field, block): [nBlocks, 5]
  Expr queries = q.dim(1).extent(), keys = k.dim(1).extent(), count = blocks.dim(1).extent();
  Var c("c"), d("d"), j("j"), t("t"), h("h"), ri("ri"), blk("blk"), b("b");
  auto kvHead = [&](Expr queryHead) { return queryHead / group; };

  // ---- The block table (clamped: a table that does not describe the rows
  // reads and writes nothing out of bounds) --------------------------------
  auto field = [&](int f, Expr block) { return blocks(f, block); };
  auto firstRow = [&](Expr block) { return clamp(field(0, block), 0, queries - 1); };
  auto blockRows = [&](Expr block) { return clamp(field(1, block), 0, queryBlock); };
  auto firstKey = [&](Expr block) { return clamp(field(2, block), 0, keys); };
  auto sequenceKeys = [&](Expr block) { return clamp(field(3, block), 0, keys - firstKey(block)); };
  // Keys row ri of a block sees: the first visibleKeys of its sequence's.
  auto visibleKeys = [&](Expr row, Expr block) -> Expr {
    if (!spec.causal)
      return sequenceKeys(block);
    return clamp(field(4, block) + row + 1, 0, sequenceKeys(block));
  };
  // The block's key blocks: those its last row sees.
  Expr keyBlocksOfBlock = (visibleKeys(blockRows(blk) - 1, blk) + keyBlock - 1) / keyBlock;

  // Keys transposed, [H_kv, dK, Σℓ_k + keyBlock] with keys contiguous, padded
  // by repeating the last key (masked): a block's keys are one dense vector
  // load (clamping each key's index made them a gather).
  Func keysT = kernelFunc("keys_transposed");
  keysT(t, c, h) = k(h * dK + c, clamp(t, 0, keys - 1));
  Expr allKeyBlocks = (keys + keyBlock - 1) / keyBlock;
  RDom rb(0, allKeyBlocks, "rb");
  rb.where(rb < keyBlocksOfBlock); // pure: the loop runs over the block's key blocks only
  // Key j of key block b: its position in the sequence and its row.
  auto position = [&](Expr kb, Expr jj) { return kb * keyBlock + jj; };
  // (The block's first key is clamped to Σℓ_k, so the promise holds for every b,
  // whether or not Halide trims the loop.)
  auto keyRow = [&](Expr kb, Expr jj) {
    return unsafe_promise_clamped(min(firstKey(blk) + kb * keyBlock, keys) + jj, 0,
                                  keys + keyBlock - 1);
  };
  Expr row = min(firstRow(blk) + ri, queries - 1); // rows past the block: never stored

  RDom rc(0, dK, "rc"), rj(0, keyBlock, "rj");
  OnlineSoftmaxOperands o{{ri, h, blk}, j, d, b, rj, rb, scale};
  o.scoreTerm = [&](Expr key, Expr kb) {
    return q(h * dK + rc, row) * keysT(keyRow(kb, key), rc, kvHead(h));
  };
  o.visible = [&](Expr key, Expr kb) { return position(kb, key) < visibleKeys(ri, blk); };
  o.value = [&](Expr key, Expr kb) {
    return v(kvHead(h) * dV + d, clamp(firstKey(blk) + position(kb, key), 0, keys - 1));
  };
  OnlineSoftmax softmax = defineOnlineSoftmax(o);
  Func state = softmax.state;
  Func result = kernelFunc("block_result"); // normalised, [H·dV] per row of the block
  {
    Expr head = c / dV, column = c % dV, sum = state(column, ri, head, blk)[2];
    result(c, ri, blk) = select(sum > 0.f, state(column, ri, head, blk)[0] / sum, 0.f);
  }
  Func out = kernelFunc("out");
  out(c, t) = undef<float>();
  RDom rows(0, queryBlock, 0, count, "rows");
  rows.where(rows.x < blockRows(rows.y));
  out(c, clamp(firstRow(rows.y) + rows.x, 0, queries - 1)) = result(c, rows.x, rows.y);

  // ---- Buffer shapes (docs/abi.md) --------------------------------------
  q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  k.dim(0).set_bounds(0, Hkv * dK).set_stride(1).dim(1).set_min(0);
  v.dim(0).set_bounds(0, Hkv * dV).set_stride(1).dim(1).set_bounds(0, keys);
  blocks.dim(0).set_bounds(0, 5).set_stride(1).dim(1).set_min(0);
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, queries);

  // ---- Schedule ----------------------------------------------------------
  // Blocks in parallel (every head of a block in its task); per head the
  // state of the block's rows.
  Var cd("cd");
  out.update()
      .allow_race_conditions() // blocks write disjoint rows
      .reorder(c, rows.x, rows.y)
      .parallel(rows.y)
      .vectorize(c, vw, TailStrategy::GuardWithIf);
  result.compute_at(out, rows.y)
      .split(c, h, cd, dV)
      .reorder(cd, ri, h)
      .vectorize(cd, vw, TailStrategy::GuardWithIf);
  keysT.compute_root().parallel(h).vectorize(t, vw, TailStrategy::GuardWithIf);

  state.compute_at(result, h).vectorize(d, vw, TailStrategy::GuardWithIf);
  scheduleKeyBlock(softmax, rb, ri, j, d, rc, rj, *shape, rowTile, keyBlock);

  KernelPipeline built;
  built.inputs = {q, k, v, blocks};
  built.output = out;
  built.pipeline = Pipeline(out);
  return built;
}

} // namespace

llvm::Expected<KernelPipeline> buildSegmentedAttentionPipeline(const AttentionKernelSpec &spec,
                                                               const Target &target) {
  KernelFuncScope names(spec.name);
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err = catchHalideErrors("scheduling attention kernel '" + spec.name + "'",
                                          [&] { built.emplace(buildSegmented(spec, target)); }))
    return std::move(err);
  return std::move(*built);
}

} // namespace mlir::xf
