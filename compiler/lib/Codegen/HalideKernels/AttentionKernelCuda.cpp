//===- AttentionKernelCuda.cpp - flash attention as a Halide CUDA pipeline ===//
//
// The online softmax of AttentionAlgorithm.cpp (the buffers, masking rule
// and grouped K/V heads of AttentionKernel.cpp) on an NVIDIA GPU. One thread
// block per (head, block of kQueryBlock queries); the block streams the keys
// in blocks of kKeyBlock and keeps, per query and output column, the running (output, max, sum) of
// the online softmax in shared memory:
//   per key block b:  stage K_b and V_b in shared memory;
//                     scores s = q·k (threads: key × query), the block's
//                     max m_b and sum l_b of p = e^(s − m_b) per query,
//                     o_b = Σ p · v (threads: column × query), in shared memory;
//   merge:            m' = max(m, m_b), o' = o·e^(m−m') + o_b·e^(m_b−m'),
//                     l' = l·e^(m−m') + l_b·e^(m_b−m');
//   out = o / l.
// Scores never leave the chip (no [M, Mz] matrix in global memory). Masked
// keys get probability exactly 0, as on the CPU; key blocks wholly in a query
// block's causal future are computed and masked, not skipped (a loop bound
// Halide cannot see through the thread loops).
//
// M <= kDecodeRows (KV-cache decoding) takes a specialization with a block
// of kDecodeRows query rows, so that one decoding step does not compute
// kQueryBlock − 1 padding rows; the cache is streamed once per head.
//
//===----------------------------------------------------------------------===//

#include "AttentionAlgorithm.h"

#include <algorithm>
#include <optional>

using namespace Halide;

