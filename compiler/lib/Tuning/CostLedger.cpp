//===- CostLedger.cpp - load-independent costs of measured schedules ------===//

#include "xf/Tuning/CostLedger.h"

#include <algorithm>
#include <cmath>

using namespace mlir::xf::tuning;

namespace {
// A contender's mean follows at most this many measurements, so that a
// slow drift of the machine (thermal, other tenants) is still followed.
constexpr size_t kMaxSamples = 16;
} // namespace

CostLedger::CostLedger(double defaultCost) : defaultCost_(defaultCost > 0 ? defaultCost : 0) {}

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

void CostLedger::record(size_t id, double c, size_t samples) {
  if (!(c > 0) || !std::isfinite(c) || samples == 0)
    return;
  auto it = std::find_if(contenders_.begin(), contenders_.end(),
                         [&](const Contender &x) { return x.id == id; });
  if (it != contenders_.end()) {
    if (it->samples >= kMaxSamples) {
      it->sum -= it->mean();
      --it->samples;
    }
    it->sum += c * double(samples);
    it->samples += samples;
    return;
  }
  Contender fresh{id, c * double(samples), samples};
  if (contenders_.size() < kContenders) {
    contenders_.push_back(fresh);
    return;
  }
  auto worst =
      std::max_element(contenders_.begin(), contenders_.end(),
                       [](const Contender &a, const Contender &b) { return a.mean() < b.mean(); });
  if (c < worst->mean())
    *worst = fresh;
}

std::optional<size_t> CostLedger::best() const {
  const Contender *best = nullptr;
  bool confirmed = std::any_of(contenders_.begin(), contenders_.end(),
                               [](const Contender &x) { return x.samples >= 2; });
  for (const Contender &x : contenders_)
    if ((!confirmed || x.samples >= 2) && (!best || x.mean() < best->mean()))
      best = &x;
  if (!best)
    return std::nullopt;
  return best->id;
}

double CostLedger::bestCost() const {
  std::optional<size_t> id = best();
  for (const Contender &x : contenders_)
    if (id && x.id == *id)
      return x.mean();
  return 0;
}

std::vector<size_t> CostLedger::contenders() const {
  std::vector<Contender> sorted = contenders_;
  std::sort(sorted.begin(), sorted.end(),
            [](const Contender &a, const Contender &b) { return a.mean() < b.mean(); });
  std::vector<size_t> ids;
  for (const Contender &x : sorted)
    ids.push_back(x.id);
  return ids;
}

std::vector<size_t> CostLedger::settle() {
  std::vector<size_t> ids = contenders();
  contenders_.clear();
  return ids;
}
