//===- CudaAttentionCall.h - a CUDA attention's flash-decoding call -*- C++ -*-===//
//
// On the GPU an attention kernel is two functions sharing a device buffer of
// its key ranges' partial results (AttentionDecodeCuda.cpp, docs/gpu.md):
// `<name>_decode_ranges` runs first when the query has few enough rows (a
// decode step: a run-time branch, rows are dynamic), then `<name>`. Where K
// and V heads have one width the range pass also appends the step's new K/V
// rows to the cache (cudaDecodeRangesAppend), so a decode step's attention
// with its append is 2 launches; more rows (a prompt) append by the loop
// kernel before `<name>`.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_CUDAATTENTIONCALL_H
#define XF_LIB_CONVERSION_CUDAATTENTIONCALL_H

#include "xf/Codegen/HalideCalls.h"
#include "xf/Codegen/HalideKernels.h"

#include <functional>

namespace mlir::xf {

/// The partials buffer (device address `partials`) as the range pass writes and the merges read
/// it: dense (column, row, head, range) of cudaDecodePartialsOf's shape.
HalideBufferArg cudaPartialsArg(OpBuilder &b, Location loc, const CudaDecodePartials &shape,
                                Value partials);

/// A cached attention's new K and V rows, appended by the range pass (at most 4 rows) or by
/// `appendKernel` (more).
struct CudaAttentionAppend {
  HalideBufferArg newKeys, newValues; // (column, row, K/V head) of the rows computed this step
  HalideBufferArg keyRows, valueRows; // the cache's rows [start, start + rows), the same dims
  Value start;                        // i64: the first new position (keys before it are cached)
  std::function<void()> appendKernel; // emits the loop kernel that appends them
};

/// `rows(q) <= 4 ? <name>_decode_ranges(q, k, v, ...) : (append ? appendKernel : 0)`, then,
/// unless that failed, `<name>(q, k, v, partials, out)`; `args` are (q, k, v, out) as device
/// buffers (k and v over every key, the new ones included) and `partials` a device address of
/// cudaDecodePartialsOf(spec).floats() floats, and cudaDecodeAppendDummyFloats more where the
/// range pass appends (cudaDecodeRangesAppend). With `mergeInConsumer` the GEMM reading `out`
/// merges the ranges at <= 4 rows (CudaRangeMerge.cpp): `<name>` runs for more rows only.
/// Returns the i32 status.
Value callCudaAttention(OpBuilder &b, Location loc, ModuleOp module,
                        const AttentionKernelSpec &spec, ArrayRef<HalideBufferArg> args,
                        Value partials, const CudaAttentionAppend *append = nullptr,
                        bool mergeInConsumer = false);

/// A decode step of n sequences (HalideKernels.h, cudaBatchedName), their new K/V rows already
/// in their slots: `query` and `out` [n, H·d] rows, the caches of every slot (column, position,
/// K/V head, slot), the step table's positions and slots (device int64 arrays of n), and
/// `partials`, a device address of cudaDecodePartialsOf(spec).floats() / 4 · n floats.
struct CudaBatchedDecode {
  HalideBufferArg query, keys, values;
  Value positions, slots, count, partials;
  HalideBufferArg out;
};
/// `<name>_batched_ranges`, then, unless it failed, `<name>_batched`; the i32 status.
Value callCudaBatchedDecode(OpBuilder &b, Location loc, ModuleOp module,
                            const AttentionKernelSpec &spec, const CudaBatchedDecode &call);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_CUDAATTENTIONCALL_H
