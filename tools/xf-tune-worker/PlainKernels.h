//===- PlainKernels.h - xf's kernels as unscheduled Halide ------*- C++ -*-===//
//
// In: a kernel (GEMM or attention) and one problem size. Out: the same
// algorithm as buildGemmPipeline / buildAttentionPipeline, written plainly
// (no packing, blocking, online softmax or decode path) in the same argument
// order, for a Halide autoscheduler to schedule: the baseline that xf's
// hand-written schedules are measured against.
//
// The pipeline is for that size only (M and Mz are fixed bounds, and the
// estimates): the autoschedulers tile for the estimates and may emit tiles
// that do not fit a smaller M, or unroll a loop whose extent is dynamic, so
// the baseline is the best they do for a static shape, one pipeline per case.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_PLAINKERNELS_H
#define XF_TOOLS_XF_TUNE_WORKER_PLAINKERNELS_H

#include "Request.h"

namespace xftune {

/// GEMM: out(n, m) = act(Σ_k x(k, m)·W(n, k) + b(n)) + r(n, m) (x rounded to
/// bfloat16 with bf16_activations). Attention: softmax over all visible keys,
/// then P·V, per head.
llvm::Expected<mlir::xf::KernelPipeline> buildPlainPipeline(const KernelDesc &kernel,
                                                            const Case &size);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_PLAINKERNELS_H
