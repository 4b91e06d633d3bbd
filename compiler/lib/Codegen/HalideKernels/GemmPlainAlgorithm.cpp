//===- GemmPlainAlgorithm.cpp - the GEMM as one sum, for autoschedulers ---===//
//
// The baseline xf's hand-written GEMM schedules are measured against: the GEMM's math with none
// of xf's paths (packing, register tiles, GEMV lanes, split K, staged slices), one reduction
// over K per output (x's rows normalised by the norm prologue where the kernel has one,
// GemmPrologue.h; rounded to bfloat16 with bf16 activations), the weight read as stored
// (float32, bfloat16 or GGUF blocks) and the epilogue (GemmAlgorithm.h). A Halide
// autoscheduler picks its own tiling of that sum: Adams2019 / Li2018 / Mullapudi2016 on the CPU
// (xf-tune-worker, one pipeline per problem size) and Anderson2021 on CUDA
// (GemmAnderson2021.cpp, any M). Inputs, outputs and their shapes are xf's GEMM's, the weight
// unpacked: the same buffers call either.
//
//===----------------------------------------------------------------------===//

#include "BlockWeights.h"
#include "GemmAlgorithm.h"

using namespace Halide;

namespace mlir::xf {

llvm::Expected<KernelPipeline> buildPlainGemmAlgorithm(const GemmKernelSpec &specIn,
                                                       PlainGemmRows rows) {
  if (specIn.mergeHeads)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "gemm kernel '" + specIn.name +
                                       "' merges flash-decoding's key ranges into x, which the "
                                       "plain algorithm does not");
  GemmKernelSpec spec = specIn;
  spec.packedWeight = false; // the baselines read the weight as stored
  GemmInputs in = gemmInputs(spec);
  const int K = int(spec.K), N = int(spec.N), M = int(rows.estimate);
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int columns = gated ? 2 * N : N;
  Var n("n"), m("m"), g("g");
  RDom r(0, K, "r");
  // With M only estimated, x's rows and W's columns are clamped, as the CUDA algorithm reads
  // them: the autoscheduler may round a producer's loops up past M or N. With M fixed the
  // bounds are exact and unclamped reads stay dense vector loads on the CPU.
  const bool clampReads = !rows.fixed;
  Expr xRow = clampReads ? clamp(m, 0, in.x.dim(1).extent() - 1) : Expr(m);
  Expr column = g * N + (clampReads ? clamp(n, 0, N - 1) : Expr(n));

  Expr xAt;
  if (spec.prologue != GemmPrologue::None)
    xAt = normalizedX(spec, in, defineGemmRowNorm(spec, in, "rows", /*lanes=*/32), r, m);
  else
    xAt = in.x(r, xRow);
  if (spec.bf16Activations)
    xAt = cast<float>(roundedToBf16(xAt));
  Expr wAt;
  if (spec.weightBlocks != WeightBlocks::None) { // element r of column `column`
    BlockWeights blocks(in.weight, spec.weightBlocks, /*nativeHalf=*/false);
    wAt = blocks.value(r / 32, r % 16, (r % 32) / 16, column);
  } else {
    wAt = widenWeight(spec, spec.transposeWeight ? in.weight(r, column) : in.weight(column, r));
  }
  Func product = kernelFunc("product");
  product(n, g, m) = 0.f;
  product(n, g, m) += xAt * wAt;
  Func out = kernelFunc("out");
  out(n, m) = gemmEpilogue(spec, in, product(n, 0, m), gated ? product(n, 1, m) : Expr(), n, m);

  constrainGemmBuffers(spec, in, out);
  if (rows.fixed)
    in.x.dim(1).set_bounds(0, M);
  const int weightRowBytes = int(K / 32 * weightBlockBytes(spec.weightBlocks));
  in.x.set_estimates({{0, K}, {0, M}});
  in.weight.set_estimates(spec.weightBlocks != WeightBlocks::None ? Region{{0, weightRowBytes},
                                                                           {0, columns}}
                          : spec.transposeWeight ? Region{{0, K}, {0, columns}}
                                                 : Region{{0, columns}, {0, K}});
  in.bias.set_estimates({{0, columns}});
  in.residual.set_estimates({{0, N}, {0, M}});
  in.gamma.set_estimates({{0, K}});
  in.beta.set_estimates({{0, K}});
  out.set_estimates({{0, N}, {0, M}});
  return gemmKernelPipeline(spec, in.x, in.weight, in.bias, in.residual, out, in.gamma, in.beta);
}

} // namespace mlir::xf
