//===- Tuner.h - `xfc tune`: search each kernel's schedule space -*- C++ -*-===//
//
// In: the Halide kernels a model compiles to (the GEMMs and attentions its
// host module declares, with the target's default schedules). Out: the tuning
// database with the best measured schedule of every kernel, keyed by kernel
// signature, target, threads and xf version (docs/tuning.md).
//
// Per kernel and per code path (SchedulePaths.h: GEMV vs tiled GEMM,
// attention decode vs prefill, each timed on the lengths that take it), a
// Search (Search.h) proposes candidates in the knob space of
// ScheduleSpace.h; batches of them are compiled, checked against a float64
// reference and timed by xf-tune-worker in a child process, so that a
// candidate that crashes or hangs costs one batch, never the tuner. Each
// batch also times the default schedule and the best one so far; costs are
// relative to the default's time in the same batch (CostLedger.h), so a
// batch measured while the machine was busier is not mistaken for a worse
// schedule. The paths' choices are combined (the fastest of several picked
// in one batch with the default on all lengths) and the choice faces the
// default in a paired, interleaved A/B (PairedComparison.h): the entry holds
// it only if it wins by more than the noise measured in those batches, else
// the default. The run warns when the machine's load or that noise makes the
// measurements unreliable (MachineLoad.h).
// The database is saved after every batch: Ctrl-C keeps all that
// was measured, and a re-run resumes from the recorded trials.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_TUNER_H
#define XF_TUNING_TUNER_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace mlir::xf::tuning {

struct TuneOptions {
  std::string target = "host"; // must run on this machine
  int64_t threads = 0;         // 0: this machine's hardware threads
  double budgetSeconds = 600;  // for all kernels together
  std::string dbPath;
  std::vector<int64_t> lengths = {1, 128}; // sequence lengths to tune for
  std::string workerPath;                  // xf-tune-worker
  uint64_t seed = 1;
  size_t batch = 4;                               // candidates per worker process
  bool baselines = false;                         // also time Halide's autoschedulers per kernel
  std::string reportPath;                         // optional JSON report (convergence, baselines)
  /// Not empty: no search; the schedules of dbPath (A) and of this database
  /// (B; "default": the default schedules) are timed side by side, per
  /// kernel both have and per length, in the same worker batches with the
  /// default, and paired against it (docs/tuning.md).
  std::string comparePath;
  const std::atomic<bool> *interrupted = nullptr; // set by the caller's SIGINT handler
};

/// Tunes every distinct kernel the host module `host` declares (or compares
/// two databases on them, TuneOptions::comparePath); progress goes to `log`.
llvm::Error tuneProgram(MLIRContext &ctx, ModuleOp host, const TuneOptions &options,
                        llvm::raw_ostream &log);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_TUNER_H
