//===- DecodeAttention.h - One KV-cache decode step of attention -*- C++ -*-===//
//
// The decode path of the CPU executables' attention (docs/pipeline.md, "Decode attention"): a
// call whose query has one row (the newest position of a KV-cache decoding step, causal
// self-attention over the cache) runs here instead of its Halide kernel.
//
//   out[h·dV + d] = Σ_s softmax_s(scale · rot(q_h)·k[s, g]) · v[s, g·dV + d],  g = h / (H / H_kv)
//
// over keys s < `keys`, with the query at position keys − 1 (every key visible). First the
// step's new key row (rotated to position keys − 1) and value row are stored into the cache at
// that position, rounded to float16 in a half cache — what the host code's rotary and copy loop
// kernels do before the Halide kernel, there with the cos/sin recomputed per head and layer. Tasks of
// (K/V head, key range) each run an exact two-pass softmax over their keys for every query
// head sharing the K/V head — scores of 16 (8 on AVX2) keys summed to one vector at a time,
// P·V accumulated in registers — then the ranges' (output, max, sum) merge as in an online
// softmax. Float32 arithmetic throughout; K and V may be float16 (widened in registers).
//
// Hand-written rather than Halide for the same reasons as xfrt_block_gemv (BlockGemv.h): the
// instruction set is chosen when the call runs (AVX-512, AVX2 or portable, up to the ceiling
// the executable's target allows), and the call's fixed cost — a Halide pipeline's buffer
// allocations, its rotary table in double per call, its serial merge — was most of a
// 64-key step (docs/bench.md, "Decode attention").
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_DECODEATTENTION_H
#define XFRT_DECODEATTENTION_H

#include <cstdint>

namespace xfrt {

/// Instruction sets of the decode attention, narrowest first (xfc passes the widest its target
/// allows; the call uses the widest of those this CPU has).
enum class AttentionIsa : int32_t { Portable = 0, Avx2 = 1, Avx512 = 2 };

/// The widest instruction set at most `ceiling` that this CPU (and OS) supports.
AttentionIsa attentionIsaOfCpu(AttentionIsa ceiling);

/// Rotary positions of the query (the cached keys are rotated already): none, pairs (2i, 2i+1)
/// (GGUF checkpoints), or pairs (i, i + dK/2) (Hugging Face checkpoints).
enum class AttentionRope : int32_t { None = 0, Adjacent = 1, Halves = 2 };

} // namespace xfrt

extern "C" {
/// One decode step's attention (above). q: [H·dK] float32; newKey [H_kv·dK], newValue [H_kv·dV]:
/// the step's new K and V rows, heads side by side, float32 (stored by this call); k, v: K/V head g's key s at element
/// g·keyHeadStride + s·dK of `k` (value: g·valueHeadStride + s·dV of `v`) — a KV cache slot —
/// float16 if `halfKeyValues`, else float32;
/// out: [H·dV]. Runs as tasks on the Halide runtime's thread pool when the executable has one.
/// Returns 0, or -1 for arguments it does not handle (dK or dV not 64 or 128, H not a multiple
/// of kvHeads, keys < 1, an odd dK with rotary positions).
int32_t xfrt_decode_attention(const float *q, int64_t keys, const float *newKey,
                              const float *newValue, void *k, void *v,
                              int64_t keyHeadStride, int64_t valueHeadStride,
                              int64_t halfKeyValues, int64_t heads,
                              int64_t kvHeads, int64_t dK, int64_t dV, float scale, int64_t rope,
                              double ropeBase, float *out, int64_t isaCeiling);

/// One decode step of n sequences together, each on its own KV cache slot (the packed cached
/// entry point's batched step; docs/abi.md "Packed batches"): sequence i's query, row i of q
/// (rows qStride floats apart), is at position starts[i] and attends over keys 0..starts[i] of
/// slot slots[i] — K/V head g's key s at element slots[i]·slotStride + g·keyHeadStride + s·dK
/// of `k` (value: ... + g·valueHeadStride + s·dV of `v`) — whose rows, the new ones included,
/// the caller has stored. Tasks of (sequence, K/V head[, key range]) on the thread pool; out
/// row i at out + i·outStride. Returns 0, or -1 for arguments it does not handle (as above,
/// or a negative start or slot).
int32_t xfrt_decode_attention_batched(const float *q, int64_t qStride, int64_t n,
                                      const int64_t *slots, const int64_t *starts, const void *k,
                                      const void *v, int64_t slotStride, int64_t keyHeadStride,
                                      int64_t valueHeadStride, int64_t halfKeyValues, int64_t heads,
                                      int64_t kvHeads, int64_t dK, int64_t dV, float scale,
                                      int64_t rope, double ropeBase, float *out, int64_t outStride,
                                      int64_t isaCeiling);
}

#endif // XFRT_DECODEATTENTION_H
