//===- GemmTiling.h - a GEMM spec's checks and derived sizes ----*- C++ -*-===//
//
// Shared by the GEMM kernel's files (GemmKernel.cpp, GemmAlgorithm.cpp,
// GemmScheduleCpu.cpp, GemmWeightLayout.cpp);
// defined in GemmTiling.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_GEMMTILING_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_GEMMTILING_H

#include "xf/Codegen/HalideKernels.h"

namespace mlir::xf {

/// Tiles a GEMV over a weight packed at load reads at once: one stream
/// each through its K × tileCols block (one stream per core measured 1.4x
/// slower: the prefetchers want several).
constexpr int kGemvStreams = 4;

/// An error naming what is wrong with `spec` (sizes, schedule, weight storage).
llvm::Error validateGemm(const GemmKernelSpec &spec, int vectorWidth);

/// An error naming what the CUDA GEMM cannot build of `spec` (its schedules are fixed:
/// GGUF blocks, weights packed at load and bf16 activations are CPU-only).
llvm::Error validateGemmCuda(const GemmKernelSpec &spec);

/// Register tiles per parallel column panel when the schedule leaves panelCols at 0.
int64_t defaultPanelTiles(const GemmKernelSpec &spec);

/// Columns per parallel task of the GEMV path.
int64_t gemvChunkCols(const GemmKernelSpec &spec, int vectorWidth);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_GEMMTILING_H
