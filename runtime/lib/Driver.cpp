//===- Driver.cpp - main() of generated executables, as a function --------===//
//
// manifest -> options -> weights -> xf_prepare -> scratch -> xf_forward (x repeat) -> outputs.
// Everything the user controls is validated before the generated code sees it.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Driver.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Cli.h"
#include "xfrt/Manifest.h"
#include "xfrt/Npy.h"
#include "xfrt/Profile.h"
#include "xfrt/Weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace xfrt {

std::vector<int64_t> topIndices(const float *row, int64_t n, int k) {
  auto better = [row](int64_t a, int64_t b) {
    float x = row[a], y = row[b];
    if (std::isnan(x) != std::isnan(y))
      return std::isnan(y);
    if (!std::isnan(x) && x != y)
      return x > y;
    return a < b;
  };
  std::vector<int64_t> best;
  for (int64_t i = 0; i < n; ++i) {
    auto at = std::upper_bound(best.begin(), best.end(), i, better);
    if (at - best.begin() < k) {
      best.insert(at, i);
      if (int64_t(best.size()) > k)
        best.pop_back();
    }
  }
  return best;
}

namespace {

int report(const std::string &message, int code) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return code;
}

int usageError(const std::string &message, const std::string &program, const Manifest *m) {
  std::fprintf(stderr, "error: %s\n\n%s", message.c_str(), usageText(program, m).c_str());
  return 2;
}

struct Sequences {
  std::vector<int32_t> tokens, source;
};

// Runs the model and writes what the options ask for; returns the exit code.
int runForward(const Options &o, const Manifest &m, const ModelAbi &abi, WeightSet &weights,
               const Sequences &seq) {
  std::vector<AlignedBuffer> derived;
  std::vector<void *> derivedPtrs;
  for (size_t j = 0; j < m.derivedBytes.size(); ++j) {
    Expected<AlignedBuffer> b = AlignedBuffer::allocate(uint64_t(m.derivedBytes[j]));
    if (!b)
      return report("derived buffer " + std::to_string(j) + ": " + b.message(), 1);
    derivedPtrs.push_back(b->data());
    derived.push_back(b.take());
  }
  std::vector<void *> params(weights.params.begin(), weights.params.end());
  // Never hand the generated code a null array, even for a model without parameters.
  params.push_back(nullptr);
  derivedPtrs.push_back(nullptr);
  abi.prepare(params.data(), derivedPtrs.data());

  int64_t l = int64_t(seq.tokens.size()), lz = int64_t(seq.source.size());
  int64_t scratchBytes = abi.scratchBytes(l, lz);
  if (scratchBytes < 0)
    return report("xf_scratch_bytes(" + std::to_string(l) + ", " + std::to_string(lz) +
                      ") returned " + std::to_string(scratchBytes),
                  1);
  Expected<AlignedBuffer> scratch = AlignedBuffer::allocate(uint64_t(scratchBytes));
  if (!scratch)
    return report("scratch: " + scratch.message(), 1);
  int64_t outCount;
  uint64_t outBytes;
  if (!checkedMul(l, m.dOut, outCount) ||
      !checkedMul(uint64_t(outCount), uint64_t(sizeof(float)), outBytes))
    return report("output of " + std::to_string(l) + " x " + std::to_string(m.dOut) +
                      " floats is too large",
                  1);
  Expected<AlignedBuffer> out = AlignedBuffer::allocate(outBytes);
  if (!out)
    return report("output: " + out.message(), 1);

  int runs = o.repeat > 0 ? o.repeat : 1;
  bool profiling = o.profile || !o.traceOut.empty();
  if (profiling)
    profileStart(m.kernels.size());
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    int32_t rc = abi.forward(params.data(), derivedPtrs.data(), seq.tokens.data(), l,
                             lz ? seq.source.data() : nullptr, lz, out->floats(), scratch->data());
    auto stop = std::chrono::steady_clock::now();
    if (rc != 0)
      return report("xf_forward failed with code " + std::to_string(rc), 1);
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  if (profiling) {
    profileStop();
    if (o.profile)
      std::fprintf(stderr, "%s", profileTable(m, l, lz, runs).c_str());
    if (!o.traceOut.empty())
      if (Status s = writeTrace(o.traceOut, m); !s)
        return report(s.message(), 1);
  }
  if (o.repeat > 0) {
    std::sort(ms.begin(), ms.end());
    double median =
        ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    std::fprintf(stderr, "%s: l=%lld l_z=%lld threads=%d runs=%d min %.3f ms median %.3f ms\n",
                 m.model.c_str(), (long long)l, (long long)lz, o.threads, runs, ms.front(), median);
  }

  const std::string &outPath = m.outputIsLogits ? o.logitsOut : o.hiddenOut;
  if (!outPath.empty())
    if (Status s = writeNpy(outPath, out->floats(), l, m.dOut); !s)
      return report(s.message(), 1);
  if (o.print) {
    const float *last = out->floats() + (l - 1) * m.dOut;
    std::vector<int64_t> top = topIndices(last, m.dOut, 5);
    std::string ids = "top5", values = "top5_values";
    for (int64_t i : top) {
      ids += " " + std::to_string(i);
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.6g", double(last[i]));
      values += buf;
    }
    std::printf("%s\n%s\n", ids.c_str(), values.c_str());
  }
  return 0;
}

} // namespace

int runMain(int argc, const char *const *argv, const ModelAbi &abi) {
  std::string program = argc > 0 && argv[0] ? argv[0] : "xf-model";
  Expected<Manifest> manifest = parseManifest(abi.manifest ? abi.manifest : "");
  if (!manifest)
    return report(manifest.message(), 1);
  const Manifest &m = *manifest;

  Expected<Options> parsed = parseCommandLine(argc, argv);
  if (!parsed)
    return usageError(parsed.message(), program, &m);
  const Options &o = *parsed;
  if (o.help) {
    std::fputs(usageText(program, &m).c_str(), stdout);
    return 0;
  }
  if (Status s = checkOptions(o, m); !s)
    return usageError(s.message(), program, &m);
  Sequences seq;
  if (o.haveTokens) {
    Expected<std::vector<int32_t>> t = parseTokenList(o.tokens, "--tokens", m);
    if (!t)
      return usageError(t.message(), program, &m);
    seq.tokens = t.take();
  }
  if (o.haveSourceTokens) {
    Expected<std::vector<int32_t>> t = parseTokenList(o.sourceTokens, "--source-tokens", m);
    if (!t)
      return usageError(t.message(), program, &m);
    seq.source = t.take();
  }

  if (o.threads > 0) {
    if (abi.setNumThreads)
      abi.setNumThreads(o.threads);
    else
      std::fprintf(stderr, "warning: --threads ignored: no halide_set_num_threads linked in\n");
  }

  Expected<WeightSet> weights =
      o.randomWeights ? randomWeights(o.seed, m) : loadWeights(o.weights, m);
  if (!weights)
    return report(weights.message(), 1);
  if (!o.saveWeights.empty())
    if (Status s = saveWeights(o.saveWeights, m, *weights); !s)
      return report(s.message(), 1);
  if (!o.haveTokens)
    return 0;
  return runForward(o, m, abi, *weights, seq);
}

} // namespace xfrt
