//===- CompiledModel.cpp - dlopen a build and call its C ABI ---------------===//

#include "CompiledModel.h"

#include "xfrt/Random.h"

#include "llvm/ADT/bit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>

using namespace mlir::xf::check;

namespace {
KernelOutputSink *activeSink = nullptr;

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

/// Random ggml blocks for a [rows, cols] parameter kept in `type`: uniform quants and a scale d
/// a power of two (exact in float16) near sigma / (the quants' standard deviation), so the
/// dequantized weights have about the scale of the float32 ones; Q4_1's minimum is −8·d, which
/// centres them. The interpreter reads them dequantized (exactly, as the kernels do).
static llvm::Expected<xfrt::AlignedBuffer> randomBlocks(xfrt::Pcg32 &rng, xfrt::GgmlType type,
                                                        int64_t numel, double sigma) {
  const bool q8 = type == xfrt::GgmlType::Q8_0, q41 = type == xfrt::GgmlType::Q4_1;
  const int64_t blockBytes = q8 ? 34 : q41 ? 20 : 18, blocks = numel / 32;
  auto buffer = xfrt::AlignedBuffer::allocate(uint64_t(blocks * blockBytes));
  if (!buffer)
    return fail(buffer.message());
  // Standard deviation of uniform quants: 127/√3 on [−127, 127], 4.61 on [−8, 7].
  int exponent = int(std::lround(std::log2(sigma / (q8 ? 73.3 : 4.61))));
  exponent = std::clamp(exponent, -14, 12);
  const uint16_t d = uint16_t((exponent + 15) << 10);
  const uint16_t minimum = uint16_t(0x8000 | ((exponent + 3 + 15) << 10)); // −8·d
  auto *bytes = static_cast<uint8_t *>(buffer->data());
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t *block = bytes + b * blockBytes;
    std::memcpy(block, &d, 2);
    if (q41)
      std::memcpy(block + 2, &minimum, 2);
    uint8_t *quants = block + (q41 ? 4 : 2);
    for (int j = 0; j < (q8 ? 32 : 16); ++j)
      quants[j] = q8 ? uint8_t(int8_t(int(rng.next() % 255) - 127)) : uint8_t(rng.next() & 0xff);
  }
  return buffer.take();
}

/// The hook the host code calls after each kernel in a --check build
/// (HostOptions::kernelOutputHook). xfc exports it (tools/xfc/CMakeLists.txt)
/// so the loaded shared object binds to it.
extern "C" __attribute__((visibility("default"))) void
xf_check_kernel_output(int32_t site, float *out, int64_t rows, int64_t stride) {
  if (activeSink)
    activeSink->kernelOutput(site, out, rows, stride);
}

void CompiledModel::setSink(KernelOutputSink *sink) { activeSink = sink; }

CompiledModel::~CompiledModel() {
  // The Halide runtime's worker threads live in the object: it stays loaded.
}

