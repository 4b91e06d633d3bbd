//===- FmaGemmSource.cpp - fp32 GEMM on the FMA units as MLIR -------------===//
//
// out[M, N] = act(norm(x)[M, K] · W + bias) + residual in float32, as a gpu.module of the
// tensor-core GEMM's kernels and launches (docs/gpu.md, "GEMM, fp32: the FMA kernel"):
// `<name>_fma` (64 × 64 tiles of out), `<name>_fma32` (32 × 64, below kTcTallRows rows) and,
// where the GEMM may split K, `<name>_fma32_splitk` with `<name>_fma_reduce`. The CUDA
// build's GEMMs of kFmaGemmMinRows rows or more for --gpu-matmul=fp32 where they qualify
// (tensorCoreGemmPlan); fewer rows (decode steps, batches of up to 16 sequences) run Halide's
// GEMV and batch GEMV, compiled beside it.
//
// A block of 128 threads; lane l of warp v: row group r = l / 8 + 4 (v / 2), column group
// c = l % 8 + 8 (v % 2). The thread owns rows r + 8i of the tile (i < tile rows / 8) and
// columns 4c..4c + 3 (per gate), its sums in registers: 32 (the 64-row tile) or 16 floats a
// gate. Per K slice (32 of K; 16 for SwiGLU, whose two gates' tiles would pass 48 KiB) x's
// tile is [row][k] (rows of slice + 4 floats: a warp's four rows fall in distinct banks) and
// W's [k][n] whatever W's layout ([N, K] weights are transposed as they are staged), so per
// 4 of k a thread reads each of its rows' 4 values of x as one 16-byte load (8 lanes a row:
// broadcast) and 4 16-byte rows of W (a warp's 8 column groups: 128 consecutive bytes), then
// runs 8 · 4 · 4 FMAs (64-row tile, a gate): 128 FMAs to 12 shared loads.
// Slices are double-buffered through registers: the next slice's global loads are issued
// before this slice's products and stored into the other buffer after them, one barrier a
// slice. Staging through registers is what lets x be normalised (the norm prologue: LayerNorm
// or RMSNorm statistics of the tile's rows, computed first by the 4 warps, a row's sum over
// its 32 lanes by xor shuffles), W be transposed and bf16 weights be widened as they land in
// shared memory, which cp.async cannot.
// The epilogue (bias, activation, SwiGLU, residual) is the tensor-core GEMM's
// (TensorCoreGemmEpilogue.cpp), on pairs of columns; rows past M read x's last row and are
// never stored; a column tail reads W's last row for the columns past N and stores none of
// them.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "TensorCoreGemmEpilogue.h"
#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace mlir::xf {

using namespace tc;

namespace {

constexpr int kCols = 4;    // columns a thread (per gate): one 16-byte row of W's tile
constexpr int kRowStep = 8; // a thread's rows are r + 8i
constexpr int kChunk = 4;   // floats a 16-byte load
constexpr int kWarps = kTcThreads / 32;
// .maxnreg: the 64-row kernel 3 blocks of 128 threads a SM (its 32 sums a gate and the
// staged slice: 168 without spills in every example); the 32-row ones 4 (131 registers
// unbounded for split-K's kernel, i.e. 3 blocks; 128 holds it without spills).
constexpr int kMaxRegisters = 168, kMaxRegistersShort = 128;

struct Kernel {
  Writer &w;
  const GemmKernelSpec &spec;
  int tileRows;
  int gates;
  int sliceK;
  std::string tid, r, c, bm, bn, mLast;

