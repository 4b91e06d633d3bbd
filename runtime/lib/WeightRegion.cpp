//===- WeightRegion.cpp - One mapping for the weights xf_prepare derives --===//
#include "xfrt/WeightRegion.h"

#include "xfrt/AlignedBuffer.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace xfrt {
namespace {
constexpr uint64_t kHugePage = uint64_t(2) << 20;
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
#if defined(__linux__)
  if (!heap_)
    ::munmap(base_, size_);
  else
#endif
    std::free(base_);
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
#if defined(__linux__)
  // Over-allocate by one huge page, then unmap the slack before the first 2 MiB boundary
  // and after the end (rounded to 4 KiB), so the mapping starts on a huge-page boundary.
  const uint64_t size = (total + 4095) / 4096 * 4096;
  void *p = ::mmap(nullptr, size_t(size + kHugePage), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    uintptr_t start = reinterpret_cast<uintptr_t>(p);
    uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
    if (aligned > start)
      ::munmap(p, aligned - start);
    uintptr_t end = start + size + kHugePage;
    if (end > aligned + size)
      ::munmap(reinterpret_cast<void *>(aligned + size), end - (aligned + size));
    region.base_ = reinterpret_cast<void *>(aligned);
    region.size_ = size_t(size);
    (void)::madvise(region.base_, region.size_, MADV_HUGEPAGE); // a hint; refusals are fine
  }
#endif
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
