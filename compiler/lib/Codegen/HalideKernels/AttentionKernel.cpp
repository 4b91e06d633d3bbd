//===- AttentionKernel.cpp - Flash-style attention as a Halide pipeline ---===//
//
// out[t, h·dV + d] = Σ_s softmax_s(scale · q[t, h]·k[s, g] | mask) · v[s, g·dV + d]
// for every head h, with M queries and Mz keys both dynamic. Causal masking
// lets query t see key s iff s <= t + (Mz - M). K and V have H_kv heads
// (grouped-query attention; H_kv = H for plain MHA): query head h reads
// key/value head g = h / (H / H_kv).
//
// The scores are never materialised beyond one queryBlock × keyBlock tile.
// Per (head, query block), a parallel task streams the key blocks and keeps
// for each query a running (output, max, sum) state, merged block by block
// (online softmax):
//   per key block b:  m_b = max_s score,  p_s = exp(score_s - m_b),
//                     l_b = Σ p_s,  o_b = Σ p_s · v_s
//   merge:            m' = max(m, m_b),  o' = o·e^(m-m') + o_b·e^(m_b-m'),
//                     l' = l·e^(m-m') + l_b·e^(m_b-m')
//   out = o / l.
// Every exponent is <= 0, so nothing overflows. Masked keys get probability
// exactly 0, and in causal mode key blocks wholly in a query block's future
// are skipped. K is transposed once per call (keys contiguous) so the score
// tile is a register-blocked outer product like the GEMM's.
//
// With rotary positions (spec.rope), Q and K rows are rotated as they are
// loaded: the rotated query block is computed once per task (once per head
// on the decode path) and K is rotated while it is transposed. Query row t
// is at position t + (Mz - M), key s at s; one table of the f32 cosine and
// sine of each (pair, position), computed in f64 like the rope loop kernel
// (positions reach thousands of radians), serves both. With ropeKeys false
// the keys arrive rotated (the KV cache; LowerToHost.cpp rotates each new
// key row while copying it into the cache).
//
// K and V are 3-D, (column, key, K/V head), with any row and head strides:
// a column slice of the fused QKV activation (heads side by side in a row)
// or a KV cache slot (each head's rows contiguous, [H_kv][positions][d]).
// A half KV cache (spec.halfKeyValues) holds them as IEEE float16: every
// read widens them to float32 in registers, the arithmetic stays float32.
//
// M <= kSmallQueryRows (KV-cache decoding, M = 1) takes a second path,
// selected at run time by a specialization: parallel over (K/V head, key
// range) tasks, each an exact two-pass softmax over its keys for all the
// query heads that share the K/V head (K read untransposed: vectorised dot
// products over dK; P·V accumulated in vector registers over dV), then the
// ranges' (output, max, sum) merged as in the online softmax above. Same
// masking rule, same float32 arithmetic up to summation order.
//
//===----------------------------------------------------------------------===//

#include "BlockWeights.h"
#include "KernelPipelines.h"

#include <cmath>
#include <functional>
#include <optional>

using namespace Halide;

