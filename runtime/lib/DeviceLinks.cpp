//===- DeviceLinks.cpp - the executable's GPU runtime, for the server's copy ===//
#include "xfrt/DeviceLinks.h"

#include "xfrt/CudaGraphs.h"
#include "xfrt/HalideErrors.h"

#include "HalideBufferLayout.h"

extern "C" {
__attribute__((weak)) const void *halide_cuda_device_interface();
__attribute__((weak)) int halide_device_malloc(void *, xfrt::HalideBuffer *, const void *);
__attribute__((weak)) int halide_device_free(void *, xfrt::HalideBuffer *);
__attribute__((weak)) int halide_copy_to_device(void *, xfrt::HalideBuffer *, const void *);
__attribute__((weak)) int halide_copy_to_host(void *, xfrt::HalideBuffer *);
__attribute__((weak)) int halide_device_sync_global(void *, const void *);
}

namespace xfrt {
namespace {
DeviceLinks given;
bool linked = false;
} // namespace

DeviceLinks ownDeviceLinks() {
  DeviceLinks l;
  l.cudaDeviceInterface = halide_cuda_device_interface;
  l.deviceMalloc = halide_device_malloc;
  l.deviceFree = halide_device_free;
  l.copyToDevice = halide_copy_to_device;
  l.copyToHost = halide_copy_to_host;
  l.deviceSyncGlobal = halide_device_sync_global;
  l.runDeviceStep = runDeviceStep;
  l.takeHalideError = takeHalideError;
  return l;
}

void useDeviceLinks(const DeviceLinks &links) { given = links, linked = true; }

const DeviceLinks &deviceLinks() {
  static const DeviceLinks own = ownDeviceLinks();
  return linked ? given : own;
}

bool deviceLinked() { return linked; }

} // namespace xfrt
