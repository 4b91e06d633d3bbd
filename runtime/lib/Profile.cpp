//===- Profile.cpp - per-kernel times for --profile and --trace-out -------===//

#include "xfrt/Profile.h"

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
  double us = 0, rows = 0, rowContextPairs = 0;
};

// One kernel call, kept only for --trace-out and only up to the cap.
struct Event {
  int32_t site;
  double startUs, durationUs;
};

struct Recorder {
  bool enabled = false;
  size_t traceCapacity = 0;
  Clock::time_point origin;
  std::vector<Clock::time_point> open; // per site: when it was entered
  std::vector<SiteTotals> totals;
  std::vector<Event> events;
  int64_t droppedEvents = 0;
} recorder;

double microsSinceOrigin(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - recorder.origin).count();
}

} // namespace

extern "C" void xfrt_profile_enter(int32_t site) {
  if (!recorder.enabled || site < 0 || size_t(site) >= recorder.open.size())
    return;
  recorder.open[site] = Clock::now();
}

extern "C" void xfrt_profile_exit(int32_t site, int64_t rows, int64_t contextRows) {
  if (!recorder.enabled || site < 0 || size_t(site) >= recorder.open.size())
    return;
  Clock::time_point now = Clock::now();
  double start = microsSinceOrigin(recorder.open[site]);
  double duration = microsSinceOrigin(now) - start;
  SiteTotals &t = recorder.totals[site];
  t.calls += 1;
  t.us += duration;
  t.rows += double(rows);
  t.rowContextPairs += double(rows) * double(contextRows);
  if (recorder.events.size() < recorder.traceCapacity)
    recorder.events.push_back({site, start, duration});
  else if (recorder.traceCapacity > 0)
    ++recorder.droppedEvents;
}

namespace xfrt {

void profileStart(size_t sites, size_t traceEvents) {
  recorder.origin = Clock::now();
  recorder.open.assign(sites, recorder.origin);
  recorder.totals.assign(sites, SiteTotals());
  recorder.events.clear();
  recorder.events.shrink_to_fit();
  recorder.traceCapacity = traceEvents;
  recorder.droppedEvents = 0;
  recorder.enabled = true;
}

void profileStop() { recorder.enabled = false; }

int64_t profileDroppedTraceEvents() { return recorder.droppedEvents; }

std::string profileTable(const Manifest &m, int64_t l, int64_t lz, int runs) {
  struct Row {
    int64_t calls = 0;
    double us = 0, flops = 0;
    std::string kind;
  };
  std::map<std::string, Row> rows;
  double totalUs = 0;
  for (size_t site = 0; site < recorder.totals.size() && site < m.kernels.size(); ++site) {
    const SiteTotals &t = recorder.totals[site];
    if (t.calls == 0)
      continue;
    const KernelSpec &k = m.kernels[site];
    Row &r = rows[k.name];
    r.kind = k.tuned ? k.kind + " tuned" : k.kind;
    r.calls += t.calls;
    r.us += t.us;
    r.flops += double(k.flopsPerRow) * t.rows + double(k.flopsPerRowPerContextRow) * t.rowContextPairs;
    totalUs += t.us;
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](auto &a, auto &b) { return a.second.us > b.second.us; });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %-10s %7s %11s %9s %7s\n", "kernel", "kind", "calls",
                "total ms", "GFLOP/s", "%");
  out += line;
  for (auto &[name, r] : sorted) {
    char gflops[32] = "-";
    if (r.flops > 0 && r.us > 0)
      std::snprintf(gflops, sizeof gflops, "%.1f", r.flops / (r.us * 1e3));
    std::snprintf(line, sizeof line, "%-34s %-10s %7lld %11.3f %9s %6.1f%%\n", name.c_str(),
                  r.kind.c_str(), (long long)r.calls, r.us / 1e3, gflops,
                  totalUs > 0 ? 100.0 * r.us / totalUs : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-34s %-10s %7s %11.3f  (%d run%s, l=%lld, l_z=%lld)\n",
                "all kernels", "", "", totalUs / 1e3, runs, runs == 1 ? "" : "s",
                (long long)l, (long long)lz);
  out += line;
  return out;
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
