//===- BenchGemm.cpp - xf GEMM kernels beside OpenBLAS, oneDNN and peak ---===//
//
// Times xf's AOT-compiled Halide GEMMs (default schedules, GemmShapes.def;
// fp32 and bf16 weights) beside cblas_sgemm, cblas_sgemv (M = 1),
// cblas_sbgemm (bf16 weights *and* activations) and dnnl_sgemm when built
// with oneDNN, and the --q8-gemm-inputs path on Q4_1 blocks (libxfrt's
// xfrt_block_gemm on AVX-512 VNNI and, where usable, AMX int8 tiles;
// xfrt_block_gemv for decode), all on the same data, in interleaved rounds
// so that load from other processes hits every variant alike. The same run
// measures each path's ceiling: the fp32 FMA peak (an AVX-512 or AVX2 FMA
// loop on every thread), the bf16 dot-product peak (vdpbf16ps, where the CPU
// has AVX512-BF16), the int8 one (vpdpbusd, where it has AVX512-VNNI) and
// the read bandwidth. Decode shapes (M <= 4) rotate over enough copies of the
// weight (>= 96 MiB) that every call reads it from DRAM, as a decoding step
// through the whole model does, rather than from the 32 MiB L3; with
// --cold-weights every shape does (a prefill reads each GEMM's weight from
// DRAM once too: GPT-2 small's 0.5 GB do not stay in any L3).
// Prints a table and, with --json PATH, writes the numbers for run_gemm.py.
// Not a test: nothing here asserts a speed.
//
// Usage: xf-bench-gemm [--rounds N] [--threads N] [--json PATH] [--only SUBSTRING]
//                      [--cold-weights]
// Run with OPENBLAS_CORETYPE set to the CPU's real core type
// (run_gemm.py does) and OPENBLAS_NUM_THREADS = --threads.
//
//===----------------------------------------------------------------------===//

#include "HalideBuffer.h"
#include "xfrt/Amx.h"
#include "xfrt/AmxBf16Gemm.h"
#include "xfrt/BlockGemv.h"
#include "xfrt/GgmlType.h"
#include "xfrt/MachinePeak.h"

#include <cblas.h>
#include <dlfcn.h>
#ifdef XF_BENCH_HAVE_DNNL
#include <dnnl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

extern "C" int halide_set_num_threads(int);

#define X(NAME, M, K, N, T)                                                                        \
  extern "C" int xf_bench_##NAME(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);         \
  extern "C" int xf_bench_##NAME##_bf16(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);  \
  extern "C" int xf_bench_##NAME##_tuned(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *); \
  /* only when the tuned schedule packs its weight at load */                                      \
  extern "C" __attribute__((weak)) int xf_bench_##NAME##_tuned_pack(halide_buffer_t *,             \
                                                                    halide_buffer_t *);            \
  extern "C" int xf_bench_##NAME##_packed(halide_buffer_t *, halide_buffer_t *,                    \
                                          halide_buffer_t *);                                      \
  extern "C" int xf_bench_##NAME##_packed_pack(halide_buffer_t *, halide_buffer_t *);              \
  extern "C" int xf_bench_##NAME##_bf16_packed(halide_buffer_t *, halide_buffer_t *,               \
                                               halide_buffer_t *);                                 \
  extern "C" int xf_bench_##NAME##_bf16_packed_pack(halide_buffer_t *, halide_buffer_t *);
#include "GemmShapes.def"
#undef X

namespace {

using Clock = std::chrono::steady_clock;
using GemmKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);
using PackKernel = int (*)(halide_buffer_t *, halide_buffer_t *);

struct Shape {
  const char *name;
  int M, K, N;
  bool transposed;
  GemmKernel kernel, kernelBf16, kernelTuned;
  GemmKernel kernelPacked; // the weight packed at load (xfc's default) by packWeight
  PackKernel packWeight;
  GemmKernel kernelBf16Packed; // the bf16 one, its weight packed in pairs of K rows
  PackKernel packWeightBf16;
  PackKernel packWeightTuned; // null: the tuned kernel packs per call
};

