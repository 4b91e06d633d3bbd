//===- TensorCoreGemmLowering.cpp - the tensor-core GEMM from MLIR to PTX -===//
//
// TensorCoreGemmSource.cpp's gpu.module, parsed in a context of its own and lowered as
// `mlir-opt --pass-pipeline=` would: nvvm-attach-target (sm_NN, O3), then inside the
// gpu.module scf → cf, nvgpu → nvvm (ldmatrix, mma.sync), gpu/arith/math/memref/vector →
// nvvm + llvm, both with 32-bit indices (xfrt/GpuGemmAbi.h's kKernelIndexBits), and
// gpu-module-to-binary's `isa` format: LLVM's NVPTX backend, in this process, writes PTX (no CUDA
// toolkit, no libdevice: the epilogue's exp is ex2.approx).
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "TensorCoreKernelText.h"

#include "xfrt/GpuGemmAbi.h"

#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::xf {
namespace {

llvm::Error failed(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::unique_ptr<MLIRContext> kernelContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  auto context = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

// gpu.dynamic_shared_memory becomes an internal zero-length array in the shared address space,
// which LLVM's NVPTX backend demotes into its one kernel as a 1-byte static `.shared .b8`
// (reads past it then land in the dynamic region by luck of placement). An external one is
// PTX's dynamic shared memory proper, `.extern .shared .align 16 .b8 name[]`.
void externalDynamicSharedMemory(ModuleOp module) {
  module.walk([](LLVM::GlobalOp global) {
    auto array = dyn_cast<LLVM::LLVMArrayType>(global.getType());
    if (global.getAddrSpace() == 3 && array && array.getNumElements() == 0)
      global.setLinkage(LLVM::Linkage::External);
  });
}

// The options of both conversions to LLVM: kKernelIndexBits-bit indices.
LowerToLLVMOptions loweringOptions(MLIRContext *context) {
  LowerToLLVMOptions options(context);
  options.overrideIndexBitwidth(xfrt::gpu_gemm::kKernelIndexBits);
  return options;
}

// MLIR's convert-nvgpu-to-nvvm with the kernels' index width: the upstream pass lowers with
// 64-bit indices whatever convert-gpu-to-nvvm is told, and the two must agree on the memref
// descriptors they pass between them. The kernels use cp.async, ldmatrix and mma.sync only.
LogicalResult lowerNvgpuOps(gpu::GPUModuleOp module) {
  MLIRContext *context = module.getContext();
  LLVMTypeConverter converter(context, loweringOptions(context));
  nvgpu::populateCommonGPUTypeAndAttributeConversions(converter);
  converter.addConversion([&](nvgpu::DeviceAsyncTokenType type) -> Type {
    return converter.convertType(IntegerType::get(type.getContext(), 32)); // tokens are dropped
  });
  RewritePatternSet patterns(context);
  populateNVGPUToNVVMConversionPatterns(converter, patterns);
  LLVMConversionTarget target(*context);
  target.addLegalDialect<LLVM::LLVMDialect, arith::ArithDialect, memref::MemRefDialect,
                         NVVM::NVVMDialect, vector::VectorDialect>();
  scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns, target);
  return applyPartialConversion(module, target, std::move(patterns));
}

// gpu.modules named so hold sm_90a kernels (wgmma): WgmmaGemmSource.cpp.
constexpr llvm::StringLiteral kSm90aSuffix = "_wg";

// nvvm-attach-target per gpu.module (O3): sm_90a with PTX 8.0 for the wgmma kernels' modules
// (kernelModuleChip), sm_`capability` for the others.
void attachTargets(ModuleOp module, int capability) {
  MLIRContext *context = module.getContext();
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
    const std::string chip = kernelModuleChip(gpuModule.getName(), capability);
    auto target = NVVM::NVVMTargetAttr::get(context, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip,
                                            chip == "sm_90a" ? "+ptx80" : "");
    gpuModule.setTargetsAttr(ArrayAttr::get(context, {target}));
  }
}

} // namespace

