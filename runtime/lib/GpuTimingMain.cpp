//===- GpuTimingMain.cpp - main() of a CUDA schedule timing program -------===//
//
// The GPU half of `xfc tune --target cuda` (docs/tuning.md, "CUDA GEMMs"): a program that
// needs only the CUDA driver, built by `xfc tune --export DIR` from the table of
// xfrt/GpuTimingTable.h. Per kernel (a GEMM, or an attention: at ≤ 4 rows flash-decoding's
// range pass and merge, a measurement of both), within its share of --budget:
//   1. device memories for the longest length, filled with small pseudo-random values, the
//      arguments views of them shaped per length;
//   2. every candidate called once per length, its output read back and compared with the
//      default's (normwise error ≤ 1e-4; the output is set to a sentinel before each call);
//      a candidate that fails or differs is dropped, the default failing drops the kernel;
//      then each length's calls per measurement set so that one lasts ~0.3 ms (1-64 calls);
//   3. --rounds search rounds: all candidates on all lengths, each measurement between two
//      CUDA events on the kernels' stream, read back once a round; odd rounds in reverse;
//      the baselines (Anderson2021's schedule for one length) in the same rounds, checked and
//      timed at their own length only, never finalists;
//   4. the finalist (the lowest paired ratio to the default over those rounds,
//      PairedComparison.h) against the default alone: batches of 9 rounds, the finalist
//      first in odd batches, until PairedComparison's rule needs no further batch or the
//      share is spent — the CPU tuner's final check (FinalCheck.cpp), on the GPU.
// Every round's times go to the JSON file (--out), rewritten after each kernel, so a run
// cut short keeps what it measured. `xfc tune --import FILE` judges them (the same rule)
// into the tuning database. No decision made here is stored: the import makes it again.
//
//===----------------------------------------------------------------------===//
#include "HalideBufferLayout.h"
#include "xf/Tuning/PairedComparison.h"
#include "xfrt/CudaDriver.h"
#include "xfrt/Device.h"
#include "xfrt/DeviceLinks.h"
#include "xfrt/GpuTimingTable.h"
#include "xfrt/HalideErrors.h"
#include "xfrt/Json.h"
#include "xfrt/OutputFile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" int halide_set_error_handler(void (*)(void *, const char *));

namespace {

using xfrt::HalideBuffer;
using xfrt::HalideDimension;
using Clock = std::chrono::steady_clock;
namespace tuning = mlir::xf::tuning;

struct Options {
  std::string out = "gpu-times.json";
  double budgetSeconds = 55;
  int searchRounds = 3;
};

constexpr int kCheckRounds = 9;         // rounds of a final-check batch, as FinalCheck.cpp
constexpr double kMeasureMicros = 300;  // one measurement's target length
constexpr int kMaxCalls = 64;           // calls per measurement at most

const char *kUsage =
    "usage: xf-gpu-timing [--out FILE] [--budget SECONDS] [--rounds N]\n"
    "Times the candidate schedules `xfc tune --target cuda --export` compiled into this\n"
    "program on this machine's GPU and writes their times as JSON (default gpu-times.json)\n"
    "for `xfc tune --import FILE --db DB` (docs/tuning.md). --budget: seconds for all kernels\n"
    "(default 55); --rounds: search rounds over all candidates (default 3).\n";

bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
    const char *v = nullptr;
    char *end = nullptr;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--out" && (v = value())) {
      o.out = v;
    } else if (a == "--budget" && (v = value()) && (o.budgetSeconds = std::strtod(v, &end)) > 0 &&
               *end == 0) {
    } else if (a == "--rounds" && (v = value()) &&
               (o.searchRounds = int(std::strtol(v, &end, 10))) >= 2 && *end == 0 &&
               o.searchRounds <= 100) {
    } else {
      std::fprintf(stderr, "xf-gpu-timing: error: bad argument '%s'\n%s", a.c_str(), kUsage);
      return false;
    }
  }
  return true;
}

