//===- CompareDatabases.cpp - xfc tune --compare ------------------------===//
//
// No search: the schedules a database holds for each kernel, timed side by side with the
// default and with those of a second database (or, with `--compare default`, the default
// alone) over a few fresh worker batches in alternating order. Per length the minimum time
// of each; per kernel the paired ratios (PairedComparison.h) A / default, B / default and
// A / B, with the noise measured in those rounds and whether A is faster, slower or the
// same as the default within it. Printed and written to --report.
//
//===----------------------------------------------------------------------===//

#include "ProgramTuner.h"
#include "xf/Version.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

/// Worker batches (fresh processes) per kernel of --compare, 9 rounds each;
/// the second times the schedules in the reverse order.
static constexpr int kCompareBatches = 2;

/// How `v` (X / default) reads: beyond the margin either way, or within it.
static const char *comparisonWord(const PairedVerdict &v) {
  if (v.rounds == 0)
    return "not measured";
  if (v.gain() > v.margin)
    return "faster";
  if (-v.gain() > v.margin)
    return "slower";
  return "same within the noise";
}

static llvm::json::Object verdictJson(const PairedVerdict &v) {
  return llvm::json::Object{{"ratio", v.ratio},           {"noise", v.noise},
                            {"margin", v.margin},         {"rounds", int64_t(v.rounds)},
                            {"reads", comparisonWord(v)}};
}

llvm::Expected<std::optional<llvm::json::Object>>
ProgramTuner::compareKernel(const TunedKernel &k, const TuningDatabase &a,
                            const TuningDatabase *b) {
  const TuningEntry *ea = a.find(k.signature, target, options.threads, kXfVersion);
  const TuningEntry *eb = b ? b->find(k.signature, target, options.threads, kXfVersion) : nullptr;
  std::optional<Point> pa = ea ? pointOf(ctx, k, ea->schedule) : std::nullopt;
  std::optional<Point> pb = b ? (eb ? pointOf(ctx, k, eb->schedule) : std::nullopt)
                              : std::optional<Point>(k.defaultPoint);
  if (!pa || !pb) {
    log << llvm::formatv("  {0,-16} not compared: no usable entry in {1}\n", k.name,
                         !pa ? options.dbPath : options.comparePath);
    return std::nullopt;
  }
  // Slots: 0 the default, 1 A, 2 B (absent with --compare default: B is the default).
  const std::vector<Point> slots =
      b ? std::vector<Point>{k.defaultPoint, *pa, *pb} : std::vector<Point>{k.defaultPoint, *pa};
  const llvm::json::Object request = requestFor(k, everyCase(k), options.target, 9, 8.0);
  const size_t numCases = k.caseRows.size();
  std::vector<std::vector<CandidateResult>> timed(slots.size());
  PairedRounds aVsDefault, bVsDefault, aVsB;
  std::string failure;
  for (int batch = 0; batch < kCompareBatches; ++batch) {
    // The second batch in the reverse order: no schedule always runs first.
    const bool reverse = batch % 2 == 1;
    std::vector<llvm::json::Value> candidates;
    for (size_t i = 0; i < slots.size(); ++i)
      candidates.push_back(candidateJson(k, slots[reverse ? slots.size() - 1 - i : i]));
    auto results = worker.run(llvm::json::Object(request), candidates,
                              90.0 * double(candidates.size()) + 60);
    if (!results)
      return results.takeError();
    std::vector<const CandidateResult *> bySlot(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const CandidateResult &r = (*results)[reverse ? slots.size() - 1 - i : i];
      if (!r.ran || !r.failure.empty()) {
        failure = r.ran ? r.failure : "not run";
        continue;
      }
      bySlot[i] = &r;
      timed[i].push_back(r);
    }
    if (bySlot[0] && bySlot[1])
      aVsDefault.addBatch(roundTimes(*bySlot[0]), roundTimes(*bySlot[1]));
    if (b && bySlot[0] && bySlot[2])
      bVsDefault.addBatch(roundTimes(*bySlot[0]), roundTimes(*bySlot[2]));
    if (b && bySlot[1] && bySlot[2])
      aVsB.addBatch(roundTimes(*bySlot[2]), roundTimes(*bySlot[1]));
  }
  for (const auto &t : timed)
    if (t.empty() || t.front().cases.size() < numCases) {
      log << llvm::formatv("  {0,-16} not compared: a schedule failed in the worker: {1}\n",
                           k.name, failure);
      return std::nullopt;
    }
  const CandidateResult dflt = fastestOf(timed[0]), fa = fastestOf(timed[1]);
  const CandidateResult fb = b ? fastestOf(timed[2]) : dflt;
  llvm::json::Array caseReports;
  for (size_t c = 0; c < numCases; ++c) {
    const double d = dflt.cases[c].wallMinMs, ta = fa.cases[c].wallMinMs,
                 tb = fb.cases[c].wallMinMs;
    log << llvm::formatv("  {0,-16} {1,4} {2,5} {3,11:f4} {4,10:f4} {5,10:f4} {6,8:f3}\n", k.name,
                         k.caseRows[c], k.isGemm ? 0 : k.caseKeys[c], d, ta, tb, ta / tb);
    caseReports.push_back(llvm::json::Object{{"rows", k.caseRows[c]},
                                             {"keys", k.isGemm ? 0 : k.caseKeys[c]},
                                             {"default_ms", d},
                                             {"a_ms", ta},
                                             {"b_ms", tb}});
  }
  const PairedVerdict va = aVsDefault.judge();
  const PairedVerdict vb = b ? bVsDefault.judge() : PairedVerdict{};
  const PairedVerdict vab = b ? aVsB.judge() : va;
  load.noteNoise(k.name, va.noise);
  log << llvm::formatv("  {0,-16} A / default {1:f3} (noise {2:f1} %, margin {3:f1} %: {4})", k.name,
                       va.ratio, 100 * va.noise, 100 * va.margin, comparisonWord(va));
  if (b)
    log << llvm::formatv("; B / default {0:f3} ({1}); A / B {2:f3} ({3})", vb.ratio,
                         comparisonWord(vb), vab.ratio, comparisonWord(vab));
  log << "\n";
  llvm::json::Object kernelReport{{"name", k.name},
                                  {"kernel", k.signature},
                                  {"a_schedule", ea->schedule},
                                  {"b_schedule", eb ? eb->schedule : "default"},
                                  {"a_over_b", vab.ratio},
                                  {"a_over_default", verdictJson(va)},
                                  {"cases", std::move(caseReports)}};
  if (b) {
    kernelReport["b_over_default"] = verdictJson(vb);
    kernelReport["a_over_b_paired"] = verdictJson(vab);
  }
  return std::optional<llvm::json::Object>(std::move(kernelReport));
}

