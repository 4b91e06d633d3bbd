//===- Sampling.cpp - The next token from a row of logits -----------------===//
#include "xfrt/Sampling.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xfrt {

int64_t argmaxToken(const float *row, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (!std::isnan(row[i]) && (std::isnan(row[best]) || row[i] > row[best]))
      best = i;
  return best;
}

int64_t sampleToken(const float *row, int64_t n, const SamplingOptions &o, Pcg32 &rng) {
  if (o.temperature <= 0 || o.topK == 1)
    return argmaxToken(row, n);
  // 1. Candidates with a finite logit, best first (ties to the lower id).
  std::vector<int64_t> ids;
  ids.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(row[i]))
      ids.push_back(i);
  if (ids.empty())
    return argmaxToken(row, n);
  auto better = [row](int64_t a, int64_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; };
  bool needOrder = o.topK > 0 || o.topP < 1;
  if (o.topK > 0 && o.topK < int64_t(ids.size())) {
    std::partial_sort(ids.begin(), ids.begin() + o.topK, ids.end(), better);
    ids.resize(size_t(o.topK));
  } else if (needOrder) {
    std::sort(ids.begin(), ids.end(), better);
  }
  // 2. Unnormalized probabilities.
  double top = -INFINITY;
  for (int64_t i : ids)
    top = std::max(top, double(row[i]));
  std::vector<double> q(ids.size());
  double total = 0;
  for (size_t j = 0; j < ids.size(); ++j)
    total += q[j] = std::exp((double(row[ids[j]]) - top) / o.temperature);
  // 3. Nucleus: ids are best first here, so q is non-increasing.
  if (o.topP < 1) {
    double want = o.topP * total, sum = 0;
    size_t keep = 0;
    while (keep < ids.size() && (keep == 0 || sum < want))
      sum += q[keep++];
    ids.resize(keep);
    q.resize(keep);
  }
  // 4. Inverse CDF over the kept ids in increasing order.
  if (needOrder) {
    std::vector<size_t> order(ids.size());
    for (size_t j = 0; j < order.size(); ++j)
      order[j] = j;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
    std::vector<int64_t> sortedIds(ids.size());
    std::vector<double> sortedQ(ids.size());
    for (size_t j = 0; j < order.size(); ++j)
      sortedIds[j] = ids[order[j]], sortedQ[j] = q[order[j]];
    ids.swap(sortedIds);
    q.swap(sortedQ);
  }
  total = 0;
  for (double x : q)
    total += x;
  double u = rng.nextOpenUnit() * total, cumulative = 0;
  for (size_t j = 0; j < ids.size(); ++j) {
    cumulative += q[j];
    if (cumulative > u)
      return ids[j];
  }
  return ids.back();
}

} // namespace xfrt
