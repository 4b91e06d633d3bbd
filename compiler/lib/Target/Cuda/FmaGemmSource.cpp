//===- FmaGemmSource.cpp - fp32 GEMM on the FMA units as MLIR -------------===//
//
// out[M, N] = act(norm(x)[M, K] · W + bias) + residual in float32, as a gpu.module of the
// tensor-core GEMM's kernels and launches (docs/gpu.md, "GEMM, fp32: the FMA kernel"):
// `<name>_fma` (64 × 64 tiles of out), `<name>_fma32` (32 × 64, below kTcTallRows rows),
// `<name>_fma128` (128 × 128, 256 threads, where the launcher's grid of them fills the GPU;
// 128 × 64 for SwiGLU: both gates' 128 columns of W) and, where the GEMM may split K,
// `<name>_fma32_splitk` with `<name>_fma_reduce`. The CUDA build's GEMMs of kFmaGemmMinRows rows or
// more for --gpu-matmul=fp32 where they qualify (tensorCoreGemmPlan); fewer rows (decode steps,
// batches of up to 16 sequences) run Halide's GEMV and batch GEMV, compiled beside it.
//
// Lane l of warp v: row group r = l / 8 + 4 (v / 2), column group c = l % 8 + 8 (v % 2) (8 or
// 16 row groups, 16 column groups). The thread owns rows 4r + e + 4 · groups · i (e < 4; i <
// 2 for the 64- and 128-row tiles, 1 for 32) and columns 4c + e + 64j (j < 1, or 2 for the
// 128-column tile), per gate, its sums in registers: 32 floats a gate (64-row tile), 16 (32), 64
// (128 × 128). Per K slice (32 of K; 16 or 8 for SwiGLU and the 128-row tiles: kernelOf) both tiles
// are kept [k][row] and [k][n] whatever W's layout (x, and [N, K] weights, transposed as they are
// staged: stagedChunk, no bank conflicts), so per k a thread reads its rows as one or two 16-byte
// loads (8 lanes a row group: broadcast) and its columns as one or two (a warp's 8 column groups:
// 128 consecutive bytes), then runs rows × columns FMAs: 32 to 3 shared loads (64-row tile), 64 to
// 4 (128 × 128). Slices are double-buffered through registers: the next slice's global loads are
// issued before this slice's products and stored into the other buffer after them, one barrier a
// slice. Staging through registers is what lets x be normalised (the norm prologue: LayerNorm or
// RMSNorm statistics of the tile's rows, computed first by the warps, a row's sum over its 32 lanes
// by xor shuffles), both tiles be transposed and bf16 weights be widened as they land in shared
// memory, which cp.async cannot. The 128-row tiles' two buffers (33-35 KiB with the statistics) are
// views of dynamic shared memory. The epilogue (bias, activation, SwiGLU, residual) is the
// tensor-core GEMM's (TensorCoreGemmEpilogue.cpp), on pairs of columns; rows past M read x's last
// row and are never stored; a column tail reads W's last row for the columns past N and stores none
// of them, and so does the 128-column tile's last where N is an odd multiple of 64.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "TensorCoreGemmEpilogue.h"
#include "TensorCoreKernelText.h"

#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <cstring>
#include <tuple>

namespace mlir::xf {

using namespace tc;

namespace {

constexpr int kChunk = 4;      // floats a 16-byte load; a thread's rows (columns) come in 4s
constexpr int kColGroups = 16; // column groups a block: 64 columns of 4
// .maxnreg, from ptxas (sm_90, every example, 32-bit indices: xfrt/GpuGemmAbi.h): 128 — 4
// blocks of 128 threads a SM for the 64- and 32-row tiles, 2 of 256 for the 128-row one (64
// sums, 16 staged floats, 16 of a k's rows and columns) — without spills, SwiGLU's 64-row one
// with slices of 8 (kernelOf); 168 (1 block of the wide tiles) for SwiGLU's 128-row tiles and
// a [K, N] W whose last 128-column tile is clamped (pastN): at 128 ptxas spilled 4 bytes of
// Llama's and of compact's QKV (N = 192). With 64-bit indices the 128-row kernels spilled 4-40
// bytes at 128 in some kernel of every example whatever the slice or staging, and SwiGLU's
// 64-row one 44 with slices of 16 and 32-bit indices.
constexpr int kMaxRegisters = 128, kMaxRegistersCrowded = 168;

// A block's tile of out and its threads.
struct Shape {
  int tileRows, tileCols, threads;
  int warps() const { return threads / 32; }
  int rowGroups() const { return kChunk * warps() / 2; }
  int rowBlocks() const { return tileRows / (kChunk * rowGroups()); } // 4-row blocks a thread
  int colBlocks() const { return tileCols / (kChunk * kColGroups); }  // 4-column blocks
  bool wide() const { return tileRows == kTcWideTile; }
};

// The wide tiles read 128 columns of W a block: 64 of out for SwiGLU's two gates.
Shape shapeOf(int tileRows, int gates) {
  if (tileRows != kTcWideTile)
    return Shape{tileRows, kTcTileCols, kTcThreads};
  return Shape{kTcWideTile, gates == 2 ? kTcTileCols : kTcWideTile, kTcWideThreads};
}

struct Kernel {
  Writer &w;
  const GemmKernelSpec &spec;
  Shape shape;
  int gates;
  int sliceK;
  std::string tid, r, c, bm, bn, mLast;
  std::string mean, rstd; // the norm prologue's statistics of the row the thread stages