/// "GPU <name> | sm_<major><minor>", the key `--profile` keeps the GPU's ceilings under
/// (DeviceCeilings.cpp), and the capability alone.
bool describeGpu(std::string &name, std::string &capability) {
  int (*deviceGet)(int *, int) = nullptr;
  int (*getName)(char *, int, int) = nullptr;
  int (*attribute)(int *, int, int) = nullptr;
  int device = 0, major = 0, minor = 0;
  char text[256] = {};
  if (!xfrt::lookUpDriverFunction(deviceGet, "cuDeviceGet") ||
      !xfrt::lookUpDriverFunction(getName, "cuDeviceGetName") ||
      !xfrt::lookUpDriverFunction(attribute, "cuDeviceGetAttribute") ||
      deviceGet(&device, 0) != 0 || getName(text, int(sizeof text), device) != 0 ||
      attribute(&major, 75, device) != 0 || attribute(&minor, 76, device) != 0)
    return false;
  name = text;
  capability = "sm_" + std::to_string(major) + std::to_string(minor);
  return true;
}

/// What a kernel's rounds time: its candidates (the default first), then its baselines.
struct Timed {
  void *const *function; // per call; null where the export refused it (a baseline)
  const xf_timing_argument *argument;
  int64_t rows; // a baseline's length; 0: a candidate, timed at every length
  std::string refused;
};

/// A size of length `l` (XF_TIMING_ROWS, XF_TIMING_KEYS) or `v` itself.
int64_t sizeAt(int64_t v, int l) {
  return v == XF_TIMING_ROWS ? xf_timing.length[l] : v == XF_TIMING_KEYS ? xf_timing.keys[l] : v;
}

/// A kernel's device memories, and its arguments shaped for one length at a time.
class KernelBuffers {
public:
  xfrt::Status allocate(const xf_timing_kernel &k) {
    kernel = &k;
    uint32_t state = 12345;
    for (int i = 0; i < k.memories; ++i) {
      const xf_timing_memory &b = k.memory[i];
      const uint64_t count = uint64_t(b.elements), bytes = count * (b.bf16 ? 2 : 4);
      xfrt::Expected<xfrt::DeviceMemory> m = xfrt::DeviceMemory::allocate(bytes);
      if (!m)
        return m.status();
      std::vector<float> values(count);
      for (float &v : values) // small values: no overflow in any epilogue
        v = float(int((state = state * 1664525u + 1013904223u) >> 9) % 2001 - 1000) * 1e-4f;
      std::vector<uint16_t> halves;
      if (b.bf16)
        for (float v : values) {
          uint32_t bits;
          std::memcpy(&bits, &v, 4);
          halves.push_back(uint16_t(bits >> 16));
        }
      if (xfrt::Status s = b.bf16 ? m->upload(halves.data(), bytes) : m->upload(values.data(), bytes);
          !s)
        return s;
      memory.push_back(std::move(*m));
    }
    return xfrt::Status::success();
  }

  /// The output (the kernel's `output` argument: float32, dense from its memory's start) at
  /// length `l`: set to `value`, or read.
  xfrt::Status fillOutput(const Timed &t, float value, int l) {
    std::vector<float> v(outputElements(t, l), value);
    return memory[size_t(t.argument[kernel->output].memory)].upload(v.data(), v.size() * 4);
  }
  xfrt::Status readOutput(const Timed &t, std::vector<float> &out, int l) const {
    out.resize(outputElements(t, l));
    return memory[size_t(t.argument[kernel->output].memory)].download(out.data(), out.size() * 4);
  }

