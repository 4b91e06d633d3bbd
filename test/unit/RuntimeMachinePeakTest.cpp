//===- RuntimeMachinePeakTest.cpp - the measured ceilings are measured ----===//
//
// No speed is asserted (the machine is shared): only that each ceiling the
// CPU has is measured, and the bf16 dot product exactly where cpuinfo
// reports AVX512-BF16.
//
//===----------------------------------------------------------------------===//

#include "xfrt/MachinePeak.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

TEST(MachinePeak, Bf16DotProductPeakWhereTheCpuHasIt) {
  xfrt::MachinePeak peak = xfrt::measurePeak(1, /*withBf16=*/true);
  EXPECT_TRUE(std::isfinite(peak.gflops) && peak.gflops > 0);
  EXPECT_TRUE(std::isfinite(peak.readGBs) && peak.readGBs > 0);
  const bool hasBf16 = (" " + peak.flags + " ").find(" avx512_bf16 ") != std::string::npos;
  EXPECT_EQ(hasBf16, peak.bf16Gflops > 0) << "flags: " << peak.flags;
  EXPECT_TRUE(std::isfinite(peak.bf16Gflops));
}

} // namespace

// The --bf16-gemm-inputs choice on the peaks measured on the CPUs seen (docs/bench.md).
TEST(MachinePeak, Bf16ProductsPayOnlyWellAboveTheFp32Peak) {
  EXPECT_TRUE(xfrt::bf16ProductsPay({/*fp32=*/310, /*bf16=*/620}));  // Zen 4/5
  EXPECT_FALSE(xfrt::bf16ProductsPay({/*fp32=*/343, /*bf16=*/168})); // Xeon without AMX
  EXPECT_FALSE(xfrt::bf16ProductsPay({/*fp32=*/300, /*bf16=*/0}));   // no AVX512-BF16
  EXPECT_FALSE(xfrt::bf16ProductsPay({/*fp32=*/300, /*bf16=*/360}));  // below the margin
  EXPECT_TRUE(xfrt::bf16ProductsPay({/*fp32=*/300, /*bf16=*/300 * xfrt::kBf16ProductMargin}));
  EXPECT_FALSE(xfrt::bf16ProductsPay({/*fp32=*/0, /*bf16=*/300}));    // nothing measured
}

TEST(MachinePeak, ProductPeaksAreWhatMeasurePeakReports) {
  xfrt::ProductPeaks peaks = xfrt::measureProductPeaks(1, 2'000'000, /*withBf16=*/false);
  EXPECT_TRUE(std::isfinite(peaks.fp32) && peaks.fp32 > 0);
  EXPECT_EQ(peaks.bf16, 0); // not asked for
}
