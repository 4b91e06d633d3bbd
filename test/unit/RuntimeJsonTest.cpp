//===- RuntimeJsonTest.cpp - libxfrt JSON parser --------------------------===//
#include "xfrt/Json.h"

#include <gtest/gtest.h>

using namespace xfrt;

namespace {

TEST(RuntimeJson, ParsesAllKinds) {
  Expected<JsonValue> v = parseJson(
      R"( {"a": [1, -2, 3.5, 1e3], "b": {"c": null, "d": true, "e": false}, "s": "x\"\n\u00e9\ud83d\ude00"} )");
  ASSERT_TRUE(v) << v.message();
  ASSERT_TRUE(v->isObject());
  const JsonValue *a = v->find("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->items.size(), 4u);
  EXPECT_TRUE(a->items[0].isInteger);
  EXPECT_EQ(a->items[1].integer, -2);
  EXPECT_FALSE(a->items[2].isInteger);
  EXPECT_DOUBLE_EQ(a->items[2].number, 3.5);
  EXPECT_FALSE(a->items[3].isInteger);
  EXPECT_DOUBLE_EQ(a->items[3].number, 1000);
  EXPECT_TRUE(v->find("b")->find("c")->isNull());
  EXPECT_TRUE(v->find("b")->find("d")->boolean);
  EXPECT_EQ(v->find("s")->string, "x\"\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v->find("missing"), nullptr);
  EXPECT_EQ(v->keys[0], "a"); // order kept
}

TEST(RuntimeJson, Escapes) {
  Expected<JsonValue> v = parseJson(R"("\"\\\/\b\f\n\r\t\u0041")");
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->string, "\"\\/\b\f\n\r\tA");
}

TEST(RuntimeJson, LargeIntegers) {
  Expected<JsonValue> v = parseJson("[9223372036854775807, 9223372036854775808, -0]");
  ASSERT_TRUE(v) << v.message();
  EXPECT_TRUE(v->items[0].isInteger);
  EXPECT_EQ(v->items[0].integer, INT64_MAX);
  EXPECT_FALSE(v->items[1].isInteger); // does not fit: kept as a double only
  EXPECT_TRUE(v->items[2].isInteger);
}

TEST(RuntimeJson, RejectsMalformed) {
  const char *bad[] = {"",         "{",         "[1,]",        "{\"a\":1,}",
                       "01",       "1.",        ".5",          "-",
                       "1e",       "tru",       "nul",         "\"abc",
                       "\"\\x\"",  "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
                       "{1: 2}",   "[1 2]",     "{\"a\" 1}",   "1 2",
                       "\"\x01\"", "\"\xff\"",  "\"\xc3\"",    "\"\xed\xa0\x80\"",
                       "NaN",      "Infinity",  "1e999",       "{\"a\":1,\"a\":2}",
                       "// c\n1",  "'x'"};
  for (const char *text : bad) {
    Expected<JsonValue> v = parseJson(text);
    EXPECT_FALSE(v) << "accepted: " << text;
    if (!v)
      EXPECT_NE(v.message().find("invalid JSON"), std::string::npos) << v.message();
  }
}

TEST(RuntimeJson, ErrorNamesByte) {
  Expected<JsonValue> v = parseJson("[1, 2, x]");
  ASSERT_FALSE(v);
  EXPECT_NE(v.message().find("at byte 7"), std::string::npos) << v.message();
}

TEST(RuntimeJson, DepthLimit) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  Expected<JsonValue> v = parseJson(deep);
  ASSERT_FALSE(v);
  EXPECT_NE(v.message().find("nesting"), std::string::npos) << v.message();
  JsonLimits limits;
  limits.maxDepth = 200;
  EXPECT_TRUE(parseJson(deep, limits));
  // Deep nesting far beyond any stack: still a clean error.
  std::string huge(1 << 20, '[');
  EXPECT_FALSE(parseJson(huge));
}

TEST(RuntimeJson, SizeAndValueLimits) {
  JsonLimits limits;
  limits.maxBytes = 8;
  EXPECT_FALSE(parseJson("[1, 2, 3, 4]", limits));
  limits.maxBytes = 1000;
  limits.maxValues = 3;
  EXPECT_TRUE(parseJson("[1, 2]", limits));
  Expected<JsonValue> v = parseJson("[1, 2, 3]", limits);
  ASSERT_FALSE(v);
  EXPECT_NE(v.message().find("values"), std::string::npos);
}

TEST(RuntimeJson, QuoteRoundTrip) {
  std::string s = "a\"b\\c\n\x01\xc3\xa9";
  Expected<JsonValue> v = parseJson(quoteJson(s));
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->string, s);
}

TEST(RuntimeJson, DescribeIsBounded) {
  std::string nested = "[[[[[[1]]]]]]";
  Expected<JsonValue> v = parseJson(nested);
  ASSERT_TRUE(v);
  EXPECT_LT(describeJson(*v).size(), 64u);
  EXPECT_EQ(describeJson(*parseJson("[1, 2]")), "[1, 2]");
  EXPECT_EQ(describeJson(*parseJson("[1e-05, 0.1, 3.141592653589793]")),
            "[1e-05, 0.1, 3.141592653589793]");
}

} // namespace
