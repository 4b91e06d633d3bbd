//===- Profile.cpp - per-kernel times for --profile and --trace-out -------===//

#include "xfrt/Profile.h"

#include "xfrt/Amx.h"
#include "xfrt/CudaDriver.h"
#include "xfrt/CudaGraphs.h"
#include "xfrt/Device.h"
#include "xfrt/Json.h"
#include "xfrt/OutputFile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Per call site: what the table needs, so --profile costs the same memory for any --repeat.
struct SiteTotals {
  int64_t calls = 0;
  double us = 0, rows = 0, rowContextPairs = 0, contextRows = 0;
};

// One kernel call, kept only for --trace-out and only up to the cap.
struct Event {
  int32_t site;
  double startUs, durationUs;
};

// A kernel call on the GPU timed by CUDA events, read back once many have been recorded.
struct PendingCall {
  int32_t site;
  int startEvent, endEvent;
  int64_t rows, contextRows;
};
constexpr size_t kPendingCalls = 4096;

// How kernel calls are timed: the host clock (CPU builds); on a GPU, CUDA events recorded
// on the kernels' stream around each call (no synchronisation per kernel), or, where the
// driver has no events, the host clock with a synchronisation before and after each call.
enum class Timing { Host, DeviceEvents, HostSynchronized };

struct Recorder {
  bool enabled = false;
  bool onDevice = false; // setProfileOnDevice
  Timing timing = Timing::Host;
  size_t traceCapacity = 0;
  Clock::time_point origin;
  std::vector<Clock::time_point> open; // per site: when it was entered
  std::vector<int> openEvent;          // per site: its entry's event (Timing::DeviceEvents)
  int originEvent = -1;
  std::vector<PendingCall> pending;
  std::vector<SiteTotals> totals;
  std::vector<Event> events;
  int64_t droppedEvents = 0;
} recorder;

double microsSinceOrigin(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - recorder.origin).count();
}

void addCall(int32_t site, double start, double duration, int64_t rows, int64_t contextRows) {
  SiteTotals &t = recorder.totals[site];
  t.calls += 1;
  t.us += duration;
  t.rows += double(rows);
  t.rowContextPairs += double(rows) * double(contextRows);
  t.contextRows += double(contextRows);
  if (recorder.events.size() < recorder.traceCapacity)
    recorder.events.push_back({site, start, duration});
  else if (recorder.traceCapacity > 0)
    ++recorder.droppedEvents;
}

// The device times of the pending calls (waits for the last one's end only).
void readPendingEvents() {
  for (const PendingCall &p : recorder.pending)
    addCall(p.site, xfrt::deviceEventMicros(recorder.originEvent, p.startEvent),
            xfrt::deviceEventMicros(p.startEvent, p.endEvent), p.rows, p.contextRows);
  recorder.pending.clear();
  xfrt::deviceEventsReset(recorder.originEvent + 1);
}

} // namespace

namespace xfrt {
void setProfileOnDevice(bool onDevice) { recorder.onDevice = onDevice; }
} // namespace xfrt

// Kernel calls going into a CUDA graph (captured or patched) run later, in one graph launch:
// not timed one by one (launchSummary counts them).
bool inGraph() { return recorder.onDevice && xfrt::graphHoldsLaunches(); }

extern "C" void xfrt_profile_enter(int32_t site) {
  if (!recorder.enabled || site < 0 || size_t(site) >= recorder.open.size() || inGraph())
    return;
  if (recorder.timing == Timing::DeviceEvents) {
    recorder.openEvent[site] = xfrt::deviceEventRecord(); // where the call launches nothing
    xfrt::deviceLaunchEventsBegin();
    return;
  }
  if (recorder.timing == Timing::HostSynchronized)
    xfrt::synchronizeDevice();
  recorder.open[site] = Clock::now();
}

extern "C" void xfrt_profile_exit(int32_t site, int64_t rows, int64_t contextRows) {
  if (!recorder.enabled || site < 0 || size_t(site) >= recorder.open.size() || inGraph())
    return;
  if (recorder.timing == Timing::DeviceEvents) {
    // From right before the call's first launch to right after its last (CudaDriver.h).
    // The exit's own event only where the call launched nothing one by one.
    auto [first, last] = xfrt::deviceLaunchEventsEnd();
    recorder.pending.push_back({site, first >= 0 ? first : recorder.openEvent[site],
                                last >= 0 ? last : xfrt::deviceEventRecord(), rows,
                                contextRows});
    if (recorder.pending.size() >= kPendingCalls)
      readPendingEvents();
    return;
  }
  if (recorder.timing == Timing::HostSynchronized)
    xfrt::synchronizeDevice();
  Clock::time_point now = Clock::now();
  double start = microsSinceOrigin(recorder.open[site]);
  addCall(site, start, microsSinceOrigin(now) - start, rows, contextRows);
}

