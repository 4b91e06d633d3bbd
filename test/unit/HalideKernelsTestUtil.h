//===- HalideKernelsTestUtil.h - Helpers for the Halide kernel tests -*- C++ -*-===//
//
// JIT-compiles the pipelines that compileGemmKernel / compileAttentionKernel
// AOT-compile (same definitions, same schedules, the host target with the
// runtime) and fills row-major matrices with reproducible random values.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TEST_UNIT_HALIDEKERNELSTESTUTIL_H
#define XF_TEST_UNIT_HALIDEKERNELSTESTUTIL_H

#include "KernelPipelines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace xftest {

/// A row-major [rows, cols] float matrix as a Halide buffer (dim 0 = cols).
inline Halide::Runtime::Buffer<float> randomMatrix(int rows, int cols, std::mt19937 &rng) {
  Halide::Runtime::Buffer<float> m(cols, rows);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  m.for_each_value([&](float &v) { v = dist(rng); });
  return m;
}

/// m's rows of `heads` heads as the kernel's 3-D (column, row, head) buffer:
/// heads side by side in a row (m's own layout), or each head's rows
/// contiguous in a block of `capacity` rows (a KV cache slot).
inline Halide::Runtime::Buffer<float> byHead(const Halide::Runtime::Buffer<float> &m, int heads,
                                             bool cacheSlot, int capacity) {
  const int width = m.width() / heads, rows = m.height();
  Halide::Runtime::Buffer<float> slot =
      cacheSlot ? Halide::Runtime::Buffer<float>(width, capacity, heads)
                : Halide::Runtime::Buffer<float>({width, rows, heads}, {0, 2, 1});
  slot.fill(std::nanf("")); // rows past the context must not be read
  if (cacheSlot)
    slot.crop(1, 0, rows);
  for (int g = 0; g < heads; ++g)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < width; ++c)
        slot(c, r, g) = m(g * width + c, r);
  return slot;
}

/// Compiles `built` for the host with Halide's JIT; fails the test on error.
inline Halide::Callable jit(llvm::Expected<mlir::xf::KernelPipeline> built) {
  if (!built) {
    ADD_FAILURE() << llvm::toString(built.takeError());
    return {};
  }
  try {
    return built->pipeline.compile_to_callable(built->arguments(), mlir::xf::hostHalideTarget());
  } catch (const Halide::Error &e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

/// Calls a JIT-compiled kernel with its input buffers then the output.
inline int call(Halide::Callable &kernel, std::vector<halide_buffer_t *> args) try {
  switch (args.size()) {
  case 2:
    return kernel(args[0], args[1]);
  case 3:
    return kernel(args[0], args[1], args[2]);
  case 4:
    return kernel(args[0], args[1], args[2], args[3]);
  case 5:
    return kernel(args[0], args[1], args[2], args[3], args[4]);
  case 6:
    return kernel(args[0], args[1], args[2], args[3], args[4], args[5]);
  case 7:
    return kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6]);
  }
  ADD_FAILURE() << "unexpected argument count " << args.size();
  return -1;
} catch (const Halide::Error &e) {
  ADD_FAILURE() << e.what();
  return -1;
}

} // namespace xftest

#endif // XF_TEST_UNIT_HALIDEKERNELSTESTUTIL_H
