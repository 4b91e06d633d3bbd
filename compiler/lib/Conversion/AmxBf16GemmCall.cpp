//===- AmxBf16GemmCall.cpp - bf16 GEMMs on AMX tiles, else the Halide kernel ---===//

#include "AmxBf16GemmCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

bool mlir::xf::takesAmxBf16Gemm(const GemmKernelSpec &spec, bool cudaDevice) {
  return !cudaDevice && spec.bf16Activations && spec.packedWeight &&
         spec.weightBlocks == WeightBlocks::None && spec.schedule.tileCols % 16 == 0;
}

Value mlir::xf::callAmxBf16GemmOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                          const RuntimeGemmCall &call,
                                          llvm::function_ref<Value()> halidePipeline) {
  const GemmKernelSpec &spec = *call.spec;
  // Rows the Halide kernel rounds to bf16 (its GEMV below them keeps x exact): AMX first.
  Value many = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sge, call.rows,
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), spec.schedule.gemvRowsBelow));
  auto tiles = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, many, /*addThenBlock=*/true,
                                 /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tiles.thenBlock());
  scf::YieldOp::create(b, loc,
                       callRuntimeGemm(b, loc, declareRuntimeGemm(module, loc, "xfrt_amx_bf16_gemm", 0),
                                       call, spec.schedule.tileCols));
  b.setInsertionPointToStart(tiles.elseBlock());
  scf::YieldOp::create(b, loc,
                       Value(arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1)));
  b.setInsertionPointAfter(tiles);
  // 1: not taken (few rows, or no AMX bf16 here): the Halide kernel runs.
  return orHalidePipeline(b, loc, tiles.getResult(0), halidePipeline);
}
