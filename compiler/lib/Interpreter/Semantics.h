//===- Semantics.h - the interpreter's definitions of the xf ops -*- C++ -*-===//
//
// One function per mathematical operation, on whole tensors in double
// precision, as XfOps.td states them. Shapes are checked here (the module
// is verified, but its dynamic lengths are only known now): a mismatch is
// an error, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#ifndef XF_INTERPRETER_SEMANTICS_H
#define XF_INTERPRETER_SEMANTICS_H

#include "xf/Interpreter/Interpreter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::xf::interp {

using Result = llvm::Expected<Tensor>;
llvm::Error evalError(const llvm::Twine &message);
std::string shapeText(const Tensor &t);

// Layout.cpp: views of checkpoint tensors.
Tensor transpose(const Tensor &a);
Result concat(llvm::ArrayRef<const Tensor *> parts, int64_t axis);
Result slice(const Tensor &a, int64_t axis, int64_t offset, int64_t size);
Result row(const Tensor &a, int64_t index);

// Products.cpp: a·b, or a·bᵀ with `transposeB`.
Result matmul(const Tensor &a, const Tensor &b, bool transposeB);

// Elementwise.cpp
enum class Pointwise { None, Relu, GeluTanh, GeluErf, Silu };
double activate(Pointwise kind, double x);
Tensor map(const Tensor &a, Pointwise kind);
/// a + b, same shapes, or b a vector added to every row of a.
Result add(const Tensor &a, const Tensor &b);
Result multiply(const Tensor &a, const Tensor &b);
Tensor softmaxRows(const Tensor &a);

// Normalization.cpp
Result layerNorm(const Tensor &x, const Tensor *gamma, const Tensor *beta, double eps);
Result rmsNorm(const Tensor &x, const Tensor *gamma, double eps);

// Attention.cpp
struct AttentionShape {
  int64_t heads = 1, kvHeads = 1;
  std::optional<double> scale; // default 1/sqrt(d_k)
  bool causal = false;
};
Result attention(const Tensor &q, const Tensor &k, const Tensor &v, const AttentionShape &shape);
Result rope(const Tensor &x, int64_t heads, bool adjacentPairs, double base, int64_t firstPosition);

// Embeddings.cpp
Result tokenEmbed(const Tensor &table, llvm::ArrayRef<int32_t> tokens);
Result positionalEmbed(const Tensor &table, int64_t length, int64_t firstPosition);
Result sinusoidalEmbed(int64_t length, int64_t width, double base, int64_t firstPosition);

} // namespace mlir::xf::interp

#endif // XF_INTERPRETER_SEMANTICS_H
