//===- Random.h - Reproducible random numbers for --random-weights -*- C++ -*-===//
//
// PCG32 (O'Neill's pcg32_srandom_r / pcg32_random_r, XSH-RR 64/32) and Box-Muller normals,
// written out here so a seed gives the same weights on every platform and standard library
// (std::normal_distribution is implementation-defined). Each parameter gets its own stream,
// selected by the FNV-1a hash of its name, so adding a parameter leaves the others unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_RANDOM_H
#define XFRT_RANDOM_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xfrt {

class Pcg32 {
public:
  Pcg32(uint64_t seed, uint64_t stream);
  uint32_t next();
  // Uniform in the open interval (0, 1): (next() + 0.5) / 2^32.
  double nextOpenUnit();

private:
  uint64_t state_ = 0, inc_ = 1;
};

uint64_t fnv1a64(std::string_view s);

// Fills dst[0, count) with mean + stddev * z, z standard normal by Box-Muller: for each pair
// u1 = nextOpenUnit(), u2 = nextOpenUnit(), r = sqrt(-2 ln u1), dst[2k] = r cos(2 pi u2),
// dst[2k+1] = r sin(2 pi u2) (the sine of the last pair is dropped for odd counts).
void fillNormal(Pcg32 &rng, float *dst, size_t count, float mean, float stddev);

} // namespace xfrt

#endif // XFRT_RANDOM_H
