//===- Session.cpp - A loaded model ready to run --------------------------===//
#include "xfrt/Session.h"

#include "xfrt/CudaDriver.h"
#include "xfrt/CudaGraphs.h"
#include "xfrt/Device.h"
#include "xfrt/HalideErrors.h"
#include "xfrt/PackedBatch.h"
#include "xfrt/Profile.h"

#include <algorithm>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string>

namespace xfrt {
namespace {
// A generated entry point returned `rc`: a Halide kernel's error code (its reason recorded
// by the error handler), or an ABI check of the generated code.
Status kernelFailure(const char *entry, int32_t rc) {
  std::string reason = takeHalideError();
  if (!reason.empty())
    return makeError(std::string(entry) + " failed: Halide: " + reason);
  return makeError(std::string(entry) + " failed with code " + std::to_string(rc));
}
// Bytes of a parameter as the generated code reads it (docs/abi.md, xf_prepare).
uint64_t parameterBytes(const ParameterSpec &p) {
  if (p.blocks) {
    const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(p.blockType));
    return info ? uint64_t(p.numel) / info->blockElements * info->blockBytes : 0;
  }
  return uint64_t(p.numel) * (p.bf16 ? 2 : 4);
}

bool prepareOnly(const Manifest &m, size_t derived) {
  return derived < m.derivedPrepareOnly.size() && m.derivedPrepareOnly[derived];
}

// Whether [p, p + bytes) lies inside the mapping of `file`.
bool mappedRange(const MappedFile &file, const void *p, uint64_t bytes) {
  const uint8_t *begin = file.data(), *at = static_cast<const uint8_t *>(p);
  return begin && at >= begin && bytes <= file.size() && uint64_t(at - begin) <= file.size() - bytes;
}
} // namespace

struct Session::DeviceState {
  std::vector<DeviceMemory> params, derived;
  DeviceMemory scratch, cache, tokens, source, out;
};

Session::Session() = default;
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;
Session::~Session() = default;

bool Session::hasCache() const { return device_ ? device_->cache.address() : cache_.data(); }
void Session::dropDeviceCache() {
  if (device_)
    device_->cache = DeviceMemory();
}
void *Session::scratchAddress() { return device_ ? device_->scratch.address() : scratch_.data(); }
void *Session::cacheAddress() { return device_ ? device_->cache.address() : cache_.data(); }

Expected<const int32_t *> Session::deviceIds(const int32_t *ids, int64_t count, bool source) {
  if (!device_ || !ids)
    return ids;
  DeviceMemory &buffer = source ? device_->source : device_->tokens;
  uint64_t bytes = uint64_t(count) * sizeof(int32_t);
  if (buffer.size() < bytes) {
    Expected<DeviceMemory> grown = DeviceMemory::allocate(bytes);
    if (!grown)
      return makeError("token ids: " + grown.message());
    buffer = grown.take();
  }
  if (Status s = buffer.upload(ids, bytes); !s)
    return makeError("token ids: " + s.message());
  return static_cast<const int32_t *>(buffer.address());
}

Expected<float *> Session::outputBuffer(float *out, int64_t rows) {
  if (!device_)
    return out;
  uint64_t bytes = uint64_t(rows) * uint64_t(manifest_->dOut) * sizeof(float);
  if (device_->out.size() < bytes) {
    Expected<DeviceMemory> grown = DeviceMemory::allocate(bytes);
    if (!grown)
      return makeError("output: " + grown.message());
    device_->out = grown.take();
  }
  return static_cast<float *>(device_->out.address());
}

Expected<Session::CallBuffers> Session::prepareCall(const int32_t *tokens, int64_t rows,
                                                    const int32_t *source, int64_t sourceRows,
                                                    float *out, int64_t outRows, int64_t idWords) {
  if (Status s = growScratch(rows, sourceRows); !s)
    return s;
  Expected<const int32_t *> ids = deviceIds(tokens, idWords < 0 ? rows : idWords, false);
  if (!ids)
    return makeError(ids.message());
  Expected<const int32_t *> sourceIds = deviceIds(source, sourceRows, true);
  if (!sourceIds)
    return makeError(sourceIds.message());
  Expected<float *> target = outputBuffer(out, outRows);
  if (!target)
    return makeError(target.message());
  return CallBuffers{*ids, *sourceIds, *target};
}

