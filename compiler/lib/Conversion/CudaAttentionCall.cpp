//===- CudaAttentionCall.cpp - a CUDA attention's flash-decoding call -----===//

#include "CudaAttentionCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

/// The range pass's arguments where it appends (cudaDecodeRangesAppend): the inputs
/// (q, k, v, new_k, new_v), then its outputs over (column, row, head in group, K/V head,
/// range): the partials' output, max and sum as views of `partials`, and the new K and V rows
/// (hi and the range of stride 0: every block of a K/V head writes its rows) — into the cache,
/// or, appending nothing, into the dummy rows after the partials (K/V heads of stride 0 too).
SmallVector<HalideBufferArg> appendingRangeArgs(OpBuilder &b, Location loc,
                                                const AttentionKernelSpec &spec,
                                                ArrayRef<HalideBufferArg> args, Value partials,
                                                const CudaAttentionAppend *append) {
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  Value rows = args[0].dims[1].first;
  auto floatsAfter = [&](Value base, int64_t floats) -> Value {
    return LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), b.getF32Type(),
                               base, ValueRange{i64(floats)});
  };
  SmallVector<HalideBufferArg> all{args[0], args[1], args[2]};
  all.push_back(append ? append->newKeys : args[1]);
  all.push_back(append ? append->newValues : args[2]);
  const std::array<CudaRangeOutputView, 5> views = cudaDecodeRangeOutputs(spec);
  // Each view's extents and strides, in order; the rows' K/V head stride `headStride` (none:
  // 0, appending nothing).
  auto viewArg = [&](Value base, const CudaRangeOutputView &view, Value headStride) {
    HalideBufferArg arg{base, {}};
    for (auto [extent, stride] : view.dims) {
      Value e = extent == kCudaViewRows ? rows : i64(extent);
      Value s = stride != kCudaViewRowsHeadStride ? i64(stride) : headStride ? headStride : i64(0);
      arg.dims.push_back({e, s});
    }
    return arg;
  };
  for (size_t element = 0; element < 3; ++element) // output, max, sum
    all.push_back(viewArg(floatsAfter(partials, views[element].offset), views[element], Value()));
  Value dummy = floatsAfter(partials, cudaDecodePartialsOf(spec).floats());
  for (int which = 0; which < 2; ++which) {
    const HalideBufferArg *cache = append ? (which ? &append->valueRows : &append->keyRows) : nullptr;
    all.push_back(viewArg(cache ? cache->host : dummy, views[3 + which],
                          cache ? cache->dims[2].second : Value()));
  }
  return all;
}

} // namespace

HalideBufferArg mlir::xf::cudaPartialsArg(OpBuilder &b, Location loc,
                                         const CudaDecodePartials &shape, Value partials) {
  HalideBufferArg buffer{partials, {}};
  int64_t stride = 1;
  for (int64_t extent : {shape.columns, shape.rows, shape.heads, shape.ranges}) {
    buffer.dims.push_back({arith::ConstantIntOp::create(b, loc, b.getI64Type(), extent),
                           arith::ConstantIntOp::create(b, loc, b.getI64Type(), stride)});
    stride *= extent;
  }
  return buffer;
}

Value mlir::xf::callCudaAttention(OpBuilder &b, Location loc, ModuleOp module,
                                  const AttentionKernelSpec &spec, ArrayRef<HalideBufferArg> args,
                                  Value partials, const CudaAttentionAppend *append,
                                  bool mergeInConsumer) {
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  auto i32 = [&](int32_t v) { return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v); };
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  HalideBufferArg buffer = cudaPartialsArg(b, loc, shape, partials);
  const HalideBufferArg &query = args[0], &keys = args[1], &values = args[2], &out = args[3];
  Value decoding = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, query.dims[1].first,
                                         i64(shape.rows));
  auto ranges = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, decoding,
                                  /*addThenBlock=*/true, /*addElseBlock=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ranges.thenBlock());
    Value status;
    if (cudaDecodeRangesAppend(spec)) {
      // Appending nothing, every key is cached: start = the keys.
      Value start = append ? append->start : keys.dims[1].first;
      status = callHalidePipeline(
          b, loc, module, cudaDecodeRangesName(spec),
          appendingRangeArgs(b, loc, spec, args, partials, append),
          {arith::TruncIOp::create(b, loc, b.getI32Type(), start)}, /*device=*/true, /*outputs=*/5);
    } else {
      status = callHalidePipeline(b, loc, module, cudaDecodeRangesName(spec),
                                  {query, keys, values, buffer}, {}, /*device=*/true);
    }
    scf::YieldOp::create(b, loc, status);
    b.setInsertionPointToStart(ranges.elseBlock());
    if (append) // more rows than the range pass takes: the loop kernel appends them
      append->appendKernel();
    scf::YieldOp::create(b, loc, ValueRange{i32(0)});
  }
  Value failed =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, ranges.getResult(0), i32(0));
  // Failed, or decoding with the merge in the GEMM after: the range pass's status is the call's.
  Value skip = mergeInConsumer ? arith::OrIOp::create(b, loc, failed, decoding).getResult() : failed;
  auto merge = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, skip, /*addThenBlock=*/true,
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

Value mlir::xf::callCudaBatchedDecode(OpBuilder &b, Location loc, ModuleOp module,
                                      const AttentionKernelSpec &spec,
                                      const CudaBatchedDecode &call) {
  auto i64 = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); };
  auto mul = [&](Value x, int64_t y) -> Value { return arith::MulIOp::create(b, loc, x, i64(y)); };
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  // (column, sequence, head, range), dense.
  HalideBufferArg partials{call.partials,
                           {{i64(shape.columns), i64(1)},
                            {call.count, i64(shape.columns)},
                            {i64(shape.heads), mul(call.count, shape.columns)},
                            {i64(shape.ranges), mul(call.count, shape.columns * shape.heads)}}};
  HalideBufferArg positions{call.positions, {{call.count, i64(1)}}};
  HalideBufferArg slots{call.slots, {{call.count, i64(1)}}};
  positions.int64 = slots.int64 = true;
  Value status =
      callHalidePipeline(b, loc, module, cudaBatchedName(spec, CudaBatchedPart::Ranges),
                         {call.query, call.keys, call.values, positions, slots, partials}, {},
                         /*device=*/true);
  Value failed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, status,
                                       arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  auto merge = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, failed,
                                 /*addThenBlock=*/true, /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(merge.thenBlock());
  scf::YieldOp::create(b, loc, status);
  b.setInsertionPointToStart(merge.elseBlock());
  Value merged = callHalidePipeline(b, loc, module, cudaBatchedName(spec, CudaBatchedPart::Merge),
                                    {partials, call.out}, {}, /*device=*/true);
  scf::YieldOp::create(b, loc, merged);
  return merge.getResult(0);
}
