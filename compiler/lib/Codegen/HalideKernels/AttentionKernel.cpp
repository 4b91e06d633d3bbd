//===- AttentionKernel.cpp - Flash-style attention as a Halide pipeline ---===//
//
// out[t, h·dV + d] = Σ_s softmax_s(scale · q[t, h]·k[s, g] | mask) · v[s, g·dV + d]
// for every head h, with M queries and Mz keys both dynamic. Causal masking
// lets query t see key s iff s <= t + (Mz - M). K and V have H_kv heads
// (grouped-query attention; H_kv = H for plain MHA): query head h reads
// key/value head g = h / (H / H_kv).
//
// The online softmax over key blocks of AttentionAlgorithm.cpp, on the CPU:
// per (head, query block) a parallel task streams the key blocks; in causal
// mode key blocks wholly in a query block's future are skipped. K is
// transposed once per call (keys contiguous) so the score tile is a
// register-blocked outer product like the GEMM's (AttentionKeyBlockSchedule.cpp).
//
// With rotary positions (spec.rope), Q and K rows are rotated as they are
// loaded: the rotated query block is computed once per task (once per head
// on the decode path) and K is rotated while it is transposed. Query row t
// is at position t + (Mz - M), key s at s; one rotary table serves both.
// With ropeKeys false the keys arrive rotated (the KV cache; LowerToHost.cpp
// rotates each new key row while copying it into the cache).
//
// K and V are 3-D, (column, key, K/V head), with any row and head strides:
// a column slice of the fused QKV activation (heads side by side in a row)
// or a KV cache slot (each head's rows contiguous, [H_kv][positions][d]).
// A half KV cache (spec.halfKeyValues) holds them as IEEE float16: every
// read widens them to float32 in registers, the arithmetic stays float32.
//
// M <= kSmallQueryRows (KV-cache decoding, M = 1) takes a second path,
// selected at run time by a specialization (AttentionDecodePath.cpp).
//
//===----------------------------------------------------------------------===//

#include "AttentionAlgorithm.h"
#include "AttentionDecodePath.h"


using namespace Halide;

