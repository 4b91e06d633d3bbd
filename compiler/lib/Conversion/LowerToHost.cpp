//===- LowerToHost.cpp - fused xf IR → host code + kernel specs -----------===//
//
// Two walks over @forward. The first, the placement analysis (Placement.h),
// decides where every tensor lives; the cache plan (CachePlan.h) which entry
// points the model gets and its KV-cache layout. The second emits the entry
// points (EntryPoints.cpp): one kernel call per op, by the emitter its op type
// registered (KernelEmitters.cpp: GemmEmitter.cpp, AttentionEmitter.cpp,
// LoopKernelEmitters.cpp), each bracketed by the profiling hooks
// (ProfilingHooks.cpp), its operands described by BufferArguments.cpp; then
// the manifest (Manifest.cpp). Here: naming the Halide kernels (one per
// distinct spec), the weights packed at load, and the run.
// LowerTraining.cpp lowers @loss_and_gradients (TrainingEmitters.cpp).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::xf;

namespace {

std::string gemmKey(const GemmKernelSpec &s) {
  const GemmSchedule &c = s.schedule;
  return kernelSignature(s) + (s.packedWeight ? " packed" : "") +
         llvm::formatv(" | {0} {1} {2} {3} {4} {5} {6} {7} {8}", c.tileCols, c.tileRows, c.kBlock,
                       c.packWeights, c.rowsPerTask, c.panelCols, c.gemvRowsBelow,
                       c.gemvRowsPerPass, c.gemvTasks)
             .str();
}

std::string attentionKey(const AttentionKernelSpec &s) {
  const AttentionSchedule &c = s.schedule;
  return kernelSignature(s) + llvm::formatv(" | {0} {1} {2} {3}", c.queryBlock, c.keyBlock,
                                            c.rowTile, c.decodeKeyTile)
                                  .str();
}

} // namespace

std::string HostLowering::nameKernel(GemmKernelSpec &spec) {
  return kernelName(gemmKey(spec), "xf_gemm_", program.gemms, spec);
}

std::string HostLowering::nameKernel(AttentionKernelSpec &spec) {
  return kernelName(attentionKey(spec), "xf_attention_", program.attentions, spec);
}

//===----------------------------------------------------------------------===//
// Weights packed at load (filled by xf_prepare)
//===----------------------------------------------------------------------===//

GemmKernelSpec HostLowering::gemmSpecOf(GemmOp gemm) {
  Value weight = gemm.getWeight();
  GemmKernelSpec spec = gemmKernelSpecOf(gemm, isBf16(weight), options.bf16Activations,
                                         blocksOf(weight));
  Storage s = placements[weight].storage;
  // Training updates the parameters after every step: its kernels read them as stored.
  spec.packedWeight = options.packWeightsAtLoad && !training &&
                      (s == Storage::Parameter || s == Storage::Derived) &&
                      canPackWeightAtLoad(spec);
  spec.name = nameKernel(spec);
  return spec;
}

/// One packed buffer per weight and layout (tile width; gated tiles
/// interleave): GEMMs that read a weight the same way share it.
void HostLowering::planPackedWeights() {
  std::map<std::tuple<Operation *, unsigned, int64_t, bool>, int64_t> index;
  forward.walk([&](GemmOp gemm) {
    GemmKernelSpec spec = gemmSpecOf(gemm);
    if (!spec.packedWeight)
      return;
    Value w = gemm.getWeight();
    auto key = std::make_tuple(w.getDefiningOp(), cast<OpResult>(w).getResultNumber(),
                               spec.schedule.tileCols, spec.epilogue == GemmEpilogue::SwiGlu);
    auto [it, inserted] = index.try_emplace(key, int64_t(packedWeights.size()));
    if (inserted)
      packedWeights.push_back({w, spec});
    packedWeightOfGemm[gemm] = it->second;
  });
}