  /// One measurement's calls of `t` at length `l` (those whose most_rows admits it), each
  /// through Halide's argv entry; the first nonzero Halide return code, or 0.
  int call(const Timed &t, int l) {
    const void *interface = xfrt::deviceLinks().cudaDeviceInterface();
    for (int i = 0; i < kernel->arguments; ++i) {
      const xf_timing_argument &a = t.argument[i];
      if (a.memory < 0) {
        scalars[i] = int32_t(sizeAt(a.value, l));
        argv[i] = &scalars[i];
        continue;
      }
      const int elementBytes = kernel->memory[a.memory].bf16 ? 2 : 4;
      for (int d = 0; d < a.dimensions; ++d)
        dims[i][d] = {0, int32_t(sizeAt(a.dim[d].extent, l)), int32_t(a.dim[d].stride), 0};
      HalideBuffer &h = buffers[i];
      h = HalideBuffer{};
      h.device = reinterpret_cast<uint64_t>(memory[size_t(a.memory)].address()) +
                 uint64_t(a.offset * elementBytes);
      h.deviceInterface = interface;
      h.code = elementBytes == 2 ? 4 : 2, h.bits = uint8_t(8 * elementBytes), h.lanes = 1;
      h.dimensions = a.dimensions;
      h.dim = dims[i].data();
      argv[i] = &h;
    }
    for (int c = 0; c < kernel->calls; ++c) {
      const xf_timing_call &call = kernel->call[c];
      if (call.most_rows && xf_timing.length[l] > call.most_rows)
        continue;
      void *args[XF_TIMING_MAX_ARGUMENTS];
      for (int i = 0; i < call.arguments; ++i)
        args[i] = argv[call.argument[i]];
      if (int rc = reinterpret_cast<int (*)(void **)>(t.function[c])(args))
        return rc;
    }
    return 0;
  }

private:
  size_t outputElements(const Timed &t, int l) const {
    const xf_timing_argument &a = t.argument[kernel->output];
    size_t n = 1;
    for (int d = 0; d < a.dimensions; ++d)
      n *= size_t(sizeAt(a.dim[d].extent, l));
    return n;
  }

  const xf_timing_kernel *kernel = nullptr;
  std::vector<xfrt::DeviceMemory> memory;
  std::array<std::array<HalideDimension, XF_TIMING_MAX_DIMENSIONS>, XF_TIMING_MAX_ARGUMENTS> dims{};
  std::array<HalideBuffer, XF_TIMING_MAX_ARGUMENTS> buffers{};
  std::array<int32_t, XF_TIMING_MAX_ARGUMENTS> scalars{};
  std::array<void *, XF_TIMING_MAX_ARGUMENTS> argv{};
};

/// times[c][l]: candidate c's milliseconds a call at length l, one value per round.
using Times = std::vector<std::vector<std::vector<double>>>;

struct KernelRun {
  const xf_timing_kernel &k;
  std::vector<Timed> timed;
  KernelBuffers buffers;
  std::vector<int> calls;        // per length, calls per measurement
  std::vector<std::string> failure;     // per timed entry; "" where it runs
  std::vector<double> error_vs_default; // per timed entry: largest normwise error over lengths
  std::string error;             // the kernel could not be timed

  /// Whether timed entry `c` runs at length index `l`.
  bool timesAt(int c, int l) const {
    return timed[size_t(c)].rows == 0 || timed[size_t(c)].rows == xf_timing.length[l];
  }
};

/// One round over `order` (candidate indices): every candidate on every length, its
/// measurements read back at the end; false (and run.error) where a call or the events fail.
bool timeRound(KernelRun &run, const std::vector<int> &order, Times &times) {
  struct Pending {
    int c;
    size_t l;
    int from, to;
  };
  std::vector<Pending> pending;
  for (int c : order)
    for (size_t l = 0; l < run.calls.size(); ++l) {
      if (!run.timesAt(c, int(l)))
        continue;
      const int from = xfrt::deviceEventRecord();
      for (int i = 0; i < run.calls[l]; ++i)
        if (int rc = run.buffers.call(run.timed[size_t(c)], int(l)); rc) {
          run.error = (c < run.k.candidates ? "candidate " + std::to_string(c)
                                            : "baseline " + std::to_string(c - run.k.candidates)) +
                      " failed while timed (Halide error " + std::to_string(rc) + ")";
          return false;
        }
      const int to = xfrt::deviceEventRecord();
      if (from < 0 || to < 0) {
        run.error = "the CUDA driver records no events";
        return false;
      }
      pending.push_back({c, l, from, to});
    }
  for (const Pending &p : pending)
    times[size_t(p.c)][p.l].push_back(xfrt::deviceEventMicros(p.from, p.to) * 1e-3 /
                                      run.calls[p.l]);
  xfrt::deviceEventsReset(0);
  return true;
}

