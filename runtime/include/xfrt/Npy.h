//===- Npy.h - NumPy .npy v1.0 float32 matrices ------------------*- C++
//-*-===//
//
// writeNpy stores a row-major float32 [rows, cols] matrix as .npy v1.0: magic
// "\x93NUMPY", version 1.0, u16 header length, then "{'descr': '<f4',
// 'fortran_order': False, 'shape': (rows, cols), }" padded with spaces and '\n'
// so the data starts at a multiple of 64. readNpy reads back what writeNpy
// writes (any '<f4' C-order array), for tests and tools.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_NPY_H
#define XFRT_NPY_H

#include "xfrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace xfrt {

// The complete .npy header (magic through '\n') for a float32 C-order array of
// `shape`.
std::string npyHeader(const std::vector<int64_t> &shape);

Status writeNpy(const std::string &path, const float *data, int64_t rows, int64_t cols);
// Any shape (row-major), e.g. [n, l, d] for a batch.
Status writeNpy(const std::string &path, const float *data, const std::vector<int64_t> &shape);

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
Expected<NpyArray> readNpy(const std::string &path);

} // namespace xfrt

#endif // XFRT_NPY_H
