//===- CudaDriver.h - the CUDA driver as the runtime sees it -----*- C++ -*-===//
//
// A CUDA build (docs/gpu.md) links no CUDA library: Halide's CUDA runtime inside it asks
// halide_cuda_get_symbol for each driver function. libxfrt defines that function (overriding
// the runtime's weak one), so that the driver is the library checkCudaDevice opened
// ($XF_CUDA_DRIVER, else libcuda.so.1) and kernel launches pass through a counter: the runtime
// knows how many kernels each forward pass or decode step launched (--profile prints it).
// It also times kernels on the device with CUDA events, recorded on the stream Halide launches
// on, for --profile without a synchronisation per kernel.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_CUDADRIVER_H
#define XFRT_CUDADRIVER_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace xfrt {

// $XF_CUDA_DRIVER, else "libcuda.so.1".
const char *driverLibraryName();
// The driver library, opened once (nullptr when it cannot be).
void *openDriver();
// The driver's function `symbol` (nullptr where the driver or the symbol is missing).
void *driverSymbol(const char *symbol);
// `function` = the driver's `symbol`, as its type; whether it was found.
template <typename F> bool lookUpDriverFunction(F *&function, const char *symbol) {
  function = reinterpret_cast<F *>(driverSymbol(symbol));
  return function != nullptr;
}

// One cuLaunchKernel call as Halide's CUDA runtime makes it (CUfunction, CUstream as void *).
struct KernelLaunch {
  void *function;
  unsigned grid[3], block[3], shared;
  void *stream;
  void **params, **extra;
};
// Passes a launch to the driver uncounted (a graph being captured counts it as its own).
int driverLaunchKernel(const KernelLaunch &launch);
// Counts a CUDA graph launch of `kernels` kernels, for noteDeviceCall.
void countGraphLaunch(uint64_t kernels);
// Runs f(stream) with Halide's CUDA context current and its stream (halide_cuda_get_stream);
// false when there is no context or f fails.
bool inHalideContext(const std::function<bool(void *stream)> &f);

// Kernels launched one by one through Halide's CUDA runtime so far in this process.
uint64_t deviceLaunches();
// Counts the launches since the previous call under `entry` (a forward entry point's name),
// for launchSummary(); forgetLaunchCounts() starts over.
void noteDeviceCall(const char *entry);
void forgetLaunchCounts();
// "kernel launches: xf_forward_cached: 16 calls, 83 launches a call" per entry point noted,
// one line each, and for calls replayed as a CUDA graph "…; 14 calls as a CUDA graph, 1 graph
// launch (83 kernels) + 0 launches a call"; "" when none was noted.
std::string launchSummary();

// CUDA events on the kernels' stream, from a pool reused after deviceEventsReset.
// deviceEventRecord returns the event's index, or -1 (no events: the caller falls back to
// the host clock). deviceEventMicros waits for `to` and gives the device time from `from`.
bool deviceEventsAvailable();
int deviceEventRecord();
double deviceEventMicros(int from, int to);
// Events from `keep` on may be recorded again.
void deviceEventsReset(int keep);
// The events of one kernel call's own launches: between Begin and End, an event is recorded on
// the launch's stream right before the first kernel launched one by one and right after the
// last; End gives their indices (-1 where nothing was launched). --profile times a call
// between them, so the host's work before and after its launches (Halide's argument and
// module setup), during which the device may idle, is not counted as the kernel's.
void deviceLaunchEventsBegin();
std::pair<int, int> deviceLaunchEventsEnd();

} // namespace xfrt

#endif // XFRT_CUDADRIVER_H
