//===- ProgramTuner.h - `xfc tune` over one program's kernels ---*- C++ -*-===//
//
// One run of `xfc tune`: the model's distinct kernels, this machine's ceilings and load
// (ProgramTuner.cpp), each kernel's tuning (KernelTuning.h: its paths searched, their
// choice checked against the default in a paired A/B), or --compare's side-by-side timing
// of a database against another or the default (CompareDatabases.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_TUNING_PROGRAMTUNER_H
#define XF_LIB_TUNING_PROGRAMTUNER_H

#include "TunedKernel.h"
#include "WorkerClient.h"
#include "xf/Conversion/KernelDeclarations.h"
#include "xf/Tuning/MachineLoad.h"
#include "xf/Tuning/PairedComparison.h"
#include "xf/Tuning/Tuner.h"
#include "xf/Tuning/TuningDatabase.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace mlir::xf::tuning {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The summary table of a run's report (per kernel: default and tuned ms, the final
/// check's gain, noise, margin and what was kept), as `xfc tune` prints it.
void printTuningSummary(llvm::raw_ostream &log, const llvm::json::Array &report);
/// `report` written whole to `path` (nothing when `path` is empty).
llvm::Error writeTuningReport(const std::string &path, llvm::json::Object report);

/// One `xfc tune` run (or --compare) over a program's kernels.
class ProgramTuner {
public:
  ProgramTuner(MLIRContext &ctx, const TuneOptions &options, llvm::raw_ostream &log)
      : ctx(ctx), options(options), log(log), worker(options.workerPath, options.threads),
        interactive(log.is_displayed()),
        load(std::max(1u, std::thread::hardware_concurrency()), options.threads) {}

  llvm::Error run(const HostKernels &program);
  /// --compare: the schedules of two databases timed side by side.
  llvm::Error compare(const HostKernels &program);

private:
  friend class KernelTuning;
  /// What run and compare share: the target, the model's distinct kernels
  /// and this machine's ceilings.
  llvm::Error prepare(const HostKernels &program);
  llvm::Error collect(const HostKernels &program, const VectorShape &shape);
  llvm::Error tune(TunedKernel &k, size_t index, double share, llvm::json::Array &report);
  void printSummary(const llvm::json::Array &report);
  llvm::Error writeReport(llvm::json::Object report);
  /// The load warning (MachineLoad.h), one line, once the run is over.
  void warnIfUnreliable();
  /// --compare: one kernel's schedules in A and B (B: the default when
  /// --compare default) timed side by side; nullopt when not compared.
  llvm::Expected<std::optional<llvm::json::Object>>
  compareKernel(const TunedKernel &k, const TuningDatabase &a, const TuningDatabase *b);
  void progress(const std::string &label, size_t index, double spent, double share, size_t trials,
                double best, double dflt, bool final);

  MLIRContext &ctx;
  const TuneOptions &options;
  llvm::raw_ostream &log;
  WorkerClient worker;
  bool interactive;
  std::vector<TunedKernel> kernels;
  TuningDatabase db;
  std::string target;
  MachineCeilings machine;
  LoadWatch load;
  Clock::time_point start = Clock::now();
  /// --baselines runs outside the budget: their seconds are not the kernels'.
  double baselineSeconds = 0;
  double budgetLeft() const {
    return options.budgetSeconds - (secondsSince(start) - baselineSeconds);
  }
  /// Once the budget is spent no batch starts; the one running then may go
  /// on for as long again as the budget (10 s at least), then it is cut and
  /// what it measured is dropped. So a run takes at most twice its budget,
  /// or its budget + 10 s (and --baselines' own time).
  static constexpr double kMinSlackSeconds = 10;
  double slackSeconds() const { return std::max(kMinSlackSeconds, options.budgetSeconds); }
  bool budgetSpent() const { return budgetLeft() <= 0; }
  double deadlineLeft() const { return budgetLeft() + slackSeconds(); }
};

} // namespace mlir::xf::tuning

#endif // XF_LIB_TUNING_PROGRAMTUNER_H
