//===- GpuTimingImport.cpp - a GPU's times into the tuning database -------===//
//
// Half 2 of `xfc tune --target cuda` (GpuTiming.h): the JSON xf-gpu-timing wrote, judged
// kernel by kernel (GEMMs and attentions alike) as the CPU tuner's final check judges
// (FinalCheck.cpp): PairedRounds over the final-check batches of the finalist and the default,
// kept when keepsCandidate says so, else the default stored with the reason. Every candidate
// becomes a trial (its search rounds' paired ratio to the default times the default's cost).
// Keys: the kernel's signature, gpuTuningTarget(name, capability), 1 thread, this xf version.
// The baselines (Anderson2021's schedule of a GEMM per length) go into the report and the
// table only: at each length their paired ratio to the default in the search rounds, never an
// entry or a trial.
//
//===----------------------------------------------------------------------===//

#include "KernelTuning.h"
#include "ProgramTuner.h"
#include "xf/Tuning/GpuTiming.h"
#include "xf/Version.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {

using RoundTimes = std::vector<std::vector<double>>; // [length][round] ms a call

llvm::Error bad(const std::string &path, const llvm::Twine &what) {
  return llvm::createStringError(path + ": " + what.str());
}

/// `[[ms, ...], ...]` per length; false where it is not that.
bool readRounds(const llvm::json::Value *v, size_t lengths, RoundTimes &out) {
  const llvm::json::Array *a = v ? v->getAsArray() : nullptr;
  if (!a || a->size() != lengths)
    return false;
  out.assign(lengths, {});
  for (size_t l = 0; l < lengths; ++l) {
    const llvm::json::Array *r = (*a)[l].getAsArray();
    if (!r)
      return false;
    for (const llvm::json::Value &x : *r) {
      std::optional<double> ms = x.getAsNumber();
      if (!ms || !std::isfinite(*ms) || *ms < 0)
        return false;
      out[l].push_back(*ms);
    }
  }
  return true;
}

/// Geometric mean over the lengths of the fastest round (0 where a length has none).
double costOf(const std::vector<RoundTimes> &batches) {
  if (batches.empty() || batches[0].empty())
    return 0;
  double logSum = 0;
  for (size_t l = 0; l < batches[0].size(); ++l) {
    double best = 0;
    for (const RoundTimes &b : batches)
      for (double ms : b[l])
        if (ms > 0 && (best == 0 || ms < best))
          best = ms;
    if (best <= 0)
      return 0;
    logSum += std::log(best);
  }
  return std::exp(logSum / double(batches[0].size()));
}

