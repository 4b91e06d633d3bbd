//===- GemmKernelCuda.cpp - the GEMM as a Halide CUDA pipeline ------------===//
//
// out[M, N] = act(x[M, K] · W + bias) + residual on an NVIDIA GPU, with the
// same buffers and argument order as the CPU kernel (HalideKernels.h), for
// targets with Halide's `cuda` feature (`xfc --target cuda`, docs/gpu.md).
//
// GEMM path (M > kGemvRows): one thread block per kTileCols × kTileRows tile
// of out; its kThreadsX × kThreadsY threads each own a kRegCols × kRegRows
// register tile (both gates of SwiGLU). K runs in slices of kSliceK: per
// slice the block stages the slice of x ([kSliceK, kTileRows]) and of W
// ([kTileCols, kSliceK]) in shared memory, synchronises, every thread
// computes its register tile's product over the slice from shared memory
// and adds it to the block's accumulators (shared memory too). The epilogue
// (bias, activation, SwiGLU's gate·up, residual) is applied as the
// accumulators are stored. Rows past M and columns past N read clamped inputs and are never
// stored; K is zero-padded to a whole slice.
//
// GEMV path (M <= kGemvRows, KV-cache decoding), chosen at run time by a
// specialization: the weight is streamed once, every thread keeping the
// sums of all (<= 4) rows in registers, and partial sums meet in shared
// memory.
//   [K, N] weights (rows of W along N): threads (column, K slice): a block
//   covers kGemvCols consecutive columns (coalesced along N) × kGemvSlices
//   slices of K; then one thread per column adds its slices.
//   [N, K] weights (nn.Linear, the tied unembedding): threads (lane, column):
//   lane l of a column reads k ≡ l (mod kLanes) (coalesced along K), then one
//   thread per column adds the kLanes lane sums.
//
// The schedule is fixed (the CPU GemmSchedule does not apply; the tuner does
// not search GPU schedules yet). Block weights (GGUF) and bf16 activations
// are CPU-only; bf16 weights are widened on load as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "GemmEpilogue.h"
#include "KernelPipelines.h"

#include <optional>

using namespace Halide;

namespace mlir::xf {
namespace {

constexpr int kTileCols = 64, kTileRows = 32; // a block's tile of out
constexpr int kRegCols = 4, kRegRows = 4;     // a thread's register tile
constexpr int kThreadsX = kTileCols / kRegCols, kThreadsY = kTileRows / kRegRows; // 16 × 8
constexpr int kSliceK = 16;                     // K per shared-memory stage
constexpr int kGemvRows = 4;                    // M up to this takes the GEMV path
constexpr int kGemvCols = 32, kGemvSlices = 16; // [K, N] GEMV block: columns × K slices
constexpr int kLanes = 32, kGemvLaneCols = 8;   // [N, K] GEMV block: lanes × columns

llvm::Error invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

llvm::Error validateGemmCuda(const GemmKernelSpec &spec) {
  if (spec.name.empty())
    return invalid("gemm kernel: empty function name");
  if (spec.K <= 0 || spec.N <= 0)
    return invalid("gemm kernel '" + spec.name + "': K and N must be positive, got K=" +
                   llvm::Twine(spec.K) + " N=" + llvm::Twine(spec.N));
  if (spec.weightBlocks != WeightBlocks::None)
    return invalid("gemm kernel '" + spec.name + "': " + weightBlocksName(spec.weightBlocks) +
                   " weight blocks are not supported by the CUDA GEMM");
  if (spec.packedWeight)
    return invalid("gemm kernel '" + spec.name +
                   "': weights packed at load are not supported by the CUDA GEMM");
  if (spec.bf16Activations)
    return invalid("gemm kernel '" + spec.name +
                   "': bf16 activations are not supported by the CUDA GEMM");
  return llvm::Error::success();
}

llvm::Expected<KernelPipeline> buildGemmCuda(const GemmKernelSpec &spec, bool gpuSchedule) {
  if (llvm::Error err = validateGemmCuda(spec))
    return std::move(err);
  const int K = int(spec.K), N = int(spec.N);
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int gates = gated ? 2 : 1;
  const int weightCols = gates * N;

  ImageParam x(Float(32), 2, "x");                                           // (k, m)
  ImageParam weight(spec.bf16Weights ? BFloat(16) : Float(32), 2, "weight"); // (n, k) or (k, n)
  ImageParam bias(Float(32), 1, "bias");                                     // (n)
  ImageParam residual(Float(32), 2, "residual");                             // (n, m)
  Var n("n"), m("m"), g("g"), k("k"), s("s"), l("l");
  Expr rows = x.dim(1).extent();

  // ---- Algorithm -------------------------------------------------------
  // x zero past K (whole slices), rows clamped; W(n, g, k) as float32 with
  // columns and K clamped (the padded K multiplies x's zeros).
  Func xPadded("x_padded");
  xPadded(k, m) = select(k < K, x(clamp(k, 0, K - 1), clamp(m, 0, rows - 1)), 0.f);
  Func w("weight_f32");
  {
    Expr column = g * N + clamp(n, 0, N - 1), depth = clamp(k, 0, K - 1);
    Expr stored = spec.transposeWeight ? weight(depth, column) : weight(column, depth);
    // bfloat16 is the upper half of a float32: widening is a shift.
    w(n, g, k) = spec.bf16Weights
                     ? reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(stored)) << 16)
                     : stored;
  }

