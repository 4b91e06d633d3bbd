//===- ProgramTuner.cpp - `xfc tune` over one program's kernels ----------===//
//
// The run: the model's distinct kernels (collected from the lowered program), this
// machine's ceilings and load, the budget shared among the kernels, the progress line, the
// summary table and the JSON report. Each kernel's tuning is KernelSearch.cpp's.
//
//===----------------------------------------------------------------------===//

#include "xf/Tuning/Tuner.h"
#include "ProgramTuner.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Conversion/LowerToHost.h"
#include "xf/Version.h"
#include "xfrt/OutputFile.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <thread>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

static std::string formatDuration(double s) {
  if (s < 60)
    return llvm::formatv("{0}s", int(s));
  return llvm::formatv("{0}m{1:2}s", int(s) / 60, int(s) % 60);
}

llvm::Error ProgramTuner::prepare(const HostKernels &program) {
  llvm::Expected<VectorShape> shape = vectorShapeOf(options.target);
  if (!shape)
    return shape.takeError();
  llvm::Expected<std::string> targetString = halideTargetString(options.target);
  if (!targetString)
    return targetString.takeError();
  target = *targetString;
  if (llvm::Error err = collect(program, *shape))
    return err;
  llvm::Expected<MachineCeilings> ceilings = worker.measureMachine();
  if (!ceilings)
    return ceilings.takeError();
  machine = *ceilings;
  return llvm::Error::success();
}

/// The search's anchor is each kernel's schedule as declared, which must be
/// the target's default, as the kernel pipeline gives it in tune mode (no
/// database): a host module lowered with a tuning database, or for a target
/// of another vector unit, would anchor it on another schedule.
static llvm::Error checkDefaultSchedule(llvm::StringRef name, Attribute schedule,
                                        Attribute expected, llvm::StringRef target) {
  if (schedule == expected)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::formatv("{0}'s schedule is not the default for --target {1} ({2}, not {3}): the "
                    "host module was lowered with a tuning database or for another target; "
                    "lower it with --tuning-db none and --target {1}",
                    name, target, kernelText(schedule), kernelText(expected))
          .str());
}

llvm::Error ProgramTuner::collect(const HostKernels &program, const VectorShape &shape) {
  for (const GemmKernelSpec &spec : program.gemms)
    if (llvm::Error err = checkDefaultSchedule(
            spec.name, gemmScheduleAttr(&ctx, spec.schedule),
            gemmScheduleAttr(&ctx, defaultGemmSchedule(shape, spec.K, spec.weightBlocks)),
            options.target))
      return err;
  for (const AttentionKernelSpec &spec : program.attentions)
    if (llvm::Error err = checkDefaultSchedule(
            spec.name, attentionScheduleAttr(&ctx, spec.schedule),
            attentionScheduleAttr(&ctx, spec.segmented ? spec.schedule
                                                       : defaultAttentionSchedule(shape)),
            options.target))
      return err;
  llvm::StringSet<> seen;
  int64_t longest = 1;
  for (int64_t l : options.lengths)
    longest = std::max(longest, l);
  for (const GemmKernelSpec &spec : program.gemms) {
    TunedKernel k = tunedKernel(ctx, spec);
    if (!seen.insert(k.signature).second)
      continue;
    k.space = gemmSpace(spec, shape, options.lengths);
    k.paths = gemmPaths(spec, options.lengths);
    k.defaultPoint = gemmPoint(spec.schedule);
    for (int64_t l : options.lengths)
      k.caseRows.push_back(l), k.caseKeys.push_back(0);
    kernels.push_back(std::move(k));
  }
  // One per database key: the kernels a cache derives from an op take its schedule (a packed
  // batch's one call too: its lengths are inputs the tune worker does not make).
  for (const auto &[key, spec] : attentionsByDatabaseKey(ctx, program.attentions)) {
    TunedKernel k = tunedKernel(ctx, spec);
    k.signature = key;
    k.space = attentionSpace(spec, shape, options.lengths);
    k.paths = attentionPaths(options.lengths);
    k.defaultPoint = attentionPoint(spec.schedule);
    // Prefill attends over its own rows; a decode step (1 row) over the
    // longest context.
    for (int64_t l : options.lengths) {
      if (l <= 4)
        k.caseRows.push_back(l), k.caseKeys.push_back(longest);
      else
        k.caseRows.push_back(l), k.caseKeys.push_back(l);
    }
    kernels.push_back(std::move(k));
  }
  return llvm::Error::success();
}

