//===- CudaDriver.cpp - the driver library, counted launches, CUDA events -===//
#include "xfrt/CudaDriver.h"

#include "xfrt/CudaGraphs.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
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
// Kernels launched one by one; graph launches and the kernels in them.
std::atomic<uint64_t> launches{0}, graphLaunches{0}, graphKernels{0};


// Per entry point: calls launching kernels one by one (launches a call, fewest and most) and
// calls replayed as a CUDA graph (graph launches, kernels in them, launches beside them).
struct EntryLaunches {
  int64_t calls = 0;
  uint64_t launches = 0, fewest = UINT64_MAX, most = 0;
  int64_t graphCalls = 0;
  uint64_t graphLaunches = 0, graphKernels = 0, besideGraphs = 0;
};
std::mutex countsLock;
std::map<std::string, EntryLaunches> perEntry; // guarded by countsLock
// Counts at the last note, guarded by countsLock.
uint64_t launchesAtLastNote = 0, graphLaunchesAtLastNote = 0, graphKernelsAtLastNote = 0;

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

// A profiled kernel call's launches (deviceLaunchEventsBegin .. End): an event on the launch's
// stream right before its first launch and right after its last.
struct LaunchEvents {
  bool on = false;
  int first = -1, last = -1;
} launchEvents;

// An event of the pool recorded on `stream`, the context current; its index, or -1.
int recordEventOn(void *stream) {
  if (events.next == events.pool.size()) {
    void *event = nullptr;
    if (events.create(&event, 0) != 0)
      return -1;
    events.pool.push_back(event);
  }
  if (events.record(events.pool[events.next], stream) != 0)
    return -1;
  return int(events.next++);
}

bool lookUpEvents() {
  if (!events.looked) {
    events.looked = true;
    lookUpDriverFunction(events.create, "cuEventCreate");
    lookUpDriverFunction(events.record, "cuEventRecord");
    lookUpDriverFunction(events.synchronize, "cuEventSynchronize");
    lookUpDriverFunction(events.elapsed, "cuEventElapsedTime");
  }
  return events.create && events.record && events.synchronize && events.elapsed &&
         halide_cuda_acquire_context && halide_cuda_release_context && halide_cuda_get_stream;
}

// A launch that a CUDA graph being captured or patched does not take (CudaGraphs.cpp) goes to
// the driver and is counted; under --profile, between its call's launch events.
int countedLaunch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  KernelLaunch launch{f, {gx, gy, gz}, {bx, by, bz}, shared, stream, params, extra};
  if (std::optional<int> rc = graphTakesLaunch(launch))
    return *rc;
  launches.fetch_add(1, std::memory_order_relaxed);
  const bool timed = launchEvents.on && lookUpEvents();
  if (timed && launchEvents.first < 0) // Halide's context is current inside its launch
    launchEvents.first = recordEventOn(stream);
  int rc = driverLaunch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
  if (timed && rc == 0)
    launchEvents.last = recordEventOn(stream);
  return rc;
}

} // namespace

// Halide's acquire hands out the context without making it current (its launches push it):
// pushed here too, or event and stream calls would fail on a real driver with no context.
bool inHalideContext(const std::function<bool(void *stream)> &f) {
  static auto push = reinterpret_cast<int (*)(void *)>(driverSymbol("cuCtxPushCurrent_v2"));
  static auto pop = reinterpret_cast<int (*)(void **)>(driverSymbol("cuCtxPopCurrent_v2"));
  if (!push || !pop || !halide_cuda_acquire_context || !halide_cuda_release_context ||
      !halide_cuda_get_stream)
    return false;
  void *context = nullptr, *stream = nullptr;
  if (halide_cuda_acquire_context(nullptr, &context, true) != 0)
    return false;
  bool ok = false;
  if (push(context) == 0) {
    ok = halide_cuda_get_stream(nullptr, context, &stream) == 0 && f(stream);
    void *popped = nullptr;
    pop(&popped);
  }
  halide_cuda_release_context(nullptr);
  return ok;
}

int driverLaunchKernel(const KernelLaunch &k) {
  if (!driverLaunch)
    return -1;
  return driverLaunch(k.function, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1],
                      k.block[2], k.shared, k.stream, k.params, k.extra);
}

void countGraphLaunch(uint64_t kernels) {
  graphLaunches.fetch_add(1, std::memory_order_relaxed);
  graphKernels.fetch_add(kernels, std::memory_order_relaxed);
}

