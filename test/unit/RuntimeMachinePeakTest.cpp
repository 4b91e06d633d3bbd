//===- RuntimeMachinePeakTest.cpp - the measured ceilings are measured ----===//
//
// No speed is asserted (the machine is shared): only that each ceiling the
// CPU has is measured, and the bf16 dot product exactly where cpuinfo
// reports AVX512-BF16 (the int8 one where it reports AVX512-VNNI).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include "xfrt/Amx.h"
#include "xfrt/MachinePeak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace {

TEST(MachinePeak, Bf16DotProductPeakWhereTheCpuHasIt) {
  xfrt::MachinePeak peak = xfrt::measurePeak(1, /*withBf16=*/true);
  EXPECT_TRUE(std::isfinite(peak.gflops) && peak.gflops > 0);
  EXPECT_TRUE(std::isfinite(peak.readGBs) && peak.readGBs > 0);
  const bool hasBf16 = (" " + peak.flags + " ").find(" avx512_bf16 ") != std::string::npos;
  EXPECT_EQ(hasBf16, peak.bf16Gflops > 0) << "flags: " << peak.flags;
  EXPECT_TRUE(std::isfinite(peak.bf16Gflops));
  const bool hasVnni = (" " + peak.flags + " ").find(" avx512_vnni ") != std::string::npos;
  EXPECT_EQ(hasVnni, peak.int8Gops > 0) << "flags: " << peak.flags;
  EXPECT_TRUE(std::isfinite(peak.int8Gops));
  // The AMX tiles' peaks exactly where this process may use them (0 without running one).
  EXPECT_EQ(xfrt::amxBf16Usable(), peak.amxBf16Gflops > 0) << xfrt::amxBf16Unusable();
  EXPECT_EQ(xfrt::amxInt8Usable(), peak.amxInt8Gops > 0) << xfrt::amxInt8Unusable();
  EXPECT_TRUE(std::isfinite(peak.amxBf16Gflops) && std::isfinite(peak.amxInt8Gops));
}

// The cache keeps the product peaks, AMX's included: a second read measures nothing; an entry
// written before the AMX peaks were kept is measured again when the products are asked for.
TEST(MachinePeak, CacheKeepsTheAmxPeaks) {
  xfrt::test::TempDir dir;
  const std::string file = dir.file("machine.json");
  int measured = 0;
  auto measure = [&]() -> xfrt::Expected<xfrt::MachineCeilings> {
    ++measured;
    xfrt::MachineCeilings c{100, 10, "measured"};
    c.bf16Gflops = 200, c.int8Gops = 400, c.amxBf16Gflops = 1600, c.amxInt8Gops = 3200;
    return c;
  };
  std::string note;
  xfrt::MachineCeilings first = xfrt::keptCeilings("cpu", file, note, 0, measure, true);
  xfrt::MachineCeilings second = xfrt::keptCeilings("cpu", file, note, 0, measure, true);
  EXPECT_EQ(measured, 1) << note;
  EXPECT_EQ(second.amxBf16Gflops, 1600);
  EXPECT_EQ(second.amxInt8Gops, 3200);
  EXPECT_EQ(second.bf16Gflops, 200);
  EXPECT_EQ(first.amxInt8Gops, second.amxInt8Gops);
  {
    std::ofstream old(file, std::ios::trunc);
    old << R"({"cpu": {"gflops": 100, "read_gbs": 10, "bf16_gflops": 200, "int8_gops": 400}})";
  }
  xfrt::MachineCeilings third = xfrt::keptCeilings("cpu", file, note, 0, measure, true);
  EXPECT_EQ(measured, 2) << note;
  EXPECT_EQ(third.amxBf16Gflops, 1600);
  xfrt::MachineCeilings fourth = xfrt::keptCeilings("cpu", file, note, 0, measure, false);
  EXPECT_EQ(measured, 2) << note; // fp32 only: any entry serves
  EXPECT_EQ(fourth.amxBf16Gflops, 1600);
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
  EXPECT_EQ(peaks.int8, 0); // measurePeak's only
}

// A kept entry is measured again only when it came from a busy (or unrecorded) machine and the
// machine is quiet now; 2 CPUs, 2 threads: busy above a load of 0.75.
TEST(MachinePeak, BusyCeilingsAreMeasuredAgainWhenQuiet) {
  EXPECT_FALSE(xfrt::measuredBusy(0.5, 2, 2));
  EXPECT_TRUE(xfrt::measuredBusy(1.2, 2, 2));
  EXPECT_FALSE(xfrt::measuredBusy(1.2, 4, 2)); // two CPUs are free for the other work
  EXPECT_TRUE(xfrt::measuredBusy(3.0, 4, 2));
  EXPECT_FALSE(xfrt::measuredBusy(-1, 2, 2)); // unknown
  EXPECT_TRUE(xfrt::remeasureCeilings(11.3, 0.2, 2, 2));   // busy then, quiet now
  EXPECT_FALSE(xfrt::remeasureCeilings(11.3, 5.0, 2, 2));  // busy then and now: kept
  EXPECT_FALSE(xfrt::remeasureCeilings(0.1, 0.2, 2, 2));   // quiet then: kept
  EXPECT_TRUE(xfrt::remeasureCeilings(-1, 0.2, 2, 2));     // not recorded: measured once more
  EXPECT_FALSE(xfrt::remeasureCeilings(-1, -1, 2, 2));     // no load average: kept
  EXPECT_GE(xfrt::loadAverage(), 0); // Linux has /proc/loadavg
}
