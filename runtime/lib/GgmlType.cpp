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

// Q5_0 { half d; u8 qh[4]; u8 qs[16]; }, Q5_1 { half d, m; u8 qh[4]; u8 qs[16]; }: the nibbles
// of Q4_0/Q4_1 with a fifth bit, element j's in bit j of the little-endian qh; Q5_0 is centred
// (− 16). Each product and Q5_1's addition round as Q4_0's and Q4_1's do.
template <bool WithMin> void dequantizeQ5(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block));
  float m = WithMin ? halfToFloat(load16(block + 2)) : 0.f;
  const uint8_t *qhBytes = block + (WithMin ? 4 : 2), *qs = qhBytes + 4;
  uint32_t qh = uint32_t(qhBytes[0]) | uint32_t(qhBytes[1]) << 8 | uint32_t(qhBytes[2]) << 16 |
                uint32_t(qhBytes[3]) << 24;
  for (int j = 0; j < 16; ++j) {
    int lo = (qs[j] & 15) | int((qh >> j) & 1) << 4;
    int hi = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
    if (WithMin) {
      out[j] = float(lo) * d + m;
      out[j + 16] = float(hi) * d + m;
    } else {
      out[j] = float(lo - 16) * d;
      out[j + 16] = float(hi - 16) * d;
    }
  }
}

// The 16 non-uniform levels of IQ4_NL and IQ4_XS (ggml-common.h, kvalues_iq4nl).
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

// IQ4_NL { half d; u8 qs[16]; }: element = d·level[nibble], nibbles as Q4_0's.
void dequantizeIQ4_NL(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block));
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(kIq4Levels[qs[j] & 15]);
    out[j + 16] = d * float(kIq4Levels[qs[j] >> 4]);
  }
}

// K-quants: super-blocks of 256 (ggml-quants.c, dequantize_row_q2_K ... _q6_K, iq4_xs).
// IQ4_XS { half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }: 8 sub-blocks of 32 with a
// 6-bit scale (low 4 bits in scales_l, high 2 in scales_h) minus 32; element =
// (d·scale)·level[nibble], the nibbles of each sub-block as IQ4_NL's.
void dequantizeIQ4_XS(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block));
  uint16_t scalesHigh = load16(block + 2);
  const uint8_t *scalesLow = block + 4, *qs = block + 8;
  for (int ib = 0; ib < 8; ++ib, qs += 16, out += 32) {
    int ls = ((scalesLow[ib / 2] >> (4 * (ib % 2))) & 15) | (((scalesHigh >> (2 * ib)) & 3) << 4);
    float dl = d * float(ls - 32);
    for (int j = 0; j < 16; ++j) {
      out[j] = dl * float(kIq4Levels[qs[j] & 15]);
      out[j + 16] = dl * float(kIq4Levels[qs[j] >> 4]);
    }
  }
}

// Q2_K { u8 scales[16]; u8 qs[64]; half d; half dmin; }: 16 sub-blocks of 16, 2-bit values;
// each scales byte holds the sub-block's 4-bit scale (low) and min (high); element =
// (d·sc)·q − dmin·m. Within each half of 128, the 2-bit field at shift 2k of qs[32h + l] is
// element 32k + l.
void dequantizeQ2_K(const uint8_t *block, float *out) {
  const uint8_t *scales = block, *q = block + 16;
  float d = halfToFloat(load16(block + 80)), dmin = halfToFloat(load16(block + 82));
  int is = 0;
  for (int n = 0; n < 256; n += 128, q += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int half = 0; half < 2; ++half) {
        uint8_t sc = scales[is++];
        float dl = d * float(sc & 15), ml = dmin * float(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *out++ = dl * float((q[l + 16 * half] >> shift) & 3) - ml;
      }
}

// Q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d; }: 16 sub-blocks of 16, 3-bit values
// (2 low bits as Q2_K's, the third from hmask; a clear bit subtracts 4) with 6-bit scales
// minus 32 packed in 12 bytes (low nibbles of bytes 0..7, then bit pairs of bytes 8..11);
// element = (d·scale)·q.
void dequantizeQ3_K(const uint8_t *block, float *out) {
  const uint8_t *hm = block, *q = block + 32, *packed = block + 96;
  float dAll = halfToFloat(load16(block + 108));
  int8_t scales[16];
  for (int i = 0; i < 16; ++i) {
    int low = i < 8 ? packed[i] & 15 : packed[i - 8] >> 4;
    int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = int8_t((low | high << 4) - 32);
  }
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128, q += 32)
    for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1))
      for (int half = 0; half < 2; ++half) {
        float dl = dAll * float(scales[is++]);
        for (int l = 0; l < 16; ++l) {
          int k = l + 16 * half;
          *out++ = dl * float(int((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4));
        }
      }
}

