//===- AlignedBuffer.h - Owned 64-byte aligned memory ------------*- C++ -*-===//
//
// Heap memory aligned to 64 bytes (a cache line, and enough for any vector load), zero-filled,
// with checked size arithmetic.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_ALIGNEDBUFFER_H
#define XFRT_ALIGNEDBUFFER_H

#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace xfrt {

constexpr size_t kBufferAlignment = 64;

class AlignedBuffer {
public:
  AlignedBuffer() = default;
  // Allocates `bytes` (at least one cache line even for 0). Fails on absurd sizes.
  static Expected<AlignedBuffer> allocate(uint64_t bytes);
  void *data() const { return ptr_.get(); }
  float *floats() const { return static_cast<float *>(ptr_.get()); }
  uint64_t size() const { return size_; }

private:
  struct Free {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, Free> ptr_;
  uint64_t size_ = 0;
};

// a * b and a + b on sizes, false on overflow of int64/uint64.
bool checkedMul(int64_t a, int64_t b, int64_t &out);
bool checkedMul(uint64_t a, uint64_t b, uint64_t &out);
bool checkedAdd(uint64_t a, uint64_t b, uint64_t &out);

} // namespace xfrt

#endif // XFRT_ALIGNEDBUFFER_H