namespace xfrt {

void profileStart(size_t sites, size_t traceEvents) {
  recorder.timing = !recorder.onDevice        ? Timing::Host
                    : deviceEventsAvailable() ? Timing::DeviceEvents
                                              : Timing::HostSynchronized;
  if (recorder.onDevice) {
    forgetLaunchCounts();
    deviceEventsReset(0);
    recorder.originEvent = recorder.timing == Timing::DeviceEvents ? deviceEventRecord() : -1;
    if (recorder.originEvent < 0 && recorder.timing == Timing::DeviceEvents)
      recorder.timing = Timing::HostSynchronized;
  }
  recorder.pending.clear();
  recorder.origin = Clock::now();
  recorder.openEvent.assign(sites, -1);
  recorder.open.assign(sites, recorder.origin);
  recorder.totals.assign(sites, SiteTotals());
  recorder.events.clear();
  recorder.events.shrink_to_fit();
  recorder.traceCapacity = traceEvents;
  recorder.droppedEvents = 0;
  recorder.enabled = true;
}

void profileStop() {
  if (recorder.enabled && recorder.timing == Timing::DeviceEvents)
    readPendingEvents();
  recorder.enabled = false;
}

int64_t profileDroppedTraceEvents() { return recorder.droppedEvents; }

namespace {

// One kernel (all its call sites) over the recorded runs.
struct KernelTotals {
  std::string name, kind, products = "fp32";
  bool amx = false; // KernelSpec::amx, and this process may use the tiles for `products`
  int64_t calls = 0;
  double us = 0, flops = 0, bytes = 0;
  // The peak of the products the kernel runs on (KernelSpec::products; the AMX tiles' where
  // they run its rows past its GEMV); <= 0 where unknown.
  double peak(const MachineCeilings &c) const {
    if (products == "int8")
      return amx ? c.amxInt8Gops : c.int8Gops;
    return products == "bf16" ? (amx ? c.amxBf16Gflops : c.bf16Gflops) : c.gflops;
  }
  // Against the machine's ceilings: the roofline time over the measured
  // time, and which ceiling sets the roofline.
  bool readable(const MachineCeilings &c) const {
    return (flops > 0 || bytes > 0) && (flops == 0 || peak(c) > 0);
  }
  double fraction(const MachineCeilings &c) const {
    double compute = flops > 0 ? flops / (peak(c) * 1e3) : 0;
    return us > 0 ? std::max(compute, bytes / (c.readGBs * 1e3)) / us : 0;
  }
  const char *bound(const MachineCeilings &c) const {
    return flops > 0 && flops / peak(c) >= bytes / c.readGBs ? "compute" : "memory";
  }
};

// Slowest first; the total time of all kernels.
std::vector<KernelTotals> kernelTotals(const Manifest &m, double &totalUs) {
  std::map<std::string, KernelTotals> byName;
  totalUs = 0;
  for (size_t site = 0; site < recorder.totals.size() && site < m.kernels.size(); ++site) {
    const SiteTotals &t = recorder.totals[site];
    if (t.calls == 0)
      continue;
    const KernelSpec &k = m.kernels[site];
    KernelTotals &r = byName[k.name];
    r.name = k.name;
    r.kind = k.tuned ? k.kind + " tuned" : k.kind;
    r.products = k.products;
    r.amx = k.amx && (k.products == "int8"   ? amxInt8Usable()
                      : k.products == "bf16" ? amxBf16Usable()
                                             : false);
    r.calls += t.calls;
    r.us += t.us;
    r.flops += double(k.flopsPerRow) * t.rows + double(k.flopsPerRowPerContextRow) * t.rowContextPairs;
    r.bytes += double(k.bytesPerCall) * double(t.calls) + double(k.bytesPerRow) * t.rows +
               double(k.bytesPerContextRow) * t.contextRows;
    totalUs += t.us;
  }
  std::vector<KernelTotals> sorted;
  for (auto &[name, r] : byName)
    sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(),
            [](const KernelTotals &a, const KernelTotals &b) { return a.us > b.us; });
  return sorted;
}

// The CPU's ceilings (MachinePeak.h), or the GPU's for kernels on the device
// (DeviceCeilings.h); zero where they could not be measured.
bool usable(const MachineCeilings *c) { return c && c->gflops > 0 && c->readGBs > 0; }

// The roofline's line for the bf16 / int8 peaks when a kernel runs on them: which peak, or why
// none (the CPU has no such product, or --peak gave only the fp32 one).
std::string productPeaksLine(const std::vector<KernelTotals> &kernels, const MachineCeilings &c) {
  bool bf16 = false, int8 = false, amxBf16 = false, amxInt8 = false;
  for (const KernelTotals &r : kernels) {
    bool isBf16 = r.products == "bf16", isInt8 = r.products == "int8";
    bf16 |= isBf16 && !r.amx, int8 |= isInt8 && !r.amx;
    amxBf16 |= isBf16 && r.amx, amxInt8 |= isInt8 && r.amx;
  }
  std::string out;
  char line[160];
  auto say = [&](bool used, const char *what, double peak, const char *unit) {
    if (!used)
      return;
    if (peak > 0)
      std::snprintf(line, sizeof line, "roofline: %s %.1f %s for its kernels\n", what, peak, unit);
    else
      std::snprintf(line, sizeof line, "roofline: %s %s: those kernels have no bound\n", what,
                    peak == 0 ? "absent on this CPU" : "not measured");
    out += line;
  };
  say(bf16, "bf16 dot-product peak", c.bf16Gflops, "GFLOP/s");
  say(int8, "int8 dot-product peak", c.int8Gops, "GOP/s");
  say(amxBf16, "AMX bf16 tiles' peak (rows past the GEMV)", c.amxBf16Gflops, "GFLOP/s");
  say(amxInt8, "AMX int8 tiles' peak (rows past the GEMV)", c.amxInt8Gops, "GOP/s");
  return out;
}

} // namespace

