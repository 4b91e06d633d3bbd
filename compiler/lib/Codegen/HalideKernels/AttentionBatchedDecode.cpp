//===- AttentionBatchedDecode.cpp - one decode step of n sequences --------===//
//
// `<name>_batched` (spec.batchedDecode): one decode step of n sequences, each
// on its own KV cache, in one call. Per task the decode path's arithmetic
// (AttentionDecodePath.cpp): an exact two-pass softmax over the sequence's
// keys, K read in its natural layout, P·V in vector registers over d.
//
//===----------------------------------------------------------------------===//

#include "AttentionDecodePath.h"


using namespace Halide;

namespace mlir::xf {
namespace {

/// Query heads per task of the batched decode step: the most heads whose P·V
/// accumulators (⌈dV / vector⌉ vectors each) fill at most 3/4 of the vector
/// registers, a divisor of H, and whole groups of heads that share a K/V head
/// when a group fits (they read the same cache rows). With n sequences there
/// are n·H/G tasks, so G need not leave several tasks per sequence as the
/// single-sequence path's must. GPT-2 small, 8 sequences at ~145 positions,
/// one thread, caches per K/V head (docs/abi.md): G = 3 5.1 ms per step of 12
/// layers, G = 6 4.6–4.7 ms, G = 12 6.3–7.0 ms (AVX-512: 6).
int batchedHeadsPerTask(const AttentionKernelSpec &spec, const VectorShape &shape) {
  const int H = int(spec.heads), group = H / int(spec.keyValueHeads());
  const int vectorsPerHead = int((spec.dV + shape.floatsPerVector - 1) / shape.floatsPerVector);
  const int fit = std::max(1, int(shape.registers) * 3 / 4 / vectorsPerHead);
  for (int g = std::min(fit, H); g > 1; --g)
    if (H % g == 0 && (g % group == 0 || g < group && group % g == 0))
      return g;
  return 1;
}

/// `<name>_batched` (spec.batchedDecode): one decode step of n sequences, each
/// on its own KV cache, in one call — parallel over (sequence, group of
/// heads) instead of one call per sequence, each with a few tasks (the
/// thread pool's dispatch per call cost more than the arithmetic when 8
/// sequences decode together). Per task the decode path's arithmetic:
/// an exact two-pass softmax over the sequence's keys 0..starts[i], K read
/// in its natural layout, P·V in vector registers over d.
///   q: (h·dK + c, i) [n, H·dK], sequence i's newest query, at position starts[i]
///   k_cache: (c, s, g, slot), v_cache: (d, s, g, slot): any strides (the
///     caches of one allocation, a slot per sequence)
///   slots: (i) int64, the slot of sequence i; starts: (i) int64
///   out: (h·dV + d, i) [n, H·dV]
llvm::Expected<KernelPipeline> buildBatchedDecode(const AttentionKernelSpec &spec,
                                                  const Target &target) {
  llvm::Expected<AttentionShape> shape = attentionShapeOf(spec, target);
  if (!shape)
    return shape.takeError();
  if (!spec.causal || (spec.rope != AttentionKernelSpec::Rope::None && spec.ropeKeys))
    return attentionError("attention kernel '" + spec.name +
                          "': a batched decode step needs causal attention with keys in a cache "
                          "(already rotated)");
  const int vw = shape->vw, H = shape->H, Hkv = shape->Hkv, group = shape->group;
  const int dK = shape->dK, dV = shape->dV;
  const float scale = shape->scale;

  ImageParam q(Float(32), 2, "q");
  ImageParam kCache(keyValueType(spec), 4, "k_cache");
  ImageParam vCache(keyValueType(spec), 4, "v_cache");
  auto keyValue = [&](Expr stored) { return keyValueAsFloat(spec, target, stored); };
  ImageParam slots(Int(64), 1, "slots");
  ImageParam starts(Int(64), 1, "starts");
  Var c("c"), d("d"), s("s"), i("i"), h("h"), j("j");
  Expr positions = kCache.dim(1).extent(), slotCount = kCache.dim(3).extent();
  // Clamped so that bounds inference sees the buffers' extents; the caller
  // keeps both in range (docs/abi.md).
  Expr slot = clamp(cast<int>(slots(i)), 0, slotCount - 1);
  Expr start = clamp(cast<int>(starts(i)), 0, positions - 1);
  Expr keyCount = start + 1;

  const bool rope = spec.rope != AttentionKernelSpec::Rope::None;
  RotaryPositions rotary = rotaryPositionsOf(spec);
  Func query = kernelFunc("batched_query"); // rotated at the query's position, if rope
  if (rope) {
    Expr headStart = (c / dK) * dK;
    query(c, i) = rotary.rotated([&](Expr x) { return q(headStart + x, i); }, c % dK, start);
  } else {
    query(c, i) = q(c, i);
  }
  auto kvHead = [&](Expr queryHead) { return queryHead / group; };
  Expr key = clamp(s, 0, positions - 1);

  const int lanes = dK % vw == 0 ? vw : 1;
  RDom ro(0, dK / lanes, "ro");
  Func dotPart = kernelFunc("batched_dot_part");
  dotPart(j, s, i, h) = 0.f;
  dotPart(j, s, i, h) +=
      query(h * dK + ro * lanes + j, i) * keyValue(kCache(ro * lanes + j, key, kvHead(h), slot));
  Func scores = kernelFunc("batched_scores");
  {
    std::vector<Expr> sums;
    for (int l = 0; l < lanes; ++l)
      sums.push_back(dotPart(l, s, i, h));
    while (sums.size() > 1) { // pairwise, as a tree (the decode path's order)
      std::vector<Expr> next;
      for (size_t x = 0; x + 1 < sums.size(); x += 2)
        next.push_back(sums[x] + sums[x + 1]);
      if (sums.size() % 2)
        next.push_back(sums.back());
      sums = std::move(next);
    }
    scores(s, i, h) = select(s < keyCount, sums[0] * scale, kNoScore);
  }
  // Keys 0..starts[i] of sequence i: the loops stop at its own length.
  RDom rs(0, positions, "rs");
  rs.where(rs < keyCount);
  Func maxScore = kernelFunc("batched_max");
  maxScore(i, h) = kNoScore;
  maxScore(i, h) = max(maxScore(i, h), scores(rs, i, h));
  Func probs = kernelFunc("batched_probs");
  probs(s, i, h) = select(s < keyCount, exp(scores(s, i, h) - maxScore(i, h)), 0.f);
  Func sum = kernelFunc("batched_sum");
  sum(i, h) = 0.f;
  sum(i, h) += probs(rs, i, h);
  Func weighted = kernelFunc("batched_out"); // unnormalised Σ_s p_s · v_s
  weighted(d, i, h) = 0.f;
  weighted(d, i, h) +=
      probs(rs, i, h) * keyValue(vCache(d, clamp(rs, 0, positions - 1), kvHead(h), slot));
  Func out = kernelFunc("out");
  {
    Expr head = c / dV, column = c % dV, total = sum(i, head);
    out(c, i) = select(total > 0.f, weighted(column, i, head) / total, 0.f);
  }

  q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  kCache.dim(0).set_bounds(0, dK).set_stride(1).dim(2).set_bounds(0, Hkv);
  vCache.dim(0).set_bounds(0, dV).set_stride(1).dim(2).set_bounds(0, Hkv);
  vCache.dim(1).set_bounds(0, positions).dim(3).set_bounds(0, slotCount);
  Expr n = q.dim(1).extent();
  slots.dim(0).set_bounds(0, n);
  starts.dim(0).set_bounds(0, n);
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, n);

