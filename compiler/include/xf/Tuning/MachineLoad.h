//===- MachineLoad.h - is this machine quiet enough to measure? -*- C++ -*-===//
//
// In: the machine's load average before and during an `xfc tune` run, and the noise the
// final A/B batches measured (PairedComparison.h). Out: at most one warning line saying the
// measurements are unreliable, and why.
//
// Load is what other processes run beside the tuner: the 1-minute load average less the
// tuner's own runnable threads (before the run: xfc itself, which has just compiled the
// model; during it: the worker's threads). A schedule's time is unreliable once that load
// reaches a whole core, or a quarter of the cores on a bigger machine: the worker's threads
// then share cores with it. The noise is the largest standard deviation of one round's
// paired log ratio over the kernels; above 10 % a kernel needs a gain of several percent
// to be kept, so the run keeps defaults that a quiet machine might beat.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_MACHINELOAD_H
#define XF_TUNING_MACHINELOAD_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::xf::tuning {

/// The 1-minute load average: the first field of /proc/loadavg, or of the file
/// $XF_TUNE_LOADAVG_FILE names (the tests' way to set the load); nullopt when unreadable.
std::optional<double> readLoadAverage();

class LoadWatch {
public:
  static constexpr double kMaxNoise = 0.10;

  /// `cores`: this machine's hardware threads; `ownThreads`: the worker's threads.
  LoadWatch(unsigned cores, int64_t ownThreads) : cores(cores), ownThreads(ownThreads) {}

  void noteBefore(std::optional<double> load);
  void noteDuring(std::optional<double> load);
  void noteNoise(const std::string &kernel, double noise);

  /// One line (no newline) when the measurements are unreliable, else nullopt.
  std::optional<std::string> warning() const;

  /// Other load (load average less the tuner's own threads) that makes timing unreliable.
  double maxOtherLoad() const;

private:
  unsigned cores;
  int64_t ownThreads;
  double before = -1, during = -1; // other load; -1: not read
  double noise = 0;
  std::string noisiest;
};

} // namespace mlir::xf::tuning

#endif // XF_TUNING_MACHINELOAD_H
