//===- WeightsFromGguf.cpp - Bind GGUF tensors to manifest parameters ----===//
//
// In: a GGUF file (llama.cpp's format, read and validated by Gguf.cpp) and the manifest. Out:
// a WeightSet of float32 (or bfloat16, where the manifest keeps a parameter so) copies: every
// tensor the model names is dequantized once at load (F32, F16, BF16, Q8_0, Q4_0, Q4_1), so the
// kernels see the same float32 weights as from a safetensors file. Parameters the executable
// keeps in ggml blocks (xfc --quantized-like; manifest dtype q8_0/q4_0/q4_1) point straight
// into the mapped file, whose tensor data is aligned to general.alignment. A GGUF matrix with ne0 =
// d_in has shape() [d_out, d_in], the nn.Linear layout specs bind with ᵀ. The parts of a
// concatenation that only xf_prepare reads are dequantized straight into it
// (placeConcatenationParts).
//
// Shapes alone do not pin a model down (9 heads of 64 and 3 heads of 192 have the same
// matrices), so the hyperparameters a spec declares under the names of examples/llama.xf are
// checked against the file's `<arch>.*` metadata first.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Gguf.h"
#include "xfrt/Safetensors.h"
#include "xfrt/Weights.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace xfrt {
namespace {

// Spec hyperparameter → GGUF metadata key after "<arch>.". l_max may be smaller than the file's
// context (a shorter KV cache), never larger.
struct MetadataRule {
  const char *hyperparameter, *key;
  bool isFloat = false, atMost = false;
};
constexpr MetadataRule kRules[] = {
    {"H", "attention.head_count"},
    {"H_kv", "attention.head_count_kv"},
    {"d_e", "embedding_length"},
    {"d_mlp", "feed_forward_length"},
    {"N_V", "vocab_size"},
    {"theta", "rope.freq_base", true},
    {"eps", "attention.layer_norm_rms_epsilon", true},
    {"l_max", "context_length", false, true},
    {"L", "block_count"},
};

Status checkHyperparameters(const std::string &path, const GgufHeader &header,
                            const Manifest &manifest) {
  Expected<std::string_view> arch = header.getString("general.architecture");
  if (!arch)
    return Status::success(); // nothing to compare with
  for (const MetadataRule &rule : kRules) {
    auto it = std::find_if(manifest.hyperparameters.begin(), manifest.hyperparameters.end(),
                           [&](const auto &hp) { return hp.first == rule.hyperparameter; });
    std::string key = std::string(*arch) + "." + rule.key;
    if (it == manifest.hyperparameters.end() || !header.find(key))
      continue;
    char *end = nullptr;
    double spec = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str())
      continue;
    double file;
    if (rule.isFloat) {
      Expected<float> v = header.getF32(key);
      if (!v)
        return v.status();
      file = *v;
    } else {
      Expected<int64_t> v = header.getI64(key);
      if (!v)
        return v.status();
      file = double(*v);
    }
    // Floats are stored as f32 (1e-5 is 9.99999975e-06): equal to float precision.
    bool ok = rule.atMost    ? spec <= file
              : rule.isFloat ? std::abs(spec - file) <= 1e-6 * std::abs(file)
                             : spec == file;
    if (!ok)
      return makeError(path + ": metadata '" + key + "' is " + header.find(key)->describe() +
                       ", but the model's hyperparameter " + rule.hyperparameter + " is " +
                       it->second + (rule.atMost ? " (more positions than the file's context)" : ""));
  }
  return Status::success();
}

} // namespace

Expected<WeightSet> loadGgufWeights(const std::string &path, const Manifest &manifest) {
  Expected<std::unique_ptr<GgufFile>> file = GgufFile::open(path);
  if (!file)
    return file.status();
  const GgufHeader &header = (*file)->header();
  if (Status s = checkHyperparameters(path, header, manifest); !s)
    return s;
  WeightSet weights;
  weights.params.assign(manifest.parameters.size(), nullptr);
  weights.bf16.assign(manifest.parameters.size(), false);
  weights.blocks.assign(manifest.parameters.size(), false);
  Expected<std::vector<float *>> partOf = placeConcatenationParts(manifest, weights);
  if (!partOf)
    return partOf.status();
  bool mapped = false;
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
    if (spec.blocks) {
      if (tensor->type != spec.blockType)
        return fail(std::string("type ") + ggmlTypeName(tensor->type) +
                    " in the file, but the executable reads " + ggmlTypeName(spec.blockType) +
                    " blocks (built with xfc --quantized-like another file; rebuild it with "
                    "this one, or without --quantized-like to dequantize at load)");
      weights.params[i] = const_cast<float *>(reinterpret_cast<const float *>(tensor->data));
      weights.blocks[i] = true;
      ++weights.zeroCopy;
      mapped = true;
      continue;
    }
    if (float *into = (*partOf)[i]) {
      if (Status s = dequantizeTensorInto(header, *tensor, into); !s)
        return s;
      weights.params[i] = into;
      continue;
    }
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
  if (mapped)
    weights.files.push_back((*file)->releaseFile());
  return weights;
}

} // namespace xfrt
