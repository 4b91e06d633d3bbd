//===- AmxBf16GemmCall.cpp - bf16 GEMMs on AMX tiles, else the Halide kernel ---===//

#include "AmxBf16GemmCall.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

bool mlir::xf::takesAmxBf16Gemm(const GemmKernelSpec &spec, bool cudaDevice) {
  return !cudaDevice && spec.bf16Activations && spec.packedWeight &&
         spec.weightBlocks == WeightBlocks::None && spec.schedule.tileCols % 16 == 0;
}

namespace {

/// int32_t xfrt_amx_bf16_gemm(ptr x, i64 xStride, i64 rows, i64 K, ptr packedWeight,
///     i64 tileCols, i64 N, ptr bias, ptr residual, i64 residualStride, i64 epilogue, ptr out,
///     i64 outStride)
func::FuncOp declareAmxBf16Gemm(ModuleOp module, Location loc) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  return declareFunction(
      module, loc, "xfrt_amx_bf16_gemm",
      FunctionType::get(ctx, {ptr, i64, i64, i64, ptr, i64, i64, ptr, ptr, i64, i64, ptr, i64},
                        {IntegerType::get(ctx, 32)}));
}

} // namespace

Value mlir::xf::callAmxBf16GemmOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                          const AmxBf16GemmCall &call,
                                          llvm::function_ref<Value()> halidePipeline) {
  const GemmKernelSpec &spec = *call.spec;
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  auto i32 = [&](int32_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); };
  Value null = LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()));
  // Rows the Halide kernel rounds to bf16 (its GEMV below them keeps x exact): AMX first.
  Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, call.rows,
                                     i64(spec.schedule.gemvRowsBelow));
  auto tiles = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, many, /*addThenBlock=*/true,
                                 /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tiles.thenBlock());
  // The epilogue's number is GemmEpilogue's, which xfrt::BlockEpilogue mirrors.
  Value status = func::CallOp::create(
                     b, loc, declareAmxBf16Gemm(module, loc),
                     ValueRange{call.x, call.xStride, call.rows, i64(spec.K), call.packedWeight,
                                i64(spec.schedule.tileCols), i64(spec.N),
                                call.bias ? call.bias : null, call.residual ? call.residual : null,
                                call.residualStride ? call.residualStride : i64(0),
                                i64(int64_t(spec.epilogue)), call.out, call.outStride})
                     .getResult(0);
  scf::YieldOp::create(b, loc, status);
  b.setInsertionPointToStart(tiles.elseBlock());
  scf::YieldOp::create(b, loc, Value(i32(1)));
  b.setInsertionPointAfter(tiles);
  // 1: not taken (few rows, or no AMX bf16 here): the Halide kernel runs.
  Value notTaken =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tiles.getResult(0), i32(1));
  auto fallback = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, notTaken,
                                    /*addThenBlock=*/true, /*addElseBlock=*/true);
  b.setInsertionPointToStart(fallback.thenBlock());
  scf::YieldOp::create(b, loc, halidePipeline());
  b.setInsertionPointToStart(fallback.elseBlock());
  scf::YieldOp::create(b, loc, tiles.getResult(0));
  b.setInsertionPointAfter(fallback);
  return fallback.getResult(0);
}
