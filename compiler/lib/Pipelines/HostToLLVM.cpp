//===- HostToLLVM.cpp - host code and loop kernels → the LLVM dialect -----===//

#include "xf/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

void mlir::xf::buildHostToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  // exp, sin, cos, pow and rsqrt become LLVM intrinsics; tanh and erf have
  // none, so they call libm.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

OwningOpRef<ModuleOp> mlir::xf::lowerHostToLLVM(ModuleOp host) {
  OwningOpRef<ModuleOp> module = hostCodeOf(host);
  PassManager pm(module->getContext());
  buildHostToLLVMPipeline(pm);
  if (failed(pm.run(*module)))
    return nullptr;
  return module;
}
