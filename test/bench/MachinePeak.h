//===- MachinePeak.h - Measured FMA peak and bandwidth -----------*- C++ -*-===//
//
// The ceilings a GEMM benchmark is read against, measured in the same run:
// fp32 FMA throughput on `threads` threads (independent AVX-512 FMA chains,
// or AVX2 where the CPU lacks AVX-512) and read bandwidth of a 512 MiB buffer.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TEST_BENCH_MACHINEPEAK_H
#define XF_TEST_BENCH_MACHINEPEAK_H

#include <string>

namespace xfbench {

struct MachinePeak {
  std::string cpu, flags, isa;
  double gflops = 0, readGBs = 0;
};

MachinePeak measurePeak(int threads);

} // namespace xfbench

#endif // XF_TEST_BENCH_MACHINEPEAK_H
