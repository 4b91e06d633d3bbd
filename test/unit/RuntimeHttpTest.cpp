//===- RuntimeHttpTest.cpp - --serve's HTTP parser and access checks -------===//
#include "xfrt/HttpParser.h"
#include "xfrt/ServeAccess.h"

#include <gtest/gtest.h>

#include <string>

using namespace xfrt;

namespace {

// Feeds `text` in pieces of `step` bytes; returns the parser after the first request ends.
HttpRequestParser parse(const std::string &text, size_t step = 1 << 30,
                        HttpLimits limits = HttpLimits()) {
  HttpRequestParser p(limits);
  for (size_t at = 0; at < text.size() && !p.complete() && !p.failed();) {
    size_t n = std::min(step, text.size() - at);
    size_t used = p.feed(text.data() + at, n);
    at += used;
    if (used < n)
      break;
  }
  return p;
}

TEST(HttpParser, WholeRequestInAnyPieces) {
  std::string text = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: "
                     "application/json\r\nContent-Length: 5\r\n\r\nhello";
  for (size_t step : {1, 2, 7, 1000}) {
    HttpRequestParser p = parse(text, step);
    ASSERT_TRUE(p.complete()) << step;
    EXPECT_EQ(p.request().method, "POST");
    EXPECT_EQ(p.request().path, "/v1/completions");
    EXPECT_EQ(p.request().body, "hello");
    EXPECT_EQ(*p.request().header("content-type"), "application/json");
    EXPECT_TRUE(p.request().keepAlive);
  }
}

TEST(HttpParser, PipelinedRequestsStopAtTheFirstEnd) {
  std::string text = "GET /health HTTP/1.1\r\n\r\nGET /ready HTTP/1.0\r\n\r\n";
  HttpRequestParser p{HttpLimits()};
  size_t used = p.feed(text.data(), text.size());
  ASSERT_TRUE(p.complete());
  EXPECT_EQ(p.take().path, "/health");
  p.feed(text.data() + used, text.size() - used);
  ASSERT_TRUE(p.complete());
  EXPECT_EQ(p.request().path, "/ready");
  EXPECT_FALSE(p.request().keepAlive); // HTTP/1.0 without keep-alive
}

TEST(HttpParser, LongRequestLineFailsAtTheLimitNotAtItsEnd) {
  HttpLimits limits;
  std::string line = "GET /" + std::string(limits.maxRequestLine + 3, 'a');
  HttpRequestParser p(limits);
  size_t used = p.feed(line.data(), line.size());
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.errorStatus(), 414);
  EXPECT_LE(used, limits.maxRequestLine + 2);
}

TEST(HttpParser, HeaderLimits) {
  HttpLimits limits;
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i)
    many += "X-" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(parse(many + "\r\n").errorStatus(), 431);
  std::string big = "GET / HTTP/1.1\r\nX: " + std::string(limits.maxHeaderBytes, 'a');
  EXPECT_EQ(parse(big, 100).errorStatus(), 431);
}

TEST(HttpParser, BodyLimits) {
  HttpLimits limits;
  limits.maxBody = 10;
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 1 << 30, limits).errorStatus(),
            413);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 1 << 30,
                  limits).errorStatus(), 413);
  std::string chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  HttpRequestParser ok = parse(chunked + "4\r\nabcd\r\n6;x=y\r\nefghij\r\n0\r\nT: 1\r\n\r\n",
                               3, limits);
  ASSERT_TRUE(ok.complete());
  EXPECT_EQ(ok.request().body, "abcdefghij");
  // 413 at the chunk size that passes the limit, before its data.
  EXPECT_EQ(parse(chunked + "4\r\nabcd\r\n7\r\n", 1 << 30, limits).errorStatus(), 413);
  EXPECT_EQ(parse(chunked + "fffffffffffffffffff\r\n", 1 << 30, limits).errorStatus(), 413);
  EXPECT_EQ(parse(chunked + "zz\r\n", 1 << 30, limits).errorStatus(), 400);
  EXPECT_EQ(parse(chunked + "2\r\nabc\r\n", 1 << 30, limits).errorStatus(), 400);
}

TEST(HttpParser, SmugglingShapesAreRefused) {
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
                .errorStatus(), 400);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n")
                .errorStatus(), 400);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").errorStatus(),
            501);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n").errorStatus(), 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n").errorStatus(), 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nX : a\r\n\r\n").errorStatus(), 400);
  EXPECT_EQ(parse("GET / HTTP/2.0\r\n\r\n").errorStatus(), 505);
  EXPECT_EQ(parse("GET http://x/ HTTP/1.1\r\n\r\n").errorStatus(), 400);
  EXPECT_EQ(parse("NOT HTTP AT ALL\r\n\r\n").errorStatus(), 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n").errorStatus(), 417);
}

TEST(ServeAccess, SecretsAndNames) {
  EXPECT_TRUE(sameSecret("abc", "abc"));
  EXPECT_FALSE(sameSecret("abc", "abd"));
  EXPECT_FALSE(sameSecret("abc", "abcd"));
  EXPECT_FALSE(sameSecret("", "a"));
  EXPECT_EQ(hostOfAuthority("[::1]:8080"), "::1");
  EXPECT_EQ(hostOfAuthority("localhost:80"), "localhost");
  EXPECT_EQ(hostOfAuthority("127.0.0.1"), "127.0.0.1");
}

TEST(ServeAccess, HostOriginKeyAndJson) {
  ServeAccess open("", true, {"https://app.example"});
  auto head = [](std::string fields) {
    return parse("POST / HTTP/1.1\r\n" + fields + "\r\n").take();
  };
  EXPECT_FALSE(open.checkPeer(head("Host: localhost:8080\r\n")));
  EXPECT_FALSE(open.checkPeer(head("Host: 127.0.0.2\r\n")));
  EXPECT_EQ(open.checkPeer(head("Host: 127.0.0.1.evil.example\r\n"))->status, 403);
  EXPECT_EQ(open.checkPeer(head("Host: localhost.evil.example\r\n"))->status, 403);
  EXPECT_FALSE(open.checkPeer(head("Origin: http://localhost:3000\r\n")));
  EXPECT_FALSE(open.checkPeer(head("Origin: https://app.example\r\n")));
  EXPECT_EQ(open.checkPeer(head("Origin: http://localhost.evil.example\r\n"))->status, 403);
  EXPECT_EQ(open.checkPeer(head("Origin: null\r\n"))->status, 403);
  ServeAccess anyHost("k3y", false, {});
  EXPECT_FALSE(anyHost.checkPeer(head("Host: server.example\r\n")));
  EXPECT_EQ(anyHost.checkKey(head(""))->status, 401);
  EXPECT_EQ(anyHost.checkKey(head("Authorization: Bearer k3"))->status, 401);
  EXPECT_FALSE(anyHost.checkKey(head("Authorization: Bearer k3y\r\n")));
  EXPECT_FALSE(ServeAccess::checkJson(head("Content-Type: Application/JSON; charset=utf-8\r\n")));
  EXPECT_EQ(ServeAccess::checkJson(head("Content-Type: text/plain\r\n"))->status, 415);
  EXPECT_EQ(ServeAccess::checkJson(head(""))->status, 415);
}

} // namespace
