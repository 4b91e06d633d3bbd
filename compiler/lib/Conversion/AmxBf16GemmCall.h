//===- AmxBf16GemmCall.h - bf16 GEMMs on AMX tiles, else the Halide kernel -*- C++ -*-===//
//
// A GEMM with bf16 inputs (--bf16-gemm-inputs) whose weight is packed at load for register
// tiles of whole AMX B tiles (tile_cols a multiple of 16), on the CPU, calls libxfrt's
// xfrt_amx_bf16_gemm (runtime/include/xfrt/AmxBf16Gemm.h) when it has at least
// gemv_rows_below rows — the rows its Halide kernel rounds to bf16; fewer rows keep the
// kernel's exact GEMV — and runs its Halide kernel where that returns 1 (no AMX bf16 in this
// CPU or process): run-time branches, since rows and the CPU are dynamic. The weight is the
// packed buffer the Halide kernel reads, the epilogue the kernel's.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_AMXBF16GEMMCALL_H
#define XF_LIB_CONVERSION_AMXBF16GEMMCALL_H

#include "RuntimeGemmCall.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// Whether a GEMM of this description calls xfrt_amx_bf16_gemm first: bf16 inputs, its weight
/// packed at load in tiles of a multiple of 16 columns, a CPU target.
bool takesAmxBf16Gemm(const GemmKernelSpec &spec, bool cudaDevice);

/// `(rows >= gemv_rows_below ? xfrt_amx_bf16_gemm(...) : 1) == 1 ? halidePipeline() : s`;
/// returns the i32 status.
Value callAmxBf16GemmOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                const RuntimeGemmCall &call,
                                llvm::function_ref<Value()> halidePipeline);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_AMXBF16GEMMCALL_H
