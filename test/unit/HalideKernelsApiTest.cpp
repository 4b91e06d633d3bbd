//===- HalideKernelsApiTest.cpp - Targets, objects and loop-nest text -----===//
//
// The AOT side of HalideKernels.h: target strings, object files for the
// kernels and the runtime, the --emit=halide text, and errors as values.
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/HalideKernels.h"

#include "KernelPipelines.h"

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

// cpuid words of an AMD Zen 4 (leaf 1 ECX: SSE4.1, FMA, OSXSAVE, AVX, F16C; leaf 7 EBX: AVX2,
// AVX-512 F, DQ, IFMA, CD, BW, VL; ECX: VBMI, VNNI; leaf 7.1 EAX: BF16) with the ZMM state on.
X86CpuFeatureWords zen4Words() {
  X86CpuFeatureWords w;
  w.leaf1Ecx = 1u << 19 | 1u << 12 | 1u << 27 | 1u << 28 | 1u << 29;
  w.leaf7Ebx = 1u << 5 | 1u << 16 | 1u << 17 | 1u << 21 | 1u << 28 | 1u << 30 | 1u << 31;
  w.leaf7Ecx = 1u << 1 | 1u << 11;
  w.leaf7Sub1Eax = 1u << 5;
  w.xcr0 = 0xe7;
  return w;
}

// What Halide's get_host_target() says of a Zen 4 from its family and model alone.
const char *kHalideZen4 = "x86-64-linux-avx-avx2-avx512-avx512_cannonlake-avx512_skylake-"
                          "avx512_zen4-f16c-fma-sse41";

TEST(HalideKernelsApi, HostTargetKeepsWhatTheCpuAndOsEnable) {
  const Halide::Target zen4(kHalideZen4);
  std::vector<std::string> dropped;
  EXPECT_EQ(x86TargetWithinCpu(zen4, zen4Words(), &dropped), zen4);
  EXPECT_TRUE(dropped.empty());

  // A VM that hides AVX-512 from cpuid (an EPYC Zen 4 with AVX2 only): Halide still names it.
  X86CpuFeatureWords hidden = zen4Words();
  hidden.leaf7Ebx = 1u << 5, hidden.leaf7Ecx = 0, hidden.leaf7Sub1Eax = 0, hidden.xcr0 = 0x7;
  Halide::Target t = x86TargetWithinCpu(zen4, hidden, &dropped);
  EXPECT_EQ(t, Halide::Target("x86-64-linux-avx-avx2-f16c-fma-sse41")) << t.to_string();
  EXPECT_EQ(dropped.size(), 4u);

  // cpuid has AVX-512 but the OS leaves the ZMM state off in XCR0.
  X86CpuFeatureWords noZmm = zen4Words();
  noZmm.xcr0 = 0x7;
  EXPECT_FALSE(x86TargetWithinCpu(zen4, noZmm).has_feature(Halide::Target::AVX512));
  EXPECT_TRUE(x86TargetWithinCpu(zen4, noZmm).has_feature(Halide::Target::AVX2));

  // A Skylake-X: AVX-512 without IFMA, VBMI, VNNI, BF16 keeps only avx512_skylake's level.
  X86CpuFeatureWords skylake = zen4Words();
  skylake.leaf7Ebx &= ~(1u << 21), skylake.leaf7Ecx = 0, skylake.leaf7Sub1Eax = 0;
  t = x86TargetWithinCpu(zen4, skylake);
  EXPECT_TRUE(t.has_feature(Halide::Target::AVX512_Skylake));
  EXPECT_FALSE(t.has_feature(Halide::Target::AVX512_Cannonlake));
  EXPECT_FALSE(t.has_feature(Halide::Target::AVX512_Zen4));

  // No OS AVX state at all: SSE4.1 only.
  X86CpuFeatureWords sse = zen4Words();
  sse.xcr0 = 0x3;
  t = x86TargetWithinCpu(zen4, sse);
  EXPECT_EQ(t, Halide::Target("x86-64-linux-sse41"));

  // Other architectures are not x86's to judge.
  const Halide::Target arm("arm-64-linux-arm_dot_prod");
  EXPECT_EQ(x86TargetWithinCpu(arm, X86CpuFeatureWords{}), arm);

  // This machine: "host" holds none of what it leaves out.
  const Halide::Target host = hostHalideTarget();
  for (const std::string &feature : hostFeaturesLeftOut())
    EXPECT_FALSE(host.has_feature(Halide::Target::feature_from_name(feature)))
        << host.to_string() << " " << feature;
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
