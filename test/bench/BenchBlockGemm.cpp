//===- BenchBlockGemm.cpp - xfrt_block_gemm on SmolLM2's prefill GEMMs ----===//
//
// Times libxfrt's --q8-gemm-inputs prefill GEMM (xfrt::blockGemm on AVX-512 VNNI tiles) on
// SmolLM2-135M's four GEMMs of one block (Q4_1 weights of random blocks; QKV, attention output
// + residual, gate/up + SwiGLU, down + residual) at M input rows, on one thread: the thread's
// CPU time per call (CLOCK_THREAD_CPUTIME_ID), so that other processes on a shared machine
// cost it little, best and median of interleaved rounds. GOP/s counts 2·M·K·N operations
// (SwiGLU: N gate and N up rows). With --rows A,B,... every shape runs at each row count
// (where x̂ and a panel outgrow L1). Each call reads the next of enough copies of its weight
// (>= 64 MiB) that it comes from DRAM, as in a prefill through all of a model's blocks; --hot
// reads one copy, from cache. For A/B runs of two builds, run both binaries in alternation
// and compare their best rounds.
// Not a test: nothing here asserts a speed.
//
// Usage: xf-bench-block-gemm [--rounds N] [--rows M[,M...]] [--only SUBSTRING] [--hot]
//
//===----------------------------------------------------------------------===//

#include "xfrt/BlockGemv.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kQ4_1 = 3;

struct Shape {
  const char *name;
  int64_t K, N;
  xfrt::BlockEpilogue epilogue;
  bool residual;
};

const Shape kShapes[] = {
    {"qkv", 576, 960, xfrt::BlockEpilogue::None, false},
    {"attn_out", 576, 576, xfrt::BlockEpilogue::None, true},
    {"gate_up", 576, 1536, xfrt::BlockEpilogue::SwiGlu, false},
    {"down", 1536, 576, xfrt::BlockEpilogue::None, true},
};

double threadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// IEEE half bits of a normal float (the scales below).
uint16_t toHalf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  uint32_t sign = (b >> 16) & 0x8000, exponent = ((b >> 23) & 0xff) - 127 + 15;
  return uint16_t(sign | (exponent << 10) | ((b >> 13) & 0x3ff));
}

struct Case {
  const Shape *shape;
  int64_t M;
  std::vector<std::vector<uint8_t>> weights; // copies, read in turn
  size_t next = 0;
  std::vector<float> x, residual, out;
  std::vector<double> seconds; // per call, one per round

  Case(const Shape &s, int64_t M, bool hot, std::mt19937 &rng) : shape(&s), M(M) {
    const int64_t rows = s.epilogue == xfrt::BlockEpilogue::SwiGlu ? 2 * s.N : s.N;
    const size_t bytes = size_t(rows * s.K / 32 * 20);
    weights.resize(hot ? 1 : ((64u << 20) + bytes - 1) / bytes);
    std::vector<uint8_t> &weight = weights[0];
    weight.resize(bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.002f, 0.02f), dist(-1.f, 1.f);
    for (size_t b = 0; b < weight.size(); b += 20) {
      uint16_t d = toHalf(scale(rng)), m = toHalf(-8 * scale(rng));
      std::memcpy(&weight[b], &d, 2);
      std::memcpy(&weight[b + 2], &m, 2);
      for (int i = 4; i < 20; ++i)
        weight[b + i] = uint8_t(byte(rng));
    }
    for (size_t i = 1; i < weights.size(); ++i)
      weights[i] = weight;
    x.resize(size_t(M * s.K));
    for (float &v : x)
      v = dist(rng);
    residual.resize(size_t(M * s.N));
    for (float &v : residual)
      v = dist(rng);
    out.resize(size_t(M * s.N));
  }
  bool call() {
    const uint8_t *weight = weights[next].data();
    next = (next + 1) % weights.size();
    return xfrt::blockGemm(x.data(), shape->K, M, shape->K, weight, kQ4_1, shape->N,
                           nullptr, shape->residual ? residual.data() : nullptr, shape->N,
                           int64_t(shape->epilogue), out.data(), shape->N,
                           xfrt::BlockGemmTiles::Avx512Vnni) == 0;
  }
  double ops() const {
    return 2.0 * double(M) * double(shape->K) * double(shape->N) *
           (shape->epilogue == xfrt::BlockEpilogue::SwiGlu ? 2 : 1);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

bool parseCount(const char *text, long lo, long hi, long &out) {
  char *end = nullptr;
  out = std::strtol(text, &end, 10);
  return *text != '\0' && *end == '\0' && out >= lo && out <= hi;
}

} // namespace

int main(int argc, char **argv) {
  const char *usage = "usage: xf-bench-block-gemm [--rounds N] [--rows M[,M...]] "
                      "[--only SUBSTRING] [--hot]\n";
  long rounds = 9;
  std::vector<int64_t> rowCounts = {128};
  const char *only = nullptr;
  bool hot = false;
  for (int i = 1; i < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg == "--hot") {
      hot = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "xf-bench-block-gemm: %s needs a value\n%s", arg.c_str(), usage);
      return 2;
    }
    const char *value = argv[i + 1];
    if (arg == "--rounds") {
      if (!parseCount(value, 1, 1000, rounds)) {
        std::fprintf(stderr, "xf-bench-block-gemm: --rounds takes 1 to 1000, not '%s'\n", value);
        return 2;
      }
    } else if (arg == "--rows") {
      rowCounts.clear();
      std::string list = value;
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        long m;
        if (!parseCount(list.substr(at, comma - at).c_str(), 1, 4096, m)) {
          std::fprintf(stderr, "xf-bench-block-gemm: --rows takes counts from 1 to 4096, not '%s'\n",
                       value);
          return 2;
        }
        rowCounts.push_back(m);
        at = comma + 1;
      }
    } else if (arg == "--only") {
      only = value;
    } else {
      std::fprintf(stderr, "xf-bench-block-gemm: unknown option '%s'\n%s", arg.c_str(), usage);
      return 2;
    }
  }

  std::mt19937 rng(5);
  std::vector<Case> cases;
  for (const Shape &s : kShapes)
    if (!only || std::strstr(s.name, only))
      for (int64_t M : rowCounts)
        cases.emplace_back(s, M, hot, rng);
  for (Case &c : cases)
    if (!c.call()) {
      std::printf("skipped: this CPU has no AVX-512 VNNI (xfrt_block_gemm leaves its GEMMs to "
                  "Halide)\n");
      return 0;
    }
  // Each round: every case in turn, enough calls for ~20 ms of CPU time.
  for (long r = 0; r < rounds; ++r)
    for (Case &c : cases) {
      const int reps = std::max(1, int(2e-2 / std::max(1e-6, c.ops() / 4e11)));
      const double start = threadSeconds();
      for (int i = 0; i < reps; ++i)
        c.call();
      c.seconds.push_back((threadSeconds() - start) / reps);
    }
  std::printf("%-9s %5s %5s %5s %10s %10s %9s %9s\n", "shape", "M", "K", "N", "best µs",
              "median µs", "GOP/s", "µs/row");
  for (const Case &c : cases) {
    const double best = *std::min_element(c.seconds.begin(), c.seconds.end());
    std::printf("%-9s %5lld %5lld %5lld %10.1f %10.1f %9.1f %9.3f\n", c.shape->name,
                (long long)c.M, (long long)c.shape->K, (long long)c.shape->N, best * 1e6,
                median(c.seconds) * 1e6, c.ops() / best * 1e-9, best * 1e6 / double(c.M));
  }
  return 0;
}
