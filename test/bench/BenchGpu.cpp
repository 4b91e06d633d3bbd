//===- BenchGpu.cpp - xf's CUDA GEMM and attention kernels, timed on a GPU -===//
//
// JIT-compiles the very pipelines `xfc --target cuda` AOT-compiles
// (buildGemmCudaPipeline / buildAttentionCudaPipeline) for this machine's GPU
// and times them on device-resident buffers: one warm-up call (which uploads
// the inputs), then `runs` calls and one device synchronisation, repeated
// `rounds` times; prints the best and median milliseconds per call as JSON.
// test/bench/run_gpu.py puts these beside torch.matmul / SDPA.
//
//   xf-bench-gpu gemm M K N kn|nk [rounds runs] [capability]
//   xf-bench-gpu attention M Mz H dK causal|full [rounds runs] [capability]
//
// Built only with -DXF_GPU_BENCH=ON (it needs a GPU to run).
//
//===----------------------------------------------------------------------===//

#include "KernelPipelines.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace mlir::xf;

namespace {

Halide::Runtime::Buffer<float> random(int cols, int rows, std::mt19937 &rng) {
  Halide::Runtime::Buffer<float> b(cols, rows);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  b.for_each_value([&](float &v) { v = dist(rng); });
  b.set_host_dirty();
  return b;
}

int usage() {
  std::fprintf(stderr, "usage: xf-bench-gpu gemm M K N kn|nk [rounds runs] [capability]\n"
                       "       xf-bench-gpu attention M Mz H dK causal|full [rounds runs] "
                       "[capability]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 7)
    return usage();
  std::string kind = argv[1];
  int a = std::atoi(argv[2]), b = std::atoi(argv[3]), c = std::atoi(argv[4]);
  std::string mode = argv[kind == "gemm" ? 5 : 6];
  int rounds = argc > 8 ? std::atoi(argv[7]) : 5, runs = argc > 8 ? std::atoi(argv[8]) : 20;
  int capability = argc > 9 ? std::atoi(argv[9]) : 80;
  Halide::Target target = mlir::xf::hostHalideTarget().with_feature(Halide::Target::CUDA);
  for (auto [sm, feature] : {std::pair{70, Halide::Target::CUDACapability70},
                             {75, Halide::Target::CUDACapability75},
                             {80, Halide::Target::CUDACapability80},
                             {86, Halide::Target::CUDACapability86}})
    if (sm == capability)
      target = target.with_feature(feature);
  std::mt19937 rng(1);
  std::vector<Halide::Runtime::Buffer<float>> buffers;
  llvm::Expected<KernelPipeline> built = llvm::createStringError("unset");
  double flops = 0;
  if (kind == "gemm") {
    GemmKernelSpec spec;
    spec.name = "gemm";
    spec.K = b, spec.N = c, spec.transposeWeight = mode == "nk";
    built = buildGemmCudaPipeline(spec);
    buffers.push_back(random(b, a, rng));                                    // x [M, K]
    buffers.push_back(mode == "nk" ? random(b, c, rng) : random(c, b, rng)); // W
    buffers.push_back(Halide::Runtime::Buffer<float>(c, a));                 // out [M, N]
    flops = 2.0 * a * b * c;
  } else if (kind == "attention") {
    int dK = std::atoi(argv[5]);
    AttentionKernelSpec spec;
    spec.name = "attention";
    spec.heads = c, spec.dK = spec.dV = dK, spec.causal = mode == "causal";
    spec.scale = 1.0 / std::sqrt(double(dK));
    built = buildAttentionCudaPipeline(spec);
    buffers.push_back(random(c * dK, a, rng));
    // K and V: (column, key, head), each head's keys contiguous (a KV cache slot); the
    // values do not matter for timing.
    for (int i = 0; i < 2; ++i) {
      Halide::Runtime::Buffer<float> kv(dK, b, c);
      kv.fill(0.5f);
      buffers.push_back(kv);
    }
    buffers.push_back(Halide::Runtime::Buffer<float>(c * dK, a));
    flops = 4.0 * a * b * c * dK * (spec.causal ? 0.5 : 1.0);
  } else {
    return usage();
  }
  if (!built) {
    std::fprintf(stderr, "%s\n", llvm::toString(built.takeError()).c_str());
    return 1;
  }
  try {
    Halide::Callable call = built->pipeline.compile_to_callable(built->arguments(), target);
    auto invoke = [&] {
      int rc = buffers.size() == 3 ? call(buffers[0], buffers[1], buffers[2])
                                   : call(buffers[0], buffers[1], buffers[2], buffers[3]);
      if (rc != 0) {
        std::fprintf(stderr, "kernel failed: %d\n", rc);
        std::exit(1);
      }
    };
    invoke();
    buffers.back().device_sync();
    std::vector<double> ms;
    for (int r = 0; r < rounds; ++r) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < runs; ++i)
        invoke();
      buffers.back().device_sync();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          runs);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("{\"kind\": \"%s\", \"best_ms\": %.6f, \"median_ms\": %.6f, \"gflops\": %.1f}\n",
                kind.c_str(), ms.front(), ms[ms.size() / 2], flops / ms.front() / 1e6);
  } catch (const Halide::Error &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
