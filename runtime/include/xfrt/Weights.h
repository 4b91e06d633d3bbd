//===- Weights.h - Float32 parameters bound to a manifest --------*- C++ -*-===//
//
// A WeightSet holds one float32 pointer per manifest parameter (in `params` order) and owns
// what they point into: mapped checkpoint files (zero-copy for aligned little-endian F32) and
// 64-byte aligned buffers (converted F16/BF16/F64, misaligned F32, random weights).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_WEIGHTS_H
#define XFRT_WEIGHTS_H

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Manifest.h"
#include "xfrt/MappedFile.h"
#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xfrt {

struct WeightSet {
  // manifest.parameters[i] -> numel elements, row-major: float32, or bfloat16 (uint16_t bits)
  // for parameters whose manifest dtype is bf16 (then bf16[i] is true).
  std::vector<float *> params;
  std::vector<bool> bf16;
  std::vector<std::unique_ptr<MappedFile>> files;
  std::vector<AlignedBuffer> buffers;
  // Parameters whose manifest dtype is a ggml block type point at the tensor's blocks in a
  // mapped GGUF file (in `files`), zero-copy.
  std::vector<bool> blocks;
  size_t zeroCopy = 0; // how many params point straight into a mapped file
  // Per derived buffer (or empty): the buffer, in `buffers`, that the loader has already
  // filled — a concatenation whose parts (manifest "parts") it dequantized in place, back to
  // back, so that the parts and the concatenation are one copy, not two. Its parts' params
  // point into it; the session hands it to xf_prepare as that derived buffer. Null elsewhere.
  std::vector<float *> filledDerived;
};

// Loads `path`: a .safetensors file, or a sharded checkpoint's index (a path ending in .json
// with a "weight_map" from tensor name to shard file, relative to the index's directory).
// Every file used is validated in full (parseSafetensors); then every manifest parameter must be
// present with the manifest's shape and a float dtype. Tensors the manifest does not name are
// ignored. Errors read "<file>: tensor '<name>': <what>".
// A path ending in .gguf is a GGUF file: loadGgufWeights. The parts of a concatenation only
// xf_prepare reads are converted (F32: copied) straight into it (placeConcatenationParts), and
// the file pages of whatever was converted or copied are dropped at once.
Expected<WeightSet> loadWeights(const std::string &path, const Manifest &manifest);

// Every manifest parameter from a GGUF file (llama.cpp), dequantized to float32 at load
// (WeightsFromGguf.cpp); shapes are GGUF's row-major shape(), [ne1, ne0] for a matrix. The parts
// of a concatenation only xf_prepare reads are dequantized straight into it (filledDerived).
// Parameters the manifest keeps in blocks (dtype q8_0, q4_0, q4_1) point into the mapped
// file instead; the tensor must have exactly that type.
Expected<WeightSet> loadGgufWeights(const std::string &path, const Manifest &manifest);

// Where a loader writes each parameter that is a part of a concatenation only xf_prepare
// reads (manifest "parts"; the concatenation and all its parts "forward_reads": "none"): at
// its place in one buffer per concatenation (added to weights.buffers and filledDerived), so
// the parts and the concatenation are one copy, not two, while xf_prepare runs (SmolLM2 in
// float32: the Q/K/V and gate|up weights, 266 MiB). Null for every other parameter.
Expected<std::vector<float *>> placeConcatenationParts(const Manifest &manifest,
                                                       WeightSet &weights);

// Deterministic weights from `seed` (see Random.h and InitKind).
Expected<WeightSet> randomWeights(uint64_t seed, const Manifest &manifest);

// NaN or ±Inf in the parameters: "" when there are none, else a phrase naming the first tensor
// that has any, the count and the first element (WeightCheck.cpp). Reads every parameter once
// without keeping mapped pages resident.
std::string findNonFiniteWeights(const Manifest &manifest, const WeightSet &weights);

// Narrows float32 data to bfloat16, rounding to nearest even (NaN stays NaN).
void narrowToBf16(const float *src, size_t count, uint16_t *dst);

// Writes every parameter (F32, or BF16 where the manifest keeps it so) with the manifest's
// names and shapes; a valid .safetensors file
// (8-aligned data, "__metadata__": {"format": "pt"}).
Status saveWeights(const std::string &path, const Manifest &manifest, const WeightSet &weights);

} // namespace xfrt

#endif // XFRT_WEIGHTS_H