llvm::Expected<std::unique_ptr<CompiledModel>> CompiledModel::load(const std::string &path,
                                                                   uint64_t seed) {
  std::unique_ptr<CompiledModel> model(new CompiledModel);
  model->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!model->handle_)
    return fail(llvm::Twine("loading the build failed: ") + dlerror());
  auto symbol = [&](const char *name) { return dlsym(model->handle_, name); };
  auto *manifestText = static_cast<const char *>(symbol("xf_model_manifest"));
  auto prepare = reinterpret_cast<int32_t (*)(void *const *, void *const *)>(symbol("xf_prepare"));
  model->forward_ = reinterpret_cast<Forward>(symbol("xf_forward"));
  model->forwardCached_ = reinterpret_cast<ForwardCached>(symbol("xf_forward_cached"));
  model->forwardPacked_ = reinterpret_cast<ForwardPacked>(symbol("xf_forward_packed"));
  model->forwardCachedPacked_ =
      reinterpret_cast<ForwardCachedPacked>(symbol("xf_forward_cached_packed"));
  model->scratchBytes_ =
      reinterpret_cast<int64_t (*)(int64_t, int64_t)>(symbol("xf_scratch_bytes"));
  model->cacheBytes_ = reinterpret_cast<int64_t (*)(int64_t)>(symbol("xf_cache_bytes"));
  if (!manifestText || !prepare || !model->forward_ || !model->forwardCached_ ||
      !model->forwardPacked_ || !model->forwardCachedPacked_ || !model->scratchBytes_ ||
      !model->cacheBytes_)
    return fail("the build lacks an entry point of docs/abi.md");
  auto manifest = xfrt::parseManifest(manifestText);
  if (!manifest)
    return fail(manifest.message());
  model->manifest_ = manifest.take();
  // Parameters the build reads as ggml blocks (--quantized-like): random float32 ones are
  // drawn like the others, then replaced by random blocks.
  xfrt::Manifest floats = model->manifest_;
  for (xfrt::ParameterSpec &p : floats.parameters)
    p.blocks = false;
  auto weights = xfrt::randomWeights(seed, floats);
  if (!weights)
    return fail(weights.message());
  model->weights_ = weights.take();
  model->weights_.blocks.assign(model->manifest_.parameters.size(), false);
  // --random-weights' N(0, 0.02) leaves activations small and attention near uniform; scaled as
  // test/reference's random checkpoints (its decision 8), they are O(1): matrices
  // N(0, 1/min(rows, cols)) (the dot products run over one of the two), vectors N(0, 0.1²).
  for (size_t i = 0; i < model->manifest_.parameters.size(); ++i) {
    const xfrt::ParameterSpec &p = model->manifest_.parameters[i];
    if (p.init == xfrt::InitKind::Ones)
      continue;
    double sigma = p.shape.size() == 2
                       ? 1.0 / std::sqrt(double(std::min(p.shape[0], p.shape[1])))
                       : 0.1;
    float factor = float(sigma / 0.02);
    if (p.blocks) {
      xfrt::Pcg32 rng(seed, xfrt::fnv1a64(p.name) + 1);
      auto blocks = randomBlocks(rng, p.blockType, p.numel, sigma);
      if (!blocks)
        return blocks.takeError();
      model->weights_.params[i] = blocks->floats();
      model->weights_.buffers[i] = std::move(*blocks);
      model->weights_.blocks[i] = true;
      continue;
    }
    if (p.bf16) { // --weight-type=bf16: widened, scaled and rounded again
      auto *halves = reinterpret_cast<uint16_t *>(model->weights_.params[i]);
      for (int64_t j = 0; j < p.numel; ++j) {
        float scaled = llvm::bit_cast<float>(uint32_t(halves[j]) << 16) * factor;
        xfrt::narrowToBf16(&scaled, 1, &halves[j]);
      }
      continue;
    }
    for (int64_t j = 0; j < p.numel; ++j)
      model->weights_.params[i][j] *= factor;
  }
  for (int64_t bytes : model->manifest_.derivedBytes) {
    auto buffer = xfrt::AlignedBuffer::allocate(uint64_t(bytes));
    if (!buffer)
      return fail(buffer.message());
    model->derivedPointers_.push_back(buffer->data());
    model->derived_.push_back(buffer.take());
  }
  if (int32_t rc = prepare(reinterpret_cast<void *const *>(model->weights_.params.data()),
                           model->derivedPointers_.data()))
    return fail("xf_prepare failed with code " + llvm::Twine(rc));
  return model;
}

llvm::Expected<std::vector<float>> CompiledModel::forward(const std::vector<int32_t> &tokens,
                                                          const std::vector<int32_t> &source) {
  const int64_t l = int64_t(tokens.size()), lz = int64_t(source.size());
  auto scratch = xfrt::AlignedBuffer::allocate(uint64_t(scratchBytes_(l, lz)));
  if (!scratch)
    return fail(scratch.message());
  std::vector<float> out(size_t(l * manifest_.dOut));
  if (forward_(reinterpret_cast<void *const *>(weights_.params.data()), derivedPointers_.data(),
               tokens.data(), l, lz ? source.data() : nullptr, lz, out.data(), scratch->data()))
    return fail("xf_forward failed");
  return out;
}

llvm::Error CompiledModel::startCache() {
  auto cache = xfrt::AlignedBuffer::allocate(uint64_t(cacheBytes_(manifest_.cachePositions)));
  if (!cache)
    return fail(cache.message());
  cache_ = cache.take();
  return llvm::Error::success();
}

