//===- KernelTuning.h - one kernel's tuning within a run --------*- C++ -*-===//
//
// What tuning one kernel keeps while it runs: its database entry, each path's search
// (PathSearch.cpp: batches anchored on the default, then settling), the final check of the
// paths' combined choice against the default (FinalCheck.cpp: a final batch among the
// combinations, then a paired, interleaved A/B; PairedComparison.h), the kernel's report
// and, with --baselines, Halide's autoschedulers beside it (KernelSearch.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_TUNING_KERNELTUNING_H
#define XF_LIB_TUNING_KERNELTUNING_H

#include "ProgramTuner.h"
#include "xf/Tuning/CostLedger.h"
#include "xf/Tuning/PairedComparison.h"
#include "xf/Tuning/Search.h"

#include <memory>
#include <optional>

namespace mlir::xf::tuning {

/// What tuning one path of a kernel keeps (SchedulePaths.h): its own search
/// over its knobs, timed on its own cases, with costs anchored on the
/// default's time on those cases.
struct PathTuning {
  PathTuning(const TunedKernel &k, const SchedulePath &path, uint64_t seed);
  const SchedulePath &path;
  Search search;
  CostLedger ledger;
  std::vector<Point> points; // sub-points by ledger id; 0 is the default's
  std::vector<Trial> measured;
  bool defaultRecorded = false;
  size_t batches = 0; // search batches that measured something this run
  size_t id(const Point &p);
  /// The ledger's best relative to the default (1 before anything ran, and
  /// when the best is the default: its mean is not its anchored cost).
  double ratio() const;
  Point choice() const { return points[ledger.best().value_or(0)]; }
};

/// The final A/B of the kernel's chosen schedule against the default.
struct FinalCheckResult {
  Point candidate;
  PairedVerdict verdict;
  size_t batches = 0;
  bool kept = false;       // the candidate is the entry's schedule
  std::string why;         // why the default was kept (when !kept)
  CandidateResult dflt, best; // per length, the minimum over the A/B batches
};

/// Now, as the database's "measured_at" writes it.
std::string isoNow();

/// A kernel's report's "final_check": the candidate's schedule, the A/B batches' verdict and
/// whether it was kept (`why` the default stayed). The CPU tuner's and the GPU times' import's.
llvm::json::Object finalCheckReport(const std::string &schedule, size_t batches,
                                    const PairedVerdict &v, bool kept, const std::string &why);

class KernelTuning {
public:
  KernelTuning(ProgramTuner &run, TunedKernel &k, size_t index, double share);

  /// Resuming: a path's recorded trials are never measured again.
  void resume();
  /// Searches and settles one path within `pathShare` seconds.
  llvm::Error searchPath(PathTuning &pt, double pathShare);
  /// The paths' choices combined, the fastest of them against the default
  /// in a paired A/B; the entry holds it only if it wins.
  llvm::Error finalCheck();
  llvm::Error save();
  llvm::json::Object report();
  llvm::Error baselines(llvm::json::Object &kernelReport);

  std::vector<std::unique_ptr<PathTuning>> paths;
  std::optional<FinalCheckResult> checked;

private:
  /// The combined estimates on all cases: the geometric mean over all cases
  /// is the product of the paths' geometric means, each to the power of its
  /// share of the cases.
  double defaultEstimate() const;
  double ratioEstimate() const;
  std::vector<Point> combined() const;
  void noteBest(double cost);
  /// During the search the entry holds the default (or, resuming, the choice
  /// an earlier run confirmed): only FinalCheck puts a tuned schedule in it.
  llvm::Error saveInterim();
  bool interrupted() const;
  using Results = std::vector<CandidateResult>;
  /// One worker batch: the default first — the anchor every cost of the
  /// batch is scaled by — then `others`. Nothing when the anchor did not run
  /// or the batch was cut at the deadline (its times mean nothing); an error
  /// when the default failed its check (a bug, not a tuning result).
  llvm::Expected<std::optional<Results>> timeAnchored(CostLedger &ledger,
                                                      llvm::json::Object request,
                                                      std::vector<llvm::json::Value> others,
                                                      double timeout, bool budgeted = true);
  /// Cut at the deadline, like every budgeted batch; nullopt when it was.
  llvm::Expected<std::optional<Results>> runBudgeted(llvm::json::Object request,
                                                     const std::vector<llvm::json::Value> &all,
                                                     double timeout);
  void recordAnchorAndRetimed(PathTuning &pt, const Results &results,
                              llvm::ArrayRef<size_t> ids);
  llvm::Error settlePath(PathTuning &pt, const llvm::json::Object &request);
  /// Which combination goes into the A/B (nullopt: none): the only one, or
  /// the fastest of several in one final batch with the default.
  llvm::Expected<std::optional<Point>> chooseFinalist();
  llvm::Error pairedCheck(const Point &candidate);
  void keepCheckedChoice();

  ProgramTuner &run;
  TunedKernel &k;
  size_t index;
  double share;
  TuningEntry &entry;
  double previouslySpent;
  std::optional<Point> previous; // resuming: the schedule chosen last time
  Clock::time_point kernelStart = Clock::now();
  llvm::json::Array history; // [seconds, combined best estimate] when it changes
  double historyDefault = 0;
  /// The default's fastest time per length over the path batches: its
  /// roofline fraction when no final check runs (0 ms: not measured).
  CandidateResult defaultTimes;
};

} // namespace mlir::xf::tuning

#endif // XF_LIB_TUNING_KERNELTUNING_H