/// The kernel's Anderson2021 baseline for the report: per length its fastest search round,
/// its paired ratio to the default in those rounds and so its ratio to what the entry keeps
/// (`keptRatio`: the kept schedule's ratio to the default per length, 1 for the default);
/// over the lengths it was timed at, the geometric mean of those ratios, and where that is
/// every length `ms`, the default's cost times it (as a trial's cost is reckoned).
llvm::json::Object anderson2021Report(const llvm::json::Object &k, const llvm::json::Array &lengths,
                                      const RoundTimes &defaultSearch,
                                      const std::vector<double> &keptRatio, double defaultCostMs,
                                      llvm::StringRef leftOut) {
  const llvm::json::Array *baselines = k.getArray("baselines");
  if (k.getString("kernel").value_or("").starts_with("attention "))
    return llvm::json::Object{{"why", "Anderson2021 is the GEMMs' baseline only"}};
  if (!baselines || baselines->empty())
    return llvm::json::Object{
        {"why", !leftOut.empty() ? ("the export left the baseline out: " + leftOut).str()
                : baselines      ? "the export compiled no Anderson2021 baseline for this kernel"
                                   " (its log says why)"
                                 : "the times file has no baselines"}};
  llvm::json::Array perLength;
  double logToDefault = 0, logToTuned = 0;
  size_t timed = 0;
  for (size_t l = 0; l < lengths.size(); ++l) {
    const int64_t rows = lengths[l].getAsInteger().value_or(-1);
    llvm::json::Object at{{"rows", rows}};
    const llvm::json::Object *b = nullptr;
    for (const llvm::json::Value &v : *baselines)
      if (const llvm::json::Object *o = v.getAsObject();
          o && o->getString("baseline") == "anderson2021" && o->getInteger("rows") == rows)
        b = o;
    RoundTimes rounds;
    std::string failure =
        b ? b->getString("failure").value_or("").str() : "not exported (the export says why)";
    if (failure.empty() && !readRounds(b->get("search_ms"), lengths.size(), rounds))
      failure = "no search_ms";
    PairedRounds paired;
    if (failure.empty()) {
      paired.addBatch({defaultSearch[l]}, {rounds[l]});
      if (paired.rounds() == 0)
        failure = "not timed";
    }
    if (!failure.empty()) {
      at["failure"] = failure;
    } else {
      const double ratio = paired.judge().ratio;
      at["ms"] = *std::min_element(rounds[l].begin(), rounds[l].end());
      at["ratio_to_default"] = ratio;
      at["ratio_to_tuned"] = ratio / keptRatio[l];
      logToDefault += std::log(ratio), logToTuned += std::log(ratio / keptRatio[l]), ++timed;
    }
    perLength.push_back(std::move(at));
  }
  llvm::json::Object report{{"per_length", std::move(perLength)},
                            {"lengths_timed", int64_t(timed)}};
  if (timed == 0)
    return report;
  report["ratio_to_default"] = std::exp(logToDefault / double(timed));
  report["ratio_to_tuned"] = std::exp(logToTuned / double(timed));
  if (timed == lengths.size())
    report["ms"] = defaultCostMs * std::exp(logToDefault / double(timed));
  return report;
}

/// Whether `text` is a GPU schedule of the kernel `signature` names: a GEMM's
/// #xf.gpu_gemm_schedule, an attention's #xf.gpu_attention_schedule.
bool isGpuSchedule(MLIRContext &ctx, llvm::StringRef signature, llvm::StringRef text) {
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  Attribute a = parseAttribute(text, &ctx);
  return a && (signature.starts_with("attention ") ? isa<GpuAttentionScheduleAttr>(a)
                                                   : isa<GpuGemmScheduleAttr>(a));
}