void ProgramTuner::progress(const std::string &label, size_t index, double spent, double share,
                            size_t trials, double best, double dflt, bool final) {
  const int width = 20;
  int filled = share > 0 ? int(std::min(1.0, spent / share) * width) : width;
  if (final)
    filled = width;
  double remaining = std::max(0.0, budgetLeft());
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string line = llvm::formatv("[{0}/{1}] {2,-22} [{3}] {4} trials  best {5:f4} ms ({6:f2}x "
                                   "default)  ETA {7}",
                                   index + 1, kernels.size(), label, bar, trials, best,
                                   best > 0 ? dflt / best : 0.0, formatDuration(remaining));
  if (interactive)
    log << "\r" << line << "\x1b[K" << (final ? "\n" : "");
  else if (!final)
    log << line << "\n";
  log.flush();
}

void ProgramTuner::printSummary(const llvm::json::Array &report) {
  printTuningSummary(log, report);
}

void mlir::xf::tuning::printTuningSummary(llvm::raw_ostream &log,
                                          const llvm::json::Array &report) {
  // Per kernel, the final A/B (docs/tuning.md): the candidate's gain over the
  // default, one round's noise, the margin it had to beat, and what was kept.
  // A GPU import adds the baseline (Anderson2021's schedules): its ms and tuned's speedup.
  const bool baseline = llvm::any_of(
      report, [](const llvm::json::Value &v) { return v.getAsObject()->get("anderson2021"); });
  log << "\n  kernel           default ms   tuned ms "
      << (baseline ? "anderson2021 ms  / tuned " : "")
      << "    gain    noise   margin  kept     roofline  signature\n";
  for (const llvm::json::Value &v : report) {
    const llvm::json::Object &o = *v.getAsObject();
    std::string andersonColumns;
    if (const llvm::json::Object *a = o.getObject("anderson2021")) {
      // Anderson2021 / tuned; '*' where it was timed at some lengths only (ms needs all).
      std::optional<double> ms = a->getNumber("ms"), versus = a->getNumber("ratio_to_tuned");
      andersonColumns =
          (ms ? llvm::formatv(" {0,15:f4}", *ms).str() : llvm::formatv(" {0,15}", "-").str()) +
          (versus ? llvm::formatv(" {0,8:f2}{1}", *versus, ms ? "x" : "*").str()
                  : llvm::formatv(" {0,9}", "-").str());
    } else if (baseline) {
      andersonColumns = llvm::formatv(" {0,15} {1,9}", "-", "-").str();
    }
    std::string gain = "       -", noise = gain, margin = gain, kept = "default";
    if (const llvm::json::Object *check = o.getObject("final_check")) {
      gain = llvm::formatv("{0,7:f1}%", 100 * check->getNumber("gain").value_or(0));
      noise = llvm::formatv("{0,7:f1}%", 100 * check->getNumber("noise").value_or(0));
      margin = llvm::formatv("{0,7:f1}%", 100 * check->getNumber("margin").value_or(0));
      kept = check->getString("kept").value_or("default").str();
    }
    log << llvm::formatv("  {0,-16} {1,10:f4} {2,10:f4}{9} {3} {4} {5}  {6,-7} {7,8:p}  {8}\n",
                         o.getString("name").value_or(""), o.getNumber("default_ms").value_or(0),
                         o.getNumber("best_ms").value_or(0), gain, noise, margin, kept,
                         o.getNumber("roofline_fraction").value_or(0),
                         o.getString("kernel").value_or(""), andersonColumns);
  }
}

