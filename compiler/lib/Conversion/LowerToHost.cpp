//===- LowerToHost.cpp - fused xf IR → host code + kernel specs -----------===//
//
// Two walks over @forward. The first, the placement analysis (Placement.h),
// decides where every tensor lives; the cache plan (CachePlan.h) which entry
// points the model gets and its KV-cache layout. The second emits the entry
// points (EntryPoints.cpp): one kernel call per op, by the emitter its op type
// registered (KernelEmitters.cpp: GemmEmitter.cpp, AttentionEmitter.cpp,
// LoopKernelEmitters.cpp), each bracketed by the profiling hooks
// (ProfilingHooks.cpp), its operands described by BufferArguments.cpp; then
// the manifest (Manifest.cpp) and, at the module's end, the declarations of
// the kernels called (KernelDeclarations.h). This file is the driver only: the files above
// never call back into it. LowerTraining.cpp lowers @loss_and_gradients
// (TrainingEmitters.cpp).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "mlir/Dialect/Math/IR/Math.h"


using namespace mlir;
using namespace mlir::xf;

/// The parameters xf-assign-weight-storage kept in bfloat16 or ggml blocks
/// (`xf.weight_storage`), by index and name, for the buffers and the manifest.
void HostLowering::readWeightStorage() {
  forward.walk([&](ParameterOp param) {
    WeightStorage storage = weightStorageOf(param);
    if (storage == WeightStorage::bf16)
      bf16Parameters.insert(parameterIndex.lookup(param.getName()));
    else if (isBlockStorage(storage))
      blockParameters[param.getName()] = weightBlocksOf(storage);
  });
}

LogicalResult HostLowering::run() {
  FailureOr<TensorPlacement> placed = placeForward(forward);
  if (failed(placed))
    return failure();
  static_cast<TensorPlacement &>(*this) = std::move(*placed);
  readWeightStorage();
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

  emitManifestGlobal(*program.module, xfrt::renderManifest(describeModel()));
  return success();
}

/// --check's xf.site_ops: each site's op by its position in @forward's body
/// (a packed entry point's sites name @forward's ops already).
static void noteSiteOps(ModuleOp host, func::FuncOp forward, ArrayRef<Operation *> siteOps) {
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : forward.getBody().front())
    position.try_emplace(&op, position.size());
  SmallVector<int64_t> indices;
  for (Operation *op : siteOps)
    indices.push_back(position.at(op));
  host->setAttr(kSiteOpsAttr, DenseI64ArrayAttr::get(host.getContext(), indices));
}

FailureOr<OwningOpRef<ModuleOp>> mlir::xf::lowerToHost(ModuleOp fused,
                                                       const HostOptions &options) {
  auto forward = fused.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fused.emitError("no func.func @forward to lower");
  fused.getContext()->loadDialect<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                                  math::MathDialect, scf::SCFDialect>();
  HostBuild program;
  HostLowering lowering(forward, program, options,
                        fused.lookupSymbol<func::FuncOp>("forward_packed"));
  if (failed(lowering.run()))
    return failure();
  if (auto train = fused.lookupSymbol<func::FuncOp>("loss_and_gradients")) {
    HostLowering training(train, program, options);
    if (failed(training.runTraining(lowering)))
      return failure();
  }
  declareKernels(*program.module, {std::move(program.gemms), std::move(program.attentions),
                                   std::move(program.deviceLoops)});
  if (options.kernelOutputHook)
    noteSiteOps(*program.module, forward, program.siteOps);
  return std::move(program.module);
}
