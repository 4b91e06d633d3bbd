//===- TensorCoreGemmSource.cpp - the tensor-core GEMM kernel as MLIR -----===//
//
// out[M, N] = act(x[M, K] · W + bias) + residual on tensor cores, as a gpu.module of two
// gpu.funcs (docs/gpu.md, "Tensor cores"). A block of kTcThreads threads (4 warps, 2 × 2)
// computes a 64 × 64 tile of out (`<name>_tc`); each warp 32 × 32, as 2 × 4 mma.sync tiles of
// 16 × 8 (m16n8k8 tf32, or m16n8k16 bf16), accumulating in float32 registers over all of K.
// `<name>_tc32` is the same for 32 × 64 tiles, its 4 warps side by side (32 × 16 each);
// `<name>_tc128` for 128 × 128 with 8 warps (4 × 2 of 32 × 64; SwiGLU 128 × 64 of out, both
// gates' 128 columns of W, warps of 32 × 32 a gate) in dynamic shared memory.
// Per slice of 32 along K the block copies x's slice [64, 32] and W's [32, 64] (per gate) into
// shared memory with 16-byte loads, rounding to tf32 or bf16 as it stores; then each warp
// reads its A fragments with `ldmatrix` (x4) and its B fragments with `ldmatrix` (x2) where W
// is stored [N, K] (nn.Linear: the tile is kept [n, k]), `ldmatrix.trans` for [K, N] bf16,
// or two 4-byte loads for [K, N] tf32 (ldmatrix moves 16-bit pairs: a [k, n] tile of 32-bit
// elements would need a transpose of 32-bit elements), and runs the mma.sync. Shared rows are
// padded (36 floats, 40 / 72 bf16, 72 floats) so a warp's fragment reads hit 32 distinct banks.
// Where two raw buffers of every tile fit in 48 KiB (f32 weights; bf16 weights with bf16 products),
// the slices are double-buffered instead: cp.async (nvgpu.device_async_copy) copies the raw bytes
// of the next slice into the other buffer while this one is multiplied, and x's fragments (and W's
// from f32) are rounded in registers (cp.async cannot convert as it stores): tf32 after ldmatrix,
// bf16 pairs built from 8-byte (or two 4-byte) loads; bf16 weights' by ldmatrix as they are.
// The epilogue adds bias, applies the activation (SwiGLU: silu(gate) · up) and the residual as
// the accumulators are stored, two columns at a time; rows past M read x's last row and are
// not stored.
//
// The text is built here and parsed (TensorCoreGemmLowering.cpp): the kernel's structure reads
// as the IR it is, and `xfc --emit=mlir-gpu` prints exactly this.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/TensorCoreGemm.h"

#include "TensorCoreGemmEpilogue.h"
#include "TensorCoreKernelText.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <cmath>
#include <functional>

