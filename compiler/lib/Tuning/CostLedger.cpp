//===- CostLedger.cpp - load-independent costs of measured schedules ------===//

#include "xf/Tuning/CostLedger.h"

#include <cmath>

using namespace mlir::xf::tuning;

CostLedger::CostLedger(double defaultCost, double bestCost, size_t bestSamples)
    : defaultCost_(defaultCost > 0 ? defaultCost : 0), bestCost_(bestCost > 0 ? bestCost : 0),
      bestSamples_(bestCost > 0 ? bestSamples : 0) {}

bool CostLedger::beginBatch(double defaultRaw) {
  if (!(defaultRaw > 0) || !std::isfinite(defaultRaw)) {
    defaultRaw_ = 0;
    return false;
  }
  defaultRaw_ = defaultRaw;
  if (defaultCost_ <= 0)
    defaultCost_ = defaultRaw;
  return true;
}

double CostLedger::cost(double raw) const {
  return defaultRaw_ > 0 ? raw / defaultRaw_ * defaultCost_ : raw;
}

void CostLedger::remeasureBest(double raw) {
  if (!hasBest() || defaultRaw_ <= 0)
    return;
  // Running mean; the sample count is capped so that a slow drift of the
  // machine (thermal, other tenants) is still followed.
  constexpr size_t kMaxSamples = 16;
  if (bestSamples_ < kMaxSamples)
    ++bestSamples_;
  bestCost_ += (cost(raw) - bestCost_) / double(bestSamples_);
}

bool CostLedger::offer(double c) {
  if (!(c > 0) || !std::isfinite(c))
    return false;
  if (hasBest() && c >= bestCost_)
    return false;
  bestCost_ = c, bestSamples_ = 1;
  return true;
}
