//===- Timing.h - Interleaved timing of candidates × cases ------*- C++ -*-===//
//
// In: how many candidates and cases, a function making one call of a
// candidate on a case, a number of rounds and a deadline. Out: per candidate
// and case the wall and process-CPU time of one call, per round. Each round
// times every candidate on every case once, so slow drifts of the machine
// (frequency, other load) hit all candidates alike.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_TIMING_H
#define XF_TOOLS_XF_TUNE_WORKER_TIMING_H

#include <functional>
#include <vector>

namespace xftune {

/// Seconds of the steady clock, and of CPU used by all threads of the process
/// (Halide's worker pool included, spinning too).
double wallSeconds();
double processCpuSeconds();

struct Sample {
  double wall = 0, cpu = 0; // seconds per call
};

struct Stats {
  double wallMin = 0, wallMedian = 0, cpuMedian = 0;
};

Stats summarize(const std::vector<Sample> &samples);

struct TimingResult {
  /// samples[candidate][case], one per round.
  std::vector<std::vector<std::vector<Sample>>> samples;
  /// Calls averaged into one sample, per case (same for all candidates).
  std::vector<int> callsPerSample;
  std::vector<bool> failed; // per candidate: a call returned false
  int rounds = 0;
};

/// `call(candidate, case)` runs one call and returns whether it succeeded.
/// Two warm-up calls per candidate and case precede the rounds. Calls shorter
/// than ~100 µs are repeated within a sample (the same count for every
/// candidate of a case) so that clock and wake-up overheads stay small.
/// Rounds stop at `repeats`, or earlier when the next would end past
/// `deadline` (steady seconds), but never before min(3, repeats).
TimingResult timeInterleaved(int candidates, int cases, int repeats, double deadline,
                             const std::function<bool(int, int)> &call);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_TIMING_H