namespace mlir::xf {

using namespace tc;

namespace {

// Names of the kernel's memref types and the fragment shapes of one precision.
struct Types {
  bool bf16;          // bf16 mma (else tf32)
  bool nk;            // W stored [N, K] (nn.Linear): its tile is kept [n, k] like x's
  const char *elem;   // shared-memory element type (x's tile; W's too unless bElem)
  const char *weight; // W's stored element type
  int aStride, bStride;
  int tileRows = kTcTileRows; // 64: warps 2 × 2 of 32 × 32; kTcShortTileRows: 1 × 4 of 32 × 16;
                              // kTcWideTile: 4 × 2 of 32 × 64 (SwiGLU 32 × 32)
  int tileCols = kTcTileCols; // kTcWideTile for the wide tiles but SwiGLU's
  int threads = kTcThreads;
  bool async = false; // double-buffered by cp.async: tiles of raw f32, rounded in registers
  const char *bElem = nullptr; // W's tile's element type where it differs (raw bf16 weights)
  int bNkStride = 0;           // W's [n, k] tile's row stride where it differs from x's
  int buffers() const { return async ? 2 : 1; }
  const char *bElemType() const { return bElem ? bElem : elem; }
  int bRowStride() const { return nk ? (bNkStride ? bNkStride : aStride) : bStride; }
  // Elements of W a copy moves: 16 bytes with cp.async (8 bf16), else 4.
  int bPerCopy() const { return async && std::string(weight) == "bf16" ? 8 : 4; }
  int bRows() const { return nk ? tileCols : kTcSliceK; } // rows of one buffer of a W tile
  int warpsN() const { return tileRows == kTcShortTileRows ? 4 : 2; }
  int jTiles() const { return tileCols / warpsN() / 8; }     // 8-column mma tiles of a warp
  int accumulators() const { return 2 * jTiles(); }          // per gate
  std::string aTile() const {
    return llvm::formatv("memref<{0}x{1}x{2}, #gpu.address_space<workgroup>>",
                         buffers() * tileRows, aStride, elem);
  }
  std::string bTile() const {
    return llvm::formatv("memref<{0}x{1}x{2}, #gpu.address_space<workgroup>>",
                         buffers() * bRows(), bRowStride(), bElemType());
  }
  const char *aFrag() const { return bf16 ? "vector<4x2xbf16>" : "vector<4x1xf32>"; }
  const char *bFrag() const { return bf16 ? "vector<2x2xbf16>" : "vector<2x1xf32>"; }
  int kStep() const { return bf16 ? 16 : 8; }
  // The last column tile reaches past N where N is a multiple of 64 but not of the wide
  // tiles' 128: W's columns (rows) past N are read clamped and their pairs never stored.
  bool pastN(const GemmKernelSpec &spec) const { return spec.N % tileCols != 0; }
  static int bytesOf(const char *type) { return std::string(type) == "bf16" ? 2 : 4; }
  // Shared bytes of x's tile and of one gate's W tile, every buffer.
  int64_t aBytes() const { return int64_t(bytesOf(elem)) * buffers() * tileRows * aStride; }
  int64_t bBytes() const {
    return int64_t(bytesOf(bElemType())) * buffers() * bRows() * bRowStride();
  }
};

Types typesOf(const GemmKernelSpec &spec, GpuMatmul precision, int tileRows = kTcTileRows) {
  bool bf16 = precision == GpuMatmul::Bf16;
  const int gates = spec.gates();
  // The wide tiles: 128 columns of W a block, i.e. 64 of out for SwiGLU's two gates.
  const bool wide = tileRows == kTcWideTile;
  const int cols = wide && gates == 1 ? kTcWideTile : kTcTileCols;
  Types ty{bf16,
           spec.transposeWeight,
           bf16 ? "bf16" : "f32",
           spec.bf16Weights ? "bf16" : "f32",
           bf16 ? 40 : 36,
           cols + 8,
           tileRows,
           cols,
           wide ? kTcWideThreads : kTcThreads};
  // cp.async copies bytes as they are: x's tile then holds raw f32, rounded to tf32 or bf16 in
  // registers, and so does W's from f32 weights; bf16 weights (bf16 products only) are copied
  // as they are, 8 to a copy, and read by ldmatrix as the single-buffered tile is. Where two
  // buffers of every tile fit the static limit (not the 64-row tf32 SwiGLU kernel, 2 × 27 KiB,
  // nor bf16's SwiGLU kernels from f32 weights). A raw f32 [K, N] tile read as bf16 pairs of k
  // (two 4-byte loads a register) is padded to 68 floats a row: rows 2t and 2t + 1 of column g
  // then fall in distinct banks. tf32 from bf16 weights stays single-buffered (W widened as
  // staged: its [N, K] fragments by ldmatrix need 32-bit elements). The wide tiles are always
  // double-buffered, in dynamic shared memory (tensorCoreWideTileShared).
  if (spec.bf16Weights && !bf16)
    return ty;
  Types raw = ty;
  raw.async = true;
  raw.elem = "f32";
  if (spec.bf16Weights) { // W's tile as the single-buffered kernel keeps it: [k][72] or [n][40]
    raw.bElem = "bf16";
    raw.bNkStride = ty.aStride;
  } else if (bf16 && !raw.nk) {
    raw.bStride = cols + 4;
  }
  return wide || raw.aBytes() + gates * raw.bBytes() <= kStaticSharedBytes ? raw : ty;
}

// .maxnreg: without it ptxas for sm_90 held the 32-row GELU kernel to 56 registers and spilled
// (12 bytes); 128 lets every variant keep its accumulators (128 × 128 threads: 4 blocks a SM).
constexpr int kMaxRegisters = 128;

// The per-thread indices every stage uses (g = lane / 4, t = lane % 4 as in the PTX ISA's
// fragment layouts; lrow/lhalf and l8/lpair address ldmatrix's x4 and x2 rows).
struct Lanes {
  std::string tid, m, g, t, lrow, lhalf, l8, lpair, wm, wn, bm, bn, mLast, zero;
};

Lanes laneIndices(Writer &w, const Types &ty) {
  Lanes l;
  l.tid = w.let("gpu.thread_id x");
  std::string bx = w.let("gpu.block_id x"), by = w.let("gpu.block_id y");
  std::string c2 = w.index(2), c4 = w.index(4), c16 = w.index(16), c32 = w.index(32);
  std::string warp = w.let("arith.divui " + l.tid + ", " + c32 + " : index");
  std::string lane = w.let("arith.remui " + l.tid + ", " + c32 + " : index");
  l.g = w.let("arith.divui " + lane + ", " + c4 + " : index");
  l.t = w.let("arith.remui " + lane + ", " + c4 + " : index");
  l.lrow = w.let("arith.remui " + lane + ", " + c16 + " : index");
  l.lhalf = w.let("arith.divui " + lane + ", " + c16 + " : index");
  std::string c8 = w.index(8);
  l.l8 = w.let("arith.remui " + lane + ", " + c8 + " : index");
  l.lpair = w.let("arith.remui " + w.let("arith.divui " + lane + ", " + c8 + " : index") + ", " +
                  c2 + " : index");
  std::string warpsN = w.index(ty.warpsN());
  l.wm = w.mul(w.let("arith.divui " + warp + ", " + warpsN + " : index"), c32);
  l.wn = w.mul(w.let("arith.remui " + warp + ", " + warpsN + " : index"),
               w.index(ty.tileCols / ty.warpsN()));
  l.bm = w.mul(by, w.index(ty.tileRows));
  l.bn = w.mul(bx, w.index(ty.tileCols));
  l.mLast = w.let("arith.subi %m, " + w.index(1) + " : index");
  l.zero = w.let("arith.constant dense<0.0> : " + std::string(kAcc));
  return l;
}

// Four elements of `from` (f32 or bf16) as the shared tile's element type.
std::string converted(Writer &w, const Types &ty, const std::string &v, const char *from) {
  bool fromBf16 = std::string(from) == "bf16";
  if (ty.bf16)
    return fromBf16 ? v : w.let("arith.truncf " + v + " : vector<4xf32> to vector<4xbf16>");
  return fromBf16 ? w.let("arith.extf " + v + " : vector<4xbf16> to vector<4xf32>")
                  : roundToTf32(w, v);
}

// a + b, or a where b is "" (the single buffer: no row offset).
std::string offset(Writer &w, const std::string &a, const std::string &b) {
  return b.empty() ? a : w.add(a, b);
}

// One K slice of x and of W (per gate) into shared memory, 4 elements per thread and copy:
// 16-byte loads (8-byte of bf16 weights) converted as they are stored, then a barrier; or
// (ty.async) cp.async copies of 16 raw bytes (4 f32, 8 bf16 weights) into the buffer whose
// first rows are `aRow0` / `bRow0`, all of each read unless `more` (an i1) is false: then
// none (zero fill, no global read, past the last slice). Returns the copies' tokens.
std::vector<std::string> copySlice(Writer &w, const GemmKernelSpec &spec, const Types &ty,
                                   const Lanes &l, const std::string &k0, int gates,
                                   const std::string &aRow0 = "", const std::string &bRow0 = "",
                                   const std::string &more = "") {
  std::vector<std::string> tokens;
  auto srcElements = [&](int n) {
    std::string all = w.index(n);
    return more.empty() ? all
                        : w.let("arith.select " + more + ", " + all + ", " + w.index(0) +
                                " : index");
  };
  std::string src4 = ty.async ? srcElements(4) : "";
  std::string srcW = ty.bPerCopy() == 4 ? src4 : srcElements(ty.bPerCopy());
  auto stage = [&](const std::string &src, const std::string &at, const char *from,
                   const std::string &tile, const std::string &tileType, const std::string &row,
                   const std::string &row0, const std::string &col) {
    std::string srcType = std::string("memref<?x") + from + ">";
    if (ty.async) {
      bool weight = src == "%w";
      tokens.push_back(w.let("nvgpu.device_async_copy " + src + "[" + at + "], " + tile + "[" +
                             w.add(row, row0) + ", " + col + "], " +
                             std::to_string(weight ? ty.bPerCopy() : 4) + ", " +
                             (weight ? srcW : src4) + " {bypassL1} : " + srcType + " to " +
                             tileType));
      return;
    }
    std::string v = w.let("vector.load " + src + "[" + at + "] {alignment = " +
                          (std::string(from) == "bf16" ? "8" : "16") + "} : " + srcType +
                          ", vector<4x" + from + ">");
    w.line("vector.store " + converted(w, ty, v, from) + ", " + tile + "[" + row + ", " + col +
           "] : " + tileType + ", vector<4x" + ty.elem + ">");
  };
  std::string c4 = w.index(4);
  for (int r = 0; r < ty.tileRows * kTcSliceK / 4 / ty.threads; ++r) {
    std::string idx = w.addConst(l.tid, r * ty.threads);
    std::string row = w.let("arith.divui " + idx + ", " + w.index(kTcSliceK / 4) + " : index");
    std::string col = w.mul(w.let("arith.remui " + idx + ", " + w.index(kTcSliceK / 4) + " : index"), c4);
    std::string grow = w.let("arith.minui " + w.add(l.bm, row) + ", " + l.mLast + " : index");
    std::string at = w.add(w.add(w.mul(grow, "%xs"), k0), col);
    stage("%x", at, "f32", "%as", ty.aTile(), row, aRow0, col);
  }
  // [K, N]: rows of the tile are k (64 or 128 columns of n each); [N, K]: rows are n (32 of k).
  const int rowLength = ty.nk ? kTcSliceK : ty.tileCols, per = ty.bPerCopy();
  for (int gate = 0; gate < gates; ++gate)
    for (int r = 0; r < kTcSliceK * ty.tileCols / per / ty.threads; ++r) {
      std::string idx = w.addConst(l.tid, r * ty.threads);
      std::string row = w.let("arith.divui " + idx + ", " + w.index(rowLength / per) + " : index");
      std::string col = w.mul(
          w.let("arith.remui " + idx + ", " + w.index(rowLength / per) + " : index"), w.index(per));
      // Rows (columns) of W past N read its last row (columns): their outputs are never stored.
      // ([K, N]: N a multiple of 64, so the last 16-byte copy's columns stay aligned.)
      std::string n = w.add(l.bn, ty.nk ? row : col);
      if (ty.pastN(spec))
        n = w.min(n, w.index(ty.nk ? spec.N - 1 : spec.N - per));
      std::string at = ty.nk ? w.add(w.mul(w.addConst(n, gate * spec.N), "%ws"), w.add(k0, col))
                             : w.add(w.mul(w.add(k0, row), "%ws"), w.addConst(n, gate * spec.N));
      stage("%w", at, ty.weight, "%bs" + std::to_string(gate), ty.bTile(), row, bRow0, col);
    }
  if (!ty.async)
    w.line("gpu.barrier");
  return tokens;
}

// The warp's B fragment of gate `gate`, column tile j, at K offset kk within the slice.
std::string bFragment(Writer &w, const Types &ty, const Lanes &l, int gate, int j, int kk,
                      const std::string &row0) {
  std::string tile = "%bs" + std::to_string(gate);
  std::string col = w.addConst(l.wn, j * 8);
  if (ty.nk) {
    // The tile is Wᵀ's [n, k]: B's fragment is two 8 × 8 matrices of it (k and k + kStep / 2)
    // as ldmatrix gives them untransposed; lane L addresses row L % 8 of matrix (L / 8) % 2.
    std::string row = offset(w, w.add(col, l.l8), row0);
    std::string k = w.addConst(w.mul(l.lpair, w.index(ty.kStep() / 2)), kk);
    return w.let("nvgpu.ldmatrix " + tile + "[" + row + ", " + k +
                 "] {numTiles = 2 : i32, transpose = false} : " + ty.bTile() + " -> " +
                 ty.bFrag());
  }
  if (ty.bf16) {
    std::string row = offset(w, w.addConst(l.lrow, kk), row0);
    return w.let("nvgpu.ldmatrix " + tile + "[" + row + ", " + col +
                 "] {numTiles = 2 : i32, transpose = true} : " + ty.bTile() + " -> " + ty.bFrag());
  }
  // b0 = B[kk + t][col + g], b1 = B[kk + t + 4][col + g].
  std::string n = w.add(col, l.g), k = offset(w, w.addConst(l.t, kk), row0);
  std::string b0 = w.let("memref.load " + tile + "[" + k + ", " + n + "] : " + ty.bTile());
  std::string b1 =
      w.let("memref.load " + tile + "[" + w.addConst(k, 4) + ", " + n + "] : " + ty.bTile());
  return w.let("vector.from_elements " + b0 + ", " + b1 + " : " + ty.bFrag());
}

// A tf32 fragment as the mma reads it: raw f32 staged by cp.async is rounded here.
std::string rounded(Writer &w, const Types &ty, const std::string &frag, const char *shape) {
  return ty.async ? roundToTf32(w, frag, shape) : frag;
}


// A bf16 pair (one 32-bit register of an m16n8k16 fragment) from two f32 of a raw tile.
std::string bf16Pair(Writer &w, const std::string &pair) {
  std::string half = w.let("arith.truncf " + pair + " : vector<2xf32> to vector<2xbf16>");
  std::string word = w.let("vector.bitcast " + half + " : vector<2xbf16> to vector<1xi32>");
  return w.let("vector.extract " + word + "[0] : i32 from vector<1xi32>");
}

// The bf16 A fragment of rows wm + 16i.. from x's raw f32 tile (cp.async): pairs at rows g,
// g + 8 and k 2t, 2t + 8 (PTX ISA m16n8k16), each one 8-byte load (rows of 40 floats: a
// half-warp's loads hit 32 distinct banks).
std::vector<std::string> aPairsFromF32(Writer &w, const Types &ty, const Lanes &l, int i,
                                       int kk, const std::string &aRow0) {
  std::string row = w.add(w.addConst(w.add(l.wm, l.g), i * 16), aRow0);
  std::string k = w.addConst(w.mul(l.t, w.index(2)), kk);
  std::vector<std::string> regs;
  for (int half : {0, 8})
    for (int r : {0, 8})
      regs.push_back(bf16Pair(w, w.let("vector.load %as[" + w.addConst(row, r) + ", " +
                                       w.addConst(k, half) + "] {alignment = 8} : " +
                                       ty.aTile() + ", vector<2xf32>")));
  return regs;
}

// The bf16 B fragment of column tile j from W's raw f32 tile: pairs of k 2t, 2t + 1 and
// 2t + 8, 2t + 9 of column g; an 8-byte load where the tile is [n, k], two 4-byte loads
// where it is [k, n].
std::vector<std::string> bPairsFromF32(Writer &w, const Types &ty, const Lanes &l, int gate,
                                       int j, int kk, const std::string &bRow0) {
  std::string tile = "%bs" + std::to_string(gate);
  std::string n = w.add(w.addConst(l.wn, j * 8), l.g);
  std::string k = w.addConst(w.mul(l.t, w.index(2)), kk);
  std::vector<std::string> regs;
  for (int half : {0, 8}) {
    std::string kh = w.addConst(k, half);
    if (ty.nk) {
      regs.push_back(bf16Pair(w, w.let("vector.load " + tile + "[" + w.add(n, bRow0) + ", " +
                                       kh + "] {alignment = 8} : " + ty.bTile() +
                                       ", vector<2xf32>")));
      continue;
    }
    std::string row = w.add(kh, bRow0);
    std::string b0 = w.let("memref.load " + tile + "[" + row + ", " + n + "] : " + ty.bTile());
    std::string b1 =
        w.let("memref.load " + tile + "[" + w.addConst(row, 1) + ", " + n + "] : " + ty.bTile());
    regs.push_back(bf16Pair(w, w.let("vector.from_elements " + b0 + ", " + b1 +
                                     " : vector<2xf32>")));
  }
  return regs;
}

// The products of one K slice from raw f32 tiles on m16n8k16 bf16 (cp.async's bf16 variant).
void multiplySliceBf16FromF32(Writer &w, const Types &ty, const Lanes &l,
                              std::vector<std::string> &acc, int gates, const std::string &aRow0,
                              const std::string &bRow0) {
  for (int kk = 0; kk < kTcSliceK; kk += ty.kStep()) {
    std::vector<std::string> a[2] = {aPairsFromF32(w, ty, l, 0, kk, aRow0),
                                     aPairsFromF32(w, ty, l, 1, kk, aRow0)};
    for (int gate = 0; gate < gates; ++gate)
      for (int j = 0; j < ty.jTiles(); ++j) {
        std::vector<std::string> b =
            ty.bElem ? bf16Registers(w, bFragment(w, ty, l, gate, j, kk, bRow0), 2,
                                     "vector<2x2xbf16>") // raw bf16 weights: ldmatrix
                     : bPairsFromF32(w, ty, l, gate, j, kk, bRow0);
        for (int i = 0; i < 2; ++i) {
          std::string &c = acc[gate * ty.accumulators() + i * ty.jTiles() + j];
          c = bf16MmaRegisters(w, a[i], b, c);
        }
      }
  }
  w.line("gpu.barrier");
}

// The products of one K slice: per K step each warp's 2 A fragments × 4 B fragments per gate,
// from the buffer whose first rows are `aRow0` / `bRow0`.
void multiplySlice(Writer &w, const Types &ty, const Lanes &l, std::vector<std::string> &acc,
                   int gates, const std::string &aRow0, const std::string &bRow0) {
  if (ty.async && ty.bf16)
    return multiplySliceBf16FromF32(w, ty, l, acc, gates, aRow0, bRow0);
  const int kStep = ty.kStep();
  for (int kk = 0; kk < kTcSliceK; kk += kStep) {
    std::string a[2];
    std::string acol = w.addConst(w.mul(l.lhalf, w.index(kStep / 2)), kk);
    for (int i = 0; i < 2; ++i)
      a[i] = rounded(w, ty,
                     w.let("nvgpu.ldmatrix %as[" +
                           offset(w, w.addConst(w.add(l.wm, l.lrow), i * 16), aRow0) + ", " + acol +
                           "] {numTiles = 4 : i32, transpose = false} : " + ty.aTile() + " -> " +
                           ty.aFrag()),
                     "4x1");
    for (int gate = 0; gate < gates; ++gate)
      for (int j = 0; j < ty.jTiles(); ++j) {
        std::string b = rounded(w, ty, bFragment(w, ty, l, gate, j, kk, bRow0), "2x1");
        for (int i = 0; i < 2; ++i) {
          std::string &c = acc[gate * ty.accumulators() + i * ty.jTiles() + j];
          c = ty.bf16 ? bf16Mma(w, a[i], b, c)
                      : w.let(llvm::formatv("nvgpu.mma.sync({0}, {1}, {2}) {{mmaShape = [16, 8, "
                                            "8], tf32Enabled} : ({3}, {4}, {5}) -> {5}",
                                            a[i], b, c, ty.aFrag(), ty.bFrag(), kAcc)
                                  .str());
        }
      }
  }
  w.line("gpu.barrier");
}

// Stores the accumulators: rows g and g + 8 of each 16 × 8 tile, columns 2t and 2t + 1,
// through the epilogue into out; or (`partialsRow0`: the split's first row of the [S][M][cols]
// partials, z · M) raw, each gate's columns where its weights' are.
void storeTile(Writer &w, const GemmKernelSpec &spec, const Types &ty, const Lanes &l,
               const std::vector<std::string> &acc, int gates,
               const std::string &partialsRow0 = "") {
  std::string twoT = w.mul(l.t, w.index(2));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < ty.jTiles(); ++j)
      for (int h = 0; h < 2; ++h) {
        std::string row = w.addConst(w.add(w.add(l.bm, l.wm), l.g), i * 16 + h * 8);
        std::string col = w.addConst(w.add(w.add(l.bn, l.wn), twoT), j * 8);
        std::string inside = w.let("arith.cmpi ult, " + row + ", %m : index");
        w.line("scf.if " + inside + " {");
        auto sum = [&](int gate) {
          return w.let("vector.extract " + acc[gate * ty.accumulators() + i * ty.jTiles() + j] +
                       "[" + std::to_string(h) + "] : vector<2xf32> from " + kAcc);
        };
        storeSumPair(w, spec, ty.pastN(spec), row, col, sum, partialsRow0);
        w.line("}");
      }
}

} // namespace

