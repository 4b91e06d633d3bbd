//===- AmxBf16Gemm.cpp - bf16 GEMMs on AMX tiles --------------------------===//
//
// xfrt/AmxBf16Gemm.h. A call rounds x to bfloat16 once ([rows rounded up to 32][K rounded up
// to 32], zeros past both), then runs tasks of consecutive column units: a unit is two B
// tiles — 32 output columns, or for SwiGLU the gate and up sums of 16 — read in place from the
// packed weight, and every block of 32 rows of x runs over it: per block of 32 K, two A tiles
// (16 rows each) and the two B tiles into four C tiles by four tdpbf16ps, then the C tiles are
// stored as one [32][32] panel of sums and GemmEpilogue finishes them. Tiles 0-3 are C, 4-5 A,
// 6-7 B. K's last block reads its B rows from a zero-padded copy when the packed rows end
// inside it (a 16-row load would read the next tile's pairs, or past the buffer), and a B tile
// wholly past N reads zeros.
//
// Not yet run on an AMX CPU (none was available): the tests check this code with the tile
// operations written out in C++ (EmulatedTiles) and run the instructions where AMX is usable.
//
//===----------------------------------------------------------------------===//
#include "xfrt/AmxBf16Gemm.h"
#include "GemmEpilogue.h"
#include "KernelTasks.h"
#include "xfrt/Amx.h"
#include "xfrt/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define XF_AMX_BF16_X86 1
#include <immintrin.h>
#endif

namespace xfrt {
namespace {

/// roundToBf16's bits: nearest even by integer arithmetic, as GemmAlgorithm.cpp's Halide
/// expression (bits + 0x7fff + lsb) >> 16, and every NaN as 0x7fc0.
inline uint16_t bf16Bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

} // namespace

uint16_t roundToBf16(float x) { return bf16Bits(x); }

namespace {

bool validCall(const float *x, int64_t rows, int64_t K, const uint16_t *weight, int64_t tileCols,
               int64_t N, int64_t epilogue, const float *out) {
  return x && weight && out && rows >= 0 && K > 0 && N > 0 && tileCols > 0 && tileCols % 16 == 0 &&
         epilogue >= 0 && epilogue <= int64_t(BlockEpilogue::SwiGlu);
}

#ifdef XF_AMX_BF16_X86
#define XF_TARGET_BF16_TILES                                                                       \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,amx-tile,amx-bf16")))

using gemm::kPanelCols;

constexpr int kTileRows = 16;            // rows of A and C tiles; pairs of K of a B tile
constexpr int kBlockK = 2 * kTileRows;   // K per tdpbf16ps: an A row of 64 bytes
constexpr int kRowBlock = 2 * kTileRows; // rows of x per step: A tiles 4 and 5
constexpr int64_t kTileRowBytes = 64;    // every tile's rows

/// AMX's tile operations written out in C++: tileloadd, tdpbf16ps as the SDM's pseudo-code
/// states it, tilestored. c[2i + j] = A tile i × B tile j.
struct EmulatedTiles {
  float c[4][kTileRows][16];
  uint16_t a[2][kTileRows][kBlockK];
  uint16_t b[2][kTileRows][kBlockK];

  void begin() {}
  void end() {}
  void zero() { std::memset(c, 0, sizeof c); }
  static void load(uint16_t (*tile)[kBlockK], const uint16_t *p, int64_t stride) {
    for (int r = 0; r < kTileRows; ++r)
      std::memcpy(tile[r], reinterpret_cast<const char *>(p) + r * stride, kTileRowBytes);
  }
  void loadA(int i, const uint16_t *p, int64_t stride) { load(a[i], p, stride); }
  void loadB(int j, const uint16_t *p, int64_t stride) { load(b[j], p, stride); }