namespace mlir::xf {
namespace {

constexpr int kQueryBlock = 16, kKeyBlock = 32; // queries per block, keys per stage
constexpr int kDecodeRows = 4;
constexpr int kMaxColumnThreads = 32; // output columns per thread row

llvm::Expected<KernelPipeline> buildAttentionCuda(const AttentionKernelSpec &spec,
                                                  bool gpuSchedule) {
  if (spec.name.empty())
    return attentionError("attention kernel: empty function name");
  if (spec.heads <= 0 || spec.dK <= 0 || spec.dV <= 0 || spec.kvHeads < 0 ||
      spec.heads % spec.keyValueHeads() != 0)
    return attentionError("attention kernel '" + spec.name +
                          "': heads, dK, dV must be positive and kvHeads divide heads");
  if (!(spec.scale > 0) && !(spec.scale < 0))
    return attentionError("attention kernel '" + spec.name + "': scale must be a nonzero number");
  // xfc keeps xf.rope as separate kernels for CUDA (FusionPipeline.cpp says why).
  if (spec.rope != AttentionKernelSpec::Rope::None)
    return attentionError("attention kernel '" + spec.name +
                          "': rotary positions are not fused into the CUDA attention");
  if (spec.halfKeyValues) // xfc keeps a CUDA target's KV cache in float32
    return attentionError("attention kernel '" + spec.name +
                          "': the CUDA attention reads float32 keys and values only");
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int Hkv = int(spec.keyValueHeads()), group = H / Hkv;
  const float scale = float(spec.scale);

  ImageParam q(Float(32), 2, "q"); // (h·dK + c, t)
  ImageParam k(Float(32), 3, "k"); // (c, s, g): K/V head g's key s, any row and head strides
  ImageParam v(Float(32), 3, "v"); // (d, s, g)
  Expr queries = q.dim(1).extent(), keys = k.dim(1).extent();
  Var c("c"), d("d"), j("j"), t("t"), h("h");

  // ---- Algorithm -------------------------------------------------------
  // Keys and rows past the ends are clamped (their probabilities are 0,
  // their rows never stored).
  Func kTile("key_tile"), vTile("value_tile"); // (c | d, key, kv head)
  kTile(c, j, h) = k(c, clamp(j, 0, keys - 1), h);
  vTile(d, j, h) = v(d, clamp(j, 0, keys - 1), h);
  auto visible = [&](Expr key, Expr query) {
    Expr ok = key < keys;
    if (spec.causal)
      ok = ok && key <= query + (keys - queries);
    return ok;
  };
  RDom rc(0, dK, "rc"), rj(0, kKeyBlock, "rj");
  RDom rb(0, (keys + kKeyBlock - 1) / kKeyBlock, "rb");
  Var b("b");
  OnlineSoftmaxOperands o{{t, h}, j, d, b, rj, rb, scale};
  o.scoreTerm = [&](Expr key, Expr block) {
    return q(h * dK + rc, clamp(t, 0, queries - 1)) * kTile(rc, block * kKeyBlock + key, h / group);
  };
  o.visible = [&](Expr key, Expr block) { return visible(block * kKeyBlock + key, t); };
  o.value = [&](Expr key, Expr block) { return vTile(d, block * kKeyBlock + key, h / group); };
  OnlineSoftmax f = defineOnlineSoftmax(o);
  Func state = f.state, scores = f.maskedScores, blockMax = f.blockMax, probs = f.probs;
  Func blockSum = f.blockSum, blockOut = f.blockOutDot, scoreDot = f.scoreDot;
  Func out("attention_out");
  {
    Expr head = c / dV, column = c % dV;
    Expr sum = state(column, t, head)[2];
    out(c, t) = select(sum > 0.f, state(column, t, head)[0] / sum, 0.f);
  }

  // ---- Buffer shapes (docs/abi.md), as the CPU kernel ------------------
  q.dim(0).set_bounds(0, H * dK).set_stride(1).dim(1).set_min(0);
  k.dim(0).set_bounds(0, dK).set_stride(1).dim(1).set_min(0).dim(2).set_bounds(0, Hkv);
  v.dim(0).set_bounds(0, dV).set_stride(1).dim(1).set_bounds(0, keys).dim(2).set_bounds(0, Hkv);
  out.output_buffer().dim(0).set_bounds(0, H * dV).set_stride(1).dim(1).set_bounds(0, queries);

  // ---- Schedule ----------------------------------------------------------
  if (gpuSchedule) {
    // Threads: output columns (x, at most kMaxColumnThreads, each thread
    // owning columnRegs of them) × queries (y).
    const int columnThreads = std::min(dV, kMaxColumnThreads);
    const int columnRegs = (dV + columnThreads - 1) / columnThreads;
    Var tq("tq"), ti("ti"), dx("dx"), dr("dr");
    auto blockOf = [&](Stage stage, int rowsPerBlock) {
      stage.split(c, h, d, dV)
          .split(d, dr, dx, columnThreads, TailStrategy::GuardWithIf)
          .split(t, tq, ti, rowsPerBlock, TailStrategy::GuardWithIf)
          .reorder(dr, dx, ti, h, tq)
          .gpu_blocks(h, tq)
          .gpu_threads(dx, ti)
          .unroll(dr);
    };
    blockOf(out.specialize(queries <= kDecodeRows), kDecodeRows);
    blockOf(out, kQueryBlock);
    // The running state in shared memory (Halide would give every thread a
    // private copy of a block-level register allocation); each thread
    // updates its own (columns, query).
    state.compute_at(out, h)
        .store_in(MemoryType::GPUShared)
        .bound_extent(d, columnRegs * columnThreads)
        .split(d, dr, dx, columnThreads)
        .reorder(dr, dx, t)
        .gpu_threads(dx, t)
        .unroll(dr);
    state.update()
        .split(d, dr, dx, columnThreads)
        .reorder(dr, dx, t, rb)
        .gpu_threads(dx, t)
        .unroll(dr);
    // Per key block, in shared memory: K and V staged, then scores,
    // probabilities and the block's P·V.
    kTile.compute_at(state, rb)
        .store_in(MemoryType::GPUShared)
        .reorder(c, j, h)
        .gpu_threads(j)
        .bound_extent(j, kKeyBlock);
    vTile.compute_at(state, rb)
        .store_in(MemoryType::GPUShared)
        .reorder(d, j, h)
        .gpu_threads(j)
        .bound_extent(j, kKeyBlock);
    // The masked scores in shared memory (their raw dot product inline).
    f.scores.compute_inline();
    f.blockOut.compute_inline();
    scores.compute_at(state, rb).store_in(MemoryType::GPUShared).gpu_threads(j, t);
    scoreDot.compute_at(scores, j);
    blockMax.compute_at(state, rb).store_in(MemoryType::GPUShared).gpu_threads(t);
    blockMax.update().gpu_threads(t);
    probs.compute_at(state, rb).store_in(MemoryType::GPUShared).gpu_threads(j, t);
    blockSum.compute_at(state, rb).store_in(MemoryType::GPUShared).gpu_threads(t);
    blockSum.update().gpu_threads(t);
    blockOut.compute_at(state, rb)
        .store_in(MemoryType::GPUShared)
        .bound_extent(d, columnRegs * columnThreads)
        .split(d, dr, dx, columnThreads)
        .reorder(dr, dx, t)
        .gpu_threads(dx, t)
        .unroll(dr);
    blockOut.update()
        .split(d, dr, dx, columnThreads)
        .reorder(dr, rj, dx, t)
        .gpu_threads(dx, t)
        .unroll(dr);
  }

  KernelPipeline result;
  result.inputs = {q, k, v};
  result.output = out;
  result.pipeline = Pipeline(out);
  return result;
}

} // namespace

llvm::Expected<KernelPipeline> buildAttentionCudaPipeline(const AttentionKernelSpec &spec,
                                                          bool gpuSchedule) {
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err =
          catchHalideErrors("scheduling CUDA attention kernel '" + spec.name + "'",
                            [&] { built.emplace(buildAttentionCuda(spec, gpuSchedule)); }))
    return std::move(err);
  return std::move(*built);
}

} // namespace mlir::xf
