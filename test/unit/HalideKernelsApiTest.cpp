//===- HalideKernelsApiTest.cpp - Targets, objects and loop-nest text -----===//
//
// The AOT side of HalideKernels.h: target strings, object files for the
// kernels and the runtime, the --emit=halide text, and errors as values.
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/HalideKernels.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace mlir::xf;

namespace {

std::string tempPath(llvm::StringRef name) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("xf-halide-kernels", dir));
  llvm::sys::path::append(dir, name);
  return std::string(dir);
}

uint64_t fileSize(const std::string &path) {
  uint64_t size = 0;
  return llvm::sys::fs::file_size(path, size) ? 0 : size;
}

GemmKernelSpec smallGemm() {
  GemmKernelSpec spec;
  spec.name = "xf_test_gemm";
  spec.K = 64;
  spec.N = 100;
  spec.hasBias = true;
  spec.epilogue = GemmEpilogue::GeluTanh;
  return spec;
}

AttentionKernelSpec smallAttention() {
  AttentionKernelSpec spec;
  spec.name = "xf_test_attention";
  spec.heads = 2;
  spec.dK = spec.dV = 16;
  spec.causal = true;
  spec.scale = 0.25;
  return spec;
}

TEST(HalideKernelsApi, HostTargetIsConcreteWithoutRuntime) {
  llvm::Expected<std::string> host = halideTargetString("host");
  ASSERT_TRUE(bool(host)) << llvm::toString(host.takeError());
  EXPECT_NE(host->find("no_runtime"), std::string::npos) << *host;
  EXPECT_EQ(host->find("host"), std::string::npos) << *host;

  llvm::Expected<std::string> avx2 = halideTargetString("x86-64-linux-avx2-fma");
  ASSERT_TRUE(bool(avx2)) << llvm::toString(avx2.takeError());
  EXPECT_NE(avx2->find("avx2"), std::string::npos);
  EXPECT_NE(avx2->find("no_runtime"), std::string::npos);
}

TEST(HalideKernelsApi, InvalidTargetIsAnError) {
  llvm::Expected<std::string> bad = halideTargetString("x86-64-linux-avx9000");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("avx9000"), std::string::npos);
  llvm::Error err = compileGemmKernel(smallGemm(), "not-a-target", tempPath("g.o"));
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("not-a-target"), std::string::npos);
}

TEST(HalideKernelsApi, CompilesObjectsForKernelsAndRuntime) {
  std::string gemmObject = tempPath("gemm.o"), attentionObject = tempPath("attention.o");
  std::string runtimeObject = tempPath("runtime.o"), avx2Object = tempPath("gemm_avx2.o");
  ASSERT_FALSE(bool(compileGemmKernel(smallGemm(), "host", gemmObject)));
  ASSERT_FALSE(bool(compileGemmKernel(smallGemm(), "x86-64-linux-avx2-fma", avx2Object)));
  ASSERT_FALSE(bool(compileAttentionKernel(smallAttention(), "host", attentionObject)));
  ASSERT_FALSE(bool(compileHalideRuntime("host", runtimeObject)));
  EXPECT_GT(fileSize(gemmObject), 1000u);
  EXPECT_GT(fileSize(avx2Object), 1000u);
  EXPECT_GT(fileSize(attentionObject), 1000u);
  EXPECT_GT(fileSize(runtimeObject), fileSize(gemmObject));
}

TEST(HalideKernelsApi, DescribesLoopNests) {
  llvm::Expected<std::string> gemm = describeGemmKernel(smallGemm(), "host");
  ASSERT_TRUE(bool(gemm)) << llvm::toString(gemm.takeError());
  EXPECT_NE(gemm->find("packed_weight"), std::string::npos);
  EXPECT_NE(gemm->find("parallel"), std::string::npos);
  llvm::Expected<std::string> attention = describeAttentionKernel(smallAttention(), "host");
  ASSERT_TRUE(bool(attention)) << llvm::toString(attention.takeError());
  EXPECT_NE(attention->find("softmax_state"), std::string::npos);
}

TEST(HalideKernelsApi, InvalidSpecIsAnError) {
  GemmKernelSpec gemm = smallGemm();
  gemm.schedule.kBlock = 0;
  llvm::Error err = compileGemmKernel(gemm, "host", tempPath("bad.o"));
  ASSERT_TRUE(bool(err));
  llvm::consumeError(std::move(err));
  AttentionKernelSpec attention = smallAttention();
  attention.dK = -1;
  llvm::Expected<std::string> text = describeAttentionKernel(attention, "host");
  ASSERT_FALSE(bool(text));
  llvm::consumeError(text.takeError());
}

} // namespace
