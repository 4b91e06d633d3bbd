//===- Workload.h - Inputs, reference and calls of each case ----*- C++ -*-===//
//
// In: a Request. Out: per case the kernel's argument buffers (random inputs,
// uniform in [-1, 1] from a fixed seed; the GEMM weight and bias are shared
// by all cases), the float64 reference of the sampled output rows, and the
// two operations a candidate needs: call it, and measure its error.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_WORKLOAD_H
#define XF_TOOLS_XF_TUNE_WORKER_WORKLOAD_H

#include "Request.h"

#include <vector>

namespace xftune {

struct Workload {
  Case size;
  /// The kernel's arguments: inputs in the generated function's order, then `out`.
  std::vector<Halide::Runtime::Buffer<void>> args;
  Halide::Runtime::Buffer<float> out;
  std::vector<int> checkedRows;
  std::vector<double> expected; // checkedRows × all columns, row after row
  /// Decode cases (≤ kColdRows rows) of a GEMM: identical copies of the
  /// weight, args[1] rotating through them call after call, so that a
  /// timed GEMV streams its weight from memory as in a decode step (where
  /// the model's weights are far larger than any cache) instead of finding
  /// it in L3 from the previous call. Empty: args[1] stays.
  std::vector<Halide::Runtime::Buffer<void>> coldWeights;
  size_t nextCold = 0;
};

/// Cases with at most this many rows are timed with cold weights, and the
/// bytes of weight copies they cycle through (more than the L3 of any CPU
/// xf has met; at least two copies).
constexpr int64_t kColdRows = 4;
constexpr int64_t kColdBytes = int64_t(256) << 20;

std::vector<Workload> makeWorkloads(const Request &request);

/// The workloads of a GEMM whose kernel takes its weight packed at load
/// (GemmKernelSpec::packedWeight), as xfc's executables run it: the weight and
/// its cold copies packed once by `pack` (the kernel's `_pack`); the other
/// buffers are shared with `workloads`.
llvm::Expected<std::vector<Workload>> withPackedWeights(Halide::Callable &pack,
                                                        const mlir::xf::GemmKernelSpec &spec,
                                                        const std::vector<Workload> &workloads);

/// One call of a JIT-compiled kernel on the workload's buffers.
llvm::Error callKernel(Halide::Callable &kernel, Workload &workload);

/// max|out − expected| / max|expected| over the checked rows (NaN-safe: a
/// NaN or an unwritten output makes the result NaN or huge). `out` is filled
/// with NaN before the call, so rows the kernel never writes are caught.
llvm::Expected<double> checkKernel(Halide::Callable &kernel, Workload &workload);

/// Floating-point operations and bytes of weights (GEMM: W; attention: K and
/// V) of one call.
double flopsOf(const Request &request, const Case &size);
double weightBytesOf(const Request &request, const Case &size);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_WORKLOAD_H