const char *driverLibraryName() {
  const char *override = std::getenv("XF_CUDA_DRIVER");
  return override && *override ? override : "libcuda.so.1";
}

void *openDriver() {
  static void *driver = dlopen(driverLibraryName(), RTLD_NOW | RTLD_LOCAL);
  return driver;
}

void *driverSymbol(const char *symbol) {
  void *driver = openDriver();
  return driver ? dlsym(driver, symbol) : nullptr;
}

uint64_t deviceLaunches() { return launches.load(std::memory_order_relaxed); }

void noteDeviceCall(const char *entry) {
  std::lock_guard<std::mutex> guard(countsLock);
  uint64_t now = deviceLaunches(), n = now - launchesAtLastNote;
  uint64_t graphsNow = graphLaunches.load(), kernelsNow = graphKernels.load();
  uint64_t g = graphsNow - graphLaunchesAtLastNote, k = kernelsNow - graphKernelsAtLastNote;
  launchesAtLastNote = now, graphLaunchesAtLastNote = graphsNow, graphKernelsAtLastNote = kernelsNow;
  EntryLaunches &e = perEntry[entry];
  if (g > 0) {
    e.graphCalls += 1, e.graphLaunches += g, e.graphKernels += k, e.besideGraphs += n;
    return;
  }
  e.calls += 1;
  e.launches += n;
  e.fewest = std::min(e.fewest, n);
  e.most = std::max(e.most, n);
}

void forgetLaunchCounts() {
  std::lock_guard<std::mutex> guard(countsLock);
  perEntry.clear();
  launchesAtLastNote = deviceLaunches();
  graphLaunchesAtLastNote = graphLaunches.load(), graphKernelsAtLastNote = graphKernels.load();
}

namespace {
std::string perCall(uint64_t total, int64_t calls) {
  char text[32];
  std::snprintf(text, sizeof text, total % uint64_t(calls) ? "%.1f" : "%.0f",
                double(total) / double(calls));
  return text;
}
} // namespace

std::string launchSummary() {
  std::lock_guard<std::mutex> guard(countsLock);
  std::string out;
  for (const auto &[entry, e] : perEntry) {
    out += "kernel launches: " + entry + ": ";
    if (e.calls > 0) {
      out += std::to_string(e.calls) + (e.calls == 1 ? " call, " : " calls, ") +
             std::to_string(e.fewest);
      if (e.most != e.fewest)
        out += "-" + std::to_string(e.most);
      out += " launches a call";
    }
    if (e.graphCalls > 0)
      out += std::string(e.calls > 0 ? "; " : "") + std::to_string(e.graphCalls) +
             (e.graphCalls == 1 ? " call" : " calls") + " as a CUDA graph, " +
             perCall(e.graphLaunches, e.graphCalls) + " graph launch" +
             (e.graphLaunches == uint64_t(e.graphCalls) ? "" : "es") + " (" +
             perCall(e.graphKernels, e.graphCalls) + " kernels) + " +
             perCall(e.besideGraphs, e.graphCalls) + " launches a call";
    out += "\n";
  }
  for (const auto &entry : perEntry)
    if (entry.second.graphCalls > 0) {
      out += "kernels replayed in CUDA graphs are not timed one by one: the table has the calls "
             "launched one by one (--cuda-graphs off times every call)\n";
      break;
    }
  return out;
}

bool deviceEventsAvailable() { return lookUpEvents(); }

int deviceEventRecord() {
  // Not into a graph being captured or patched: its kernels run later, in one launch.
  if (!lookUpEvents() || graphHoldsLaunches())
    return -1;
  int index = -1;
  inHalideContext([&](void *stream) { return (index = recordEventOn(stream)) >= 0; });
  return index;
}

void deviceLaunchEventsBegin() { launchEvents = {true, -1, -1}; }

std::pair<int, int> deviceLaunchEventsEnd() {
  std::pair<int, int> bracket{launchEvents.first, launchEvents.last};
  launchEvents = {};
  return bracket;
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
  void *fn = xfrt::driverSymbol(name);
  if (fn && std::strcmp(name, "cuLaunchKernel") == 0) {
    xfrt::driverLaunch = reinterpret_cast<xfrt::Launch>(fn);
    return reinterpret_cast<void *>(&xfrt::countedLaunch);
  }
  return fn;
}
