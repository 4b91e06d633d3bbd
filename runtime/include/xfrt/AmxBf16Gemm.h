//===- AmxBf16Gemm.h - bf16 GEMMs on AMX tiles ---------------------*- C++ -*-===//
//
// The multi-row GEMMs of `xfc --bf16-gemm-inputs` (bf16 weights packed at load, x rounded to
// bfloat16, float32 sums; docs/pipeline.md) on AMX tiles, where the CPU and OS allow it
// (xfrt/Amx.h: amxBf16Usable): tdpbf16ps multiplies 16 rows of x by 16 weight columns over 32
// of K in one instruction, where vdpbf16ps does 16 columns of one row over 2. The weight is the
// one the Halide kernel reads, packed at load in pairs of K rows per register tile of
// `tileCols` columns — (r + 2·nj, kk, nt) = W(nt·tileCols + nj, 2·kk + r), zero past N and K
// (gated: gate and up tiles alternating) — which is an AMX B tile as it is: 16 columns of one
// tile are 16 rows of 64 bytes `4·tileCols` bytes apart. x is rounded as the Halide kernel
// rounds it (nearest even; NaN as 0x7fc0), and the epilogue (bias, activation, SwiGLU,
// residual) is libxfrt's GemmEpilogue.
//
// Hand-written rather than Halide: Halide 21 has no AMX bf16 lowering for this product, and
// the path is chosen when the call runs (cpuid and Linux's permission), so one executable has
// both; where AMX cannot run, xfrt_amx_bf16_gemm returns 1 and the caller runs its Halide
// kernel (vdpbf16ps where the CPU has AVX512-BF16).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_AMXBF16GEMM_H
#define XFRT_AMXBF16GEMM_H

#include <cstdint>

namespace xfrt {

/// x rounded to bfloat16 as the --bf16-gemm-inputs Halide GEMM rounds it: to nearest even by
/// integer arithmetic (denormals kept, as bits), every NaN as 0x7fc0.
uint16_t roundToBf16(float x);

/// What amxBf16Gemm multiplies on: AMX tiles (where amxBf16Usable), or the tile operations
/// written out in C++ (AmxEmulated: tileloadd, tdpbf16ps as Intel's SDM states its rounding and
/// order — two float32 chains per output, the even and the odd products of the pairs, FMA with
/// round-to-nearest-even, bf16 denormal inputs read as zero and denormal results flushed, then
/// dest + (even + odd) — and tilestored), which checks this path's layout and order on any CPU
/// with AVX-512.
enum class Bf16GemmTiles : int32_t { Amx, AmxEmulated };

/// xfrt_amx_bf16_gemm on the given tiles. Returns 1, having done nothing, where (Amx) this
/// process may not use AMX bf16 or (AmxEmulated) the CPU has no AVX-512; else as
/// xfrt_amx_bf16_gemm.
int32_t amxBf16Gemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                    const uint16_t *packedWeight, int64_t tileCols, int64_t N, const float *bias,
                    const float *residual, int64_t residualStride, int64_t epilogue, float *out,
                    int64_t outStride, Bf16GemmTiles tiles);

} // namespace xfrt

extern "C" {
/// out[m, n] = act(x̂[m]·W[n] + bias[n]) + residual[m, n] for m < rows, n < N: x̂ = x rounded
/// to bfloat16 (xfrt::roundToBf16), W the bf16 weight packed at load for register tiles of
/// `tileCols` columns (a multiple of 16; layout above; SwiGLU: gate and up tiles alternate,
/// out = silu(gate + bias[n])·(up + bias[N + n])), float32 sums. `bias` and `residual` may be
/// null; strides are in floats; `epilogue` numbers as xfrt::BlockEpilogue. Runs as tasks on the
/// Halide runtime's thread pool when the executable has one. Returns 0; 1, having done
/// nothing, where this process may not use AMX bf16 (the caller runs its Halide kernel); -1 for
/// arguments it does not handle.
int32_t xfrt_amx_bf16_gemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                           const uint16_t *packedWeight, int64_t tileCols, int64_t N,
                           const float *bias, const float *residual, int64_t residualStride,
                           int64_t epilogue, float *out, int64_t outStride);
}

#endif // XFRT_AMXBF16GEMM_H