Status Session::finishCall(const char *entry, int32_t rc, float *out, int64_t rows) {
  if (rc != 0)
    return kernelFailure(entry, rc);
  if (!device_)
    return Status::success();
  noteDeviceCall(entry); // its kernel launches, for --profile
  // Loop kernels on the GPU report failures only through Halide's error handler.
  if (std::string reason = takeHalideError(); !reason.empty())
    return makeError(std::string(entry) + " failed: Halide: " + reason);
  return device_->out.download(out, uint64_t(rows) * uint64_t(manifest_->dOut) * sizeof(float));
}

Expected<Session> Session::create(const Manifest &m, const ModelAbi &abi,
                                  const WeightSet &weights) {
  Session s;
  s.manifest_ = &m;
  s.abi_ = abi;
  if (m.cuda) {
    if (Status ok = checkCudaDevice(); !ok)
      return ok;
    s.device_ = std::make_unique<DeviceState>();
    setProfileOnDevice(true);
    // Weights uploaded once; xf_prepare then fills the derived buffers on the GPU.
    for (size_t j = 0; j < m.parameters.size(); ++j) {
      const ParameterSpec &p = m.parameters[j];
      if (p.blocks)
        return makeError("parameter '" + p.name + "': block weights do not run on the GPU");
      uint64_t bytes = uint64_t(p.numel) * (p.bf16 ? 2 : 4);
      Expected<DeviceMemory> d = DeviceMemory::allocate(bytes);
      if (!d)
        return makeError("parameter '" + p.name + "': " + d.message());
      if (Status up = d->upload(weights.params[j], bytes); !up)
        return makeError("parameter '" + p.name + "': " + up.message());
      s.params_.push_back(d->address());
      s.device_->params.push_back(d.take());
    }
    for (size_t j = 0; j < m.derivedBytes.size(); ++j) {
      Expected<DeviceMemory> d = DeviceMemory::allocate(uint64_t(m.derivedBytes[j]));
      if (!d)
        return makeError("derived buffer " + std::to_string(j) + ": " + d.message());
      s.derivedPtrs_.push_back(d->address());
      s.device_->derived.push_back(d.take());
    }
    s.params_.push_back(nullptr);
    s.derivedPtrs_.push_back(nullptr);
    abi.prepare(s.params_.data(), s.derivedPtrs_.data());
    if (std::string reason = takeHalideError(); !reason.empty())
      return makeError("xf_prepare failed: Halide: " + reason);
    for (size_t j = 0; j < m.derivedBytes.size(); ++j)
      if (prepareOnly(m, j))
        s.device_->derived[j] = DeviceMemory(), s.derivedPtrs_[j] = nullptr;
    return s;
  }
  // One mapping in huge pages (WeightRegion.h: every decode step reads them) for the derived
  // buffers and for copies of the parameters the forward reads whole on every call that lie in
  // a mapped checkpoint (a GEMM weight read in place, such as ggml blocks): their file pages
  // would be 4 KiB pages, and reading them would also map their neighbours, parameters only
  // xf_prepare reads, by fault-around.
  // Derived buffers only xf_prepare reads (concatenations a packed copy is made from) live in
  // a mapping of their own, unmapped once xf_prepare is done, unless the loader has filled
  // them already (WeightSet::filledDerived: freed with the parameters).
  auto filled = [&](size_t j) -> float * {
    return j < weights.filledDerived.size() ? weights.filledDerived[j] : nullptr;
  };
  std::vector<int64_t> pieces, prepareOnlyPieces;
  std::vector<size_t> pieceOf(m.derivedBytes.size());
  for (size_t j = 0; j < m.derivedBytes.size(); ++j) {
    if (filled(j))
      continue;
    std::vector<int64_t> &into = prepareOnly(m, j) ? prepareOnlyPieces : pieces;
    pieceOf[j] = into.size();
    into.push_back(m.derivedBytes[j]);
  }
  const size_t firstCopy = pieces.size();
  std::vector<std::pair<size_t, const MappedFile *>> copies; // parameter, the file it is in
  for (size_t j = 0; j < m.parameters.size() && j < weights.params.size(); ++j) {
    if (m.parameters[j].forwardReads != ForwardReads::All)
      continue;
    uint64_t bytes = parameterBytes(m.parameters[j]);
    for (const auto &file : weights.files)
      if (bytes && mappedRange(*file, weights.params[j], bytes)) {
        copies.emplace_back(j, file.get());
        pieces.push_back(int64_t(bytes));
        break;
      }
  }
  Expected<WeightRegion> region = WeightRegion::allocate(pieces);
  if (!region)
    return makeError("derived buffers: " + region.message());
  s.derived_ = region.take();
  WeightRegion prepareOnlyRegion;
  if (!prepareOnlyPieces.empty()) {
    Expected<WeightRegion> r = WeightRegion::allocate(prepareOnlyPieces);
    if (!r)
      return makeError("derived buffers: " + r.message());
    prepareOnlyRegion = r.take();
  }
  for (size_t j = 0; j < m.derivedBytes.size(); ++j)
    s.derivedPtrs_.push_back(filled(j)           ? filled(j)
                             : prepareOnly(m, j) ? prepareOnlyRegion.pieces()[pieceOf[j]]
                                                 : s.derived_.pieces()[pieceOf[j]]);
  s.params_.assign(weights.params.begin(), weights.params.end());
  // Never hand the generated code a null array, even for a model without
  // parameters.
  s.params_.push_back(nullptr);
  s.derivedPtrs_.push_back(nullptr);
  if (int32_t rc = abi.prepare(s.params_.data(), s.derivedPtrs_.data()); rc != 0)
    return kernelFailure("xf_prepare", rc);
  prepareOnlyRegion = WeightRegion();
  for (size_t j = 0; j < m.derivedBytes.size(); ++j)
    if (prepareOnly(m, j))
      s.derivedPtrs_[j] = nullptr; // a stray read faults
  // Weights point into mapped checkpoint files, and xf_prepare has just copied many of them
  // (GEMM weights packed for the kernels, concatenations): let those pages go, so that the
  // copies do not count twice (pages still read fault back in from the page cache). Nothing
  // writes to the mappings, so dropping their pages loses nothing.
  if (!m.derivedBytes.empty() || !copies.empty())
    for (const auto &file : weights.files)
      releaseMappedPages(*file);
  // Then the copies, a stretch at a time, each stretch's file pages dropped once copied: the
  // peak holds one stretch twice, not the parameters. Reading a stretch also maps the
  // neighbours' pages by fault-around: dropped at the end.
  constexpr uint64_t kStretch = uint64_t(2) << 20;
  for (size_t k = 0; k < copies.size(); ++k) {
    auto [j, file] = copies[k];
    const uint8_t *from = reinterpret_cast<const uint8_t *>(weights.params[j]);
    uint8_t *to = static_cast<uint8_t *>(s.derived_.pieces()[firstCopy + k]);
    uint64_t bytes = parameterBytes(m.parameters[j]);
    for (uint64_t done = 0; done < bytes; done += kStretch) {
      uint64_t n = std::min(kStretch, bytes - done);
      std::memcpy(to + done, from + done, size_t(n));
      releaseMappedPages(*file, from + done, size_t(n));
    }
    s.params_[j] = to;
  }
  if (!copies.empty())
    for (const auto &file : weights.files)
      releaseMappedPages(*file);
  return s;
}

