//===- Attention.cpp - Alg. 4 per head, grouped K/V, rotary positions -------===//

#include "Semantics.h"

#include <algorithm>
#include <cmath>

using namespace mlir::xf::interp;

/// Query head h reads columns h·d_k.. of Q and key/value head g = h / (H/H_kv).
/// Causal: query t sees keys t' ≤ t + (ℓ_z − ℓ).
Result mlir::xf::interp::attention(const Tensor &q, const Tensor &k, const Tensor &v,
                                   const AttentionShape &s) {
  const int64_t H = s.heads, Hkv = s.kvHeads;
  if (q.shape.size() != 2 || k.shape.size() != 2 || v.shape.size() != 2 || H <= 0 || Hkv <= 0 ||
      H % Hkv || q.cols() % H || k.cols() % Hkv || v.cols() % Hkv ||
      q.cols() / H != k.cols() / Hkv || k.rows() != v.rows() || (s.causal && k.rows() < q.rows()))
    return evalError("attention over Q " + shapeText(q) + ", K " + shapeText(k) + ", V " +
                     shapeText(v) + " with " + llvm::Twine(H) + " heads, " + llvm::Twine(Hkv) +
                     " key/value heads");
  const int64_t l = q.rows(), lz = k.rows(), dk = q.cols() / H, dv = v.cols() / Hkv;
  const double scale = s.scale ? *s.scale : 1.0 / std::sqrt(double(dk));
  Tensor out({l, H * dv});
  std::vector<double> scores(lz);
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / (H / Hkv);
    for (int64_t t = 0; t < l; ++t) {
      const int64_t visible = s.causal ? t + (lz - l) + 1 : lz;
      const double *qt = q.row(t) + h * dk;
      double top = -INFINITY;
      for (int64_t u = 0; u < visible; ++u) {
        const double *ku = k.row(u) + g * dk;
        double dot = 0;
        for (int64_t c = 0; c < dk; ++c)
          dot += qt[c] * ku[c];
        scores[u] = scale * dot;
        top = std::max(top, scores[u]);
      }
      double sum = 0;
      for (int64_t u = 0; u < visible; ++u)
        sum += scores[u] = std::exp(scores[u] - top);
      double *y = out.row(t) + h * dv;
      for (int64_t u = 0; u < visible; ++u) {
        const double *vu = v.row(u) + g * dv, p = scores[u] / sum;
        for (int64_t c = 0; c < dv; ++c)
          y[c] += p * vu[c];
      }
    }
  }
  return out;
}

/// Pair i of each head turns by p·base^(−2i/d); pairs (2i, 2i+1) or (i, i+d/2).
Result mlir::xf::interp::rope(const Tensor &x, int64_t heads, bool adjacentPairs, double base,
                              int64_t firstPosition) {
  if (x.shape.size() != 2 || heads <= 0 || x.cols() % heads || (x.cols() / heads) % 2)
    return evalError("rotary positions of " + shapeText(x) + " in " + llvm::Twine(heads) +
                     " heads");
  const int64_t d = x.cols() / heads;
  Tensor r = x;
  for (int64_t t = 0; t < x.rows(); ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d / 2; ++i) {
        double angle = double(firstPosition + t) * std::pow(base, -2.0 * double(i) / double(d));
        int64_t ia = h * d + (adjacentPairs ? 2 * i : i);
        int64_t ib = h * d + (adjacentPairs ? 2 * i + 1 : i + d / 2);
        double a = x.row(t)[ia], b = x.row(t)[ib];
        r.row(t)[ia] = a * std::cos(angle) - b * std::sin(angle);
        r.row(t)[ib] = a * std::sin(angle) + b * std::cos(angle);
      }
  return r;
}