const Shape kShapes[] = {
#define X(NAME, M, K, N, T)                                                                        \
  {#NAME,                                                                                          \
   M,                                                                                              \
   K,                                                                                              \
   N,                                                                                              \
   T,                                                                                              \
   xf_bench_##NAME,                                                                                \
   xf_bench_##NAME##_bf16,                                                                         \
   xf_bench_##NAME##_tuned,                                                                        \
   xf_bench_##NAME##_packed,                                                                       \
   xf_bench_##NAME##_packed_pack,                                                                  \
   xf_bench_##NAME##_bf16_packed,                                                                  \
   xf_bench_##NAME##_bf16_packed_pack,                                                             \
   xf_bench_##NAME##_tuned_pack},
#include "GemmShapes.def"
#undef X
};

/// Seconds per call: the mean over enough calls to fill `seconds`.
double timeCalls(const std::function<void()> &call, int reps) {
  auto start = Clock::now();
  for (int i = 0; i < reps; ++i)
    call();
  return std::chrono::duration<double>(Clock::now() - start).count() / reps;
}

struct Variant {
  std::string name;
  std::function<void()> call;
  double bytesPerCall = 0;     // weight (as that variant stores it) + x + out
  double maxDiff = -1;         // against the fp32 (bf16: the bf16-rounded) reference
  std::vector<double> seconds; // one per round
};

/// bfloat16 bits of `v`, rounded to nearest even.
uint16_t toBf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

float fromBf16(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// IEEE half bits of a normal float of magnitude in [2^-14, 65504] (the scales below).
uint16_t toHalf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  uint32_t sign = (b >> 16) & 0x8000, exponent = ((b >> 23) & 0xff) - 127 + 15;
  return uint16_t(sign | (exponent << 10) | ((b >> 13) & 0x3ff));
}

/// The --q8-gemm-inputs path on Q4_1 blocks (SmolLM2's matrices): a weight [N, K] of random
/// blocks (scale d and minimum m as fp16, 16 bytes of nibbles: 20 bytes a block of 32), timed
/// through xfrt_block_gemm's tiles (M > 4: AVX-512 VNNI, and AMX int8 where this process may use
/// it) or xfrt_block_gemv (M <= 4), rotating over enough copies (>= 96 MiB) that decode reads
/// them from DRAM (every shape with --cold-weights). maxDiff is against x·Wᵀ on the dequantized weight in float32: it includes the
/// rounding of x to Q8_0 (docs/correctness.md), so it is a check of sanity, not of bits.
struct BlockVariants {
  int M, K, N, copies;
  std::vector<std::vector<uint8_t>> weights;
  std::vector<float> x, out, ref;
  int next = 0; // the copy the next call reads: copy 0 first, which `ref` is of

  BlockVariants(int M, int K, int N, bool coldWeights, std::mt19937 &rng) : M(M), K(K), N(N) {
    const size_t bytes = size_t(N) * K / 32 * 20;
    copies = M <= 4 || coldWeights ? int(std::max<size_t>(1, (96u << 20) / bytes + 1)) : 1;
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.002f, 0.02f), dist(-1.f, 1.f);
    weights.assign(copies, std::vector<uint8_t>(bytes));
    for (auto &w : weights)
      for (size_t b = 0; b < bytes; b += 20) {
        uint16_t d = toHalf(scale(rng)), m = toHalf(-8 * scale(rng));
        std::memcpy(&w[b], &d, 2);
        std::memcpy(&w[b + 2], &m, 2);
        for (int i = 4; i < 20; ++i)
          w[b + i] = uint8_t(byte(rng));
      }
    x.resize(size_t(M) * K);
    for (float &v : x)
      v = dist(rng);
    out.resize(size_t(M) * N);
    std::vector<float> dequantized(size_t(N) * K);
    if (!xfrt::dequantizeToF32(xfrt::GgmlType::Q4_1, weights[0].data(), dequantized.size(),
                               dequantized.data()))
      std::abort();
    ref.resize(size_t(M) * N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.f, x.data(), K,
                dequantized.data(), K, 0.f, ref.data(), N);
  }
  double bytesPerCall() const { return double(weights[0].size()) + 4.0 * (M * K + M * N); }
  /// One call on the next copy; false where the path cannot run here.
  bool call(std::optional<xfrt::BlockGemmTiles> tiles) {
    const uint8_t *w = weights[next].data();
    next = (next + 1) % copies;
    constexpr int64_t kQ4_1 = 3;
    if (!tiles)
      return xfrt_block_gemv(x.data(), K, M, K, w, kQ4_1, N, nullptr, nullptr, 0, 0, out.data(), N,
                             int64_t(xfrt::BlockDotIsa::Avx512Vnni)) == 0;
    return xfrt::blockGemm(x.data(), K, M, K, w, kQ4_1, N, nullptr, nullptr, 0, 0, out.data(), N,
                           *tiles) == 0;
  }
  double maxDiff() const {
    double d = 0;
    for (size_t i = 0; i < out.size(); ++i)
      d = std::max(d, double(std::abs(out[i] - ref[i])));
    return d;
  }
};

