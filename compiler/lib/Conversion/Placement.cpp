//===- Placement.cpp - where every tensor of @forward lives ---------------===//

#include "xf/Conversion/Placement.h"

#include "xf/Conversion/CachePlan.h"
#include "xf/IR/XfOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::xf;

int64_t mlir::xf::colsOf(Value tensor) {
  auto t = cast<RankedTensorType>(tensor.getType());
  return t.getDimSize(t.getRank() - 1);
}

const Placement &TensorPlacement::placementOf(Value tensor) const {
  static const Placement none{};
  auto it = placements.find(tensor);
  return it == placements.end() ? none : it->second;
}

Value TensorPlacement::rootOf(Value tensor) const {
  Value root = tensor;
  while (placements.count(root) && placementOf(root).storage == Storage::View)
    root = placementOf(root).root;
  return root;
}

bool TensorPlacement::isActivation(Value tensor) const {
  Storage s = placementOf(tensor).storage;
  return s == Storage::Scratch || s == Storage::View || s == Storage::Output;
}

FailureOr<TensorPlacement> mlir::xf::placeForward(func::FuncOp forward) {
  TensorPlacement placed;
  placed.encoderDecoder = forward.getNumArguments() == 2;
  auto &placements = placed.placements;
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32))
      return forward.emitError("@forward arguments must be tensor<?xi32> token ids");
    Placement p{Storage::Tokens, arg.getArgNumber()};
    p.rows = placed.encoderDecoder && arg.getArgNumber() == 0 ? Rows::Source : Rows::Target;
    placements[arg] = p;
  }
  int64_t index = 0;
  Value &result = placed.result;
  for (Operation &op : forward.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 1)
        return ret.emitError("@forward must return one tensor");
      result = ret.getOperand(0);
      if (!placements.count(result) || placements[result].storage == Storage::Tokens)
        return ret.emitError("@forward must return a computed activation");
      for (auto &r : placed.requests)
        r.lastUse = std::max(r.lastUse, r.firstUse);
      continue;
    }
    if (failed(placed.placeOp(&op, index++)))
      return failure();
  }
  // The returned tensor is written straight into `out` when it owns a slot.
  Placement &out = placements[result];
  if (out.storage == Storage::Scratch) {
    placed.requests[out.index].columns = 0;
    out.storage = Storage::Output;
  }
  placed.plan = planBuffers(placed.requests);
  return placed;
}

LogicalResult TensorPlacement::placeOp(Operation *op, int64_t index) {
  if (op->getNumResults() != 1 && !(training && isa<AttentionGradOp>(op)))
    return op->emitError("unexpected op in @forward for host lowering");
  Value v = op->getResult(0);
  if (v.getType().isF64())
    return success(); // a run-time number: no buffer (emitNumber)
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() > 2)
    return op->emitError("host lowering handles tensors of rank 1 and 2, got ") << type;
  // Every operand read here extends its storage's lifetime to this op.
  for (Value operand : op->getOperands()) {
    Value root = rootOf(operand);
    if (placements.count(root) && placements[root].storage == Storage::Scratch)
      requests[placements[root].index].lastUse = index;
  }
  if (training) {
    if (isa<CrossEntropyOp>(op)) {
      placements[v] = Placement{Storage::Loss};
      return success();
    }
    if (auto it = accumulation.find(v); it != accumulation.end()) {
      placements[v] = it->second;
      return success();
    }
    if (auto grad = dyn_cast<AttentionGradOp>(op)) {
      // dQ has the queries' rows, dK and dV the keys' (the source's, for cross).
      for (auto [r, in] : llvm::zip(op->getResults(), op->getOperands())) {
        Placement q{Storage::Scratch, int64_t(requests.size())};
        q.cols = q.stride = colsOf(r);
        q.rows = placements[in].rows;
        requests.push_back({q.cols, index, index});
        requestValue.push_back(r);
        placements[r] = q;
      }
      workRequests[op] = requests.size();
      requests.push_back({2 * grad.getKeyValueHeads(), index, index});
      requestValue.push_back(Value());
      return success();
    }
  }
  Placement p;
  p.cols = colsOf(v);
  p.stride = p.cols;
  if (type.getRank() == 2 && !type.isDynamicDim(0))
    p.staticRows = type.getDimSize(0);

  bool constant = isConstantOp(op) && llvm::all_of(op->getOperands(), [&](Value o) {
                    auto it = placements.find(o);
                    return it != placements.end() && (it->second.storage == Storage::Parameter ||
                                                      it->second.storage == Storage::Derived);
                  });
  if (auto param = dyn_cast<ParameterOp>(op)) {
    auto [it, inserted] = parameterIndex.try_emplace(param.getName(), parameters.size());
    if (inserted)
      parameters.push_back({param.getName().str(), type});
    else if (parameters[it->second].second != type)
      return op->emitError() << "parameter '" << param.getName() << "' is used with two shapes";
    p.storage = Storage::Parameter;
    p.index = it->second;
  } else if (constant) {
    if (!type.hasStaticShape())
      return op->emitError("a tensor computed from parameters needs a static shape");
    p.storage = Storage::Derived;
    p.index = derived.size();
    derived.push_back(v);
  } else if (auto slice = dyn_cast<SliceOp>(op);
             slice && slice.getAxis() == 1 && type.getRank() == 2) {
    // A column slice of an activation is a strided view of it.
    Value root = slice.getInput();
    Placement &parent = placements[root];
    p.storage = Storage::View;
    p.root = parent.storage == Storage::View ? parent.root : root;
    p.colOffset = parent.colOffset + slice.getOffset();
    p.stride = parent.stride;
    p.rows = parent.rows;
  } else if (isa<GemmOp, AttentionOp>(op) || isLoopKernelOp(op) ||
             (training && isa<CrossEntropyGradOp, LayerNormGradOp, RmsNormGradOp, ReluGradOp,
                              SiluGradOp, GeluGradOp, RopeGradOp, SliceGradOp>(op))) {
    if (type.getRank() != 2)
      return op->emitError("host lowering expects an [ℓ, d] activation, got ") << type;
    Value rowSource = isa<TokenEmbedOp, PositionalEmbedOp, SinusoidalEmbedOp>(op)
                          ? op->getOperand(isa<SinusoidalEmbedOp>(op) ? 0 : 1)
                          : op->getOperand(0);
    p.rows = placements[rowSource].rows;
    p.storage = Storage::Scratch;
    p.index = requests.size();
    requests.push_back({p.cols, index, index});
    requestValue.push_back(v);
  } else {
    return op->emitError("'") << op->getName()
                              << "' reached host lowering; run the fusion pipeline first";
  }
  placements[v] = p;
  if (isa<CrossEntropyGradOp>(op)) { // one float per row: the loss's terms
    workRequests[op] = requests.size();
    requests.push_back({1, index, index});
    requestValue.push_back(Value());
  }
  return success();
}

