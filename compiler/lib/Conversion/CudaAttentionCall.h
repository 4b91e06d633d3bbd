//===- CudaAttentionCall.h - a CUDA attention's flash-decoding call -*- C++ -*-===//
//
// On the GPU an attention kernel is two functions sharing a device buffer of
// its key ranges' partial results (AttentionDecodeCuda.cpp, docs/gpu.md):
// `<name>_decode_ranges` runs first when the query has few enough rows (a
// decode step: a run-time branch, rows are dynamic), then `<name>`.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_CUDAATTENTIONCALL_H
#define XF_LIB_CONVERSION_CUDAATTENTIONCALL_H

#include "xf/Codegen/HalideCalls.h"
#include "xf/Codegen/HalideKernels.h"

namespace mlir::xf {

/// `rows(q) <= 4 ? <name>_decode_ranges(q, k, v, partials) : 0`, then, unless that failed,
/// `<name>(q, k, v, partials, out)`; `args` are (q, k, v, out) as device buffers and
/// `partials` a device address of cudaDecodePartialsOf(spec).floats() floats. Returns the
/// i32 status.
Value callCudaAttention(OpBuilder &b, Location loc, ModuleOp module,
                        const AttentionKernelSpec &spec, ArrayRef<HalideBufferArg> args,
                        Value partials);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_CUDAATTENTIONCALL_H