namespace {

// The K range a block multiplies: all of K, or (split-K) its block z's [z · kz, min((z + 1) ·
// kz, K)) of the kernel argument %kz. `lo` is "" for 0 (the unsplit kernels' text unchanged).
struct KRange {
  std::string lo, hi;
};

// One iteration of the double-buffered K loop (ty.async): the slice at k0 is in buffer
// ((k0 − lo) / 32) % 2, its copies issued one iteration earlier. The next slice's copies go
// into the other buffer first (a group of their own; past the range they read nothing and zero
// fill), then the wait for all groups but that newest one and a barrier make this slice
// visible to every warp, the mma.syncs run on it while the next slice is in flight, and a last
// barrier keeps the next iteration's copies off this buffer until every warp has read it.
void pipelinedSlice(Writer &w, const GemmKernelSpec &spec, const Types &ty, const Lanes &l,
                    std::vector<std::string> &acc, int gates, const KRange &range) {
  std::string k0 = range.lo.empty() ? "%k0" : w.let("arith.subi %k0, " + range.lo + " : index");
  std::string slice = w.let("arith.divui " + k0 + ", " + w.index(kTcSliceK) + " : index");
  std::string buffer = w.let("arith.remui " + slice + ", " + w.index(2) + " : index");
  std::string next = w.let("arith.subi " + w.index(1) + ", " + buffer + " : index");
  std::string kNext = w.addConst("%k0", kTcSliceK);
  std::string more = w.let("arith.cmpi ult, " + kNext + ", " + range.hi + " : index");
  std::string kRead = w.let("arith.select " + more + ", " + kNext + ", %k0 : index");
  std::string aRows = w.index(ty.tileRows), bRows = w.index(ty.bRows());
  std::string group = w.let("nvgpu.device_async_create_group " +
                            joined(copySlice(w, spec, ty, l, kRead, gates, w.mul(next, aRows),
                                             w.mul(next, bRows), more)));
  w.line("nvgpu.device_async_wait " + group + " {numGroups = 1 : i32}");
  w.line("gpu.barrier");
  multiplySlice(w, ty, l, acc, gates, w.mul(buffer, aRows), w.mul(buffer, bRows));
}

// The K loop over `range` with the accumulators in iter_args; `acc` gets the loop's results.
void kLoop(Writer &w, const GemmKernelSpec &spec, const Types &ty, const Lanes &l,
           std::vector<std::string> &acc, int gates, const KRange &range) {
  std::string iterArgs, accTypes;
  for (size_t a = 0; a < acc.size(); ++a) {
    iterArgs += (a ? ", %acc" : "%acc") + std::to_string(a) + " = " + l.zero;
    accTypes += (a ? ", " : "") + std::string(kAcc);
    acc[a] = "%acc" + std::to_string(a);
  }
  std::string lo = range.lo.empty() ? w.index(0) : range.lo;
  // K arrives as an argument (always spec.K): a constant trip count let LLVM unroll short K
  // loops whole, and ptxas then held 160-220 registers for the 32-row kernel (gopher, K 256).
  std::string firstGroup;
  if (ty.async) // the range's first slice into buffer 0 before the loop
    firstGroup = w.let("nvgpu.device_async_create_group " +
                       joined(copySlice(w, spec, ty, l, lo, gates, w.index(0), w.index(0))));
  std::string loop = w.fresh();
  w.line(loop + ":" + std::to_string(acc.size()) + " = scf.for %k0 = " + lo + " to " +
         range.hi + " step " + w.index(kTcSliceK) + " iter_args(" + iterArgs + ") -> (" +
         accTypes + ") {");
  if (ty.async)
    pipelinedSlice(w, spec, ty, l, acc, gates, range);
  else {
    copySlice(w, spec, ty, l, "%k0", gates);
    multiplySlice(w, ty, l, acc, gates, "", "");
  }
  std::string yield;
  for (size_t a = 0; a < acc.size(); ++a)
    yield += (a ? ", " : "") + acc[a];
  w.line("scf.yield " + yield + " : " + accTypes);
  w.line("}");
  for (size_t a = 0; a < acc.size(); ++a)
    acc[a] = loop + "#" + std::to_string(a);
  if (ty.async) // the last group (zero fill past K) completes before the block's shared memory goes
    w.line("nvgpu.device_async_wait " + firstGroup + " {numGroups = 0 : i32}");
}

// One gpu.func: the kernel for tiles of `tileRows` rows, named `<name>_tc` (64),
// `<name>_tc32` (kTcShortTileRows) or `<name>_tc128` (kTcWideTile, 128 columns too); with
// `split`, `<name>_tc32_splitk`: block z's K range, raw sums into the [S][M][cols] partials
// (%out).
std::string kernelFunction(const GemmKernelSpec &spec, GpuMatmul precision, int tileRows,
                           bool split = false) {
  Types ty = typesOf(spec, precision, tileRows);
  const int gates = spec.gates();
  Writer w;
  Lanes l = laneIndices(w, ty);
  KRange range{"", "%k"};
  std::string partialsRow0;
  if (split) {
    std::string z = w.let("gpu.block_id z");
    range.lo = w.mul(z, "%kz");
    range.hi = w.min(w.add(range.lo, "%kz"), "%k");
    partialsRow0 = w.mul(z, "%m");
  }
  std::vector<std::string> acc(ty.accumulators() * gates);
  kLoop(w, spec, ty, l, acc, gates, range);
  storeTile(w, spec, ty, l, acc, gates, partialsRow0);

  std::string workgroup, body = w.text;
  if (tileRows == kTcWideTile) { // the wide tiles are views of dynamic shared memory
    std::vector<SharedView> views{{"as", ty.aTile(), ty.aBytes()}};
    for (int gate = 0; gate < gates; ++gate)
      views.push_back({"bs" + std::to_string(gate), ty.bTile(), ty.bBytes()});
    body = dynamicSharedViews(views) + body;
  } else {
    workgroup = sharedTile("%as", ty.aTile());
    for (int gate = 0; gate < gates; ++gate)
      workgroup += ", " + sharedTile("%bs" + std::to_string(gate), ty.bTile());
  }
  const std::string suffix = split                     ? "_tc32_splitk"
                             : tileRows == kTcTileRows ? "_tc"
                                                       : "_tc" + std::to_string(tileRows);
  return gemmKernelFunction(spec.name + suffix, ty.weight, split, "", workgroup, body,
                            kMaxRegisters, ty.threads);
}

} // namespace

