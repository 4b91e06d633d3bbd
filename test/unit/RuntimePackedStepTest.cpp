//===- RuntimePackedStepTest.cpp - a packed step's table for the GPU ------===//
//
// packedStepWords (xfrt/PackedBatch.h): the ids and the step table that the CUDA build's
// xf_forward_cached_packed reads on the device (each row's position and cache slot).
//
//===----------------------------------------------------------------------===//

#include "xfrt/PackedBatch.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

std::vector<int64_t> tableOf(const std::vector<int32_t> &words, int64_t total) {
  const int64_t idWords = (total + 1) / 2 * 2;
  std::vector<int64_t> table(size_t(2 * total));
  EXPECT_EQ(words.size(), size_t(idWords + 4 * total));
  std::memcpy(table.data(), words.data() + idWords, table.size() * sizeof(int64_t));
  return table;
}

TEST(PackedStepWords, PositionsAndSlotsPerRow) {
  // A prompt chunk of 3 rows at position 5 of slot 2, a decode row at 9 of slot 0, 1 row at
  // 0 of slot 7: an odd Σℓ = 5, so one padding word before the table.
  const int32_t ids[] = {11, 12, 13, 14, 15};
  std::vector<int32_t> words = xfrt::packedStepWords(ids, {3, 1, 1}, {5, 9, 0}, {2, 0, 7});
  for (int t = 0; t < 5; ++t)
    EXPECT_EQ(words[size_t(t)], ids[t]);
  std::vector<int64_t> table = tableOf(words, 5);
  EXPECT_EQ(table, (std::vector<int64_t>{5, 6, 7, 9, 0, 2, 2, 2, 0, 7}));
}

TEST(PackedStepWords, DecodeStepRowIsSequence) {
  // Every sequence one row: row i's position and slot are sequence i's start and slot.
  const int32_t ids[] = {1, 2, 3, 4};
  std::vector<int32_t> words =
      xfrt::packedStepWords(ids, {1, 1, 1, 1}, {40, 3, 17, 0}, {3, 1, 0, 2});
  EXPECT_EQ(tableOf(words, 4), (std::vector<int64_t>{40, 3, 17, 0, 3, 1, 0, 2}));
}

} // namespace