uint64_t Session::releaseUnreadParameters(WeightSet &weights) {
  const size_t n = std::min(manifest_->parameters.size(), weights.params.size());
  uint64_t freed = 0;
  // Each buffer the WeightSet owns holds one parameter, or a concatenation's parts
  // (filledDerived): freed once the forward reads none of them.
  for (AlignedBuffer &buffer : weights.buffers) {
    const auto *begin = static_cast<const uint8_t *>(buffer.data());
    std::vector<size_t> inside;
    bool unread = true;
    for (size_t j = 0; j < n; ++j) {
      const auto *p = reinterpret_cast<const uint8_t *>(weights.params[j]);
      if (begin && p >= begin && p < begin + buffer.size()) {
        inside.push_back(j);
        unread &= manifest_->parameters[j].forwardReads == ForwardReads::None;
      }
    }
    if (inside.empty() || !unread) // freed already, or the forward reads it
      continue;
    for (float *&d : weights.filledDerived)
      if (d == buffer.data())
        d = nullptr;
    freed += buffer.size();
    buffer = AlignedBuffer();
    for (size_t j : inside) {
      weights.params[j] = nullptr;
      if (!device_)
        params_[j] = nullptr;
    }
  }
#if defined(__GLIBC__)
  // Buffers below glibc's mmap threshold (32 MiB once raised) go back to the heap, not the
  // system: hand the freed pages back.
  if (freed)
    malloc_trim(0);
#endif
  return freed;
}

