//===- LowerToHost.h - fused xf IR → the host module ------------*- C++ -*-===//
//
// Takes @forward after the fusion pipeline (tensors, kernel-level xf ops) and
// produces the module the executable is built from: func/scf/arith/math/llvm
// holding the ABI of docs/abi.md (xf_model_manifest, xf_prepare,
// xf_scratch_bytes, xf_forward, ...), with every tensor assigned a buffer
// (parameter, derived weight, a slot of the scratch arena reused by liveness,
// or a view) and the small kernels as scf loops, ended by the declarations of
// the generated kernels it calls (KernelDeclarations.h).
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_LOWERTOHOST_H
#define XF_CONVERSION_LOWERTOHOST_H

#include "xf/Codegen/HalideKernels.h"
#include "xf/Conversion/KernelDeclarations.h"
#include "xf/Conversion/Placement.h"
#include "xf/Target/TensorCoreGemm.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::xf {

struct HostOptions {
  // How each weight is stored (float32, bfloat16, ggml blocks), whether a
  // GEMM rounds its inputs to bfloat16 and whether it reads its weight packed
  // at load are no options: xf-assign-weight-storage and
  // xf-pack-weights-at-load mark them in the IR (`xf.weight_storage`,
  // `xf.bf16_inputs`, `xf.packed_weight`), and the lowering, the kernel
  // descriptions and the manifest ("dtype") read them there.
  /// For `xfc --check` (docs/pipeline.md, "Checking a build"): after every
  /// kernel call, `xf_check_kernel_output(site, out, rows, row_stride)` with
  /// the kernel's output, which the checker reads and may overwrite; the
  /// module attribute xf.site_ops names each site's op (KernelDeclarations.h).
  bool kernelOutputHook = false;
  /// GEMMs on weights in ggml blocks with fewer rows than gemv_rows_below (decode steps) round their
  /// input to Q8_0 and use 8-bit integer dot products (libxfrt's xfrt_block_gemv, instructions
  /// up to blockDotIsa: blockDotIsaCeiling of the target). Changes the numerics
  /// (docs/correctness.md); the Halide kernels keep the exact path for the other row counts.
  bool q8GemmInputs = false;
  int blockDotIsa = 0;
  /// A CUDA target (docs/gpu.md): every pointer the entry points take and
  /// compute is a device address; the GEMMs, attention and loop kernels are
  /// Halide CUDA pipelines called with device buffers (manifest "device":
  /// "cuda"). Not with weights in blocks or kernelOutputHook.
  bool cudaDevice = false;
  /// With cudaDevice: what the GEMMs multiply on (`--gpu-matmul`). The GEMMs the tensor cores
  /// take (tensorCoreGemmPlan) get one more buffer, their split-K partials in the device
  /// scratch after the arena (xf_scratch_bytes counts them; docs/gpu.md, "Split-K").
  GpuMatmul gpuMatmul = GpuMatmul::Fp32;
  /// Keep the KV cache of the cached entry points in IEEE float16 (manifest "cache_type":
  /// "f16"): new K/V rows are rounded as they are stored, the attention widens them to
  /// float32 as it reads them. Halves the cache and the bytes a decode step reads from it.
  /// Not with cudaDevice.
  bool halfKvCache = false;
  /// Cached causal attention with one query row (a decode step) calls libxfrt's
  /// xfrt_decode_attention with instructions up to this (decodeAttentionIsaCeiling of the
  /// target) instead of its Halide kernel; -1: always the Halide kernel. Not with cudaDevice.
  int decodeAttentionIsa = -1;
};

/// The host module of `fused` (which it leaves as it is). Fails with a
/// located error when @forward holds an op the host lowering cannot place
/// (e.g. one the fusion pipeline should have removed).
FailureOr<OwningOpRef<ModuleOp>> lowerToHost(ModuleOp fused, const HostOptions &options = {});
/// The same from `fused`'s placement analysis (xf-lower-to-host's
/// getAnalysis<ModulePlacement>()).
FailureOr<OwningOpRef<ModuleOp>> lowerToHost(ModuleOp fused, const HostOptions &options,
                                             const ModulePlacement &placed);

} // namespace mlir::xf

#endif // XF_CONVERSION_LOWERTOHOST_H
