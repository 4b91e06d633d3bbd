//===- GemmEpilogue.h - libxfrt's GEMM epilogues: bias, activation, residual -*- C++ -*-===//
//
// What libxfrt's hand-written GEMMs (BlockGemv.cpp: the 8-bit block GEMV and GEMM;
// AmxBf16Gemm.cpp: bf16 on AMX tiles) do with their sums, as the Halide GEMM's epilogue
// (GemmAlgorithm.cpp) does: + bias, the activation (SwiGLU: silu(gate + bias)·(up + bias_up)),
// + residual, stored. Internal to libxfrt.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_LIB_GEMMEPILOGUE_H
#define XFRT_LIB_GEMMEPILOGUE_H

#include "xfrt/BlockGemv.h"

#include <cstdint>

namespace xfrt::gemm {

/// A call's epilogue: out[m·outStride + n] = act(sum + bias[n]) + residual[m·residualStride + n]
/// (SwiGLU: the up sums' bias at bias[N + n]); bias and residual may be null.
struct Epilogue {
  const float *bias, *residual;
  int64_t N, residualStride, outStride;
  BlockEpilogue epilogue;
  bool vector512; // finishGroupAvx512 where it applies (the CPU has AVX-512)
  float *out;
};

/// The activation of one sum (as the Halide epilogue; SwiGlu: silu of the gate).
float activate(BlockEpilogue epilogue, float a);

/// Output columns [n0, +count ≤ 16) of input row m from their sums `pre` (and the up rows'
/// `up` for SwiGLU); `pre` is overwritten. In 512-bit vectors where `vector512` and the
/// activation allows: the same IEEE operations in the same order, so the same bits.
void finishGroup(const Epilogue &e, int64_t m, int64_t n0, int count, float *pre, const float *up);

/// A panel's sums: 32 output columns a row, or for SwiGLU 16 gate then 16 up sums.
constexpr int kPanelCols = 32;

/// The epilogue of input rows [m0, m0 + rows) of a panel of output columns [n0, +count)
/// (count ≤ 32, SwiGLU ≤ 16) from its sums `out[r]`; full panels without an activation and
/// SwiGLU panels in 512-bit vectors inline, the rest by finishGroup: the same bits either way.
void finishPanelRows(const Epilogue &e, int64_t m0, int rows, int64_t n0, int count,
                     float (*out)[kPanelCols]);

/// Prefetches what the epilogue of input rows [m0, +rows) of output columns [n0, +count) reads
/// and writes (their output and residual lines), while the tile before them runs: rows of a
/// column panel are a stride apart, lines the hardware did not fetch in time (the epilogue of
/// SmolLM2's down projection took 12 % of its GEMM without this).
void prefetchEpilogueRows(const Epilogue &e, int64_t m0, int64_t rows, int64_t n0, int count);

} // namespace xfrt::gemm

#endif // XFRT_LIB_GEMMEPILOGUE_H