  // The decode path's schedule with the sequence as an outer parallel loop.
  Var groupVar("group"), head("head"), col("col"), task("task"), so("so"), si("si");
  const int keyTile = int(spec.schedule.decodeKeyTile);
  const int G = batchedHeadsPerTask(spec, vectorShapeOf(target));
  out.split(c, groupVar, col, G * dV)
      .split(col, head, col, dV)
      .reorder(col, head, groupVar, i)
      .fuse(groupVar, i, task)
      .parallel(task)
      .vectorize(col, vw, TailStrategy::GuardWithIf);
  scores.compute_at(out, task)
      .split(s, so, si, keyTile, TailStrategy::RoundUp)
      .reorder(si, h, i, so)
      .unroll(si);
  dotPart.compute_at(scores, h).vectorize(j).unroll(s);
  Stage dotUpdate = dotPart.update().reorder(j, s, ro, i).vectorize(j).unroll(s);
  if (dK / lanes <= kMaxUnrolledVectors)
    dotUpdate.unroll(ro);
  if (rope) {
    query.compute_at(out, task).vectorize(c, vw, TailStrategy::GuardWithIf);
    // The frequencies once a call, as in AttentionKernel.cpp (not an exp per pair and task);
    // a task's table is the one position of its query.
    rotary.frequency.compute_root();
    rotary.table.compute_at(out, task);
  } else {
    query.compute_inline();
  }
  maxScore.compute_at(out, task);
  probs.compute_at(out, task).vectorize(s, vw, TailStrategy::GuardWithIf);
  sum.compute_at(out, task);
  weighted.compute_at(out, task).vectorize(d, vw, TailStrategy::GuardWithIf);
  Stage weightedUpdate =
      weighted.update().reorder(d, h, rs, i).vectorize(d, vw, TailStrategy::GuardWithIf);
  if ((dV + vw - 1) / vw <= kMaxUnrolledVectors) {
    weighted.unroll(d);
    weightedUpdate.unroll(d);
  }

  KernelPipeline result;
  result.inputs = {q, kCache, vCache, slots, starts};
  result.output = out;
  result.pipeline = Pipeline(out);
  return result;
}

} // namespace

llvm::Expected<KernelPipeline> buildAttentionBatchedPipeline(const AttentionKernelSpec &spec,
                                                             const Target &target) {
  KernelFuncScope names(spec.name + "_batched");
  return buildCatchingHalideErrors(
      "scheduling the batched decode of attention kernel '" + spec.name + "'",
      [&] { return buildBatchedDecode(spec, target); });
}

} // namespace mlir::xf
