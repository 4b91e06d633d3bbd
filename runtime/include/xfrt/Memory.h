//===- Memory.h - Resident memory of this process ----------------*- C++
//-*-===//
//
// From /proc/self/status (Linux): VmHWM, the peak resident set, and VmRSS, the
// current one. Both return -1 where the file or the field is missing.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_MEMORY_H
#define XFRT_MEMORY_H

#include <cstdint>
#include <string>

namespace xfrt {

int64_t peakResidentBytes();
int64_t residentBytes();

// "memory: peak resident 123.4 MiB (VmHWM), checkpoint 90.9 MiB on disk, parameters 86.7 MiB
// as f32, resident when ready 101.2 MiB (VmRSS)": `readyBytes`, when ≥ 0, is the resident
// memory once the session was created (its parameters prepared and what only xf_prepare read
// freed), before the first forward.
std::string memoryReport(int64_t checkpointBytes, int64_t parameterBytes, int64_t readyBytes = -1);

} // namespace xfrt

#endif // XFRT_MEMORY_H
