//===- BlockWeights.h - ggml weight blocks as Halide expressions -*- C++ -*-===//
//
// Reading a weight kept in ggml's block formats (WeightBlocks) straight from
// its bytes: per block of 32 weights a float16 scale d (and for Q4_1 a
// float16 offset m), then 32 int8 or 16 bytes of nibble pairs. Every weight
// is d·q + c with c = m (Q4_1), −8·d (Q4_0) or 0 (Q8_0): d·q is exact in
// float32 (11 by at most 8 significant bits), so the dequantized values are
// exactly ggml's (runtime/lib/GgmlType.cpp), whatever the kernel sums them in.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_BLOCKWEIGHTS_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_BLOCKWEIGHTS_H

#include "xf/Codegen/HalideKernels.h"

#include "Halide.h"

namespace mlir::xf {

/// The float16 whose bits are `bits16` (uint16) as float32: one instruction
/// where `native` (x86 F16C); without it the 15 magnitude bits shifted into a
/// float32's place and scaled by 2^112 give normal and subnormal values
/// exactly, and infinities and NaNs are rebuilt.
inline Halide::Expr floatFromHalfBits(Halide::Expr bits16, bool native) {
  using namespace Halide;
  if (native)
    return cast<float>(reinterpret(Float(16), bits16));
  auto u32 = [](uint32_t v) { return Internal::make_const(UInt(32), uint64_t(v)); };
  Expr bits = cast<uint32_t>(bits16);
  Expr sign = (bits & u32(0x8000)) << u32(16), magnitude = (bits & u32(0x7fff)) << u32(13);
  Expr finite = reinterpret<float>(magnitude) * float(0x1p112);
  Expr special = reinterpret<float>(magnitude | u32(0x7f800000));
  Expr value = select((bits & u32(0x7c00)) == u32(0x7c00), special, finite);
  return reinterpret<float>(reinterpret<uint32_t>(value) | sign);
}

class BlockWeights {
public:
  /// `bytes`: uint8 (byte in row, row).
  /// `nativeHalf`: the target converts float16 in hardware (x86 F16C).
  BlockWeights(Halide::ImageParam bytes, WeightBlocks type, bool nativeHalf)
      : bytes(bytes), type(type), blockBytes(int(weightBlockBytes(type))),
        nativeHalf(nativeHalf) {}

  /// The block's scale d as float32.
  Halide::Expr scale(Halide::Expr block, Halide::Expr row) const {
    return half(block * blockBytes, row);
  }
  /// The block's additive term c (m, −8·d or 0).
  Halide::Expr offset(Halide::Expr block, Halide::Expr row) const {
    switch (type) {
    case WeightBlocks::Q4_1:
      return half(block * blockBytes + 2, row);
    case WeightBlocks::Q4_0:
      return -8.f * scale(block, row);
    default:
      return Halide::Expr(0.f);
    }
  }
  bool hasOffset() const { return type != WeightBlocks::Q8_0; }
  /// q of element 16·h + l of the block (l in [0, 16), h in {0, 1}) as float32:
  /// consecutive l are consecutive bytes, so a vector over l is one dense load.
  Halide::Expr quant(Halide::Expr block, Halide::Expr l, Halide::Expr h,
                     Halide::Expr row) const {
    using namespace Halide;
    if (type == WeightBlocks::Q8_0)
      return cast<float>(reinterpret<int8_t>(bytes(block * blockBytes + 2 + 16 * h + l, row)));
    int header = type == WeightBlocks::Q4_1 ? 4 : 2;
    Expr byte = bytes(block * blockBytes + header + l, row);
    return cast<float>((byte >> cast<uint8_t>(4 * h)) & cast<uint8_t>(15));
  }
  /// The dequantized weight d·q + c of element 16·h + l of the block.
  Halide::Expr value(Halide::Expr block, Halide::Expr l, Halide::Expr h, Halide::Expr row) const {
    Halide::Expr v = scale(block, row) * quant(block, l, h, row);
    return hasOffset() ? v + offset(block, row) : v;
  }

private:
  /// float16 (little-endian, at `offset`) → float32.
  Halide::Expr half(Halide::Expr offset, Halide::Expr row) const {
    using namespace Halide;
    Expr bits16 = cast<uint16_t>(bytes(offset, row)) |
                  (cast<uint16_t>(bytes(offset + 1, row)) << cast<uint16_t>(8));
    return floatFromHalfBits(bits16, nativeHalf);
  }

  Halide::ImageParam bytes;
  WeightBlocks type;
  int blockBytes;
  bool nativeHalf;
};

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_BLOCKWEIGHTS_H
