//===- Normalization.cpp - LayerNorm (Alg. 6) and RMSNorm -------------------===//

#include "Semantics.h"

#include <cmath>

using namespace mlir::xf::interp;

static llvm::Error checkGain(const Tensor &x, const Tensor *g, const char *what) {
  if (!g || (g->shape.size() == 1 && g->cols() == x.cols()))
    return llvm::Error::success();
  return evalError(llvm::Twine(what) + " " + shapeText(*g) + " for rows of " + shapeText(x));
}

Result mlir::xf::interp::layerNorm(const Tensor &x, const Tensor *gamma, const Tensor *beta,
                                   double eps) {
  if (llvm::Error e = checkGain(x, gamma, "gamma"))
    return std::move(e);
  if (llvm::Error e = checkGain(x, beta, "beta"))
    return std::move(e);
  Tensor r = x;
  const int64_t d = x.cols();
  for (int64_t i = 0; i < x.rows(); ++i) {
    double *y = r.row(i), mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j)
      mean += y[j];
    mean /= double(d);
    for (int64_t j = 0; j < d; ++j)
      var += (y[j] - mean) * (y[j] - mean);
    var /= double(d); // biased, as Alg. 6
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < d; ++j) {
      y[j] = (y[j] - mean) * inv;
      if (gamma)
        y[j] = y[j] * gamma->data[j] + (beta ? beta->data[j] : 0.0);
    }
  }
  return r;
}

Result mlir::xf::interp::rmsNorm(const Tensor &x, const Tensor *gamma, double eps) {
  if (llvm::Error e = checkGain(x, gamma, "gamma"))
    return std::move(e);
  Tensor r = x;
  const int64_t d = x.cols();
  for (int64_t i = 0; i < x.rows(); ++i) {
    double *y = r.row(i), squares = 0;
    for (int64_t j = 0; j < d; ++j)
      squares += y[j] * y[j];
    double inv = 1.0 / std::sqrt(squares / double(d) + eps);
    for (int64_t j = 0; j < d; ++j)
      y[j] = y[j] * inv * (gamma ? gamma->data[j] : 1.0);
  }
  return r;
}