/// max |a - b| over max |ref|: a candidate's output against the default's (NaN: infinite).
double normwiseError(const std::vector<float> &a, const std::vector<float> &ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(ref[i]));
    diff = d == d ? std::max(diff, d) : INFINITY;
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  return diff == 0 ? 0 : diff / std::max(scale, 1e-30);
}

/// One call of candidate `c` at length `l`, its output (set to a sentinel first, so that one
/// left unwritten differs) read back into `out`; "" or why it failed.
std::string callAndRead(KernelRun &run, int c, int l, std::vector<float> &out) {
  const Timed &t = run.timed[size_t(c)];
  if (xfrt::Status s = run.buffers.fillOutput(t, 12345.0f, l); !s)
    return s.message();
  if (int rc = run.buffers.call(t, l); rc) {
    std::string why = xfrt::takeHalideError();
    return why.empty() ? "Halide error " + std::to_string(rc) : why;
  }
  xfrt::Status s = run.buffers.readOutput(t, out, l);
  return s ? "" : s.message();
}

/// Step 2: each candidate once per length, its output against the default's (as the CPU
/// worker checks its candidates, the bound 1e-4: a schedule changes only the summation
/// order; a failing or wrong candidate is dropped), then the calls per measurement from the
/// default's time.
bool warmUp(KernelRun &run) {
  const int n = int(run.timed.size());
  run.failure.assign(size_t(n), "");
  for (int c = 0; c < n; ++c)
    if (!run.timed[size_t(c)].function[0])
      run.failure[size_t(c)] = "not compiled: " + run.timed[size_t(c)].refused;
  run.error_vs_default.assign(size_t(n), 0);
  std::vector<float> reference, out;
  for (int l = 0; l < xf_timing.lengths && run.failure[0].empty(); ++l) {
    run.failure[0] = callAndRead(run, 0, l, reference);
    for (int c = 1; c < n && run.failure[0].empty(); ++c) {
      if (!run.failure[c].empty() || !run.timesAt(c, l))
        continue;
      run.failure[c] = callAndRead(run, c, l, out);
      const double e = run.failure[c].empty() ? normwiseError(out, reference) : 0;
      run.error_vs_default[c] = std::max(run.error_vs_default[c], e);
      if (!(e <= 1e-4)) {
        char why[120];
        std::snprintf(why, sizeof why, "wrong result: error %.3g against the default at %lld rows",
                      e, (long long)xf_timing.length[l]);
        run.failure[c] = why;
      }
    }
  }
  xfrt::synchronizeDevice();
  if (!run.failure[0].empty()) {
    run.error = "the default schedule failed: " + run.failure[0];
    return false;
  }
  run.calls.assign(size_t(xf_timing.lengths), 1);
  Times probe(size_t(n), std::vector<std::vector<double>>(size_t(xf_timing.lengths)));
  if (!timeRound(run, {0}, probe))
    return false;
  for (size_t l = 0; l < run.calls.size(); ++l) {
    const double micros = probe[0][l].empty() ? 0 : probe[0][l][0] * 1e3;
    run.calls[l] = micros > 0 ? int(std::clamp(std::ceil(kMeasureMicros / micros), 1.0,
                                               double(kMaxCalls)))
                              : kMaxCalls;
  }
  return true;
}

tuning::PairedRounds pairedOf(const Times &times, int dflt, int cand) {
  tuning::PairedRounds rounds;
  rounds.addBatch(times[size_t(dflt)], times[size_t(cand)]);
  return rounds;
}

std::string jsonNumber(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.6g", std::isfinite(v) ? v : 1e300);
  return text;
}

