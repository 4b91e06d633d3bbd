//===- CheckFaults.cpp - faults --check must find (test only) -------------===//
//
// Each fault makes the checked build compute something other than the xf
// module the interpreter evaluates, the way a bug in one place of the
// compiler would, so the tests can check that --check names that kernel. The
// change is made to the copy of the kernel-level module that is built, never
// to the one the interpreter runs:
//  - epilogue: the first GEMM with an activation gets another one (relu for
//    GELU/SiLU, none for relu; relu when no GEMM has one), as a generator
//    emitting the wrong epilogue would;
//  - schedule: the first GEMM is built as a K blocking that loses the tail of
//    the reduction would compute it: one block of K/2+1 and nothing after
//    (its input and weight cut to that block, the schedule's k_block set to it);
//  - loop: the first LayerNorm/RMSNorm loop kernel is lowered with ε + 1;
//  - fusion (Check.cpp): the epilogue change made to the kernel-level module
//    itself, as a wrong fusion pass would: the interpreter then finds that
//    module unlike the frontend's;
//  - packed (Check.cpp, on the host module): in xf_forward_packed the
//    positional embedding of each sequence starts at its first row in the
//    batch instead of at position 0, as a host lowering that forgot to
//    restart positions per sequence would; xf_forward is unchanged.
//
//===----------------------------------------------------------------------===//

#include "xf/Check/Check.h"
#include "xf/Check/CheckFaults.h"

#include "xf/Codegen/KernelSchedules.h"
#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::xf;
using mlir::xf::check::sourceLine;

namespace {
llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

template <typename Op, typename Pred> Op first(func::FuncOp module, Pred pred) {
  Op found;
  module.walk([&](Op op) {
    if (!found && pred(op))
      found = op;
  });
  return found;
}

llvm::Error wrongEpilogue(func::FuncOp module, std::string &what) {
  auto plain = [](Activation a) { return a != Activation::none && a != Activation::swiglu; };
  GemmOp gemm = first<GemmOp>(module, [&](GemmOp op) { return plain(op.getActivation()); });
  if (!gemm)
    gemm = first<GemmOp>(module, [](GemmOp op) { return op.getActivation() == Activation::none; });
  if (!gemm)
    return fail("--check-fault=epilogue: the model has no GEMM to change");
  Activation wrong = gemm.getActivation() == Activation::relu ? Activation::none : Activation::relu;
  what = llvm::formatv("the GEMM at {0} built with activation {1} instead of {2}",
                       sourceLine(gemm.getLoc()), stringifyActivation(wrong),
                       stringifyActivation(gemm.getActivation()));
  gemm.setActivation(wrong);
  return llvm::Error::success();
}

llvm::Error droppedKTail(func::FuncOp module, std::string &what) {
  GemmOp gemm = first<GemmOp>(module, [](GemmOp op) {
    return op.getInput().getType().getDimSize(1) >= 2 && op.getSchedule();
  });
  if (!gemm)
    return fail("--check-fault=schedule: the model has no scheduled GEMM to change");
  auto x = gemm.getInput().getType();
  auto w = gemm.getWeight().getType();
  const int64_t k = x.getDimSize(1), block = k / 2 + 1;
  OpBuilder b(gemm);
  Location loc = gemm.getLoc();
  bool nk = gemm.getTransposeWeight(); // W stored [N, K]
  auto cutX =
      SliceOp::create(b, loc, RankedTensorType::get({x.getDimSize(0), block}, x.getElementType()),
                      gemm.getInput(), 1, 0);
  SmallVector<int64_t> wShape(w.getShape());
  wShape[nk ? 1 : 0] = block;
  auto cutW = SliceOp::create(b, loc, RankedTensorType::get(wShape, w.getElementType()),
                              gemm.getWeight(), nk ? 1 : 0, 0);
  gemm.getInputMutable().assign(cutX);
  gemm.getWeightMutable().assign(cutW);
  GemmSchedule s = gemmScheduleOf(*gemm.getSchedule());
  s.kBlock = block;
  gemm.setScheduleAttr(gemmScheduleAttr(b.getContext(), s));
  what = llvm::formatv("the GEMM at {0} built with k_block {1} and the last {2} of K = {3} dropped",
                       sourceLine(loc), block, k - block, k);
  return llvm::Error::success();
}

llvm::Error wrongLoopKernel(func::FuncOp module, std::string &what) {
  Operation *norm = nullptr;
  module.walk([&](Operation *op) {
    if (!norm && isa<LayerNormOp, RmsNormOp>(op))
      norm = op;
  });
  if (!norm)
    return fail("--check-fault=loop: the model has no LayerNorm or RMSNorm");
  auto eps = norm->getAttrOfType<FloatAttr>("epsilon");
  double changed = eps.getValueAsDouble() + 1.0;
  norm->setAttr("epsilon", FloatAttr::get(eps.getType(), changed));
  what = llvm::formatv("the {0} at {1} lowered with eps {2:e}", norm->getName().getStringRef(),
                       sourceLine(norm->getLoc()), changed);
  return llvm::Error::success();
}
} // namespace

