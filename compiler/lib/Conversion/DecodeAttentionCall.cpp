//===- DecodeAttentionCall.cpp - decode steps' attention in libxfrt -------===//

#include "DecodeAttentionCall.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

/// int32_t xfrt_decode_attention(ptr q, i64 keys, ptr newKey, ptr newValue, ptr k, ptr v,
///                               i64 keyHeadStride,
///                               i64 valueHeadStride, i64 halfKeyValues, i64 heads,
///                               i64 kvHeads, i64 dK, i64 dV, f32 scale, i64 rope,
///                               f64 ropeBase, ptr out, i64 isaCeiling)
func::FuncOp declareDecodeAttention(ModuleOp module, Location loc) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  Type f32 = Float32Type::get(ctx), f64 = Float64Type::get(ctx);
  return declareFunction(module, loc, "xfrt_decode_attention",
                         FunctionType::get(ctx,
                                           {ptr, i64, ptr, ptr, ptr, ptr, i64, i64, i64, i64, i64,
                                            i64, i64, f32, i64, f64, ptr, i64},
                                           {IntegerType::get(ctx, 32)}));
}

/// int32_t xfrt_decode_attention_batched(ptr q, i64 qStride, i64 n, ptr slots, ptr starts,
///     ptr k, ptr v, i64 slotStride, i64 keyHeadStride, i64 valueHeadStride, i64 halfKeyValues,
///     i64 heads, i64 kvHeads, i64 dK, i64 dV, f32 scale, i64 rope, f64 ropeBase, ptr out,
///     i64 outStride, i64 isaCeiling)
func::FuncOp declareBatchedDecodeAttention(ModuleOp module, Location loc) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  Type f32 = Float32Type::get(ctx), f64 = Float64Type::get(ctx);
  return declareFunction(module, loc, "xfrt_decode_attention_batched",
                         FunctionType::get(ctx,
                                           {ptr, i64, i64, ptr, ptr, ptr, ptr, i64, i64, i64, i64,
                                            i64, i64, i64, i64, f32, i64, f64, ptr, i64, i64},
                                           {IntegerType::get(ctx, 32)}));
}

/// The pairing of rotary positions as libxfrt numbers it (xfrt::AttentionRope).
int64_t ropeCode(const AttentionKernelSpec &spec) {
  return spec.rope == AttentionKernelSpec::Rope::Adjacent ? 1
         : spec.rope == AttentionKernelSpec::Rope::Halves ? 2
                                                          : 0;
}

bool vectorWidth(int64_t d) { return d == 64 || d == 128; }

} // namespace

bool mlir::xf::decodeAttentionHandles(const AttentionKernelSpec &spec) {
  const bool keysInCache = spec.rope == AttentionKernelSpec::Rope::None || !spec.ropeKeys;
  return spec.causal && keysInCache && vectorWidth(spec.dK) && vectorWidth(spec.dV) &&
         spec.heads % spec.keyValueHeads() == 0;
}

Value mlir::xf::callDecodeAttentionOrPipeline(OpBuilder &b, Location loc, ModuleOp module,
                                              const DecodeAttentionCall &call,
                                              llvm::function_ref<Value()> halidePipeline) {
  const AttentionKernelSpec &spec = *call.spec;
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  Value one = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, call.rows, i64(1));
  auto branch = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, one, /*addThenBlock=*/true,
                                  /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  const int64_t rope = ropeCode(spec);
  Value scale = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(spec.scale)));
  Value base = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(spec.ropeBase));
  Value status =
      func::CallOp::create(b, loc, declareDecodeAttention(module, loc),
                           ValueRange{call.query, call.keys, call.newKey, call.newValue,
                                      call.key, call.value,
                                      call.keyHeadStride, call.valueHeadStride,
                                      i64(spec.halfKeyValues ? 1 : 0), i64(spec.heads),
                                      i64(spec.keyValueHeads()), i64(spec.dK), i64(spec.dV), scale,
                                      i64(rope), base, call.out, i64(call.isaCeiling)})
          .getResult(0);
  scf::YieldOp::create(b, loc, status);
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, halidePipeline());
  return branch.getResult(0);
}

Value mlir::xf::callBatchedDecodeAttention(OpBuilder &b, Location loc, ModuleOp module,
                                           const BatchedDecodeAttentionCall &call) {
  const AttentionKernelSpec &spec = *call.spec;
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  Value scale = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(spec.scale)));
  Value base = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(spec.ropeBase));
  return func::CallOp::create(b, loc, declareBatchedDecodeAttention(module, loc),
                              ValueRange{call.query,
                                         call.queryStride,
                                         call.count,
                                         call.slots,
                                         call.starts,
                                         call.key,
                                         call.value,
                                         call.slotStride,
                                         call.keyHeadStride,
                                         call.valueHeadStride,
                                         i64(spec.halfKeyValues ? 1 : 0),
                                         i64(spec.heads),
                                         i64(spec.keyValueHeads()),
                                         i64(spec.dK),
                                         i64(spec.dV),
                                         scale,
                                         i64(ropeCode(spec)),
                                         base,
                                         call.out,
                                         call.outStride,
                                         i64(call.isaCeiling)})
      .getResult(0);
}
