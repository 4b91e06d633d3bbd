//===- AttentionDecodePath.h - the per-sequence attention's two paths -*- C++ -*-===//
//
// The per-sequence attention (AttentionKernel.cpp) has a flash path and, for
// M <= kSmallQueryRows, a decode path (AttentionDecodePath.cpp). Both read
// the same buffers, rotated and widened the same way: AttentionOperands.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONDECODEPATH_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONDECODEPATH_H

#include "AttentionAlgorithm.h"

namespace mlir::xf {

/// M up to this takes the decode path (KV-cache decoding: M = 1).
constexpr int kSmallQueryRows = 4;
/// The per-sequence attention's buffers and how it reads them:
///   q: (h·dK + c, t) [M, H·dK]; k: (c, s, g) K/V head g's key s, [H_kv][Mz][dK]
///   by index, float16 in a half KV cache; v: (d, s, g).
struct AttentionOperands {
  Halide::ImageParam q, k, v;
  Halide::Expr queries, keys; // M, Mz
  Halide::Var c{"c"}, d{"d"}, s{"s"}, t{"t"}, h{"h"}, j{"j"}, b{"b"};
  float scale;
  int group; // query heads per K/V head
  RotaryPositions rotary;
  /// A stored K or V element as float32.
  std::function<Halide::Expr(Halide::Expr)> keyValue;
  /// Q's element (col, row) as attention uses it: rotated at row + (Mz - M) with rope.
  std::function<Halide::Expr(Halide::Expr col, Halide::Expr row)> queryAt;
  /// K's element (c, row) of a K/V head, as float32, rotated at `row` if the kernel rotates keys.
  std::function<Halide::Expr(Halide::Expr c, Halide::Expr row, Halide::Expr kvHead)> keyAt;
  /// Whether query row `query` sees key `key` (in range, and causally visible).
  std::function<Halide::Expr(Halide::Expr key, Halide::Expr query)> visible;
  Halide::Expr kvHead(Halide::Expr queryHead) const { return queryHead / group; }
};
/// The buffers of `spec`'s per-sequence attention (AttentionKernel.cpp); rotaryByParts: its
/// rotary table from coarse and fine parts (rotaryPositionsOf), which the caller schedules.
AttentionOperands attentionOperandsOf(const AttentionKernelSpec &spec, const AttentionShape &shape,
                                      const Halide::Target &target, bool rotaryByParts = false);

/// The decode path's Funcs: per (query head, key range) an exact two-pass
/// softmax (range), and the ranges merged per query row and head (merged:
/// Σ output·w, Σ sum·w, with w = e^(range max − top)).
struct DecodePath {
  Halide::Func query = kernelFunc("decode_query"), keys = kernelFunc("decode_keys"),
               dotPart = kernelFunc("decode_dot_part"), dot = kernelFunc("decode_dot"),
               scores = kernelFunc("decode_scores"), max = kernelFunc("decode_max"),
               probs = kernelFunc("decode_probs"), sum = kernelFunc("decode_sum"),
               output = kernelFunc("decode_out"), range = kernelFunc("decode_range"),
               top = kernelFunc("decode_top"), merged = kernelFunc("decode_merged");
  Halide::Var p{"p"}; // a key range
  Halide::RDom ro, rl, rs, rp;
  int lanes;
};
/// Key ranges' results merged per query row t and head h (the decode path's
/// last step, and the CUDA flash-decoding's merge, AttentionDecodeCuda.cpp):
///   top(t, h) = max_p max(0, t, h, p),
///   merged(d, t, h) = (Σ_p output(d, t, h, p)·w, Σ_p sum(d, t, h, p)·w),
///   w = e^(max(d, t, h, p) − top(t, h))   (rp: the ranges p).
/// out = merged[0] / merged[1]; a range without a visible key has max kNoScore and weight 0.
struct RangeResults {
  std::function<Halide::Expr(Halide::Expr d, Halide::Expr t, Halide::Expr h, Halide::Expr p)>
      output, max, sum;
};
void defineRangeMerge(Halide::Func top, Halide::Func merged, Halide::RDom rp, Halide::Var d,
                      Halide::Var t, Halide::Var h, const RangeResults &ranges);
/// The results of CUDA flash-decoding's range pass as its `partials` buffer holds them,
/// (column, row, head, range) with the output's dV columns, then the max and the sum; rows
/// clamped to [0, lastRow].
RangeResults partialsRangeResults(Halide::ImageParam partials, Halide::Expr lastRow, int dV);

DecodePath defineDecodePath(const AttentionKernelSpec &spec, const AttentionShape &shape,
                            const AttentionOperands &a);
/// Schedules the decode path under `decodeStage`, the specialization of `out` for M <= 4.
void scheduleDecodePath(const AttentionKernelSpec &spec, const AttentionShape &shape,
                        const Halide::Target &target, DecodePath &path, Halide::Stage decodeStage,
                        Halide::Func out);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONDECODEPATH_H
