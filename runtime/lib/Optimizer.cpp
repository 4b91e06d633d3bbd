//===- Optimizer.cpp - SGD, AdamW, learning-rate schedule, clipping -------===//
//
// Arithmetic in float32 on the master weights, with the per-step scalars (bias
// corrections, learning rate, clipping factor) in double, as the oracle's float64 update
// rounded once per element.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Optimizer.h"

#include <algorithm>
#include <cmath>

namespace xfrt {

double LearningRateSchedule::at(int64_t step) const {
  if (step < warmup)
    return peak * double(step + 1) / double(warmup);
  double progress =
      std::min(1.0, double(step - warmup) / double(std::max<int64_t>(1, total - warmup)));
  return floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * progress));
}

double globalGradientNorm(const std::vector<TrainableTensor> &tensors) {
  double sum = 0;
  for (const TrainableTensor &t : tensors)
    for (size_t i = 0; i < t.size; ++i)
      sum += double(t.grad[i]) * double(t.grad[i]);
  return std::sqrt(sum);
}

double clipFactor(double norm, double maxNorm) {
  return maxNorm > 0 && norm > maxNorm ? maxNorm / (norm + 1e-6) : 1.0;
}

void sgdStep(const std::vector<TrainableTensor> &tensors, double lr, double gradScale) {
  float step = float(lr * gradScale);
  for (const TrainableTensor &t : tensors)
    for (size_t i = 0; i < t.size; ++i)
      t.weights[i] -= step * t.grad[i];
}

AdamW::AdamW(const std::vector<TrainableTensor> &tensors, AdamWOptions options)
    : options_(options) {
  for (const TrainableTensor &t : tensors) {
    m_.emplace_back(t.size, 0.0f);
    v_.emplace_back(t.size, 0.0f);
  }
}

void AdamW::restore(const std::vector<const float *> &moments, int64_t steps) {
  for (size_t k = 0; k < m_.size() && 2 * k + 1 < moments.size(); ++k) {
    std::copy(moments[2 * k], moments[2 * k] + m_[k].size(), m_[k].begin());
    std::copy(moments[2 * k + 1], moments[2 * k + 1] + v_[k].size(), v_[k].begin());
  }
  t_ = steps;
}

void AdamW::step(const std::vector<TrainableTensor> &tensors, double lr, double gradScale) {
  ++t_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  // m̂/(√v̂ + ε) = (m/c1) / (√(v/c2) + ε) with c = 1 − βᵗ.
  const float c1 = float(1.0 - std::pow(b1, double(t_)));
  const float sqrtC2 = float(std::sqrt(1.0 - std::pow(b2, double(t_))));
  const float eps = float(options_.epsilon), rate = float(lr);
  const float keep = float(1.0 - lr * options_.weightDecay), scale = float(gradScale);
  const float fb1 = float(b1), fb2 = float(b2), g1 = float(1.0 - b1), g2 = float(1.0 - b2);
  for (size_t k = 0; k < tensors.size(); ++k) {
    const TrainableTensor &t = tensors[k];
    float *m = m_[k].data(), *v = v_[k].data();
    const float decay = t.decays ? keep : 1.0f;
    for (size_t i = 0; i < t.size; ++i) {
      float g = t.grad[i] * scale;
      m[i] = fb1 * m[i] + g1 * g;
      v[i] = fb2 * v[i] + g2 * g * g;
      float update = (m[i] / c1) / (std::sqrt(v[i]) / sqrtC2 + eps);
      t.weights[i] = t.weights[i] * decay - rate * update;
    }
  }
}

} // namespace xfrt
