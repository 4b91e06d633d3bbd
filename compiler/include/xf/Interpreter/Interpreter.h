//===- Interpreter.h - the xf dialect evaluated in double precision -*- C++ -*-===//
//
// An evaluator of @forward written from the ops' documented semantics
// (XfOps.td, docs/dialect.md) and nothing else: plain loops in double
// precision, one value per op, no sharing with the Halide generators or the
// host lowering. It runs both the frontend's `--emit=xf` module and the
// kernel-level module after fusion (xf.gemm, xf.attention, xf.rope), so
// `xfc --check` can compare a build with it as a whole and kernel by kernel.
//
//===----------------------------------------------------------------------===//

#ifndef XF_INTERPRETER_INTERPRETER_H
#define XF_INTERPRETER_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace mlir::xf::interp {

/// A dense row-major tensor of rank 1 or 2 (a vector is one row).
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  Tensor(std::vector<int64_t> shape) : shape(std::move(shape)) { data.assign(numel(), 0.0); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  double *row(int64_t r) { return data.data() + r * cols(); }
  const double *row(int64_t r) const { return data.data() + r * cols(); }
};

/// A checkpoint tensor as the executable holds it: float32, the stored shape.
struct ParameterData {
  const float *data = nullptr;
  std::vector<int64_t> shape;
};

struct Inputs {
  /// xf.parameter "name" → its data; every parameter @forward uses must be here.
  llvm::StringMap<ParameterData> parameters;
  /// Token ids, one sequence per @forward argument (z then x for an encoder-decoder).
  std::vector<std::vector<int32_t>> sequences;
};

struct Evaluation {
  Tensor result;                            // what @forward returns
  llvm::DenseMap<Operation *, Tensor> kept; // the ops `keep` selected
};

/// Evaluates @forward. Values are dropped after their last use except those
/// of the ops `keep` accepts (when given), which are returned in `kept`.
/// Errors (a missing parameter, a token id past the table, an op it does not
/// know) name the op's location.
llvm::Expected<Evaluation> evaluate(func::FuncOp forward, const Inputs &inputs,
                                    std::function<bool(Operation *)> keep = nullptr);

} // namespace mlir::xf::interp

#endif // XF_INTERPRETER_INTERPRETER_H