std::string kernelModuleChip(llvm::StringRef moduleName, int capability) {
  return moduleName.ends_with(kSm90aSuffix) ? "sm_90a" : "sm_" + std::to_string(capability);
}

// The kernel's module lowered to the LLVM/NVVM dialects, or its PTX.
llvm::Expected<std::string> tc::lowerTensorCoreKernel(llvm::StringRef source, llvm::StringRef what,
                                                      int capability, bool ptx,
                                                      std::string *sm90a) {
  std::unique_ptr<MLIRContext> context = kernelContext();
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
    diagnosticStream << d << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, context.get());
  if (!module)
    return failed("GPU kernel '" + what + "' does not parse: " + diagnostics);

  attachTargets(*module, capability);
  PassManager pm(context.get());
  pm.nest<gpu::GPUModuleOp>().addPass(createSCFToControlFlowPass());
  PassManager toNvvm(context.get());
  OpPassManager &kernel = toNvvm.nest<gpu::GPUModuleOp>();
  ConvertGpuOpsToNVVMOpsOptions gpuToNvvm;
  gpuToNvvm.indexBitwidth = xfrt::gpu_gemm::kKernelIndexBits;
  kernel.addPass(createConvertGpuOpsToNVVMOps(gpuToNvvm));
  // NVVM ops that LLVM's NVPTX backend has no intrinsic for (wgmma.mma_async, the proxy
  // fence) as inline PTX.
  kernel.addPass(createConvertNVVMToLLVMPass());
  kernel.addPass(createCanonicalizerPass());
  kernel.addPass(createCSEPass());
  kernel.addPass(createReconcileUnrealizedCastsPass());
  auto lowerNvgpu = [&] {
    for (auto gpuModule : module->getOps<gpu::GPUModuleOp>())
      if (mlir::failed(lowerNvgpuOps(gpuModule)))
        return mlir::failure();
    return mlir::success();
  };
  if (mlir::failed(pm.run(*module)) || mlir::failed(lowerNvgpu()) ||
      mlir::failed(toNvvm.run(*module)))
    return failed("lowering GPU kernel '" + what + "' failed: " + diagnostics);
  externalDynamicSharedMemory(*module);
  if (ptx) {
    PassManager toPtx(context.get());
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "isa";
    toPtx.addPass(createGpuModuleToBinaryPass(binary));
    if (mlir::failed(toPtx.run(*module)))
      return failed("lowering GPU kernel '" + what + "' to PTX failed: " + diagnostics);
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  if (!ptx) {
    module->print(os);
    return text;
  }
  std::string main;
  for (auto binary : module->getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects()) {
      std::string text = cast<gpu::ObjectAttr>(object).getObject().str();
      if (binary.getSymName().ends_with(kSm90aSuffix)) {
        if (sm90a)
          *sm90a = std::move(text);
      } else if (main.empty()) {
        main = std::move(text);
      }
    }
  if (main.empty())
    return failed("GPU kernel '" + what + "': no PTX came out of gpu-module-to-binary");
  return main;
}

namespace {

enum class Stage { Nvvm, Ptx };

llvm::Expected<std::string> lower(const GemmKernelSpec &spec, GpuMatmul precision, int capability,
                                  Stage stage, std::string *sm90a = nullptr) {
  if (!tensorCoreGemmPlan(spec, precision).mlirKernel)
    return failed("gemm kernel '" + spec.name + "' does not take the tensor-core path");
  return tc::lowerTensorCoreKernel(tensorCoreGemmSource(spec, precision), spec.name, capability,
                                   stage == Stage::Ptx, sm90a);
}

} // namespace

llvm::Expected<std::string> tensorCoreGemmNvvm(const GemmKernelSpec &spec, GpuMatmul precision,
                                               int capability) {
  return lower(spec, precision, capability, Stage::Nvvm);
}

llvm::Expected<std::string> tensorCoreGemmPtx(const GemmKernelSpec &spec, GpuMatmul precision,
                                              int capability, std::string *sm90a) {
  return lower(spec, precision, capability, Stage::Ptx, sm90a);
}

} // namespace mlir::xf
