//===- XfDialect.td - the xf dialect -----------------------*- tablegen -*-===//
//
// The xf dialect models a transformer at the level of the algorithm boxes of
// Phuong & Hutter, "Formal Algorithms for Transformers".
//
//===----------------------------------------------------------------------===//

#ifndef XF_DIALECT_TD
#define XF_DIALECT_TD

include "mlir/IR/OpBase.td"

def Xf_Dialect : Dialect {
  let name = "xf";
  let cppNamespace = "::mlir::xf";
  let summary = "Transformer ops at the level of Phuong & Hutter's algorithms.";
  let description = [{
    Ops of the `xf` dialect are the primitives of "Formal Algorithms for
    Transformers": token and positional embedding, linear maps, layer norm and
    RMS norm, (multi-head) attention with bidirectional, causal or cross masks,
    activations and unembedding. They work on ranked tensors. Activations are
    laid out row-major as `[ℓ, d]`: row `t` is token position `t` (the paper's
    column convention is a notation, not a layout). The sequence length `ℓ` is
    usually dynamic (`?`); model widths are static. Every verifier checks the
    shape rules of its algorithm and names the offending shapes.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Run-time numbers (xf.length) are computed with arith ops on f64.
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  // Checks `xf.loop_schedule` (the schedule of ops lowered to loop kernels),
  // `xf.weight_storage` (how a weight is kept: xf-assign-weight-storage) and
  // the GEMM marks `xf.bf16_inputs` and `xf.packed_weight`.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    /// The discardable attribute holding a loop kernel op's #xf.loop_schedule.
    static constexpr llvm::StringLiteral kLoopScheduleAttrName = "xf.loop_schedule";
    /// The discardable attribute holding a weight's #xf.weight_storage, on
    /// the xf.parameter (or concatenation of blocks) that produces it.
    static constexpr llvm::StringLiteral kWeightStorageAttrName = "xf.weight_storage";
    /// A unit attribute on an xf.gemm over a bf16 weight: its multi-row path
    /// rounds x to bfloat16 and runs bf16 dot products (xf-assign-weight-storage's
    /// bf16-gemm-inputs; #xf.gemm_kernel `bf16_inputs`).
    static constexpr llvm::StringLiteral kBf16InputsAttrName = "xf.bf16_inputs";
    /// A unit attribute on an xf.gemm whose weight, a constant of the model,
    /// it reads packed once at load for its register tiles (xf-pack-weights-at-load;
    /// #xf.gemm_kernel `packed`).
    static constexpr llvm::StringLiteral kPackedWeightAttrName = "xf.packed_weight";
  }];
}

class Xf_Op<string mnemonic, list<Trait> traits = []>
    : Op<Xf_Dialect, mnemonic, traits>;

#endif // XF_DIALECT_TD