void ProgramTuner::warnIfUnreliable() {
  if (std::optional<std::string> warning = load.warning())
    log << "xfc tune: " << *warning << "\n";
}

llvm::Error ProgramTuner::writeReport(llvm::json::Object report) {
  return writeTuningReport(options.reportPath, std::move(report));
}

llvm::Error mlir::xf::tuning::writeTuningReport(const std::string &path,
                                               llvm::json::Object report) {
  if (path.empty())
    return llvm::Error::success();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
  // Written whole or not at all, like every output of xfc (xfrt/OutputFile.h).
  if (xfrt::Status s = xfrt::writeFileAtomically(path, text.data(), text.size()); !s)
    return llvm::createStringError("cannot write the report: " + s.message());
  return llvm::Error::success();
}

llvm::Error ProgramTuner::run(const HostKernels &program) {
  // Held until the run ends: read, tuned and saved by this run alone.
  llvm::Expected<TuningDatabaseLock> lock = TuningDatabaseLock::acquire(options.dbPath);
  if (!lock)
    return lock.takeError();
  llvm::Expected<TuningDatabase> loaded = TuningDatabase::loadOrEmpty(options.dbPath);
  if (!loaded)
    return loaded.takeError();
  db = std::move(*loaded);
  load.noteBefore(readLoadAverage());
  if (llvm::Error err = prepare(program))
    return err;
  // Kernels this database has no entry for go first: a run whose budget ends before the last
  // kernel leaves those to the next run, which starts with them (not with the ones tuned).
  std::stable_partition(kernels.begin(), kernels.end(), [&](const TunedKernel &k) {
    const TuningEntry *e = db.find(k.signature, target, options.threads, kXfVersion);
    return !e || e->schedule.empty();
  });
  log << llvm::formatv("xfc tune: {0} kernels, budget {1}, {2} threads, lengths", kernels.size(),
                       formatDuration(options.budgetSeconds), options.threads);
  for (int64_t l : options.lengths)
    log << " " << l;
  log << llvm::formatv("\nxfc tune: this machine: {0:f0} GFLOP/s fp32 FMA peak, {1:f1} GB/s read "
                       "({2}); database {3}\n",
                       machine.fmaGflops, machine.readGBs, machine.isa, options.dbPath);
  llvm::json::Array report;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (options.interrupted && *options.interrupted)
      break;
    if (budgetSpent()) {
      log << llvm::formatv("\nxfc tune: the budget is spent; {0} of {1} kernels were not "
                           "reached and keep what {2} holds for them (run again to go on)\n",
                           kernels.size() - i, kernels.size(), options.dbPath);
      break;
    }
    double share = std::max(0.0, budgetLeft() / double(kernels.size() - i));
    if (llvm::Error err = tune(kernels[i], i, share, report))
      return err;
  }
  printSummary(report);
  warnIfUnreliable();
  if (llvm::Error err = writeReport(llvm::json::Object{{"target", target},
                                                       {"threads", options.threads},
                                                       {"fma_gflops", machine.fmaGflops},
                                                       {"read_gbs", machine.readGBs},
                                                       {"budget_s", options.budgetSeconds},
                                                       {"baselines_s", baselineSeconds},
                                                       {"kernels", std::move(report)}}))
    return err;
  if (options.interrupted && *options.interrupted)
    log << "xfc tune: interrupted; everything measured so far is in " << options.dbPath
        << " (run again to resume)\n";
  return llvm::Error::success();
}

llvm::Error mlir::xf::tuning::tuneProgram(MLIRContext &ctx, ModuleOp host,
                                          const TuneOptions &options, llvm::raw_ostream &log) {
  HostKernels program = hostKernelsOf(host);
  TuneOptions resolved = options;
  if (resolved.threads <= 0)
    resolved.threads = std::max(1u, std::thread::hardware_concurrency());
  ProgramTuner tuner(ctx, resolved, log);
  return resolved.comparePath.empty() ? tuner.run(program) : tuner.compare(program);
}