namespace mlir::xf {
namespace {

llvm::Error invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error validateAttention(const AttentionKernelSpec &spec) {
  if (spec.name.empty())
    return invalid("attention kernel: empty function name");
  if (spec.heads <= 0 || spec.dK <= 0 || spec.dV <= 0)
    return invalid("attention kernel '" + spec.name + "': heads, dK and dV must be positive");
  if (spec.kvHeads < 0 || spec.heads % spec.keyValueHeads() != 0)
    return invalid("attention kernel '" + spec.name + "': kvHeads must divide heads");
  const AttentionSchedule &s = spec.schedule;
  if (s.queryBlock <= 0 || s.keyBlock <= 0 || s.rowTile <= 0 || s.decodeKeyTile <= 0)
    return invalid("attention kernel '" + spec.name +
                   "': queryBlock, keyBlock, rowTile and decodeKeyTile must be positive");
  if (!(spec.scale > 0) && !(spec.scale < 0))
    return invalid("attention kernel '" + spec.name + "': scale must be a nonzero number");
  if (spec.rope != AttentionKernelSpec::Rope::None && (spec.dK % 2 != 0 || !(spec.ropeBase > 1.0)))
    return invalid("attention kernel '" + spec.name +
                   "': rotary positions need an even dK and a base greater than 1");
  return llvm::Error::success();
}

// A finite stand-in for -inf: differences of two such values are 0, not NaN.
constexpr float kNoScore = -1e30f;
// M up to this takes the decode path (KV-cache decoding: M = 1).
constexpr int kSmallQueryRows = 4;
// Loops over a head's width are unrolled only up to this many vectors. Wider heads keep the
// loop: unrolled, the code (and Halide's compile time and recursion depth) grew with d_k and
// d_v — a 13377-wide head overflowed the stack in Halide's simplifier, and 1024-wide heads
// took seconds to compile. Every real model's head (64..256 floats) stays fully unrolled.
constexpr int kMaxUnrolledVectors = 16;

// Decode path: a key range has at least this many keys, so short contexts stay one range.
constexpr int kMinDecodeKeyRange = 32;

/// Key ranges per K/V head on the decode path (at most; fewer when the context is short):
/// enough that the H_kv·S tasks are at least 4 and even, so that 2 threads take equal shares
/// (SmolLM2's 3 K/V heads: 6 tasks; GPT-2's 12: 12); at most 8. Fewer, longer tasks: each
/// task rotates its query rows and merges one more range, and at 160-250 positions SmolLM2's
/// q8 decode step took 2.39-2.45 ms with 12 tasks against 2.32-2.39 with 6 (Zen 5, 2 threads).
int decodeKeyRanges(int kvHeads) {
  for (int s = 1; s < 8; ++s)
    if (kvHeads * s >= 4 && kvHeads * s % 2 == 0)
      return s;
  return 8;
}

/// K and V as stored: float32, or IEEE float16 in a half KV cache (spec.halfKeyValues).
Type keyValueType(const AttentionKernelSpec &spec) {
  return spec.halfKeyValues ? Float(16) : Float(32);
}

/// A stored K or V element as float32: widened in registers from float16 (one vcvtph2ps per
/// vector with F16C, integer operations without it).
Expr keyValueAsFloat(const AttentionKernelSpec &spec, const Target &target, Expr stored) {
  if (!spec.halfKeyValues)
    return stored;
  return floatFromHalfBits(reinterpret<uint16_t>(stored),
                           target.arch == Target::X86 && target.has_feature(Target::F16C));
}

llvm::Expected<KernelPipeline> buildAttention(const AttentionKernelSpec &spec,
                                              const Target &target) {
  llvm::Expected<AttentionShape> shape = attentionShapeOf(spec, target);
  if (!shape)
    return shape.takeError();
  const int vw = shape->vw, H = shape->H, Hkv = shape->Hkv, group = shape->group;
  const int dK = shape->dK, dV = shape->dV;
  const float scale = shape->scale;
  const int queryBlock = int(spec.schedule.queryBlock), keyBlock = int(spec.schedule.keyBlock);

  ImageParam q(Float(32), 2, "q"); // (h·dK + c, t): [M, H·dK]
  // (c, s, g): K/V head g's key s, [H_kv][Mz][dK] by index; float16 in a half KV cache.
  ImageParam k(keyValueType(spec), 3, "k");
  ImageParam v(keyValueType(spec), 3, "v"); // (d, s, g)
  auto keyValue = [&](Expr stored) { return keyValueAsFloat(spec, target, stored); };
  Expr queries = q.dim(1).extent(), keys = k.dim(1).extent();
  Expr keyBlocks = (keys + keyBlock - 1) / keyBlock;
  Var c("c"), d("d"), s("s"), t("t"), h("h"), j("j"), b("b");

  // ---- Rotary positions (spec.rope) ------------------------------------
  const bool rope = spec.rope != AttentionKernelSpec::Rope::None;
  const bool ropeKeys = rope && spec.ropeKeys;
  Var pair("pair"), position("position");
  Func rotary("rotary_table"); // (cos, sin) of θ_i = position · base^(−2i/dK)
  if (rope) {
    Expr angle = cast<double>(position) *
                 exp(cast<double>(pair) *
                     Internal::make_const(Float(64), -2.0 * std::log(spec.ropeBase) / double(dK)));
    rotary(pair, position) = Tuple(cast<float>(cos(angle)), cast<float>(sin(angle)));
  }
  // Element f of a head (load(x): the head's element x), rotated at `at`:
  // the pair (2i, 2i+1) (adjacent) or (i, i + dK/2) (halves) turns by θ_i.
  auto rotated = [&](const std::function<Expr(Expr)> &load, Expr f, Expr at) -> Expr {
    Expr i, first, a, bb;
    if (spec.rope == AttentionKernelSpec::Rope::Adjacent) {
      i = f / 2, first = f % 2 == 0;
      a = load(2 * i), bb = load(2 * i + 1);
    } else {
      i = f % (dK / 2), first = f < dK / 2;
      a = load(i), bb = load(i + dK / 2);
    }
    Expr cosine = rotary(i, at)[0], sine = rotary(i, at)[1];
    return select(first, a * cosine - bb * sine, a * sine + bb * cosine);
  };
  // Q and K elements as the attention uses them (rows clamped by the caller).
  auto queryAt = [&](Expr col, Expr row) -> Expr {
    if (!rope)
      return q(col, row);
    Expr headStart = (col / dK) * dK;
    return rotated([&](Expr x) { return q(headStart + x, row); }, col % dK, row + (keys - queries));
  };
  auto keyAt = [&](Expr c, Expr row, Expr kvHead) -> Expr {
    if (!ropeKeys)
      return keyValue(k(c, row, kvHead));
    return rotated([&](Expr x) { return keyValue(k(x, row, kvHead)); }, c, row);
  };

  // ---- Algorithm -------------------------------------------------------
  // Keys transposed, [H_kv, dK, Mz] with keys contiguous; padded to whole key
  // blocks by repeating key Mz-1 (its probability is masked to 0).
  Func keysT("keys_transposed");
  keysT(s, c, h) = keyAt(c, clamp(s, 0, keys - 1), h); // h: a K/V head here
  auto kvHead = [&](Expr queryHead) { return queryHead / group; };

  // Raw scores of one tile: scores(j, t, h, b) = q[t, h]·k[b·keyBlock + j, h].
  // Query rows past M (a query block's tail, once the parallel loop fuses
  // heads and query blocks) repeat row M-1; they are never stored.
  Func queryRows("query_rows");
  queryRows(c, t) = queryAt(c, clamp(t, 0, queries - 1));
  RDom rc(0, dK, "rc");
  Func scoreDot("score_dot");
  scoreDot(j, t, h, b) = 0.f;
  scoreDot(j, t, h, b) += queryRows(h * dK + rc, t) * keysT(b * keyBlock + j, rc, kvHead(h));
  Func scores("scores");
  scores(j, t, h, b) = scoreDot(j, t, h, b);

  auto visible = [&](Expr key, Expr query) {
    Expr ok = key < keys;
    if (spec.causal)
      ok = ok && key <= query + (keys - queries);
    return ok;
  };
  Func maskedScores("masked_scores");
  maskedScores(j, t, h, b) =
      select(visible(b * keyBlock + j, t), scores(j, t, h, b) * scale, kNoScore);

  RDom rj(0, keyBlock, "rj");
  Func blockMax("block_max");
  blockMax(t, h, b) = kNoScore;
  blockMax(t, h, b) = max(blockMax(t, h, b), maskedScores(rj, t, h, b));
  Func probs("block_probs"); // exp(score - block max), exactly 0 where masked
  probs(j, t, h, b) =
      select(visible(b * keyBlock + j, t), exp(maskedScores(j, t, h, b) - blockMax(t, h, b)), 0.f);
  Func blockSum("block_sum");
  blockSum(t, h, b) = 0.f;
  blockSum(t, h, b) += probs(rj, t, h, b);
  Func blockOutDot("block_out_dot"); // Σ_s p_s · v_s over the block, unnormalised
  blockOutDot(d, t, h, b) = 0.f;
  blockOutDot(d, t, h, b) +=
      probs(rj, t, h, b) * keyValue(v(d, clamp(b * keyBlock + rj, 0, keys - 1), kvHead(h)));
  Func blockOut("block_out");
  blockOut(d, t, h, b) = blockOutDot(d, t, h, b);

  // Running (output, max, sum) per query, one copy of max and sum per output
  // column d so that the update stays pure in d.
  RDom rb(0, keyBlocks, "rb");
  if (spec.causal) {
    // Skip key blocks after the last key visible to the query block of t.
    Expr lastQueryOfBlock = (t / queryBlock) * queryBlock + (queryBlock - 1);
    rb.where(rb * keyBlock <= lastQueryOfBlock + (keys - queries));
  }
  Func state("softmax_state");
  state(d, t, h) = Tuple(0.f, kNoScore, 0.f);
  {
    Expr oldOut = state(d, t, h)[0], oldMax = state(d, t, h)[1], oldSum = state(d, t, h)[2];
    Expr blockM = blockMax(t, h, rb), newMax = max(oldMax, blockM);
    // One of e^(m - m') and e^(m_b - m') is e^0 = 1: one exp per update, not
    // two (the same values). The update runs per vector of d, so this exp
    // is as frequent as the block's probabilities' own.
    Expr oldIsMax = oldMax >= blockM, other = exp(min(oldMax, blockM) - newMax);
    Expr keepOld = select(oldIsMax, 1.f, other), keepBlock = select(oldIsMax, other, 1.f);
    state(d, t, h) = Tuple(oldOut * keepOld + blockOut(d, t, h, rb) * keepBlock, newMax,
                           oldSum * keepOld + blockSum(t, h, rb) * keepBlock);
  }

  // ---- Decode path (M <= kSmallQueryRows) ------------------------------
  // KV-cache decoding has one query row: the query-block tiles above would
  // be almost all padding and the K transpose would cost as much as the
  // attention itself. The keys are cut into `ranges` ranges of `range` keys;
  // per (query head, range): an exact two-pass softmax over the range's
  // keys, with K read in its natural layout (each key's dK values
  // contiguous), the dot products as `lanes` vector partial sums then a
  // horizontal add, and P·V accumulated in vector registers over d. The
  // ranges' (output, max, sum) are then merged as the flash state is (with
  // one range: weight e^0 = 1, the same values).
  const int lanes = dK % vw == 0 ? vw : 1;
  Expr ranges =
      clamp((keys + kMinDecodeKeyRange - 1) / kMinDecodeKeyRange, 1, decodeKeyRanges(Hkv));
  Expr range = (keys + ranges - 1) / ranges;
  Var p("p");                                                  // a key range
  Func decodeQuery("decode_query"), decodeKeys("decode_keys"); // rotated, if rope
  decodeQuery(c, t) = queryAt(c, t);
  decodeKeys(c, s, h) = keyAt(c, clamp(s, 0, keys - 1), h); // h: a K/V head here
  Func dotPart("decode_dot_part"); // dotPart(l, s, t, h, p) = Σ_o q[t, h, o·lanes + l]·k[...]
  RDom ro(0, dK / lanes, "ro");
  dotPart(j, s, t, h, p) = 0.f;
  dotPart(j, s, t, h, p) += decodeQuery(h * dK + ro * lanes + j, t) *
                            decodeKeys(ro * lanes + j, p * range + s, kvHead(h));
  Func decodeDot("decode_dot"); // the lanes' sum: a vector reduction (a tree of shuffles)
  RDom rl(0, lanes, "rl");
  decodeDot(s, t, h, p) = 0.f;
  decodeDot(s, t, h, p) += dotPart(rl, s, t, h, p);
  Func decodeScores("decode_scores"); // key p·range + s
  decodeScores(s, t, h, p) =
      select(visible(p * range + s, t), decodeDot(s, t, h, p) * scale, kNoScore);
  RDom rs(0, range, "rs");
  Func decodeMax("decode_max");
  decodeMax(t, h, p) = kNoScore;
  decodeMax(t, h, p) = max(decodeMax(t, h, p), decodeScores(rs, t, h, p));
  Func decodeProbs("decode_probs");
  decodeProbs(s, t, h, p) =
      select(visible(p * range + s, t), exp(decodeScores(s, t, h, p) - decodeMax(t, h, p)), 0.f);
  Func decodeSum("decode_sum");
  decodeSum(t, h, p) = 0.f;
  decodeSum(t, h, p) += decodeProbs(rs, t, h, p);
  Func decodeOut("decode_out"); // unnormalised Σ_s p_s · v_s over the range
  decodeOut(d, t, h, p) = 0.f;
  decodeOut(d, t, h, p) +=
      decodeProbs(rs, t, h, p) * keyValue(v(d, clamp(p * range + rs, 0, keys - 1), kvHead(h)));
  Func decodeRange("decode_range"); // (output, max, sum) of a range
  decodeRange(d, t, h, p) = Tuple(decodeOut(d, t, h, p), decodeMax(t, h, p), decodeSum(t, h, p));
  RDom rp(0, ranges, "rp");
  Func decodeTop("decode_top"); // the largest range max
  decodeTop(t, h) = kNoScore;
  decodeTop(t, h) = max(decodeTop(t, h), decodeRange(0, t, h, rp)[1]);
  Func decodeMerged("decode_merged"); // (Σ output·w, Σ sum·w), w = e^(range max − top)
  decodeMerged(d, t, h) = Tuple(0.f, 0.f);
  {
    Expr w = exp(decodeRange(d, t, h, rp)[1] - decodeTop(t, h));
    decodeMerged(d, t, h) = Tuple(decodeMerged(d, t, h)[0] + decodeRange(d, t, h, rp)[0] * w,
                                  decodeMerged(d, t, h)[1] + decodeRange(d, t, h, rp)[2] * w);
  }

  Func out("attention_out");
  Expr decode = queries <= kSmallQueryRows;
  {
    Expr head = c / dV, column = c % dV;
    Expr sum = state(column, t, head)[2];
    Expr decodeTotal = decodeMerged(column, t, head)[1];
    out(c, t) = select(
        decode, select(decodeTotal > 0.f, decodeMerged(column, t, head)[0] / decodeTotal, 0.f),
        select(sum > 0.f, state(column, t, head)[0] / sum, 0.f));
  }

  // ---- Buffer shapes (docs/abi.md) --------------------------------------
  q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  k.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
  v.dim(0).set_bounds(0, dV).set_stride(1).dim(1).set_bounds(0, keys).dim(2).set_bounds(0, Hkv);
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, queries);

