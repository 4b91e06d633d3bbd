//===- BlockRows.cpp - Embedding rows gathered from ggml blocks -----------===//
//
// Called by generated code for a token embedding whose table the executable keeps in ggml
// blocks (xfc --quantized-like): each row is dequantized with the same conversion as the load
// path (GgmlType.cpp), so the values are those of a float32 table read from the same file.
// Token ids were checked against the vocabulary before xf_forward runs.
//
//===----------------------------------------------------------------------===//
#include "xfrt/GgmlType.h"

#include <cstdint>

extern "C" void xfrt_gather_block_rows(const uint8_t *table, int64_t ggmlType,
                                       const int32_t *tokens, float *out, int64_t rows,
                                       int64_t width) {
  auto type = xfrt::GgmlType(uint32_t(ggmlType));
  const xfrt::GgmlTypeInfo *info = xfrt::ggmlTypeInfo(uint32_t(ggmlType));
  const int64_t rowBytes = width / int64_t(info->blockElements) * int64_t(info->blockBytes);
  for (int64_t t = 0; t < rows; ++t)
    (void)xfrt::dequantizeToF32(type, table + int64_t(tokens[t]) * rowBytes, size_t(width),
                                out + t * width);
}