  // GEMM path: the staged slices and the register-tiled product.
  Func xTile("x_tile"), wTile("weight_tile");
  xTile(k, m) = xPadded(k, m);
  wTile(n, g, k) = w(n, g, k);
  // Per K slice a register-tiled partial product, added into the block's
  // accumulators.
  Var ks("ks");
  RDom rk(0, kSliceK, "rk");
  Func sliceDot("slice_dot");
  sliceDot(n, g, m, ks) = 0.f;
  sliceDot(n, g, m, ks) += xTile(ks * kSliceK + rk, m) * wTile(n, g, ks * kSliceK + rk);
  RDom rs(0, ceilDiv(K, kSliceK), "slice");
  Func prod("prod");
  prod(n, g, m) = 0.f;
  prod(n, g, m) += sliceDot(n, g, m, rs);

  // GEMV path.
  Func gemvDot("gemv_dot"), gemvPart("gemv_partial"), gemvSum("gemv_sum");
  gemvSum(n, g, m) = 0.f;
  RVar dotVar, sumVar; // the reductions' variables, for the schedule
  if (!spec.transposeWeight) {
    const int sliceLen = ceilDiv(K, kGemvSlices);
    RDom j(0, sliceLen, "j");
    gemvDot(n, g, m, s) = 0.f;
    gemvDot(n, g, m, s) += xPadded(s * sliceLen + j, m) * w(n, g, s * sliceLen + j);
    gemvPart(n, g, m, s) = gemvDot(n, g, m, s);
    RDom rs(0, kGemvSlices, "rs");
    gemvSum(n, g, m) += gemvPart(n, g, m, rs);
    dotVar = j.x, sumVar = rs.x;
  } else {
    RDom j(0, ceilDiv(K, kLanes), "j");
    gemvDot(l, n, g, m) = 0.f;
    gemvDot(l, n, g, m) += xPadded(j * kLanes + l, m) * w(n, g, j * kLanes + l);
    gemvPart(l, n, g, m) = gemvDot(l, n, g, m);
    RDom rl(0, kLanes, "rl");
    gemvSum(n, g, m) += gemvPart(rl, n, g, m);
    dotVar = j.x, sumVar = rl.x;
  }

  auto epilogue = [&](Func sum) {
    auto value = [&](int gate) {
      Expr v = sum(n, gate, m);
      return spec.hasBias ? v + bias(gate * N + n) : v;
    };
    Expr e = gated ? applyGemmEpilogue(GemmEpilogue::SwiGlu, value(0)) * value(1)
                   : applyGemmEpilogue(spec.epilogue, value(0));
    return spec.hasResidual ? e + residual(n, m) : e;
  };
  Func out("gemm_out");
  Expr gemv = rows <= kGemvRows;
  out(n, m) = select(gemv, epilogue(gemvSum), epilogue(prod));

