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
#include "llvm/ADT/StringSet.h"

#include <string>

namespace mlir::xf {

/// How weights are kept: the compile options that change a kernel's dtypes.
struct WeightDtypes {
  bool bf16Weights = false;     // --weight-type=bf16
  bool bf16Activations = false; // --bf16-gemm-inputs
  /// Parameters kept in ggml blocks (xfc --quantized-like FILE.gguf: the
  /// file's type of each tensor), before blockParameterTypes filters them.
  llvm::StringMap<WeightBlocks> weightBlocks;
};

/// The parameters of `requested` that can stay in ggml blocks: matrices whose
/// every use is the [N, K] weight of a GEMM (transpose_weight) with K a
/// multiple of 32, an embedding table, or a row-wise part of a concatenation
/// that only feeds such GEMMs and whose parts all have the same block type.
llvm::StringMap<WeightBlocks> blockParameterTypes(func::FuncOp forward,
                                                  const llvm::StringMap<WeightBlocks> &requested);

/// The block type a GEMM reads its weight in: its parameter's, or the common
/// type of the parts of a concatenated weight; None when kept in float.
WeightBlocks weightBlocksOf(Value weight, const llvm::StringMap<WeightBlocks> &blockParameters);

/// Names of the parameters that may be stored in bfloat16 under
/// WeightDtypes::bf16Weights: every use of every op binding the name reads
/// it as a GEMM weight or an embedding table (both widen exactly on load).
llvm::StringSet<> bf16ParameterNames(func::FuncOp forward);

/// The spec of `op`; `bf16Weight` says whether its weight is stored in
/// bfloat16. The schedule comes from the op's attribute (the generator's
/// defaults when there is none).
GemmKernelSpec gemmKernelSpecOf(GemmOp op, bool bf16Weight, bool bf16Activations,
                                WeightBlocks weightBlocks = WeightBlocks::None);
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

/// The signature of each kernel op of `forward` under `dtypes` (in walk
/// order), with the op: GEMMs, attention and loop kernels.
struct KernelOpSignature {
  Operation *op;
  std::string signature;
};
std::vector<KernelOpSignature> kernelSignatures(func::FuncOp forward, const WeightDtypes &dtypes);

} // namespace mlir::xf

#endif // XF_CODEGEN_KERNELSPECS_H