  bool nk() const { return spec.transposeWeight; }
  bool bf16() const { return spec.bf16Weights; }
  bool norm() const { return spec.prologue != GemmPrologue::None; }
  int rows() const { return tileRows / kRowStep; } // a thread's rows
  int aStride() const { return sliceK + kChunk; }
  std::string aTile() const {
    return llvm::formatv("memref<{0}x{1}xf32, #gpu.address_space<workgroup>>", 2 * tileRows,
                         aStride());
  }
  std::string bTile() const {
    return llvm::formatv("memref<{0}x{1}xf32, #gpu.address_space<workgroup>>", 2 * sliceK,
                         kTcTileCols);
  }
  std::string statsTile() const {
    return llvm::formatv("memref<2x{0}xf32, #gpu.address_space<workgroup>>", tileRows);
  }
  std::string vec(int n) const { return "vector<" + std::to_string(n) + "xf32>"; }
  std::string extract(const std::string &v, int i, int n) {
    return w.let("vector.extract " + v + "[" + std::to_string(i) + "] : f32 from " + vec(n));
  }
  std::string scalar(const char *op, const std::string &a, const std::string &b) {
    return w.let(std::string(op) + " " + a + ", " + b + " : f32");
  }
  std::string f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return w.let(llvm::formatv("arith.constant {0:x8} : f32", bits).str()); // exact
  }
  std::string sharedLoad(const char *tile, const std::string &type, const std::string &row,
                         const std::string &col) {
    return w.let("vector.load " + std::string(tile) + "[" + row + ", " + col +
                 "] {alignment = 16} : " + type + ", vector<4xf32>");
  }
  void sharedStore(const std::string &v, const char *tile, const std::string &type,
                   const std::string &row, const std::string &col, int n) {
    w.line("vector.store " + v + ", " + tile + "[" + row + ", " + col +
           "] {alignment = " + std::to_string(4 * n) + "} : " + type + ", " + vec(n));
  }
};

Kernel indicesOf(Writer &w, const GemmKernelSpec &spec, int tileRows) {
  const int gates = spec.epilogue == GemmEpilogue::SwiGlu ? 2 : 1;
  Kernel k{w, spec, tileRows, gates, gates == 2 ? kTcSliceK / 2 : kTcSliceK};
  k.tid = w.let("gpu.thread_id x");
  // The launch's grid is column tiles × row tiles (the launcher's, as the tensor-core
  // kernel's); its blocks run row tiles fastest, so the blocks reading one tile of W are
  // neighbours in the launch and share it in L2 (a vocabulary's W, 154 MB for GPT-2, three
  // times an H200's L2, then comes from DRAM about once instead of once per row tile).
  std::string gx = w.let("gpu.grid_dim x"), gy = w.let("gpu.grid_dim y");
  std::string linear = w.add(w.mul(w.let("gpu.block_id y"), gx), w.let("gpu.block_id x"));
  std::string by = w.rem(linear, gy), bx = w.div(linear, gy);
  std::string warp = w.div(k.tid, w.index(32)), lane = w.rem(k.tid, w.index(32));
  k.r = w.add(w.div(lane, w.index(8)), w.mul(w.div(warp, w.index(2)), w.index(4)));
  k.c = w.add(w.rem(lane, w.index(8)), w.mul(w.rem(warp, w.index(2)), w.index(8)));
  k.bm = w.mul(by, w.index(tileRows));
  k.bn = w.mul(bx, w.index(kTcTileCols));
  k.mLast = w.let("arith.subi %m, " + w.index(1) + " : index");
  return k;
}

// `v` (f32) summed over the 32 lanes of the warp.
std::string warpSum(Kernel &k, std::string v) {
  Writer &w = k.w;
  std::string width = w.let("arith.constant 32 : i32");
  for (int offset : {16, 8, 4, 2, 1}) {
    std::string shuffled = w.fresh();
    w.line(shuffled + ":2 = gpu.shuffle xor " + v + ", " +
           w.let("arith.constant " + std::to_string(offset) + " : i32") + ", " + width + " : f32");
    v = k.scalar("arith.addf", v, shuffled + "#0");
  }
  return v;
}

// Σ over k of f(x[row, k]) for each of `rows` (row bases), lane l summing k ≡ l (mod 32),
// then over the warp: one loop, the rows' loads independent.
std::vector<std::string> rowSums(Kernel &k, const std::vector<std::string> &bases,
                                 const std::string &lane,
                                 const std::function<std::string(int, std::string)> &f) {
  Writer &w = k.w;
  std::string zero = w.let("arith.constant 0.0 : f32"), loop = w.fresh(), iterArgs, types;
  for (size_t i = 0; i < bases.size(); ++i) {
    iterArgs += (i ? ", %rowsum" : "%rowsum") + std::to_string(i) + " = " + zero;
    types += i ? ", f32" : "f32";
  }
  w.line(loop + ":" + std::to_string(bases.size()) + " = scf.for %j = " + w.index(0) +
         " to %k step " + w.index(32) + " iter_args(" + iterArgs + ") -> (" + types + ") {");
  std::string at = w.add("%j", lane), yield;
  for (size_t i = 0; i < bases.size(); ++i) {
    std::string v = k.extract(
        w.let("vector.load %x[" + w.add(bases[i], at) + "] : memref<?xf32>, vector<1xf32>"), 0, 1);
    yield += (i ? ", " : "") + k.scalar("arith.addf", "%rowsum" + std::to_string(i), f(int(i), v));
  }
  w.line("scf.yield " + yield + " : " + types);
  w.line("}");
  std::vector<std::string> sums;
  for (size_t i = 0; i < bases.size(); ++i)
    sums.push_back(warpSum(k, loop + "#" + std::to_string(i)));
  return sums;
}

