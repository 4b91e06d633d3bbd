//===- CudaRangeMerge.cpp - flash-decoding's merge in the next GEMV -------===//
//
// On the GPU a decode step's attention is the key-range pass and the merge of
// the ranges (AttentionDecodeCuda.cpp). Where the attention's output is read
// by one GEMM only, that GEMM's GEMV path (M <= 4) can merge the ranges as it
// reads x (GemmKernelSpec::mergeHeads): the merge is no launch of its own.
// Each GEMV block merges all of x from the partials, so it pays only where
// the GEMV has few blocks (docs/gpu.md, "Kernel launches per step").
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

using namespace mlir;
using namespace mlir::xf;

AttentionOp HostLowering::rangeMergeSource(GemmOp gemm) {
  // Packed batches run attention per sequence on one partials buffer: their merges stay.
  if (!options.cudaDevice || options.gpuMatmul != GpuMatmul::Fp32 || packedMode)
    return {};
  auto attn = gemm.getInput().getDefiningOp<AttentionOp>();
  if (!attn || !attn->hasOneUse())
    return {};
  GemmKernelSpec gemmSpec = gemmKernelSpecOf(gemm);
  const AttentionKernelSpec spec = attentionKernelSpecOf(attn);
  // Each GEMV block reads the partials of every head and range (GPT-2 small's output
  // projection: 24 blocks of 68 KiB a row, 1.6 MiB of L2 a layer; SmolLM2's [N, K] one, its
  // blocks widened to 18 columns: 32 of 204 KiB, 6.5 MiB) against a launch of its own.
  gemmSpec.mergeHeads = spec.heads;
  const int64_t cols = cudaGemvBlockCols(gemmSpec);
  const int64_t blocks = (gemmSpec.N + cols - 1) / cols;
  if (gemmSpec.prologue != GemmPrologue::None || gemmSpec.K != spec.heads * spec.dV ||
      blocks > kCudaRangeMergeBlocks || (gemmSpec.transposeWeight && cols > 32))
    return {};
  return attn;
}
