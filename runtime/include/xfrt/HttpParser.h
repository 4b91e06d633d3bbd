//===- HttpParser.h - An incremental HTTP/1.1 request parser with limits -*- C++ -*-===//
//
// --serve's requests are parsed here, byte by byte as they arrive, with every limit enforced
// while reading (docs/serving.md, "The HTTP layer"):
//   - the request line: at most HttpLimits::maxRequestLine bytes, else 414 as soon as that many
//     have arrived without its end (a 256 MiB line is refused after 8 KiB, not buffered);
//   - the header section: at most maxHeaderBytes and maxHeaders fields, else 431;
//   - the body: Content-Length over maxBody is 413 before a byte of it is read; a chunked body
//     is 413 as soon as a chunk's size would take it past maxBody;
//   - request smuggling shapes are refused (400): Content-Length with Transfer-Encoding, two
//     Content-Lengths, a Transfer-Encoding other than "chunked", obsolete line folding.
// No I/O: the server feeds it what it reads (and the fuzzer, test/fuzz/http, what it makes).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_HTTPPARSER_H
#define XFRT_HTTPPARSER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xfrt {

struct HttpLimits {
  size_t maxRequestLine = 8192;
  size_t maxHeaderBytes = 16384; // the header fields together, request line excluded
  size_t maxHeaders = 100;
  size_t maxBody = size_t(4) << 20;
};

struct HttpRequest {
  std::string method, target; // target as sent; path is it without the query
  std::string path;
  int minorVersion = 1;       // HTTP/1.0 or HTTP/1.1
  std::vector<std::pair<std::string, std::string>> headers; // names lower-cased, values trimmed
  std::string body;
  bool keepAlive = true;      // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive
  bool chunked = false;
  bool expectContinue = false; // "Expect: 100-continue"
  size_t contentLength = 0;    // without chunked

  // The first field of that (lower-case) name, or nullptr.
  const std::string *header(std::string_view lowerName) const;
  // Whether a body follows the head (a Content-Length above 0, or chunked).
  bool hasBody() const { return chunked || contentLength > 0; }
};

class HttpRequestParser {
public:
  enum class State { Head, Body, ChunkSize, ChunkData, ChunkEnd, Trailers, Complete, Failed };

  explicit HttpRequestParser(HttpLimits limits) : limits_(limits) {}

  // Consumes bytes of `data` up to the end of the request (the rest belongs to the next one,
  // pipelined) or the first error; returns how many it consumed.
  size_t feed(const char *data, size_t n);

  State state() const { return state_; }
  bool headDone() const { return state_ != State::Head && state_ != State::Failed; }
  bool complete() const { return state_ == State::Complete; }
  bool failed() const { return state_ == State::Failed; }
  // Whether any byte of a request (beyond blank lines) has been seen.
  bool started() const { return started_; }
  // After failed(): the status to answer (400, 413, 414, 431, 501, 505) and why.
  int errorStatus() const { return errorStatus_; }
  const std::string &errorMessage() const { return errorMessage_; }

  // The request so far: the head once headDone(), the body too once complete().
  const HttpRequest &request() const { return request_; }
  HttpRequest take();
  // Ready for the next request on the same connection.
  void reset();

private:
  size_t feedHead(const char *data, size_t n);
  bool parseHead();
  bool parseRequestLine(std::string_view line);
  bool parseField(std::string_view line);
  bool decideFraming();
  size_t feedChunkLine(const char *data, size_t n);
  bool fail(int status, std::string message);

  HttpLimits limits_;
  State state_ = State::Head;
  bool started_ = false;
  std::string head_;          // the head being read, or a chunk-size / trailer line
  size_t requestLineEnd_ = 0; // offset past the request line's LF in head_, 0 before
  size_t lineStart_ = 0;      // where the line being read starts in head_
  size_t remaining_ = 0;      // bytes left of the body or of the current chunk
  size_t trailerBytes_ = 0;
  HttpRequest request_;
  int errorStatus_ = 0;
  std::string errorMessage_;
};

} // namespace xfrt

#endif // XFRT_HTTPPARSER_H
