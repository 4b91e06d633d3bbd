//===- GemmKernelCuda.cpp - the GEMM as a Halide CUDA pipeline ------------===//
//
// out[M, N] = act(x[M, K] · W + bias) + residual on an NVIDIA GPU, with the
// same buffers and argument order as the CPU kernel (HalideKernels.h), for
// targets with Halide's `cuda` feature (`xfc --target cuda`, docs/gpu.md).
//
// Register path (M > kGemvRows, [K, N] weights with N a multiple of kRegTileCols — every
// GEMM of GPT-2 small and SmolLM2 but the tied unembedding): one warp per kRegTileCols ×
// kRegTileRows tile of out (4 warps per kRegTallTileRows rows for large M), each thread
// accumulating its kRegThreadCols × kRegThreadRows register tile over all of K, W loaded as
// vectors along N from global memory, no shared memory (scheduleRegisterGemm).
//
// Staged path (the other M > kGemvRows): one thread block per kTileCols × kTileRows tile
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
constexpr int kSliceK = 16;                           // K per shared-memory stage
constexpr int kRegTileCols = 64, kRegTileRows = 8;    // register path: a block's tile
constexpr int kRegThreadCols = 4, kRegThreadRows = 4; // and a thread's (16 × 2 threads)
constexpr int kRegUnrollK = 8;
constexpr int kRegTallRows = 512, kRegTallTileRows = 32; // large M: 4 warps a block
constexpr int kGemvRows = 4;                             // M up to this takes the GEMV path
constexpr int kGemvCols = 32, kGemvSlices = 16;          // [K, N] GEMV block: columns × K slices
constexpr int kLanes = 32, kGemvLaneCols = 8;            // [N, K] GEMV block: lanes × columns

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

// The pipeline's Funcs, defined by defineGemmCuda and scheduled by the schedule* functions.
struct GemmCudaFuncs {
  Var n{"n"}, m{"m"}, g{"g"}, k{"k"}, s{"s"}, l{"l"}, ks{"ks"};
  Func xPadded{"x_padded"}, w{"weight_f32"};
  // Staged path: K slices in shared memory, accumulators in shared memory.
  Func xTile{"x_tile"}, wTile{"weight_tile"}, sliceDot{"slice_dot"}, prod{"prod"};
  RDom rk, rs;
  // Register path: each thread's accumulators in registers over all of K.
  Func dot{"register_dot"};
  RDom rAll;
  // GEMV path.
  Func gemvDot{"gemv_dot"}, gemvPart{"gemv_partial"}, gemvSum{"gemv_sum"};
  RVar dotVar, sumVar;
  Func out{"gemm_out"};
  Expr rows, gemv; // M, and whether it takes the GEMV path
  bool registerTiles = false;
  int gates = 1;
};

// The register path reads W's columns without clamping (vector loads along N): every block
// tile lies inside N.
bool usesRegisterTiles(const GemmKernelSpec &spec) {
  return !spec.transposeWeight && spec.N % kRegTileCols == 0;
}