bool profileNeedsProductPeaks(const Manifest &m) {
  for (const KernelSpec &k : m.kernels)
    if (k.products != "fp32")
      return true;
  return false;
}

std::string profileTable(const Manifest &m, int64_t l, int64_t lz, int runs,
                         const MachineCeilings *ceilings) {
  double totalUs = 0;
  std::vector<KernelTotals> kernels = kernelTotals(m, totalUs);
  const bool roofline = usable(ceilings);
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-34s %-10s %7s %11s %9s %7s", "kernel", "kind", "calls",
                "total ms", "GFLOP/s", "%");
  out += line;
  if (roofline) {
    std::snprintf(line, sizeof line, " %8s %-8s %8s", "GB/s", "bound", "of bound");
    out += line;
  }
  out += "\n";
  for (const KernelTotals &r : kernels) {
    char gflops[32] = "-", gbs[32] = "-";
    if (r.flops > 0 && r.us > 0)
      std::snprintf(gflops, sizeof gflops, "%.1f", r.flops / (r.us * 1e3));
    if (r.bytes > 0 && r.us > 0)
      std::snprintf(gbs, sizeof gbs, "%.1f", r.bytes / (r.us * 1e3));
    std::snprintf(line, sizeof line, "%-34s %-10s %7lld %11.3f %9s %6.1f%%", r.name.c_str(),
                  r.kind.c_str(), (long long)r.calls, r.us / 1e3, gflops,
                  totalUs > 0 ? 100.0 * r.us / totalUs : 0.0);
    out += line;
    if (roofline && r.readable(*ceilings)) {
      std::snprintf(line, sizeof line, " %8s %-8s %7.1f%%", gbs, r.bound(*ceilings),
                    100.0 * r.fraction(*ceilings));
      out += line;
    } else if (roofline) {
      out += "        -        -        -";
    }
    out += "\n";
  }
  std::snprintf(line, sizeof line, "%-34s %-10s %7s %11.3f  (%d run%s, l=%lld, l_z=%lld)\n",
                "all kernels", "", "", totalUs / 1e3, runs, runs == 1 ? "" : "s",
                (long long)l, (long long)lz);
  out += line;
  if (roofline) {
    std::snprintf(line, sizeof line,
                  recorder.onDevice
                      ? "roofline: GPU FP32 peak %.1f GFLOP/s, memory bandwidth %.1f GB/s "
                        "(device copy, read + write) (%s)\n"
                      : "roofline: FMA peak %.1f GFLOP/s, read bandwidth %.1f GB/s (%s)\n",
                  ceilings->gflops, ceilings->readGBs, ceilings->source.c_str());
    out += line;
    out += productPeaksLine(kernels, *ceilings);
  }
  if (recorder.onDevice) {
    out += recorder.timing == Timing::DeviceEvents
               ? "device times: CUDA events around each kernel call, no synchronisation\n"
               : "device times: host clock, the device synchronised around each kernel call "
                 "(the driver has no events)\n";
    out += launchSummary();
  }
  return out;
}

