//===- DeviceCeilings.cpp - the GPU's FP32 peak and memory bandwidth ------===//
//
// xfrt/DeviceCeilings.h. The driver's functions are looked up in the library the runtime
// opened (CudaDriver.h); everything runs in Halide's context, on its stream.
//
//===----------------------------------------------------------------------===//
#include "xfrt/DeviceCeilings.h"

#include "xfrt/CudaDriver.h"

#include <algorithm>
#include <cstdio>

namespace xfrt {
namespace {

using Ptr = unsigned long long; // CUdeviceptr

struct DriverCalls {
  int (*deviceGet)(int *, int) = nullptr;
  int (*name)(char *, int, int) = nullptr;
  int (*attribute)(int *, int, int) = nullptr;
  int (*alloc)(Ptr *, size_t) = nullptr;
  int (*free)(Ptr) = nullptr;
  int (*copy)(Ptr, Ptr, size_t, void *) = nullptr;
  int (*eventCreate)(void **, unsigned) = nullptr;
  int (*eventDestroy)(void *) = nullptr;
  int (*eventRecord)(void *, void *) = nullptr;
  int (*eventSynchronize)(void *) = nullptr;
  int (*eventElapsed)(float *, void *, void *) = nullptr;

  bool lookUp() {
    auto get = [](auto &f, const char *symbol) { return lookUpDriverFunction(f, symbol); };
    return get(deviceGet, "cuDeviceGet") && get(name, "cuDeviceGetName") &&
           get(attribute, "cuDeviceGetAttribute") && get(alloc, "cuMemAlloc_v2") &&
           get(free, "cuMemFree_v2") && get(copy, "cuMemcpyDtoDAsync_v2") &&
           get(eventCreate, "cuEventCreate") && get(eventDestroy, "cuEventDestroy_v2") &&
           get(eventRecord, "cuEventRecord") && get(eventSynchronize, "cuEventSynchronize") &&
           get(eventElapsed, "cuEventElapsedTime");
  }
};

// CUdevice_attribute numbers (cuda.h).
constexpr int kClockRateKHz = 13, kMultiprocessors = 16, kMajor = 75, kMinor = 76;

/// Bytes read and written per second by the best of three 256 MiB device copies; 0 where
/// the events give no time (a driver that does not time copies).
Expected<double> copyBandwidth(const DriverCalls &cu) {
  constexpr size_t kBytes = size_t(256) << 20;
  double best = 0;
  std::string failure;
  bool ran = inHalideContext([&](void *stream) {
    Ptr a = 0, b = 0;
    void *start = nullptr, *end = nullptr;
    bool ok = cu.alloc(&a, kBytes) == 0 && cu.alloc(&b, kBytes) == 0 &&
              cu.eventCreate(&start, 0) == 0 && cu.eventCreate(&end, 0) == 0;
    for (int pass = 0; ok && pass < 4; ++pass) { // the first pass warms up
      float ms = 0;
      ok = cu.eventRecord(start, stream) == 0 && cu.copy(b, a, kBytes, stream) == 0 &&
           cu.eventRecord(end, stream) == 0 && cu.eventSynchronize(end) == 0 &&
           cu.eventElapsed(&ms, start, end) == 0;
      if (ok && pass > 0 && ms > 0)
        best = std::max(best, 2.0 * double(kBytes) / (double(ms) * 1e6));
    }
    if (!ok)
      failure = "a device copy or its events failed";
    for (void *e : {start, end})
      if (e)
        cu.eventDestroy(e);
    for (Ptr p : {a, b})
      if (p)
        cu.free(p);
    return ok;
  });
  if (!ran)
    return makeError(failure.empty() ? "no CUDA context to measure in" : failure);
  if (best <= 0)
    return makeError("the driver's events timed the device copy as 0 ms");
  return best;
}

} // namespace

int fp32LanesPerSm(int major, int minor) {
  if (major >= 9 || (major == 8 && minor >= 6))
    return 128;
  return 64;
}

MachineCeilings deviceCeilings(const std::string &cacheFile, std::string &note) {
  DriverCalls cu;
  int device = 0, major = 0, minor = 0, sms = 0, clockKHz = 0;
  char name[256] = {};
  if (!cu.lookUp() || cu.deviceGet(&device, 0) != 0 ||
      cu.name(name, int(sizeof name), device) != 0 ||
      cu.attribute(&major, kMajor, device) != 0 || cu.attribute(&minor, kMinor, device) != 0 ||
      cu.attribute(&sms, kMultiprocessors, device) != 0 ||
      cu.attribute(&clockKHz, kClockRateKHz, device) != 0) {
    note = "no roofline: the CUDA driver does not describe the device";
    return {};
  }
  const std::string key = std::string("GPU ") + name + " | sm_" + std::to_string(major) +
                          std::to_string(minor);
  const double gflops = double(sms) * fp32LanesPerSm(major, minor) * 2.0 * clockKHz * 1e-6;
  return keptCeilings(key, cacheFile, note, /*loadThreads=*/0,
                      [&]() -> Expected<MachineCeilings> {
                        if (gflops <= 0)
                          return makeError("the device reports no SMs or clock rate");
                        Expected<double> gbs = copyBandwidth(cu);
                        if (!gbs)
                          return gbs.status();
                        return MachineCeilings{gflops, *gbs, "measured"};
                      });
}

} // namespace xfrt
