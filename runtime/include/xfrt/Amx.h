//===- Amx.h - Whether this process may use Intel AMX tiles -------*- C++ -*-===//
//
// AMX (Sapphire Rapids and later Xeons) multiplies 16-row tiles: tdpbusd 16 × 16 × 64 u8·s8
// products in one instruction, tdpbf16ps 16 × 16 × 32 bf16 ones. Using it takes three things:
// the CPU has it (cpuid: AMX-TILE and AMX-INT8 / AMX-BF16), the OS saves the tile state (XCR0
// bits 17 and 18), and Linux has granted this process the tile data state
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) — some VMs expose the cpuid bits
// without the OS support. `XF_AMX=off` in the environment turns AMX off (to compare paths on
// one machine); `XF_AMX=emulate` runs the AMX kernels on their tile operations written out in
// C++ instead (slow: to check the AMX paths end to end on a CPU with AVX-512 but no AMX).
//
// The tile configuration (ldtilecfg's palette 1: rows and bytes per row of each of the 8 tiles)
// is built and loaded here for both kernels that use tiles (BlockGemmAmx.inc: int8,
// AmxBf16Gemm.cpp: bf16).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_AMX_H
#define XFRT_AMX_H

#include <cstdint>

namespace xfrt {

/// Whether AMX int8 tiles (tdpbusd) can run in this process; asks the OS once.
bool amxInt8Usable();

/// Why not, in a few words ("" where usable): for -v and the tests' skip messages.
const char *amxInt8Unusable();

/// Whether AMX bf16 tiles (tdpbf16ps) can run in this process, and why not ("" where usable).
bool amxBf16Usable();
const char *amxBf16Unusable();

/// Whether XF_AMX=emulate asks the AMX kernels to run on their tile operations written out in
/// C++ (the tiles themselves are then not used). The first call that returns true says so on
/// stderr, once per process.
bool amxEmulated();

/// ldtilecfg's 64 bytes, palette 1: tile t has rows[t] rows of bytesPerRow[t] bytes (0: unused).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};

  AmxTileConfig &tile(int t, int tileRows, int bytes) {
    rows[t] = uint8_t(tileRows), bytesPerRow[t] = uint16_t(bytes);
    return *this;
  }
};

/// ldtilecfg / tilerelease. Only where amxInt8Usable or amxBf16Usable (else they fault).
void amxLoadTileConfig(const AmxTileConfig &config);
void amxReleaseTiles();

} // namespace xfrt

#endif // XFRT_AMX_H
