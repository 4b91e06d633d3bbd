//===- GgmlType.h - ggml tensor types, block layouts, dequantization -*- C++ -*-===//
//
// The element types a GGUF tensor may have (ggml's `ggml_type` numbering), the size of each
// type's block, and the exact conversion of the supported ones to float32. Quantized types
// store a row of ne[0] elements as ne[0] / 32 consecutive blocks (little-endian, packed):
//   Q8_0  34 bytes: f16 d, int8 q[32]                  x[j] = q[j]·d
//   Q4_0  18 bytes: f16 d, u8 qs[16]                   x[j] = (nibble_j − 8)·d
//   Q4_1  20 bytes: f16 d, f16 m, u8 qs[16]            x[j] = nibble_j·d + m
// where nibble_j of a Q4 block is `qs[j] & 15` for j < 16 and `qs[j − 16] >> 4` for j ≥ 16
// (low nibbles are elements 0..15, high nibbles 16..31). F32, F16 and BF16 are one element
// per block. Every product above is exact in float32, so each element is rounded once (Q4_1's
// addition) or not at all: the results are bitwise those of ggml's reference dequantizers.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_GGMLTYPE_H
#define XFRT_GGMLTYPE_H

#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>

namespace xfrt {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// Block geometry of a known type: `blockElements` elements stored in `blockBytes` bytes.
struct GgmlTypeInfo {
  GgmlType type;
  const char *name; // as ggml prints it: "Q4_1", "F32", ...
  uint32_t blockElements;
  uint32_t blockBytes;
};

// The type numbered `id` in a GGUF file, or nullptr when ggml defines no such type.
const GgmlTypeInfo *ggmlTypeInfo(uint32_t id);
const char *ggmlTypeName(GgmlType t);
// Whether dequantizeToF32 handles `t`: F32, F16, BF16, the blocks of 32 Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL and the super-blocks of 256 Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (as
// ggml-quants.c's dequantize_row_*: the types llama.cpp's Q2_K ... Q6_K and IQ4_XS recipes
// write, their fallbacks for rows not a multiple of 256 included).
bool canDequantize(GgmlType t);
// Their names, for errors: "F32, F16, BF16, Q8_0, ...".
const char *dequantizableTypeNames();

// Converts `count` elements of type `t` at `src` (no alignment required) to float32.
// `count` must be a multiple of the type's block size; the error names the type otherwise,
// or when `t` is not one canDequantize accepts.
Status dequantizeToF32(GgmlType t, const uint8_t *src, size_t count, float *dst);
// The same float32 values rounded to bfloat16 (nearest even), for loaders that keep weights
// in bfloat16 (--weight-type=bf16).
Status dequantizeToBf16(GgmlType t, const uint8_t *src, size_t count, uint16_t *dst);

} // namespace xfrt

#endif // XFRT_GGMLTYPE_H
