//===- CudaGraphs.h - decode steps replayed as CUDA graphs -------*- C++ -*-===//
//
// A CUDA build's decode step launches ~100 kernels; replayed as one CUDA graph it is one launch
// (docs/gpu.md, "CUDA graphs"). So is a forward (xf_forward) of a length seen before. The
// runtime gives Halide's CUDA runtime a stream of its own
// (halide_set_cuda_get_stream: the legacy stream cannot be captured), runs a step's host code
// once as it is (warm-up: modules loaded), captures the next call of the same entry point and
// token count (and sequence count, for a packed step of several sequences; source tokens, for
// an encoder-decoder's forward) into a graph (128 kept at most, the least recently used
// dropped), and from then on runs the host code with its launches taken by the
// graph: each launch's parameters and grid — the cache length and positions change every step
// — are set on the graph's node in order (cuGraphExecKernelNodeSetParams), then the graph is
// launched once. A call whose kernels differ from the graph's is captured again; where capture
// or a graph fails, kernels are launched one by one, said in one line under -v.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CUDAGRAPHS_H
#define XFRT_CUDAGRAPHS_H

#include "xfrt/CudaDriver.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace xfrt {

// --cuda-graphs on|off (default on) and -v (the fallback line). Call before the first step.
void setCudaGraphs(bool on, bool verbose);

// Runs one call of `entry` with `tokens` tokens of `sequences` sequences (a packed call's n;
// `call` runs the generated code, returning its code) and `sourceTokens` source tokens as a
// graph replay where it can, else as it is: a graph per entry point, token count, sequence
// count and source token count. Returns the generated code's code, or -1 where a graph launch
// failed after the call was captured (the reason: takeHalideError()).
int32_t runDeviceStep(const char *entry, int64_t tokens, const std::function<int32_t()> &call,
                      int64_t sequences = 1, int64_t sourceTokens = 0);

// For CudaDriver.cpp's launch counter: the launch's result where a graph being captured or
// patched takes it, nullopt where it goes to the driver as it is.
std::optional<int> graphTakesLaunch(const KernelLaunch &launch);
// Whether kernels launched now go into a graph (not run at once): no events then.
bool graphHoldsLaunches();

} // namespace xfrt

#endif // XFRT_CUDAGRAPHS_H
