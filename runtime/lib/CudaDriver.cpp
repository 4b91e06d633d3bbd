//===- CudaDriver.cpp - the driver library, counted launches, CUDA events -===//
#include "xfrt/CudaDriver.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

extern "C" {
// Halide's CUDA runtime (weak references: CPU executables lack it).
__attribute__((weak)) int halide_cuda_acquire_context(void *, void **, bool);
__attribute__((weak)) int halide_cuda_release_context(void *);
__attribute__((weak)) int halide_cuda_get_stream(void *, void *, void **);
}

namespace xfrt {
namespace {

using Launch = int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       void *, void **, void **);
Launch driverLaunch = nullptr;
std::atomic<uint64_t> launches{0};

int countedLaunch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  launches.fetch_add(1, std::memory_order_relaxed);
  return driverLaunch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

// Per entry point: calls, and the launches of each (fewest and most).
struct EntryLaunches {
  int64_t calls = 0;
  uint64_t launches = 0, fewest = UINT64_MAX, most = 0;
};
std::mutex countsLock;
std::map<std::string, EntryLaunches> perEntry; // guarded by countsLock
uint64_t launchesAtLastNote = 0;               // guarded by countsLock

// The driver's event functions, and the pool of events (CUevent handles).
struct Events {
  int (*create)(void **, unsigned) = nullptr;
  int (*record)(void *, void *) = nullptr;
  int (*synchronize)(void *) = nullptr;
  int (*elapsed)(float *, void *, void *) = nullptr;
  std::vector<void *> pool;
  size_t next = 0;
  bool looked = false;
} events;

bool lookUpEvents() {
  if (!events.looked) {
    events.looked = true;
    if (void *driver = openDriver()) {
      events.create = reinterpret_cast<int (*)(void **, unsigned)>(dlsym(driver, "cuEventCreate"));
      events.record = reinterpret_cast<int (*)(void *, void *)>(dlsym(driver, "cuEventRecord"));
      events.synchronize = reinterpret_cast<int (*)(void *)>(dlsym(driver, "cuEventSynchronize"));
      events.elapsed =
          reinterpret_cast<int (*)(float *, void *, void *)>(dlsym(driver, "cuEventElapsedTime"));
    }
  }
  return events.create && events.record && events.synchronize && events.elapsed &&
         halide_cuda_acquire_context && halide_cuda_release_context && halide_cuda_get_stream;
}

// Runs `f(stream)` with Halide's context current (as its kernel launches have it).
template <typename F> bool inHalideContext(F f) {
  void *context = nullptr, *stream = nullptr;
  if (halide_cuda_acquire_context(nullptr, &context, true) != 0)
    return false;
  bool ok = halide_cuda_get_stream(nullptr, context, &stream) == 0 && f(stream);
  halide_cuda_release_context(nullptr);
  return ok;
}

} // namespace

const char *driverLibraryName() {
  const char *override = std::getenv("XF_CUDA_DRIVER");
  return override && *override ? override : "libcuda.so.1";
}

void *openDriver() {
  static void *driver = dlopen(driverLibraryName(), RTLD_NOW | RTLD_LOCAL);
  return driver;
}

uint64_t deviceLaunches() { return launches.load(std::memory_order_relaxed); }

void noteDeviceCall(const char *entry) {
  std::lock_guard<std::mutex> guard(countsLock);
  uint64_t now = deviceLaunches(), n = now - launchesAtLastNote;
  launchesAtLastNote = now;
  EntryLaunches &e = perEntry[entry];
  e.calls += 1;
  e.launches += n;
  e.fewest = std::min(e.fewest, n);
  e.most = std::max(e.most, n);
}

void forgetLaunchCounts() {
  std::lock_guard<std::mutex> guard(countsLock);
  perEntry.clear();
  launchesAtLastNote = deviceLaunches();
}

std::string launchSummary() {
  std::lock_guard<std::mutex> guard(countsLock);
  std::string out;
  for (const auto &[entry, e] : perEntry) {
    out += "kernel launches: " + entry + ": " + std::to_string(e.calls) +
           (e.calls == 1 ? " call, " : " calls, ") + std::to_string(e.fewest);
    if (e.most != e.fewest)
      out += "-" + std::to_string(e.most);
    out += " launches a call\n";
  }
  return out;
}

bool deviceEventsAvailable() { return lookUpEvents(); }

int deviceEventRecord() {
  if (!lookUpEvents())
    return -1;
  int index = -1;
  inHalideContext([&](void *stream) {
    if (events.next == events.pool.size()) {
      void *event = nullptr;
      if (events.create(&event, 0) != 0)
        return false;
      events.pool.push_back(event);
    }
    if (events.record(events.pool[events.next], stream) != 0)
      return false;
    index = int(events.next++);
    return true;
  });
  return index;
}

double deviceEventMicros(int from, int to) {
  if (from < 0 || to < 0 || size_t(std::max(from, to)) >= events.next)
    return 0;
  float ms = 0;
  inHalideContext([&](void *) {
    return events.synchronize(events.pool[size_t(to)]) == 0 &&
           events.elapsed(&ms, events.pool[size_t(from)], events.pool[size_t(to)]) == 0;
  });
  return double(ms) * 1e3;
}

void deviceEventsReset(int keep) { events.next = std::min(events.next, size_t(std::max(keep, 0))); }

} // namespace xfrt

// Halide's CUDA runtime asks this for each driver function (cuda.cpp's halide_cuda_get_symbol
// is weak): the functions of the library checkCudaDevice opened, cuLaunchKernel counted.
extern "C" void *halide_cuda_get_symbol(void *, const char *name) {
  void *driver = xfrt::openDriver();
  if (!driver)
    return nullptr;
  void *fn = dlsym(driver, name);
  if (fn && std::strcmp(name, "cuLaunchKernel") == 0) {
    xfrt::driverLaunch = reinterpret_cast<xfrt::Launch>(fn);
    return reinterpret_cast<void *>(&xfrt::countedLaunch);
  }
  return fn;
}
