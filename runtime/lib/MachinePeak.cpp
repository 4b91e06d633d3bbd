//===- MachinePeak.cpp - Measured FMA peak and bandwidth ------------------===//
//
// The FMA loops use function-level target attributes, so this file builds
// with the default flags and picks the widest ISA the CPU reports at run time.
//
//===----------------------------------------------------------------------===//

#include "xfrt/MachinePeak.h"

#include "xfrt/Amx.h"
#include "xfrt/HugePageMapping.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

namespace xfrt {
namespace {

constexpr long kIterations = 50'000'000;

// 12 independent chains cover FMA latency (4) × pipes (2) with room to spare.
__attribute__((target("avx512f,fma"))) float fmaLoop512(long iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_ps(0.01f * i);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (long i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm512_fmadd_ps(acc[j], a, b);
    __asm__ volatile("" : "+v"(acc[0]));
  }
  float sum = 0;
  for (int i = 0; i < 12; ++i)
    sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}

// The bf16 2-way dot product (vdpbf16ps: 16 lanes × 2 products + 2 adds =
// 64 FLOP per instruction), the register block of --bf16-gemm-inputs GEMMs.
// 12 chains cover its latency (6 on Zen 4) × pipes (2 ymm halves).
__attribute__((target("avx512f,avx512bf16"))) float dotBf16Loop512(long iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_ps(0.01f * i);
  // bf16 pairs of 0.996 and 0.001 in every 32-bit lane.
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f);
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x3a833a83);
  for (long i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
    __asm__ volatile("" : "+v"(acc[0]));
  }
  float sum = 0;
  for (int i = 0; i < 12; ++i)
    sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}

// The int8 4-way dot product (vpdpbusd: 16 lanes × 4 u8·s8 products + 4 adds = 128 OP per
// instruction), what --q8-gemm-inputs' block GEMMs run on. 12 chains, as above.
__attribute__((target("avx512f,avx512vnni"))) float dotInt8Loop512(long iterations) {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (long i = 0; i < iterations; ++i) {
    // Every chain through an empty asm: integer sums could otherwise be folded.
    for (int j = 0; j < 12; ++j) {
      acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
      __asm__ volatile("" : "+v"(acc[j]));
    }
  }
  int sum = 0;
  for (int i = 0; i < 12; ++i)
    sum += _mm512_reduce_add_epi32(acc[i]);
  return float(sum);
}

// AMX tiles: four tile products an iteration into four C tiles (0-3: independent chains, as
// the GEMMs' 2 × 2 tiles), each 16 rows × 16 columns × 64 bytes of K: tdpbf16ps 32 products +
// adds a column (16384 FLOP), tdpbusd 64 (32768 OP). The tile state is this thread's:
// configured, used and released here. Only where amxBf16Usable / amxInt8Usable (the
// instructions fault elsewhere).
template <bool Int8>
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) float amxLoop(long iterations) {
  AmxTileConfig config;
  for (int t = 0; t < 8; ++t)
    config.tile(t, 16, 64);
  amxLoadTileConfig(config);
  alignas(64) static uint16_t operands[16][32];
  std::fill(&operands[0][0], &operands[0][0] + 16 * 32, uint16_t(0x3a83)); // bf16 0.001
  _tile_loadd(4, operands, 64);
  _tile_loadd(5, operands, 64);
  _tile_loadd(6, operands, 64);
  _tile_loadd(7, operands, 64);
  _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3);
  for (long i = 0; i < iterations; ++i) {
    if constexpr (Int8) {
      _tile_dpbusd(0, 4, 6), _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6), _tile_dpbusd(3, 5, 7);
    } else {
      _tile_dpbf16ps(0, 4, 6), _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6), _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) float sums[16][16]; // int32 sums for int8: only their bits are kept
  _tile_stored(0, sums, 64);
  amxReleaseTiles();
  return sums[0][0];
}

__attribute__((target("avx2,fma"))) float fmaLoop256(long iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_ps(0.01f * i);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (long i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j)
      acc[j] = _mm256_fmadd_ps(acc[j], a, b);
    __asm__ volatile("" : "+x"(acc[0]));
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float f : lanes)
      sum += f;
  }
  return sum;
}

__attribute__((target("avx2"))) double sumFloats(const float *data, size_t n) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  for (size_t i = 0; i + 32 <= n; i += 32)
    for (int j = 0; j < 4; ++j)
      acc[j] = _mm256_add_ps(acc[j], _mm256_loadu_ps(data + i + 8 * j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes,
                  _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  double sum = 0;
  for (float f : lanes)
    sum += f;
  return sum;
}

template <typename Fn> double timeOnThreads(int threads, Fn fn) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { fn(t); });
  for (std::thread &th : pool)
    th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string cpuInfoField(const std::string &key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      size_t colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 2);
    }
  return "";
}

// The read buffer lives in the kind of pages the weights do (HugePageMapping.h): with 4 KiB
// pages the loop measured 25 instead of 31 GB/s per thread on Zen 4 — a bound below what the
// decode GEMVs stream from huge pages.
class ReadBuffer {
public:
  explicit ReadBuffer(size_t floats) : bytes_(floats * sizeof(float)) {
    data_ = static_cast<float *>(mapHugePageAligned(bytes_));
    if (!data_) {
      heap_.resize(floats);
      data_ = heap_.data();
    }
    // Written, so the reads see real pages rather than the shared zero page.
    std::fill(data_, data_ + floats, 1.f);
  }
  ~ReadBuffer() {
    if (heap_.empty())
      unmapHugePageMapping(data_, bytes_);
  }
  ReadBuffer(const ReadBuffer &) = delete;
  ReadBuffer &operator=(const ReadBuffer &) = delete;
  const float *data() const { return data_; }

private:
  size_t bytes_;
  std::vector<float> heap_; // where the mapping failed
  float *data_ = nullptr;
};

} // namespace