  // ---- Buffer shapes (docs/abi.md), as the CPU kernel ------------------
  x.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_min(0);
  if (spec.transposeWeight)
    weight.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_bounds(0, weightCols);
  else
    weight.dim(0).set_bounds(0, weightCols).set_stride(1).dim(1).set_bounds(0, K);
  bias.dim(0).set_bounds(0, weightCols).set_stride(1);
  residual.dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);
  out.output_buffer().dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);

  // ---- Schedule ----------------------------------------------------------
  if (gpuSchedule) {
    prod.bound(g, 0, gates);
    gemvSum.bound(g, 0, gates).bound(m, 0, kGemvRows);
    gemvPart.bound(g, 0, gates).bound(m, 0, kGemvRows);
    Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr");
    {
      // GEMV: one block per group of columns.
      Stage decode = out.specialize(gemv);
      const int blockCols = spec.transposeWeight ? kGemvLaneCols : kGemvCols;
      decode.split(n, no, ni, blockCols, TailStrategy::GuardWithIf)
          .reorder(m, ni, no)
          .gpu_blocks(no)
          .gpu_threads(ni);
      gemvSum.compute_at(out, ni).unroll(g).unroll(m);
      gemvSum.update().reorder(g, m, sumVar).unroll(g).unroll(m);
      if (!spec.transposeWeight) {
        gemvPart.compute_at(out, no)
            .bound_extent(n, blockCols)
            .bound(s, 0, kGemvSlices)
            .store_in(MemoryType::GPUShared)
            .reorder(g, m, n, s)
            .gpu_threads(n, s)
            .unroll(g)
            .unroll(m);
        gemvDot.compute_at(gemvPart, n).unroll(g).unroll(m);
        gemvDot.update().reorder(g, m, dotVar).unroll(g).unroll(m);
      } else {
        gemvPart.compute_at(out, no)
            .bound(l, 0, kLanes)
            .bound_extent(n, blockCols)
            .store_in(MemoryType::GPUShared)
            .reorder(g, m, l, n)
            .gpu_threads(l, n)
            .unroll(g)
            .unroll(m);
        gemvDot.compute_at(gemvPart, l).unroll(g).unroll(m);
        gemvDot.update().reorder(g, m, dotVar).unroll(g).unroll(m);
      }
    }
    // GEMM: block tiles, thread register tiles, K slices staged in shared memory.
    out.tile(n, m, no, mo, ni, mi, kTileCols, kTileRows, TailStrategy::GuardWithIf)
        .split(ni, nt, nr, kRegCols)
        .split(mi, mt, mr, kRegRows)
        .reorder(nr, mr, nt, mt, no, mo)
        .gpu_blocks(no, mo)
        .gpu_threads(nt, mt)
        .unroll(nr)
        .unroll(mr);
    // The block's accumulators live in shared memory (Halide would give each
    // thread a private copy of a block-level register allocation); each K
    // slice's register tile is added into them once.
    prod.compute_at(out, no)
        .store_in(MemoryType::GPUShared)
        .bound_extent(n, kTileCols)
        .bound_extent(m, kTileRows)
        .split(n, nt, nr, kRegCols)
        .split(m, mt, mr, kRegRows)
        .reorder(nr, g, mr, nt, mt)
        .gpu_threads(nt, mt)
        .unroll(nr)
        .unroll(g)
        .unroll(mr);
    prod.update()
        .split(n, nt, nr, kRegCols)
        .split(m, mt, mr, kRegRows)
        .reorder(nr, g, mr, nt, mt, rs.x)
        .gpu_threads(nt, mt)
        .unroll(nr)
        .unroll(g)
        .unroll(mr);
    sliceDot.compute_at(prod, nt).unroll(n).unroll(g).unroll(m);
    sliceDot.update().reorder(n, g, m, rk.x).unroll(n).unroll(g).unroll(m).unroll(rk.x);
    // Staging: kThreadsX × kThreadsY threads copy each slice, the inner
    // thread dimension along the stored layout's contiguous axis.
    Var a("a"), b("b");
    xTile.compute_at(prod, rs.x)
        .store_in(MemoryType::GPUShared)
        .split(m, b, mt, kThreadsY)
        .reorder(b, k, mt)
        .gpu_threads(k, mt)
        .unroll(b);
    wTile.compute_at(prod, rs.x).store_in(MemoryType::GPUShared);
    if (spec.transposeWeight) // k contiguous
      wTile.split(n, a, nt, kThreadsY).reorder(a, g, k, nt).gpu_threads(k, nt).unroll(a).unroll(g);
    else // n contiguous
      wTile.split(n, a, nt, kThreadsX)
          .split(k, b, mt, kThreadsY)
          .reorder(a, g, b, nt, mt)
          .gpu_threads(nt, mt)
          .unroll(a)
          .unroll(g)
          .unroll(b);
  }

  return gemmKernelPipeline(spec, x, weight, bias, residual, out);
}

} // namespace

llvm::Expected<KernelPipeline> buildGemmCudaPipeline(const GemmKernelSpec &spec, bool gpuSchedule) {
  std::optional<llvm::Expected<KernelPipeline>> built;
  if (llvm::Error err = catchHalideErrors("scheduling CUDA gemm kernel '" + spec.name + "'",
                                          [&] { built.emplace(buildGemmCuda(spec, gpuSchedule)); }))
    return std::move(err);
  return std::move(*built);
}

} // namespace mlir::xf
