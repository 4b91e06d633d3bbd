//===- GemmSchedules.h - one schedule per GEMM path -------------*- C++ -*-===//
//
// The schedules of GemmAlgorithm.h's Funcs: GemmScheduleCpu.cpp and
// GemmScheduleCuda.cpp, one function per path; GemmKernel.cpp picks them.
// A new path (a GPU tile shape, another target) is a function here over the
// same Funcs.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_GEMMSCHEDULES_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_GEMMSCHEDULES_H

#include "GemmAlgorithm.h"

namespace mlir::xf {

/// CPU, M < gemvRowsBelow: parallel over column chunks (the first specialization).
void scheduleGemvCpu(const GemmKernelSpec &spec, GemmCpuFuncs &f);
/// CPU, a weight packed at load, float32 products, M <= kSmallRowTiles·tileRows.
void scheduleFewRowsCpu(GemmCpuFuncs &f);
/// CPU, the rest: panels × row blocks, register tiles per K block, weight staging.
void scheduleTiledCpu(const GemmKernelSpec &spec, GemmCpuFuncs &f);

/// The GEMV's unroll of a thread's K loop: the largest power of two up to kCudaGemvUnrollK
/// that divides its trip count `dotLength`.
int gemvUnrollK(int dotLength);
/// CUDA, M <= kCudaGemvRows: one block per group of columns (a specialization).
void scheduleGemvCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f);
/// CUDA, kCudaGemvRows < M <= kCudaBatchGemvRows: the batch GEMVs (specializations).
void scheduleBatchGemvCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f);
/// The batch GEMVs' block loop over columns (their Funcs are computed per block there).
inline Halide::Var cudaBatchGemvBlockVar() { return Halide::Var("nb"); }
/// CUDA, [K, N] weights with N a multiple of gpuSchedule.regTileCols: accumulators in registers.
void scheduleRegisterGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f);
/// CUDA, [N, K] weights with K a multiple of 4: accumulators in registers, row tiles fastest.
void scheduleNkRegisterGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f);
/// CUDA, the other GEMMs: K slices staged in shared memory.
void scheduleStagedGemmCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f);
/// CUDA, a norm prologue: each path's row statistics per thread block (GemmPrologue.cpp).
void scheduleGemmPrologueCuda(const GemmKernelSpec &spec, GemmCudaFuncs &f);
/// Without the GPU schedule: each path's row statistics computed once per call (unscheduled,
/// a reduction would be recomputed for every element of x read).
void computeGemmRowNormsAtRoot(GemmCudaFuncs &f);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_GEMMSCHEDULES_H
