//===- KvCacheSlots.h - KV caches whose memory follows their tokens -*- C++ -*-===//
//
// The KV caches of a BatchDecoder's places: `slots` caches of `slotBytes` each, one range of
// address space (xf_forward_cached_packed's `caches`: slot k at data() + k·slotBytes), mapped
// without memory behind it. A cache's memory is faulted in page by page as its sequence
// writes positions, and given back to the system when the sequence ends (release): a slot is
// laid out [attention's K or V][head][position][column] (CachePlan.cpp, xf_cache_bytes), so
// writing positions 0..p touches the first p rows of each (tensor, head) region and nothing
// past them. Huge pages are refused for the range, so that one position costs a 4 KiB page per
// region rather than 2 MiB: with 64 columns a head, a page holds 32 positions of f16 (16 of
// f32) — the paging of a block-table KV cache, done by the MMU on the ABI's contiguous slots.
//
// The runtime counts memory in blocks of kKvBlockPositions positions of one sequence (all its
// layers' K and V): what is in use (positions written), and what admission reserves.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_KVCACHESLOTS_H
#define XFRT_KVCACHESLOTS_H

#include "xfrt/Device.h"
#include "xfrt/Status.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace xfrt {

// Positions in one KV block (the unit of /metrics' blocks and of --kv-memory's accounting).
constexpr int64_t kKvBlockPositions = 16;

// Blocks that `positions` positions of one sequence occupy.
inline int64_t kvBlocks(int64_t positions) {
  return (positions + kKvBlockPositions - 1) / kKvBlockPositions;
}

// The positions a sequence of `promptTokens` that may generate `maxNewTokens` can write into
// its cache, within `limit` positions: what its admission reserves.
inline int64_t kvReservedPositions(int64_t promptTokens, int64_t maxNewTokens, int64_t limit) {
  return std::min(limit, promptTokens + std::max<int64_t>(maxNewTokens, 0));
}

// Why a sequence that reserves `positions` can never run within a KV budget of `budgetBytes`
// (blocks of `blockBytes`), or nullopt when it can; the message names --kv-memory.
std::optional<std::string> kvBudgetRefusal(int64_t positions, int64_t blockBytes,
                                           int64_t budgetBytes);

class KvCacheSlots {
public:
  KvCacheSlots() = default;
  // Reserves address space for `slots` caches of `slotBytes` (a multiple of 64).
  static Expected<KvCacheSlots> reserve(int64_t slots, int64_t slotBytes);
  // The caches of a CUDA build (docs/gpu.md, "Batches on the GPU"): one device allocation of
  // `slots` caches of `slotBytes`, allocated whole (GPU memory has no pages to fault in);
  // data() is its device address. release() keeps it: a sequence reads only positions it
  // wrote itself, so a slot's old rows are never read.
  static Expected<KvCacheSlots> onDevice(int64_t slots, int64_t slotBytes);
  KvCacheSlots(KvCacheSlots &&other) noexcept { *this = static_cast<KvCacheSlots &&>(other); }
  KvCacheSlots &operator=(KvCacheSlots &&other) noexcept;
  KvCacheSlots(const KvCacheSlots &) = delete;
  KvCacheSlots &operator=(const KvCacheSlots &) = delete;
  ~KvCacheSlots();

  void *data() const { return device_.address() ? device_.address() : base_; }
  int64_t slots() const { return slots_; }
  int64_t slotBytes() const { return slotBytes_; }
  // Gives slot k's memory back to the system (its pages read as zeros afterwards). The pages a
  // slot shares with its neighbours at its two ends are kept.
  void release(int64_t slot);

private:
  void *base_ = nullptr;
  uint64_t mapped_ = 0;
  int64_t slots_ = 0, slotBytes_ = 0;
  DeviceMemory device_;
};

} // namespace xfrt

#endif // XFRT_KVCACHESLOTS_H