Status Session::growScratch(int64_t l, int64_t lz) {
  int64_t bytes = abi_.scratchBytes(l, lz);
  if (bytes < 0)
    return makeError("xf_scratch_bytes(" + std::to_string(l) + ", " + std::to_string(lz) +
                     ") returned " + std::to_string(bytes));
  if (device_) {
    if (device_->scratch.address() && device_->scratch.size() >= uint64_t(bytes))
      return Status::success();
    device_->scratch = DeviceMemory();
    Expected<DeviceMemory> d = DeviceMemory::allocate(uint64_t(bytes));
    if (!d)
      return makeError("scratch: " + d.message());
    device_->scratch = d.take();
    return Status::success();
  }
  if (scratch_.data() && scratch_.size() >= uint64_t(bytes))
    return Status::success();
  Expected<AlignedBuffer> b = AlignedBuffer::allocate(uint64_t(bytes));
  if (!b)
    return makeError("scratch: " + b.message());
  scratch_ = b.take();
  return Status::success();
}

Status Session::forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &source,
                        float *out) {
  int64_t l = int64_t(tokens.size()), lz = int64_t(source.size());
  Expected<CallBuffers> buffers =
      prepareCall(tokens.data(), l, lz ? source.data() : nullptr, lz, out, l);
  if (!buffers)
    return buffers.status();
  auto call = [&] {
    return abi_.forward(params_.data(), derivedPtrs_.data(), buffers->ids, l, buffers->sourceIds,
                        lz, buffers->out, scratchAddress());
  };
  // On the GPU a forward of a length seen before may be one CUDA graph launch (CudaGraphs.h).
  int32_t rc = device_ ? runDeviceStep("xf_forward", l, call, 1, lz) : call();
  return finishCall("xf_forward", rc, out, l);
}

bool Session::canCache() const {
  return manifest_->cached && manifest_->cachePositions > 0 && abi_.cacheBytes &&
         abi_.forwardCached;
}

Status Session::forwardCached(const int32_t *tokens, int64_t l, int64_t start, float *out) {
  if (!canCache())
    return makeError("model '" + manifest_->model + "' has no cached entry point");
  if (!hasCache() &&
      (cacheCapacity_ <= 0 || cacheCapacity_ > manifest_->cachePositions))
    cacheCapacity_ = manifest_->cachePositions;
  if (l < 1 || start < 0 || start + l > cacheCapacity_)
    return makeError("positions " + std::to_string(start) + ".." + std::to_string(start + l - 1) +
                     " exceed the KV cache's " + std::to_string(cacheCapacity_));
  if (!hasCache()) {
    int64_t bytes = abi_.cacheBytes(cacheCapacity_);
    if (bytes < 0)
      return makeError("xf_cache_bytes(" + std::to_string(cacheCapacity_) + ") returned " +
                       std::to_string(bytes));
    if (device_) {
      Expected<DeviceMemory> d = DeviceMemory::allocate(uint64_t(bytes));
      if (!d)
        return makeError("KV cache: " + d.message());
      device_->cache = d.take();
    }
  }
  if (!hasCache()) {
    int64_t bytes = abi_.cacheBytes(cacheCapacity_);
    Expected<KvCacheSlots> b = KvCacheSlots::reserve(1, bytes);
    if (!b)
      return makeError("KV cache: " + b.message());
    cache_ = b.take();
  }
  Expected<CallBuffers> buffers = prepareCall(tokens, l, nullptr, 0, out, 1);
  if (!buffers)
    return buffers.status();
  auto call = [&] {
    return abi_.forwardCached(params_.data(), derivedPtrs_.data(), buffers->ids, l, start,
                              buffers->out, scratchAddress(), cacheAddress(), cacheCapacity_);
  };
  // On the GPU a step may be replayed as one CUDA graph launch (CudaGraphs.h).
  int32_t rc = device_ ? runDeviceStep("xf_forward_cached", l, call) : call();
  return finishCall("xf_forward_cached", rc, out, 1);
}

// On the GPU too (docs/gpu.md, "Batches on the GPU"): the generated code reads the lengths,
// starts and slots on the host, to loop over the sequences and to compute each slot's device
// address; every kernel it launches reads device memory only.
bool Session::canPack() const { return manifest_->packed && abi_.forwardPacked; }

