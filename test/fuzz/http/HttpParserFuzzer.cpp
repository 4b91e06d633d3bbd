//===- HttpParserFuzzer.cpp - libFuzzer target for --serve's HTTP parser --===//
//
// Parses the input as a stream of pipelined requests twice: whole, and in pieces whose sizes
// the input's first bytes choose. Both must agree (requests, bodies, errors), every body must
// stay within the limit, and nothing may read out of bounds (ASan) or overflow (UBSan).
//
//===----------------------------------------------------------------------===//
#include "xfrt/HttpParser.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace xfrt;

namespace {

struct Outcome {
  std::vector<std::string> requests; // method, target, body, framing of each complete request
  int error = 0;
  bool operator==(const Outcome &o) const { return requests == o.requests && error == o.error; }
};

Outcome parseAll(const uint8_t *data, size_t size, const std::vector<size_t> &pieces) {
  HttpLimits limits;
  limits.maxRequestLine = 256;
  limits.maxHeaderBytes = 512;
  limits.maxHeaders = 8;
  limits.maxBody = 1024;
  HttpRequestParser p(limits);
  Outcome out;
  size_t at = 0, piece = 0;
  while (at < size) {
    size_t n = pieces.empty() ? size - at : std::min(pieces[piece++ % pieces.size()], size - at);
    size_t end = at + n;
    while (at < end) {
      at += p.feed(reinterpret_cast<const char *>(data) + at, end - at);
      if (p.failed()) {
        out.error = p.errorStatus();
        return out;
      }
      if (p.complete()) {
        HttpRequest r = p.take();
        if (r.body.size() > limits.maxBody)
          std::abort();
        out.requests.push_back(r.method + " " + r.target + " " + std::to_string(r.chunked) +
                               std::to_string(r.keepAlive) + " " + r.body);
      }
    }
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  std::vector<size_t> pieces;
  for (size_t i = 0; i < 2; ++i)
    pieces.push_back(size_t(data[i] % 17) + 1);
  Outcome whole = parseAll(data + 2, size - 2, {});
  Outcome split = parseAll(data + 2, size - 2, pieces);
  if (!(whole == split))
    std::abort();
  return 0;
}