/// One kernel of the times file judged into its entry; its report.
llvm::Expected<llvm::json::Object> importKernel(MLIRContext &ctx, const std::string &path,
                                                const llvm::json::Object &k,
                                                const llvm::json::Array &lengthValues,
                                                llvm::StringRef baselinesLeftOut,
                                                const std::string &target, TuningDatabase &db) {
  const size_t lengths = lengthValues.size();
  std::optional<llvm::StringRef> name = k.getString("name"), signature = k.getString("kernel");
  const llvm::json::Array *candidates = k.getArray("candidates");
  const llvm::json::Array *batches = k.getArray("final_check");
  std::optional<int64_t> finalist = k.getInteger("finalist");
  if (!name || !signature || signature->empty() || !candidates || candidates->empty() ||
      !batches || !finalist || *finalist < 0 || size_t(*finalist) >= candidates->size())
    return bad(path, "a kernel lacks name, kernel, candidates, finalist or final_check");
  std::vector<std::string> schedules;
  std::vector<RoundTimes> search;
  for (const llvm::json::Value &c : *candidates) {
    const llvm::json::Object *o = c.getAsObject();
    std::optional<llvm::StringRef> s = o ? o->getString("schedule") : std::nullopt;
    RoundTimes rounds;
    if (!s || !isGpuSchedule(ctx, *signature, *s) ||
        !readRounds(o->get("search_ms"), lengths, rounds))
      return bad(path, *name + ": a candidate without search_ms or a GPU schedule of its kind "
                               "(#xf.gpu_gemm_schedule, #xf.gpu_attention_schedule)");
    schedules.push_back(s->str());
    search.push_back(std::move(rounds));
  }
  PairedRounds paired;
  std::vector<RoundTimes> dfltRounds, candRounds;
  for (const llvm::json::Value &b : *batches) {
    const llvm::json::Object *o = b.getAsObject();
    RoundTimes d, c;
    if (!o || !readRounds(o->get("default_ms"), lengths, d) ||
        !readRounds(o->get("candidate_ms"), lengths, c))
      return bad(path, *name + ": a final_check batch without default_ms and candidate_ms");
    paired.addBatch(d, c);
    dfltRounds.push_back(std::move(d)), candRounds.push_back(std::move(c));
  }
  TuningEntry &entry = db.upsert(*signature, target, 1, kXfVersion);
  const double searchDefault = costOf({search[0]});
  entry.trials.clear();
  for (size_t c = 1; c < candidates->size(); ++c) {
    std::string failure((*candidates)[c].getAsObject()->getString("failure").value_or(""));
    PairedRounds r;
    r.addBatch(search[0], search[c]);
    if (failure.empty() && r.rounds() == 0)
      failure = "not timed";
    entry.trials.push_back(failure.empty()
                               ? TrialRecord{schedules[c], searchDefault * r.judge().ratio, "", ""}
                               : TrialRecord{schedules[c], std::nullopt, failure, ""});
  }
  llvm::json::Object report{{"name", *name}, {"kernel", *signature}};
  const PairedVerdict verdict = paired.judge();
  const bool kept = *finalist > 0 && batches->size() > 0 && keepsCandidate(verdict, batches->size());
  entry.schedule = schedules[kept ? size_t(*finalist) : 0];
  entry.defaultCostMs = batches->empty() ? searchDefault : costOf(dfltRounds);
  entry.costMs = kept ? costOf(candRounds) : entry.defaultCostMs;
  entry.rooflineFraction = 0;
  entry.measuredAt = isoNow();
  entry.secondsSpent = std::max(0.0, k.getNumber("seconds").value_or(0));
  report["default_ms"] = entry.defaultCostMs, report["best_ms"] = entry.costMs;
  report["roofline_fraction"] = 0.0;
  std::vector<double> keptRatio(lengths, 1.0); // per length, what the entry keeps / default
  for (size_t l = 0; kept && l < lengths; ++l) {
    PairedRounds at;
    for (size_t b = 0; b < dfltRounds.size(); ++b)
      at.addBatch({dfltRounds[b][l]}, {candRounds[b][l]});
    keptRatio[l] = at.rounds() ? at.judge().ratio : 1.0;
  }
  report["anderson2021"] = anderson2021Report(k, lengthValues, search[0], keptRatio,
                                              entry.defaultCostMs, baselinesLeftOut);
  if (*finalist > 0 && !batches->empty()) {
    const bool cut = batches->size() < PairedRule().maxBatches &&
                     needsAnotherBatch(verdict, batches->size());
    report["final_check"] =
        finalCheckReport(schedules[size_t(*finalist)], batches->size(), verdict, kept,
                         kept ? "" : whyDefaultKept(verdict, batches->size(), cut));
  } else {
    report["why"] = *finalist > 0 ? "no final-check batch was timed (the budget ran out)"
                                  : "no candidate was faster than the default in the search";
  }
  return report;
}

} // namespace

std::string mlir::xf::tuning::gpuTuningTarget(llvm::StringRef name, llvm::StringRef capability) {
  return ("GPU " + name + " | " + capability).str();
}

std::vector<std::string> mlir::xf::tuning::gpuTargetsIn(const TuningDatabase &db) {
  std::vector<std::string> targets;
  for (const TuningEntry &e : db.entries())
    if (llvm::StringRef(e.target).starts_with("GPU ") &&
        std::find(targets.begin(), targets.end(), e.target) == targets.end())
      targets.push_back(e.target);
  return targets;
}

