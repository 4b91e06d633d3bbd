//===- ApplyTuningDatabase.cpp - tuned schedules from the database --------===//
//
// In: @forward after fusion. Out: the same, with the database's best
// schedule on every kernel it holds an entry for (same kernel signature,
// target, threads and xf version), each such op marked `xf.tuned`. Loop
// kernel ops take theirs as `xf.loop_schedule`. GEMMs on weights kept in ggml
// blocks or bfloat16 (`xf.weight_storage`, xf-assign-weight-storage) are
// looked up by that signature (weight=nk:q4_1 ...), so a schedule tuned for
// the float32 kernel of the same shape is never applied to them.
// Entries are parsed as schedule attributes, so an entry edited into an
// illegal schedule fails with the attribute verifier's message. A GEMM's
// entry is a #xf.gemm_schedule (`schedule`) or, for a CUDA target, a
// #xf.gpu_gemm_schedule (`gpu_schedule`).
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/KernelSpecs.h"
#include "xf/Transforms/Passes.h"
#include "xf/Tuning/TuningDatabase.h"
#include "xf/Version.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::xf {
#define GEN_PASS_DEF_APPLYTUNINGDATABASE
#include "xf/Transforms/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

/// Parses `text` as an attribute, collecting the parser's or verifier's
/// message instead of printing it.
FailureOr<Attribute> parseSchedule(MLIRContext *ctx, llvm::StringRef text, std::string &error) {
  ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &diag) {
    if (error.empty())
      error = diag.str();
    return success();
  });
  Attribute attr = parseAttribute(text, ctx);
  if (!attr) {
    if (error.empty())
      error = "cannot parse '" + text.str() + "'";
    return failure();
  }
  return attr;
}

/// @forward_packed repeats @forward's kernels: its messages about the
/// database as a whole would repeat @forward's.
bool repeatsForward(func::FuncOp func) {
  auto module = func->getParentOfType<ModuleOp>();
  return func.getName() == "forward_packed" && module && module.lookupSymbol("forward");
}

struct ApplyTuningDatabasePass : xf::impl::ApplyTuningDatabaseBase<ApplyTuningDatabasePass> {
  using ApplyTuningDatabaseBase::ApplyTuningDatabaseBase;

  void runOnOperation() override {
    if (db.empty())
      return;
    func::FuncOp forward = getOperation();
    llvm::Expected<tuning::TuningDatabase> loaded = tuning::TuningDatabase::load(db);
    if (!loaded) {
      forward.emitError() << "tuning database: " << llvm::toString(loaded.takeError());
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    llvm::StringSet<> tunedElsewhere; // kernels with entries only for other keys
    for (const KernelOpSignature &k : kernelSignatures(forward)) {
      const tuning::TuningEntry *entry = loaded->find(k.signature, target, threads, kXfVersion);
      if (!entry) {
        if (!loaded->findKernel(k.signature).empty())
          tunedElsewhere.insert(k.signature);
        continue;
      }
      std::string error;
      FailureOr<Attribute> schedule = parseSchedule(ctx, entry->schedule, error);
      bool fits = succeeded(schedule) &&
                  (isa<GemmOp>(k.op) ? isa<GemmScheduleAttr, GpuGemmScheduleAttr>(*schedule)
                   : isa<AttentionOp>(k.op)
                       ? isa<AttentionScheduleAttr, GpuAttentionScheduleAttr>(*schedule)
                       : isa<LoopScheduleAttr>(*schedule));
      if (!fits) {
        k.op->emitError() << "tuning database '" << db << "': the entry for '" << k.signature
                          << "' holds an illegal schedule: "
                          << (error.empty() ? "not a schedule of this kind of kernel" : error);
        return signalPassFailure();
      }
      llvm::StringRef name =
          isLoopKernelOp(k.op) ? llvm::StringRef(XfDialect::kLoopScheduleAttrName)
          : isa<GpuGemmScheduleAttr, GpuAttentionScheduleAttr>(*schedule) ? "gpu_schedule"
                                                                          : "schedule";
      k.op->setAttr(name, *schedule);
      k.op->setAttr("xf.tuned", UnitAttr::get(ctx));
    }
    if (repeatsForward(forward))
      return;
    if (!tunedElsewhere.empty())
      forward.emitWarning() << "tuning database '" << db << "': " << tunedElsewhere.size()
                            << " kernel(s) were tuned only for another target, thread count or "
                               "xf version; they use default schedules (target "
                            << target.getValue() << ", " << int64_t(threads) << " threads, xf "
                            << kXfVersion << ")";
    for (const tuning::TuningEntry &entry : loaded->entries()) {
      llvm::StringRef kernel = entry.kernel;
      if (!kernel.starts_with("gemm ") && !kernel.starts_with("attention ") &&
          !kernel.starts_with("loop ")) {
        forward.emitWarning() << "tuning database '" << db << "': ignoring the entry for unknown "
                              << "kernel '" << kernel << "'";
        break;
      }
    }
  }
};

} // namespace
