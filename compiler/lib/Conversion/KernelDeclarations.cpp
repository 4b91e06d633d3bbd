//===- KernelDeclarations.cpp - the kernels a host module declares --------===//
//
// Written once at the end of the host lowering (lowerToHost) from the specs
// the emitters named, read back by whatever builds from the module: the
// GEMM and attention specs are decoded from their descriptions as the
// generators' inputs (KernelSpecs.h); a loop kernel's description holds each
// field of DeviceLoopKernelSpec (its enums in the same order).
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/KernelDeclarations.h"

#include "xf/Codegen/KernelSpecs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::xf;

static_assert(int(DeviceLoopKind::AppendKeyValues) == int(DeviceLoopKernelKind::append_key_values),
              "DeviceLoopKind and #xf.device_loop_kernel's kinds are in one order");
static_assert(int(DeviceMap::ScaleBy) == int(DeviceLoopMap::scale_by),
              "DeviceMap and #xf.device_loop_kernel's maps are in one order");

DeviceLoopKernelAttr mlir::xf::deviceLoopKernelAttr(MLIRContext *ctx,
                                                    const DeviceLoopKernelSpec &spec) {
  // A structured binding: a field added to the spec must be added here too.
  const auto &[name, kind, width, heads, headWidth, constant, map, flag, affineParams,
               rowPositions] = spec;
  (void)name; // the exported symbol, not the kernel
  return DeviceLoopKernelAttr::get(ctx, DeviceLoopKernelKind(int(kind)), width, heads, headWidth,
                                   llvm::APFloat(constant), DeviceLoopMap(int(map)), flag,
                                   affineParams, rowPositions);
}

DeviceLoopKernelSpec mlir::xf::deviceLoopKernelSpecOf(DeviceLoopKernelAttr kernel,
                                                      llvm::StringRef name) {
  DeviceLoopKernelSpec spec;
  spec.name = name.str();
  spec.kind = DeviceLoopKind(int(kernel.getKind()));
  spec.width = kernel.getWidth();
  spec.heads = kernel.getHeads(), spec.headWidth = kernel.getHeadWidth();
  spec.constant = kernel.getConstant().convertToDouble();
  spec.map = DeviceMap(int(kernel.getMap()));
  spec.flag = kernel.getFlag();
  spec.affineParams = int(kernel.getAffineParams());
  spec.rowPositions = kernel.getRowPositions();
  return spec;
}

void mlir::xf::declareKernels(ModuleOp host, const HostKernels &kernels) {
  MLIRContext *ctx = host.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(host.getBody());
  Location loc = host.getLoc();
  auto declare = [&](const std::string &name, Attribute kernel) {
    KernelDeclOp::create(b, loc, FlatSymbolRefAttr::get(ctx, name), kernel);
  };
  for (const GemmKernelSpec &spec : kernels.gemms)
    declare(spec.name, gemmKernelAttr(ctx, spec));
  for (const AttentionKernelSpec &spec : kernels.attentions)
    declare(spec.name, attentionKernelAttr(ctx, spec));
  for (const DeviceLoopKernelSpec &spec : kernels.deviceLoops)
    declare(spec.name, deviceLoopKernelAttr(ctx, spec));
}

HostKernels mlir::xf::hostKernelsOf(ModuleOp host) {
  HostKernels kernels;
  for (auto decl : host.getBody()->getOps<KernelDeclOp>()) {
    llvm::StringRef name = decl.getKernelName();
    Attribute kernel = decl.getKernel();
    if (auto gemm = dyn_cast<GemmKernelAttr>(kernel))
      kernels.gemms.push_back(gemmKernelSpecOf(gemm, name));
    else if (auto attention = dyn_cast<AttentionKernelAttr>(kernel))
      kernels.attentions.push_back(attentionKernelSpecOf(attention, name));
    else
      kernels.deviceLoops.push_back(
          deviceLoopKernelSpecOf(cast<DeviceLoopKernelAttr>(kernel), name));
  }
  return kernels;
}

OwningOpRef<ModuleOp> mlir::xf::hostCodeOf(ModuleOp host) {
  OwningOpRef<ModuleOp> code(cast<ModuleOp>(host->clone()));
  for (auto decl : llvm::make_early_inc_range(code->getBody()->getOps<KernelDeclOp>()))
    decl.erase();
  (*code)->removeAttr(kSiteOpsAttr);
  return code;
}

FailureOr<std::vector<Operation *>> mlir::xf::siteOpsOf(ModuleOp host, func::FuncOp forward) {
  auto indices = host->getAttrOfType<DenseI64ArrayAttr>(kSiteOpsAttr);
  if (!indices)
    return host.emitError() << "the host module has no " << kSiteOpsAttr
                            << " (lowered without the kernel output hook)";
  std::vector<Operation *> body;
  for (Operation &op : forward.getBody().front())
    body.push_back(&op);
  std::vector<Operation *> ops;
  for (int64_t index : indices.asArrayRef()) {
    if (index < 0 || index >= int64_t(body.size()))
      return host.emitError() << kSiteOpsAttr << ": " << index << " is no op of @forward";
    ops.push_back(body[index]);
  }
  return ops;
}