namespace mlir::xf {

AttentionOperands attentionOperandsOf(const AttentionKernelSpec &spec, const AttentionShape &shape,
                                      const Target &target, bool rotaryByParts) {
  AttentionOperands a{ImageParam(Float(32), 2, "q"), ImageParam(keyValueType(spec), 3, "k"),
                      ImageParam(keyValueType(spec), 3, "v")};
  a.scale = shape.scale, a.group = shape.group;
  a.queries = a.q.dim(1).extent(), a.keys = a.k.dim(1).extent();
  a.rotary = rotaryPositionsOf(spec, rotaryByParts);
  const AttentionKernelSpec specCopy = spec;
  auto keyValue = [specCopy, target](Expr stored) {
    return keyValueAsFloat(specCopy, target, stored);
  };
  a.keyValue = keyValue;
  const bool rope = spec.rope != AttentionKernelSpec::Rope::None;
  const bool ropeKeys = rope && spec.ropeKeys, causal = spec.causal;
  const int dK = shape.dK;
  ImageParam q = a.q, k = a.k;
  Expr queries = a.queries, keys = a.keys;
  RotaryPositions rotary = a.rotary;
  a.queryAt = [=](Expr col, Expr row) -> Expr {
    if (!rope)
      return q(col, row);
    Expr headStart = (col / dK) * dK;
    return rotary.rotated([&](Expr x) { return q(headStart + x, row); }, col % dK,
                          row + (keys - queries));
  };
  a.keyAt = [=](Expr c, Expr row, Expr kvHead) -> Expr {
    if (!ropeKeys)
      return keyValue(k(c, row, kvHead));
    return rotary.rotated([&](Expr x) { return keyValue(k(x, row, kvHead)); }, c, row);
  };
  a.visible = [=](Expr key, Expr query) {
    Expr ok = key < keys;
    if (causal)
      ok = ok && key <= query + (keys - queries);
    return ok;
  };
  return a;
}

namespace {

/// The per-sequence flash attention: its inputs, the online softmax and the
/// Funcs around it (rotated query rows, transposed keys).
struct SequenceFlash {
  AttentionOperands operands;
  Func keysT = kernelFunc("keys_transposed"), queryRows = kernelFunc("query_rows");
  OnlineSoftmax softmax;
  RDom rc, rj, rb;
};

/// Defines the flash attention of `spec` over `a`'s buffers.
SequenceFlash defineFlash(const AttentionKernelSpec &spec, const AttentionOperands &a) {
  SequenceFlash f{a};
  const int keyBlock = int(spec.schedule.keyBlock), dK = int(spec.dK);
  const Var &c = a.c, &s = a.s, &t = a.t, &h = a.h, &j = a.j, &b = a.b, &d = a.d;
  // Keys transposed, [H_kv, dK, Mz] with keys contiguous; padded to whole key
  // blocks by repeating key Mz-1 (its probability is masked to 0).
  f.keysT(s, c, h) = a.keyAt(c, clamp(s, 0, a.keys - 1), h); // h: a K/V head here

  // Raw scores of one tile: scores(j, t, h, b) = q[t, h]·k[b·keyBlock + j, h].
  // Query rows past M (a query block's tail, once the parallel loop fuses
  // heads and query blocks) repeat row M-1; they are never stored.
  f.queryRows(c, t) = a.queryAt(c, clamp(t, 0, a.queries - 1));
  f.rc = RDom(0, dK, "rc");
  f.rj = RDom(0, keyBlock, "rj");
  f.rb = RDom(0, (a.keys + keyBlock - 1) / keyBlock, "rb");
  if (spec.causal) {
    // Skip key blocks after the last key visible to the query block of t.
    const int queryBlock = int(spec.schedule.queryBlock);
    Expr lastQueryOfBlock = (t / queryBlock) * queryBlock + (queryBlock - 1);
    f.rb.where(f.rb * keyBlock <= lastQueryOfBlock + (a.keys - a.queries));
  }
  Func keysT = f.keysT, queryRows = f.queryRows;
  RDom rc = f.rc;
  OnlineSoftmaxOperands o{{t, h}, j, d, b, f.rj, f.rb, a.scale};
  o.scoreTerm = [=](Expr key, Expr block) {
    return queryRows(h * dK + rc, t) * keysT(block * keyBlock + key, rc, a.kvHead(h));
  };
  o.visible = [=](Expr key, Expr block) { return a.visible(block * keyBlock + key, t); };
  o.value = [=](Expr key, Expr block) {
    return a.keyValue(a.v(d, clamp(block * keyBlock + key, 0, a.keys - 1), a.kvHead(h)));
  };
  f.softmax = defineOnlineSoftmax(o);
  return f;
}

/// The CPU schedule of the flash attention: one parallel task per (head,
/// query block), K transposed once per call, the key blocks register-blocked.
void scheduleFlash(const AttentionKernelSpec &spec, const AttentionShape &shape, SequenceFlash &f,
                   Func out, Var task) {
  const AttentionOperands &a = f.operands;
  const int vw = shape.vw, dV = shape.dV;
  Var c = a.c, d = a.d, t = a.t, h = a.h, tq("tq"), ti("ti");
  const int rowTile = int(spec.schedule.rowTile); // query rows per register tile
  out.split(c, h, d, dV)
      .split(t, tq, ti, int(spec.schedule.queryBlock), TailStrategy::GuardWithIf)
      .reorder(d, ti, h, tq)
      .fuse(h, tq, task)
      .parallel(task)
      .vectorize(d, vw, TailStrategy::GuardWithIf);

  f.keysT.compute_root().parallel(h).vectorize(a.s, vw, TailStrategy::GuardWithIf);

  f.softmax.state.compute_at(out, task).vectorize(d, vw, TailStrategy::GuardWithIf);
  scheduleKeyBlock(f.softmax, f.rb, t, a.j, d, f.rc, f.rj, shape, rowTile,
                   int(spec.schedule.keyBlock));
  if (spec.rope != AttentionKernelSpec::Rope::None) {
    // the task's rotated query rows, once (not once per key block)
    f.queryRows.compute_at(out, task).vectorize(c, vw, TailStrategy::GuardWithIf);
    // Once a call: the frequencies once a pair (not an exp per position), the libm cosines
    // and sines of the table's coarse part (⌈P/16⌉ or one more a pair for P positions, not P:
    // they took ~2 % of SmolLM2's q8 prefill), the table's positions split over the threads.
    Func frequency = a.rotary.frequency, table = a.rotary.table, coarse = a.rotary.coarse;
    frequency.compute_root();
    coarse.compute_root();
    table.compute_root().parallel(table.args()[1]);
  } else {
    f.queryRows.compute_inline();
  }
}

llvm::Expected<KernelPipeline> buildAttention(const AttentionKernelSpec &spec,
                                              const Target &target) {
  llvm::Expected<AttentionShape> shape = attentionShapeOf(spec, target);
  if (!shape)
    return shape.takeError();
  AttentionOperands a = attentionOperandsOf(spec, *shape, target, /*rotaryByParts=*/true);
  SequenceFlash flash = defineFlash(spec, a);
  DecodePath decode = defineDecodePath(spec, *shape, a);

  Func out = kernelFunc("out");
  Expr isDecode = a.queries <= kSmallQueryRows;
  {
    const OnlineSoftmax &sm = flash.softmax;
    Expr head = a.c / shape->dV, column = a.c % shape->dV;
    Expr sum = sm.state(column, a.t, head)[2];
    Expr decodeTotal = decode.merged(column, a.t, head)[1];
    out(a.c, a.t) = select(
        isDecode, select(decodeTotal > 0.f, decode.merged(column, a.t, head)[0] / decodeTotal, 0.f),
        select(sum > 0.f, sm.state(column, a.t, head)[0] / sum, 0.f));
  }

  // ---- Buffer shapes (docs/abi.md) --------------------------------------
  const int H = shape->H, Hkv = shape->Hkv, dK = shape->dK, dV = shape->dV;
  a.q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  a.k.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
  a.v.dim(0).set_bounds(0, dV).set_stride(1).dim(1).set_bounds(0, a.keys).dim(2).set_bounds(0, Hkv);
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, a.queries);

  // ---- Schedule ----------------------------------------------------------
  // The condition is a fact inside the decode specialization, so its select
  // keeps only the decode Funcs (and the general branch only the flash-style
  // ones, K transpose included).
  Var task("task");
  scheduleDecodePath(spec, *shape, target, decode, out.specialize(isDecode), out);
  scheduleFlash(spec, *shape, flash, out, task);

  KernelPipeline result;
  result.inputs = {a.q, a.k, a.v};
  result.output = out;
  result.pipeline = Pipeline(out);
  return result;
}

} // namespace

llvm::Expected<KernelPipeline> buildAttentionPipeline(const AttentionKernelSpec &spec,
                                                      const Target &target) {
  KernelFuncScope names(spec.name);
  if (spec.segmented)
    return buildSegmentedAttentionPipeline(spec, target);
  return buildCatchingHalideErrors("scheduling attention kernel '" + spec.name + "'",
                                   [&] { return buildAttention(spec, target); });
}

} // namespace mlir::xf
