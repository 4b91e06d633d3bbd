//===- AlignedBuffer.cpp - Owned 64-byte aligned memory -------------------===//
#include "xfrt/AlignedBuffer.h"

#include <cstdlib>
#include <cstring>

namespace xfrt {

void AlignedBuffer::Free::operator()(void *p) const { std::free(p); }

Expected<AlignedBuffer> AlignedBuffer::allocate(uint64_t bytes) {
  // Round up to whole cache lines; refuse anything that cannot be a real allocation.
  if (bytes > (uint64_t(1) << 46))
    return makeError("cannot allocate " + std::to_string(bytes) + " bytes");
  uint64_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded == 0)
    rounded = kBufferAlignment;
  void *p = nullptr;
  if (posix_memalign(&p, kBufferAlignment, size_t(rounded)) != 0 || !p)
    return makeError("out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, size_t(rounded));
  AlignedBuffer buffer;
  buffer.ptr_.reset(p);
  buffer.size_ = bytes;
  return buffer;
}

bool checkedMul(int64_t a, int64_t b, int64_t &out) { return !__builtin_mul_overflow(a, b, &out); }
bool checkedMul(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}
bool checkedAdd(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

} // namespace xfrt