Status writeProfileJson(const std::string &path, const Manifest &m, int64_t l, int64_t lz,
                        int runs, const MachineCeilings *ceilings) {
  double totalUs = 0;
  std::vector<KernelTotals> kernels = kernelTotals(m, totalUs);
  const bool roofline = usable(ceilings);
  char number[64];
  auto num = [&](double v) {
    std::snprintf(number, sizeof number, "%.6g", v);
    return std::string(number);
  };
  std::string text = "{\"model\": " + quoteJson(m.model) + ", \"l\": " + std::to_string(l) +
                     ", \"l_z\": " + std::to_string(lz) + ", \"runs\": " + std::to_string(runs) +
                     ", \"total_ms\": " + num(totalUs / 1e3) + ",\n";
  std::string products;
  if (roofline && ceilings->bf16Gflops >= 0 && ceilings->int8Gops >= 0)
    products = ", \"bf16_gflops\": " + num(ceilings->bf16Gflops) +
               ", \"int8_gops\": " + num(ceilings->int8Gops);
  if (roofline && ceilings->amxBf16Gflops >= 0 && ceilings->amxInt8Gops >= 0)
    products += ", \"amx_bf16_gflops\": " + num(ceilings->amxBf16Gflops) +
                ", \"amx_int8_gops\": " + num(ceilings->amxInt8Gops);
  text += roofline ? "\"machine\": {\"gflops\": " + num(ceilings->gflops) + ", \"read_gbs\": " +
                         num(ceilings->readGBs) + products +
                         ", \"source\": " + quoteJson(ceilings->source) + "},\n"
                   : std::string("\"machine\": null,\n");
  text += "\"kernels\": [";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelTotals &r = kernels[i];
    text += (i ? ",\n  " : "\n  ");
    text += "{\"name\": " + quoteJson(r.name) + ", \"kind\": " + quoteJson(r.kind) +
            ", \"calls\": " + std::to_string(r.calls) + ", \"ms\": " + num(r.us / 1e3) +
            ", \"flops\": " + num(r.flops) + ", \"bytes\": " + num(r.bytes);
    if (r.products != "fp32")
      text += ", \"products\": " + quoteJson(r.products);
    if (r.amx)
      text += ", \"amx\": true";
    if (roofline && r.readable(*ceilings))
      text += ", \"bound\": " + quoteJson(r.bound(*ceilings)) +
              ", \"fraction_of_bound\": " + num(r.fraction(*ceilings));
    text += "}";
  }
  text += "\n]}\n";
  return writeFileAtomically(path, text.data(), text.size());
}

Status writeTrace(const std::string &path, const Manifest &m) {
  // Names and locations come from the compiler's manifest; escape quotes and backslashes.
  auto escaped = [](const std::string &s) {
    std::string o;
    for (char c : s) {
      if (c == '"' || c == '\\')
        o.push_back('\\');
      if (static_cast<unsigned char>(c) >= 0x20)
        o.push_back(c);
    }
    return o;
  };
  std::string text = "{\"traceEvents\": [\n";
  char line[160];
  for (size_t i = 0; i < recorder.events.size(); ++i) {
    const Event &e = recorder.events[i];
    const KernelSpec &k = m.kernels[e.site];
    text += i ? ",\n{\"name\": \"" : "{\"name\": \"";
    text += escaped(k.name) + "\", \"cat\": \"" + escaped(k.kind) + "\", \"ph\": \"X\", ";
    std::snprintf(line, sizeof line, "\"ts\": %.3f, \"dur\": %.3f, \"pid\": 1, \"tid\": 1, ",
                  e.startUs, e.durationUs);
    text += line;
    text += "\"args\": {\"op\": \"" + escaped(k.op) + "\", \"loc\": \"" + escaped(k.loc) +
            "\", \"site\": " + std::to_string(e.site) + "}}";
  }
  text += "\n], \"otherData\": {\"recorded_calls\": " + std::to_string(recorder.events.size()) +
          ", \"dropped_calls\": " + std::to_string(recorder.droppedEvents) + "}}\n";
  return writeFileAtomically(path, text.data(), text.size());
}

} // namespace xfrt
