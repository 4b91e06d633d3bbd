//===- KvCacheSlots.cpp - KV caches whose memory follows their tokens -----===//
#include "xfrt/KvCacheSlots.h"

#include "xfrt/AlignedBuffer.h"

#include <sys/mman.h>
#include <unistd.h>

namespace xfrt {

std::optional<std::string> kvBudgetRefusal(int64_t positions, int64_t blockBytes,
                                           int64_t budgetBytes) {
  int64_t blocks = kvBlocks(positions);
  if (budgetBytes <= 0 || blockBytes <= 0 || blocks <= budgetBytes / blockBytes)
    return std::nullopt;
  return "the request needs a KV cache of " + std::to_string(positions) +
         " positions (prompt + max_tokens, within the context): " + std::to_string(blocks) +
         " blocks of " + std::to_string(kKvBlockPositions) + " positions, " +
         std::to_string(blocks * blockBytes) +
         " bytes, more than the server's KV memory limit "
         "(--kv-memory " +
         std::to_string(budgetBytes) + " bytes)";
}

Expected<KvCacheSlots> KvCacheSlots::reserve(int64_t slots, int64_t slotBytes) {
  uint64_t bytes = 0;
  if (slots < 1 || slotBytes < 1 || !checkedMul(uint64_t(slots), uint64_t(slotBytes), bytes))
    return makeError("KV caches: " + std::to_string(slots) + " slots of " +
                     std::to_string(slotBytes) + " bytes are too large");
  // MAP_NORESERVE: address space only; memory comes as positions are written.
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return makeError("KV caches: cannot reserve " + std::to_string(bytes) +
                     " bytes of address "
                     "space for " +
                     std::to_string(slots) + " slots");
  (void)::madvise(p, bytes, MADV_NOHUGEPAGE); // a hint; the accounting does not depend on it
  KvCacheSlots s;
  s.base_ = p;
  s.mapped_ = bytes;
  s.slots_ = slots;
  s.slotBytes_ = slotBytes;
  return s;
}

Expected<KvCacheSlots> KvCacheSlots::onDevice(int64_t slots, int64_t slotBytes) {
  uint64_t bytes = 0;
  if (slots < 1 || slotBytes < 1 || !checkedMul(uint64_t(slots), uint64_t(slotBytes), bytes))
    return makeError("KV caches: " + std::to_string(slots) + " slots of " +
                     std::to_string(slotBytes) + " bytes are too large");
  Expected<DeviceMemory> memory = DeviceMemory::allocate(bytes);
  if (!memory)
    return makeError("KV caches: " + std::to_string(slots) + " slots of " +
                     std::to_string(slotBytes) + " bytes on the GPU: " + memory.message());
  KvCacheSlots s;
  s.device_ = memory.take();
  s.slots_ = slots;
  s.slotBytes_ = slotBytes;
  return s;
}

KvCacheSlots &KvCacheSlots::operator=(KvCacheSlots &&other) noexcept {
  if (this != &other) {
    if (base_)
      ::munmap(base_, mapped_);
    base_ = other.base_, mapped_ = other.mapped_;
    slots_ = other.slots_, slotBytes_ = other.slotBytes_;
    device_ = static_cast<DeviceMemory &&>(other.device_);
    other.base_ = nullptr, other.mapped_ = 0, other.slots_ = 0, other.slotBytes_ = 0;
  }
  return *this;
}

KvCacheSlots::~KvCacheSlots() {
  if (base_)
    ::munmap(base_, mapped_);
}

void KvCacheSlots::release(int64_t slot) {
  if (!base_ || slot < 0 || slot >= slots_)
    return;
  uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  uint64_t begin = uint64_t(slot) * uint64_t(slotBytes_), end = begin + uint64_t(slotBytes_);
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (begin < end)
    (void)::madvise(static_cast<char *>(base_) + begin, end - begin, MADV_DONTNEED);
}

} // namespace xfrt
