//===- Profile.cpp - per-kernel times for --profile and --trace-out -------===//

#include "xfrt/Profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Event {
  int32_t site;
  double startUs, durationUs;
  int64_t rows, contextRows;
};

struct Recorder {
  bool enabled = false;
  Clock::time_point origin;
  std::vector<Clock::time_point> open; // per site: when it was entered
  std::vector<Event> events;
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
  recorder.events.push_back({site, start, microsSinceOrigin(now) - start, rows, contextRows});
}

namespace xfrt {

void profileStart(size_t sites) {
  recorder.origin = Clock::now();
  recorder.open.assign(sites, recorder.origin);
  recorder.events.clear();
  recorder.events.reserve(sites * 8);
  recorder.enabled = true;
}

void profileStop() { recorder.enabled = false; }

std::string profileTable(const Manifest &m, int64_t l, int64_t lz, int runs) {
  struct Row {
    int64_t calls = 0;
    double us = 0, flops = 0;
    std::string kind;
  };
  std::map<std::string, Row> rows;
  double totalUs = 0;
  for (const Event &e : recorder.events) {
    const KernelSpec &k = m.kernels[e.site];
    Row &r = rows[k.name];
    r.kind = k.tuned ? k.kind + " tuned" : k.kind;
    r.calls += 1;
    r.us += e.durationUs;
    r.flops += double(k.flopsPerRow) * double(e.rows) +
               double(k.flopsPerRowPerContextRow) * double(e.rows) * double(e.contextRows);
    totalUs += e.durationUs;
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
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return Status::failure(path + ": cannot open for writing");
  std::fprintf(f, "{\"traceEvents\": [\n");
  for (size_t i = 0; i < recorder.events.size(); ++i) {
    const Event &e = recorder.events[i];
    const KernelSpec &k = m.kernels[e.site];
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
    std::fprintf(f,
                 "%s{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
                 "\"dur\": %.3f, \"pid\": 1, \"tid\": 1, \"args\": {\"op\": \"%s\", "
                 "\"loc\": \"%s\", \"site\": %d}}",
                 i ? ",\n" : "", escaped(k.name).c_str(), escaped(k.kind).c_str(), e.startUs,
                 e.durationUs, escaped(k.op).c_str(), escaped(k.loc).c_str(), e.site);
  }
  std::fprintf(f, "\n]}\n");
  if (std::fclose(f) != 0)
    return Status::failure(path + ": write failed");
  return Status::success();
}

} // namespace xfrt