  // ---- Schedule ----------------------------------------------------------
  Var task("task"), tq("tq"), ti("ti"), dj("dj");
  const bool narrowValues = (dV + vw - 1) / vw <= kMaxUnrolledVectors;
  {
    // Decode: the ranges in parallel, one task per (K/V head, key range)
    // computing all `group` query heads that share the K/V head, both
    // products with those heads inside the loop over keys: each key's K and
    // V row is read from memory once per task, by one thread (the query
    // heads after the first find it in L1). A cache slot keeps each head's
    // rows contiguous, so a task streams one contiguous stretch of K and one
    // of V (with heads side by side in a row it read dK of every H_kv·dK
    // floats at a stride, which the prefetchers followed poorly: a decode
    // step's attention read the cache at ~6 GB/s). Then, serially, the merge
    // of the ranges per query head. The condition is a fact inside the
    // specialization, so its select keeps only the decode Funcs (and the
    // general branch only the flash-style ones, K transpose included).
    Var kvh("decode_kv_head"), hi("decode_head"), rangeTask("decode_task");
    Var head("decode_out_head"), col("decode_col"), so("so"), si("si");
    const int keyTile = int(spec.schedule.decodeKeyTile); // keys per dot-product register block
    decodeRange.compute_root()
        .split(h, kvh, hi, group)
        .reorder(d, hi, t, p, kvh)
        .fuse(p, kvh, rangeTask)
        .parallel(rangeTask)
        .vectorize(d, vw, TailStrategy::GuardWithIf);
    decodeScores.compute_at(decodeRange, rangeTask)
        .split(s, so, si, keyTile, TailStrategy::RoundUp)
        .reorder(si, h, t, so)
        .unroll(si);
    // lanes × keyTile accumulators, one q chunk reused by keyTile keys.
    dotPart.compute_at(decodeScores, h).vectorize(j).unroll(s);
    Stage dotUpdate = dotPart.update().reorder(j, s, ro, t).vectorize(j).unroll(s);
    if (dK / lanes <= kMaxUnrolledVectors)
      dotUpdate.unroll(ro);
    decodeDot.compute_at(decodeScores, h).unroll(s);
    Stage dotSum = decodeDot.update().reorder(rl, s, t).unroll(s);
    if (lanes > 1)
      dotSum.atomic().vectorize(rl);
    if (rope) // the task's rotated query rows, once
      decodeQuery.compute_at(decodeRange, rangeTask).vectorize(c, vw, TailStrategy::GuardWithIf);
    else
      decodeQuery.compute_inline();
    if (ropeKeys) // without a cache: Mz = M <= kSmallQueryRows keys
      decodeKeys.compute_at(decodeRange, rangeTask).vectorize(c, vw, TailStrategy::GuardWithIf);
    else
      decodeKeys.compute_inline();
    decodeMax.compute_at(decodeRange, rangeTask);
    decodeProbs.compute_at(decodeRange, rangeTask).vectorize(s, vw, TailStrategy::GuardWithIf);
    decodeSum.compute_at(decodeRange, rangeTask);
    // Per query row: the accumulators of the K/V head's query heads (dV·group floats, a
    // constant size), which with d and h unrolled stay in registers.
    decodeOut.compute_at(decodeRange, t).vectorize(d, vw, TailStrategy::GuardWithIf);
    Stage decodeOutUpdate =
        decodeOut.update().reorder(d, h, rs, t, p).vectorize(d, vw, TailStrategy::GuardWithIf);
    if (narrowValues) {
      decodeOut.unroll(d);
      decodeOutUpdate.unroll(d);
      // The group's accumulators in registers when they take at most half of them (AVX-512:
      // SmolLM2's 3 heads of 64 floats are 12 of 32; AVX2 keeps the loop over heads).
      const int vectorRegisters = target.has_feature(Target::AVX512) ? 32 : 16;
      if (group * ((dV + vw - 1) / vw) <= vectorRegisters / 2) {
        decodeOut.unroll(h);
        decodeOutUpdate.unroll(h);
      }
    }
    Stage decodeStage = out.specialize(decode);
    decodeStage.split(c, head, col, dV)
        .reorder(col, t, head)
        .vectorize(col, vw, TailStrategy::GuardWithIf);
    decodeTop.compute_at(out, head);
    decodeMerged.compute_at(out, head).vectorize(d, vw, TailStrategy::GuardWithIf);
    decodeMerged.update().reorder(d, t, rp).vectorize(d, vw, TailStrategy::GuardWithIf);
  }
  const int rowTile = int(spec.schedule.rowTile); // query rows per register tile
  out.split(c, h, d, dV)
      .split(t, tq, ti, queryBlock, TailStrategy::GuardWithIf)
      .reorder(d, ti, h, tq)
      .fuse(h, tq, task)
      .parallel(task)
      .vectorize(d, vw, TailStrategy::GuardWithIf);