llvm::Error CompiledModel::startCaches(int64_t count) {
  uint64_t bytes = 0;
  if (!xfrt::checkedMul(uint64_t(cacheBytes_(manifest_.cachePositions)), uint64_t(count), bytes))
    return fail("KV caches too large");
  auto caches = xfrt::AlignedBuffer::allocate(bytes);
  if (!caches)
    return fail(caches.message());
  caches_ = caches.take();
  cacheSlots_ = count;
  return llvm::Error::success();
}

llvm::Expected<std::vector<float>>
CompiledModel::forwardCachedPacked(const std::vector<CachedSequence> &batch) {
  std::vector<int32_t> tokens;
  std::vector<int64_t> lengths, starts;
  std::vector<int64_t> slots;
  for (const CachedSequence &s : batch) {
    if (s.cache < 0 || s.cache >= cacheSlots_ || s.tokens.empty() ||
        s.start + int64_t(s.tokens.size()) > manifest_.cachePositions)
      return fail("a packed sequence past its KV cache");
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
    lengths.push_back(int64_t(s.tokens.size()));
    starts.push_back(s.start);
    slots.push_back(s.cache);
  }
  auto scratch = xfrt::AlignedBuffer::allocate(uint64_t(scratchBytes_(int64_t(tokens.size()), 0)));
  if (!scratch)
    return fail(scratch.message());
  std::vector<float> out(batch.size() * size_t(manifest_.dOut));
  if (forwardCachedPacked_(reinterpret_cast<void *const *>(weights_.params.data()),
                           derivedPointers_.data(), tokens.data(), lengths.data(), starts.data(),
                           int64_t(batch.size()), out.data(), scratch->data(), caches_.data(),
                           slots.data(), manifest_.cachePositions))
    return fail("xf_forward_cached_packed failed");
  return out;
}

llvm::Expected<std::vector<float>>
CompiledModel::forwardCached(const std::vector<int32_t> &tokens, int64_t start) {
  const int64_t l = int64_t(tokens.size());
  if (!cache_.data() || start + l > manifest_.cachePositions)
    return fail("positions past the KV cache");
  auto scratch = xfrt::AlignedBuffer::allocate(uint64_t(scratchBytes_(l, 0)));
  if (!scratch)
    return fail(scratch.message());
  std::vector<float> out(size_t(manifest_.dOut));
  if (forwardCached_(reinterpret_cast<void *const *>(weights_.params.data()),
                     derivedPointers_.data(), tokens.data(), l, start, out.data(),
                     scratch->data(), cache_.data(), manifest_.cachePositions))
    return fail("xf_forward_cached failed");
  return out;
}

llvm::Expected<std::vector<float>>
CompiledModel::forwardPacked(const std::vector<std::vector<int32_t>> &sequences,
                             const std::vector<std::vector<int32_t>> &sources) {
  std::vector<int32_t> tokens, sourceTokens;
  std::vector<int64_t> lengths, sourceLengths;
  for (const std::vector<int32_t> &sequence : sequences) {
    tokens.insert(tokens.end(), sequence.begin(), sequence.end());
    lengths.push_back(int64_t(sequence.size()));
  }
  for (const std::vector<int32_t> &source : sources) {
    sourceTokens.insert(sourceTokens.end(), source.begin(), source.end());
    sourceLengths.push_back(int64_t(source.size()));
  }
  const int64_t rows = int64_t(tokens.size()), sourceRows = int64_t(sourceTokens.size());
  auto scratch = xfrt::AlignedBuffer::allocate(uint64_t(scratchBytes_(rows, sourceRows)));
  if (!scratch)
    return fail(scratch.message());
  std::vector<float> out(size_t(rows * manifest_.dOut));
  if (forwardPacked_(reinterpret_cast<void *const *>(weights_.params.data()),
                     derivedPointers_.data(), tokens.data(), lengths.data(),
                     sources.empty() ? nullptr : sourceTokens.data(),
                     sources.empty() ? nullptr : sourceLengths.data(), int64_t(lengths.size()),
                     out.data(), scratch->data()))
    return fail("xf_forward_packed failed");
  return out;
}