// The norm prologue's statistics of the tile's rows into %stats (mean, 1/σ), as Halide's
// GemmPrologue.cpp defines them: mean = Σx / K (0 for RMSNorm), 1/σ = 1 / sqrt(Σ(x − mean)² /
// K + ε). Warp v takes rows v · rows/4 + i, each lane a 32nd of K; then a barrier.
void normStatistics(Kernel &k) {
  Writer &w = k.w;
  const int per = k.tileRows / kWarps;
  std::string lane = w.rem(k.tid, w.index(32));
  std::string first = w.mul(w.div(k.tid, w.index(32)), w.index(per));
  std::vector<std::string> bases;
  for (int i = 0; i < per; ++i)
    bases.push_back(w.mul(w.min(w.add(k.bm, w.addConst(first, i)), k.mLast), "%xs"));
  std::string count = k.f32(float(k.spec.K));
  std::vector<std::string> mean(per, k.f32(0));
  if (k.spec.prologue == GemmPrologue::LayerNorm) {
    std::vector<std::string> sums = rowSums(k, bases, lane, [](int, std::string v) { return v; });
    for (int i = 0; i < per; ++i)
      mean[i] = k.scalar("arith.divf", sums[i], count);
  }
  std::vector<std::string> squares = rowSums(k, bases, lane, [&](int i, std::string v) {
    std::string d =
        k.spec.prologue == GemmPrologue::LayerNorm ? k.scalar("arith.subf", v, mean[i]) : v;
    return k.scalar("arith.mulf", d, d);
  });
  std::string epsilon = k.f32(float(k.spec.normEpsilon)), one = k.f32(1);
  w.line("scf.if " + w.let("arith.cmpi ult, " + lane + ", " + w.index(1) + " : index") + " {");
  for (int i = 0; i < per; ++i) {
    std::string variance =
        k.scalar("arith.addf", k.scalar("arith.divf", squares[i], count), epsilon);
    std::string sigma =
        w.let("llvm.call_intrinsic \"llvm.sqrt.f32\"(" + variance + ") : (f32) -> f32");
    std::string rstd = k.scalar("arith.divf", one, sigma);
    std::string row = w.addConst(first, i);
    for (auto [s, v] : {std::pair{0, mean[i]}, std::pair{1, rstd}})
      k.sharedStore(w.let("vector.from_elements " + v + " : vector<1xf32>"), "%stats",
                    k.statsTile(), w.index(s), row, 1);
  }
  w.line("}");
  w.line("gpu.barrier");
}

// One slice's global loads, issued before the products of the slice in shared memory.
struct Staged {
  std::vector<std::string> a;              // x's 16-byte chunks
  std::vector<std::string> aRow, aCol;     // their tile row and column within the slice
  std::vector<std::vector<std::string>> b; // per gate: W's 4-element chunks (f32 or bf16)
  std::vector<std::string> bRow, bCol;     // [K, N]: (k, n of 4); [N, K]: (k of 4, n)
  std::string k0;
};

