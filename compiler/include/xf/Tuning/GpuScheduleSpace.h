//===- GpuScheduleSpace.h - CUDA kernels' schedule knobs --------*- C++ -*-===//
//
// The search space of a CUDA GEMM's #xf.gpu_gemm_schedule (docs/gpu.md, "The schedules"):
// a Knob per field with the values worth trying, legal where the attribute's verifier
// accepts the point (threads a block, multiples), and the paths (SchedulePaths.h) its
// code takes: the GEMV path (M ≤ 4), the batch GEMV path (M ≤ 16) and the tiled path (the
// register path where the weight allows it, else the staged path), each with the lengths
// that take it.
//
// `xfc tune --target cuda` cannot measure where it compiles (docs/tuning.md, "CUDA"): it
// exports a fixed, bounded set of candidates per kernel — the default first, then every
// one-knob move of a knob some tuned length reaches (the knobs taken in turn, so a cut
// list still varies each), then legal points of the space drawn by Search (seeded) — and
// a timing program times them on the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_GPUSCHEDULESPACE_H
#define XF_TUNING_GPUSCHEDULESPACE_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/Tuning/SchedulePaths.h"
#include "xf/Tuning/Search.h"

#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace mlir::xf::tuning {

/// Rows up to this take the CUDA GEMM's GEMV path (GemmScheduleCuda.cpp).
constexpr int64_t kCudaGemvRows = 4;
/// Rows past kCudaGemvRows up to this take its batch GEMV path.
constexpr int64_t kCudaBatchGemvRows = 16;

SearchSpace gpuGemmSpace(MLIRContext &ctx, const GemmKernelSpec &spec,
                         const std::vector<int64_t> &lengths);
/// GEMV (lengths ≤ kCudaGemvRows), batch GEMV (≤ kCudaBatchGemvRows) and tiled (the others);
/// paths no length takes are left out.
std::vector<SchedulePath> gpuGemmPaths(const GemmKernelSpec &spec,
                                       const std::vector<int64_t> &lengths);
Point gpuGemmPoint(const GpuGemmSchedule &s);
GpuGemmSchedule gpuGemmScheduleAt(const Point &p);

/// At most `limit` (≥ 1) schedules for `spec` (its gpuSchedule the default), the default
/// first, as the header says; deterministic given `seed`.
std::vector<GpuGemmSchedule> gpuGemmCandidates(MLIRContext &ctx, const GemmKernelSpec &spec,
                                               const std::vector<int64_t> &lengths,
                                               size_t limit, uint64_t seed);

/// The candidates of `space` as the header says: `dflt` first, then one-knob moves, then
/// Search's points; at most `limit` (≥ 1), deterministic given `seed`.
std::vector<Point> gpuCandidatePoints(const SearchSpace &space, const Point &dflt, size_t limit,
                                      uint64_t seed);

/// A CUDA attention's #xf.gpu_attention_schedule (GpuAttentionScheduleSpace.cpp): the
/// decode path (lengths ≤ kCudaDecodeRows: flash-decoding's decode_key_block, decode_blocks
/// and, where a K/V head has several query heads, decode_block_heads) and the prefill path
/// (the others: query_block, key_block).
constexpr int64_t kCudaDecodeRows = 4;
SearchSpace gpuAttentionSpace(MLIRContext &ctx, const AttentionKernelSpec &spec,
                              const std::vector<int64_t> &lengths);
std::vector<SchedulePath> gpuAttentionPaths(const AttentionKernelSpec &spec,
                                            const std::vector<int64_t> &lengths);
Point gpuAttentionPoint(const GpuAttentionSchedule &s);
GpuAttentionSchedule gpuAttentionScheduleAt(const Point &p);
std::vector<GpuAttentionSchedule> gpuAttentionCandidates(MLIRContext &ctx,
                                                         const AttentionKernelSpec &spec,
                                                         const std::vector<int64_t> &lengths,
                                                         size_t limit, uint64_t seed);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_GPUSCHEDULESPACE_H