/// The block variants of a shape (K a multiple of 32): xf_q8_q4_1 (VNNI, or the GEMV) and, where
/// this process may use AMX, xf_q8_q4_1_amx; a line on stdout says why one is left out.
void addBlockVariants(const char *shapeName, BlockVariants &blocks,
                      std::vector<Variant> &variants) {
  const bool gemv = blocks.M <= 4;
  std::optional<xfrt::BlockGemmTiles> vnni;
  if (!gemv)
    vnni = xfrt::BlockGemmTiles::Avx512Vnni;
  if (!blocks.call(vnni)) {
    std::printf("%s: xf_q8_q4_1 skipped: this CPU has no AVX-512 VNNI\n", shapeName);
    return;
  }
  variants.push_back({"xf_q8_q4_1", [&blocks, vnni] { blocks.call(vnni); }, blocks.bytesPerCall()});
  variants.back().maxDiff = blocks.maxDiff();
  if (gemv)
    return;
  if (!xfrt::amxInt8Usable()) {
    static bool said = false;
    if (!std::exchange(said, true))
      std::printf("xf_q8_q4_1_amx skipped: no AMX int8 tiles usable here\n");
    return;
  }
  blocks.next = 0;
  blocks.call(xfrt::BlockGemmTiles::Amx);
  variants.push_back({"xf_q8_q4_1_amx", [&blocks] { blocks.call(xfrt::BlockGemmTiles::Amx); },
                      blocks.bytesPerCall()});
  variants.back().maxDiff = blocks.maxDiff();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct BenchOptions {
  int rounds = 7, threads = 2;
  const char *jsonPath = nullptr, *only = nullptr; // --only: shapes whose name contains it
  bool coldWeights = false; // every shape rotates over >= 96 MiB of weight copies
};

// The command line; an exit code where the program should stop (--help, a bad option).
std::optional<int> parseBenchOptions(int argc, char **argv, BenchOptions &o) {
  const char *usage = "usage: xf-bench-gemm [--rounds N] [--threads N] [--json PATH] "
                      "[--only SUBSTRING] [--cold-weights]\n";
  auto count = [&](const char *option, const char *text, int &out) {
    char *end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < 1 || v > 4096) {
      std::fprintf(stderr, "xf-bench-gemm: %s takes a whole number from 1 to 4096, not '%s'\n",
                   option, text);
      return false;
    }
    out = int(v);
    return true;
  };
  for (int i = 1; i < argc; i += 2) {
    const char *arg = argv[i];
    if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-h")) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (!std::strcmp(arg, "--cold-weights")) {
      o.coldWeights = true;
      --i; // a flag: no value follows
      continue;
    }
    bool known = !std::strcmp(arg, "--rounds") || !std::strcmp(arg, "--threads") ||
                 !std::strcmp(arg, "--json") || !std::strcmp(arg, "--only");
    if (!known || i + 1 >= argc) {
      std::fprintf(stderr, "xf-bench-gemm: %s '%s'\n%s",
                   known ? "missing value after" : "unknown option", arg, usage);
      return 2;
    }
    const char *value = argv[i + 1];
    if (!std::strcmp(arg, "--rounds")    ? !count(arg, value, o.rounds)
        : !std::strcmp(arg, "--threads") ? !count(arg, value, o.threads)
                                         : false)
      return 2;
    if (!std::strcmp(arg, "--json"))
      o.jsonPath = value;
    else if (!std::strcmp(arg, "--only"))
      o.only = value;
  }
  return std::nullopt;
}

