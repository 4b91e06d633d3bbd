//===- Reference.cpp - float64 reference GEMM and attention ---------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>

using namespace mlir::xf;

namespace xftune {
namespace {

double activate(GemmEpilogue epilogue, double a) {
  switch (epilogue) {
  case GemmEpilogue::None:
    return a;
  case GemmEpilogue::Relu:
    return std::max(a, 0.0);
  case GemmEpilogue::GeluTanh:
    return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
  case GemmEpilogue::GeluErf:
    return 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
  case GemmEpilogue::Silu:
  case GemmEpilogue::SwiGlu: // the gate; the caller multiplies by up
    return a / (1 + std::exp(-a));
  }
  return a;
}

} // namespace

std::vector<int> sampleRows(int rows) {
  std::vector<int> sample;
  constexpr int between = 6;
  sample.push_back(0);
  for (int i = 1; i <= between; ++i)
    sample.push_back(int(int64_t(rows - 1) * i / (between + 1)));
  sample.push_back(rows - 1);
  sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
  return sample;
}

std::vector<double> referenceGemm(const GemmKernelSpec &spec, const FloatBuffer &x,
                                  const FloatBuffer &weight, const FloatBuffer &bias,
                                  const FloatBuffer &residual, const std::vector<int> &rows) {
  const bool gated = spec.epilogue == GemmEpilogue::SwiGlu;
  const int K = int(spec.K), N = int(spec.N), columns = gated ? 2 * N : N;
  std::vector<double> out;
  out.reserve(rows.size() * N);
  std::vector<double> acc(columns);
  for (int m : rows) {
    std::fill(acc.begin(), acc.end(), 0.0);
    // k outer for [K, N] so the inner loop walks a weight row contiguously.
    if (spec.transposeWeight) {
      for (int n = 0; n < columns; ++n) {
        double sum = 0;
        for (int k = 0; k < K; ++k)
          sum += double(x(k, m)) * weight(k, n);
        acc[n] = sum;
      }
    } else {
      for (int k = 0; k < K; ++k) {
        const double xk = x(k, m);
        for (int n = 0; n < columns; ++n)
          acc[n] += xk * weight(n, k);
      }
    }
    if (spec.hasBias)
      for (int n = 0; n < columns; ++n)
        acc[n] += bias(n);
    for (int n = 0; n < N; ++n) {
      double value = activate(spec.epilogue, acc[n]);
      if (gated) // silu(gate) ⊙ up
        value *= acc[N + n];
      if (spec.hasResidual)
        value += residual(n, m);
      out.push_back(value);
    }
  }
  return out;
}

std::vector<double> referenceAttention(const AttentionKernelSpec &spec, const FloatBuffer &q,
                                       const FloatBuffer &k, const FloatBuffer &v,
                                       const std::vector<int> &rows) {
  const int H = int(spec.heads), dK = int(spec.dK), dV = int(spec.dV);
  const int group = H / int(spec.keyValueHeads()); // query heads per K/V head
  const int M = q.height(), Mz = k.height();
  std::vector<double> out(rows.size() * size_t(H) * dV, 0.0);
  std::vector<double> score(Mz), o(dV);
  // Rotary positions (HalideKernels.h): a head's feature pairs, adjacent
  // (2i, 2i + 1) or halves (i, i + dK/2), turned by position·base^(−2i/dK).
  auto rotated = [&](const FloatBuffer &x, int row, int head, int64_t position) {
    std::vector<double> r(dK);
    for (int c = 0; c < dK; ++c)
      r[c] = x(head * dK + c, row);
    if (spec.rope == AttentionKernelSpec::Rope::None)
      return r;
    const bool adjacent = spec.rope == AttentionKernelSpec::Rope::Adjacent;
    for (int i = 0; i < dK / 2; ++i) {
      const double angle = double(position) * std::pow(spec.ropeBase, -2.0 * i / dK);
      const int ia = adjacent ? 2 * i : i, ib = adjacent ? 2 * i + 1 : i + dK / 2;
      const double a = x(head * dK + ia, row), b = x(head * dK + ib, row);
      r[ia] = a * std::cos(angle) - b * std::sin(angle);
      r[ib] = a * std::sin(angle) + b * std::cos(angle);
    }
    return r;
  };
  for (size_t r = 0; r < rows.size(); ++r) {
    const int t = rows[r];
    // Keys s <= t + (Mz - M) are visible when causal (none when that is < 0).
    const int64_t visible = spec.causal ? std::min<int64_t>(Mz, int64_t(t) + (Mz - M) + 1) : Mz;
    if (visible <= 0)
      continue;
    for (int h = 0; h < H; ++h) {
      double maxScore = -INFINITY;
      const std::vector<double> query = rotated(q, t, h, int64_t(t) + (Mz - M));
      for (int s = 0; s < visible; ++s) {
        // Keys arriving rotated (ropeKeys false) are taken as they are: position 0.
        const std::vector<double> key = rotated(k, s, h / group, spec.ropeKeys ? s : 0);
        double dot = 0;
        for (int c = 0; c < dK; ++c)
          dot += query[c] * key[c];
        score[s] = dot * spec.scale;
        maxScore = std::max(maxScore, score[s]);
      }
      double sum = 0;
      std::fill(o.begin(), o.end(), 0.0);
      for (int s = 0; s < visible; ++s) {
        const double p = std::exp(score[s] - maxScore);
        sum += p;
        for (int d = 0; d < dV; ++d)
          o[d] += p * v((h / group) * dV + d, s);
      }
      for (int d = 0; d < dV; ++d)
        out[(r * H + h) * dV + d] = o[d] / sum;
    }
  }
  return out;
}

} // namespace xftune
