//===- AttentionDecodeCuda.h - flash-decoding on the GPU --------*- C++ -*-===//
//
// What the CUDA attention (AttentionKernelCuda.cpp) and its flash-decoding
// (AttentionDecodeCuda.cpp) share: the spec check, the column threads, and
// the merge of the key ranges' partial results that `<name>` computes for
// M <= kSmallQueryRows from the buffer `<name>_decode_ranges` wrote.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONDECODECUDA_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONDECODECUDA_H

#include "AttentionDecodePath.h"

#include <algorithm>

namespace mlir::xf {

/// Output columns per thread row of a CUDA attention block.
constexpr int kCudaColumnThreads = 32;

/// An error if the CUDA attention cannot take `spec` (rotary positions, a half KV cache).
llvm::Error validateAttentionCuda(const AttentionKernelSpec &spec);

/// Threads: output columns (x, at most kCudaColumnThreads, each thread owning
/// `regs` of them) × query rows (y).
struct ColumnThreads {
  int threads, regs;
  explicit ColumnThreads(int dV)
      : threads(std::min(dV, kCudaColumnThreads)), regs((dV + threads - 1) / threads) {}
};

/// The loops of an attention output's block per (head, query rows): c = head·dV + col, t =
/// tq·rows + ti. Their names are the kernels' (test/Gpu/emit.test checks them).
struct HeadBlockLoops {
  Halide::Var head{"head"}, col{"col"}, tq{"tq"}, ti{"ti"}, dx{"dx"}, dr{"dr"};
};
/// Schedules `out` (c, t) as one block per (head, `rows` query rows): threads columns (x, each
/// owning ColumnThreads(dV).regs of them, unrolled) × rows (y). Flash attention's output and
/// flash-decoding's merge take the same blocks.
HeadBlockLoops scheduleHeadBlocks(Halide::Stage out, const AttentionOperands &a, int dV, int rows);

/// With rotary positions: `query` (c, rows...), a block's query rows rotated as the
/// attention reads them, computed once per block at `at` in shared memory, threads the
/// block's columns (x) × `rows` (its other thread loops); without, `query` is inlined.
void scheduleRotatedQuery(Halide::Func query, Halide::LoopLevel at, Halide::Var c,
                          const std::vector<Halide::Var> &rows, const ColumnThreads &columns);

/// The merge of `<name>`'s decode specialization: `partials` as
/// `<name>_decode_ranges` wrote it ([dV + 2, rows, H, ranges]), merged per
/// (query row, head) by defineRangeMerge.
struct CudaDecodeMerge {
  Halide::ImageParam partials{Halide::Float(32), 4, "partials"};
  Halide::Func top = kernelFunc("decode_top"), merged = kernelFunc("decode_merged");
  Halide::RDom rp;
};
/// Batched (`<name>_batched`): partials of a row per sequence, as many as the call has.
CudaDecodeMerge defineCudaDecodeMerge(const AttentionKernelSpec &spec, const AttentionOperands &a,
                                      bool batched = false);
/// An error unless the batched decode step of several sequences (`<name>_batched_ranges`,
/// `<name>_batched`) can take `spec`: causal, keys rotated in the cache, K and V of one width.
llvm::Error validateCudaBatchedDecode(const AttentionKernelSpec &spec);
/// One block per (head, ≤ 4 query rows) under `decodeStage`, the specialization of `out`.
void scheduleCudaDecodeMerge(CudaDecodeMerge &m, const AttentionOperands &a,
                             Halide::Stage decodeStage, Halide::Func out, int dV);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_ATTENTIONDECODECUDA_H
