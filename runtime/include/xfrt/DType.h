//===- DType.h - Safetensors element types and conversion to F32 -*- C++ -*-===//
//
// The dtype names of the safetensors format, their sizes, and the conversion of F64, F32,
// F16 and BF16 data (little-endian, any alignment) to float32.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_DTYPE_H
#define XFRT_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace xfrt {

enum class DType {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  BOOL,
  F8_E4M3,
  F8_E5M2
};

// The dtype spelled `name` in a safetensors header, or nullopt when unknown.
std::optional<DType> parseDType(std::string_view name);
const char *dtypeName(DType t);
size_t dtypeSize(DType t);
// Whether convertToF32 accepts `t` (F64, F32, F16, BF16).
bool isFloatDType(DType t);

float halfToFloat(uint16_t h);
float bfloat16ToFloat(uint16_t b);
uint16_t floatToHalf(float f);     // round to nearest even (used by tests and tools)
uint16_t floatToBfloat16(float f); // round to nearest even

// Converts `count` little-endian elements of float dtype `t` at `src` (no alignment required).
void convertToF32(DType t, const uint8_t *src, size_t count, float *dst);

} // namespace xfrt

#endif // XFRT_DTYPE_H
