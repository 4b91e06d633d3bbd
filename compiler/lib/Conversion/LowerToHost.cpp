//===- LowerToHost.cpp - fused xf IR → host code + kernel specs -----------===//
//
// The analyses first, once: the placement (Placement.h, ModulePlacement)
// decides where every tensor lives; the cache plan (CachePlan.h) which entry
// points the model gets and its KV-cache layout. Then the lowering, which
// only reads them, emits the entry points (EntryPoints.cpp): one kernel call
// per op, by the pattern of its op type (KernelPatterns.cpp) and the emitter
// it registered (KernelEmitters.cpp: GemmEmitter.cpp, AttentionEmitter.cpp,
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
  readWeightStorage();
  program.module = ModuleOp::create(forward.getLoc());
  kernels = std::make_shared<LoopKernels>(*program.module);
  kernels->setDevice(options.cudaDevice);
  planPackedWeights();
  emitPrepare();
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
  return lowerToHost(fused, options, ModulePlacement(fused));
}

FailureOr<OwningOpRef<ModuleOp>> mlir::xf::lowerToHost(ModuleOp fused, const HostOptions &options,
                                                       const ModulePlacement &placed) {
  if (placed.failed())
    return failure();
  fused.getContext()->loadDialect<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                                  math::MathDialect, scf::SCFDialect>();
  // The analyses, once: the lowering and its patterns only read them. The
  // cache's element type is the one option they depend on.
  const CachePlan cachePlan = planCache(placed, options.halfKvCache);
  HostBuild program;
  HostLowering lowering(placed.forward, program, options, placed.placement(), cachePlan, &placed);
  if (failed(lowering.run()))
    return failure();
  if (auto train = fused.lookupSymbol<func::FuncOp>("loss_and_gradients")) {
    FailureOr<TensorPlacement> trainingPlacement = placeTraining(train, placed.placement());
    if (failed(trainingPlacement))
      return failure();
    HostLowering training(train, program, options, *trainingPlacement, cachePlan);
    if (failed(training.runTraining(lowering)))
      return failure();
  }
  declareKernels(*program.module, {std::move(program.gemms), std::move(program.attentions),
                                   std::move(program.deviceLoops)});
  if (options.kernelOutputHook)
    noteSiteOps(*program.module, placed.forward, program.siteOps);
  if (options.cudaDevice && options.gpuMatmul != GpuMatmul::Fp32)
    (*program.module)
        ->setAttr(kGpuMatmulAttr,
                  StringAttr::get(fused.getContext(), gpuMatmulName(options.gpuMatmul)));
  return std::move(program.module);
}
