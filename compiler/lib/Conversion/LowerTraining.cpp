//===- LowerTraining.cpp - @loss_and_gradients → xf_train_step ------------===//
//
// The training entry points (docs/training.md): the gradients' accumulation
// targets and slots, the backward kernels (loop kernels and GEMMs of the
// weight gradients, chunked over positions), xf_train_step and
// xf_train_scratch_bytes, and the training manifest. Reuses the forward's
// placement and emitters (HostLowering.h).
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::xf;


/// An op whose static-shaped result is a parameter's gradient or a part of
/// one: it adds into its accumulation target.
static bool isGradientSum(Operation *op) {
  return op->getNumResults() == 1 &&
         isa<WeightGradOp, RowSumOp, LayerNormGammaGradOp, RmsNormGammaGradOp, TokenEmbedGradOp,
             PositionalEmbedGradOp, SliceGradOp, RowGradOp, AddOp>(op) &&
         cast<RankedTensorType>(op->getResult(0).getType()).hasStaticShape();
}

/// The transpose of a gradient (the gradient of a weight stored the other way
/// round): written whole into a slot of its own.
static bool isGradientTranspose(Operation *op) {
  auto transpose = dyn_cast<TransposeOp>(op);
  Operation *def = transpose ? transpose.getInput().getDefiningOp() : nullptr;
  return def && isGradientSum(def);
}

/// A static slice of a gradient (the per-head parts of a concatenated
/// weight): returned, it adds its part of the gradient into its own output.
static bool isGradientSlice(Operation *op) {
  auto slice = dyn_cast<SliceOp>(op);
  Operation *def = slice ? slice.getInput().getDefiningOp() : nullptr;
  return def && (isGradientSum(def) || isGradientTranspose(def)) &&
         cast<RankedTensorType>(slice.getType()).hasStaticShape();
}

/// Returned gradients accumulate into grads[i]. Going backwards, a static
/// gradient whose only user is a sum or a slice_grad with a target shares
/// that target (at the slice's offset), so tied tables, fused-weight slices
/// and the c_attn bias parts add into the output in place; any other gets
/// a Static slot of its own, zeroed at entry.
LogicalResult HostLowering::planAccumulation(func::ReturnOp ret) {
  auto shapeOf = [](Placement &t, Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    t.cols = colsOf(v);
    t.staticRows = type.getRank() == 2 ? type.getDimSize(0) : 1;
  };
  for (auto [i, g] : llvm::enumerate(ret.getOperands().drop_front())) {
    Operation *def = g.getDefiningOp();
    if (!def || !(isGradientSum(def) || isGradientSlice(def)))
      return ret.emitError("training: gradient ") << i << " is not computed by a gradient op";
    if (accumulation.count(g))
      return ret.emitError("training: one value is returned as two gradients");
    Placement t{Storage::Gradient, int64_t(i)};
    shapeOf(t, g);
    t.stride = t.cols;
    accumulation[g] = t;
  }
  for (Operation &op : llvm::reverse(forward.getBody().front().getOperations())) {
    bool transpose = isGradientTranspose(&op);
    if (!(isGradientSum(&op) || transpose) || accumulation.count(op.getResult(0))) {
      if (transpose)
        return op.emitError("training: a transposed gradient is returned directly");
      continue;
    }
    Value v = op.getResult(0);
    auto type = cast<RankedTensorType>(v.getType());
    Placement t;
    Operation *user = v.hasOneUse() && !transpose ? *v.getUsers().begin() : nullptr;
    auto target = user && isa<AddOp, SliceGradOp, RowGradOp>(user)
                      ? accumulation.find(user->getResult(0))
                      : accumulation.end();
    if (target != accumulation.end()) {
      t = target->second;
      if (auto slice = dyn_cast<SliceGradOp>(user)) {
        bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
        t.colOffset += slice.getOffset() * (rowsOfMatrix ? t.stride : 1);
      } else if (auto row = dyn_cast<RowGradOp>(user)) {
        t.colOffset += row.getIndex() * t.stride;
      }
      folded.insert(v);
    } else {
      t = Placement{Storage::Static, staticFloats};
      t.stride = colsOf(v);
      staticFloats += (type.getNumElements() + 15) / 16 * 16;
    }
    shapeOf(t, v);
    accumulation[v] = t;
  }
  return success();
}

LogicalResult HostLowering::placeTraining() {
  // ([source,] tokens, targets): an encoder-decoder's source has its own rows.
  unsigned count = forward.getNumArguments();
  encoderDecoder = count == 3;
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32) || count < 2 ||
        count > 3)
      return forward.emitError("@loss_and_gradients takes [source ids,] token ids and target "
                               "ids, tensor<?xi32> each");
    Placement p{Storage::Tokens, arg.getArgNumber()};
    p.rows = encoderDecoder && arg.getArgNumber() == 0 ? Rows::Source : Rows::Target;
    placements[arg] = p;
  }
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1 || !ret.getOperand(0).getDefiningOp<CrossEntropyOp>())
    return ret.emitError("@loss_and_gradients must return the loss (xf.cross_entropy) first");
  if (failed(planAccumulation(ret)))
    return failure();
  int64_t staticSlots = staticFloats;

  // Weight gradients run in chunks of chunkRows positions: a GEMM with
  // K = chunkRows over the chunk's rows, transposed and zero-padded, that adds
  // into the gradient (its residual). The chunk follows the longest sequence
  // the model takes, so short sequences do not pay for a long chunk.
  int64_t limit = hyperparameterPositionLimit(forward);
  forward.walk([&](PositionalEmbedOp op) { limit = op.getTable().getType().getDimSize(0); });
  chunkRows = limit > 0 ? std::clamp<int64_t>((limit + 15) / 16 * 16, 16, 256) : 256;
  forward.walk([&](GemmOp gemm) {
    if (auto attr = gemm.getScheduleAttr())
      chunkSchedule = gemmScheduleOf(attr);
  });
  chunkSchedule.kBlock = chunkRows;
  int64_t leftFloats = 0, rightFloats = 0;
  int64_t index = 0;
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (failed(placeOp(&op, index++)))
      return failure();
    if (auto grad = dyn_cast<WeightGradOp>(op)) {
      bool t = grad.getTransposeResult();
      leftFloats = std::max(leftFloats, chunkRows * colsOf(t ? grad.getGrad() : grad.getInput()));
      rightFloats = std::max(rightFloats, chunkRows * colsOf(t ? grad.getInput() : grad.getGrad()));
    }
  }
  chunkLeftOffset = staticFloats;
  staticFloats += (leftFloats + 15) / 16 * 16;
  chunkRightOffset = staticFloats;
  staticFloats += (rightFloats + 15) / 16 * 16;
  zeroedFloats = staticSlots;
  plan = planBuffers(requests);
  return success();
}

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
  training = true;
  kernels = forwardLowering.kernels;
  kernelNames = forwardLowering.kernelNames;
  parameterIndex = forwardLowering.parameterIndex;
  parameters = forwardLowering.parameters;
  size_t known = parameters.size();
  if (failed(placeTraining()))
    return failure();
  if (parameters.size() != known)
    return forward.emitError("@loss_and_gradients reads a parameter that @forward does not");
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
