//===- KernelNames.cpp - one Halide pipeline per distinct spec ------------===//
//
// The exported name of each GEMM and attention kernel: specs with one kernel
// description (#xf.gemm_kernel / #xf.attention_kernel: shapes, storage,
// packing, epilogue, CPU and CUDA schedules) share a pipeline (the same GEMM
// in every layer), each declared once (KernelDeclarations.h).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

using namespace mlir;
using namespace mlir::xf;

std::string HostLowering::nameKernel(GemmKernelSpec &spec) {
  return kernelName(kernelText(gemmKernelAttr(ctx, spec)), "xf_gemm_", program.gemms, spec);
}

std::string HostLowering::nameKernel(AttentionKernelSpec &spec) {
  return kernelName(kernelText(attentionKernelAttr(ctx, spec)), "xf_attention_", program.attentions,
                    spec);
}