// Times every variant of `shape` in `rounds` interleaved rounds (reps per round so that the
// reference takes ~0.15 s), prints a line per variant and adds it to `json`.
void timeAndReport(const Shape &shape, int copies, int rounds, std::vector<Variant> &variants,
                   std::FILE *json, bool &first) {
  const int M = shape.M, K = shape.K, N = shape.N;
  const double flops = 2.0 * M * K * N;
  double once = timeCalls(variants[2].call, 1);
  int reps = std::max(1, int(0.15 / std::max(once, 1e-7)));

  for (int round = 0; round < rounds; ++round)
    for (Variant &v : variants)
      v.seconds.push_back(timeCalls(v.call, reps));

  for (Variant &v : variants) {
    double best = *std::min_element(v.seconds.begin(), v.seconds.end());
    double med = median(v.seconds);
    std::printf("%-15s %5d %5d %6d %2s | %-15s %8.3f %8.3f %6.1f %6.1f GB/s | %s\n", shape.name,
                M, K, N, shape.transposed ? "T" : "", v.name.c_str(), best * 1e3, med * 1e3,
                flops / best * 1e-9, v.bytesPerCall / best * 1e-9,
                v.maxDiff >= 0 ? std::to_string(v.maxDiff).c_str() : "");
    if (json) {
      std::fprintf(json,
                   "%s\n  {\"shape\": \"%s\", \"M\": %d, \"K\": %d, \"N\": %d, \"transposed\": "
                   "%s, \"variant\": \"%s\", \"min_s\": %.9f, \"median_s\": %.9f, "
                   "\"gflops_best\": %.3f, \"gflops_median\": %.3f, \"gbs_best\": %.3f, "
                   "\"gbs_median\": %.3f, \"weight_copies\": %d, \"max_abs_diff\": %.3g}",
                   first ? "" : ",", shape.name, M, K, N, shape.transposed ? "true" : "false",
                   v.name.c_str(), best, med, flops / best * 1e-9, flops / med * 1e-9,
                   v.bytesPerCall / best * 1e-9, v.bytesPerCall / med * 1e-9, copies, v.maxDiff);
      first = false;
    }
  }
}

// Each copy of `weights` packed by `pack` into a buffer of `type` (its shape from a bounds
// query): false on a failure, said on stderr.
template <typename Weights, typename Packed>
bool packAllCopies(const char *name, int copies, PackKernel pack, Weights &weights,
                   halide_type_t type, Packed &packed) {
  for (int c = 0; c < copies; ++c) {
    halide_buffer_t query = {};
    halide_dimension_t dims[3] = {};
    query.type = type;
    query.dimensions = 3;
    query.dim = dims;
    if (pack(weights[c].raw_buffer(), &query) != 0) {
      std::fprintf(stderr, "%s: bounds query of the weight packing failed\n", name);
      return false;
    }
    packed.emplace_back(dims[0].extent, dims[1].extent, dims[2].extent);
    packed.back().raw_buffer()->type = type;
    if (pack(weights[c].raw_buffer(), packed.back().raw_buffer()) != 0) {
      std::fprintf(stderr, "%s: packing the weight failed\n", name);
      return false;
    }
  }
  return true;
}

