//===- RuntimeMlirGemmLaunchTest.cpp - libxfrt's gate of a GEMM's MLIR kernel -===//
//
// xfrt_tensor_core_gemm (TensorCoreLaunch.cpp) decides before any CUDA call whether the MLIR
// kernel (tensor cores, fp32 FMA) runs a call: fewer rows than the plan's minimum, or an
// operand it cannot read with its 16-byte accesses, leave the call to Halide's pipeline
// (kNotTaken, 1), the latter said once a kernel on stderr. Without a CUDA driver a call the
// kernel takes fails (no context): that is how these tests see it taken.
//
//===----------------------------------------------------------------------===//
#include "HalideBufferLayout.h"
#include "xfrt/GpuGemmAbi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using xfrt::HalideBuffer;
using xfrt::HalideDimension;

extern "C" int xfrt_tensor_core_gemm(const char *ptx, const char *entry, int64_t n, int64_t k,
                                     int64_t flags, int64_t minRows, int64_t tallRows,
                                     int64_t wideShared, HalideBuffer *x, HalideBuffer *w,
                                     HalideBuffer *bias, HalideBuffer *residual,
                                     HalideBuffer *gamma, HalideBuffer *beta, HalideBuffer *out,
                                     HalideBuffer *partials, const char *sm90a);

namespace {

using xfrt::gpu_gemm::kNotTaken;

// A device buffer of `rows` rows of `columns` floats (row stride `stride`) at `address`.
struct DeviceMatrix {
  std::vector<HalideDimension> dims;
  HalideBuffer buffer{};
  DeviceMatrix(uint64_t address, int32_t columns, int32_t rows, int32_t stride) {
    dims = {{0, columns, 1, 0}, {0, rows, stride, 0}};
    buffer.device = address;
    buffer.code = 2, buffer.bits = 32, buffer.lanes = 1;
    buffer.dimensions = 2;
    buffer.dim = dims.data();
  }
};

// A GEMM call of `rows` rows, K = N = 64, x at `xAddress` with row stride `xStride`.
int call(int32_t rows, uint64_t xAddress, int32_t xStride, const char *entry) {
  DeviceMatrix x(xAddress, 64, rows, xStride), w(0x20000, 64, 64, 64), out(0x40000, 64, rows, 64);
  DeviceMatrix partials(0x80000, 1 << 16, 1, 1 << 16);
  partials.dims.resize(1);
  partials.buffer.dimensions = 1;
  return xfrt_tensor_core_gemm("", entry, 64, 64, /*flags=*/0, /*minRows=*/17,
                               /*tallRows=*/512, /*wideShared=*/0, &x.buffer, &w.buffer, nullptr,
                               nullptr, nullptr, nullptr, &out.buffer, &partials.buffer,
                               /*sm90a=*/nullptr);
}

TEST(RuntimeMlirGemmLaunch, FewRowsAreHalides) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(call(16, 0x10000, 64, "few_rows_fma"), kNotTaken);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(RuntimeMlirGemmLaunch, MisalignedOperandFallsBackToHalideOnceSaid) {
  testing::internal::CaptureStderr();
  // x 4 bytes off 16, then a row stride that is no multiple of 4 floats: Halide's pipeline.
  EXPECT_EQ(call(32, 0x10004, 64, "misaligned_fma"), kNotTaken);
  EXPECT_EQ(call(32, 0x10000, 66, "misaligned_fma"), kNotTaken);
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("note: GEMM kernel misaligned_fma: x is not aligned to 16 bytes per row"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("Halide's pipeline beside it runs the call"), std::string::npos) << said;
  EXPECT_EQ(said.find("note:", said.find("note:") + 1), std::string::npos)
      << "said twice: " << said;
}

TEST(RuntimeMlirGemmLaunch, OperandPastThirtyTwoBitIndicesIsHalides) {
  // x and out of `rows` rows of 64 floats: the kernels' 32-bit indices address rows × 64 plus
  // kIndexSlack rows past the end below 2^31 elements, no more.
  const int32_t largest =
      int32_t((xfrt::gpu_gemm::kIndexLimit - 1) / 64 - xfrt::gpu_gemm::kIndexSlack);
  testing::internal::CaptureStderr();
  EXPECT_NE(call(largest, 0x10000, 64, "largest_fma"), kNotTaken);
  EXPECT_EQ(call(largest + 1, 0x10000, 64, "too_large_fma"), kNotTaken);
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.find("largest_fma"), std::string::npos) << said;
  EXPECT_NE(said.find("note: GEMM kernel too_large_fma: x has more elements than the kernel's "
                      "32-bit indices address; Halide's pipeline beside it runs the call"),
            std::string::npos)
      << said;
}

TEST(RuntimeMlirGemmLaunch, AlignedCallIsTheKernels) {
  // Taken: with no CUDA driver in this process, the launch itself fails (not kNotTaken).
  testing::internal::CaptureStderr();
  EXPECT_NE(call(32, 0x10000, 64, "aligned_fma"), kNotTaken);
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("note:"), std::string::npos);
}

} // namespace
