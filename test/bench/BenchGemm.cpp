//===- BenchGemm.cpp - xf GEMM kernels beside OpenBLAS, oneDNN and peak ---===//
//
// Times xf's AOT-compiled Halide GEMMs (default schedules, GemmShapes.def)
// beside cblas_sgemm (and dnnl_sgemm when built with oneDNN), all on the same
// buffers, in interleaved rounds so that load from other processes hits every
// variant alike. The same run measures the machine's fp32 FMA peak (an
// AVX-512 or AVX2 FMA loop on every thread) and its read bandwidth.
// Prints a table and, with --json PATH, writes the numbers for run_gemm.py.
// Not a test: nothing here asserts a speed.
//
// Usage: xf-bench-gemm [--rounds N] [--threads N] [--json PATH]
// Run with OPENBLAS_CORETYPE set to the CPU's real core type
// (run_gemm.py does) and OPENBLAS_NUM_THREADS = --threads.
//
//===----------------------------------------------------------------------===//

#include "HalideBuffer.h"
#include "MachinePeak.h"

#include <cblas.h>
#ifdef XF_BENCH_HAVE_DNNL
#include <dnnl.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

extern "C" int halide_set_num_threads(int);

#define X(NAME, M, K, N, T)                                                                        \
  extern "C" int xf_bench_##NAME(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);
#include "GemmShapes.def"
#undef X

namespace {

using Clock = std::chrono::steady_clock;
using GemmKernel = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *);

struct Shape {
  const char *name;
  int M, K, N;
  bool transposed;
  GemmKernel kernel;
};

const Shape kShapes[] = {
#define X(NAME, M, K, N, T) {#NAME, M, K, N, T, xf_bench_##NAME},
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
  std::vector<double> seconds; // one per round
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 7, threads = 2;
  const char *jsonPath = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--json"))
      jsonPath = argv[i + 1];
  }
  halide_set_num_threads(threads);
  openblas_set_num_threads(threads);

  xfbench::MachinePeak peak = xfbench::measurePeak(threads);
  std::printf("machine: %s, %d threads: FMA peak %.1f GFLOP/s (%s), read bandwidth %.1f GB/s\n",
              peak.cpu.c_str(), threads, peak.gflops, peak.isa.c_str(), peak.readGBs);

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::FILE *json = jsonPath ? std::fopen(jsonPath, "w") : nullptr;
  if (json)
    std::fprintf(json,
                 "{\"cpu\": \"%s\", \"flags\": \"%s\", \"threads\": %d, \"peak_gflops\": %.2f, "
                 "\"fma_isa\": \"%s\", \"read_gbs\": %.2f, \"rounds\": %d, \"shapes\": [",
                 peak.cpu.c_str(), peak.flags.c_str(), threads, peak.gflops, peak.isa.c_str(),
                 peak.readGBs, rounds);
  std::printf("%-15s %5s %5s %6s %2s | %-9s %8s %8s %6s | max|diff|\n", "shape", "M", "K", "N", "T",
              "variant", "min ms", "med ms", "GF/s");

  bool first = true;
  for (const Shape &shape : kShapes) {
    const int M = shape.M, K = shape.K, N = shape.N;
    Halide::Runtime::Buffer<float> x(K, M), w(shape.transposed ? K : N, shape.transposed ? N : K);
    Halide::Runtime::Buffer<float> out(N, M), ref(N, M);
    x.for_each_value([&](float &v) { v = dist(rng); });
    w.for_each_value([&](float &v) { v = dist(rng); });
    const int ldw = shape.transposed ? K : N;

    std::vector<Variant> variants;
    variants.push_back(
        {"xf", [&] { shape.kernel(x.raw_buffer(), w.raw_buffer(), out.raw_buffer()); }, {}});
    variants.push_back({"openblas",
                        [&] {
                          cblas_sgemm(CblasRowMajor, CblasNoTrans,
                                      shape.transposed ? CblasTrans : CblasNoTrans, M, N, K, 1.f,
                                      x.data(), K, w.data(), ldw, 0.f, ref.data(), N);
                        },
                        {}});
#ifdef XF_BENCH_HAVE_DNNL
    std::vector<float> dnnlOut(size_t(M) * N);
    variants.push_back({"onednn",
                        [&] {
                          dnnl_sgemm('N', shape.transposed ? 'T' : 'N', M, N, K, 1.f, x.data(), K,
                                     w.data(), ldw, 0.f, dnnlOut.data(), N);
                        },
                        {}});
#endif
    // Correctness of the xf kernel against OpenBLAS, and the calls per round.
    variants[0].call();
    variants[1].call();
    double maxDiff = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        maxDiff = std::max(maxDiff, double(std::abs(out(j, i) - ref(j, i))));
    const double flops = 2.0 * M * K * N;
    double once = timeCalls(variants[1].call, 1);
    int reps = std::max(1, int(0.15 / std::max(once, 1e-7)));

    for (int round = 0; round < rounds; ++round)
      for (Variant &v : variants)
        v.seconds.push_back(timeCalls(v.call, reps));

    for (Variant &v : variants) {
      double best = *std::min_element(v.seconds.begin(), v.seconds.end());
      double med = median(v.seconds);
      std::printf("%-15s %5d %5d %6d %2s | %-9s %8.3f %8.3f %6.1f | %s\n", shape.name, M, K, N,
                  shape.transposed ? "T" : "", v.name.c_str(), best * 1e3, med * 1e3,
                  flops / best * 1e-9, &v == &variants[0] ? std::to_string(maxDiff).c_str() : "");
      if (json) {
        std::fprintf(json,
                     "%s\n  {\"shape\": \"%s\", \"M\": %d, \"K\": %d, \"N\": %d, \"transposed\": "
                     "%s, \"variant\": \"%s\", \"min_s\": %.9f, \"median_s\": %.9f, "
                     "\"gflops_best\": %.3f, \"gflops_median\": %.3f, \"max_abs_diff\": %.3g}",
                     first ? "" : ",", shape.name, M, K, N, shape.transposed ? "true" : "false",
                     v.name.c_str(), best, med, flops / best * 1e-9, flops / med * 1e-9, maxDiff);
        first = false;
      }
    }
  }
  if (json) {
    std::fprintf(json, "\n]}\n");
    std::fclose(json);
  }
  return 0;
}
