//===- BufferPlan.h - one arena, slots reused by liveness -------*- C++ -*-===//
//
// Activations are [rows, cols] with rows = ℓ (or ℓ_z). The arena is laid out
// in units of one padded column of ℓ_pad floats, ℓ_pad = roundup(max(ℓ, ℓ_z),
// 16), so a slot is a static column range and its byte offset is a multiple
// of 64 for every sequence length. Slots are packed first-fit by liveness.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CONVERSION_BUFFERPLAN_H
#define XF_CONVERSION_BUFFERPLAN_H

#include <cstdint>
#include <vector>

namespace mlir::xf {

struct BufferRequest {
  int64_t columns;   // width of the buffer in padded columns
  int64_t firstUse;  // op index that writes it
  int64_t lastUse;   // last op index that reads it (or any view of it)
};

struct BufferPlan {
  std::vector<int64_t> columnOffset; // per request
  int64_t totalColumns = 0;
};

BufferPlan planBuffers(const std::vector<BufferRequest> &requests);

} // namespace mlir::xf

#endif // XF_CONVERSION_BUFFERPLAN_H
