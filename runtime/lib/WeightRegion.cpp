//===- WeightRegion.cpp - One mapping for the weights xf_prepare derives --===//
#include "xfrt/WeightRegion.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/HugePageMapping.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace xfrt {
namespace {
constexpr uint64_t kLimit = uint64_t(1) << 46;
} // namespace

WeightRegion::WeightRegion(WeightRegion &&other) noexcept { *this = std::move(other); }

WeightRegion &WeightRegion::operator=(WeightRegion &&other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    heap_ = std::exchange(other.heap_, false);
    pieces_ = std::move(other.pieces_);
    other.pieces_.clear();
  }
  return *this;
}

WeightRegion::~WeightRegion() { release(); }

void WeightRegion::release() {
  if (!base_)
    return;
  if (heap_)
    std::free(base_);
  else
    unmapHugePageMapping(base_, size_);
  base_ = nullptr;
  size_ = 0;
  pieces_.clear();
}

Expected<WeightRegion> WeightRegion::allocate(const std::vector<int64_t> &bytes) {
  // Offsets of the pieces, each rounded up to whole cache lines (at least one).
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (int64_t b : bytes) {
    if (b < 0 || uint64_t(b) > kLimit)
      return makeError("cannot allocate " + std::to_string(b) + " bytes");
    uint64_t rounded = std::max<uint64_t>(kBufferAlignment, (uint64_t(b) + kBufferAlignment - 1) /
                                                                 kBufferAlignment * kBufferAlignment);
    offsets.push_back(total);
    if (!checkedAdd(total, rounded, total) || total > kLimit)
      return makeError("cannot allocate " + std::to_string(total) + " bytes");
  }
  WeightRegion region;
  if (total == 0)
    return region;
  region.base_ = mapHugePageAligned(size_t(total));
  region.size_ = region.base_ ? hugePageMappingSize(size_t(total)) : 0;
  if (!region.base_) {
    void *h = nullptr;
    if (posix_memalign(&h, kBufferAlignment, size_t(total)) != 0 || !h)
      return makeError("out of memory allocating " + std::to_string(total) + " bytes");
    std::memset(h, 0, size_t(total));
    region.base_ = h;
    region.size_ = size_t(total);
    region.heap_ = true;
  }
  for (uint64_t offset : offsets)
    region.pieces_.push_back(static_cast<uint8_t *>(region.base_) + offset);
  return region;
}

} // namespace xfrt
