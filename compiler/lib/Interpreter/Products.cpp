//===- Products.cpp - matrix products ----------------------------------------===//
//
// C = A·B (or A·Bᵀ) summed in double, term by term in k order: no blocking,
// no reassociation beyond what double rounding does.
//
//===----------------------------------------------------------------------===//

#include "Semantics.h"

using namespace mlir::xf::interp;

Result mlir::xf::interp::matmul(const Tensor &a, const Tensor &b, bool transposeB) {
  if (a.shape.size() != 2 || b.shape.size() != 2)
    return evalError("a matrix product of " + shapeText(a) + " and " + shapeText(b));
  const int64_t m = a.rows(), k = a.cols();
  const int64_t kb = transposeB ? b.cols() : b.rows(), n = transposeB ? b.rows() : b.cols();
  if (k != kb)
    return evalError("a matrix product of " + shapeText(a) + " and " +
                     (transposeB ? "the transpose of " : "") + shapeText(b));
  Tensor c({m, n});
  for (int64_t i = 0; i < m; ++i) {
    const double *x = a.row(i);
    double *y = c.row(i);
    if (transposeB) {
      for (int64_t j = 0; j < n; ++j) {
        const double *w = b.row(j);
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += x[p] * w[p];
        y[j] = sum;
      }
    } else {
      for (int64_t p = 0; p < k; ++p) {
        const double xp = x[p], *w = b.row(p);
        for (int64_t j = 0; j < n; ++j)
          y[j] += xp * w[j];
      }
    }
  }
  return c;
}