  int tileRows() const { return shape.tileRows; }
  bool nk() const { return spec.transposeWeight; }
  bool bf16() const { return spec.bf16Weights; }
  bool norm() const { return spec.prologue != GemmPrologue::None; }
  int rows() const { return kChunk * shape.rowBlocks(); } // a thread's rows
  // 16-byte chunks of a slice a thread stages: of x, of W (per gate).
  int xChunks() const { return tileRows() * sliceK / kChunk / shape.threads; }
  int wChunks() const { return sliceK * shape.tileCols / kChunk / shape.threads; }
  // Sums a thread holds: per gate, row and 4-column block.
  int sums() const { return gates * rows() * shape.colBlocks(); }
  int sum(int gate, int row, int colBlock) const {
    return (gate * rows() + row) * shape.colBlocks() + colBlock;
  }
  // The last column tile reaches past N (a column tail; or N an odd multiple of 64 in the
  // 128-column tiles): W's columns (rows) past N are read clamped and never stored.
  bool pastN() const { return spec.N % shape.tileCols != 0; }
  // Rows of the [k][·] tiles padded by 4 floats (stagedChunk's transposing stores).
  std::string aTile() const {
    return llvm::formatv("memref<{0}x{1}xf32, #gpu.address_space<workgroup>>", 2 * sliceK,
                         tileRows() + kChunk);
  }
  std::string bTile() const {
    return llvm::formatv("memref<{0}x{1}xf32, #gpu.address_space<workgroup>>", 2 * sliceK,
                         shape.tileCols + kChunk);
  }
  std::string statsTile() const {
    return llvm::formatv("memref<2x{0}xf32, #gpu.address_space<workgroup>>", tileRows());
  }
  // The shared tiles: both buffers of x's and of each gate's W tile, the rows' statistics.
  std::vector<SharedView> sharedTiles() const {
    std::vector<SharedView> tiles{{"as", aTile(), 4 * 2 * sliceK * (tileRows() + kChunk)}};
    for (int gate = 0; gate < gates; ++gate)
      tiles.push_back({gate ? "bs1" : "bs0", bTile(), 4 * 2 * sliceK * (shape.tileCols + kChunk)});
    if (norm())
      tiles.push_back({"stats", statsTile(), 4 * 2 * tileRows()});
    return tiles;
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
  // `v`'s 4 elements down a column of `tile`, rows row..row + 3 (a transposing store).
  void sharedStoreColumn(const std::string &v, const char *tile, const std::string &type,
                         const std::string &row, const std::string &col) {
    for (int e = 0; e < kChunk; ++e)
      sharedStore(w.let("vector.from_elements " + extract(v, e, kChunk) + " : vector<1xf32>"), tile,
                  type, w.addConst(row, e), col, 1);
  }
  // The thread's row `i` (< rows()) and the first column of its 4-column block `j`, in the tile.
  std::string rowAt(int i) {
    return w.addConst(w.mul(r, w.index(kChunk)),
                      i % kChunk + i / kChunk * kChunk * shape.rowGroups());
  }
  std::string colAt(int j) {
    return w.addConst(w.mul(c, w.index(kChunk)), j * kChunk * kColGroups);
  }
};

Kernel kernelOf(Writer &w, const GemmKernelSpec &spec, int tileRows) {
  // Slices of 16 of K for the 128-row tiles (a slice of 32 staged would hold 32 registers a
  // thread) and SwiGLU's 32-row ones (two gates' double-buffered tiles of 32 would pass 48
  // KiB); of 8 for SwiGLU's 64-row tiles, whose 64 sums and two gates' staged chunks of a
  // 16-slice spilled at 128 registers. Not for SwiGLU's 128-row ones: a slice of 8 of their
  // 64 columns a gate is half a chunk a thread.
  const int gates = spec.gates();
  const int sliceK = gates == 2 && tileRows == kTcTileRows   ? kTcSliceK / 4
                     : gates == 2 || tileRows == kTcWideTile ? kTcSliceK / 2
                                                             : kTcSliceK;
  const Shape shape = shapeOf(tileRows, gates);
  // Every thread stages whole 16-byte chunks of x and of each gate's W, the same number.
  assert(tileRows * sliceK % (kChunk * shape.threads) == 0 &&
         sliceK * shape.tileCols % (kChunk * shape.threads) == 0 &&
         tileRows * sliceK >= kChunk * shape.threads &&
         sliceK * shape.tileCols >= kChunk * shape.threads);
  return Kernel{w, spec, shape, gates, sliceK};
}

Kernel indicesOf(Writer &w, const GemmKernelSpec &spec, int tileRows) {
  Kernel k = kernelOf(w, spec, tileRows);
  assert(k.shape.warps() % (tileRows / 16) == 0 && "a thread stages chunks of one row of x");
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
  k.bn = w.mul(bx, w.index(k.shape.tileCols));
  k.mLast = w.let("arith.subi %m, " + w.index(1) + " : index");
  return k;
}

// The row (of x, or of an [N, K] W) and first k of chunk `idx` of a slice of `rows` rows, for
// tiles stored transposed ([k][row], rows padded by 4): a warp takes 16 rows × 2 chunks, i.e.
// 16 whole 32-byte sectors of global memory, and its transposing stores (k 4j + e, rows r..r
// + 15 and k 4j + 4 + e) fall 16 banks apart: no conflicts. For x, every chunk of a thread is
// of one row (the block's warps are a multiple of rows / 16: normStatistics' hoisted values).
std::pair<std::string, std::string> stagedChunk(Kernel &k, const std::string &idx, int rows) {
  Writer &w = k.w;
  std::string lane = w.rem(idx, w.index(32)), warpChunk = w.div(idx, w.index(32));
  std::string row =
      w.add(w.rem(lane, w.index(16)), w.mul(w.rem(warpChunk, w.index(rows / 16)), w.index(16)));
  std::string chunk =
      w.add(w.div(lane, w.index(16)), w.mul(w.div(warpChunk, w.index(rows / 16)), w.index(2)));
  return {row, w.mul(chunk, w.index(kChunk))};
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
  const int per = k.tileRows() / k.shape.warps();
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
  // Every slice's chunks of x a thread stages are of one row (stagedChunk): its statistics,
  // read once.
  std::string row = stagedChunk(k, k.tid, k.tileRows()).first;
  auto stat = [&](int which) {
    std::string x =
        w.let("memref.load %stats[" + w.index(which) + ", " + row + "] : " + k.statsTile());
    return w.let("vector.broadcast " + x + " : f32 to vector<4xf32>");
  };
  k.mean = stat(0);
  k.rstd = stat(1);
}

// One slice's global loads, issued before the products of the slice in shared memory.
struct Staged {
  std::vector<std::string> a;              // x's 16-byte chunks
  std::vector<std::string> aRow, aCol;     // their tile row and first k within the slice
  std::vector<std::vector<std::string>> b; // per gate: W's 4-element chunks (f32 or bf16)
  std::vector<std::string> bRow, bCol;     // [K, N]: (k, n of 4); [N, K]: (k of 4, n)
  std::string k0;
};

// Issues the global loads of the slice at `k0` (x's rows past M read its last row; W's
// columns past N its last column, or row: pastN); x's and an [N, K] W's chunks as
// stagedChunk places them.
Staged loadSlice(Kernel &k, const std::string &k0) {
  Writer &w = k.w;
  Staged s;
  s.k0 = k0;
  const int threads = k.shape.threads, cols = k.shape.tileCols;
  s.b.resize(k.gates);
  for (int i = 0; i < k.xChunks(); ++i) {
    auto [row, col] = stagedChunk(k, w.addConst(k.tid, i * threads), k.tileRows());
    std::string grow = w.min(w.add(k.bm, row), k.mLast);
    s.a.push_back(w.let("vector.load %x[" + w.add(w.add(w.mul(grow, "%xs"), k0), col) +
                        "] {alignment = 16} : memref<?xf32>, vector<4xf32>"));
    s.aRow.push_back(row);
    s.aCol.push_back(col);
  }
  const char *elem = k.bf16() ? "bf16" : "f32";
  for (int i = 0; i < k.wChunks(); ++i) {
    std::string idx = w.addConst(k.tid, i * threads);
    std::string kRow, n;
    if (k.nk()) {
      std::tie(n, kRow) = stagedChunk(k, idx, cols);
    } else {
      kRow = w.div(idx, w.index(cols / kChunk));
      n = w.mul(w.rem(idx, w.index(cols / kChunk)), w.index(kChunk));
    }
    s.bRow.push_back(kRow);
    s.bCol.push_back(n);
    // [K, N] past N only where N is a multiple of 64: the last 4 columns' load stays aligned.
    std::string gn = w.add(k.bn, n);
    if (k.pastN())
      gn = w.min(gn, w.index(k.nk() ? k.spec.N - 1 : k.spec.N - kChunk));
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
// (the prologue) and transposed, W widened (bf16) and, from [N, K], transposed.
void storeSlice(Kernel &k, const Staged &s, const std::string &aRow0, const std::string &bRow0) {
  Writer &w = k.w;
  for (size_t i = 0; i < s.a.size(); ++i) {
    std::string v = s.a[i];
    if (k.norm()) {
      std::string col = w.add(s.k0, s.aCol[i]);
      v = w.let("arith.mulf " + w.let("arith.subf " + v + ", " + k.mean + " : vector<4xf32>") +
                ", " + k.rstd + " : vector<4xf32>");
      for (auto [has, buffer, op] : {std::tuple{k.spec.normGamma, "%gamma", "arith.mulf"},
                                     std::tuple{k.spec.normBeta, "%beta", "arith.addf"}})
        if (has)
          v = w.let(std::string(op) + " " + v + ", " +
                    w.let("vector.load " + std::string(buffer) + "[" + col +
                          "] {alignment = 16} : memref<?xf32>, vector<4xf32>") +
                    " : vector<4xf32>");
    }
    k.sharedStoreColumn(v, "%as", k.aTile(), w.add(s.aCol[i], aRow0), s.aRow[i]);
  }
  for (int gate = 0; gate < k.gates; ++gate) {
    const char *tile = gate ? "%bs1" : "%bs0";
    for (size_t i = 0; i < s.b[gate].size(); ++i) {
      std::string v = s.b[gate][i];
      if (k.bf16())
        v = w.let("arith.extf " + v + " : vector<4xbf16> to vector<4xf32>");
      std::string row = w.add(s.bRow[i], bRow0);
      if (k.nk())
        k.sharedStoreColumn(v, tile, k.bTile(), row, s.bCol[i]);
      else
        k.sharedStore(v, tile, k.bTile(), row, s.bCol[i], kChunk);
    }
  }
}

// The products of the slice in the buffer whose first rows are `aRow0` / `bRow0`: per k, the
// thread's rows of x and columns of W (16-byte loads), then rows × columns FMAs a gate, a
// broadcast x value times 4 columns each. `acc[k.sum(gate, i, j)]`: row i, column block j.
void multiplySlice(Kernel &k, std::vector<std::string> &acc, const std::string &aRow0,
                   const std::string &bRow0) {
  Writer &w = k.w;
  std::vector<std::string> rowBlock, colBlock;
  for (int i = 0; i < k.rows(); i += kChunk)
    rowBlock.push_back(k.rowAt(i));
  for (int j = 0; j < k.shape.colBlocks(); ++j)
    colBlock.push_back(k.colAt(j));
  for (int kk = 0; kk < k.sliceK; ++kk) {
    std::string aRow = w.addConst(aRow0, kk), bRow = w.addConst(bRow0, kk);
    std::vector<std::string> a, b;
    for (const std::string &row : rowBlock)
      a.push_back(k.sharedLoad("%as", k.aTile(), aRow, row));
    for (int gate = 0; gate < k.gates; ++gate)
      for (const std::string &col : colBlock)
        b.push_back(k.sharedLoad(gate ? "%bs1" : "%bs0", k.bTile(), bRow, col));
    for (int i = 0; i < k.rows(); ++i) {
      std::string x = w.let("vector.broadcast " + k.extract(a[i / kChunk], i % kChunk, kChunk) +
                            " : f32 to vector<4xf32>");
      for (int gate = 0; gate < k.gates; ++gate)
        for (int j = 0; j < k.shape.colBlocks(); ++j) {
          std::string &sum = acc[k.sum(gate, i, j)];
          sum = w.let("vector.fma " + x + ", " + b[gate * k.shape.colBlocks() + j] + ", " + sum +
                      " : vector<4xf32>");
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
  std::string rows = w.index(k.sliceK); // both tiles are [k][·]
  multiplySlice(k, acc, w.mul(buffer, rows), w.mul(buffer, rows));
  storeSlice(k, staged, w.mul(next, rows), w.mul(next, rows));
  w.line("gpu.barrier");
  std::string yield;
  for (size_t a = 0; a < acc.size(); ++a)
    yield += (a ? ", " : "") + acc[a];
  w.line("scf.yield " + yield + " : " + types);
  w.line("}");
  for (size_t a = 0; a < acc.size(); ++a)
    acc[a] = loop + "#" + std::to_string(a);
}

// The thread's sums through the epilogue into out, two columns at a time; or (`partialsRow0`:
// the split's first row of the [S][M][cols] partials, z · M) raw, each gate's columns where
// its weights' are.
void storeTile(Kernel &k, const std::vector<std::string> &acc,
               const std::string &partialsRow0 = "") {
  Writer &w = k.w;
  for (int i = 0; i < k.rows(); ++i) {
    std::string row = w.add(k.bm, k.rowAt(i));
    w.line("scf.if " + w.let("arith.cmpi ult, " + row + ", %m : index") + " {");
    for (int j = 0; j < k.shape.colBlocks(); ++j)
      for (int pair = 0; pair < kChunk / 2; ++pair) {
        std::string col = w.add(k.bn, w.addConst(k.colAt(j), 2 * pair));
        auto sum = [&](int gate) {
          const std::string &v = acc[k.sum(gate, i, j)];
          return w.let("vector.from_elements " + k.extract(v, 2 * pair, kChunk) + ", " +
                       k.extract(v, 2 * pair + 1, kChunk) + " : vector<2xf32>");
        };
        storeSumPair(w, k.spec, k.pastN(), row, col, sum, partialsRow0);
      }
    w.line("}");
  }
}

// One gpu.func: `<name>_fma` (64-row tiles), `<name>_fma32` (32), `<name>_fma128` (128 × 128)
// or, with `split`, `<name>_fma32_splitk` (block z's K range, raw sums into the partials, %out).
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
  std::vector<std::string> acc(k.sums());
  kLoop(k, acc, lo, hi);
  storeTile(k, acc, partialsRow0);

  std::string workgroup, body = w.text;
  const std::vector<SharedView> tiles = k.sharedTiles();
  if (k.shape.wide()) {
    body = dynamicSharedViews(tiles) + body;
  } else {
    for (const SharedView &tile : tiles)
      workgroup += (workgroup.empty() ? "" : ", ") + sharedTile("%" + tile.name, tile.type);
  }
  const std::string suffix = split                     ? "_fma32_splitk"
                             : tileRows == kTcTileRows ? "_fma"
                                                       : "_fma" + std::to_string(tileRows);
  const bool crowded = k.shape.wide() && (k.gates == 2 || (!k.nk() && k.pastN()));
  const int registers = crowded ? kMaxRegistersCrowded : kMaxRegisters;
  return gemmKernelFunction(spec.name + suffix, spec.bf16Weights ? "bf16" : "f32", split,
                            k.norm() ? "%gamma: memref<?xf32>, %beta: memref<?xf32>, " : "",
                            workgroup, body, registers, k.shape.threads);
}

} // namespace

int64_t fmaWideTileShared(const GemmKernelSpec &spec) {
  if (!tensorCoreWideTiles(spec, GpuMatmul::Fp32))
    return 0;
  Writer w;
  int64_t bytes = 0;
  for (const SharedView &tile : kernelOf(w, spec, kTcWideTile).sharedTiles())
    bytes += tile.bytes;
  return bytes;
}

std::string fmaGemmSource(const GemmKernelSpec &spec) {
  std::string more = kernelFunction(spec, kTcShortTileRows);
  if (fmaWideTileShared(spec))
    more += kernelFunction(spec, kTcWideTile);
  if (tensorCoreSplitRows(spec) > 0)
    more += kernelFunction(spec, kTcShortTileRows, /*split=*/true) +
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
  return llvm::formatv("// {0}: out[M, {1}] = x[M, {2}] · W (W {3}, fp32 FMA, float32 sums{4}){7}\n"
                       "module attributes {{gpu.container_module} {{\n"
                       "  gpu.module @{0}_fma {{\n{5}{6}  }\n}\n",
                       spec.name, spec.N, spec.K, spec.transposeWeight ? "[N, K]" : "[K, N]", norm,
                       kernelFunction(spec, kTcTileRows), more,
                       tensorCoreGemmDynamicSharedText(spec, GpuMatmul::Fp32))
      .str();
}

} // namespace mlir::xf