// xf_bf16_amx: AMX bf16 tiles on the packed bf16 weight (xfrt_amx_bf16_gemm, which an executable
// calls for the rows its Halide kernel rounds), where this process may use them; left out
// otherwise, with a line saying why (once).
void addAmxBf16Variant(const Shape &shape, int copies, double io, Halide::Runtime::Buffer<float> &x,
                       std::vector<Halide::Runtime::Buffer<uint16_t>> &wBf16Packed,
                       Halide::Runtime::Buffer<float> &out, std::vector<Variant> &variants) {
  if (!xfrt::amxBf16Usable()) {
    static bool said = false;
    if (!std::exchange(said, true))
      std::printf("xf_bf16_amx skipped: no AMX bf16 (%s)\n", xfrt::amxBf16Unusable());
    return;
  }
  const int M = shape.M, K = shape.K, N = shape.N;
  const int64_t tileCols = wBf16Packed[0].dim(0).extent() / 2;
  variants.push_back({"xf_bf16_amx",
                      [&, tileCols, M, K, N, copies, c = 0]() mutable {
                        c = (c + 1) % copies;
                        xfrt_amx_bf16_gemm(x.data(), K, M, K, wBf16Packed[c].data(), tileCols, N,
                                           nullptr, nullptr, 0, 0, out.data(), N);
                      },
                      2.0 * double(wBf16Packed[0].number_of_elements()) + io});
}

// The reference of the bf16 kernels: OpenBLAS on the bf16-rounded weight, with x rounded too
// where the kernels' GEMM path (M >= 4) rounds it (their GEMV path does not).
void bf16Reference(const Shape &shape, const Halide::Runtime::Buffer<float> &x,
                   const Halide::Runtime::Buffer<uint16_t> &xBf16,
                   const Halide::Runtime::Buffer<float> &wRounded,
                   Halide::Runtime::Buffer<float> &refBf16) {
  const int M = shape.M, K = shape.K, N = shape.N;
  Halide::Runtime::Buffer<float> xRounded = x.copy();
  if (M >= 4)
    xRounded.for_each_element([&](int a, int b) { xRounded(a, b) = fromBf16(xBf16(a, b)); });
  cblas_sgemm(CblasRowMajor, CblasNoTrans, shape.transposed ? CblasTrans : CblasNoTrans, M, N,
              K, 1.f, xRounded.data(), K, wRounded.data(), shape.transposed ? K : N, 0.f,
              refBf16.data(), N);
}

// 2-D views of each copy (dimension 2) of the weight, the bf16 ones typed bfloat16.
void sliceCopies(Halide::Runtime::Buffer<float> &w, Halide::Runtime::Buffer<uint16_t> &wBf16,
                 std::vector<Halide::Runtime::Buffer<float>> &wCopy,
                 std::vector<Halide::Runtime::Buffer<uint16_t>> &wBf16Copy) {
  for (int c = 0; c < w.dim(2).extent(); ++c) {
    wCopy.push_back(w.sliced(2, c));
    wBf16Copy.push_back(wBf16.sliced(2, c));
    wBf16Copy.back().raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
  }
}

using Sbgemm = decltype(&cblas_sbgemm);

