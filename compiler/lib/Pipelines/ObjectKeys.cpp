//===- ObjectKeys.cpp - what determines each object of an executable ------===//
//
// Every field of a kernel spec is written into its key through a structured
// binding, which stops compiling when a field is added or removed: a new
// field must be added here too, or two kernels that differ only in it would
// share one object.
//
//===----------------------------------------------------------------------===//

#include "xf/Pipelines/ObjectKeys.h"
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

std::string scheduleKey(const GemmSchedule &schedule) {
  const auto &[tileCols, tileRows, kBlock, packWeights, rowsPerTask, panelCols, gemvRowsBelow,
               gemvRowsPerPass, gemvTasks] = schedule;
  return llvm::formatv("schedule tileCols={0} tileRows={1} kBlock={2} packWeights={3} "
                       "rowsPerTask={4} panelCols={5} gemvRowsBelow={6} gemvRowsPerPass={7} "
                       "gemvTasks={8}\n",
                       tileCols, tileRows, kBlock, packWeights, rowsPerTask, panelCols,
                       gemvRowsBelow, gemvRowsPerPass, gemvTasks)
      .str();
}

std::string scheduleKey(const GpuGemmSchedule &schedule) {
  const auto &[registerTiles, regTileCols, regTileRows, regTallRows, regTallTileRows,
               regThreadRows, regUnrollK, tileCols, tileRows, threadCols, threadRows, sliceK,
               gemvCols, gemvSlices, gemvLaneCols, regSplitK, regFillBlocks] = schedule;
  return llvm::formatv("gpu schedule registerTiles={0} regTileCols={1} regTileRows={2} "
                       "regTallRows={3} regTallTileRows={4} regThreadRows={5} regUnrollK={6} "
                       "tileCols={7} tileRows={8} threadCols={9} threadRows={10} sliceK={11} "
                       "gemvCols={12} gemvSlices={13} gemvLaneCols={14} regSplitK={15} "
                       "regFillBlocks={16}\n",
                       registerTiles, regTileCols, regTileRows, regTallRows, regTallTileRows,
                       regThreadRows, regUnrollK, tileCols, tileRows, threadCols, threadRows,
                       sliceK, gemvCols, gemvSlices, gemvLaneCols, regSplitK, regFillBlocks)
      .str();
}

std::string scheduleKey(const AttentionSchedule &schedule) {
  const auto &[queryBlock, keyBlock, rowTile, decodeKeyTile] = schedule;
  return llvm::formatv("schedule queryBlock={0} keyBlock={1} rowTile={2} decodeKeyTile={3}\n",
                       queryBlock, keyBlock, rowTile, decodeKeyTile)
      .str();
}

} // namespace

std::string mlir::xf::gemmObjectKey(const GemmKernelSpec &spec, llvm::StringRef halideTarget) {
  const auto &[name, K, N, transposeWeight, bf16Weights, bf16Activations, weightBlocks,
               packedWeight, hasBias, hasResidual, epilogue, schedule, gpuSchedule] = spec;
  return kernelPrelude(halideTarget) +
         llvm::formatv("gemm name={0} K={1} N={2} transposeWeight={3} bf16Weights={4} "
                       "bf16Activations={5} weightBlocks={9} packedWeight={10} hasBias={6} "
                       "hasResidual={7} epilogue={8}\n",
                       name, K, N, transposeWeight, bf16Weights, bf16Activations, hasBias,
                       hasResidual, int(epilogue), weightBlocksName(weightBlocks), packedWeight)
             .str() +
         scheduleKey(schedule) + scheduleKey(gpuSchedule);
}

std::string mlir::xf::attentionObjectKey(const AttentionKernelSpec &spec,
                                         llvm::StringRef halideTarget) {
  const auto &[name, heads, dK, dV, kvHeads, causal, scale, rope, ropeBase, ropeKeys, batchedDecode,
               halfKeyValues, segmented, schedule] = spec;
  // The scale and rope base in hexadecimal: every bit is a constant in the kernel.
  char scaleText[64], baseText[64];
  std::snprintf(scaleText, sizeof(scaleText), "%a", scale);
  std::snprintf(baseText, sizeof(baseText), "%a", ropeBase);
  return kernelPrelude(halideTarget) +
         llvm::formatv("attention name={0} heads={1} dK={2} dV={3} kvHeads={4} causal={5} "
                       "scale={6} rope={7} ropeBase={8} ropeKeys={9} batchedDecode={10} "
                       "segmented={11} halfKeyValues={12}\n",
                       name, heads, dK, dV, kvHeads, causal, scaleText, int(rope), baseText,
                       ropeKeys, batchedDecode, segmented, halfKeyValues)
             .str() +
         scheduleKey(schedule);
}

std::string mlir::xf::deviceLoopObjectKey(const DeviceLoopKernelSpec &spec,
                                          llvm::StringRef halideTarget) {
  const auto &[name, kind, width, heads, headWidth, constant, map, flag, affineParams] = spec;
  char constantText[64]; // every bit of it is a constant in the kernel
  std::snprintf(constantText, sizeof(constantText), "%a", constant);
  return kernelPrelude(halideTarget) +
         llvm::formatv("loop name={0} kind={1} width={2} heads={3} headWidth={4} constant={5} "
                       "map={6} flag={7} affineParams={8}\n",
                       name, int(kind), width, heads, headWidth, constantText, int(map), flag,
                       affineParams)
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
