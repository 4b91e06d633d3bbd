//===- BlockGemv.h - Decode GEMMs on ggml blocks with 8-bit activations -*- C++ -*-===//
//
// The decode path of `xfc --quantized-like ... --q8-gemm-inputs` (docs/correctness.md, "Q8
// activations"): a GEMM whose weight is kept in Q8_0 / Q4_0 / Q4_1 blocks and whose input has
// fewer rows than the kernel's gemv_rows_below rounds each input row to Q8_0 blocks once per
// call, x̂ = d·q with d = max|x|/127 per block of 32 and q = round-half-even(x/d) (in double), and
// computes every block's Σ q_w·q_x exactly in 32-bit integers (AVX-512 VNNI vpdpbusd, AVX-VNNI,
// or AVX2 vpmaddubsw + vpmaddwd; a portable loop elsewhere). The result is the float32 dot
// product of the dequantized weight with x̂: only the rounding of x differs from the exact path.
//
// Hand-written rather than Halide: the instruction set is chosen when the call runs (cpuid),
// bounded by what the executable's target allows, so one executable has every path and the
// AVX2 one is testable on an AVX-512 machine; and a block's scale multiply belongs between the
// integer dot product and the float sum, which Halide's dot-product patterns do not express.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_BLOCKGEMV_H
#define XFRT_BLOCKGEMV_H

#include <cstdint>

namespace xfrt {

/// Instruction sets of the 8-bit dot products, narrowest first. xfc passes the widest its
/// target allows (a build for `host` allows all); the call uses the widest of those this CPU has.
enum class BlockDotIsa : int32_t { Portable = 0, Avx2 = 1, AvxVnni = 2, Avx512Vnni = 3 };

/// The widest instruction set at most `ceiling` that this CPU (and OS) supports.
BlockDotIsa blockDotIsaOfCpu(BlockDotIsa ceiling);
const char *blockDotIsaName(BlockDotIsa isa);

/// The GEMM epilogue, numbered as the compiler's GemmEpilogue (HalideKernels.h).
enum class BlockEpilogue : int32_t { None, Relu, GeluTanh, GeluErf, Silu, SwiGlu };

/// One row of K activations (K a multiple of 32) rounded to Q8_0 blocks: q[K], and per block b
/// meta[2b] = its scale d, meta[2b + 1] = d·Σq (for the offset terms of Q4_0, Q4_1, Q8_0).
/// `isa` Avx512Vnni (where blockDotIsaOfCpu allows it) rounds 16 values per instruction with
/// the same double division and round-half-even: bitwise the portable result.
void quantizeRowQ8(const float *x, int64_t K, int8_t *q, float *meta,
                   BlockDotIsa isa = BlockDotIsa::Portable);

/// What xfrt_block_gemm multiplies its panels on: AVX-512 VNNI (6 input rows at a time), AMX
/// int8 tiles (16 rows; where amxInt8Usable), or AMX's tile operations written out in C++
/// (AmxEmulated: the AMX path's layout and order, checked on any CPU with AVX-512 VNNI). All
/// three give the same bits: the integer sums are exact and the float operations the same.
enum class BlockGemmTiles : int32_t { Avx512Vnni, Amx, AmxEmulated };

/// xfrt_block_gemm on the given tiles. Returns 1, having done nothing, where this CPU has no
/// AVX-512 VNNI or (Amx) this process may not use AMX; else as xfrt_block_gemm.
int32_t blockGemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                  const uint8_t *weight, int64_t ggmlType, int64_t N, const float *bias,
                  const float *residual, int64_t residualStride, int64_t epilogue, float *out,
                  int64_t outStride, BlockGemmTiles tiles);

} // namespace xfrt

extern "C" {
/// out[m, n] = act(x̂[m]·W[n] + bias[n]) + residual[m, n] for m < rows, n < N, with W [N, K]
/// (SwiGLU: [2·N, K], gate rows then up rows; out = silu(gate + bias[n])·(up + bias[N + n]))
/// stored as ggml blocks of `ggmlType` (2 Q4_0, 3 Q4_1, 8 Q8_0), rows back to back. `bias` and
/// `residual` may be null; strides are in floats. Runs as tasks on the Halide runtime's thread
/// pool when the executable has one. Returns 0, or -1 for a type or K it does not handle.
int32_t xfrt_block_gemv(const float *x, int64_t xStride, int64_t rows, int64_t K,
                        const uint8_t *weight, int64_t ggmlType, int64_t N, const float *bias,
                        const float *residual, int64_t residualStride, int64_t epilogue,
                        float *out, int64_t outStride, int64_t isaCeiling);

/// The same product for many rows (prefill GEMMs of --q8-gemm-inputs): each task packs a panel
/// of 32 weight rows as u8 once and runs every input row over it, on AMX int8 tiles where this
/// process may use them (16 rows at a time), else AVX-512 VNNI (six at a time). The same x̂ and integer block sums as xfrt_block_gemv; the float sums of the blocks
/// are taken in another order. Returns 1, having done nothing, where the CPU (or the ceiling)
/// has no AVX-512 VNNI: the caller runs its Halide kernel instead.
int32_t xfrt_block_gemm(const float *x, int64_t xStride, int64_t rows, int64_t K,
                        const uint8_t *weight, int64_t ggmlType, int64_t N, const float *bias,
                        const float *residual, int64_t residualStride, int64_t epilogue,
                        float *out, int64_t outStride, int64_t isaCeiling);
}

#endif // XFRT_BLOCKGEMV_H
