//===- BlockGemvCall.h - decode GEMMs on weight blocks with Q8 activations -*- C++ -*-===//
//
// With HostOptions::q8GemmInputs, a GEMM whose weight is kept in ggml blocks calls libxfrt's
// xfrt_block_gemv (runtime/include/xfrt/BlockGemv.h: x rounded to Q8_0, 8-bit integer dot
// products) when it has fewer rows than its schedule's gemv_rows_below, and xfrt_block_gemm
// (the same products, tiled for many rows) otherwise — which leaves the call to the Halide
// kernel on CPUs without AVX-512 VNNI: run-time branches, since rows and the CPU are dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_BLOCKGEMVCALL_H
#define XF_LIB_CONVERSION_BLOCKGEMVCALL_H

#include "RuntimeGemmCall.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::xf {

/// One call: the GEMM's operands and the target's blockDotIsaCeiling.
struct BlockGemvCall {
  RuntimeGemmCall operands;
  int isaCeiling;
};

/// ggml's type id of a block type (Q4_0 2, Q4_1 3, Q8_0 8), as libxfrt takes it.
int64_t ggmlTypeId(WeightBlocks blocks);

/// `rows < gemv_rows_below ? xfrt_block_gemv(...) : (s = xfrt_block_gemm(...)) == 1 ?
/// halidePipeline() : s`; returns the i32 status.
Value callBlockGemvOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                              const BlockGemvCall &call,
                              llvm::function_ref<Value()> halidePipeline);

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_BLOCKGEMVCALL_H