bool Session::canPackCached() const { return canPack() && canCache() && abi_.forwardCachedPacked; }

Status Session::forwardPacked(const int32_t *tokens, const std::vector<int64_t> &lengths,
                              float *out, const int32_t *source,
                              const std::vector<int64_t> &sourceLengths) {
  if (!canPack())
    return makeError("model '" + manifest_->model + "' has no packed entry point");
  if (manifest_->encoderDecoder != (source != nullptr) ||
      (source && sourceLengths.size() != lengths.size()))
    return makeError(manifest_->encoderDecoder
                         ? "a packed batch of encoder-decoder '" + manifest_->model +
                               "' needs one source per sequence"
                         : "model '" + manifest_->model + "' takes no source");
  int64_t total = 0, sourceTotal = 0;
  for (int64_t l : lengths)
    total += l;
  for (int64_t l : sourceLengths)
    sourceTotal += l;
  Expected<CallBuffers> buffers = prepareCall(tokens, total, source, sourceTotal, out, total);
  if (!buffers)
    return buffers.status();
  int32_t rc = abi_.forwardPacked(params_.data(), derivedPtrs_.data(), buffers->ids,
                                  lengths.data(), buffers->sourceIds,
                                  source ? sourceLengths.data() : nullptr, int64_t(lengths.size()),
                                  buffers->out, scratchAddress());
  return finishCall("xf_forward_packed", rc, out, total);
}

Expected<int64_t> Session::cacheBytes(int64_t positions) const {
  if (!canCache())
    return makeError("model '" + manifest_->model + "' has no cached entry point");
  int64_t bytes = abi_.cacheBytes(positions);
  if (bytes <= 0)
    return makeError("xf_cache_bytes(" + std::to_string(positions) + ") returned " +
                     std::to_string(bytes));
  return bytes;
}

Status Session::forwardCachedPacked(const int32_t *tokens, const std::vector<int64_t> &lengths,
                                    const std::vector<int64_t> &starts, void *caches,
                                    const std::vector<int64_t> &slots, int64_t cachePositions,
                                    float *out) {
  if (!canPackCached())
    return makeError("model '" + manifest_->model + "' has no packed cached entry point");
  int64_t total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (slots.size() != lengths.size() || slots[i] < 0)
      return makeError("a packed sequence without a cache slot");
    if (lengths[i] < 1 || starts[i] < 0 || starts[i] + lengths[i] > cachePositions)
      return makeError("positions " + std::to_string(starts[i]) + ".." +
                       std::to_string(starts[i] + lengths[i] - 1) + " exceed the KV cache's " +
                       std::to_string(cachePositions));
    total += lengths[i];
  }
  const int64_t n = int64_t(lengths.size());
  // On the GPU the kernels read each row's position and slot from device memory: the step
  // table goes up with the ids, in one copy before the step (never inside a CUDA graph).
  std::vector<int32_t> withTable;
  if (device_)
    withTable = packedStepWords(tokens, lengths, starts, slots);
  Expected<CallBuffers> buffers =
      device_ ? prepareCall(withTable.data(), total, nullptr, 0, out, n, int64_t(withTable.size()))
              : prepareCall(tokens, total, nullptr, 0, out, n);
  if (!buffers)
    return buffers.status();
  auto call = [&] {
    return abi_.forwardCachedPacked(params_.data(), derivedPtrs_.data(), buffers->ids,
                                    lengths.data(), starts.data(), n, buffers->out,
                                    scratchAddress(), caches, slots.data(), cachePositions);
  };
  // On the GPU a decode step of n sequences (one token each) may be replayed as one CUDA graph
  // launch, a graph per n: such a step always launches the same kernels. Steps with prompt rows
  // launch kernel by kernel: their mixes of prefill and decode rows rarely repeat, and each new
  // mix would be captured again.
  int32_t rc = device_ && total == n ? runDeviceStep("xf_forward_cached_packed", total, call, n)
                                     : call();
  return finishCall("xf_forward_cached_packed", rc, out, n);
}

Expected<KvCacheSlots> Session::reserveCacheSlots(int64_t slots, int64_t slotBytes) const {
  return device_ ? KvCacheSlots::onDevice(slots, slotBytes)
                 : KvCacheSlots::reserve(slots, slotBytes);
}

} // namespace xfrt
