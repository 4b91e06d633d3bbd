//===- KernelDeclarations.h - the kernels a host module declares -*- C++ -*-===//
//
// xf-lower-to-host ends the host module with one `xf.kernel_decl` per
// generated kernel its entry points call: the Halide GEMMs and attentions
// (#xf.gemm_kernel / #xf.attention_kernel) and, under a CUDA target, the loop
// kernels (#xf.device_loop_kernel). The build, the tuner and --check read
// them back from the module, so a host module printed by xf-opt is built as
// the one xfc lowers in memory (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_KERNELDECLARATIONS_H
#define XF_CONVERSION_KERNELDECLARATIONS_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <vector>

namespace mlir::xf {

/// The specs of a host module's kernels, each named after its declaration,
/// in the order declared.
struct HostKernels {
  std::vector<GemmKernelSpec> gemms;
  std::vector<AttentionKernelSpec> attentions;
  /// Under a CUDA target: the loop kernels' pipelines.
  std::vector<DeviceLoopKernelSpec> deviceLoops;
};

/// Appends one xf.kernel_decl per kernel to `host`: GEMMs, attentions, then
/// loop kernels.
void declareKernels(ModuleOp host, const HostKernels &kernels);

/// The kernels `host` declares.
HostKernels hostKernelsOf(ModuleOp host);

/// A copy of `host` without its kernel declarations: the code the
/// host-to-LLVM pipeline lowers.
OwningOpRef<ModuleOp> hostCodeOf(ModuleOp host);

/// A loop kernel's description, and its spec named `name`.
DeviceLoopKernelAttr deviceLoopKernelAttr(MLIRContext *ctx, const DeviceLoopKernelSpec &spec);
DeviceLoopKernelSpec deviceLoopKernelSpecOf(DeviceLoopKernelAttr kernel, llvm::StringRef name);

/// Under HostOptions::kernelOutputHook (--check): the module attribute that
/// names, for each kernel call site (the index the hooks get), the @forward
/// op it computes, by its position in @forward's body.
inline constexpr llvm::StringLiteral kSiteOpsAttr = "xf.site_ops";

/// Under a CUDA target with tensor-core products (HostOptions::gpuMatmul
/// tf32 or bf16): the module attribute naming them ("tf32", "bf16"). The
/// host code's calls depend on it (a tensor-core GEMM takes split-K
/// partials), so a build from the host module reads it; absent: fp32.
inline constexpr llvm::StringLiteral kGpuMatmulAttr = "xf.gpu_matmul";

/// The @forward op of each call site of `host` in `forward` (the function
/// `host` was lowered from); fails with an error on `host` where the module
/// has no such attribute or it names no op of `forward`.
FailureOr<std::vector<Operation *>> siteOpsOf(ModuleOp host, func::FuncOp forward);

} // namespace mlir::xf

#endif // XF_CONVERSION_KERNELDECLARATIONS_H
