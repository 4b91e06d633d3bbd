//===- CompiledModel.h - a build of the model loaded into xfc --*- C++ -*-===//
//
// `xfc --check` links the model's objects (host code with the kernel-output
// hook, Halide kernels, Halide runtime, libxfrt) into a shared object and
// calls its C ABI (docs/abi.md) directly: random weights, xf_prepare, then
// xf_forward / xf_forward_cached / xf_forward_packed / xf_forward_cached_packed
// on token sequences the checker chooses.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CHECK_COMPILEDMODEL_H
#define XF_CHECK_COMPILEDMODEL_H

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Manifest.h"
#include "xfrt/Weights.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mlir::xf::check {

/// Receives every kernel's output while set (xf_check_kernel_output): `out`
/// holds `rows` rows `stride` floats apart, and may be overwritten.
class KernelOutputSink {
public:
  virtual ~KernelOutputSink() = default;
  virtual void kernelOutput(int32_t site, float *out, int64_t rows, int64_t stride) = 0;
};

class CompiledModel {
public:
  /// dlopens `path` (which may be removed afterwards), reads its manifest,
  /// draws its weights from `seed` (those of `--random-weights`, scaled so that
  /// activations are O(1)) and runs xf_prepare.
  static llvm::Expected<std::unique_ptr<CompiledModel>> load(const std::string &path,
                                                             uint64_t seed);
  ~CompiledModel();

  const xfrt::Manifest &manifest() const { return manifest_; }
  const xfrt::WeightSet &weights() const { return weights_; }

  /// xf_forward: [ℓ, d_out]. `source` is empty unless encoder-decoder.
  llvm::Expected<std::vector<float>> forward(const std::vector<int32_t> &tokens,
                                             const std::vector<int32_t> &source);
  /// A fresh KV cache for xf_forward_cached (manifest().cached).
  llvm::Error startCache();
  /// xf_forward_cached on `tokens` at positions start ..: the newest row, [1, d_out].
  llvm::Expected<std::vector<float>> forwardCached(const std::vector<int32_t> &tokens,
                                                   int64_t start);

  /// xf_forward_packed (manifest().packed) on several sequences at once: their
  /// rows one after another, [Σℓ, d_out]. `sources`: an encoder-decoder's, one
  /// per sequence, else empty.
  llvm::Expected<std::vector<float>>
  forwardPacked(const std::vector<std::vector<int32_t>> &sequences,
                const std::vector<std::vector<int32_t>> &sources = {});

  /// Fresh KV caches for xf_forward_cached_packed, one slot per sequence.
  llvm::Error startCaches(int64_t count);
  /// One sequence of an xf_forward_cached_packed call: `tokens` at positions
  /// start .. on cache `cache` (of startCaches).
  struct CachedSequence {
    int64_t cache = 0, start = 0;
    std::vector<int32_t> tokens;
  };
  /// xf_forward_cached_packed (manifest().packed && cached): each sequence's
  /// newest row, [n, d_out].
  llvm::Expected<std::vector<float>> forwardCachedPacked(const std::vector<CachedSequence> &batch);

  /// Every kernel's output goes to `sink` until it is reset to null.
  static void setSink(KernelOutputSink *sink);

private:
  CompiledModel() = default;
  void *handle_ = nullptr;
  xfrt::Manifest manifest_;
  xfrt::WeightSet weights_;
  std::vector<xfrt::AlignedBuffer> derived_;
  std::vector<void *> derivedPointers_;
  xfrt::AlignedBuffer cache_;
  xfrt::AlignedBuffer caches_; // startCaches: cacheSlots_ slots of xf_cache_bytes each
  int64_t cacheSlots_ = 0;
  using Forward = int32_t (*)(void *const *, void *const *, const int32_t *, int64_t,
                              const int32_t *, int64_t, float *, void *);
  using ForwardCached = int32_t (*)(void *const *, void *const *, const int32_t *, int64_t,
                                    int64_t, float *, void *, void *, int64_t);
  using ForwardPacked = int32_t (*)(void *const *, void *const *, const int32_t *, const int64_t *,
                                    const int32_t *, const int64_t *, int64_t, float *, void *);
  using ForwardCachedPacked = int32_t (*)(void *const *, void *const *, const int32_t *,
                                          const int64_t *, const int64_t *, int64_t, float *,
                                          void *, void *, const int64_t *, int64_t);
  Forward forward_ = nullptr;
  ForwardCachedPacked forwardCachedPacked_ = nullptr;
  ForwardPacked forwardPacked_ = nullptr;
  ForwardCached forwardCached_ = nullptr;
  int64_t (*scratchBytes_)(int64_t, int64_t) = nullptr;
  int64_t (*cacheBytes_)(int64_t) = nullptr;
};

} // namespace mlir::xf::check

#endif // XF_CHECK_COMPILEDMODEL_H