ModulePlacement::ModulePlacement(Operation *module) {
  auto symbols = cast<ModuleOp>(module);
  forward = symbols.lookupSymbol<func::FuncOp>("forward");
  forwardPacked = symbols.lookupSymbol<func::FuncOp>("forward_packed");
  if (!forward) {
    module->emitError("no func.func @forward to lower");
    return;
  }
  FailureOr<TensorPlacement> forwardPlacement = placeForward(forward);
  if (::mlir::failed(forwardPlacement))
    return;
  placed = std::move(*forwardPlacement);
  if (::mlir::failed(placePackedForward()))
    placed.reset();
}

LogicalResult ModulePlacement::placePackedForward() {
  // Nothing is emitted from it otherwise (xf-pack-sequences decides which
  // models can run packed batches).
  if (!forwardPacked || !isPackable(forward, *placed))
    return success();
  // @forward(tokens...) → @forward_packed(tokens..., segments...): one lengths
  // argument per token sequence (an encoder-decoder's (z, x, z_segments, x_segments)).
  Block &mine = forwardPacked.getBody().front(), &theirs = forward.getBody().front();
  unsigned sequences = forward.getNumArguments();
  if (forwardPacked.getNumArguments() != 2 * sequences ||
      mine.getOperations().size() != theirs.getOperations().size())
    return forwardPacked.emitError("@forward_packed is not @forward over a packed batch: "
                                   "their arguments or ops differ");
  IRMapping same;
  for (unsigned i = 0; i < sequences; ++i)
    same.map(forwardPacked.getArgument(i), forward.getArgument(i));
  packedSegments = forwardPacked.getArgument(2 * sequences - 1);
  packedSourceSegments =
      placed->encoderDecoder ? forwardPacked.getArgument(sequences) : Value();
  auto &placements = placed->placements;
  for (auto [packedOp, op] : llvm::zip(mine, theirs)) {
    bool match =
        packedOp.getName() == op.getName() && packedOp.getNumResults() == op.getNumResults();
    SmallVector<Value> operands;
    for (Value v : packedOp.getOperands())
      if (v != packedSegments && v != packedSourceSegments)
        operands.push_back(same.lookupOrNull(v));
    match = match && llvm::equal(operands, op.getOperands());
    // The same attributes but the operand counts (segments) and xfc --check's op tags.
    auto attributes = [](Operation &o) {
      SmallVector<NamedAttribute> kept;
      for (NamedAttribute a : o.getAttrDictionary())
        if (a.getName() != "operandSegmentSizes" && a.getName() != "xf.check_op")
          kept.push_back(a);
      return kept;
    };
    match = match && attributes(packedOp) == attributes(op);
    for (auto [a, b] : llvm::zip(packedOp.getResults(), op.getResults()))
      match = match && a.getType() == b.getType();
    if (!match)
      return packedOp.emitError("@forward_packed differs from @forward here (not the same op on "
                                "the same operands): the packed batch cannot share its kernels");
    forwardOpOf[&packedOp] = &op;
    for (auto [a, b] : llvm::zip(packedOp.getResults(), op.getResults())) {
      same.map(a, b);
      if (auto it = placements.find(b); it != placements.end()) {
        Placement copy = it->second; // placements[a] may grow the vector under `it`
        placements[a] = copy;
      }
    }
  }
  for (unsigned i = 0; i < sequences; ++i)
    if (auto it = placements.find(forward.getArgument(i)); it != placements.end()) {
      Placement copy = it->second;
      placements[forwardPacked.getArgument(i)] = copy;
    }
  return success();
}