double measureReadBandwidth(int threads) {
  const size_t n = size_t(512) << 20 >> 2; // 512 MiB of floats
  ReadBuffer data(n);
  volatile float sink = 0;
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep)
    best = std::min(best, timeOnThreads(threads, [&](int t) {
                      size_t chunk = n / threads;
                      sink = float(sumFloats(data.data() + t * chunk, chunk));
                    }));
  (void)sink;
  return double(n) * 4 / best * 1e-9;
}

namespace {
bool hasFlag(const std::string &flags, const char *flag) {
  return (" " + flags + " ").find(std::string(" ") + flag + " ") != std::string::npos;
}

// measureProductPeaks with the bf16 loop run where `bf16` and the int8 one where `int8` (the
// CPU has them).
ProductPeaks productPeaks(int threads, long iterations, bool bf16, bool int8 = false) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int lanes = avx512 ? 16 : 8;
  volatile float sink = 0;
  auto seconds = [&](float (*loop)(long)) {
    return timeOnThreads(threads, [&](int) { sink = loop(iterations); });
  };
  // Passes interleaved, best of 3 each: on a shared machine both products then see the same
  // neighbours, and their ratio (what --bf16-products=auto reads) holds.
  double fp32 = 1e30, bf16Seconds = 1e30, int8Seconds = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    fp32 = std::min(fp32, seconds(avx512 ? fmaLoop512 : fmaLoop256));
    if (bf16)
      bf16Seconds = std::min(bf16Seconds, seconds(dotBf16Loop512));
    if (int8)
      int8Seconds = std::min(int8Seconds, seconds(dotInt8Loop512));
  }
  (void)sink;
  // 12 chains of one FMA (2 FLOP a lane) or one 2-way bf16 dot (4 FLOP a lane) per iteration.
  ProductPeaks peaks;
  peaks.fp32 = threads * double(iterations) * 12 * lanes * 2 * 1e-9 / fp32;
  if (bf16)
    peaks.bf16 = threads * double(iterations) * 12 * 16 * 4 * 1e-9 / bf16Seconds;
  if (int8) // 8 OP a lane: four products and four adds
    peaks.int8 = threads * double(iterations) * 12 * 16 * 8 * 1e-9 / int8Seconds;
  return peaks;
}
} // namespace

ProductPeaks measureProductPeaks(int threads, long iterations, bool withBf16) {
  // The OS-level flag (cpuinfo), as for MachinePeak::flags.
  return productPeaks(threads, iterations,
                      withBf16 && hasFlag(cpuInfoField("flags"), "avx512_bf16"));
}

namespace {
// GFLOP/s (GOP/s) of amxLoop<Int8> on `threads` threads, best of 3 passes.
template <bool Int8> double measureAmxPeak(int threads, long iterations) {
  volatile float sink = 0;
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep)
    best = std::min(best, timeOnThreads(threads, [&](int) { sink = amxLoop<Int8>(iterations); }));
  (void)sink;
  return threads * double(iterations) * 4 * (Int8 ? 32768 : 16384) * 1e-9 / best;
}
} // namespace

double measureAmxBf16Peak(int threads, long iterations) {
  return amxBf16Usable() ? measureAmxPeak<false>(threads, iterations) : 0;
}

double measureAmxInt8Peak(int threads, long iterations) {
  return amxInt8Usable() ? measureAmxPeak<true>(threads, iterations) : 0;
}

bool bf16ProductsPay(const ProductPeaks &peaks) {
  return peaks.bf16 > 0 && peaks.fp32 > 0 && peaks.bf16 >= kBf16ProductMargin * peaks.fp32;
}

MachinePeak measurePeak(int threads, bool withBf16) {
  MachinePeak peak;
  peak.cpu = cpuInfoField("model name");
  std::string flags = cpuInfoField("flags");
  // The flags that matter for these kernels, not the whole list.
  for (const char *f : {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
                        "avx512_vnni", "amx_tile", "amx_bf16"})
    if (hasFlag(flags, f))
      peak.flags += (peak.flags.empty() ? "" : " ") + std::string(f);
  peak.isa = __builtin_cpu_supports("avx512f") ? "avx512 fma" : "avx2 fma";
  ProductPeaks products =
      productPeaks(threads, kIterations, withBf16 && hasFlag(flags, "avx512_bf16"),
                   withBf16 && hasFlag(flags, "avx512_vnni"));
  peak.gflops = products.fp32;
  peak.bf16Gflops = products.bf16;
  peak.int8Gops = products.int8;
  if (withBf16) {
    peak.amxBf16Gflops = measureAmxBf16Peak(threads, kIterations / 50);
    peak.amxInt8Gops = measureAmxInt8Peak(threads, kIterations / 50);
  }
  peak.readGBs = measureReadBandwidth(threads);
  return peak;
}

double measureFmaPeak(int threads) { return productPeaks(threads, kIterations, false).fp32; }

std::string cpuModelName() { return cpuInfoField("model name"); }

} // namespace xfrt