// Issues the global loads of the slice at `k0` (x's rows past M read its last row; a column
// tail's columns past N read W's last row).
Staged loadSlice(Kernel &k, const std::string &k0) {
  Writer &w = k.w;
  Staged s;
  s.k0 = k0;
  const int chunksPerRow = k.sliceK / kChunk;
  for (int i = 0; i < k.tileRows * chunksPerRow / kTcThreads; ++i) {
    std::string idx = w.addConst(k.tid, i * kTcThreads);
    std::string row = w.div(idx, w.index(chunksPerRow));
    std::string col = w.mul(w.rem(idx, w.index(chunksPerRow)), w.index(kChunk));
    std::string grow = w.min(w.add(k.bm, row), k.mLast);
    s.a.push_back(w.let("vector.load %x[" + w.add(w.add(w.mul(grow, "%xs"), k0), col) +
                        "] {alignment = 16} : memref<?xf32>, vector<4xf32>"));
    s.aRow.push_back(row);
    s.aCol.push_back(col);
  }
  const char *elem = k.bf16() ? "bf16" : "f32";
  const int chunks = k.sliceK * kTcTileCols / kChunk / kTcThreads;
  s.b.resize(k.gates);
  for (int i = 0; i < chunks; ++i) {
    std::string idx = w.addConst(k.tid, i * kTcThreads);
    std::string kRow, n;
    if (k.nk()) { // 32 consecutive n a warp (conflict-free transposed stores), 4 k each
      n = w.rem(idx, w.index(kTcTileCols));
      kRow = w.mul(w.div(idx, w.index(kTcTileCols)), w.index(kChunk));
    } else {
      kRow = w.div(idx, w.index(kTcTileCols / kChunk));
      n = w.mul(w.rem(idx, w.index(kTcTileCols / kChunk)), w.index(kChunk));
    }
    s.bRow.push_back(kRow);
    s.bCol.push_back(n);
    std::string gn = w.add(k.bn, n);
    if (tensorCoreColumnTail(k.spec))
      gn = w.min(gn, w.index(k.spec.N - 1));
    for (int gate = 0; gate < k.gates; ++gate) {
      std::string at = k.nk()
                           ? w.add(w.mul(w.addConst(gn, gate * k.spec.N), "%ws"), w.add(k0, kRow))
                           : w.addConst(w.add(w.mul(w.add(k0, kRow), "%ws"), gn), gate * k.spec.N);
      s.b[gate].push_back(w.let("vector.load %w[" + at +
                                "] {alignment = " + (k.bf16() ? "8" : "16") + "} : memref<?x" +
                                elem + ">, vector<4x" + elem + ">"));
    }
  }
  return s;
}

// Stores a loaded slice into the buffer whose first rows are `aRow0` / `bRow0`: x normalised
// (the prologue), W widened (bf16) and, from [N, K], transposed.
void storeSlice(Kernel &k, const Staged &s, const std::string &aRow0, const std::string &bRow0) {
  Writer &w = k.w;
  for (size_t i = 0; i < s.a.size(); ++i) {
    std::string v = s.a[i];
    if (k.norm()) {
      std::string col = w.add(s.k0, s.aCol[i]);
      auto stat = [&](int which) {
        std::string x = w.let("memref.load %stats[" + w.index(which) + ", " + s.aRow[i] +
                              "] : " + k.statsTile());
        return w.let("vector.broadcast " + x + " : f32 to vector<4xf32>");
      };
      v = w.let("arith.mulf " + w.let("arith.subf " + v + ", " + stat(0) + " : vector<4xf32>") +
                ", " + stat(1) + " : vector<4xf32>");
      for (auto [has, buffer, op] : {std::tuple{k.spec.normGamma, "%gamma", "arith.mulf"},
                                     std::tuple{k.spec.normBeta, "%beta", "arith.addf"}})
        if (has)
          v = w.let(std::string(op) + " " + v + ", " +
                    w.let("vector.load " + std::string(buffer) + "[" + col +
                          "] {alignment = 16} : memref<?xf32>, vector<4xf32>") +
                    " : vector<4xf32>");
    }
    k.sharedStore(v, "%as", k.aTile(), w.add(s.aRow[i], aRow0), s.aCol[i], kChunk);
  }
  for (int gate = 0; gate < k.gates; ++gate) {
    const char *tile = gate ? "%bs1" : "%bs0";
    for (size_t i = 0; i < s.b[gate].size(); ++i) {
      std::string v = s.b[gate][i];
      if (k.bf16())
        v = w.let("arith.extf " + v + " : vector<4xbf16> to vector<4xf32>");
      if (!k.nk()) {
        k.sharedStore(v, tile, k.bTile(), w.add(s.bRow[i], bRow0), s.bCol[i], kChunk);
        continue;
      }
      for (int e = 0; e < kChunk; ++e)
        k.sharedStore(w.let("vector.from_elements " + k.extract(v, e, kChunk) + " : vector<1xf32>"),
                      tile, k.bTile(), w.addConst(w.add(s.bRow[i], bRow0), e), s.bCol[i], 1);
    }
  }
}