  keysT.compute_root().parallel(h).vectorize(s, vw, TailStrategy::GuardWithIf);

  state.compute_at(out, task).vectorize(d, vw, TailStrategy::GuardWithIf);
  scheduleKeyBlock(
      {state, scores, scoreDot, maskedScores, blockMax, probs, blockSum, blockOut, blockOutDot}, rb,
      t, j, d, rc, rj, vw, rowTile, keyBlock, dV);
  if (rope) { // the task's rotated query rows, once (not once per key block)
    queryRows.compute_at(out, task).vectorize(c, vw, TailStrategy::GuardWithIf);
    rotary.compute_root();
  } else {
    queryRows.compute_inline();
  }

  KernelPipeline result;
  result.inputs = {q, k, v};
  result.output = out;
  result.pipeline = Pipeline(out);
  return result;
}

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
    return invalid("attention kernel '" + spec.name +
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
  Var pair("pair"), position("position");
  Func rotary("rotary_table");
  Func query("batched_query"); // rotated at the query's position, if rope
  if (rope) {
    Expr angle = cast<double>(position) *
                 exp(cast<double>(pair) *
                     Internal::make_const(Float(64), -2.0 * std::log(spec.ropeBase) / double(dK)));
    rotary(pair, position) = Tuple(cast<float>(cos(angle)), cast<float>(sin(angle)));
    Expr headStart = (c / dK) * dK, f = c % dK, p, first, a, b;
    if (spec.rope == AttentionKernelSpec::Rope::Adjacent) {
      p = f / 2, first = f % 2 == 0;
      a = q(headStart + 2 * p, i), b = q(headStart + 2 * p + 1, i);
    } else {
      p = f % (dK / 2), first = f < dK / 2;
      a = q(headStart + p, i), b = q(headStart + p + dK / 2, i);
    }
    Expr cosine = rotary(p, start)[0], sine = rotary(p, start)[1];
    query(c, i) = select(first, a * cosine - b * sine, a * sine + b * cosine);
  } else {
    query(c, i) = q(c, i);
  }
  auto kvHead = [&](Expr queryHead) { return queryHead / group; };
  Expr key = clamp(s, 0, positions - 1);

  const int lanes = dK % vw == 0 ? vw : 1;
  RDom ro(0, dK / lanes, "ro");
  Func dotPart("batched_dot_part");
  dotPart(j, s, i, h) = 0.f;
  dotPart(j, s, i, h) +=
      query(h * dK + ro * lanes + j, i) * keyValue(kCache(ro * lanes + j, key, kvHead(h), slot));
  Func scores("batched_scores");
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
  Func maxScore("batched_max");
  maxScore(i, h) = kNoScore;
  maxScore(i, h) = max(maxScore(i, h), scores(rs, i, h));
  Func probs("batched_probs");
  probs(s, i, h) = select(s < keyCount, exp(scores(s, i, h) - maxScore(i, h)), 0.f);
  Func sum("batched_sum");
  sum(i, h) = 0.f;
  sum(i, h) += probs(rs, i, h);
  Func weighted("batched_out"); // unnormalised Σ_s p_s · v_s
  weighted(d, i, h) = 0.f;
  weighted(d, i, h) +=
      probs(rs, i, h) * keyValue(vCache(d, clamp(rs, 0, positions - 1), kvHead(h), slot));
  Func out("attention_batched_out");
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
    rotary.compute_at(out, task);
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

llvm::Expected<AttentionShape> attentionShapeOf(const AttentionKernelSpec &spec,
                                                const Target &target) {
  if (llvm::Error err = validateAttention(spec))
    return std::move(err);
  const int vw = target.natural_vector_size<float>();
  const int H = int(spec.heads), Hkv = int(spec.keyValueHeads());
  return AttentionShape{vw, H, Hkv, H / Hkv, int(spec.dK), int(spec.dV), float(spec.scale)};
}

void scheduleKeyBlock(KeyBlockStages s, RVar rb, Var row, Var j, Var d, RVar rc, RVar rj, int vw,
                      int rowTile, int keyBlock, int dV) {
  const bool narrowValues = (dV + vw - 1) / vw <= kMaxUnrolledVectors;
  s.state.update().reorder(d, row, rb).vectorize(d, vw, TailStrategy::GuardWithIf);
  // Per key block: the score tile, its max, probabilities, sum and P·V. The
  // two products are register-blocked: rowTile query rows × a vector-wide
  // block of columns accumulate in registers (a Func computed per row tile).
  Var to("to");
  s.scores.compute_at(s.state, rb)
      .split(row, to, row, rowTile, TailStrategy::RoundUp)
      .reorder(j, row, to)
      .vectorize(j, vw, TailStrategy::GuardWithIf);
  s.scoreDot.compute_at(s.scores, to)
      .vectorize(j, vw, TailStrategy::GuardWithIf)
      .unroll(j)
      .unroll(row);
  s.scoreDot.update()
      .reorder(j, row, rc)
      .vectorize(j, vw, TailStrategy::GuardWithIf)
      .unroll(j)
      .unroll(row);
  s.maskedScores.compute_inline();
  // The row max and sum over a key block as vector reductions (a tree over
  // the block's vectors, then one horizontal step): as scalar loops they were
  // a chain of keyBlock dependent max (add) operations per query row, which
  // took about as long as the tile's vectorized Q·Kᵀ. Blocks wider than
  // kMaxUnrolledVectors vectors reduce one vector at a time.
  s.blockMax.compute_at(s.state, rb);
  s.probs.compute_at(s.state, rb).vectorize(j, vw, TailStrategy::GuardWithIf);
  s.blockSum.compute_at(s.state, rb);
  for (Func f : {s.blockMax, s.blockSum}) {
    if (keyBlock <= kMaxUnrolledVectors * vw) {
      f.update().atomic().vectorize(rj);
    } else if (keyBlock % vw == 0) {
      RVar rjOuter("rj_o"), rjInner("rj_i");
      f.update().atomic().split(rj, rjOuter, rjInner, vw).vectorize(rjInner);
    }
  }
  s.blockOut.compute_at(s.state, rb)
      .split(row, to, row, rowTile, TailStrategy::RoundUp)
      .reorder(d, row, to)
      .vectorize(d, vw, TailStrategy::GuardWithIf);
  s.blockOutDot.compute_at(s.blockOut, to).vectorize(d, vw, TailStrategy::GuardWithIf).unroll(row);
  Stage blockOutUpdate = s.blockOutDot.update()
                             .reorder(d, row, rj)
                             .vectorize(d, vw, TailStrategy::GuardWithIf)
                             .unroll(row);
  if (narrowValues) {
    s.blockOutDot.unroll(d);
    blockOutUpdate.unroll(d);
  }
}

llvm::Expected<KernelPipeline> buildAttentionBatchedPipeline(const AttentionKernelSpec &spec,
                                                             const Target &target) {
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err =
          catchHalideErrors("scheduling the batched decode of attention kernel '" + spec.name +
                                "'",
                            [&] { built.emplace(buildBatchedDecode(spec, target)); }))
    return std::move(err);
  return std::move(*built);
}

llvm::Expected<KernelPipeline> buildAttentionPipeline(const AttentionKernelSpec &spec,
                                                      const Target &target) {
  if (spec.segmented)
    return buildSegmentedAttentionPipeline(spec, target);
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err = catchHalideErrors("scheduling attention kernel '" + spec.name + "'",
                                          [&] { built.emplace(buildAttention(spec, target)); }))
    return std::move(err);
  return std::move(*built);
}

} // namespace mlir::xf
