//===- RuntimeGemmCall.cpp - GEMMs handed to libxfrt before their Halide kernel ---===//

#include "RuntimeGemmCall.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

func::FuncOp mlir::xf::declareRuntimeGemm(ModuleOp module, Location loc, StringRef name,
                                          unsigned extraI64s) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> params{ptr, i64, i64, i64, ptr, i64, i64, ptr, ptr, i64, i64, ptr, i64};
  params.append(extraI64s, i64);
  return declareFunction(module, loc, name,
                         FunctionType::get(ctx, params, {IntegerType::get(ctx, 32)}));
}

Value mlir::xf::callRuntimeGemm(OpBuilder &b, Location loc, func::FuncOp callee,
                                const RuntimeGemmCall &call, int64_t weightLayout,
                                ArrayRef<int64_t> extra) {
  const GemmKernelSpec &spec = *call.spec;
  auto i64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  };
  Value null = LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()));
  SmallVector<Value> args{call.x,
                          call.xStride,
                          call.rows,
                          i64(spec.K),
                          call.weight,
                          i64(weightLayout),
                          i64(spec.N),
                          call.bias ? call.bias : null,
                          call.residual ? call.residual : null,
                          call.residualStride ? call.residualStride : i64(0),
                          i64(int64_t(spec.epilogue)),
                          call.out,
                          call.outStride};
  for (int64_t v : extra)
    args.push_back(i64(v));
  return func::CallOp::create(b, loc, callee, args).getResult(0);
}

Value mlir::xf::orHalidePipeline(OpBuilder &b, Location loc, Value status,
                                 llvm::function_ref<Value()> halidePipeline) {
  Value notTaken = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status,
                                         arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1));
  auto fallback = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, notTaken,
                                    /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(fallback.thenBlock());
  scf::YieldOp::create(b, loc, halidePipeline());
  b.setInsertionPointToStart(fallback.elseBlock());
  scf::YieldOp::create(b, loc, status);
  return fallback.getResult(0);
}
