//===- TunedKernel.cpp - a kernel of a model, as the tuner sees it -------===//
//
// How a kernel, a candidate schedule and a request are described to xf-tune-worker, how a
// schedule is written in the database and read back, and what a timed candidate costs.
//
//===----------------------------------------------------------------------===//

#include "TunedKernel.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::xf;
using namespace mlir::xf::tuning;

TunedKernel tuning::tunedKernel(MLIRContext &ctx, const GemmKernelSpec &spec) {
  TunedKernel k;
  k.isGemm = true, k.gemm = spec, k.name = spec.name;
  GemmKernelSpec unpacked = spec;
  unpacked.packedWeight = false;
  GemmKernelAttr description = gemmKernelAttr(&ctx, unpacked);
  k.signature = kernelSignature(description), k.description = kernelText(description);
  return k;
}

TunedKernel tuning::tunedKernel(MLIRContext &ctx, const AttentionKernelSpec &spec) {
  TunedKernel k;
  k.isGemm = false, k.attention = spec, k.name = spec.name;
  // The worker times the one-call kernel on float32 K/V, as it always has: not the batched
  // decode step exported beside it, nor a float16 cache's variant.
  AttentionKernelSpec timed = spec;
  timed.batchedDecode = timed.halfKeyValues = false;
  AttentionKernelAttr description = attentionKernelAttr(&ctx, timed);
  k.signature = kernelSignature(attentionKernelAttr(&ctx, spec));
  k.description = kernelText(description);
  return k;
}

std::vector<std::pair<std::string, AttentionKernelSpec>>
tuning::attentionsByDatabaseKey(MLIRContext &ctx, llvm::ArrayRef<AttentionKernelSpec> attentions) {
  std::vector<std::pair<std::string, AttentionKernelSpec>> timed;
  for (const AttentionKernelSpec &spec : attentions) {
    if (spec.segmented)
      continue;
    AttentionKernelSpec op = spec;
    op.ropeKeys = true;
    op.halfKeyValues = false;
    const std::string key = kernelSignature(attentionKernelAttr(&ctx, op));
    auto same = llvm::find_if(timed, [&](const auto &t) { return t.first == key; });
    if (same == timed.end())
      timed.push_back({key, spec});
    else if (!spec.ropeKeys)
      same->second = spec;
  }
  return timed;
}

llvm::json::Value tuning::candidateJson(const TunedKernel &k, const Point &p) {
  if (k.isGemm) {
    GemmSchedule s = gemmScheduleAt(p);
    return llvm::json::Object{{"tile_cols", s.tileCols},
                              {"tile_rows", s.tileRows},
                              {"k_block", s.kBlock},
                              {"pack_weights", s.packWeights},
                              {"rows_per_task", s.rowsPerTask},
                              {"panel_cols", s.panelCols},
                              {"gemv_rows_below", s.gemvRowsBelow},
                              {"gemv_rows_per_pass", s.gemvRowsPerPass},
                              {"gemv_tasks", s.gemvTasks}};
  }
  AttentionSchedule s = attentionScheduleAt(p);
  return llvm::json::Object{{"query_block", s.queryBlock},
                            {"key_block", s.keyBlock},
                            {"row_tile", s.rowTile},
                            {"decode_key_tile", s.decodeKeyTile}};
}

std::string tuning::scheduleText(MLIRContext &ctx, const TunedKernel &k, const Point &p) {
  Attribute attr = k.isGemm ? Attribute(gemmScheduleAttr(&ctx, gemmScheduleAt(p)))
                            : Attribute(attentionScheduleAttr(&ctx, attentionScheduleAt(p)));
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

/// The point of a recorded schedule; nullopt if it is not one of this kind.
std::optional<Point> tuning::pointOf(MLIRContext &ctx, const TunedKernel &k, llvm::StringRef text) {
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  Attribute attr = parseAttribute(text, &ctx);
  if (auto g = dyn_cast_or_null<GemmScheduleAttr>(attr); g && k.isGemm)
    return gemmPoint(gemmScheduleOf(g));
  if (auto a = dyn_cast_or_null<AttentionScheduleAttr>(attr); a && !k.isGemm)
    return attentionPoint(attentionScheduleOf(a));
  return std::nullopt;
}

/// Geometric mean of the cases' minimum wall times: every length counts
/// alike, whatever its absolute time (a 1-row decode GEMV as much as a
/// 128-row prefill GEMM).
double tuning::costOf(const CandidateResult &r) {
  double logSum = 0;
  for (const CaseTime &c : r.cases)
    logSum += std::log(std::max(c.wallMinMs, 1e-6));
  return std::exp(logSum / std::max<size_t>(1, r.cases.size()));
}

/// How close each case runs to this machine's bound (FMA peak or read
/// bandwidth, whichever is slower), as a geometric mean over the cases.
double tuning::rooflineOf(const TunedKernel &k, const CandidateResult &r,
                          const MachineCeilings &m) {
  if (m.fmaGflops <= 0 || m.readGBs <= 0 || r.cases.empty())
    return 0;
  double logSum = 0;
  KernelWork work = k.isGemm ? kernelWork(k.gemm) : kernelWork(k.attention);
  for (const CaseTime &c : r.cases) {
    double flops = work.flops(double(c.rows), double(c.keys));
    double bytes = work.bytes(double(c.rows), double(c.keys));
    double boundMs = std::max(flops / (m.fmaGflops * 1e9), bytes / (m.readGBs * 1e9)) * 1e3;
    logSum += std::log(std::min(1.0, boundMs / std::max(c.wallMinMs, 1e-9)));
  }
  return std::exp(logSum / double(r.cases.size()));
}

CandidateResult tuning::fastestOf(llvm::ArrayRef<CandidateResult> results) {
  CandidateResult fastest;
  for (const CandidateResult &r : results) {
    if (fastest.cases.empty()) {
      fastest = r;
      continue;
    }
    for (size_t c = 0; c < fastest.cases.size() && c < r.cases.size(); ++c)
      if (r.cases[c].wallMinMs < fastest.cases[c].wallMinMs)
        fastest.cases[c] = r.cases[c];
  }
  return fastest;
}

std::vector<std::vector<double>> tuning::roundTimes(const CandidateResult &r) {
  std::vector<std::vector<double>> times;
  for (const CaseTime &c : r.cases)
    times.push_back(c.wallMs);
  return times;
}

/// Indices of all of a kernel's lengths.
std::vector<size_t> tuning::everyCase(const TunedKernel &k) {
  std::vector<size_t> cases(k.caseRows.size());
  for (size_t i = 0; i < cases.size(); ++i)
    cases[i] = i;
  return cases;
}

/// A worker request timing kernel `k` on `cases` (indices into its lengths),
/// everything but the candidates.
llvm::json::Object tuning::requestFor(const TunedKernel &k, llvm::ArrayRef<size_t> cases,
                                      const std::string &target, int repeats, double maxSeconds) {
  llvm::json::Object request{{"target", target},
                             {"repeats", repeats},
                             {"max_seconds", maxSeconds},
                             {"kernel", k.description}};
  llvm::json::Array list;
  for (size_t i : cases) {
    llvm::json::Object c{{"rows", k.caseRows[i]}};
    if (!k.isGemm)
      c["keys"] = k.caseKeys[i];
    list.push_back(std::move(c));
  }
  request["cases"] = std::move(list);
  return request;
}

