//===- Passes.td - xf → host code ------------------------*- tablegen -*-===//
//
// The stage after the kernel pipeline (Transforms/Passes.td): the fused,
// scheduled xf module becomes the host code of docs/abi.md.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_PASSES_TD
#define XF_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToHost : Pass<"xf-lower-to-host", "ModuleOp"> {
  let summary = "Lower the kernel-level @forward to the host entry points of docs/abi.md";
  let description = [{
    Replaces the module (@forward after the kernel pipeline, and
    @loss_and_gradients when present) with the host code `xfc --emit=host`
    prints: xf_prepare, xf_scratch_bytes, xf_cache_bytes, xf_forward and its
    cached and packed forms (refusing, with status 1, where the model cannot
    run that way), the training entry points, the loop kernels as scf loops,
    declarations of the Halide GEMM and attention kernels they call, the
    manifest constant `xf_model_manifest`, and at the end one
    `xf.kernel_decl` per generated kernel with its description
    (#xf.gemm_kernel, #xf.attention_kernel, #xf.device_loop_kernel), from
    which `xfc host.mlir -o model` builds the executable. Steps: the placement analysis
    (Placement.h: where every tensor lives), the cache plan (CachePlan.h:
    which entry points run, the KV-cache layout), then one kernel call per
    op. The module attributes `xf.model` and `xf.hyperparameters` and
    @forward's `xf.output` go into the manifest. Each weight's storage is
    its `xf.weight_storage` (xf-assign-weight-storage: --weight-type,
    --quantized-like); a GEMM's bf16 inputs and weight packed at load are
    its marks `xf.bf16_inputs` (same pass: --bf16-gemm-inputs) and
    `xf.packed_weight` (xf-pack-weights-at-load: --pack-weights). The
    options are xfc's --q8-gemm-inputs, --target cuda (refused for a module
    with packed weights), --gpu-matmul, --kv-cache-type and --check's hook.
  }];
  let options = [
    Option<"q8GemmInputs", "q8-gemm-inputs", "bool", "false",
           "decode GEMMs on weight blocks round their input to Q8_0 (libxfrt's xfrt_block_gemv)">,
    Option<"blockDotIsa", "block-dot-isa", "int", "0",
           "widest instructions xfrt_block_gemv may use: 0 portable, 1 AVX2, 2 AVX-VNNI, "
           "3 AVX-512 VNNI">,
    Option<"decodeAttentionIsa", "decode-attention-isa", "int", "-1",
           "decode steps' cached attention calls libxfrt's xfrt_decode_attention with "
           "instructions up to: 2 AVX-512, 1 AVX2; -1 keeps the Halide kernel">,
    Option<"cudaDevice", "cuda", "bool", "false",
           "entry points take device addresses; kernels are Halide CUDA pipelines">,
    Option<"gpuMatmul", "gpu-matmul", "std::string", "\"fp32\"",
           "with cuda: what the GEMMs multiply on: fp32 (Halide), tf32 or bf16 (tensor "
           "cores; their calls take split-K partials; the module attribute "
           "xf.gpu_matmul records it)">,
    Option<"kvCacheType", "kv-cache-type", "std::string", "\"f32\"",
           "element type of the cached entry points' KV cache: f32 or f16">,
    Option<"kernelOutputHook", "kernel-output-hook", "bool", "false",
           "call xf_check_kernel_output after every kernel (xfc --check); the module "
           "attribute xf.site_ops names each site's op of @forward">
  ];
  let dependentDialects = ["arith::ArithDialect", "func::FuncDialect", "LLVM::LLVMDialect",
                           "math::MathDialect", "scf::SCFDialect"];
}

#endif // XF_CONVERSION_PASSES_TD
