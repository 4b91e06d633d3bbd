//===- WeightRegion.h - One mapping for the weights xf_prepare derives -*- C++ -*-===//
//
// The derived buffers xf_prepare fills (concatenated and packed weights), and the session's
// copies of the parameters the forward reads whole, are read by every forward pass and never
// freed before the session: they get one anonymous mapping, aligned to
// 2 MiB and marked MADV_HUGEPAGE, carved into 64-byte aligned pieces. On Linux with
// transparent huge pages in "madvise" (or "always") mode the kernel then backs the whole
// 2 MiB stretches of it with huge pages: a decode step streams the weights from memory, and
// with 4 KiB pages every page boundary is a TLB miss and stops the hardware prefetcher (Zen 4,
// one thread: a pure read 17 vs 30 GB/s, the block GEMVs of a SmolLM2 step 6.2 vs 5.4 ms).
// The tail past the last whole 2 MiB stays in small pages, so the resident size is the bytes
// asked for (rounded to 4 KiB), as with separate allocations. Elsewhere: zeroed heap memory.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_WEIGHTREGION_H
#define XFRT_WEIGHTREGION_H

#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xfrt {

class WeightRegion {
public:
  WeightRegion() = default;
  WeightRegion(WeightRegion &&other) noexcept;
  WeightRegion &operator=(WeightRegion &&other) noexcept;
  WeightRegion(const WeightRegion &) = delete;
  WeightRegion &operator=(const WeightRegion &) = delete;
  ~WeightRegion();

  /// One zero-filled piece per entry of `bytes` (each at least one cache line, 64-byte
  /// aligned, none overlapping). Fails on negative or absurd sizes and when out of memory.
  static Expected<WeightRegion> allocate(const std::vector<int64_t> &bytes);
  const std::vector<void *> &pieces() const { return pieces_; }
  size_t mappedBytes() const { return size_; }

private:
  void release();
  void *base_ = nullptr; // the mapping (or heap block)
  size_t size_ = 0;
  bool heap_ = false;
  std::vector<void *> pieces_;
};

} // namespace xfrt

#endif // XFRT_WEIGHTREGION_H
