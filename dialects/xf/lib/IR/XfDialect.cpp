//===- XfDialect.cpp - the xf dialect -------------------------------------===//

#include "xf/IR/XfDialect.h"
#include "xf/IR/XfOps.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::xf;

#include "xf/IR/XfDialect.cpp.inc"

void XfDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "xf/IR/XfOps.cpp.inc"
      >();
  registerAttributes();
}

bool mlir::xf::isLoopKernelOp(Operation *op) {
  return isa<TokenEmbedOp, PositionalEmbedOp, SinusoidalEmbedOp, AddOp, ReluOp, GeluOp, SoftmaxOp,
             LayerNormOp, RmsNormOp, SiluOp, MulOp, ScaleOp, RopeOp>(op);
}

LoopScheduleAttr mlir::xf::loopScheduleAttrOf(Operation *op) {
  return op->getAttrOfType<LoopScheduleAttr>(XfDialect::kLoopScheduleAttrName);
}

WeightStorage mlir::xf::weightStorageOf(Value tensor) {
  Operation *op = tensor.getDefiningOp();
  auto attr = op ? op->getAttrOfType<WeightStorageAttr>(XfDialect::kWeightStorageAttrName)
                 : WeightStorageAttr();
  return attr ? attr.getValue() : WeightStorage::f32;
}

bool mlir::xf::isConstantOp(Operation *op) {
  return isa<ParameterOp, SliceOp, ConcatOp, TransposeOp, RowOp>(op);
}

bool mlir::xf::isModelConstant(Value tensor) {
  Operation *op = tensor.getDefiningOp();
  if (!op || !isConstantOp(op))
    return false;
  return llvm::all_of(op->getOperands(), isModelConstant);
}

bool mlir::xf::hasBf16Inputs(Operation *op) {
  return op->hasAttr(XfDialect::kBf16InputsAttrName);
}

bool mlir::xf::hasPackedWeight(Operation *op) {
  return op->hasAttr(XfDialect::kPackedWeightAttrName);
}

