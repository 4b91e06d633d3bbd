//===- HugePageMapping.h - Anonymous memory on 2 MiB boundaries --*- C++ -*-===//
//
// An anonymous mapping that starts on a 2 MiB boundary and is marked MADV_HUGEPAGE, for the
// memory the decode loops stream (WeightRegion.h says why: with 4 KiB pages every page
// boundary is a TLB miss and stops the hardware prefetcher). With transparent huge pages in
// "madvise" (or "always") mode the kernel backs its whole 2 MiB stretches with huge pages;
// the tail past the last one stays in small pages, so the resident size is the bytes asked
// for, rounded to 4 KiB. Header-only: the machine-peak helpers the benchmarks compile alone
// (MachinePeak.cpp) use it too.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_HUGEPAGEMAPPING_H
#define XFRT_HUGEPAGEMAPPING_H

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace xfrt {

/// The bytes a mapping of `bytes` spans (whole 4 KiB pages).
inline size_t hugePageMappingSize(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }

/// A zero-filled mapping of hugePageMappingSize(bytes) starting on a 2 MiB boundary, or
/// nullptr (mmap failed, or not Linux). Release it with unmapHugePageMapping.
inline void *mapHugePageAligned(size_t bytes) {
#if defined(__linux__)
  // Over-allocate by one huge page, then unmap the slack before the first 2 MiB boundary
  // and after the end, so the mapping starts on a huge-page boundary.
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  const size_t size = hugePageMappingSize(bytes);
  void *p = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start)
    ::munmap(p, aligned - start);
  uintptr_t end = start + size + kHugePage;
  if (end > aligned + size)
    ::munmap(reinterpret_cast<void *>(aligned + size), end - (aligned + size));
  void *base = reinterpret_cast<void *>(aligned);
  (void)::madvise(base, size, MADV_HUGEPAGE); // a hint; refusals are fine
  return base;
#else
  (void)bytes;
  return nullptr;
#endif
}

/// Releases mapHugePageAligned(bytes)'s mapping `base`.
inline void unmapHugePageMapping(void *base, size_t bytes) {
#if defined(__linux__)
  if (base)
    ::munmap(base, hugePageMappingSize(bytes));
#else
  (void)base, (void)bytes;
#endif
}

} // namespace xfrt

#endif // XFRT_HUGEPAGEMAPPING_H
