//===- XfShapeRules.cpp - shared pieces of the xf verifiers ---------------===//

#include "XfShapeRules.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

std::string xf::formatShape(Type type) {
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return "<unranked>";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(ranked.getShape(), os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return text;
}

LogicalResult xf::expectSameDim(Operation *op, llvm::StringRef what, DimRef a,
                                DimRef b) {
  if (dimsAgree(a.size(), b.size()))
    return success();
  auto dimText = [](int64_t d) {
    return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
  };
  return op->emitOpError() << what << ": " << a.operand << " "
                           << formatShape(a.type) << " has "
                           << dimText(a.size()) << " on axis " << a.axis
                           << " but " << b.operand << " " << formatShape(b.type)
                           << " has " << dimText(b.size()) << " on axis "
                           << b.axis;
}

LogicalResult xf::verifySameFloatElementType(Operation *op) {
  Type first;
  auto check = [&](Type type) -> LogicalResult {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor || !llvm::isa<FloatType>(tensor.getElementType()))
      return success();
    if (!first) {
      first = tensor.getElementType();
      return success();
    }
    if (tensor.getElementType() == first)
      return success();
    return op->emitOpError() << "mixes element types " << first << " and "
                             << tensor.getElementType();
  };
  for (Type t : op->getOperandTypes())
    if (failed(check(t)))
      return failure();
  for (Type t : op->getResultTypes())
    if (failed(check(t)))
      return failure();
  return success();
}