namespace {
/// Whether `use` reads its value as the kernels read a weight of `storage`:
/// a GEMM's weight ([N, K] for blocks), an embedding table, and a part of a
/// concatenation stored the same way (a concatenation's own uses: GEMM
/// weights only, [N, K] for blocks).
bool readsAsWeight(OpOperand &use, WeightStorage storage, bool concat) {
  Operation *user = use.getOwner();
  if (concat && !isa<GemmOp>(user))
    return false;
  if (isa<TokenEmbedOp>(user))
    return use.getOperandNumber() == 0;
  if (auto gemm = dyn_cast<GemmOp>(user))
    return use.getOperandNumber() == 1 && (!isBlockStorage(storage) || gemm.getTransposeWeight());
  return isa<ConcatOp>(user) && weightStorageOf(user->getResult(0)) == storage;
}

/// The rules of xf-assign-weight-storage that one op shows (XfKernelAttrs.td).
LogicalResult verifyWeightStorage(Operation *op, Attribute value) {
  llvm::StringLiteral name = XfDialect::kWeightStorageAttrName;
  auto attr = dyn_cast<WeightStorageAttr>(value);
  if (!attr)
    return op->emitError() << "'" << name << "' must be a #xf.weight_storage, not " << value;
  WeightStorage storage = attr.getValue();
  if (storage == WeightStorage::f32)
    return success();
  auto concat = dyn_cast<ConcatOp>(op);
  if (!isa<ParameterOp>(op) && !concat)
    return op->emitError() << "'" << name << "' is only for xf.parameter and xf.concat, not '"
                           << op->getName() << "'";
  std::string what = "#xf.weight_storage<" + stringifyWeightStorage(storage).str() + ">";
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() != 2)
    return op->emitError() << what << " needs a matrix";
  if (concat) {
    if (concat.getAxis() != 0)
      return op->emitError() << what << " joins rows (axis 0), not axis " << concat.getAxis();
    // The host copies a bf16 concatenation's rows as pairs of bf16 (32-bit elements).
    if (storage == WeightStorage::bf16 && (type.isDynamicDim(1) || type.getDimSize(1) % 2 != 0))
      return op->emitError() << what << " joins rows of an even length, not " << type.getDimSize(1);
    for (Value part : concat.getInputs())
      if (!part.getDefiningOp<ParameterOp>() || weightStorageOf(part) != storage)
        return op->emitError() << what << " needs every part an xf.parameter stored as " << what;
  }
  for (OpOperand &use : op->getResult(0).getUses()) {
    // A GEMM reads [N, K] block rows of K: whole blocks of 32.
    if (isa<GemmOp>(use.getOwner()) && isBlockStorage(storage) &&
        (type.isDynamicDim(1) || type.getDimSize(1) % 32 != 0))
      return op->emitError() << what << " needs a GEMM's rows of K of whole 32-element blocks, not "
                             << type.getDimSize(1);
    if (!readsAsWeight(use, storage, bool(concat)))
      return op->emitError() << what << " is read only as an xf.gemm weight"
                             << (isBlockStorage(storage) ? " ([N, K], transpose_weight)" : "")
                             << (concat ? "" : " or an xf.token_embed table")
                             << (concat ? "" : " or a part of a concatenation stored so")
                             << ", not by operand " << use.getOperandNumber() << " of '"
                             << use.getOwner()->getName() << "'";
  }
  return success();
}
/// The GEMM marks (XfDialect.td): a unit attribute on an xf.gemm whose
/// combination with its weight and schedule a kernel exists for.
LogicalResult verifyGemmMark(Operation *op, NamedAttribute attr) {
  llvm::StringRef name = attr.getName().strref();
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << name << "' is a unit attribute, not " << attr.getValue();
  auto gemm = dyn_cast<GemmOp>(op);
  if (!gemm)
    return op->emitError() << "'" << name << "' is only for xf.gemm, not '" << op->getName()
                           << "'";
  WeightStorage storage = weightStorageOf(gemm.getWeight());
  if (name == XfDialect::kBf16InputsAttrName) {
    if (storage != WeightStorage::bf16)
      return op->emitError() << "'" << name << "' needs a weight stored as "
                             << "#xf.weight_storage<bf16>, not "
                             << stringifyWeightStorage(storage);
    return success();
  }
  if (isBlockStorage(storage))
    return op->emitError() << "'" << name << "': a weight in ggml blocks is read as stored";
  if (!gemm.getScheduleAttr() || !gemm.getScheduleAttr().getPackWeights())
    return op->emitError() << "'" << name << "' needs a schedule with pack_weights = true";
  if (gemm.getGpuScheduleAttr())
    return op->emitError() << "'" << name << "': a CUDA GEMM (gpu_schedule) reads its weight "
                           << "as stored";
  if (!isModelConstant(gemm.getWeight()))
    return op->emitError() << "'" << name << "' needs a weight that is a constant of the model "
                           << "(a parameter, or sliced, joined or transposed from parameters)";
  auto func = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
  auto funcName = func ? func->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName())
                       : StringAttr();
  if (funcName && funcName.getValue() == "loss_and_gradients")
    return op->emitError() << "'" << name << "': the training step reads its weights as "
                           << "stored (they change every step)";
  return success();
}
} // namespace

LogicalResult XfDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  if (attr.getName() == kWeightStorageAttrName)
    return verifyWeightStorage(op, attr.getValue());
  if (attr.getName() == kBf16InputsAttrName || attr.getName() == kPackedWeightAttrName)
    return verifyGemmMark(op, attr);
  if (attr.getName() != kLoopScheduleAttrName)
    return success();
  if (!isa<LoopScheduleAttr>(attr.getValue()))
    return op->emitError() << "'" << kLoopScheduleAttrName
                           << "' must be a #xf.loop_schedule, not " << attr.getValue();
  if (!isLoopKernelOp(op))
    return op->emitError() << "'" << kLoopScheduleAttrName << "' is only for ops lowered to "
                           << "loop kernels (norms, softmax, embeddings, elementwise), not '"
                           << op->getName() << "'";
  return success();
}
