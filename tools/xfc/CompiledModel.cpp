//===- CompiledModel.cpp - dlopen a build and call its C ABI ---------------===//

#include "CompiledModel.h"

#include "llvm/ADT/bit.h"

#include <algorithm>
#include <cmath>
#include <dlfcn.h>

using namespace xfc;

namespace {
KernelOutputSink *activeSink = nullptr;

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

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
  model->scratchBytes_ = reinterpret_cast<int64_t (*)(int64_t, int64_t)>(symbol("xf_scratch_bytes"));
  model->cacheBytes_ = reinterpret_cast<int64_t (*)(int64_t)>(symbol("xf_cache_bytes"));
  if (!manifestText || !prepare || !model->forward_ || !model->forwardCached_ ||
      !model->scratchBytes_ || !model->cacheBytes_)
    return fail("the build lacks an entry point of docs/abi.md");
  auto manifest = xfrt::parseManifest(manifestText);
  if (!manifest)
    return fail(manifest.message());
  model->manifest_ = manifest.take();
  auto weights = xfrt::randomWeights(seed, model->manifest_);
  if (!weights)
    return fail(weights.message());
  model->weights_ = weights.take();
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