int64_t tensorCoreWideTileShared(const GemmKernelSpec &spec, GpuMatmul precision) {
  if (precision == GpuMatmul::Fp32)
    return fmaWideTileShared(spec);
  if (!tensorCoreWideTiles(spec, precision))
    return 0;
  Types ty = typesOf(spec, precision, kTcWideTile);
  assert(ty.async && "wide tiles are cp.async's");
  return ty.aBytes() + spec.gates() * ty.bBytes();
}

std::string tensorCoreGemmDynamicSharedText(const GemmKernelSpec &spec, GpuMatmul precision,
                                            bool sm90a) {
  std::vector<std::string> functions;
  if (int64_t bytes = tensorCoreWideTileShared(spec, precision))
    functions.push_back(mlirGemmEntry(spec, precision) + "128 " + std::to_string(bytes) + " bytes");
  if (sm90a && wgmmaGemmWhyNot(spec, precision).empty())
    functions.push_back(wgmmaDynamicSharedEntry(spec));
  return functions.empty() ? "" : ", dynamic shared memory: " + joined(functions);
}

std::string tensorCoreGemmSource(const GemmKernelSpec &spec, GpuMatmul precision) {
  if (precision == GpuMatmul::Fp32)
    return fmaGemmSource(spec);
  Types ty = typesOf(spec, precision);
  std::string more = kernelFunction(spec, precision, kTcShortTileRows);
  if (tensorCoreWideTileShared(spec, precision))
    more += kernelFunction(spec, precision, kTcWideTile);
  if (tensorCoreSplitRows(spec) > 0)
    more += kernelFunction(spec, precision, kTcShortTileRows, /*split=*/true) +
            tc::splitReductionFunction(spec, spec.name + "_tc");
  const bool wgmma = wgmmaGemmWhyNot(spec, precision).empty();
  return llvm::formatv("// {0}: out[M, {1}] = x[M, {2}] · W (W {3}, {4} mma.sync, float32 "
                       "sums){7}\n{8}"
                       "module attributes {{gpu.container_module} {{\n"
                       "  gpu.module @{0}_tc {{\n{5}{6}  }\n{9}}\n",
                       spec.name, spec.N, spec.K, ty.nk ? "[N, K]" : "[K, N]",
                       gpuMatmulName(precision), kernelFunction(spec, precision, kTcTileRows), more,
                       tensorCoreGemmDynamicSharedText(spec, precision),
                       wgmma ? wgmmaAccumulatorAlias() : "", wgmma ? wgmmaGemmModule(spec) : "")
      .str();
}

} // namespace mlir::xf