void defineGemmCuda(const GemmKernelSpec &spec, ImageParam x, ImageParam weight, ImageParam bias,
                    ImageParam residual, GemmCudaFuncs &f) {
  const int K = int(spec.K), N = int(spec.N);
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  Var n = f.n, m = f.m, g = f.g, k = f.k, s = f.s, l = f.l, ks = f.ks;
  Expr rows = x.dim(1).extent();
  // bfloat16 is the upper half of a float32: widening is a shift.
  auto widened = [&](Expr stored) {
    return spec.bf16Weights
               ? reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(stored)) << 16)
               : stored;
  };
  // x zero past K (whole slices), rows clamped; W(n, g, k) as float32 with
  // columns and K clamped (the padded K multiplies x's zeros).
  f.xPadded(k, m) = select(k < K, x(clamp(k, 0, K - 1), clamp(m, 0, rows - 1)), 0.f);
  {
    Expr column = g * N + clamp(n, 0, N - 1), depth = clamp(k, 0, K - 1);
    f.w(n, g, k) = widened(spec.transposeWeight ? weight(depth, column) : weight(column, depth));
  }
  Func sum;
  f.registerTiles = usesRegisterTiles(spec);
  if (f.registerTiles) {
    // Register path: over all of K at once, x's rows clamped, W's columns as stored.
    f.rAll = RDom(0, K, "r");
    f.dot(n, g, m) = 0.f;
    f.dot(n, g, m) += x(f.rAll, clamp(m, 0, rows - 1)) * widened(weight(g * N + n, f.rAll));
    sum = f.dot;
  } else {
    // Staged path: per K slice a register-tiled partial product, added into the block's
    // accumulators.
    f.xTile(k, m) = f.xPadded(k, m);
    f.wTile(n, g, k) = f.w(n, g, k);
    f.rk = RDom(0, kSliceK, "rk");
    f.sliceDot(n, g, m, ks) = 0.f;
    f.sliceDot(n, g, m, ks) += f.xTile(ks * kSliceK + f.rk, m) * f.wTile(n, g, ks * kSliceK + f.rk);
    f.rs = RDom(0, ceilDiv(K, kSliceK), "slice");
    f.prod(n, g, m) = 0.f;
    f.prod(n, g, m) += f.sliceDot(n, g, m, f.rs);
    sum = f.prod;
  }

  // GEMV path.
  f.gemvSum(n, g, m) = 0.f;
  if (!spec.transposeWeight) {
    const int sliceLen = ceilDiv(K, kGemvSlices);
    RDom j(0, sliceLen, "j");
    f.gemvDot(n, g, m, s) = 0.f;
    f.gemvDot(n, g, m, s) += f.xPadded(s * sliceLen + j, m) * f.w(n, g, s * sliceLen + j);
    f.gemvPart(n, g, m, s) = f.gemvDot(n, g, m, s);
    RDom rs(0, kGemvSlices, "rs");
    f.gemvSum(n, g, m) += f.gemvPart(n, g, m, rs);
    f.dotVar = j.x, f.sumVar = rs.x;
  } else {
    RDom j(0, ceilDiv(K, kLanes), "j");
    f.gemvDot(l, n, g, m) = 0.f;
    f.gemvDot(l, n, g, m) += f.xPadded(j * kLanes + l, m) * f.w(n, g, j * kLanes + l);
    f.gemvPart(l, n, g, m) = f.gemvDot(l, n, g, m);
    RDom rl(0, kLanes, "rl");
    f.gemvSum(n, g, m) += f.gemvPart(rl, n, g, m);
    f.dotVar = j.x, f.sumVar = rl.x;
  }

  auto epilogue = [&](Func total) {
    auto value = [&](int gate) {
      Expr v = total(n, gate, m);
      return spec.hasBias ? v + bias(gate * N + n) : v;
    };
    Expr e = gated ? applyGemmEpilogue(GemmEpilogue::SwiGlu, value(0)) * value(1)
                   : applyGemmEpilogue(spec.epilogue, value(0));
    return spec.hasResidual ? e + residual(n, m) : e;
  };
  f.rows = rows;
  f.gemv = rows <= kGemvRows;
  f.out(n, m) = select(f.gemv, epilogue(f.gemvSum), epilogue(sum));
}

