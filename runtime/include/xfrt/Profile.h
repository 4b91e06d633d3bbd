//===- Profile.h - per-kernel times for --profile and --trace-out -*- C++ -*-===//
//
// Generated code brackets every kernel call with xfrt_profile_enter(site) and
// xfrt_profile_exit(site); sites index the manifest's "kernels" list. The
// hooks cost one branch while profiling is off.
//
//===----------------------------------------------------------------------===//

#ifndef XFRT_PROFILE_H
#define XFRT_PROFILE_H

#include "xfrt/MachinePeak.h"
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

// Starts recording for `sites` call sites; clears earlier records. Per-site totals take
// constant memory; each call is also kept for the trace, up to `traceEvents` calls (later
// ones are counted as dropped), so --repeat 1000000 --trace-out stays bounded.
void profileStart(size_t sites, size_t traceEvents = 0);
void profileStop();
// On a GPU (docs/gpu.md) kernels run asynchronously: each call is timed on the device by CUDA
// events recorded around it (CudaDriver.h), read back in batches, so profiling adds no
// synchronisation per kernel; the table then also counts kernel launches per entry-point call.
void setProfileOnDevice(bool onDevice);
// Kernel calls past the trace's capacity in the last recording.
int64_t profileDroppedTraceEvents();
// The trace keeps at most this many kernel calls (about 40 MB of JSON).
constexpr size_t kMaxTraceEvents = 200000;

// Whether a kernel of `m` runs on bf16 or int8 products (KernelSpec::products): then the
// ceilings should carry those peaks (machineCeilings' withProducts).
bool profileNeedsProductPeaks(const Manifest &m);

// The per-kernel table (calls, total ms, GFLOP/s, % of the profiled time),
// grouped by kernel name; l, l_z and runs only label the summary line (FLOPs
// come from each call's own row counts).
// With `ceilings`, also GB/s, the bound that limits each kernel (compute:
// FLOPs at the peak of its products — FMA, bf16 or int8 dot products, or the AMX tiles' where
// the kernel's call takes them (KernelSpec::amx) and this process may use them; memory:
// bytes at the read bandwidth) and the % of it reached (the roofline time over
// the measured time).
std::string profileTable(const Manifest &m, int64_t l, int64_t lz, int runs,
                         const MachineCeilings *ceilings = nullptr);

// The same per kernel as JSON for tools/plot_roofline.py, written atomically.
Status writeProfileJson(const std::string &path, const Manifest &m, int64_t l, int64_t lz,
                        int runs, const MachineCeilings *ceilings);

// Chrome trace JSON (Perfetto opens it) of the recorded kernel calls (the first
// kMaxTraceEvents), written atomically; "otherData" says how many were dropped.
Status writeTrace(const std::string &path, const Manifest &m);

} // namespace xfrt

#endif // XFRT_PROFILE_H
