//===- DeviceCeilings.h - the GPU's FP32 peak and memory bandwidth -*- C++ -*-===//
//
// --profile on a CUDA build reads each kernel against the GPU's ceilings, as the CPU build
// reads its kernels against the CPU's: the FP32 FMA peak from the device's attributes (SMs ×
// FP32 lanes per SM for its capability × 2 × clock) and the memory bandwidth measured once — a
// 256 MiB device-to-device copy, best of three, timed by CUDA events on the kernels' stream,
// counting the bytes read and written. Kept in the machine cache (MachinePeak.h) under
// "GPU <name> | sm_<major><minor>".
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_DEVICECEILINGS_H
#define XFRT_DEVICECEILINGS_H

#include "xfrt/MachinePeak.h"

namespace xfrt {

/// FP32 lanes per SM of a capability (64 on Volta to Ampere's sm_80, 128 from sm_86 on).
int fp32LanesPerSm(int major, int minor);

/// The GPU's ceilings, from `cacheFile` or measured now (zero, with `note` saying why, where
/// the driver cannot say or time them).
MachineCeilings deviceCeilings(const std::string &cacheFile, std::string &note);

} // namespace xfrt

#endif // XFRT_DEVICECEILINGS_H
