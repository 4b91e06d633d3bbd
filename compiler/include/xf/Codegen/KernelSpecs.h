//===- KernelSpecs.h - what each kernel op compiles to ----------*- C++ -*-===//
//
// The Halide kernel spec of an xf.gemm / xf.attention (shapes, layout,
// dtypes, epilogue, schedule), and its signature: the spec without name or
// schedule, the key under which the tuner measures a kernel and the tuning
// database keeps its best schedule. The lowering, the database pass and the
// tuner all go through these, so a key the tuner writes is the key the
// compiler looks up.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CODEGEN_KERNELSPECS_H
#define XF_CODEGEN_KERNELSPECS_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::xf {

/// The block type of `storage` (None for f32 and bf16).
WeightBlocks weightBlocksOf(WeightStorage storage);

/// The spec of `op`, all of it read from the IR: its weight's storage is
/// its `xf.weight_storage` (weightStorageOf; xf-assign-weight-storage), bf16
/// inputs the op's `xf.bf16_inputs` (same pass), a weight packed at load its
/// `xf.packed_weight` (xf-pack-weights-at-load). The schedule comes from the
/// op's attribute (the generator's defaults when there is none).
GemmKernelSpec gemmKernelSpecOf(GemmOp op);
AttentionKernelSpec attentionKernelSpecOf(AttentionOp op);

/// A spec's kernel description (#xf.gemm_kernel, #xf.attention_kernel;
/// XfKernelAttrs.td), its name left out, and the spec of a description. The
/// two directions are exact: a spec's description decodes to the same
/// kernel (kvHeads written out, a default CUDA schedule left out).
GemmKernelAttr gemmKernelAttr(MLIRContext *ctx, const GemmKernelSpec &spec);
AttentionKernelAttr attentionKernelAttr(MLIRContext *ctx, const AttentionKernelSpec &spec);
GemmKernelSpec gemmKernelSpecOf(GemmKernelAttr kernel, llvm::StringRef name = "");
AttentionKernelSpec attentionKernelSpecOf(AttentionKernelAttr kernel, llvm::StringRef name = "");

/// The tuning database's key of a kernel: its description without packing
/// or schedules, in the text databases have always used,
/// "gemm k=768 n=2304 weight=kn:f32 x=f32 bias act=gelu_tanh" and
/// "attention heads=12 dk=64 dv=64 causal scale=1.250000e-01".
std::string kernelSignature(GemmKernelAttr kernel);
std::string kernelSignature(AttentionKernelAttr kernel);
/// The description's text, `#xf.gemm_kernel<...>`: what the object cache
/// keys a kernel by, and what tells two kernels apart.
std::string kernelText(Attribute kernel);

/// A loop kernel op's signature: its name, operand types and inherent
/// attributes, e.g. "loop layer_norm (tensor<?x768xf32>, tensor<768xf32>,
/// tensor<768xf32>) {epsilon = 1.000000e-05 : f64}".
std::string loopKernelSignature(Operation *op);

/// The signature of each kernel op of `forward` (in walk order), with the
/// op: GEMMs (as gemmKernelSpecOf reads them from the IR), attention and
/// loop kernels.
struct KernelOpSignature {
  Operation *op;
  std::string signature;
};
std::vector<KernelOpSignature> kernelSignatures(func::FuncOp forward);

} // namespace mlir::xf

#endif // XF_CODEGEN_KERNELSPECS_H