llvm::Error ProgramTuner::compare(const HostKernels &program) {
  // Both must exist: comparing with nothing is a mistake, not an empty result.
  const bool withDefault = options.comparePath == "default";
  llvm::Expected<TuningDatabase> a = TuningDatabase::load(options.dbPath);
  if (!a)
    return a.takeError();
  std::optional<TuningDatabase> b;
  if (!withDefault) {
    llvm::Expected<TuningDatabase> loaded = TuningDatabase::load(options.comparePath);
    if (!loaded)
      return loaded.takeError();
    b = std::move(*loaded);
  }
  load.noteBefore(readLoadAverage());
  if (llvm::Error err = prepare(program))
    return err;
  log << llvm::formatv("xfc tune --compare: A = {0}, B = {1}; {2} threads; this machine now: "
                       "{3:f0} GFLOP/s fp32 FMA peak, {4:f1} GB/s read\n",
                       options.dbPath, withDefault ? "the default schedules" : options.comparePath,
                       options.threads, machine.fmaGflops, machine.readGBs);
  log << "  kernel           rows  keys  default ms       A ms       B ms    A / B\n";
  llvm::json::Array kernelsReport;
  for (TunedKernel &k : kernels) {
    if (options.interrupted && *options.interrupted)
      break;
    auto compared = compareKernel(k, *a, b ? &*b : nullptr);
    if (!compared)
      return compared.takeError();
    if (*compared)
      kernelsReport.push_back(std::move(**compared));
    load.noteDuring(readLoadAverage());
  }
  warnIfUnreliable();
  return writeReport(llvm::json::Object{{"a", options.dbPath},
                                        {"b", withDefault ? "default" : options.comparePath},
                                        {"target", target},
                                        {"threads", options.threads},
                                        {"batches", kCompareBatches},
                                        {"fma_gflops", machine.fmaGflops},
                                        {"read_gbs", machine.readGBs},
                                        {"kernels", std::move(kernelsReport)}});
}