// One shape: its inputs and weight copies, every variant checked against its reference, then
// timed and reported; false where packing a weight failed.
bool benchShape(const Shape &shape, const BenchOptions &o, Sbgemm sbgemm, std::mt19937 &rng,
                std::FILE *json, bool &first) {
  const bool coldWeights = o.coldWeights;
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const int M = shape.M, K = shape.K, N = shape.N;
  const int wCols = shape.transposed ? K : N, wRows = shape.transposed ? N : K;
  const size_t wSize = size_t(K) * N;
  // Copies of the weight to rotate over: one, or >= 96 MiB of fp32 for decode shapes
  // (every shape with --cold-weights).
  const int copies =
      M <= 4 || coldWeights ? int(std::max<size_t>(1, (96u << 20) / (wSize * 4) + 1)) : 1;
  Halide::Runtime::Buffer<float> x(K, M), w(wCols, wRows, copies);
  Halide::Runtime::Buffer<uint16_t> wBf16(wCols, wRows, copies), xBf16(K, M);
  Halide::Runtime::Buffer<float> out(N, M), ref(N, M), refBf16(N, M), wRounded(wCols, wRows);
  x.for_each_value([&](float &v) { v = dist(rng); });
  w.for_each_value([&](float &v) { v = dist(rng); });
  wBf16.for_each_element([&](int a, int b, int c) { wBf16(a, b, c) = toBf16(w(a, b, c)); });
  wRounded.for_each_element([&](int a, int b) { wRounded(a, b) = fromBf16(wBf16(a, b, 0)); });
  x.for_each_element([&](int a, int b) { xBf16(a, b) = toBf16(x(a, b)); });
  const int ldw = wCols;
  const auto transW = shape.transposed ? CblasTrans : CblasNoTrans;
  // 2-D views of copy c (the kernels take [rows, cols] matrices).
  std::vector<Halide::Runtime::Buffer<float>> wCopy;
  std::vector<Halide::Runtime::Buffer<uint16_t>> wBf16Copy;
  sliceCopies(w, wBf16, wCopy, wBf16Copy);
  bf16Reference(shape, x, xBf16, wRounded, refBf16);

  const double io = 4.0 * (double(M) * K + double(M) * N);
  std::vector<Variant> variants;
  int next[9] = {0};
  auto copyIndex = [&](int v) { return next[v] = (next[v] + 1) % copies; };
  variants.push_back(
      {"xf",
       [&] { shape.kernel(x.raw_buffer(), wCopy[copyIndex(0)].raw_buffer(), out.raw_buffer()); },
       4.0 * wSize + io});
  variants.push_back({"xf_bf16",
                      [&] {
                        shape.kernelBf16(x.raw_buffer(), wBf16Copy[copyIndex(1)].raw_buffer(),
                                         out.raw_buffer());
                      },
                      2.0 * wSize + io});
  variants.push_back({"openblas",
                      [&] {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, transW, M, N, K, 1.f, x.data(),
                                    K, wCopy[copyIndex(2)].data(), ldw, 0.f, ref.data(), N);
                      },
                      4.0 * wSize + io});
  if (M == 1)
    variants.push_back({"openblas_sgemv",
                        [&] {
                          // y[N] = W·x for W [N, K] (no transpose) or Wᵀ·x for W [K, N].
                          cblas_sgemv(CblasRowMajor, shape.transposed ? CblasNoTrans : CblasTrans,
                                      wRows, wCols, 1.f, wCopy[copyIndex(3)].data(), ldw,
                                      x.data(), 1, 0.f, ref.data(), 1);
                        },
                        4.0 * wSize + io});
  std::vector<float> sbOut(size_t(M) * N);
  if (sbgemm)
    variants.push_back({"openblas_sbgemm",
                        [&] {
                          sbgemm(
                              CblasRowMajor, CblasNoTrans, transW, M, N, K, 1.f,
                              reinterpret_cast<const bfloat16 *>(xBf16.data()), K,
                              reinterpret_cast<const bfloat16 *>(wBf16Copy[copyIndex(4)].data()),
                              ldw, 0.f, sbOut.data(), N);
                        },
                        2.0 * wSize + io});
