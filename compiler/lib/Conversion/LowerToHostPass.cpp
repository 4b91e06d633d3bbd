//===- LowerToHostPass.cpp - xf-lower-to-host ------------------------------===//
//
// The registered pass around lowerToHost (LowerToHost.h): xf-opt and xfc's
// --print-ir-after=xf-lower-to-host see the host module in place of the
// kernel-level one, its kernels declared in it (KernelDeclarations.h), so
// either's output is what an executable is built from. xfc builds it with
// createLowerToHostPass and hands it its HostOptions as they are; only the
// pass built from text (xf-opt) reads its textual options, into HostOptions,
// once. (So the textual form of xfc's pass, as a crash
// reproducer would print it, shows the defaults, not xfc's options.)
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/Passes.h"
#include "xf/IR/XfOps.h"

namespace mlir::xf {
#define GEN_PASS_DEF_LOWERTOHOST
#include "xf/Conversion/Passes.h.inc"
} // namespace mlir::xf

using namespace mlir;
using namespace mlir::xf;

namespace {

struct LowerToHostPass : xf::impl::LowerToHostBase<LowerToHostPass> {
  using LowerToHostBase::LowerToHostBase;
  LowerToHostPass(const HostOptions &options) : given(options) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<HostOptions> options = given ? FailureOr<HostOptions>(*given) : hostOptions();
    if (failed(options) || failed(checkCudaWeights(*options)))
      return signalPassFailure();
    FailureOr<OwningOpRef<ModuleOp>> lowered =
        lowerToHost(module, *options, getAnalysis<ModulePlacement>());
    if (failed(lowered))
      return signalPassFailure();
    // The host module takes the kernel-level module's place: body and attributes.
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      op.erase();
    module.getBody()->getOperations().splice(module.getBody()->end(),
                                             (*lowered)->getBody()->getOperations());
    module->setAttrs((**lowered)->getAttrDictionary());
  }

  /// CUDA kernels take weights as they are (no pack-at-load variant): a GEMM
  /// marked xf.packed_weight (xf-pack-weights-at-load) has no CUDA kernel.
  LogicalResult checkCudaWeights(const HostOptions &options) {
    if (!options.cudaDevice)
      return success();
    WalkResult packed = getOperation().walk([](GemmOp gemm) {
      return hasPackedWeight(gemm) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!packed.wasInterrupted())
      return success();
    getOperation().emitError() << "xf-lower-to-host: cuda takes weights as stored, but a GEMM is "
                                  "marked xf.packed_weight (xf-pack-weights-at-load)";
    return failure();
  }

  /// The textual options (xf-opt's), read into HostOptions.
  FailureOr<HostOptions> hostOptions() {
    HostOptions options;
    options.q8GemmInputs = q8GemmInputs;
    options.blockDotIsa = blockDotIsa;
    options.decodeAttentionIsa = decodeAttentionIsa;
    options.cudaDevice = cudaDevice;
    options.kernelOutputHook = kernelOutputHook;
    std::optional<GpuMatmul> precision = parseGpuMatmul(gpuMatmul);
    if (!precision || (*precision != GpuMatmul::Fp32 && !options.cudaDevice)) {
      getOperation().emitError() << "xf-lower-to-host: gpu-matmul '" << gpuMatmul
                                 << "': expected fp32, or tf32 or bf16 with cuda";
      return failure();
    }
    options.gpuMatmul = *precision;
    if (kvCacheType != "f32" && kvCacheType != "f16") {
      getOperation().emitError() << "xf-lower-to-host: kv-cache-type '" << kvCacheType
                                 << "': expected f32 or f16";
      return failure();
    }
    options.halfKvCache = kvCacheType == "f16";
    if (options.halfKvCache && options.cudaDevice) {
      getOperation().emitError()
          << "xf-lower-to-host: kv-cache-type f16 is not supported with cuda";
      return failure();
    }
    return options;
  }

  /// xfc's options (createLowerToHostPass), used as they are.
  std::optional<HostOptions> given;
};

} // namespace

std::unique_ptr<Pass> mlir::xf::createLowerToHostPass(const HostOptions &host) {
  return std::make_unique<LowerToHostPass>(host);
}