std::string jsonTimes(const std::vector<std::vector<double>> &perLength) {
  std::string s = "[";
  for (size_t l = 0; l < perLength.size(); ++l) {
    s += l ? ", [" : "[";
    for (size_t r = 0; r < perLength[l].size(); ++r) {
      char v[40];
      std::snprintf(v, sizeof v, "%s%.6g", r ? ", " : "", perLength[l][r]);
      s += v;
    }
    s += "]";
  }
  return s + "]";
}

/// Steps 1-4 for one kernel, within `deadline`; its JSON object.
std::string timeKernel(const xf_timing_kernel &k, Clock::time_point deadline,
                       const Options &o) {
  const Clock::time_point start = Clock::now();
  const auto searchEnd = start + (deadline - start) * 7 / 10;
  KernelRun run{k, {}, {}, {}, {}, {}, {}};
  for (int c = 0; c < k.candidates; ++c)
    run.timed.push_back({k.candidate[c].function, k.candidate[c].argument, 0, ""});
  for (int b = 0; b < k.baselines; ++b)
    run.timed.push_back({k.baseline[b].function, k.candidate[0].argument, k.baseline[b].rows,
                         k.baseline[b].refused ? k.baseline[b].refused : ""});
  const int n = int(run.timed.size());
  Times search(size_t(n), std::vector<std::vector<double>>(size_t(xf_timing.lengths)));
  std::string check;
  int finalist = 0;
  if (xfrt::Status s = run.buffers.allocate(k); !s)
    run.error = "device buffers: " + s.message();
  else if (warmUp(run)) {
    std::vector<int> live;
    for (int c = 0; c < n; ++c)
      if (run.failure[c].empty())
        live.push_back(c);
    for (int r = 0; r < o.searchRounds && run.error.empty() && (r < 2 || Clock::now() < searchEnd);
         ++r) {
      std::vector<int> order = live;
      if (r % 2)
        std::reverse(order.begin(), order.end());
      timeRound(run, order, search);
    }
    double best = 1;
    for (int c : live)
      if (c != 0 && c < k.candidates && run.error.empty()) { // a baseline is no finalist
        double ratio = pairedOf(search, 0, c).judge().ratio;
        if (ratio < best)
          best = ratio, finalist = c;
      }
    // Step 4: the finalist against the default, batch by batch, in alternating order.
    tuning::PairedRounds paired;
    size_t batches = 0;
    while (finalist && run.error.empty() && Clock::now() < deadline &&
           tuning::needsAnotherBatch(paired.judge(), batches)) {
      const bool candidateFirst = batches % 2 == 1;
      Times both(size_t(n), std::vector<std::vector<double>>(size_t(xf_timing.lengths)));
      std::vector<int> order = candidateFirst ? std::vector<int>{finalist, 0}
                                              : std::vector<int>{0, finalist};
      for (int r = 0; r < kCheckRounds && run.error.empty(); ++r)
        timeRound(run, order, both);
      if (!run.error.empty())
        break;
      paired.addBatch(both[0], both[size_t(finalist)]);
      check += std::string(batches ? ",\n" : "") + "        {\"candidate_first\": " +
               (candidateFirst ? "true" : "false") + ", \"default_ms\": " + jsonTimes(both[0]) +
               ", \"candidate_ms\": " + jsonTimes(both[size_t(finalist)]) + "}";
      ++batches;
    }
  }
  char head[160];
  std::snprintf(head, sizeof head, "    {\"name\": %s, \"kernel\": %s, \"seconds\": %.3f,\n",
                xfrt::quoteJson(k.name).c_str(), "%s",
                std::chrono::duration<double>(Clock::now() - start).count());
  std::string json = head;
  json.replace(json.find("%s"), 2, xfrt::quoteJson(k.signature));
  json += "      \"error\": " + xfrt::quoteJson(run.error) + ",\n      \"calls\": [";
  for (size_t l = 0; l < run.calls.size(); ++l)
    json += (l ? ", " : "") + std::to_string(run.calls[l]);
  json += "],\n      \"candidates\": [\n";
  auto checked = [&](int c) {
    return ", \"failure\": " +
           xfrt::quoteJson(size_t(c) < run.failure.size() ? run.failure[c] : "") +
           ", \"error_vs_default\": " +
           jsonNumber(size_t(c) < run.error_vs_default.size() ? run.error_vs_default[c] : 0) +
           ", \"search_ms\": " + jsonTimes(search[size_t(c)]) + "}";
  };
  for (int c = 0; c < k.candidates; ++c)
    json += std::string(c ? ",\n" : "") +
            "        {\"schedule\": " + xfrt::quoteJson(k.candidate[c].schedule) + checked(c);
  json += "],\n      \"baselines\": [\n";
  for (int b = 0; b < k.baselines; ++b)
    json += std::string(b ? ",\n" : "") +
            "        {\"baseline\": " + xfrt::quoteJson(k.baseline[b].name) +
            ", \"rows\": " + std::to_string(k.baseline[b].rows) + checked(k.candidates + b);
  json += "],\n      \"finalist\": " + std::to_string(finalist) + ",\n      \"final_check\": [\n" +
          check + "]}";
  return json;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o))
    return 2;
  if (xfrt::Status s = xfrt::checkCudaDevice(); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  halide_set_error_handler(&xfrt::halideErrorHandler);
  std::string name, capability;
  if (!describeGpu(name, capability)) {
    std::fprintf(stderr, "error: the CUDA driver does not name the GPU or its capability\n");
    return 1;
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(o.budgetSeconds));
  std::string head =
      "{\"format\": \"xf-gpu-times\", \"version\": 1, \"xf_version\": " +
      xfrt::quoteJson(xf_timing.xf_version) + ", \"target\": " + xfrt::quoteJson(xf_timing.target) +
      ",\n  \"gpu\": {\"name\": " + xfrt::quoteJson(name) +
      ", \"capability\": " + xfrt::quoteJson(capability) +
      "}, \"driver\": " + xfrt::quoteJson(xfrt::driverLibraryName()) +
      ", \"budget_s\": " + std::to_string(o.budgetSeconds) +
      ",\n  \"baselines_left_out\": " + xfrt::quoteJson(xf_timing.baselines_left_out) +
      ",\n  \"lengths\": [";
  for (int l = 0; l < xf_timing.lengths; ++l)
    head += (l ? ", " : "") + std::to_string(xf_timing.length[l]);
  head += "],\n  \"kernels\": [\n";
  std::string kernels;
  int timed = 0;
  const std::string empty = head + "]}\n"; // what a run cut before its first kernel leaves
  if (xfrt::Status s = xfrt::writeFileAtomically(o.out, empty.data(), empty.size()); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  for (int i = 0; i < xf_timing.kernels; ++i) {
    const auto now = Clock::now();
    if (now >= deadline)
      break;
    const auto share = (deadline - now) / (xf_timing.kernels - i);
    kernels += std::string(i ? ",\n" : "") + timeKernel(xf_timing.kernel[i], now + share, o);
    ++timed;
    const std::string text = head + kernels + "]}\n";
    if (xfrt::Status s = xfrt::writeFileAtomically(o.out, text.data(), text.size()); !s) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    std::printf("xf-gpu-timing: %s (%s): %d candidates, %d baselines\n", xf_timing.kernel[i].name,
                xf_timing.kernel[i].signature, xf_timing.kernel[i].candidates,
                xf_timing.kernel[i].baselines);
    std::fflush(stdout);
  }
  const double spent = o.budgetSeconds - std::chrono::duration<double>(deadline - Clock::now()).count();
  std::printf("xf-gpu-timing: %d of %d kernels timed on %s (%s) in %.1f s of %.0f; %s\n", timed,
              xf_timing.kernels, name.c_str(), capability.c_str(), spent, o.budgetSeconds,
              o.out.c_str());
  return timed == xf_timing.kernels ? 0 : 3;
}
