//===- MachinePeak.h - Measured FMA peak and bandwidth -----------*- C++ -*-===//
//
// The ceilings kernels are read against (--profile's roofline, xfc tune, the
// benchmarks):
// fp32 FMA throughput on `threads` threads (independent AVX-512 FMA chains,
// or AVX2 where the CPU lacks AVX-512), the bf16 dot-product throughput
// (vdpbf16ps, where the CPU has AVX512-BF16) and read bandwidth of a 512 MiB
// buffer in huge pages, as the weights are (WeightRegion.h).
//
//===----------------------------------------------------------------------===//

#ifndef XFRT_MACHINEPEAK_H
#define XFRT_MACHINEPEAK_H

#include "xfrt/Status.h"

#include <functional>
#include <string>

namespace xfrt {

struct MachinePeak {
  std::string cpu, flags, isa;
  double gflops = 0, readGBs = 0;
  double bf16Gflops = 0; // 0 where the CPU has no AVX512-BF16, or not asked for
  double int8Gops = 0;   // vpdpbusd (GOP/s); 0 where the CPU has no AVX512-VNNI, or not asked for
  double amxBf16Gflops = 0; // tdpbf16ps; 0 where this process may not use AMX bf16, or not asked for
  double amxInt8Gops = 0;   // tdpbusd (GOP/s); 0 where this process may not use AMX int8, or not asked for
};

// withBf16: also the bf16 dot-product and int8 (VNNI) peaks (~1 s more; the benchmarks ask
// for them, --profile's ceilings do not).
MachinePeak measurePeak(int threads, bool withBf16 = false);

// The fp32 FMA peak alone (GFLOP/s), as measurePeak measures it: for tools that read it again
// while they run, since a VM's speed moves by minutes.
double measureFmaPeak(int threads);

// The two products a --bf16-gemm-inputs GEMM can run on, in GFLOP/s on `threads` threads:
// fp32 FMA (AVX-512, else AVX2) and the bf16 dot product (vdpbf16ps; 0 where the CPU has no
// AVX512-BF16 or withBf16 is false). `iterations` per chain trades time for noise: 50M (the
// benchmarks') is ~0.1 s a pass on Zen 4, best of 3 passes.
struct ProductPeaks {
  double fp32 = 0, bf16 = 0;
  double int8 = 0; // GOP/s of vpdpbusd; measured by measurePeak(withBf16) only
};
ProductPeaks measureProductPeaks(int threads, long iterations, bool withBf16);
// Whether bf16 dot products pay for a GEMM on a machine with these peaks: they must beat fp32
// FMA by kBf16ProductMargin, since the bf16 GEMM also rounds its inputs on every call and
// reaches a smaller share of its peak (Zen 4: bf16 peak 2.0x fp32, GPT-2 prefill 1.9x faster;
// an Intel Xeon without AMX: bf16 peak 0.49x fp32, prefill 1.6x slower).
constexpr double kBf16ProductMargin = 1.25;
bool bf16ProductsPay(const ProductPeaks &peaks);
// The AMX bf16 tiles' peak (tdpbf16ps, GFLOP/s on `threads` threads, best of 3 passes of
// `iterations` steps of four instructions; 1M steps is ~25 ms at 16 cycles an instruction):
// 0 where this process may not use AMX bf16 (xfrt/Amx.h). Never measured on an AMX CPU yet.
double measureAmxBf16Peak(int threads, long iterations);
// The AMX int8 tiles' peak (tdpbusd, GOP/s; as above): 0 where this process may not use AMX
// int8. Never measured on an AMX CPU yet.
double measureAmxInt8Peak(int threads, long iterations);
// The read bandwidth alone (GB/s, best of 3 passes over 512 MiB; ~0.3 s): the benchmarks
// measure it right beside each timed decode, since a VM's bandwidth moves with its
// neighbours from one minute to the next.
double measureReadBandwidth(int threads);
// /proc/cpuinfo's "model name" ("" where there is none).
std::string cpuModelName();

// MachineCeilings.cpp (libxfrt only; the tools above need just the measurement).
// The ceilings --profile reads kernels against: measured once per CPU model,
// ISA and thread count and kept in `cacheFile` (JSON, rewritten atomically,
// other machines' entries kept). `source` says where they came from
// ("measured", or "cache FILE"); a cache that cannot be read or written is
// ignored with `note` set, never an error. A file that is not a machine cache
// (not a JSON object of ceilings entries) is left as it is, never rewritten.
// Each entry also keeps the 1-minute load average when it was measured:
// ceilings measured beside other work are low (a loaded 2-core VM measured 86 of ~300
// GFLOP/s), so such an entry is measured again once the machine is quiet, and `source` says
// when the ceilings came from a busy machine.
// The low-precision product peaks (bf16 dot, int8 dot) are measured only when asked for
// (withProducts: a profile of kernels on those products), kept beside the others; -1 where not
// measured, 0 where the CPU has no such product.
struct MachineCeilings {
  double gflops = 0, readGBs = 0;
  std::string source;
  double bf16Gflops = -1, int8Gops = -1;
  // The AMX tiles' peaks (MachinePeak's amxBf16Gflops, amxInt8Gops): -1 not measured, 0 where
  // this process may not use the tiles.
  double amxBf16Gflops = -1, amxInt8Gops = -1;
};
MachineCeilings machineCeilings(int threads, const std::string &cacheFile, std::string &note,
                                bool withProducts = false);
// The same cache for any machine's ceilings (the GPU's: DeviceCeilings.h): the entry under
// `key`, else measure()'s, kept there. loadThreads > 0: the entry follows the load rules above
// for a measurement on that many threads; 0: a kept entry is read as it is. A measurement that
// fails leaves zero ceilings (no roofline) and says why in `note`.
// withProducts: a kept entry without the product peaks is measured again.
MachineCeilings keptCeilings(const std::string &key, const std::string &cacheFile,
                             std::string &note, int loadThreads,
                             const std::function<Expected<MachineCeilings>()> &measure,
                             bool withProducts = false);
// The 1-minute load average: the first number of `path` (/proc/loadavg's format); -1 where it
// cannot be read.
double loadAverage(const char *path = "/proc/loadavg");
// Whether a measurement on `threads` threads shares the CPUs with other work: the load
// average exceeds the `cpus` - `threads` CPUs the measurement leaves free by more than
// kBusyLoadMargin (a load of 1 on 2 CPUs halves a 2-thread peak). An unknown load (< 0) is not busy.
constexpr double kBusyLoadMargin = 0.75;
bool measuredBusy(double load, int cpus, int threads);
// Whether a kept entry measured at `entryLoad` (< 0: not recorded, files before the load was
// kept) is measured again now, at `nowLoad`: it was busy or unrecorded, and now is quiet.
bool remeasureCeilings(double entryLoad, double nowLoad, int cpus, int threads);
// $XDG_CACHE_HOME/xf/machine.json, else ~/.cache/xf/machine.json ("" without a home).
std::string defaultMachineCacheFile();

} // namespace xfrt

#endif // XFRT_MACHINEPEAK_H
