//===- LowerTraining.cpp - @loss_and_gradients → xf_train_step ------------===//
//
// The training entry points (docs/training.md): the backward kernels (loop
// kernels and GEMMs of the weight gradients, chunked over positions), xf_train_step and
// xf_train_scratch_bytes, and the training manifest, from the training
// step's placement (placeTraining, TrainingPlacement.cpp). Reuses the
// forward's emitters (HostLowering.h).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::xf;


LogicalResult HostLowering::emitTrainStep() {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  // (params, derived, tokens, targets, l, source, l_z, loss, grads, scratch)
  auto fn = func::FuncOp::create(
      top, forward.getLoc(), "xf_train_step",
      FunctionType::get(ctx, {ptr, ptr, ptr, ptr, i64Type, ptr, i64Type, ptr, ptr, ptr},
                        {IntegerType::get(ctx, 32)}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  auto args = fn.getArguments();
  paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], targetsArg = args[3];
  lArg = args[4], sourceArg = args[5], lzArg = args[6];
  lossArg = args[7], gradsArg = args[8], scratchArg = args[9];
  paddedRows = paddedRowsOf(lArg, lzArg);
  status = arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0);
  if (zeroedFloats)
    LLVM::MemsetOp::create(builder, loc, scratchArg,
                           arith::ConstantIntOp::create(builder, loc, builder.getI8Type(), 0),
                           i64(4 * zeroedFloats), /*isVolatile=*/false);
  if (failed(lowerBody(forward, fn.front())))
    return failure();
  func::ReturnOp::create(builder, loc, status);
  b = nullptr;
  return success();
}

void HostLowering::emitTrainScratchBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_train_scratch_bytes",
                                 FunctionType::get(ctx, {i64Type, i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  Value arena = arith::MulIOp::create(builder, loc,
                                      paddedRowsOf(fn.getArgument(0), fn.getArgument(1)),
                                      i64(plan.totalColumns));
  Value bytes = arith::MulIOp::create(
      builder, loc, arith::AddIOp::create(builder, loc, arena, i64(staticFloats)), i64(4));
  func::ReturnOp::create(builder, loc,
                         ValueRange{arith::MaxSIOp::create(builder, loc, bytes, i64(64)).getResult()});
  b = nullptr;
}

LogicalResult HostLowering::runTraining(HostLowering &forwardLowering) {
  kernels = forwardLowering.kernels;
  kernelNames = forwardLowering.kernelNames;
  // The weight gradients' chunked GEMMs (placeTraining) take the schedule of
  // the last GEMM, blocked over one chunk's rows.
  forward.walk([&](GemmOp gemm) {
    if (auto attr = gemm.getScheduleAttr())
      chunkSchedule = gemmScheduleOf(attr);
  });
  chunkSchedule.kBlock = chunkRows;
  auto names = forward->getAttrOfType<ArrayAttr>("xf.gradients");
  if (!names || names.size() + 1 != forward.getFunctionType().getNumResults())
    return forward.emitError("@loss_and_gradients needs xf.gradients naming each gradient");
  llvm::json::Array gradients;
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text || !parameterIndex.count(text.getValue()))
      return forward.emitError("xf.gradients names a tensor that is not a parameter");
    gradients.push_back(llvm::json::Object{{"name", text.getValue()},
                                           {"parameter", parameterIndex.lookup(text.getValue())}});
  }
  emitPrepare("xf_train_prepare");
  if (failed(emitTrainStep()))
    return failure();
  emitTrainScratchBytes();
  llvm::json::Array derivedBytes;
  for (Value v : derived)
    derivedBytes.push_back(cast<RankedTensorType>(v.getType()).getNumElements() * 4);
  // The loss a trainer uses by default (xf-differentiate's xf.objective).
  auto objective = forward->getAttrOfType<StringAttr>("xf.objective");
  llvm::json::Object manifest{{"gradients", std::move(gradients)},
                              {"derived", std::move(derivedBytes)},
                              {"chunk_rows", chunkRows},
                              {"objective", objective ? objective.getValue() : "next-token"}};
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(manifest));
  emitManifestGlobal(*program.module, json, "xf_training_manifest");
  return success();
}
