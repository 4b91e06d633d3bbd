//===- AttentionDecodePath.cpp - attention of M <= 4 queries on the CPU ---===//
//
// KV-cache decoding has one query row: the flash path's query-block tiles
// would be almost all padding and its K transpose would cost as much as the
// attention itself. The keys are cut into `ranges` ranges of `range` keys;
// per (query head, range): an exact two-pass softmax over the range's keys,
// with K read in its natural layout (each key's dK values contiguous), the
// dot products as `lanes` vector partial sums then a horizontal add, and P·V
// accumulated in vector registers over d. The ranges' (output, max, sum) are
// then merged as the flash state is (with one range: weight e^0 = 1, the
// same values). Same masking rule, same float32 arithmetic up to summation
// order.
//
//===----------------------------------------------------------------------===//

#include "AttentionDecodePath.h"

using namespace Halide;

namespace mlir::xf {
namespace {

/// A key range has at least this many keys, so short contexts stay one range.
constexpr int kMinDecodeKeyRange = 32;

/// Key ranges per K/V head (at most; fewer when the context is short): enough
/// that the H_kv·S tasks are at least 4 and even, so that 2 threads take equal
/// shares (SmolLM2's 3 K/V heads: 6 tasks; GPT-2's 12: 12); at most 8. Fewer,
/// longer tasks: each task rotates its query rows and merges one more range,
/// and at 160-250 positions SmolLM2's q8 decode step took 2.39-2.45 ms with 12
/// tasks against 2.32-2.39 with 6 (Zen 5, 2 threads).
int decodeKeyRanges(int kvHeads) {
  for (int s = 1; s < 8; ++s)
    if (kvHeads * s >= 4 && kvHeads * s % 2 == 0)
      return s;
  return 8;
}

} // namespace

DecodePath defineDecodePath(const AttentionKernelSpec &spec, const AttentionShape &shape,
                            const AttentionOperands &a) {
  DecodePath f;
  const int dK = shape.dK;
  const Var &c = a.c, &d = a.d, &s = a.s, &t = a.t, &h = a.h, &j = a.j, &p = f.p;
  Expr keys = a.keys;
  f.lanes = dK % shape.vw == 0 ? shape.vw : 1;
  const int lanes = f.lanes;
  Expr ranges =
      clamp((keys + kMinDecodeKeyRange - 1) / kMinDecodeKeyRange, 1, decodeKeyRanges(shape.Hkv));
  Expr range = (keys + ranges - 1) / ranges;
  f.query(c, t) = a.queryAt(c, t);                        // rotated, if rope
  f.keys(c, s, h) = a.keyAt(c, clamp(s, 0, keys - 1), h); // h: a K/V head here
  f.ro = RDom(0, dK / lanes, "ro"); // dotPart(l, s, t, h, p) = Σ_o q[t, h, o·lanes + l]·k[...]
  RDom ro = f.ro;
  f.dotPart(j, s, t, h, p) = 0.f;
  f.dotPart(j, s, t, h, p) +=
      f.query(h * dK + ro * lanes + j, t) * f.keys(ro * lanes + j, p * range + s, a.kvHead(h));
  f.rl = RDom(0, lanes, "rl"); // the lanes' sum: a vector reduction (a tree of shuffles)
  f.dot(s, t, h, p) = 0.f;
  f.dot(s, t, h, p) += f.dotPart(f.rl, s, t, h, p);
  f.scores(s, t, h, p) = // key p·range + s
      select(a.visible(p * range + s, t), f.dot(s, t, h, p) * a.scale, kNoScore);
  f.rs = RDom(0, range, "rs");
  RDom rs = f.rs;
  f.max(t, h, p) = kNoScore;
  f.max(t, h, p) = max(f.max(t, h, p), f.scores(rs, t, h, p));
  f.probs(s, t, h, p) =
      select(a.visible(p * range + s, t), exp(f.scores(s, t, h, p) - f.max(t, h, p)), 0.f);
  f.sum(t, h, p) = 0.f;
  f.sum(t, h, p) += f.probs(rs, t, h, p);
  f.output(d, t, h, p) = 0.f; // unnormalised Σ_s p_s · v_s over the range
  f.output(d, t, h, p) +=
      f.probs(rs, t, h, p) * a.keyValue(a.v(d, clamp(p * range + rs, 0, keys - 1), a.kvHead(h)));
  f.range(d, t, h, p) = Tuple(f.output(d, t, h, p), f.max(t, h, p), f.sum(t, h, p));
  f.rp = RDom(0, ranges, "rp");
  RDom rp = f.rp;
  Func rangeFunc = f.range;
  RangeResults results;
  results.output = [rangeFunc](Expr d, Expr t, Expr h, Expr p) { return rangeFunc(d, t, h, p)[0]; };
  results.max = [rangeFunc](Expr d, Expr t, Expr h, Expr p) { return rangeFunc(d, t, h, p)[1]; };
  results.sum = [rangeFunc](Expr d, Expr t, Expr h, Expr p) { return rangeFunc(d, t, h, p)[2]; };
  defineRangeMerge(f.top, f.merged, rp, d, t, h, results);
  return f;
}

RangeResults partialsRangeResults(ImageParam partials, Expr lastRow, int dV) {
  auto at = [partials, lastRow](Expr col, Expr t, Expr h, Expr p) {
    return partials(col, clamp(t, 0, lastRow), h, p);
  };
  RangeResults results;
  results.output = at;
  results.max = [at, dV](Expr, Expr t, Expr h, Expr p) { return at(dV, t, h, p); };
  results.sum = [at, dV](Expr, Expr t, Expr h, Expr p) { return at(dV + 1, t, h, p); };
  return results;
}

void defineRangeMerge(Func top, Func merged, RDom rp, Var d, Var t, Var h,
                      const RangeResults &r) {
  top(t, h) = kNoScore; // the largest range max
  top(t, h) = max(top(t, h), r.max(0, t, h, rp));
  merged(d, t, h) = Tuple(0.f, 0.f);
  Expr w = exp(r.max(d, t, h, rp) - top(t, h));
  merged(d, t, h) = Tuple(merged(d, t, h)[0] + r.output(d, t, h, rp) * w,
                          merged(d, t, h)[1] + r.sum(d, t, h, rp) * w);
}

void scheduleDecodePath(const AttentionKernelSpec &spec, const AttentionShape &shape,
                        const Target &target, DecodePath &f, Stage decodeStage, Func out) {
  // The ranges in parallel, one task per (K/V head, key range) computing all
  // `group` query heads that share the K/V head, both products with those
  // heads inside the loop over keys: each key's K and V row is read from
  // memory once per task, by one thread (the query heads after the first
  // find it in L1). A cache slot keeps each head's rows contiguous, so a task
  // streams one contiguous stretch of K and one of V (with heads side by side
  // in a row it read dK of every H_kv·dK floats at a stride, which the
  // prefetchers followed poorly: a decode step's attention read the cache at
  // ~6 GB/s). Then, serially, the merge of the ranges per query head.
  const int vw = shape.vw, dK = shape.dK, dV = shape.dV, group = shape.group;
  const bool narrowValues = (dV + vw - 1) / vw <= kMaxUnrolledVectors;
  Var c("c"), d("d"), s("s"), t("t"), h("h"), j("j"), p = f.p;
  Var kvh("decode_kv_head"), hi("decode_head"), rangeTask("decode_task");
  Var head("decode_out_head"), col("decode_col"), so("so"), si("si");
  const int keyTile = int(spec.schedule.decodeKeyTile); // keys per dot-product register block
  f.range.compute_root()
      .split(h, kvh, hi, group)
      .reorder(d, hi, t, p, kvh)
      .fuse(p, kvh, rangeTask)
      .parallel(rangeTask)
      .vectorize(d, vw, TailStrategy::GuardWithIf);
  f.scores.compute_at(f.range, rangeTask)
      .split(s, so, si, keyTile, TailStrategy::RoundUp)
      .reorder(si, h, t, so)
      .unroll(si);
  // lanes × keyTile accumulators, one q chunk reused by keyTile keys.
  f.dotPart.compute_at(f.scores, h).vectorize(j).unroll(s);
  Stage dotUpdate = f.dotPart.update().reorder(j, s, f.ro, t).vectorize(j).unroll(s);
  if (dK / f.lanes <= kMaxUnrolledVectors)
    dotUpdate.unroll(f.ro);
  f.dot.compute_at(f.scores, h).unroll(s);
  Stage dotSum = f.dot.update().reorder(f.rl, s, t).unroll(s);
  if (f.lanes > 1)
    dotSum.atomic().vectorize(f.rl);
  if (spec.rope != AttentionKernelSpec::Rope::None) // the task's rotated query rows, once
    f.query.compute_at(f.range, rangeTask).vectorize(c, vw, TailStrategy::GuardWithIf);
  else
    f.query.compute_inline();
  if (spec.rope != AttentionKernelSpec::Rope::None && spec.ropeKeys)
    // without a cache: Mz = M <= kSmallQueryRows keys
    f.keys.compute_at(f.range, rangeTask).vectorize(c, vw, TailStrategy::GuardWithIf);
  else
    f.keys.compute_inline();
  f.max.compute_at(f.range, rangeTask);
  f.probs.compute_at(f.range, rangeTask).vectorize(s, vw, TailStrategy::GuardWithIf);
  f.sum.compute_at(f.range, rangeTask);
  // Per query row: the accumulators of the K/V head's query heads (dV·group floats, a
  // constant size), which with d and h unrolled stay in registers.
  f.output.compute_at(f.range, t).vectorize(d, vw, TailStrategy::GuardWithIf);
  Stage outputUpdate =
      f.output.update().reorder(d, h, f.rs, t, p).vectorize(d, vw, TailStrategy::GuardWithIf);
  if (narrowValues) {
    f.output.unroll(d);
    outputUpdate.unroll(d);
    // The group's accumulators in registers when they take at most half of them (AVX-512:
    // SmolLM2's 3 heads of 64 floats are 12 of 32; AVX2 keeps the loop over heads).
    const int vectorRegisters = target.has_feature(Target::AVX512) ? 32 : 16;
    if (group * ((dV + vw - 1) / vw) <= vectorRegisters / 2) {
      f.output.unroll(h);
      outputUpdate.unroll(h);
    }
  }
  decodeStage.split(c, head, col, dV)
      .reorder(col, t, head)
      .vectorize(col, vw, TailStrategy::GuardWithIf);
  f.top.compute_at(out, head);
  f.merged.compute_at(out, head).vectorize(d, vw, TailStrategy::GuardWithIf);
  f.merged.update().reorder(d, t, f.rp).vectorize(d, vw, TailStrategy::GuardWithIf);
}

} // namespace mlir::xf
