//===- DType.cpp - Safetensors element types and conversion to F32 --------===//
//
// Half and bfloat16 are decoded bit by bit (no compiler extensions), so subnormals, infinities
// and NaNs convert exactly.
//
//===----------------------------------------------------------------------===//
#include "xfrt/DType.h"

#include <cstring>

namespace xfrt {
namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8},   {DType::F32, "F32", 4},         {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8},         {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},   {DType::I8, "I8", 1},           {DType::U64, "U64", 8},
    {DType::U32, "U32", 4},   {DType::U16, "U16", 2},         {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1}, {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
};

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}
uint16_t load16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t load32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t load64(const uint8_t *p) { return uint64_t(load32(p)) | uint64_t(load32(p + 4)) << 32; }
} // namespace

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &d : kDTypes)
    if (name == d.name)
      return d.type;
  return std::nullopt;
}

const char *dtypeName(DType t) {
  for (const DTypeInfo &d : kDTypes)
    if (d.type == t)
      return d.name;
  return "?";
}

size_t dtypeSize(DType t) {
  for (const DTypeInfo &d : kDTypes)
    if (d.type == t)
      return d.size;
  return 1;
}

bool isFloatDType(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0x1F) // inf / nan
    return bitsToFloat(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bitsToFloat(sign);
    // subnormal: mant * 2^-24, exact in float
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

float bfloat16ToFloat(uint16_t b) { return bitsToFloat(uint32_t(b) << 16); }

uint16_t floatToBfloat16(float f) {
  uint32_t bits = floatToBits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // nan: keep it quiet
    return uint16_t((bits >> 16) | 0x40);
  uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

uint16_t floatToHalf(float f) {
  uint32_t bits = floatToBits(f);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t absBits = bits & 0x7FFFFFFFu;
  if (absBits > 0x7F800000u)
    return uint16_t(sign | 0x7E00);
  if (absBits >= 0x477FF000u) // rounds to >= 65520: inf
    return uint16_t(sign | 0x7C00);
  if (absBits < 0x38800000u) { // below the smallest normal half: subnormal or zero
    float a = bitsToFloat(absBits) * 16777216.0f; // in units of 2^-24
    uint32_t m = uint32_t(a);
    float rest = a - float(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1)))
      ++m;
    return uint16_t(sign | m);
  }
  uint32_t exp = (absBits >> 23) - 112, mant = absBits & 0x7FFFFF;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(sign | h);
}

void convertToF32(DType t, const uint8_t *src, size_t count, float *dst) {
  switch (t) {
  case DType::F32:
    for (size_t i = 0; i < count; ++i)
      dst[i] = bitsToFloat(load32(src + 4 * i));
    return;
  case DType::F16:
    for (size_t i = 0; i < count; ++i)
      dst[i] = halfToFloat(load16(src + 2 * i));
    return;
  case DType::BF16:
    for (size_t i = 0; i < count; ++i)
      dst[i] = bfloat16ToFloat(load16(src + 2 * i));
    return;
  case DType::F64:
    for (size_t i = 0; i < count; ++i) {
      uint64_t bits = load64(src + 8 * i);
      double d;
      std::memcpy(&d, &bits, 8);
      dst[i] = static_cast<float>(d);
    }
    return;
  default:
    for (size_t i = 0; i < count; ++i)
      dst[i] = 0;
    return;
  }
}

} // namespace xfrt
