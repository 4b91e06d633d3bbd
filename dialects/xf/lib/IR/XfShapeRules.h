//===- XfShapeRules.h - shared pieces of the xf verifiers -------*- C++ -*-===//
//
// Verifiers phrase every failure in terms of shapes, printed as `[?, 768]`,
// and name which operand each shape came from.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_IR_XFSHAPERULES_H
#define XF_LIB_IR_XFSHAPERULES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::xf {

/// `[?, 768]` for tensor<?x768xf32>.
std::string formatShape(Type type);

/// Two dimension sizes agree when either is dynamic or they are equal.
inline bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// A named dimension of a named operand, for diagnostics: "d_in of weight".
struct DimRef {
  llvm::StringRef operand; // e.g. "weight"
  Type type;               // the operand's ranked tensor type
  unsigned axis;
  int64_t size() const { return llvm::cast<RankedTensorType>(type).getDimSize(axis); }
};

/// Emits "<what>: <a.operand> [..] has <a> on axis i but <b.operand> [..] has <b> on axis j"
/// unless the two dimensions agree.
LogicalResult expectSameDim(Operation *op, llvm::StringRef what, DimRef a, DimRef b);

/// All floating-point tensor operands and results share one element type.
LogicalResult verifySameFloatElementType(Operation *op);

} // namespace mlir::xf

#endif // XF_LIB_IR_XFSHAPERULES_H
