//===- Timing.cpp - Interleaved timing of candidates × cases --------------===//

#include "Timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

namespace xftune {
namespace {

constexpr double kMinSampleSeconds = 100e-6;
constexpr int kMaxCallsPerSample = 64;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double processCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

Stats summarize(const std::vector<Sample> &samples) {
  Stats stats;
  if (samples.empty())
    return stats;
  std::vector<double> wall, cpu;
  for (const Sample &s : samples)
    wall.push_back(s.wall), cpu.push_back(s.cpu);
  stats.wallMin = *std::min_element(wall.begin(), wall.end());
  stats.wallMedian = median(wall);
  stats.cpuMedian = median(cpu);
  return stats;
}

TimingResult timeInterleaved(int candidates, int cases, int repeats, double deadline,
                             const std::function<bool(int, int)> &call) {
  TimingResult result;
  result.samples.assign(candidates, std::vector<std::vector<Sample>>(cases));
  result.failed.assign(candidates, false);
  result.callsPerSample.assign(cases, 1);

  // Two warm-up calls (first-call allocations, caches, the thread pool), and the
  // shortest second call of each case, which sets its calls per sample.
  std::vector<double> shortest(cases, INFINITY);
  for (int i = 0; i < candidates; ++i)
    for (int c = 0; c < cases && !result.failed[i]; ++c) {
      result.failed[i] = !call(i, c);
      double start = wallSeconds();
      result.failed[i] = result.failed[i] || !call(i, c);
      shortest[c] = std::min(shortest[c], wallSeconds() - start);
    }
  for (int c = 0; c < cases; ++c)
    if (std::isfinite(shortest[c]))
      result.callsPerSample[c] =
          int(std::clamp(std::ceil(kMinSampleSeconds / std::max(shortest[c], 1e-9)), 1.0,
                         double(kMaxCallsPerSample)));

  const int minRounds = std::min(3, repeats);
  double lastRound = 0;
  for (int round = 0; round < repeats; ++round) {
    const double roundStart = wallSeconds();
    if (round >= minRounds && roundStart + lastRound > deadline)
      break;
    for (int i = 0; i < candidates; ++i)
      for (int c = 0; c < cases && !result.failed[i]; ++c) {
        const int calls = result.callsPerSample[c];
        const double wall0 = wallSeconds(), cpu0 = processCpuSeconds();
        for (int j = 0; j < calls && !result.failed[i]; ++j)
          result.failed[i] = !call(i, c);
        const double cpu1 = processCpuSeconds(), wall1 = wallSeconds();
        result.samples[i][c].push_back({(wall1 - wall0) / calls, (cpu1 - cpu0) / calls});
      }
    lastRound = wallSeconds() - roundStart;
    result.rounds = round + 1;
  }
  return result;
}

} // namespace xftune
