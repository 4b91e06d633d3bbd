//===- RuntimeUnitTest.h - shared helpers of libxfrt's unit tests -*- C++ -*-===//
#ifndef XF_TEST_UNIT_RUNTIMEUNITTEST_H
#define XF_TEST_UNIT_RUNTIMEUNITTEST_H

#include "xfrt/Cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

/// A diagnostic or report names what it should (and shows itself if not).
#define EXPECT_CONTAINS(haystack, needle)                                                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

namespace xfrt::test {

/// The options of an executable run as `prog ARGS...`.
inline Expected<Options> parse(std::vector<const char *> args) {
  args.insert(args.begin(), "prog");
  return parseCommandLine(int(args.size()), args.data());
}

} // namespace xfrt::test

#endif // XF_TEST_UNIT_RUNTIMEUNITTEST_H
