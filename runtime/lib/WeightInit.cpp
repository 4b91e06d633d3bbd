//===- WeightInit.cpp - Deterministic random weights ----------------------===//
//
// Parameter i is drawn from Pcg32(seed, fnv1a64(name)): "normal" and "zeros" give N(0, 0.02),
// "ones" 1 + N(0, 0.1) (layer-norm gains near one, biases near zero but not exactly zero, so a
// test exercises every term).
//
//===----------------------------------------------------------------------===//
#include "xfrt/Random.h"
#include "xfrt/Weights.h"

namespace xfrt {

Expected<WeightSet> randomWeights(uint64_t seed, const Manifest &manifest) {
  WeightSet weights;
  for (const ParameterSpec &spec : manifest.parameters) {
    if (spec.blocks)
      return makeError("parameter '" + spec.name + "': the executable reads it as " +
                       ggmlTypeName(spec.blockType) +
                       " blocks (built with xfc --quantized-like); random weights are float32 "
                       "only: give --weights FILE.gguf");
    uint64_t bytes;
    if (!checkedMul(uint64_t(spec.numel), uint64_t(sizeof(float)), bytes))
      return makeError("parameter '" + spec.name + "': too large");
    Expected<AlignedBuffer> buffer = AlignedBuffer::allocate(bytes);
    if (!buffer)
      return makeError("parameter '" + spec.name + "': " + buffer.message());
    Pcg32 rng(seed, fnv1a64(spec.name));
    float mean = spec.init == InitKind::Ones ? 1.0f : 0.0f;
    float stddev = spec.init == InitKind::Ones ? 0.1f : 0.02f;
    fillNormal(rng, buffer->floats(), size_t(spec.numel), mean, stddev);
    weights.bf16.push_back(spec.bf16);
    if (spec.bf16) {
      // Same draws as float32, narrowed in place: the bfloat16 half fits in the buffer.
      narrowToBf16(buffer->floats(), size_t(spec.numel),
                   reinterpret_cast<uint16_t *>(buffer->data()));
    }
    weights.params.push_back(buffer->floats());
    weights.buffers.push_back(buffer.take());
  }
  return weights;
}

} // namespace xfrt
