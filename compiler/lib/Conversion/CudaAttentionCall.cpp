//===- CudaAttentionCall.cpp - a CUDA attention's flash-decoding call -----===//

#include "CudaAttentionCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

Value mlir::xf::callCudaAttention(OpBuilder &b, Location loc, ModuleOp module,
                                  const AttentionKernelSpec &spec, ArrayRef<HalideBufferArg> args,
                                  Value partials) {
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  HalideBufferArg buffer{partials, {}};
  int64_t stride = 1;
  for (int64_t extent : {shape.columns, shape.rows, shape.heads, shape.ranges}) {
    buffer.dims.push_back({i64(extent), i64(stride)});
    stride *= extent;
  }
  const HalideBufferArg &query = args[0], &keys = args[1], &values = args[2], &out = args[3];
  Value decoding = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, query.dims[1].first,
                                         i64(shape.rows));
  auto ranges = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, decoding,
                                  /*addThenBlock=*/true, /*addElseBlock=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ranges.thenBlock());
    scf::YieldOp::create(b, loc,
                         callHalidePipeline(b, loc, module, cudaDecodeRangesName(spec),
                                            {query, keys, values, buffer}, {}, /*device=*/true));
    b.setInsertionPointToStart(ranges.elseBlock());
    scf::YieldOp::create(b, loc,
                         ValueRange{arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0)});
  }
  Value failed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, ranges.getResult(0),
                                       arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  auto merge = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, failed, /*addThenBlock=*/true,
                                 /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(merge.thenBlock());
  scf::YieldOp::create(b, loc, ranges.getResult(0));
  b.setInsertionPointToStart(merge.elseBlock());
  scf::YieldOp::create(b, loc,
                       callHalidePipeline(b, loc, module, spec.name,
                                          {query, keys, values, buffer, out}, {}, /*device=*/true));
  return merge.getResult(0);
}