// GEMV (M <= kGemvRows): one block per group of columns.
void scheduleGemv(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var n = f.n, m = f.m, g = f.g, s = f.s, l = f.l, no("no"), ni("ni");
  f.gemvSum.bound(g, 0, f.gates).bound(m, 0, kGemvRows);
  f.gemvPart.bound(g, 0, f.gates).bound(m, 0, kGemvRows);
  Stage decode = f.out.specialize(f.gemv);
  const int blockCols = spec.transposeWeight ? kGemvLaneCols : kGemvCols;
  decode.split(n, no, ni, blockCols, TailStrategy::GuardWithIf)
      .reorder(m, ni, no)
      .gpu_blocks(no)
      .gpu_threads(ni);
  f.gemvSum.compute_at(f.out, ni).unroll(g).unroll(m);
  f.gemvSum.update().reorder(g, m, f.sumVar).unroll(g).unroll(m);
  if (!spec.transposeWeight) {
    f.gemvPart.compute_at(f.out, no)
        .bound_extent(n, blockCols)
        .bound(s, 0, kGemvSlices)
        .store_in(MemoryType::GPUShared)
        .reorder(g, m, n, s)
        .gpu_threads(n, s)
        .unroll(g)
        .unroll(m);
    f.gemvDot.compute_at(f.gemvPart, n).unroll(g).unroll(m);
  } else {
    f.gemvPart.compute_at(f.out, no)
        .bound(l, 0, kLanes)
        .bound_extent(n, blockCols)
        .store_in(MemoryType::GPUShared)
        .reorder(g, m, l, n)
        .gpu_threads(l, n)
        .unroll(g)
        .unroll(m);
    f.gemvDot.compute_at(f.gemvPart, l).unroll(g).unroll(m);
  }
  f.gemvDot.update().reorder(g, m, f.dotVar).unroll(g).unroll(m);
}

// Staged GEMM: block tiles, thread register tiles, K slices staged in shared memory.
void scheduleStagedGemm(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var n = f.n, m = f.m, g = f.g, k = f.k;
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr");
  f.prod.bound(g, 0, f.gates);
  f.out.tile(n, m, no, mo, ni, mi, kTileCols, kTileRows, TailStrategy::GuardWithIf)
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
  f.prod.compute_at(f.out, no)
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
  f.prod.update()
      .split(n, nt, nr, kRegCols)
      .split(m, mt, mr, kRegRows)
      .reorder(nr, g, mr, nt, mt, f.rs.x)
      .gpu_threads(nt, mt)
      .unroll(nr)
      .unroll(g)
      .unroll(mr);
  f.sliceDot.compute_at(f.prod, nt).unroll(n).unroll(g).unroll(m);
  f.sliceDot.update().reorder(n, g, m, f.rk.x).unroll(n).unroll(g).unroll(m).unroll(f.rk.x);
  // Staging: kThreadsX × kThreadsY threads copy each slice, the inner
  // thread dimension along the stored layout's contiguous axis.
  Var a("a"), b("b");
  f.xTile.compute_at(f.prod, f.rs.x)
      .store_in(MemoryType::GPUShared)
      .split(m, b, mt, kThreadsY)
      .reorder(b, k, mt)
      .gpu_threads(k, mt)
      .unroll(b);
  f.wTile.compute_at(f.prod, f.rs.x).store_in(MemoryType::GPUShared);
  if (spec.transposeWeight) // k contiguous
    f.wTile.split(n, a, nt, kThreadsY).reorder(a, g, k, nt).gpu_threads(k, nt).unroll(a).unroll(g);
  else // n contiguous
    f.wTile.split(n, a, nt, kThreadsX)
        .split(k, b, mt, kThreadsY)
        .reorder(a, g, b, nt, mt)
        .gpu_threads(nt, mt)
        .unroll(a)
        .unroll(g)
        .unroll(b);
}