  /// make_fp32 with DAZ: the bf16's bits as a float's upper half, denormals as zero.
  static float widen(uint16_t h) {
    uint32_t bits = uint32_t(h) << 16;
    if ((bits & 0x7f800000u) == 0)
      bits &= 0x80000000u;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  /// FTZ: a denormal result as zero of its sign.
  static float flush(float v) {
    return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.f, v) : v;
  }
  /// tdpbf16ps c += a·b: per output, the even and the odd products of the 16 pairs each in
  /// its own float32 chain of FMAs (round to nearest even), then c + (even + odd).
  static void multiply(float (*c)[16], const uint16_t (*a)[kBlockK], const uint16_t (*b)[kBlockK]) {
    for (int m = 0; m < kTileRows; ++m)
      for (int n = 0; n < 16; ++n) {
        float even = 0.f, odd = 0.f;
        for (int k = 0; k < kTileRows; ++k) {
          even = flush(std::fma(widen(a[m][2 * k]), widen(b[k][2 * n]), even));
          odd = flush(std::fma(widen(a[m][2 * k + 1]), widen(b[k][2 * n + 1]), odd));
        }
        c[m][n] = flush(c[m][n] + flush(even + odd));
      }
  }
  void multiply() {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        multiply(c[2 * i + j], a[i], b[j]);
  }
  void store(float (*sums)[kPanelCols]) {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int r = 0; r < kTileRows; ++r)
          std::memcpy(sums[kTileRows * i + r] + 16 * j, c[2 * i + j][r], kTileRowBytes);
  }
};

/// The instructions (tile numbers are immediates).
struct AmxTiles {
  void begin() {
    AmxTileConfig config;
    for (int t = 0; t < 8; ++t)
      config.tile(t, kTileRows, kTileRowBytes);
    amxLoadTileConfig(config);
  }
  void end() { amxReleaseTiles(); }
  XF_TARGET_BF16_TILES void zero() { _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3); }
  XF_TARGET_BF16_TILES void loadA(int i, const uint16_t *p, int64_t stride) {
    if (i == 0)
      _tile_loadd(4, p, stride);
    else
      _tile_loadd(5, p, stride);
  }
  XF_TARGET_BF16_TILES void loadB(int j, const uint16_t *p, int64_t stride) {
    if (j == 0)
      _tile_loadd(6, p, stride);
    else
      _tile_loadd(7, p, stride);
  }
  XF_TARGET_BF16_TILES void multiply() {
    _tile_dpbf16ps(0, 4, 6), _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6), _tile_dpbf16ps(3, 5, 7);
  }
  XF_TARGET_BF16_TILES void store(float (*sums)[kPanelCols]) {
    _tile_stored(0, sums[0], kPanelCols * 4), _tile_stored(1, sums[0] + 16, kPanelCols * 4);
    _tile_stored(2, sums[kTileRows], kPanelCols * 4);
    _tile_stored(3, sums[kTileRows] + 16, kPanelCols * 4);
  }
};

/// B rows of zeros: a B tile wholly past N.
alignas(64) const uint16_t kZeroTile[kTileRows][kBlockK] = {};

struct Bf16Call {
  int64_t rows, K, N, tileCols;
  int64_t pairs;  // rows of the packed weight: ⌈K/2⌉
  int64_t blocks; // of 32 K (16 pairs)
  int64_t xCols;  // x̂'s row length: 32·blocks
  const uint16_t *xb, *weight;
  bool gated;
  int64_t unitCols, units, unitsPerTask;
  gemm::Epilogue epilogue;
};

/// The B tile of output columns [col, +16): `half` 0 the columns (SwiGLU: the gate's), 1 the
/// up columns of SwiGLU; rows (pairs of K) 4·tileCols bytes apart.
const uint16_t *bTileOf(const Bf16Call &c, int64_t col, int half) {
  const int64_t nt = col / c.tileCols, nj = col % c.tileCols;
  const int64_t stored = c.gated ? 2 * nt + half : nt;
  return c.weight + (stored * c.pairs * c.tileCols + nj) * 2;
}

/// Output columns [u·unitCols, +unitCols): every block of 32 rows over the unit's B tiles.
template <class Tiles>
XF_TARGET_BF16_TILES void runUnit(const Bf16Call &c, Tiles &tiles, int64_t u) {
  const int64_t n0 = u * c.unitCols;
  const int count = int(std::min(c.unitCols, c.N - n0));
  const uint16_t *b[2] = {bTileOf(c, n0, 0), nullptr};
  if (c.gated)
    b[1] = bTileOf(c, n0, 1);
  else if (n0 + 16 < c.N)
    b[1] = bTileOf(c, n0 + 16, 0);
  const int64_t stride = 4 * c.tileCols;
  // K's last block from zero-padded copies where the packed pairs end inside it.
  const int64_t lastPairs = c.pairs - (c.blocks - 1) * kTileRows;
  alignas(64) uint16_t tail[2][kTileRows][kBlockK] = {};
  for (int j = 0; j < 2 && lastPairs < kTileRows; ++j)
    for (int64_t r = 0; b[j] && r < lastPairs; ++r)
      std::memcpy(tail[j][r], b[j] + ((c.blocks - 1) * kTileRows + r) * 2 * c.tileCols,
                  kTileRowBytes);
  alignas(64) float sums[kRowBlock][kPanelCols];
  for (int64_t m0 = 0; m0 < c.rows; m0 += kRowBlock) {
    tiles.zero();
    for (int64_t kb = 0; kb < c.blocks; ++kb) {
      const uint16_t *xa = c.xb + m0 * c.xCols + kb * kBlockK;
      tiles.loadA(0, xa, 2 * c.xCols);
      tiles.loadA(1, xa + kTileRows * c.xCols, 2 * c.xCols);
      const bool tailBlock = kb + 1 == c.blocks && lastPairs < kTileRows;
      for (int j = 0; j < 2; ++j) {
        if (!b[j])
          tiles.loadB(j, kZeroTile[0], kTileRowBytes);
        else if (tailBlock)
          tiles.loadB(j, tail[j][0], kTileRowBytes);
        else
          tiles.loadB(j, b[j] + kb * kTileRows * 2 * c.tileCols, stride);
      }
      tiles.multiply();
    }
    tiles.store(sums);
    gemm::finishPanelRows(c.epilogue, m0, int(std::min<int64_t>(kRowBlock, c.rows - m0)), n0, count,
                          sums);
  }
}

