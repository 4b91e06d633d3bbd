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
// rows: the call's output rows; context_rows: keys attended to (attention), else 0.
void xfrt_profile_exit(int32_t site, int64_t rows, int64_t context_rows);
}

namespace xfrt {

// Starts recording for `sites` call sites; clears earlier records.
void profileStart(size_t sites);
void profileStop();

// The per-kernel table (calls, total ms, GFLOP/s, % of the profiled time),
// grouped by kernel name; l, l_z and runs only label the summary line (FLOPs
// come from each call's own row counts).
std::string profileTable(const Manifest &m, int64_t l, int64_t lz, int runs);

// Chrome trace JSON (Perfetto opens it) of every recorded kernel call.
Status writeTrace(const std::string &path, const Manifest &m);

} // namespace xfrt

#endif // XFRT_PROFILE_H
