//===- ObjectKeys.cpp - what determines each object of an executable ------===//
//
// A GEMM's or attention's key holds its kernel description's text
// (#xf.gemm_kernel / #xf.attention_kernel, KernelSpecs.h), which has every
// field of the spec (gemmKernelAttr reads them through a structured binding
// that stops compiling when a field is added). The device loop kernels still
// bind their spec's fields here.
//
//===----------------------------------------------------------------------===//

#include "xf/Pipelines/ObjectKeys.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <vector>

using namespace mlir::xf;

namespace {

std::string kernelPrelude(llvm::StringRef halideTarget) {
  return llvm::formatv("xf {0}\nhalide {1}\nkernel generator {2}\ntarget {3}\n", kXfVersion,
                       XF_HALIDE_VERSION, kKernelGeneratorIdentity, halideTarget)
      .str();
}

} // namespace

std::string mlir::xf::gemmObjectKey(MLIRContext *ctx, const GemmKernelSpec &spec,
                                   llvm::StringRef halideTarget) {
  return kernelPrelude(halideTarget) + "gemm name=" + spec.name + "\n" +
         kernelText(gemmKernelAttr(ctx, spec)) + "\n";
}

std::string mlir::xf::attentionObjectKey(MLIRContext *ctx, const AttentionKernelSpec &spec,
                                         llvm::StringRef halideTarget) {
  return kernelPrelude(halideTarget) + "attention name=" + spec.name + "\n" +
         kernelText(attentionKernelAttr(ctx, spec)) + "\n";
}

std::string mlir::xf::deviceLoopObjectKey(const DeviceLoopKernelSpec &spec,
                                          llvm::StringRef halideTarget) {
  const auto &[name, kind, width, heads, headWidth, constant, map, flag, affineParams,
               rowPositions] = spec;
  char constantText[64]; // every bit of it is a constant in the kernel
  std::snprintf(constantText, sizeof(constantText), "%a", constant);
  // rowPositions only where set: the other kernels keep their keys.
  return kernelPrelude(halideTarget) +
         llvm::formatv("loop name={0} kind={1} width={2} heads={3} headWidth={4} constant={5} "
                       "map={6} flag={7} affineParams={8}{9}\n",
                       name, int(kind), width, heads, headWidth, constantText, int(map), flag,
                       affineParams, rowPositions ? " rowPositions=1" : "")
             .str();
}

std::string mlir::xf::halideRuntimeObjectKey(llvm::StringRef halideTarget) {
  return kernelPrelude(halideTarget) + "halide runtime\n";
}

std::string mlir::xf::hostObjectKey(llvm::StringRef hostModule, int optLevel) {
  std::vector<std::string> features;
  for (auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    features.push_back((enabled ? "+" : "-") + feature.str());
  std::sort(features.begin(), features.end()); // a StringMap's order is not stable
  return llvm::formatv("xf {0}\nllvm {1}\nhost codegen {2}\ntriple {3}\ncpu {4}\nfeatures {5}\n"
                       "O{6}\n",
                       kXfVersion, LLVM_VERSION_STRING, kHostCodegenIdentity,
                       llvm::sys::getDefaultTargetTriple(), llvm::sys::getHostCPUName(),
                       llvm::join(features, ","), optLevel)
             .str() +
         hostModule.str();
}

ObjectDigest mlir::xf::digestOf(llvm::StringRef key) {
  return llvm::SHA256::hash(llvm::arrayRefFromStringRef(key));
}
