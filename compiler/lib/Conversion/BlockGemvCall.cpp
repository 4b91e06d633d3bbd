//===- BlockGemvCall.cpp - decode GEMMs on weight blocks with Q8 activations ---===//

#include "BlockGemvCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

Value mlir::xf::callBlockGemvOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                        const BlockGemvCall &call,
                                        llvm::function_ref<Value()> halidePipeline) {
  const RuntimeGemmCall &gemm = call.operands;
  const GemmKernelSpec &spec = *gemm.spec;
  auto blockCall = [&](StringRef name) {
    return callRuntimeGemm(b, loc, declareRuntimeGemm(module, loc, name, 1), gemm,
                           ggmlTypeId(spec.weightBlocks), {call.isaCeiling});
  };
  Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, gemm.rows,
                                    arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                                                 spec.schedule.gemvRowsBelow));
  auto branch = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, few, /*addThenBlock=*/true,
                                  /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  scf::YieldOp::create(b, loc, blockCall("xfrt_block_gemv"));
  // More rows: xfrt_block_gemm where the CPU has AVX-512 VNNI; it returns 1 having done
  // nothing elsewhere, and the Halide kernel runs.
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, orHalidePipeline(b, loc, blockCall("xfrt_block_gemm"),
                                                halidePipeline));
  return branch.getResult(0);
}
