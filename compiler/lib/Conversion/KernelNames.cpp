//===- KernelNames.cpp - one Halide pipeline per distinct spec ------------===//
//
// The exported name of each GEMM and attention kernel: specs with one
// signature and schedule share a pipeline (the same GEMM in every layer), so
// HostProgram gets each spec once.
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

std::string gemmKey(const GemmKernelSpec &s) {
  const GemmSchedule &c = s.schedule;
  return kernelSignature(s) + (s.packedWeight ? " packed" : "") +
         llvm::formatv(" | {0} {1} {2} {3} {4} {5} {6} {7} {8}", c.tileCols, c.tileRows, c.kBlock,
                       c.packWeights, c.rowsPerTask, c.panelCols, c.gemvRowsBelow,
                       c.gemvRowsPerPass, c.gemvTasks)
             .str();
}

std::string attentionKey(const AttentionKernelSpec &s) {
  const AttentionSchedule &c = s.schedule;
  return kernelSignature(s) +
         llvm::formatv(" | {0} {1} {2} {3}", c.queryBlock, c.keyBlock, c.rowTile, c.decodeKeyTile)
             .str();
}

} // namespace

std::string HostLowering::nameKernel(GemmKernelSpec &spec) {
  return kernelName(gemmKey(spec), "xf_gemm_", program.gemms, spec);
}

std::string HostLowering::nameKernel(AttentionKernelSpec &spec) {
  return kernelName(attentionKey(spec), "xf_attention_", program.attentions, spec);
}
