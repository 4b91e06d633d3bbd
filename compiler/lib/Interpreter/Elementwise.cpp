//===- Elementwise.cpp - activations, sums, products, softmax ---------------===//

#include "Semantics.h"

#include <algorithm>
#include <cmath>

using namespace mlir::xf::interp;

double mlir::xf::interp::activate(Pointwise kind, double x) {
  switch (kind) {
  case Pointwise::None:
    return x;
  case Pointwise::Relu:
    return x > 0 ? x : 0.0;
  case Pointwise::GeluTanh: // GPT-2: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case Pointwise::GeluErf: // x·Φ(x)
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Pointwise::Silu: // x·σ(x)
    return x / (1.0 + std::exp(-x));
  }
  return x;
}

Tensor mlir::xf::interp::map(const Tensor &a, Pointwise kind) {
  Tensor r = a;
  for (double &x : r.data)
    x = activate(kind, x);
  return r;
}

Result mlir::xf::interp::add(const Tensor &a, const Tensor &b) {
  if (a.shape == b.shape) {
    Tensor r = a;
    for (size_t i = 0; i < r.data.size(); ++i)
      r.data[i] += b.data[i];
    return r;
  }
  if (a.shape.size() == 2 && b.shape.size() == 1 && b.cols() == a.cols()) {
    Tensor r = a;
    for (int64_t i = 0; i < r.rows(); ++i)
      for (int64_t j = 0; j < r.cols(); ++j)
        r.row(i)[j] += b.data[j];
    return r;
  }
  return evalError("a sum of " + shapeText(a) + " and " + shapeText(b));
}

Result mlir::xf::interp::multiply(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape)
    return evalError("an elementwise product of " + shapeText(a) + " and " + shapeText(b));
  Tensor r = a;
  for (size_t i = 0; i < r.data.size(); ++i)
    r.data[i] *= b.data[i];
  return r;
}

Tensor mlir::xf::interp::softmaxRows(const Tensor &a) {
  Tensor r = a;
  for (int64_t i = 0; i < r.rows(); ++i) {
    double *x = r.row(i);
    double top = *std::max_element(x, x + r.cols()), sum = 0;
    for (int64_t j = 0; j < r.cols(); ++j)
      sum += x[j] = std::exp(x[j] - top);
    for (int64_t j = 0; j < r.cols(); ++j)
      x[j] /= sum;
  }
  return r;
}
