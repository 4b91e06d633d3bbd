//===- GemmPrologue.cpp - a row norm of x inside the CUDA GEMM ------------===//
//
// LayerNorm / RMSNorm of x's rows as the CUDA GEMM reads them (GemmPrologue.h):
// the formulas of the device norm kernel (LoopKernelsCuda.cpp's Normalize:
// mean first, then Σ (x − mean)², y = (x − mean)·rstd·γ + β); only the
// summation order differs (lanes strided partial sums).
//
//===----------------------------------------------------------------------===//

#include "GemmPrologue.h"
#include "GemmSchedules.h"

#include <algorithm>
#include <functional>

using namespace Halide;

namespace mlir::xf {

namespace {

/// Σ over the lanes' partial sums of term(k, row) per row: partial(l, m)
/// over k = j·lanes + l, then the total; returns the lane's terms.
RVar reduceRows(const GemmKernelSpec &spec, int lanes, const std::string &name,
                const std::function<Expr(Expr, Expr)> &term, GemmRowNorm &norm, Func &partial,
                Func &total) {
  const int K = int(spec.K), perLane = (K + lanes - 1) / lanes;
  Var l = norm.l, m = norm.m;
  RDom j(0, perLane, name + "_j");
  Expr k = j * lanes + l;
  partial = kernelFunc(name + "_partial");
  partial(l, m) = 0.f;
  partial(l, m) += select(k < K, term(min(k, K - 1), m), 0.f);
  RDom rl(0, lanes, name + "_lanes");
  total = kernelFunc(name);
  total(m) = 0.f;
  total(m) += partial(rl, m);
  return j.x;
}

} // namespace

GemmRowNormShape cudaRowNormShape(const GemmKernelSpec &spec, bool gemv, bool registerTiles) {
  const GpuGemmSchedule &s = spec.gpuSchedule;
  if (gemv) { // lanes: [K, N] a block's columns, [N, K] a column's lanes; ≤ 4 rows over the rest
    const int lanes = int(spec.transposeWeight ? kCudaLanes : s.gemvCols);
    const int others = int(spec.transposeWeight ? s.gemvLaneCols : s.gemvSlices);
    const int rowThreads = std::max(1, std::min(others, kCudaGemvRows));
    return {lanes, (kCudaGemvRows + rowThreads - 1) / rowThreads};
  }
  if (registerTiles) // a thread's 4 columns of the tile; its register tile's rows
    return {int(s.regTileCols) / kCudaRegThreadCols, int(s.regThreadRows)};
  return {int(s.tileCols / s.threadCols), int(s.threadRows)};
}

GemmBatchRowNormShape cudaBatchRowNormShape(const GemmKernelSpec &spec, int rows) {
  // The block's threads: [K, N] columns (inner) × slices, [N, K] 32 lanes × columns.
  const CudaBatchBlock block = cudaBatchGemvBlock(spec);
  const int inner = spec.transposeWeight ? kCudaLanes : block.cols;
  const int outer = spec.transposeWeight ? block.cols : block.threadsK;
  const int lanes = inner * std::max(1, kCudaLanes / inner); // 32 where inner divides it
  const int laneGroups = lanes / inner;
  const int rowThreads = std::max(1, std::min(rows, outer / laneGroups));
  int rowsPerThread = 1; // rows is a power of two: so is this, dividing it
  while (rowsPerThread * rowThreads < rows)
    rowsPerThread *= 2;
  return {lanes, inner, rowsPerThread};
}

GemmRowNorm defineGemmRowNorm(const GemmKernelSpec &spec, const GemmInputs &in,
                              const std::string &path, int lanes) {
  GemmRowNorm norm;
  norm.lanes = lanes;
  const float K = float(spec.K);
  norm.center = spec.prologue == GemmPrologue::LayerNorm;
  Expr rows = in.x.dim(1).extent();
  auto x = [&](Expr k, Expr m) { return in.x(k, clamp(m, 0, rows - 1)); };
  Var m = norm.m;
  norm.mean = kernelFunc(path + "_row_mean");
  if (norm.center) {
    norm.sumTerms = reduceRows(spec, lanes, path + "_row_sum", x, norm, norm.sumPart, norm.sum);
    norm.mean(m) = norm.sum(m) / K;
  } else {
    norm.mean(m) = 0.f;
  }
  norm.squareTerms = reduceRows(
      spec, lanes, path + "_row_squares",
      [&](Expr k, Expr row) {
        Expr d = x(k, row) - norm.mean(row);
        return d * d;
      },
      norm, norm.squarePart, norm.squares);
  norm.rstd = kernelFunc(path + "_row_rstd");
  norm.rstd(m) = 1.f / sqrt(norm.squares(m) / K + float(spec.normEpsilon));
  return norm;
}

Expr normalizedX(const GemmKernelSpec &spec, const GemmInputs &in, const GemmRowNorm &norm, Expr k,
                 Expr m) {
  Expr rows = in.x.dim(1).extent();
  Expr y = (in.x(k, clamp(m, 0, rows - 1)) - norm.mean(m)) * norm.rstd(m);
  if (spec.normGamma)
    y = y * in.gamma(k);
  if (spec.normBeta)
    y = y + in.beta(k);
  return y;
}

void scheduleGemmRowNormCuda(GemmRowNorm &norm, Func out, Var blockVar, int rowsPerThread,
                             int rows) {
  Var l = norm.l, m = norm.m, mt("mt"), mr("mr");
  // The partials in shared memory: threads (lane, row group), each summing its rows' terms.
  auto partials = [&](Func partial, RVar terms) {
    partial.compute_at(out, blockVar).store_in(MemoryType::GPUShared).bound(l, 0, norm.lanes);
    if (rows)
      partial.bound(m, 0, rows);
    partial.split(m, mt, mr, rowsPerThread, TailStrategy::RoundUp)
        .reorder(mr, l, mt)
        .gpu_threads(l, mt)
        .unroll(mr);
    partial.update()
        .split(m, mt, mr, rowsPerThread, TailStrategy::RoundUp)
        .reorder(mr, terms, l, mt)
        .gpu_threads(l, mt)
        .unroll(mr);
  };
  // A row's statistic in shared memory: a thread per rowsPerThread rows adds each row's
  // lanes' partials (no more threads than the partials', so the block keeps its shape).
  auto statistic = [&](Func stat, Func total) {
    stat.compute_at(out, blockVar).store_in(MemoryType::GPUShared);
    if (rows)
      stat.bound(m, 0, rows);
    stat.split(m, mt, mr, rowsPerThread, TailStrategy::RoundUp).gpu_threads(mt).unroll(mr);
    total.compute_at(stat, mr);
  };
  if (norm.center) {
    partials(norm.sumPart, norm.sumTerms);
    statistic(norm.mean, norm.sum);
  }
  partials(norm.squarePart, norm.squareTerms);
  statistic(norm.rstd, norm.squares);
}

void scheduleBatchRowNormCuda(GemmRowNorm &norm, Func out, Var blockVar,
                              const GemmBatchRowNormShape &shape, int rows) {
  Var l = norm.l, m = norm.m, lo("lo"), li("li"), mt("mt"), mr("mr"), y("y"), x("x");
  // The partials: threads (lane mod laneThreads, (lane group, row group)).
  auto partials = [&](Func partial, RVar terms) {
    partial.compute_at(out, blockVar)
        .store_in(MemoryType::GPUShared)
        .bound(l, 0, norm.lanes)
        .bound(m, 0, rows);
    for (Stage st : {Stage(partial), partial.update()})
      st.split(l, lo, li, shape.laneThreads)
          .split(m, mt, mr, shape.rowsPerThread, TailStrategy::RoundUp)
          .reorder(mr, li, lo, mt)
          .fuse(lo, mt, y)
          .gpu_threads(li, y)
          .unroll(mr);
    partial.update().reorder(mr, terms, li, y);
  };
  // A row's statistic: a thread per rowsPerThread rows along the outer thread dimension (the
  // inner one of extent 1).
  auto statistic = [&](Func stat, Func total) {
    stat.compute_at(out, blockVar)
        .store_in(MemoryType::GPUShared)
        .bound(m, 0, rows)
        .split(m, mt, mr, shape.rowsPerThread, TailStrategy::RoundUp)
        .split(mt, y, x, 1)
        .reorder(mr, x, y)
        .gpu_threads(x, y)
        .unroll(mr);
    total.compute_at(stat, mr);
  };
  if (norm.center) {
    partials(norm.sumPart, norm.sumTerms);
    statistic(norm.mean, norm.sum);
  }
  partials(norm.squarePart, norm.squareTerms);
  statistic(norm.rstd, norm.squares);
}

// Each path's statistics in the thread shape of its block (cudaRowNormShape).
void scheduleGemmPrologueCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f) {
  Var no("no"); // the block loop of every path's schedule (GemmScheduleCuda.cpp)
  scheduleGemmRowNormCuda(f.gemvNorm, f.out, no,
                          cudaRowNormShape(spec, true, f.registerTiles).rowsPerThread,
                          kCudaGemvRows);
  scheduleGemmRowNormCuda(f.tileNorm, f.out, no,
                          cudaRowNormShape(spec, false, f.registerTiles).rowsPerThread, 0);
  for (CudaBatchGemv &b : f.batches)
    scheduleBatchRowNormCuda(b.norm, f.out, cudaBatchGemvBlockVar(),
                             cudaBatchRowNormShape(spec, b.rows), b.rows);
}

void computeGemmRowNormsAtRoot(GemmCudaFuncs &f) {
  std::vector<GemmRowNorm *> norms{&f.gemvNorm, &f.tileNorm};
  for (CudaBatchGemv &b : f.batches)
    norms.push_back(&b.norm);
  for (GemmRowNorm *norm : norms) {
    if (norm->center) {
      norm->sumPart.compute_root();
      norm->mean.compute_root();
    }
    norm->squarePart.compute_root();
    norm->rstd.compute_root();
  }
}

} // namespace mlir::xf
