//===- RuntimeGemmCall.h - GEMMs handed to libxfrt before their Halide kernel -*- C++ -*-===//
//
// Some CPU GEMMs call a libxfrt entry point first — xfrt_block_gemv / xfrt_block_gemm on ggml
// weight blocks (BlockGemvCall.h), xfrt_amx_bf16_gemm on AMX tiles (AmxBf16GemmCall.h) — which
// take the same operands in the same order and return 1, having done nothing, where they cannot
// run (the CPU or the process lacks the instructions); the GEMM's Halide kernel then runs.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_RUNTIMEGEMMCALL_H
#define XF_LIB_CONVERSION_RUNTIMEGEMMCALL_H

#include "xf/Codegen/HalideKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// The operands of one call; pointers are !llvm.ptr, counts and strides (in floats) i64.
struct RuntimeGemmCall {
  Value x, xStride, rows;
  Value weight;
  Value bias, residual, residualStride; // null Values when the GEMM has none
  Value out, outStride;
  const GemmKernelSpec *spec;
};

/// `int32_t name(ptr x, i64 xStride, i64 rows, i64 K, ptr weight, i64 weightLayout, i64 N,
/// ptr bias, ptr residual, i64 residualStride, i64 epilogue, ptr out, i64 outStride
/// [, i64 × extraI64s])`, declared once in `module`.
func::FuncOp declareRuntimeGemm(ModuleOp module, Location loc, StringRef name,
                                unsigned extraI64s);

/// Calls `callee` (declared by declareRuntimeGemm) with `call`'s operands — null pointers and a
/// zero stride where the GEMM has no bias or residual; the epilogue numbered as GemmEpilogue,
/// which xfrt::BlockEpilogue mirrors — then `extra`; returns the i32 status.
Value callRuntimeGemm(OpBuilder &b, Location loc, func::FuncOp callee,
                      const RuntimeGemmCall &call, int64_t weightLayout,
                      ArrayRef<int64_t> extra = {});

/// `status == 1 ? halidePipeline() : status`: a call that declined leaves the GEMM to its
/// Halide kernel.
Value orHalidePipeline(OpBuilder &b, Location loc, Value status,
                       llvm::function_ref<Value()> halidePipeline);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_RUNTIMEGEMMCALL_H