// Register GEMM ([K, N] weights, N a multiple of kRegTileCols): each thread's kRegThreadCols ×
// kRegThreadRows accumulators in registers over all of K (no shared memory, no barriers;
// Halide's apps/cuda_mat_mul shows the pattern), W read along N straight from global memory
// (through L1; vector loads), x's values broadcast to the threads of a row, K unrolled by
// kRegUnrollK. A warp per kRegTileCols × kRegTileRows tile while M is small, so that GPT-2
// small's GEMMs at M = 128 launch 192-768 blocks (the staged path: 48-192); 4 warps per tile of
// kRegTallTileRows rows from kRegTallRows rows on, sharing the W tile through L1.
void scheduleRegisterGemm(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var n = f.n, m = f.m, g = f.g;
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), nt("nt"), mt("mt"), nr("nr"), mr("mr");
  // The same loop names in both tilings: dot is computed at `nt` in either.
  auto tile = [&](Stage stage, int rows) {
    stage.tile(n, m, no, mo, ni, mi, kRegTileCols, rows, TailStrategy::GuardWithIf)
        .tile(ni, mi, nt, mt, nr, mr, kRegThreadCols, kRegThreadRows, TailStrategy::GuardWithIf)
        .reorder(nr, mr, nt, mt, no, mo)
        .gpu_blocks(no, mo)
        .gpu_threads(nt, mt)
        .unroll(nr)
        .unroll(mr);
  };
  // From kRegTallRows rows on, blocks of kRegTallTileRows rows (4 warps): the warps of a block
  // read the same W tile (L1 hits), a quarter of the L2 traffic of 8-row tiles.
  tile(f.out.specialize(f.rows >= kRegTallRows), kRegTallTileRows);
  tile(f.out, kRegTileRows);
  f.dot.compute_at(f.out, nt)
      .bound(g, 0, f.gates)
      .bound_extent(n, kRegThreadCols)
      .bound_extent(m, kRegThreadRows)
      .reorder(n, g, m)
      .vectorize(n)
      .unroll(g)
      .unroll(m);
  Stage update = f.dot.update();
  update.reorder(n, g, m, f.rAll.x).vectorize(n).unroll(g).unroll(m);
  if (spec.K % kRegUnrollK == 0) {
    RVar ro("ro"), ri("ri");
    update.split(f.rAll.x, ro, ri, kRegUnrollK).reorder(n, g, m, ri, ro).unroll(ri);
  }
}

llvm::Expected<KernelPipeline> buildGemmCuda(const GemmKernelSpec &spec, bool gpuSchedule) {
  if (llvm::Error err = validateGemmCuda(spec))
    return std::move(err);
  const int K = int(spec.K), N = int(spec.N);
  const int weightCols = (spec.epilogue == GemmEpilogue::SwiGlu ? 2 : 1) * N;
  ImageParam x(Float(32), 2, "x");                                           // (k, m)
  ImageParam weight(spec.bf16Weights ? BFloat(16) : Float(32), 2, "weight"); // (n, k) or (k, n)
  ImageParam bias(Float(32), 1, "bias");                                     // (n)
  ImageParam residual(Float(32), 2, "residual");                             // (n, m)
  GemmCudaFuncs f;
  f.gates = spec.epilogue == GemmEpilogue::SwiGlu ? 2 : 1;
  defineGemmCuda(spec, x, weight, bias, residual, f);
  Expr rows = x.dim(1).extent();

  // ---- Buffer shapes (docs/abi.md), as the CPU kernel ------------------
  x.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_min(0);
  if (spec.transposeWeight)
    weight.dim(0).set_bounds(0, K).set_stride(1).dim(1).set_bounds(0, weightCols);
  else
    weight.dim(0).set_bounds(0, weightCols).set_stride(1).dim(1).set_bounds(0, K);
  // The register path loads 4 columns at once: rows of W 16-byte aligned (a weight's own
  // allocation, weightCols a multiple of kRegTileCols; checked when the pipeline runs).
  if (f.registerTiles)
    weight.dim(1).set_stride(weight.dim(1).stride() / kRegThreadCols * kRegThreadCols);
  bias.dim(0).set_bounds(0, weightCols).set_stride(1);
  residual.dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);
  f.out.output_buffer().dim(0).set_bounds(0, N).set_stride(1).dim(1).set_bounds(0, rows);

  if (gpuSchedule) {
    scheduleGemv(spec, f);
    if (f.registerTiles)
      scheduleRegisterGemm(spec, f);
    else
      scheduleStagedGemm(spec, f);
  }
  return gemmKernelPipeline(spec, x, weight, bias, residual, f.out);
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
