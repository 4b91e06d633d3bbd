//===- WeightsFromGguf.cpp - Bind GGUF tensors to manifest parameters ----===//
//
// In: a GGUF file (llama.cpp's format, read and validated by Gguf.cpp) and the manifest. Out:
// a WeightSet of float32 (or bfloat16, where the manifest keeps a parameter so) copies: every
// tensor the model names is dequantized once at load (F32, F16, BF16, Q8_0, Q4_0, Q4_1), so the
// kernels see the same float32 weights as from a safetensors file. A GGUF matrix with ne0 = d_in
// has shape() [d_out, d_in], the nn.Linear layout specs bind with ᵀ.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Gguf.h"
#include "xfrt/Safetensors.h"
#include "xfrt/Weights.h"

#include <algorithm>

namespace xfrt {

Expected<WeightSet> loadGgufWeights(const std::string &path, const Manifest &manifest) {
  Expected<std::unique_ptr<GgufFile>> file = GgufFile::open(path);
  if (!file)
    return file.status();
  const GgufHeader &header = (*file)->header();
  WeightSet weights;
  weights.params.assign(manifest.parameters.size(), nullptr);
  weights.bf16.assign(manifest.parameters.size(), false);
  for (size_t i = 0; i < manifest.parameters.size(); ++i) {
    const ParameterSpec &spec = manifest.parameters[i];
    const GgufTensor *tensor = header.findTensor(spec.name);
    auto fail = [&](const std::string &what) {
      return makeError(path + ": tensor '" + spec.name + "': " + what);
    };
    if (!tensor)
      return fail("missing (the model needs shape " + formatShape(spec.shape) + ")");
    if (tensor->shape() != spec.shape)
      return fail("shape " + formatShape(tensor->shape()) + " in the file, but the model expects " +
                  formatShape(spec.shape));
    Expected<AlignedBuffer> floats = dequantizeTensor(header, *tensor);
    if (!floats)
      return floats.status();
    if (spec.bf16) {
      // Narrowed in place: the bfloat16 halves fit in the float buffer's first half.
      auto *bits = reinterpret_cast<uint16_t *>(floats->data());
      for (int64_t done = 0; done < spec.numel;) {
        float chunk[4096];
        int64_t n = std::min<int64_t>(spec.numel - done, 4096);
        std::copy(floats->floats() + done, floats->floats() + done + n, chunk);
        narrowToBf16(chunk, size_t(n), bits + done);
        done += n;
      }
      weights.bf16[i] = true;
    }
    weights.params[i] = floats->floats();
    weights.buffers.push_back(floats.take());
  }
  return weights;
}

} // namespace xfrt
