//===- GgmlType.cpp - ggml tensor types, block layouts, dequantization ----===//
//
// Block sizes are those of ggml's type traits (the same table the `gguf` Python package
// writes with). Dequantization works block by block from unaligned bytes, in plain C++: this
// is the load-time path and the reference for kernels that dequantize in their inner loop.
//
//===----------------------------------------------------------------------===//
#include "xfrt/GgmlType.h"

#include "xfrt/DType.h"

#include <algorithm>
#include <string>
#include <vector>

namespace xfrt {
namespace {

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4},
    {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 18},
    {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q5_0, "Q5_0", 32, 22},
    {GgmlType::Q5_1, "Q5_1", 32, 24},
    {GgmlType::Q8_0, "Q8_0", 32, 34},
    {GgmlType::Q8_1, "Q8_1", 32, 40},
    {GgmlType::Q2_K, "Q2_K", 256, 84},
    {GgmlType::Q3_K, "Q3_K", 256, 110},
    {GgmlType::Q4_K, "Q4_K", 256, 144},
    {GgmlType::Q5_K, "Q5_K", 256, 176},
    {GgmlType::Q6_K, "Q6_K", 256, 210},
    {GgmlType::Q8_K, "Q8_K", 256, 292},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 74},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98},
    {GgmlType::IQ1_S, "IQ1_S", 256, 50},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 18},
    {GgmlType::IQ3_S, "IQ3_S", 256, 110},
    {GgmlType::IQ2_S, "IQ2_S", 256, 82},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 136},
    {GgmlType::I8, "I8", 1, 1},
    {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},
    {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},
    {GgmlType::IQ1_M, "IQ1_M", 256, 56},
    {GgmlType::BF16, "BF16", 1, 2},
    {GgmlType::TQ1_0, "TQ1_0", 256, 54},
    {GgmlType::TQ2_0, "TQ2_0", 256, 66},
    {GgmlType::MXFP4, "MXFP4", 32, 17},
};

uint16_t load16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }

// One block of 32 elements each.
void dequantizeQ8_0(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block));
  const int8_t *q = reinterpret_cast<const int8_t *>(block + 2);
  for (int j = 0; j < 32; ++j)
    out[j] = float(q[j]) * d;
}

void dequantizeQ4_0(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block));
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = float(int(qs[j] & 15) - 8) * d;
    out[j + 16] = float(int(qs[j] >> 4) - 8) * d;
  }
}

void dequantizeQ4_1(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block));
  float m = halfToFloat(load16(block + 2));
  const uint8_t *qs = block + 4;
  for (int j = 0; j < 16; ++j) {
    // q·d is exact (4-bit times 11-bit significand), so contraction into an fma cannot
    // change the one rounding of the sum.
    out[j] = float(qs[j] & 15) * d + m;
    out[j + 16] = float(qs[j] >> 4) * d + m;
  }
}

} // namespace

const GgmlTypeInfo *ggmlTypeInfo(uint32_t id) {
  for (const GgmlTypeInfo &t : kTypes)
    if (uint32_t(t.type) == id)
      return &t;
  return nullptr;
}

const char *ggmlTypeName(GgmlType t) {
  const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(t));
  return info ? info->name : "?";
}

bool canDequantize(GgmlType t) {
  switch (t) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
  case GgmlType::Q8_0:
  case GgmlType::Q4_0:
  case GgmlType::Q4_1:
    return true;
  default:
    return false;
  }
}

namespace {
Status checkDequantizable(GgmlType t, size_t count) {
  const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(t));
  if (!info || !canDequantize(t))
    return makeError(std::string("cannot dequantize tensor type ") + ggmlTypeName(t) +
                     " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)");
  if (count % info->blockElements != 0)
    return makeError(std::to_string(count) + " elements of " + info->name +
                     " are not whole blocks of " + std::to_string(info->blockElements));
  return Status::success();
}
} // namespace

Status dequantizeToF32(GgmlType t, const uint8_t *src, size_t count, float *dst) {
  if (Status s = checkDequantizable(t, count); !s)
    return s;
  switch (t) {
  case GgmlType::F32:
    convertToF32(DType::F32, src, count, dst);
    break;
  case GgmlType::F16:
    convertToF32(DType::F16, src, count, dst);
    break;
  case GgmlType::BF16:
    convertToF32(DType::BF16, src, count, dst);
    break;
  default:
    void (*block)(const uint8_t *, float *) = t == GgmlType::Q8_0   ? dequantizeQ8_0
                                              : t == GgmlType::Q4_0 ? dequantizeQ4_0
                                                                    : dequantizeQ4_1;
    size_t blockBytes = ggmlTypeInfo(uint32_t(t))->blockBytes;
    for (size_t b = 0; b < count / 32; ++b)
      block(src + b * blockBytes, dst + b * 32);
  }
  return Status::success();
}

Status dequantizeToBf16(GgmlType t, const uint8_t *src, size_t count, uint16_t *dst) {
  if (Status s = checkDequantizable(t, count); !s)
    return s;
  // Through float32 a chunk at a time, so no float32 copy of the whole tensor is needed.
  constexpr size_t kChunk = 4096; // a multiple of every supported block size
  const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(t));
  size_t chunkBytes = kChunk / info->blockElements * info->blockBytes;
  std::vector<float> chunk(std::min(count, kChunk));
  for (size_t done = 0; done < count; done += kChunk) {
    size_t n = std::min(kChunk, count - done);
    (void)dequantizeToF32(t, src + done / kChunk * chunkBytes, n, chunk.data());
    for (size_t i = 0; i < n; ++i)
      dst[done + i] = floatToBfloat16(chunk[i]);
  }
  return Status::success();
}

} // namespace xfrt