// The 6-bit scale and min of sub-block j of Q4_K and Q5_K, packed in 12 bytes: j < 4 in the
// low 6 bits of bytes j and j + 4; else the nibbles of byte j + 4 with the top 2 bits of
// bytes j − 4 and j.
void scaleMinK4(const uint8_t *scales, int j, int &sc, int &m) {
  if (j < 4) {
    sc = scales[j] & 63, m = scales[j + 4] & 63;
  } else {
    sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4);
    m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// Q5_K { half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }: Q4_K's layout with a
// fifth bit per element in qh (bit 2g of qh[l] for sub-block 2g's element l, bit 2g + 1 for
// 2g + 1's).
void dequantizeQ5_K(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block)), dmin = halfToFloat(load16(block + 2));
  const uint8_t *scales = block + 4, *qh = block + 16, *ql = block + 48;
  for (int g = 0; g < 4; ++g, ql += 32) {
    int sc, m;
    scaleMinK4(scales, 2 * g, sc, m);
    float d1 = d * float(sc), m1 = dmin * float(m);
    scaleMinK4(scales, 2 * g + 1, sc, m);
    float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l)
      *out++ = d1 * float((ql[l] & 15) + ((qh[l] >> (2 * g)) & 1) * 16) - m1;
    for (int l = 0; l < 32; ++l)
      *out++ = d2 * float((ql[l] >> 4) + ((qh[l] >> (2 * g + 1)) & 1) * 16) - m2;
  }
}

// Q4_K { half d; half dmin; u8 scales[12]; u8 qs[128]; }: 8 sub-blocks of 32 with 6-bit scale
// and min packed in `scales`; element = d·sc·q − dmin·m. d·sc·q is exact in float32 (11 + 6 +
// 4 significant bits), so the one rounding is the subtraction's.
void dequantizeQ4_K(const uint8_t *block, float *out) {
  float d = halfToFloat(load16(block)), dmin = halfToFloat(load16(block + 2));
  const uint8_t *scales = block + 4, *q = block + 16;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    int sc, m;
    scaleMinK4(scales, is, sc, m);
    float d1 = d * float(sc), m1 = dmin * float(m);
    scaleMinK4(scales, is + 1, sc, m);
    float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l) {
      out[j + l] = d1 * float(q[l] & 15) - m1;
      out[j + 32 + l] = d2 * float(q[l] >> 4) - m2;
    }
  }
}

// Q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; half d; }: 16 sub-blocks of 16, 6-bit values
// (low 4 bits in ql, high 2 in qh) minus 32; element = (d·scale)·q, in that order as ggml.
void dequantizeQ6_K(const uint8_t *block, float *out) {
  const uint8_t *ql = block, *qh = block + 128;
  const int8_t *sc = reinterpret_cast<const int8_t *>(block + 192);
  float d = halfToFloat(load16(block + 208));
  for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[n + l] = d * float(sc[is]) * float(q1);
      out[n + l + 32] = d * float(sc[is + 2]) * float(q2);
      out[n + l + 64] = d * float(sc[is + 4]) * float(q3);
      out[n + l + 96] = d * float(sc[is + 6]) * float(q4);
    }
  }
}

void (*blockDequantizer(GgmlType t))(const uint8_t *, float *) {
  switch (t) {
  case GgmlType::Q8_0:
    return dequantizeQ8_0;
  case GgmlType::Q4_0:
    return dequantizeQ4_0;
  case GgmlType::Q4_1:
    return dequantizeQ4_1;
  case GgmlType::Q5_0:
    return dequantizeQ5<false>;
  case GgmlType::Q5_1:
    return dequantizeQ5<true>;
  case GgmlType::IQ4_NL:
    return dequantizeIQ4_NL;
  case GgmlType::Q2_K:
    return dequantizeQ2_K;
  case GgmlType::Q3_K:
    return dequantizeQ3_K;
  case GgmlType::Q4_K:
    return dequantizeQ4_K;
  case GgmlType::Q5_K:
    return dequantizeQ5_K;
  case GgmlType::Q6_K:
    return dequantizeQ6_K;
  case GgmlType::IQ4_XS:
    return dequantizeIQ4_XS;
  default:
    return nullptr;
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
  case GgmlType::Q5_0:
  case GgmlType::Q5_1:
  case GgmlType::IQ4_NL:
  case GgmlType::Q2_K:
  case GgmlType::Q3_K:
  case GgmlType::Q4_K:
  case GgmlType::Q5_K:
  case GgmlType::Q6_K:
  case GgmlType::IQ4_XS:
    return true;
  default:
    return false;
  }
}

const char *dequantizableTypeNames() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, "
         "IQ4_XS";
}

namespace {
Status checkDequantizable(GgmlType t, size_t count) {
  const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(t));
  if (!info || !canDequantize(t))
    return makeError(std::string("cannot dequantize tensor type ") + ggmlTypeName(t) +
                     " (supported: " + dequantizableTypeNames() + ")");
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
    void (*block)(const uint8_t *, float *) = blockDequantizer(t);
    const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(t));
    for (size_t b = 0; b < count / info->blockElements; ++b)
      block(src + b * info->blockBytes, dst + b * info->blockElements);
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