/// Units [task·unitsPerTask, +unitsPerTask) on one thread's tiles.
template <class Tiles> int runUnitsTask(void *, int task, uint8_t *closure) {
  const Bf16Call &c = *reinterpret_cast<const Bf16Call *>(closure);
  Tiles tiles;
  tiles.begin();
  const int64_t begin = task * c.unitsPerTask, end = std::min(c.units, begin + c.unitsPerTask);
  for (int64_t u = begin; u < end; ++u)
    runUnit(c, tiles, u);
  tiles.end();
  return 0;
}

/// x̂: rows [task·32, +32) of x rounded to bf16, zeros past K and past the last row.
struct RoundCall {
  const float *x;
  int64_t xStride, rows, K, xCols;
  uint16_t *xb;
};

__attribute__((target("avx2,fma,f16c,avx512f,avx512bw"))) int roundTask(void *, int task,
                                                                        uint8_t *closure) {
  const RoundCall &c = *reinterpret_cast<const RoundCall *>(closure);
  for (int64_t m = task * int64_t(kRowBlock); m < (task + 1) * int64_t(kRowBlock); ++m) {
    uint16_t *to = c.xb + m * c.xCols;
    int64_t k = 0;
    if (m < c.rows)
      for (const float *from = c.x + m * c.xStride; k < c.K; ++k)
        to[k] = bf16Bits(from[k]);
    std::memset(to + k, 0, size_t(c.xCols - k) * 2);
  }
  return 0;
}
#endif

} // namespace

int32_t amxBf16Gemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                    const uint16_t *packedWeight, int64_t tileCols, int64_t N, const float *bias,
                    const float *residual, int64_t residualStride, int64_t epilogue, float *out,
                    int64_t outStride, Bf16GemmTiles tiles) {
  if (!validCall(x, rows, K, packedWeight, tileCols, N, epilogue, out))
    return -1;
#ifdef XF_AMX_BF16_X86
  if (tiles == Bf16GemmTiles::Amx ? !amxBf16Usable() : !__builtin_cpu_supports("avx512bw"))
    return 1; // the caller's Halide kernel takes it
  if (rows == 0)
    return 0;
  Bf16Call c{};
  c.rows = rows, c.K = K, c.N = N, c.tileCols = tileCols;
  c.pairs = (K + 1) / 2, c.blocks = (K + kBlockK - 1) / kBlockK, c.xCols = c.blocks * kBlockK;
  c.weight = packedWeight;
  c.gated = epilogue == int64_t(BlockEpilogue::SwiGlu);
  c.unitCols = c.gated ? 16 : kPanelCols;
  c.units = (N + c.unitCols - 1) / c.unitCols;
  c.epilogue = {bias,
                residual,
                N,
                residualStride,
                outStride,
                BlockEpilogue(epilogue),
                /*vector512=*/true,
                out};
  // x̂ once per call, in parallel tasks of 32 rows (the rows past the last are zeros: the
  // A tiles of the last block read them, their sums are never stored).
  const int64_t rowBlocks = (rows + kRowBlock - 1) / kRowBlock;
  thread_local std::vector<uint16_t> xb;
  xb.resize(size_t(rowBlocks * kRowBlock * c.xCols));
  RoundCall round{x, xStride, rows, K, c.xCols, xb.data()};
  runTasks(roundTask, rowBlocks, &round);
  c.xb = xb.data();
  // One range of consecutive units per kernel thread.
  const int64_t tasks = std::min<int64_t>(c.units, kernelThreads());
  c.unitsPerTask = (c.units + tasks - 1) / tasks;
  auto task = tiles == Bf16GemmTiles::Amx ? runUnitsTask<AmxTiles> : runUnitsTask<EmulatedTiles>;
  return runTasks(task, (c.units + c.unitsPerTask - 1) / c.unitsPerTask, &c);
#else
  (void)xStride, (void)bias, (void)residual, (void)residualStride, (void)outStride, (void)tiles;
  return 1;
#endif
}

} // namespace xfrt

extern "C" int32_t xfrt_amx_bf16_gemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                                      const uint16_t *packedWeight, int64_t tileCols, int64_t N,
                                      const float *bias, const float *residual,
                                      int64_t residualStride, int64_t epilogue, float *out,
                                      int64_t outStride) {
  using namespace xfrt;
  // The tiles where this process may use them; their C++ form where XF_AMX=emulate asks.
  const Bf16GemmTiles tiles =
      !amxBf16Usable() && amxEmulated() ? Bf16GemmTiles::AmxEmulated : Bf16GemmTiles::Amx;
  return amxBf16Gemm(x, xStride, rows, K, packedWeight, tileCols, N, bias, residual, residualStride,
                     epilogue, out, outStride, tiles);
}
