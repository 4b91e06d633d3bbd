//===- MachineLoad.cpp - is this machine quiet enough to measure? --------===//

#include "xf/Tuning/MachineLoad.h"
#include "xfrt/MachinePeak.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir::xf::tuning;

std::optional<double> mlir::xf::tuning::readLoadAverage() {
  const char *override = std::getenv("XF_TUNE_LOADAVG_FILE");
  double load = xfrt::loadAverage(override && *override ? override : "/proc/loadavg");
  if (load < 0)
    return std::nullopt;
  return load;
}

double LoadWatch::maxOtherLoad() const { return std::max(1.0, 0.25 * double(cores)); }

void LoadWatch::noteBefore(std::optional<double> load) {
  // xfc itself was running: it has just compiled the model.
  if (load)
    before = std::max(0.0, *load - 1.0);
}

void LoadWatch::noteDuring(std::optional<double> load) {
  if (load)
    during = std::max(during, std::max(0.0, *load - double(std::min<int64_t>(ownThreads, cores))));
}

void LoadWatch::noteNoise(const std::string &kernel, double n) {
  if (n > noise)
    noise = n, noisiest = kernel;
}

std::optional<std::string> LoadWatch::warning() const {
  const bool loaded = before >= maxOtherLoad() || during >= maxOtherLoad();
  if (!loaded && noise <= kMaxNoise)
    return std::nullopt;
  std::string why;
  if (before >= 0)
    why += llvm::formatv("other load {0:f1} before", before).str();
  if (during >= 0)
    why += llvm::formatv("{0}up to {1:f1} during", why.empty() ? "other load " : ", ", during).str();
  why += llvm::formatv(" the run on {0} cores (unreliable from {1:f1})", cores, maxOtherLoad()).str();
  if (noise > 0)
    why += llvm::formatv("; A/B noise up to {0:f1} % ({1}, unreliable above {2:f0} %)",
                         100 * noise, noisiest, 100 * kMaxNoise)
               .str();
  return "warning: measurements are unreliable on this machine now: " + why +
         "; more kernels keep the default than a quiet machine would (tune when it is quiet)";
}
