//===- Random.cpp - Reproducible random numbers for --random-weights ------===//
#include "xfrt/Random.h"

#include <cmath>

namespace xfrt {

Pcg32::Pcg32(uint64_t seed, uint64_t stream) {
  state_ = 0;
  inc_ = (stream << 1) | 1;
  next();
  state_ += seed;
  next();
}

uint32_t Pcg32::next() {
  uint64_t old = state_;
  state_ = old * 6364136223846793005ULL + inc_;
  uint32_t xorshifted = uint32_t(((old >> 18) ^ old) >> 27);
  uint32_t rot = uint32_t(old >> 59);
  return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
}

double Pcg32::nextOpenUnit() { return (double(next()) + 0.5) * (1.0 / 4294967296.0); }

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

void fillNormal(Pcg32 &rng, float *dst, size_t count, float mean, float stddev) {
  const double twoPi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < count; i += 2) {
    double u1 = rng.nextOpenUnit(), u2 = rng.nextOpenUnit();
    double r = std::sqrt(-2.0 * std::log(u1));
    dst[i] = float(mean + stddev * (r * std::cos(twoPi * u2)));
    if (i + 1 < count)
      dst[i + 1] = float(mean + stddev * (r * std::sin(twoPi * u2)));
  }
}

} // namespace xfrt
