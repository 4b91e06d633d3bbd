//===- BlockGemvCall.cpp - decode GEMMs on weight blocks with Q8 activations ---===//

#include "BlockGemvCall.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

int64_t mlir::xf::ggmlTypeId(WeightBlocks blocks) {
  switch (blocks) {
  case WeightBlocks::Q8_0:
    return 8;
  case WeightBlocks::Q4_0:
    return 2;
  case WeightBlocks::Q4_1:
    return 3;
  case WeightBlocks::None:
    break;
  }
  return 0;
}

namespace {

/// int32_t xfrt_block_gemv / xfrt_block_gemm(ptr x, i64 xStride, i64 rows, i64 K, ptr weight,
///     i64 ggmlType, i64 N, ptr bias, ptr residual, i64 residualStride, i64 epilogue, ptr out,
///     i64 outStride, i64 isaCeiling)
func::FuncOp declareBlockCall(ModuleOp module, Location loc, StringRef name) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  return declareFunction(
      module, loc, name,
      FunctionType::get(ctx, {ptr, i64, i64, i64, ptr, i64, i64, ptr, ptr, i64, i64, ptr, i64, i64},
                        {IntegerType::get(ctx, 32)}));
}

} // namespace

Value mlir::xf::callBlockGemvOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                        const BlockGemvCall &call,
                                        llvm::function_ref<Value()> halidePipeline) {
  const GemmKernelSpec &spec = *call.spec;
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  Value null = LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()));
  // The epilogue's number is GemmEpilogue's, which xfrt::BlockEpilogue mirrors.
  auto blockCall = [&](StringRef name) {
    return func::CallOp::create(
               b, loc, declareBlockCall(module, loc, name),
               ValueRange{call.x, call.xStride, call.rows, i64(spec.K), call.weight,
                          i64(ggmlTypeId(spec.weightBlocks)), i64(spec.N),
                          call.bias ? call.bias : null, call.residual ? call.residual : null,
                          call.residualStride ? call.residualStride : i64(0),
                          i64(int64_t(spec.epilogue)), call.out, call.outStride,
                          i64(call.isaCeiling)})
        .getResult(0);
  };
  Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, call.rows,
                                    i64(spec.schedule.gemvRowsBelow));
  auto branch = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, few, /*addThenBlock=*/true,
                                  /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  scf::YieldOp::create(b, loc, blockCall("xfrt_block_gemv"));
  // More rows: xfrt_block_gemm where the CPU has AVX-512 VNNI; it returns 1 having done
  // nothing elsewhere, and the Halide kernel runs.
  b.setInsertionPointToStart(branch.elseBlock());
  Value status = blockCall("xfrt_block_gemm");
  Value notTaken = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status,
                                         arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1));
  auto fallback = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, notTaken,
                                    /*addThenBlock=*/true, /*addElseBlock=*/true);
  b.setInsertionPointToStart(fallback.thenBlock());
  scf::YieldOp::create(b, loc, halidePipeline());
  b.setInsertionPointToStart(fallback.elseBlock());
  scf::YieldOp::create(b, loc, status);
  b.setInsertionPointAfter(fallback);
  scf::YieldOp::create(b, loc, fallback.getResult(0));
  return branch.getResult(0);
}