llvm::Expected<std::string> mlir::xf::tuning::selectGpuTarget(llvm::StringRef dbPath,
                                                              llvm::StringRef gpuName) {
  llvm::Expected<TuningDatabase> db = TuningDatabase::load(dbPath);
  if (!db)
    return db.takeError();
  std::vector<std::string> targets = gpuTargetsIn(*db);
  std::string held;
  for (const std::string &t : targets)
    held += (held.empty() ? "" : ", ") + ("'" + llvm::StringRef(t).drop_front(4) + "'").str();
  if (gpuName.empty()) {
    if (targets.size() <= 1)
      return targets.empty() ? "" : targets.front();
    return llvm::createStringError(("tuning database '" + dbPath + "' holds CUDA schedules of " +
                                    std::to_string(targets.size()) + " GPUs (" + held +
                                    "): name one with --gpu-name")
                                       .str());
  }
  for (const std::string &t : targets)
    if (llvm::StringRef(t).drop_front(4).rsplit(" | ").first == gpuName)
      return t;
  return llvm::createStringError(
      ("tuning database '" + dbPath + "' holds no CUDA schedules of the GPU '" + gpuName + "'" +
       (held.empty() ? std::string(" (none of any GPU)") : " (it holds " + held + ")"))
          .str());
}

llvm::Error mlir::xf::tuning::importGpuTimes(MLIRContext &ctx, const GpuImportOptions &options,
                                             llvm::raw_ostream &log) {
  const std::string &path = options.timesPath;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return bad(path, buffer.getError().message());
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return bad(path, llvm::toString(parsed.takeError()));
  const llvm::json::Object *top = parsed->getAsObject();
  if (!top || top->getString("format") != "xf-gpu-times" || top->getInteger("version") != 1)
    return bad(path, "not the times of xf-gpu-timing (format xf-gpu-times, version 1)");
  if (top->getString("xf_version") != kXfVersion)
    return bad(path, llvm::formatv("timed by the program of xf {0}, this is xf {1}: export it "
                                   "again",
                                   top->getString("xf_version").value_or("?"), kXfVersion));
  const llvm::json::Object *gpu = top->getObject("gpu");
  std::optional<llvm::StringRef> name = gpu ? gpu->getString("name") : std::nullopt;
  std::optional<llvm::StringRef> cap = gpu ? gpu->getString("capability") : std::nullopt;
  const llvm::json::Array *lengths = top->getArray("lengths");
  const llvm::json::Array *kernels = top->getArray("kernels");
  if (!name || name->empty() || !cap || !cap->starts_with("sm_") || !lengths ||
      lengths->empty() || !kernels)
    return bad(path, "no gpu name and capability, lengths or kernels");
  const std::string target = gpuTuningTarget(*name, *cap);
  llvm::Expected<TuningDatabaseLock> lock = TuningDatabaseLock::acquire(options.dbPath);
  if (!lock)
    return lock.takeError();
  llvm::Expected<TuningDatabase> db = TuningDatabase::loadOrEmpty(options.dbPath);
  if (!db)
    return db.takeError();
  llvm::json::Array report;
  for (const llvm::json::Value &v : *kernels) {
    const llvm::json::Object *k = v.getAsObject();
    if (!k)
      return bad(path, "a kernel is not an object");
    if (llvm::StringRef error = k->getString("error").value_or(""); !error.empty()) {
      log << "xfc tune: " << k->getString("name").value_or("?") << " not imported: " << error
          << "\n";
      continue;
    }
    llvm::Expected<llvm::json::Object> r = importKernel(
        ctx, path, *k, *lengths, top->getString("baselines_left_out").value_or(""), target, *db);
    if (!r)
      return r.takeError();
    report.push_back(std::move(*r));
  }
  if (llvm::Error e = db->save(options.dbPath))
    return e;
  log << llvm::formatv("xfc tune: {0} kernels of {1} imported into {2} as target '{3}'\n",
                       report.size(), kernels->size(), options.dbPath, target);
  printTuningSummary(log, report);
  return writeTuningReport(options.reportPath,
                           llvm::json::Object{{"target", target},
                                              {"gpu", llvm::json::Object(*gpu)},
                                              {"lengths", llvm::json::Array(*lengths)},
                                              {"kernels", std::move(report)}});
}
