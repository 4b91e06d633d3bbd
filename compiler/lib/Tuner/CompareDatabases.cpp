//===- CompareDatabases.cpp - xfc tune --compare ------------------------===//
//
// No search: the schedules two databases hold for each kernel, timed side by side with the
// default in alternating order over a few fresh worker batches, per length and as a
// geometric mean (A / B), printed and written to --report.
//
//===----------------------------------------------------------------------===//

#include "ProgramTuner.h"
#include "xf/Version.h"
#include "xfrt/OutputFile.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

/// Worker batches (fresh processes) per kernel of --compare; the minimum
/// over them is reported.
static constexpr int kCompareBatches = 2;

llvm::Error ProgramTuner::compare(const HostProgram &program) {
  // Both must exist: comparing with nothing is a mistake, not an empty result.
  llvm::Expected<TuningDatabase> a = TuningDatabase::load(options.dbPath);
  if (!a)
    return a.takeError();
  llvm::Expected<TuningDatabase> b = TuningDatabase::load(options.comparePath);
  if (!b)
    return b.takeError();
  if (llvm::Error err = prepare(program))
    return err;
  log << llvm::formatv("xfc tune --compare: A = {0}, B = {1}; {2} threads; this machine now: "
                       "{3:f0} GFLOP/s fp32 FMA peak, {4:f1} GB/s read\n",
                       options.dbPath, options.comparePath, options.threads, machine.fmaGflops,
                       machine.readGBs);
  log << "  kernel           rows  keys  default ms       A ms       B ms    A / B\n";
  llvm::json::Array kernelsReport;
  for (TunedKernel &k : kernels) {
    if (options.interrupted && *options.interrupted)
      break;
    const TuningEntry *ea = a->find(k.signature, target, options.threads, kXfVersion);
    const TuningEntry *eb = b->find(k.signature, target, options.threads, kXfVersion);
    std::optional<Point> pa = ea ? pointOf(ctx, k, ea->schedule) : std::nullopt;
    std::optional<Point> pb = eb ? pointOf(ctx, k, eb->schedule) : std::nullopt;
    if (!pa || !pb) {
      log << llvm::formatv("  {0,-16} not compared: no usable entry in {1}\n", k.name,
                           !pa ? options.dbPath : options.comparePath);
      continue;
    }
    const llvm::json::Object request = requestFor(k, everyCase(k), options.target, 9, 8.0);
    // Minimum wall time per case over the batches: [default, A, B].
    const size_t numCases = k.caseRows.size();
    std::vector<std::array<double, 3>> best(numCases, {INFINITY, INFINITY, INFINITY});
    std::string failure;
    for (int batch = 0; batch < kCompareBatches; ++batch) {
      // A then B in even batches, B then A in odd ones: neither always
      // runs right after the default.
      const bool swap = batch % 2 == 1;
      std::vector<llvm::json::Value> candidates{candidateJson(k, k.defaultPoint),
                                                candidateJson(k, swap ? *pb : *pa),
                                                candidateJson(k, swap ? *pa : *pb)};
      auto results = worker.run(llvm::json::Object(request), candidates,
                                90.0 * double(candidates.size()) + 60);
      if (!results)
        return results.takeError();
      for (size_t slot = 0; slot < 3; ++slot) {
        const CandidateResult &r = (*results)[slot == 0 ? 0 : (slot == 1) != swap ? 1 : 2];
        if (!r.ran || !r.failure.empty()) {
          failure = r.ran ? r.failure : "not run";
          continue;
        }
        for (size_t c = 0; c < numCases && c < r.cases.size(); ++c)
          best[c][slot] = std::min(best[c][slot], r.cases[c].wallMinMs);
      }
    }
    llvm::json::Array caseReports;
    double logRatio = 0;
    bool complete = true;
    for (size_t c = 0; c < numCases; ++c) {
      complete &= std::isfinite(best[c][1]) && std::isfinite(best[c][2]);
      double ratio = best[c][1] / best[c][2];
      logRatio += std::log(ratio);
      log << llvm::formatv("  {0,-16} {1,4} {2,5} {3,11:f4} {4,10:f4} {5,10:f4} {6,8:f3}\n", k.name,
                           k.caseRows[c], k.isGemm ? 0 : k.caseKeys[c], best[c][0], best[c][1],
                           best[c][2], ratio);
      caseReports.push_back(llvm::json::Object{{"rows", k.caseRows[c]},
                                               {"keys", k.isGemm ? 0 : k.caseKeys[c]},
                                               {"default_ms", best[c][0]},
                                               {"a_ms", best[c][1]},
                                               {"b_ms", best[c][2]}});
    }
    if (!complete) {
      log << llvm::formatv("  {0,-16} not compared: a schedule failed in the worker: {1}\n", k.name,
                           failure);
      continue;
    }
    double ratio = std::exp(logRatio / double(std::max<size_t>(1, numCases)));
    log << llvm::formatv("  {0,-16} all lengths (geometric mean)          A / B {1,8:f3}\n", k.name,
                         ratio);
    kernelsReport.push_back(llvm::json::Object{{"name", k.name},
                                               {"kernel", k.signature},
                                               {"a_schedule", ea->schedule},
                                               {"b_schedule", eb->schedule},
                                               {"a_over_b", ratio},
                                               {"cases", std::move(caseReports)}});
  }
  if (!options.reportPath.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv(
              "{0:2}", llvm::json::Value(llvm::json::Object{{"a", options.dbPath},
                                                            {"b", options.comparePath},
                                                            {"target", target},
                                                            {"threads", options.threads},
                                                            {"batches", kCompareBatches},
                                                            {"fma_gflops", machine.fmaGflops},
                                                            {"read_gbs", machine.readGBs},
                                                            {"kernels", std::move(kernelsReport)}}))
       << "\n";
    if (xfrt::Status s = xfrt::writeFileAtomically(options.reportPath, text.data(), text.size());
        !s)
      return llvm::createStringError("cannot write the report: " + s.message());
  }
  return llvm::Error::success();
}