// The products of the slice in the buffer whose first rows are `aRow0` / `bRow0`: per 4 of k,
// the thread's rows' 16-byte chunks of x and 4 rows of W's columns, then rows × 4 × 4 FMAs a
// gate. `acc[gate · rows + i]`: row i's 4 columns.
void multiplySlice(Kernel &k, std::vector<std::string> &acc, const std::string &aRow0,
                   const std::string &bRow0) {
  Writer &w = k.w;
  std::string col = w.mul(k.c, w.index(kCols));
  std::vector<std::string> rowAt;
  for (int i = 0; i < k.rows(); ++i)
    rowAt.push_back(w.add(w.addConst(k.r, i * kRowStep), aRow0));
  for (int kk = 0; kk < k.sliceK; kk += kChunk) {
    std::vector<std::string> a;
    for (int i = 0; i < k.rows(); ++i)
      a.push_back(k.sharedLoad("%as", k.aTile(), rowAt[i], w.index(kk)));
    for (int j = 0; j < kChunk; ++j) {
      std::vector<std::string> b;
      for (int gate = 0; gate < k.gates; ++gate)
        b.push_back(
            k.sharedLoad(gate ? "%bs1" : "%bs0", k.bTile(), w.add(w.index(kk + j), bRow0), col));
      for (int i = 0; i < k.rows(); ++i) {
        std::string x =
            w.let("vector.broadcast " + k.extract(a[i], j, kChunk) + " : f32 to vector<4xf32>");
        for (int gate = 0; gate < k.gates; ++gate) {
          std::string &sum = acc[gate * k.rows() + i];
          sum = w.let("vector.fma " + x + ", " + b[gate] + ", " + sum + " : vector<4xf32>");
        }
      }
    }
  }
}

// The K loop over [lo, hi) (slices of sliceK), accumulators in iter_args: the first slice is
// staged before it; each iteration loads the next slice (or re-reads this one after the last),
// multiplies this one, stores the next into the other buffer and waits at one barrier.
void kLoop(Kernel &k, std::vector<std::string> &acc, const std::string &lo, const std::string &hi) {
  Writer &w = k.w;
  storeSlice(k, loadSlice(k, lo), w.index(0), w.index(0));
  w.line("gpu.barrier");
  std::string zero = w.let("arith.constant dense<0.0> : vector<4xf32>"), iterArgs, types;
  for (size_t a = 0; a < acc.size(); ++a) {
    iterArgs += (a ? ", %acc" : "%acc") + std::to_string(a) + " = " + zero;
    types += a ? ", vector<4xf32>" : "vector<4xf32>";
    acc[a] = "%acc" + std::to_string(a);
  }
  std::string loop = w.fresh();
  w.line(loop + ":" + std::to_string(acc.size()) + " = scf.for %k0 = " + lo + " to " + hi +
         " step " + w.index(k.sliceK) + " iter_args(" + iterArgs + ") -> (" + types + ") {");
  std::string slice = w.div(w.let("arith.subi %k0, " + lo + " : index"), w.index(k.sliceK));
  std::string buffer = w.rem(slice, w.index(2));
  std::string next = w.let("arith.subi " + w.index(1) + ", " + buffer + " : index");
  std::string kNext = w.addConst("%k0", k.sliceK);
  std::string more = w.let("arith.cmpi ult, " + kNext + ", " + hi + " : index");
  Staged staged = loadSlice(k, w.let("arith.select " + more + ", " + kNext + ", %k0 : index"));
  std::string aRows = w.index(k.tileRows), bRows = w.index(k.sliceK);
  multiplySlice(k, acc, w.mul(buffer, aRows), w.mul(buffer, bRows));
  storeSlice(k, staged, w.mul(next, aRows), w.mul(next, bRows));
  w.line("gpu.barrier");
  std::string yield;
  for (size_t a = 0; a < acc.size(); ++a)
    yield += (a ? ", " : "") + acc[a];
  w.line("scf.yield " + yield + " : " + types);
  w.line("}");
  for (size_t a = 0; a < acc.size(); ++a)
    acc[a] = loop + "#" + std::to_string(a);
}

