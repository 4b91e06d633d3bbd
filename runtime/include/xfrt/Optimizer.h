//===- Optimizer.h - Parameter updates for training (issue 15) --*- C++ -*-===//
//
// The updates a trainer applies to float32 master weights after each step's gradients:
// the paper's plain gradient step, AdamW (decoupled weight decay, torch.optim.AdamW's
// order), the warm-up + cosine learning rate and clipping by the global gradient norm.
// Equations: docs/training.md; the float64 oracle: test/reference/training.py.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_OPTIMIZER_H
#define XFRT_OPTIMIZER_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xfrt {

/// One trainable tensor: its float32 master weights, this step's gradient, and whether
/// weight decay applies (matrices: GEMM weights and embedding tables; not biases or gains).
struct TrainableTensor {
  float *weights;
  const float *grad;
  size_t size;
  bool decays;
};

/// Linear warm-up to `peak` over `warmup` steps, then cosine decay to `floor` at step
/// `total` (constant after). Steps count from 0.
struct LearningRateSchedule {
  double peak = 1e-3, floor = 0.0;
  int64_t warmup = 0, total = 1;
  double at(int64_t step) const;
};

/// ‖g‖₂ over every tensor's gradient together (accumulated in double).
double globalGradientNorm(const std::vector<TrainableTensor> &tensors);

/// The factor clipping multiplies every gradient by: max_norm / (norm + 1e-6) when
/// norm > max_norm > 0, else 1 (torch.nn.utils.clip_grad_norm_).
double clipFactor(double norm, double maxNorm);

/// θ ← θ − η·s·g: the paper's step (s: the clipping factor).
void sgdStep(const std::vector<TrainableTensor> &tensors, double lr, double gradScale = 1.0);

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weightDecay = 0.0;
};

/// AdamW with float32 moments per tensor. step() takes the learning rate of this step and
/// the clipping factor applied to the gradients on the fly.
class AdamW {
public:
  AdamW(const std::vector<TrainableTensor> &tensors, AdamWOptions options);
  /// Steps taken so far (t in the bias corrections is steps() after the call).
  int64_t steps() const { return t_; }
  void step(const std::vector<TrainableTensor> &tensors, double lr, double gradScale = 1.0);
  /// Tensor k's moments, for a trainer's state file; restore() sets them all (m and v
  /// of each tensor in turn, each of the tensor's size) and the steps taken.
  const float *firstMoment(size_t k) const { return m_[k].data(); }
  const float *secondMoment(size_t k) const { return v_[k].data(); }
  void restore(const std::vector<const float *> &moments, int64_t steps);

private:
  AdamWOptions options_;
  int64_t t_ = 0;
  std::vector<std::vector<float>> m_, v_;
};

} // namespace xfrt

#endif // XFRT_OPTIMIZER_H
