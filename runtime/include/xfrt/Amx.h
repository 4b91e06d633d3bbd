//===- Amx.h - Whether this process may use Intel AMX tiles -------*- C++ -*-===//
//
// AMX (Sapphire Rapids and later Xeons) multiplies 16-row tiles: tdpbusd 16 × 16 × 64 u8·s8
// products in one instruction. Using it takes three things: the CPU has it (cpuid), the OS
// saves the tile state (XCR0 bits 17 and 18), and Linux has granted this process the tile data
// state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) — some VMs expose the cpuid bits
// without the OS support. `XF_AMX=off` in the environment turns AMX off (to compare paths on
// one machine).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_AMX_H
#define XFRT_AMX_H

namespace xfrt {

/// Whether AMX int8 tiles (tdpbusd) can run in this process; asks the OS once.
bool amxInt8Usable();

/// Why not, in a few words ("" where usable): for -v and the tests' skip messages.
const char *amxInt8Unusable();

} // namespace xfrt

#endif // XFRT_AMX_H
