//===- Session.h - A loaded model ready to run -------------------*- C++
//-*-===//
//
// A Session binds a WeightSet to the generated code: it allocates the derived
// buffers, calls xf_prepare once, copies the parameters the forward reads whole
// (manifest "forward_reads": "all") out of mapped checkpoints next to them, and
// then runs xf_forward / xf_forward_cached (docs/abi.md) with scratch and a KV
// cache it grows or allocates on demand (64-byte aligned). Lengths and ids are the caller's to validate (Cli.h); the
// session checks only what the ABI needs (cache capacity).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SESSION_H
#define XFRT_SESSION_H

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Driver.h"
#include "xfrt/KvCacheSlots.h"
#include "xfrt/Manifest.h"
#include "xfrt/Status.h"
#include "xfrt/Weights.h"
#include "xfrt/WeightRegion.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace xfrt {

class Session {
public:
  // `weights` must outlive the session.
  static Expected<Session> create(const Manifest &manifest, const ModelAbi &abi,
                                  const WeightSet &weights);

  const Manifest &manifest() const { return *manifest_; }

  // Frees the parameters that only xf_prepare reads (manifest "forward_reads": "none") where
  // `weights` owns their memory (dequantized or converted at load, random): once create() has
  // run, the forward uses the derived copies. A checkpoint saved with --save-weights is
  // written before. Their pointers become null, here and in `weights`, so a stray read
  // faults instead of reading freed memory. Returns the bytes freed.
  uint64_t releaseUnreadParameters(WeightSet &weights);

  // out: [l, d_out] for `tokens` (and `source` [l_z] for encoder-decoders, else
  // empty).
  Status forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &source,
                 float *out);

  // Whether xf_forward_cached can be used: the manifest says "cached" and both
  // symbols exist.
  bool canCache() const;
  // The largest KV cache the model supports, in positions (0 without a cache).
  int64_t cachePositions() const { return canCache() ? manifest_->cachePositions : 0; }
  // Sizes the KV cache for at least `positions` (≤ cachePositions()) before a sequence's first
  // cached call, so resident memory follows what a run needs; without it the cache holds
  // cachePositions(). A cache that is already large enough is kept (its layout depends on its
  // capacity, which every later call passes on).
  void reserveCache(int64_t positions) {
    if (hasCache() && positions <= cacheCapacity_)
      return;
    cache_ = KvCacheSlots();
    dropDeviceCache();
    cacheCapacity_ = positions;
  }
  // Positions the allocated KV cache holds; 0 before the first cached call (or after
  // reserveCache dropped it).
  int64_t cacheCapacity() const { return hasCache() ? cacheCapacity_ : 0; }
  // l = count new tokens at positions start .. start + l - 1; out: [1, d_out], the row of the
  // newest token (position start + l - 1).
  // The first call (start = 0) allocates the cache; start + l must not exceed
  // cachePositions().
  Status forwardCached(const int32_t *tokens, int64_t l, int64_t start, float *out);

  // Packed batches (docs/abi.md): whether xf_forward_packed can run the sequences of a batch in
  // one call (the manifest says "packed" and the symbol exists).
  bool canPack() const;
  // tokens: the n = lengths.size() sequences' ids one after another; out: [Σ lengths, d_out].
  // Each length is 1 .. max_positions (the caller checks). An encoder-decoder's sources:
  // `source` their ids one after another, `sourceLengths` (n of them) their lengths; else
  // null and empty.
  Status forwardPacked(const int32_t *tokens, const std::vector<int64_t> &lengths, float *out,
                       const int32_t *source = nullptr,
                       const std::vector<int64_t> &sourceLengths = {});
  // Whether xf_forward_cached_packed can run: packed and cached.
  bool canPackCached() const;
  // Sequence i runs lengths[i] new tokens at positions starts[i] .. on cache slot slots[i] of
  // `caches` (slot k at caches + k·cacheBytes(capacity), 64-byte aligned, capacity = the same
  // `cachePositions` on every call); out: [n, d_out], each sequence's newest row.
  Status forwardCachedPacked(const int32_t *tokens, const std::vector<int64_t> &lengths,
                             const std::vector<int64_t> &starts, void *caches,
                             const std::vector<int64_t> &slots, int64_t cachePositions,
                             float *out);
  // Bytes of one KV cache of `positions` positions (xf_cache_bytes).
  Expected<int64_t> cacheBytes(int64_t positions) const;
  // The `caches` of forwardCachedPacked: `slots` caches of `slotBytes` where this session's
  // kernels read them (host address space, or one GPU allocation for a CUDA build).
  Expected<KvCacheSlots> reserveCacheSlots(int64_t slots, int64_t slotBytes) const;

  Session();
  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  ~Session();

private:
  Status growScratch(int64_t l, int64_t lz);
  // A model built with --target cuda (manifest "device": "cuda", docs/gpu.md): weights,
  // scratch, KV cache, token ids and the output live in GPU memory; each call uploads its
  // ids, runs, and downloads its output rows (the one synchronisation of the step).
  struct DeviceState;
  std::unique_ptr<DeviceState> device_;
  bool hasCache() const;
  void dropDeviceCache();
  void *scratchAddress();
  void *cacheAddress();
  // Before a call: scratch for `rows` rows (and `sourceRows` source rows), the ids on the GPU
  // (as given on the CPU; a null `source` stays null) and the buffer the call writes its
  // `outRows` output rows to (`out` on the CPU). On the GPU `idWords` int32 words of `tokens`
  // go up (default: `rows`; a packed step's ids and its step table).
  struct CallBuffers {
    const int32_t *ids, *sourceIds;
    float *out;
  };
  Expected<CallBuffers> prepareCall(const int32_t *tokens, int64_t rows, const int32_t *source,
                                    int64_t sourceRows, float *out, int64_t outRows,
                                    int64_t idWords = -1);
  Expected<const int32_t *> deviceIds(const int32_t *ids, int64_t count, bool source);
  Expected<float *> outputBuffer(float *out, int64_t rows);
  // After a call: a failed kernel's error, else the output rows to `out`.
  Status finishCall(const char *entry, int32_t rc, float *out, int64_t rows);

  const Manifest *manifest_ = nullptr;
  ModelAbi abi_{};
  std::vector<void *> params_, derivedPtrs_;
  WeightRegion derived_; // the derived buffers xf_prepare fills, then the copied parameters
  AlignedBuffer scratch_;
  // The host KV cache: one slot of address space whose memory comes as positions are written
  // (KvCacheSlots.h), so a cache sized for the model's positions costs what the run writes.
  KvCacheSlots cache_;
  int64_t cacheCapacity_ = 0; // positions the cache is (or will be) allocated for
};

} // namespace xfrt

#endif // XFRT_SESSION_H
