//===- HalideBufferLayout.h - halide_buffer_t as libxfrt sees it -*- C++ -*-===//
//
// The layout of Halide's halide_buffer_t / halide_dimension_t (HalideRuntime.h), which
// libxfrt does not include: it builds without Halide.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_HALIDEBUFFERLAYOUT_H
#define XFRT_HALIDEBUFFERLAYOUT_H

#include <cstdint>

namespace xfrt {

struct HalideDimension {
  int32_t min, extent, stride;
  uint32_t flags;
};
struct HalideBuffer {
  uint64_t device;
  const void *deviceInterface;
  uint8_t *host;
  uint64_t flags;
  uint8_t code, bits;
  uint16_t lanes;
  int32_t dimensions;
  HalideDimension *dim;
  void *padding;
};

} // namespace xfrt

#endif // XFRT_HALIDEBUFFERLAYOUT_H
