//===- GpuTimingArguments.h - what the timing program passes a kernel -*- C++ -*-===//
//
// `xfc tune --target cuda --export` (GpuTiming.h) describes each kernel's measurement to the
// timing program (xfrt/GpuTimingTable.h): the device memories it allocates, the arguments its
// calls pass — views of those memories, shaped as the pipelines' buffer constraints require,
// or int32 scalars — and the calls one measurement makes. A GEMM is one call of its pipeline;
// an attention is flash-decoding's range pass then the merge at ≤ kCudaDecodeRows rows, its
// flash path at more, over a KV cache as the host lowering passes it (CudaAttentionCall.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_GPUTIMINGARGUMENTS_H
#define XF_TUNING_GPUTIMINGARGUMENTS_H

#include "xf/Codegen/HalideKernels.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::xf::tuning {

/// Sizes of the timed length (XF_TIMING_ROWS, XF_TIMING_KEYS): its rows, and the keys an
/// attention attends over (timingKeys).
constexpr int64_t kTimingRows = -1, kTimingKeys = -2;

/// The keys an attention of `rows` query rows is timed over: its own rows (a prefill), or
/// at ≤ kCudaDecodeRows rows the longest length (a decode step late in a long context), as
/// the CPU tuner times it (ProgramTuner.cpp).
int64_t timingKeys(int64_t rows, int64_t longest);

struct TimingMemory {
  int64_t elements = 0;
  bool bf16 = false;
};

/// A view of memory `memory` from `offset` elements on, dims (extent, stride); or, memory -1,
/// an int32 scalar `value`. Extents and the value may be kTimingRows / kTimingKeys.
struct TimingArgument {
  int memory = -1;
  int64_t offset = 0;
  std::vector<std::pair<int64_t, int64_t>> dims;
  int64_t value = 0;
  bool operator==(const TimingArgument &o) const {
    return memory == o.memory && offset == o.offset && dims == o.dims && value == o.value;
  }
};

/// One pipeline a measurement calls: the candidate's function name + `suffix`, these
/// arguments (indices), at lengths of at most `mostRows` rows (0: every length).
struct TimingCall {
  std::string suffix;
  int64_t mostRows = 0;
  std::vector<int> arguments;
};

/// One candidate's measurement: what it allocates, passes and calls.
struct TimingCalls {
  std::vector<TimingMemory> memories;
  std::vector<TimingArgument> arguments;
  int output = 0; // the argument compared with the default's: float32, dense at its memory's start
  std::vector<TimingCall> calls;
};

/// A GEMM: each buffer a memory of its own, [rows, cols] row-major as constrainGemmBuffers
/// requires (x, residual and out of kTimingRows rows, `longest` at most), one call.
TimingCalls gemmTimingCalls(const GemmKernelSpec &spec, int64_t longest);

/// An attention under its spec.gpuSchedule: q [M, H·dK]; K and V as a KV cache slot,
/// (column, key, K/V head) with room for `longest` keys a head; the partials
/// (cudaDecodePartialsOf: as many ranges as the schedule sets); out [M, H·dV]. With `decode`
/// (a length takes the decode path) first, at ≤ kCudaDecodeRows rows, `<name>_decode_ranges`
/// as the host's call that appends nothing passes it (start = the keys, the new rows K and V
/// themselves, their outputs the dummy rows: a memory of its own here), then `<name>` at every
/// length (q, k, v, partials, out).
TimingCalls attentionTimingCalls(const AttentionKernelSpec &spec, int64_t longest, bool decode);

/// Whether every view the calls made at `rows` rows pass lies within its memory, over `keys`
/// keys.
bool timingViewsFit(const TimingCalls &calls, int64_t rows, int64_t keys);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_GPUTIMINGARGUMENTS_H
