// WeightRegion (runtime/lib/WeightRegion.cpp): the one mapping that holds the buffers
// xf_prepare derives. Pieces are zeroed, 64-byte aligned, disjoint and writable; the mapping
// starts on a 2 MiB boundary (so that huge pages can back it); bad sizes are refused.
#include "xfrt/WeightRegion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

TEST(RuntimeWeightRegion, PiecesAreZeroedAlignedAndDisjoint) {
  const std::vector<int64_t> bytes = {1, 0, 4096, 3 << 20, 100, (5 << 20) + 7};
  xfrt::Expected<xfrt::WeightRegion> region = xfrt::WeightRegion::allocate(bytes);
  ASSERT_TRUE(region.ok()) << region.message();
  const std::vector<void *> &pieces = region->pieces();
  ASSERT_EQ(pieces.size(), bytes.size());
#if defined(__linux__)
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pieces[0]) % (2u << 20), 0u);
#endif
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto *p = static_cast<uint8_t *>(pieces[i]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << i;
    int64_t n = std::max<int64_t>(bytes[i], 1);
    EXPECT_TRUE(std::all_of(p, p + n, [](uint8_t b) { return b == 0; })) << i;
    std::memset(p, int(i + 1), size_t(n)); // writable, and checked for overlap below
    spans.push_back({reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n});
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto *p = static_cast<uint8_t *>(pieces[i]);
    int64_t n = std::max<int64_t>(bytes[i], 1);
    EXPECT_TRUE(std::all_of(p, p + n, [&](uint8_t b) { return b == uint8_t(i + 1); })) << i;
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    EXPECT_LE(spans[i - 1].second, spans[i].first);
  EXPECT_GE(region->mappedBytes(), spans.back().second - spans.front().first);
  // Moves hand the mapping over.
  xfrt::WeightRegion moved = region.take();
  EXPECT_EQ(moved.pieces().size(), bytes.size());
}

TEST(RuntimeWeightRegion, EmptyAndBadSizes) {
  xfrt::Expected<xfrt::WeightRegion> none = xfrt::WeightRegion::allocate({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->pieces().empty());
  xfrt::Expected<xfrt::WeightRegion> negative = xfrt::WeightRegion::allocate({64, -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.message(), "cannot allocate -1 bytes");
  xfrt::Expected<xfrt::WeightRegion> huge =
      xfrt::WeightRegion::allocate({int64_t(1) << 45, int64_t(1) << 45, int64_t(1) << 45});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.message().find("cannot allocate"), std::string::npos) << huge.message();
}

} // namespace