// Row i's sums through the epilogue into out, two columns at a time; or (`partialsRow0`: the
// split's first row of the [S][M][cols] partials, z · M) raw, each gate's columns where its
// weights' are.
void storeTile(Kernel &k, const std::vector<std::string> &acc,
               const std::string &partialsRow0 = "") {
  Writer &w = k.w;
  for (int i = 0; i < k.rows(); ++i) {
    std::string row = w.add(k.bm, w.addConst(k.r, i * kRowStep));
    w.line("scf.if " + w.let("arith.cmpi ult, " + row + ", %m : index") + " {");
    for (int pair = 0; pair < kCols / 2; ++pair) {
      std::string col = w.add(k.bn, w.addConst(w.mul(k.c, w.index(kCols)), 2 * pair));
      auto sum = [&](int gate) {
        const std::string &v = acc[gate * k.rows() + i];
        return w.let("vector.from_elements " + k.extract(v, 2 * pair, kCols) + ", " +
                     k.extract(v, 2 * pair + 1, kCols) + " : vector<2xf32>");
      };
      auto store = [&](const std::string &v, const std::string &at) {
        w.line("vector.store " + v + ", %out[" + at +
               "] {alignment = 8} : memref<?xf32>, vector<2xf32>");
      };
      if (partialsRow0.empty() && tensorCoreColumnTail(k.spec)) {
        storeColumns(w, k.spec, row, col, [&] { return epiloguePair(w, k.spec, row, col, sum); });
      } else if (partialsRow0.empty()) {
        store(epiloguePair(w, k.spec, row, col, sum), w.add(w.mul(row, "%os"), col));
      } else {
        std::string at = w.add(w.mul(w.add(partialsRow0, row), w.index(k.gates * k.spec.N)), col);
        for (int gate = 0; gate < k.gates; ++gate)
          store(sum(gate), w.addConst(at, gate * k.spec.N));
      }
    }
    w.line("}");
  }
}

// One gpu.func: `<name>_fma` (64-row tiles), `<name>_fma32` (32) or, with `split`,
// `<name>_fma32_splitk` (block z's K range, raw sums into the partials, %out).
std::string kernelFunction(const GemmKernelSpec &spec, int tileRows, bool split = false) {
  Writer w;
  Kernel k = indicesOf(w, spec, tileRows);
  std::string lo = w.index(0), hi = "%k", partialsRow0;
  if (split) {
    std::string z = w.let("gpu.block_id z");
    lo = w.mul(z, "%kz");
    hi = w.min(w.add(lo, "%kz"), "%k");
    partialsRow0 = w.mul(z, "%m");
  }
  if (k.norm())
    normStatistics(k);
  std::vector<std::string> acc(k.rows() * k.gates);
  kLoop(k, acc, lo, hi);
  storeTile(k, acc, partialsRow0);

  std::string workgroup = sharedTile("%as", k.aTile());
  for (int gate = 0; gate < k.gates; ++gate)
    workgroup += ", " + sharedTile(gate ? "%bs1" : "%bs0", k.bTile());
  if (k.norm())
    workgroup += ", " + sharedTile("%stats", k.statsTile());
  const char *suffix = split ? "_fma32_splitk" : tileRows == kTcTileRows ? "_fma" : "_fma32";
  return gemmKernelFunction(spec.name + suffix, spec.bf16Weights ? "bf16" : "f32", split,
                            k.norm() ? "%gamma: memref<?xf32>, %beta: memref<?xf32>, " : "",
                            workgroup, w.text,
                            tileRows == kTcTileRows ? kMaxRegisters : kMaxRegistersShort);
}

} // namespace

std::string fmaGemmSource(const GemmKernelSpec &spec) {
  std::string splitKernels;
  if (tensorCoreSplitRows(spec) > 0)
    splitKernels = kernelFunction(spec, kTcShortTileRows, /*split=*/true) +
                   tc::splitReductionFunction(spec, spec.name + "_fma");
  // The header line the emulator (test/gpu/emulate_tensor_cores.py) reads.
  std::string norm =
      spec.prologue == GemmPrologue::None
          ? std::string()
          : llvm::formatv(", norm {0} eps {1:e9}{2}{3}",
                          spec.prologue == GemmPrologue::LayerNorm ? "layer_norm" : "rms_norm",
                          spec.normEpsilon, spec.normGamma ? " gamma" : "",
                          spec.normBeta ? " beta" : "")
                .str();
  return llvm::formatv("// {0}: out[M, {1}] = x[M, {2}] · W (W {3}, fp32 FMA, float32 sums{4})\n"
                       "module attributes {{gpu.container_module} {{\n"
                       "  gpu.module @{0}_fma {{\n{5}{6}  }\n}\n",
                       spec.name, spec.N, spec.K, spec.transposeWeight ? "[N, K]" : "[K, N]", norm,
                       kernelFunction(spec, kTcTileRows),
                       kernelFunction(spec, kTcShortTileRows) + splitKernels)
      .str();
}

} // namespace mlir::xf
