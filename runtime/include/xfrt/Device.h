//===- Device.h - GPU memory for executables built with --target cuda -*- C++ -*-===//
//
// An executable built with `xfc --target cuda` (manifest "device": "cuda") keeps its
// weights, activations and KV cache on an NVIDIA GPU (docs/gpu.md). It links no CUDA
// library: the Halide runtime inside it loads the driver (libcuda.so.1) when first used,
// and this file reaches device memory through that runtime's device interface
// (halide_device_malloc / halide_copy_to_device / halide_copy_to_host), so the memory
// lives in the context Halide's kernels run in. The functions are weak references:
// CPU executables do not have them, and a CUDA manifest without them is an error.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_DEVICE_H
#define XFRT_DEVICE_H

#include "xfrt/Status.h"

#include <cstdint>

namespace xfrt {

// Checks that this process can use a CUDA GPU: the driver library loads, initializes and
// reports at least one device. The error is one line naming what is missing.
// $XF_CUDA_DRIVER names another driver library to open (tests use it).
Status checkCudaDevice();
// The driver part of checkCudaDevice alone (loads, initializes, has a device), for a program
// without Halide's CUDA runtime (`xfc tune --target cuda`: is there a GPU to time on?).
Status checkCudaDriver();

// Waits for every kernel launched so far (errors are left to the next call to report).
void synchronizeDevice();
// GPU memory this process holds through DeviceMemory now, and at most so far.
uint64_t deviceBytesInUse();
uint64_t deviceBytesPeak();

// One device allocation (moved, not copied; freed with the object).
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory &&other) noexcept;
  DeviceMemory &operator=(DeviceMemory &&other) noexcept;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory();

  static Expected<DeviceMemory> allocate(uint64_t bytes);
  // The device address, as the generated code takes it.
  void *address() const { return reinterpret_cast<void *>(handle_); }
  uint64_t size() const { return bytes_; }
  // `bytes` from `host` to the start of this memory (≤ size()), and back.
  Status upload(const void *host, uint64_t bytes);
  Status download(void *host, uint64_t bytes) const;

private:
  uint64_t handle_ = 0, bytes_ = 0;
};

} // namespace xfrt

#endif // XFRT_DEVICE_H
