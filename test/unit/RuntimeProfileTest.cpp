//===- RuntimeProfileTest.cpp - --profile reads kernels against their peak -===//
//
// The roofline reads a kernel against the peak of the products its call runs on
// (KernelSpec::products), and a bf16 / int8 kernel whose call takes AMX tiles (KernelSpec::amx)
// against the tiles' peak exactly where this process may use them. No time is asserted.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestSupport.h"

#include "xfrt/Amx.h"
#include "xfrt/MachinePeak.h"
#include "xfrt/Manifest.h"
#include "xfrt/Profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace {

/// One recorded call of each kernel of `m` (~1 ms each, 64 rows).
void recordOneCallEach(const xfrt::Manifest &m) {
  xfrt::profileStart(m.kernels.size());
  for (size_t site = 0; site < m.kernels.size(); ++site) {
    xfrt_profile_enter(int32_t(site));
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    while (std::chrono::steady_clock::now() < until) {
    }
    xfrt_profile_exit(int32_t(site), 64, 0);
  }
  xfrt::profileStop();
}

xfrt::KernelSpec gemm(const char *name, const char *products, bool amx) {
  xfrt::KernelSpec k;
  k.name = name, k.kind = "gemm", k.products = products, k.amx = amx;
  k.flopsPerRow = 1'000'000;
  return k;
}

TEST(RuntimeProfile, AmxKernelsReadAgainstTheTilesWhereUsable) {
  xfrt::Manifest m;
  m.kernels = {gemm("bf16_amx", "bf16", true), gemm("int8_amx", "int8", true),
               gemm("bf16_dot", "bf16", false)};
  recordOneCallEach(m);
  xfrt::MachineCeilings c{100, 10, "test"};
  c.bf16Gflops = 200, c.int8Gops = 400, c.amxBf16Gflops = 1600, c.amxInt8Gops = 3200;
  const std::string table = xfrt::profileTable(m, 64, 64, 1, &c);
  auto has = [&](const char *line) { return table.find(line) != std::string::npos; };
  // The kernel without an AMX call reads the vdpbf16ps peak everywhere.
  EXPECT_TRUE(has("roofline: bf16 dot-product peak 200.0 GFLOP/s for its kernels")) << table;
  EXPECT_EQ(xfrt::amxBf16Usable(),
            has("roofline: AMX bf16 tiles' peak (rows past the GEMV) 1600.0 GFLOP/s"))
      << table;
  EXPECT_EQ(xfrt::amxInt8Usable(),
            has("roofline: AMX int8 tiles' peak (rows past the GEMV) 3200.0 GOP/s"))
      << table;
  EXPECT_EQ(!xfrt::amxInt8Usable(), has("roofline: int8 dot-product peak 400.0 GOP/s")) << table;

  // The JSON says which kernels ran on the tiles, and the tiles' peaks.
  xfrt::test::TempDir dir;
  const std::string path = dir.file("profile.json");
  ASSERT_TRUE(bool(xfrt::writeProfileJson(path, m, 64, 64, 1, &c)));
  std::stringstream json;
  json << std::ifstream(path).rdbuf();
  const std::string text = json.str();
  EXPECT_NE(text.find("\"amx_bf16_gflops\": 1600, \"amx_int8_gops\": 3200"), std::string::npos)
      << text;
  const size_t amxKernels = (xfrt::amxBf16Usable() ? 1 : 0) + (xfrt::amxInt8Usable() ? 1 : 0);
  size_t found = 0;
  for (size_t at = text.find("\"amx\": true"); at != std::string::npos;
       at = text.find("\"amx\": true", at + 1))
    ++found;
  EXPECT_EQ(found, amxKernels) << text;
}

} // namespace
