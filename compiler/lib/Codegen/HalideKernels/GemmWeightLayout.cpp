//===- GemmWeightLayout.cpp - a GEMM weight's layouts and its packing -----===//
//
// The weight as W(n, k) from [K, N] or [N, K] storage (gated: gate and up
// tiles interleaved), its bounds, and the pipeline that packs it at load into
// the tile-major layout the GEMM reads: (nj, k, nt) = W(nt·tileCols + nj, k).
//
//===----------------------------------------------------------------------===//

#include "GemmWeightLayout.h"
#include "GemmTiling.h"
#include "KernelPipelines.h"

#include <algorithm>

using namespace Halide;

namespace mlir::xf {

static llvm::Error invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Gated: the stored column of column n of the interleaved weight (tile 2i =
/// gate columns i·tileCols.., tile 2i+1 = the same columns of up), and the
/// column past the end (so zero) past N in either half.
Expr storedColumn(const GemmKernelSpec &spec, Expr n) {
  if (spec.epilogue != GemmEpilogue::SwiGlu)
    return n;
  const int tileCols = int(spec.schedule.tileCols), N = int(spec.N);
  Expr tile = n / tileCols, inHalf = (tile / 2) * tileCols + n % tileCols;
  return select(inHalf < N, inHalf + (tile % 2) * N, 2 * N);
}

/// The weight as W(n, k) whatever its storage, read from `source` (the stored
/// layout), zero past column N (gated: in interleaved columns).
Func weightByColumn(Func source, const GemmKernelSpec &spec, Expr zero, const char *name) {
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int weightCols = int(gated ? 2 * spec.N : spec.N);
  Var n("n"), k("k");
  Func weightKN = kernelFunc(name);
  Func stored = source;
  if (spec.N % spec.schedule.tileCols != 0 || gated) {
    Region bounds = spec.transposeWeight ? Region{{Expr(), Expr()}, {0, weightCols}}
                                         : Region{{0, weightCols}, {Expr(), Expr()}};
    stored = BoundaryConditions::constant_exterior(source, zero, bounds);
  }
  Expr column = storedColumn(spec, n);
  weightKN(n, k) = spec.transposeWeight ? stored(k, column) : stored(column, k);
  return weightKN;
}

/// Bounds of the stored weight (2-D, either layout) or of a packed one.
void constrainWeight(OutputImageParam weight, const GemmKernelSpec &spec, bool packed) {
  const int64_t weightCols = spec.gates() * spec.N;
  const int K = int(spec.K);
  const PackedWeightShape shape = packedWeightShape(spec);
  const int lanes = int(shape.lanes), rows = int(shape.rows);
  if (packed)
    weight.dim(0)
        .set_bounds(0, lanes)
        .set_stride(1)
        .dim(1)
        .set_bounds(0, rows)
        .set_stride(lanes)
        .dim(2)
        .set_bounds(0, int(shape.tiles))
        .set_stride(rows * lanes);
  else if (spec.transposeWeight)
    weight.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_bounds(0, int(weightCols));
  else
    weight.dim(0).set_bounds(0, int(weightCols)).set_stride(1).dim(1).set_bounds(0, K);
}

/// The function that packs a weight at load for a kernel with packedWeight:
/// (nj, k, nt) = W(nt·tileCols + nj, k) in the stored type, parallel over tiles.
static llvm::Expected<KernelPipeline> buildGemmPack(const GemmKernelSpec &spec,
                                                    const Target &target) {
  if (llvm::Error err = validateGemm(spec, target.natural_vector_size<float>()))
    return std::move(err);
  if (!spec.packedWeight)
    return invalid("gemm kernel '" + spec.name + "' takes its weight unpacked");
  const Type stored = spec.bf16Weights ? BFloat(16) : Float(32);
  const int tileCols = int(spec.schedule.tileCols), K = int(spec.K);
  const int lanes = int(packedWeightShape(spec).lanes);
  ImageParam weight(stored, 2, "weight");
  Func source = kernelFunc("weight_stored");
  Var a("a"), b("b"), nj("nj"), k("k"), nt("nt"), ko("ko"), ki("ki");
  source(a, b) = weight(a, b);
  Func weightKN = weightByColumn(source, spec, cast(stored, 0.f), "weight_kn");
  Func out = kernelFunc("packed_weight");
  if (spec.bf16Activations) { // (r + 2·nj, kk, nt) = W(nt·tileCols + nj, 2·kk + r), 0 past K
    Expr row = 2 * k + nj % 2, column = nt * tileCols + nj / 2;
    out(nj, k, nt) = K % 2 ? select(row < K, weightKN(column, min(row, K - 1)), cast(stored, 0.f))
                           : weightKN(column, row);
  } else {
    out(nj, k, nt) = weightKN(nt * tileCols + nj, k);
  }
  constrainWeight(weight, spec, /*packed=*/false);
  constrainWeight(out.output_buffer(), spec, /*packed=*/true);
  // Lanes along the stored rows: [K, N] copies row segments; [N, K] is a
  // transpose, read along k in blocks of 8 so that the gathers reuse lines.
  const int vw = target.natural_vector_size(stored);
  out.parallel(nt);
  if (spec.transposeWeight)
    out.split(k, ko, ki, 8, TailStrategy::GuardWithIf).reorder(nj, ki, ko, nt).unroll(ki);
  out.vectorize(nj, std::min(vw, lanes), TailStrategy::GuardWithIf);
  source.compute_inline();
  weightKN.compute_inline();
  return KernelPipeline::of({weight}, out);
}

llvm::Expected<KernelPipeline> buildGemmPackPipeline(const GemmKernelSpec &spec,
                                                     const Target &target) {
  KernelFuncScope names(spec.name + "_pack");
  return buildCatchingHalideErrors(
      "scheduling the weight packing of gemm kernel '" + spec.name + "'",
      [&] { return buildGemmPack(spec, target); });
}

} // namespace mlir::xf
