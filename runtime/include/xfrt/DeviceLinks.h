//===- DeviceLinks.h - the executable's GPU runtime, for the server's copy -*- C++ -*-===//
//
// libxfrt_serve.so holds a private copy of libxfrt (Server.h) and none of Halide's CUDA
// runtime, which lives in the executable with the kernels: the library's weak references to it
// are null, and its copies of the runtime's GPU state (the Halide error the kernels report, the
// CUDA graphs their launches go to) are not the ones the kernels use. So a CUDA build's
// --serve hands the library the executable's own: Halide's device-memory functions, its CUDA
// graph steps and its Halide error; the library's Session then allocates, copies, runs steps
// and reads errors exactly as the executable's would (docs/serving.md, "On the GPU").
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_DEVICELINKS_H
#define XFRT_DEVICELINKS_H

#include <cstdint>
#include <functional>
#include <string>

namespace xfrt {

struct HalideBuffer; // HalideBufferLayout.h

struct DeviceLinks {
  // Halide's runtime (weak references: null in a CPU executable and in the server library).
  const void *(*cudaDeviceInterface)() = nullptr;
  int (*deviceMalloc)(void *, HalideBuffer *, const void *) = nullptr;
  int (*deviceFree)(void *, HalideBuffer *) = nullptr;
  int (*copyToDevice)(void *, HalideBuffer *, const void *) = nullptr;
  int (*copyToHost)(void *, HalideBuffer *) = nullptr;
  int (*deviceSyncGlobal)(void *, const void *) = nullptr;
  // The executable's libxfrt: CUDA graph steps (CudaGraphs.h) and the Halide error its handler
  // recorded (HalideErrors.h).
  int32_t (*runDeviceStep)(const char *, int64_t, const std::function<int32_t()> &, int64_t,
                           int64_t) = nullptr;
  std::string (*takeHalideError)() = nullptr;
};

// This copy's own (the executable's, where Halide's CUDA runtime is linked in).
DeviceLinks ownDeviceLinks();
// From now on, this copy (the server library's) uses `links` instead of its own. Call before
// any device work, from one thread.
void useDeviceLinks(const DeviceLinks &links);
// What this copy uses: the links given to useDeviceLinks, else its own.
const DeviceLinks &deviceLinks();
// Whether useDeviceLinks was called (its runDeviceStep and takeHalideError are another copy's).
bool deviceLinked();

} // namespace xfrt

#endif // XFRT_DEVICELINKS_H
