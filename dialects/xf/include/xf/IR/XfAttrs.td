//===- XfAttrs.td - xf enum attributes ---------------------*- tablegen -*-===//

#ifndef XF_ATTRS_TD
#define XF_ATTRS_TD

include "mlir/IR/EnumAttr.td"

// Which context positions a query may attend to (the paper's Mask).
def Xf_MaskKind : I32EnumAttr<"MaskKind", "attention mask", [
    I32EnumAttrCase<"bidirectional", 0>,  // self-attention, Mask ≡ 1
    I32EnumAttrCase<"causal", 1>,         // self-attention, key t' ≤ query t
    I32EnumAttrCase<"cross", 2>           // context is another sequence, Mask ≡ 1
  ]> {
  let cppNamespace = "::mlir::xf";
}

def Xf_GeluApproximation : I32EnumAttr<"GeluApproximation", "GELU form", [
    I32EnumAttrCase<"erf", 0>,   // exact: x·Φ(x)
    I32EnumAttrCase<"tanh", 1>   // GPT-2's tanh approximation
  ]> {
  let cppNamespace = "::mlir::xf";
}

// The elementwise function a fused GEMM applies before its residual add.
def Xf_Activation : I32EnumAttr<"Activation", "GEMM epilogue activation", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"gelu_tanh", 2>,
    I32EnumAttrCase<"gelu_erf", 3>,
    I32EnumAttrCase<"silu", 4>,  // x·σ(x), the gate of SwiGLU
    // Gated: the weight holds [W_gate | W_up] (2·N columns) and the result is
    // silu(x·W_gate + b_gate) ⊙ (x·W_up + b_up), N columns.
    I32EnumAttrCase<"swiglu", 5>
  ]> {
  let cppNamespace = "::mlir::xf";
}

// The row normalisation a fused GEMM applies to x as it reads it (its
// prologue: xf-fuse-norm-into-gemm, CUDA builds).
def Xf_GemmNorm : I32EnumAttr<"GemmNorm", "GEMM prologue normalisation", [
    I32EnumAttrCase<"layer_norm", 0>, // (x − mean) / sqrt(var + ε) ⊙ γ + β
    I32EnumAttrCase<"rms_norm", 1>    // x / sqrt(mean(x²) + ε) ⊙ γ
  ]> {
  let cppNamespace = "::mlir::xf";
}

// Which features of a head rotary position embeddings rotate together.
def Xf_RopePairing : I32EnumAttr<"RopePairing", "rotary pair layout", [
    I32EnumAttrCase<"adjacent", 0>, // (x[2i], x[2i+1]): GGUF / llama.cpp (Q, K rows permuted)
    I32EnumAttrCase<"halves", 1>    // (x[i], x[i+d/2]): Hugging Face checkpoints
  ]> {
  let cppNamespace = "::mlir::xf";
}

// How a weight matrix or embedding table is kept in memory (xf-assign-weight-storage decides it
// from xfc's --weight-type and --quantized-like). Every form widens to float32 as it is read.
def Xf_WeightStorage : I32EnumAttr<"WeightStorage", "weight storage", [
    I32EnumAttrCase<"f32", 0>,
    I32EnumAttrCase<"bf16", 1>,  // bfloat16, widened exactly
    I32EnumAttrCase<"q8_0", 2>,  // ggml blocks of 32 (docs/checkpoints.md): {f16 d; int8 q[32]}
    I32EnumAttrCase<"q4_0", 3>,  // {f16 d; u8 q[16]}
    I32EnumAttrCase<"q4_1", 4>   // {f16 d; f16 m; u8 q[16]}
  ]> {
  let cppNamespace = "::mlir::xf";
  let genSpecializedAttr = 0; // #xf.weight_storage<...> (XfKernelAttrs.td)
}

// The layout of a GEMM's weight: [K, N], or [N, K] as nn.Linear keeps it.
def Xf_WeightLayout : I32EnumAttr<"WeightLayout", "GEMM weight layout", [
    I32EnumAttrCase<"kn", 0>,
    I32EnumAttrCase<"nk", 1>
  ]> {
  let cppNamespace = "::mlir::xf";
  let genSpecializedAttr = 0;
}

// What a CUDA loop kernel computes (#xf.device_loop_kernel, DeviceLoopKind of
// HalideKernels.h, in its order).
def Xf_DeviceLoopKind : I32EnumAttr<"DeviceLoopKernelKind", "CUDA loop kernel", [
    I32EnumAttrCase<"gather", 0>,
    I32EnumAttrCase<"position", 1>,
    I32EnumAttrCase<"gather_positions", 2>,
    I32EnumAttrCase<"sinusoid", 3>,
    I32EnumAttrCase<"add", 4>,
    I32EnumAttrCase<"map", 5>,
    I32EnumAttrCase<"silu", 6>,
    I32EnumAttrCase<"multiply", 7>,
    I32EnumAttrCase<"rotary", 8>,
    I32EnumAttrCase<"normalize", 9>,
    I32EnumAttrCase<"softmax", 10>,
    I32EnumAttrCase<"copy", 11>,
    I32EnumAttrCase<"transpose", 12>,
    I32EnumAttrCase<"append_key_values", 13>
  ]> {
  let cppNamespace = "::mlir::xf";
  let genSpecializedAttr = 0;
}

// A `map` loop kernel's function (DeviceMap of HalideKernels.h, in its order).
def Xf_DeviceLoopMap : I32EnumAttr<"DeviceLoopMap", "CUDA map kernel function", [
    I32EnumAttrCase<"relu", 0>,
    I32EnumAttrCase<"gelu_tanh", 1>,
    I32EnumAttrCase<"gelu_erf", 2>,
    I32EnumAttrCase<"scale", 3>,
    I32EnumAttrCase<"scale_by", 4>
  ]> {
  let cppNamespace = "::mlir::xf";
  let genSpecializedAttr = 0;
}

#endif // XF_ATTRS_TD
