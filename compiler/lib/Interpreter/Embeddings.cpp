//===- Embeddings.cpp - token and positional embeddings (Alg. 1, 2) ---------===//

#include "Semantics.h"

#include <cmath>

using namespace mlir::xf::interp;

Result mlir::xf::interp::tokenEmbed(const Tensor &table, llvm::ArrayRef<int32_t> tokens) {
  Tensor r({int64_t(tokens.size()), table.cols()});
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= table.rows())
      return evalError("token id " + llvm::Twine(tokens[t]) + " at position " + llvm::Twine(t) +
                       " is past the embedding table " + shapeText(table));
    std::copy(table.row(tokens[t]), table.row(tokens[t]) + table.cols(), r.row(t));
  }
  return r;
}

Result mlir::xf::interp::positionalEmbed(const Tensor &table, int64_t length,
                                         int64_t firstPosition) {
  if (firstPosition + length > table.rows())
    return evalError("positions " + llvm::Twine(firstPosition) + " .. " +
                     llvm::Twine(firstPosition + length - 1) + " are past the positional table " +
                     shapeText(table));
  Tensor r({length, table.cols()});
  for (int64_t t = 0; t < length; ++t)
    std::copy(table.row(firstPosition + t), table.row(firstPosition + t) + table.cols(), r.row(t));
  return r;
}

/// P[t, 2i] = sin(p / base^(2i/d)), P[t, 2i+1] = cos(p / base^(2i/d)), p = first + t.
Result mlir::xf::interp::sinusoidalEmbed(int64_t length, int64_t width, double base,
                                         int64_t firstPosition) {
  if (width % 2)
    return evalError("sinusoidal positions of odd width " + llvm::Twine(width));
  Tensor r({length, width});
  for (int64_t t = 0; t < length; ++t)
    for (int64_t i = 0; i < width / 2; ++i) {
      double angle = double(firstPosition + t) / std::pow(base, 2.0 * double(i) / double(width));
      r.row(t)[2 * i] = std::sin(angle);
      r.row(t)[2 * i + 1] = std::cos(angle);
    }
  return r;
}
