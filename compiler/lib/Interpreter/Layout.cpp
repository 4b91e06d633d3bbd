//===- Layout.cpp - transpose, concat, slice, row -------------------------===//

#include "Semantics.h"

using namespace mlir::xf::interp;

llvm::Error mlir::xf::interp::evalError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string mlir::xf::interp::shapeText(const Tensor &t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

Tensor mlir::xf::interp::transpose(const Tensor &a) {
  Tensor r({a.cols(), a.rows()});
  for (int64_t i = 0; i < a.rows(); ++i)
    for (int64_t j = 0; j < a.cols(); ++j)
      r.data[j * a.rows() + i] = a.data[i * a.cols() + j];
  return r;
}

Result mlir::xf::interp::concat(llvm::ArrayRef<const Tensor *> parts, int64_t axis) {
  if (parts.empty())
    return evalError("concat of nothing");
  size_t rank = parts[0]->shape.size();
  if (axis < 0 || size_t(axis) >= rank)
    return evalError("concat axis " + llvm::Twine(axis) + " of a rank-" + llvm::Twine(rank) +
                     " tensor");
  std::vector<int64_t> shape = parts[0]->shape;
  shape[axis] = 0;
  for (const Tensor *p : parts) {
    for (size_t d = 0; d < rank; ++d)
      if (p->shape.size() != rank || (int64_t(d) != axis && p->shape[d] != shape[d]))
        return evalError("concat of " + shapeText(*parts[0]) + " and " + shapeText(*p));
    shape[axis] += p->shape[axis];
  }
  Tensor r(shape);
  // Row-major: axis 0 (or a vector) appends the data; axis 1 interleaves rows.
  if (rank == 1 || axis == 0) {
    size_t at = 0;
    for (const Tensor *p : parts)
      std::copy(p->data.begin(), p->data.end(), r.data.begin() + at), at += p->data.size();
    return r;
  }
  int64_t col = 0;
  for (const Tensor *p : parts) {
    for (int64_t i = 0; i < r.rows(); ++i)
      std::copy(p->row(i), p->row(i) + p->cols(), r.row(i) + col);
    col += p->cols();
  }
  return r;
}

Result mlir::xf::interp::slice(const Tensor &a, int64_t axis, int64_t offset, int64_t size) {
  if (axis < 0 || size_t(axis) >= a.shape.size() || offset < 0 || size < 0 ||
      offset + size > a.shape[axis])
    return evalError("slice [" + llvm::Twine(offset) + ", " + llvm::Twine(offset + size) +
                     ") along axis " + llvm::Twine(axis) + " of " + shapeText(a));
  std::vector<int64_t> shape = a.shape;
  shape[axis] = size;
  Tensor r(shape);
  if (a.shape.size() == 1 || axis == 0) {
    int64_t width = a.shape.size() == 1 ? 1 : a.cols();
    std::copy(a.data.begin() + offset * width, a.data.begin() + (offset + size) * width,
              r.data.begin());
    return r;
  }
  for (int64_t i = 0; i < a.rows(); ++i)
    std::copy(a.row(i) + offset, a.row(i) + offset + size, r.row(i));
  return r;
}

Result mlir::xf::interp::row(const Tensor &a, int64_t index) {
  if (a.shape.size() != 2 || index < 0 || index >= a.rows())
    return evalError("row " + llvm::Twine(index) + " of " + shapeText(a));
  Tensor r({a.cols()});
  std::copy(a.row(index), a.row(index) + a.cols(), r.data.begin());
  return r;
}