#ifdef XF_BENCH_HAVE_DNNL
  std::vector<float> dnnlOut(size_t(M) * N);
  variants.push_back({"onednn",
                      [&] {
                        dnnl_sgemm('N', shape.transposed ? 'T' : 'N', M, N, K, 1.f, x.data(), K,
                                   wCopy[copyIndex(5)].data(), ldw, 0.f, dnnlOut.data(), N);
                      },
                      4.0 * wSize + io});
#endif
  // The same GEMM with the tuning database's schedule (the default's when
  // the build was given none), its weight packed at load when the schedule
  // packs (wTunedPacked, filled below): last, so the indices above stay.
  std::vector<Halide::Runtime::Buffer<float>> wTunedPacked;
  variants.push_back({"xf_tuned",
                      [&] {
                        int c = copyIndex(6);
                        shape.kernelTuned(x.raw_buffer(),
                                          wTunedPacked.empty() ? wCopy[c].raw_buffer()
                                                               : wTunedPacked[c].raw_buffer(),
                                          out.raw_buffer());
                      },
                      4.0 * wSize + io});
  // The weight packed at load, as xfc's executables take it: each copy
  // packed once by the kernel's own `_pack` (its shape from a bounds query).
  std::vector<Halide::Runtime::Buffer<float>> wPacked;
  std::vector<Halide::Runtime::Buffer<uint16_t>> wBf16Packed;
  if (!packAllCopies(shape.name, copies, shape.packWeight, wCopy, halide_type_of<float>(), wPacked) ||
      !packAllCopies(shape.name, copies, shape.packWeightBf16, wBf16Copy, halide_type_t(halide_type_bfloat, 16),
               wBf16Packed) ||
      (shape.packWeightTuned &&
       !packAllCopies(shape.name, copies, shape.packWeightTuned, wCopy, halide_type_of<float>(), wTunedPacked)))
    return false;
  if (!wTunedPacked.empty())
    variants[variants.size() - 1].bytesPerCall =
        4.0 * double(wTunedPacked[0].number_of_elements()) + io;
  const double packedBytes = 4.0 * double(wPacked[0].number_of_elements());
  variants.push_back({"xf_packed",
                      [&] {
                        shape.kernelPacked(x.raw_buffer(), wPacked[copyIndex(7)].raw_buffer(),
                                           out.raw_buffer());
                      },
                      packedBytes + io});
  variants.push_back({"xf_bf16_packed",
                      [&] {
                        shape.kernelBf16Packed(x.raw_buffer(),
                                               wBf16Packed[copyIndex(8)].raw_buffer(),
                                               out.raw_buffer());
                      },
                      2.0 * double(wBf16Packed[0].number_of_elements()) + io});
  // Correctness of the xf kernels: fp32 against OpenBLAS, bf16 against
  // OpenBLAS on the bf16-rounded weight (copy 0 of each).
  next[0] = next[1] = next[2] = copies - 1;
  variants[2].call();
  auto maxDiffTo = [&](const Halide::Runtime::Buffer<float> &r) {
    double d = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        d = std::max(d, double(std::abs(out(j, i) - r(j, i))));
    return d;
  };
  variants[0].call();
  variants[0].maxDiff = maxDiffTo(ref);
  variants[1].call();
  variants[1].maxDiff = maxDiffTo(refBf16);
  next[6] = next[7] = next[8] = copies - 1;
  for (Variant *v : {&variants[variants.size() - 3], &variants[variants.size() - 2]}) {
    v->call();
    v->maxDiff = maxDiffTo(ref);
  }
  variants.back().call();
  variants.back().maxDiff = maxDiffTo(refBf16);
  if (M >= 4)
    addAmxBf16Variant(shape, copies, io, x, wBf16Packed, out, variants);
  if (variants.back().name == "xf_bf16_amx") {
    variants.back().call();
    variants.back().maxDiff = maxDiffTo(refBf16);
  }
  // Last, so that the indices above stay; each checked against its own reference.
  std::optional<BlockVariants> blocks;
  if (K % 32 == 0) {
    blocks.emplace(M, K, N, coldWeights, rng);
    addBlockVariants(shape.name, *blocks, variants);
  }
  timeAndReport(shape, copies, o.rounds, variants, json, first);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  BenchOptions o;
  if (std::optional<int> code = parseBenchOptions(argc, argv, o))
    return *code;
  const int rounds = o.rounds, threads = o.threads;
  const char *jsonPath = o.jsonPath, *only = o.only;
  const bool coldWeights = o.coldWeights;
  halide_set_num_threads(threads);
  openblas_set_num_threads(threads);

  xfrt::MachinePeak peak = xfrt::measurePeak(threads, /*withBf16=*/true);
  std::printf("machine: %s, %d threads: FMA peak %.1f GFLOP/s (%s), bf16 dot-product peak %.1f "
              "GFLOP/s, int8 dot-product peak %.1f GOP/s, AMX bf16 peak %.1f GFLOP/s, AMX int8 "
              "peak %.1f GOP/s, read bandwidth %.1f GB/s\n",
              peak.cpu.c_str(), threads, peak.gflops, peak.isa.c_str(), peak.bf16Gflops,
              peak.int8Gops, peak.amxBf16Gflops, peak.amxInt8Gops, peak.readGBs);

  std::mt19937 rng(1);
  std::FILE *json = jsonPath ? std::fopen(jsonPath, "w") : nullptr;
  if (json)
    std::fprintf(
        json,
        "{\"cpu\": \"%s\", \"flags\": \"%s\", \"threads\": %d, \"first_peak_gflops\": %.2f, "
        "\"bf16_peak_gflops\": %.2f, \"int8_peak_gops\": %.2f, \"amx_int8\": %s, "
        "\"amx_bf16\": %s, \"amx_bf16_peak_gflops\": %.2f, \"amx_int8_peak_gops\": %.2f, "
        "\"fma_isa\": \"%s\", \"read_gbs\": %.2f, \"rounds\": %d, \"shapes\": [",
        peak.cpu.c_str(), peak.flags.c_str(), threads, peak.gflops, peak.bf16Gflops, peak.int8Gops,
        xfrt::amxInt8Usable() ? "true" : "false", xfrt::amxBf16Usable() ? "true" : "false",
        peak.amxBf16Gflops, peak.amxInt8Gops, peak.isa.c_str(), peak.readGBs, rounds);
  std::printf("%-15s %5s %5s %6s %2s | %-15s %8s %8s %6s %11s | max|diff|\n", "shape", "M", "K",
              "N", "T", "variant", "min ms", "med ms", "GF/s", "");

  // cblas_sbgemm (bf16 x bf16 -> f32) when this OpenBLAS build has it
  // (Debian's 0.3.21 declares it but is built without).
  auto sbgemm = reinterpret_cast<Sbgemm>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));

  // The FMA peak again before every shape, the highest kept: a VM's speed moves by minutes, and
  // one reading at the start taken in a slow minute put GEMMs above "100 % of peak".
  double peakGflops = peak.gflops;
  bool first = true;
  for (const Shape &shape : kShapes) {
    if (only && !std::strstr(shape.name, only))
      continue;
    const double now = xfrt::measureFmaPeak(threads);
    peakGflops = std::max(peakGflops, now);
    std::printf("(FMA peak now %.1f GFLOP/s, highest so far %.1f)\n", now, peakGflops);
    if (!benchShape(shape, o, sbgemm, rng, json, first))
      return 1;
  }
  std::printf("FMA peak: %.1f GFLOP/s, the highest of the readings before each shape\n",
              peakGflops);
  if (json) {
    std::fprintf(json, "\n], \"peak_gflops\": %.2f}\n", peakGflops);
    std::fclose(json);
  }
  return 0;
}
