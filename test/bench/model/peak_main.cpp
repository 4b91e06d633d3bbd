//===- peak_main.cpp - Measured FMA peak and bandwidth as one JSON line ---===//
//
// run_model.py compiles this with runtime/lib/MachinePeak.cpp (the same measurement as
// xf-bench-gemm) and runs it before and after the timed rounds; with --bandwidth, only the
// read bandwidth (~0.3 s), which the decode benchmarks measure beside every timed run.
// Usage: xf-model-peak [threads] [--bandwidth]
//
//===----------------------------------------------------------------------===//

#include "xfrt/MachinePeak.h"

#include <cstdio>
#include <cstdlib>
#include <string>

static std::string quoted(const std::string &s) {
  std::string o = "\"";
  for (char c : s)
    if (c == '"' || c == '\\')
      o += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) >= 0x20)
      o += c;
  return o + "\"";
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  if (threads < 1)
    threads = 1;
  if (argc > 2 && std::string(argv[2]) == "--bandwidth") {
    std::printf("{\"threads\": %d, \"read_gbs\": %.3f}\n", threads,
                xfrt::measureReadBandwidth(threads));
    return 0;
  }
  xfrt::MachinePeak p = xfrt::measurePeak(threads, /*withBf16=*/true);
  std::printf("{\"cpu\": %s, \"flags\": %s, \"isa\": %s, \"threads\": %d, \"gflops\": %.3f, "
              "\"bf16_gflops\": %.3f, \"read_gbs\": %.3f}\n",
              quoted(p.cpu).c_str(), quoted(p.flags).c_str(), quoted(p.isa).c_str(), threads,
              p.gflops, p.bf16Gflops, p.readGBs);
  return 0;
}
