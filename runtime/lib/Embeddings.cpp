//===- Embeddings.cpp - Sentence embeddings from hidden states ------------===//
#include "xfrt/Embeddings.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xfrt {

void poolHidden(const float *hidden, int64_t l, int64_t d, Pooling pool, bool normalize,
                float *out) {
  std::vector<double> acc(size_t(d), 0.0);
  int64_t rows = pool == Pooling::Cls ? 1 : l;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t k = 0; k < d; ++k)
      acc[size_t(k)] += hidden[t * d + k];
  double norm = 0;
  for (double &x : acc) {
    x /= double(rows);
    norm += x * x;
  }
  double scale = normalize ? 1.0 / std::max(std::sqrt(norm), 1e-12) : 1.0;
  for (int64_t k = 0; k < d; ++k)
    out[k] = float(acc[size_t(k)] * scale);
}

} // namespace xfrt
