//===- Profile.h - per-kernel times for --profile and --trace-out -*- C++ -*-===//
//
// Generated code brackets every kernel call with xfrt_profile_enter(site) and
// xfrt_profile_exit(site); sites index the manifest's "kernels" list. The
// hooks cost one branch while profiling is off.
//
//===----------------------------------------------------------------------===//

#ifndef XFRT_PROFILE_H
#define XFRT_PROFILE_H

#include "xfrt/Manifest.h"
#include "xfrt/Status.h"

#include <cstdint>
#include <string>

extern "C" {
void xfrt_profile_enter(int32_t site);
void xfrt_profile_exit(int32_t site);
}

namespace xfrt {

// Starts recording for `sites` call sites; clears earlier records.
void profileStart(size_t sites);
void profileStop();

// The per-kernel table (calls, total ms, GFLOP/s, % of the profiled time),
// grouped by kernel name, for sequence lengths l and l_z over `runs` runs.
std::string profileTable(const Manifest &m, int64_t l, int64_t lz, int runs);

// Chrome trace JSON (Perfetto opens it) of every recorded kernel call.
Status writeTrace(const std::string &path, const Manifest &m);

} // namespace xfrt

#endif // XFRT_PROFILE_H