HalideBufferArg HostLowering::packedWeightArg(int64_t index) {
  const GemmKernelSpec &spec = packedWeights[index].spec;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  if (emittingForward)
    derivedForwardReads.insert(int64_t(derived.size()) + index);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, derivedArg,
                                 ValueRange{i64(int64_t(derived.size()) + index)});
  PackedWeightShape shape = packedWeightShape(spec);
  HalideBufferArg arg{LLVM::LoadOp::create(*b, loc, ptr, at),
                      {{i64(shape.lanes), i64(1)},
                       {i64(shape.rows), i64(shape.lanes)},
                       {i64(shape.tiles), i64(shape.rows * shape.lanes)}}};
  arg.bf16 = spec.bf16Weights;
  return arg;
}

//===----------------------------------------------------------------------===//
// xf_forward: one kernel per op
//===----------------------------------------------------------------------===//

LogicalResult HostLowering::emitNumber(Operation *op) {
  if (auto length = dyn_cast<LengthOp>(op)) {
    numbers.map(length.getResult(), arith::SIToFPOp::create(*b, loc, b->getF64Type(),
                                                            rowsOf(length.getTokens())));
    return success();
  }
  if (isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op)) {
    b->clone(*op, numbers);
    return success();
  }
  return op->emitError("no host code for this number");
}

LogicalResult HostLowering::emitOp(Operation *op) {
  loc = op->getLoc();
  if (training)
    return emitBackwardKernel(op);
  Value v = op->getResult(0);
  if (v.getType().isF64())
    return emitNumber(op);
  Placement &p = placements[v];
  if (p.storage != Storage::Scratch && p.storage != Storage::Output)
    return success(); // parameters, derived weights, views: nothing to run
  if (inFusedEmbeddingSum(op))
    return success(); // the sum's one kernel computes it
  emittingOp = op;
  LogicalResult emitted =
      profiled(op, [&](xfrt::KernelSpec &site) { return emitKernel(op, site); });
  emittingOp = nullptr;
  return emitted;
}

/// A parameter may live in bfloat16 when every use reads it as a GEMM weight
/// or an embedding table: both kernels widen it exactly on load.
void HostLowering::chooseBf16Parameters() {
  if (!options.bf16Weights)
    return;
  llvm::StringSet<> names = bf16ParameterNames(forward);
  for (auto &entry : names)
    bf16Parameters.insert(parameterIndex.lookup(entry.getKey()));
}

LogicalResult HostLowering::run() {
  FailureOr<TensorPlacement> placed = placeForward(forward);
  if (failed(placed))
    return failure();
  static_cast<TensorPlacement &>(*this) = std::move(*placed);
  blockParameters = blockParameterTypes(forward, options.weightBlocks);
  chooseBf16Parameters();
  OpBuilder top(ctx);
  program.module = ModuleOp::create(forward.getLoc());
  kernels = std::make_shared<LoopKernels>(*program.module);
  kernels->setDevice(options.cudaDevice);
  planPackedWeights();
  emitPrepare();
  cachePlan = planCache(forward, *this, options.halfKvCache);
  // Packed batches need @forward_packed (xf-pack-sequences decides which
  // models can run them).
  cachePlan.packable &= bool(forwardPacked);
  cachePlan.packedCacheable &= bool(forwardPacked);
  if (failed(placePackedForward()))
    return failure();
  for (auto [cached, packed] : {std::pair{false, false}, {true, false}, {false, true},
                                {true, true}})
    if (failed(emitForward(cached, packed)))
      return failure();
  emitScratchBytes();
  emitCacheBytes();
  program.deviceLoops = kernels->deviceKernels();

  program.manifest = xfrt::renderManifest(describeModel());
  emitManifestGlobal(*program.module, program.manifest);
  return success();
}

FailureOr<HostProgram> mlir::xf::lowerToHost(ModuleOp fused, const HostOptions &options) {
  auto forward = fused.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fused.emitError("no func.func @forward to lower");
  fused.getContext()->loadDialect<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                                  math::MathDialect, scf::SCFDialect>();
  HostProgram program;
  HostLowering lowering(forward, program, options,
                        fused.lookupSymbol<func::FuncOp>("forward_packed"));
  if (failed(lowering.run()))
    return failure();
  if (auto train = fused.lookupSymbol<func::FuncOp>("loss_and_gradients")) {
    HostLowering training(train, program, options);
    if (failed(training.runTraining(lowering)))
      return failure();
  }
  return program;
}
