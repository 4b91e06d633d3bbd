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

namespace {

/// GEMV blocks up to which a GEMM merges the ranges itself: each block reads the
/// partials of every head and range (GPT-2 small's output projection: 24 blocks of
/// 68 KiB a row, 1.6 MiB of L2 a layer against a launch; SmolLM2's [N, K] one would
/// be 72 blocks of 204 KiB, 14 MiB).
constexpr int64_t kMaxRangeMergeBlocks = 32;

} // namespace

AttentionOp HostLowering::rangeMergeSource(GemmOp gemm) {
  // Packed batches run attention per sequence on one partials buffer: their merges stay.
  if (!options.cudaDevice || options.gpuMatmul != GpuMatmul::Fp32 || packedMode)
    return {};
  auto attn = gemm.getInput().getDefiningOp<AttentionOp>();
  if (!attn || !attn->hasOneUse())
    return {};
  const GemmKernelSpec gemmSpec = gemmKernelSpecOf(gemm);
  const AttentionKernelSpec spec = attentionKernelSpecOf(attn);
  const int64_t blocks = (gemmSpec.N + gemmSpec.gpuSchedule.gemvCols - 1) /
                         gemmSpec.gpuSchedule.gemvCols;
  if (gemmSpec.transposeWeight || gemmSpec.prologue != GemmPrologue::None ||
      gemmSpec.K != spec.heads * spec.dV || blocks > kMaxRangeMergeBlocks)
    return {};
  return attn;
}