const char *const mlir::xf::check::kCheckFaultHelp =
    "Test only: build a fault into the checked executable, which --check must name "
    "(epilogue: a GEMM's activation changed; schedule: a GEMM's K blocking drops the tail of "
    "K; loop: a LayerNorm/RMSNorm loop kernel with eps + 1; fusion: the epilogue fault made by the "
    "fusion passes, in the kernel-level module itself; packed: xf_forward_packed's positions "
    "not restarted per sequence; cached-packed: xf_forward_cached_packed's positions taken from "
    "the sequence's first row in the batch, not from its start)";

bool mlir::xf::check::isCheckFault(llvm::StringRef name) {
  return name == "epilogue" || name == "schedule" || name == "loop" || name == "fusion" ||
         isHostFault(name);
}

bool mlir::xf::check::isHostFault(llvm::StringRef name) {
  return name == "packed" || name == "cached-packed";
}

llvm::Error mlir::xf::check::injectHostFault(llvm::StringRef name, ModuleOp host,
                                             std::string &what) {
  llvm::StringRef entry = name == "packed" ? "xf_forward_packed" : "xf_forward_cached_packed";
  auto function = host.lookupSymbol<func::FuncOp>(entry);
  func::CallOp call;
  if (function)
    function.walk([&](func::CallOp c) {
      if (!call && c.getCallee().starts_with("xf_position_rows"))
        call = c;
    });
  auto loop = call ? call->getParentOfType<scf::ForOp>() : scf::ForOp();
  if (!loop)
    return fail("--check-fault=" + name + ": " + entry + " embeds no positions per sequence");
  // The loop's first carried value is the sequence's first row in the batch (forEachSequence).
  call->setOperand(call->getNumOperands() - 1, loop.getRegionIterArgs()[0]);
  what = llvm::formatv("{0}'s {1} starts each sequence at its first row in the batch, not at "
                       "{2}",
                       entry, call.getCallee(), name == "packed" ? "position 0" : "its start");
  return llvm::Error::success();
}

llvm::Error mlir::xf::check::injectFault(llvm::StringRef name, ModuleOp kernels,
                                         std::string &what) {
  auto inject = name == "epilogue"   ? wrongEpilogue
                : name == "schedule" ? droppedKTail
                : name == "loop"     ? wrongLoopKernel
                                     : nullptr;
  if (!inject)
    return fail("--check-fault=" + name + ": unknown fault (epilogue, schedule or loop)");
  // @forward_packed repeats @forward's ops (xf-pack-sequences) and shares its
  // kernels: the same fault goes into both, at the same op.
  auto forward = kernels.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fail("--check-fault=" + name + ": no @forward");
  if (llvm::Error e = inject(forward, what))
    return e;
  std::string again;
  if (auto packed = kernels.lookupSymbol<func::FuncOp>("forward_packed"))
    return inject(packed, again);
  return llvm::Error::success();
}
