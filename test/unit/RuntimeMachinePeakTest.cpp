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
