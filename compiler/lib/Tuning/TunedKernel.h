//===- TunedKernel.h - a kernel of a model, as the tuner sees it -*- C++ -*-===//
//
// A GEMM or attention kernel of the lowered model with its schedule space, its paths
// (SchedulePaths.h) and the lengths it is timed at; how it is described to xf-tune-worker
// (the kernel, a candidate schedule, a request), how a schedule is written in the database
// and read back, and what a timed candidate costs (TunedKernel.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_TUNING_TUNEDKERNEL_H
#define XF_LIB_TUNING_TUNEDKERNEL_H

#include "WorkerClient.h"
#include "xf/Codegen/HalideKernels.h"
#include "xf/Tuning/SchedulePaths.h"
#include "xf/Tuning/ScheduleSpace.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::xf::tuning {

/// One kernel of the model, as the tuner sees it.
struct TunedKernel {
  bool isGemm = true;
  GemmKernelSpec gemm;
  AttentionKernelSpec attention;
  std::string name, signature;
  /// The kernel's description as the worker's request names it (#xf.gemm_kernel<...> /
  /// #xf.attention_kernel<...>, KernelSpecs.h), its weight not packed: the worker packs it
  /// per candidate.
  std::string description;
  SearchSpace space;
  std::vector<SchedulePath> paths; // each searched on its own cases
  Point defaultPoint;
  std::vector<int64_t> caseRows, caseKeys;
};

/// The kernel of `spec` as the tuner sees it, its signature and description filled in.
TunedKernel tunedKernel(MLIRContext &ctx, const GemmKernelSpec &spec);
TunedKernel tunedKernel(MLIRContext &ctx, const AttentionKernelSpec &spec);

/// The attention kernels of a model to time, one per database key, with that key (a packed
/// batch's one call aside: it takes its op's schedule). An entry applies to the xf.attention
/// op (ApplyTuningDatabase), whose key is its kernel's with rotary keys rotated in the kernel
/// and float32 K/V; the kernels the lowering derives from it for a cache (keys rotated on
/// their way in, `keys-rotated`; a float16 cache, `kv=f16`) take the op's schedule and have no
/// entries of their own. Where an op has a keys-rotated kernel, that one, which a generation
/// runs, is timed under the op's key.
std::vector<std::pair<std::string, AttentionKernelSpec>>
attentionsByDatabaseKey(MLIRContext &ctx, llvm::ArrayRef<AttentionKernelSpec> attentions);

/// Point `p` as one of the worker request's candidates.
llvm::json::Value candidateJson(const TunedKernel &k, const Point &p);

/// Point `p` as the database keeps it (the schedule attribute's text).
std::string scheduleText(MLIRContext &ctx, const TunedKernel &k, const Point &p);

/// The point of a recorded schedule; nullopt if it is not one of this kind.
std::optional<Point> pointOf(MLIRContext &ctx, const TunedKernel &k, llvm::StringRef text);

/// Geometric mean of the cases' minimum wall times: every length counts
/// alike, whatever its absolute time (a 1-row decode GEMV as much as a
/// 128-row prefill GEMM).
double costOf(const CandidateResult &r);

/// How close each case runs to this machine's bound (FMA peak or read
/// bandwidth, whichever is slower), as a geometric mean over the cases.
double rooflineOf(const TunedKernel &k, const CandidateResult &r, const MachineCeilings &m);

/// Per length, the minimum over `results` of each one's wall minimum (one
/// candidate's results from several batches).
CandidateResult fastestOf(llvm::ArrayRef<CandidateResult> results);

/// Per length, every round's wall time of `r` (PairedRounds::addBatch).
std::vector<std::vector<double>> roundTimes(const CandidateResult &r);

/// Indices of all of a kernel's lengths.
std::vector<size_t> everyCase(const TunedKernel &k);

/// A worker request timing kernel `k` on `cases` (indices into its lengths),
/// everything but the candidates.
llvm::json::Object requestFor(const TunedKernel &k, llvm::ArrayRef<size_t> cases,
                              const std::string &target, int repeats, double maxSeconds);

} // namespace mlir::xf::tuning

#endif // XF_LIB_TUNING_TUNEDKERNEL_H
