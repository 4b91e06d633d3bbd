//===- HttpParser.cpp - An incremental HTTP/1.1 request parser with limits ===//
//
// Lines end with LF (an optional CR before it is dropped). Every buffer grows only up to the
// limit of what it holds, checked before bytes are appended (HttpParser.h).
//
//===----------------------------------------------------------------------===//
#include "xfrt/HttpParser.h"

#include <cstring>

namespace xfrt {
namespace {

// RFC 9110 token characters (methods, header names).
bool isTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9')
    return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
    return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

bool isToken(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!isTokenChar((unsigned char)c))
      return false;
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// Whether `list` (a comma-separated header value) holds `token`, case-insensitively.
bool hasListToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (lower(trim(list.substr(0, comma))) == token)
      return true;
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Drops the line's LF and the CR before it.
std::string_view chompLine(std::string_view line) {
  if (!line.empty() && line.back() == '\n')
    line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return line;
}

} // namespace

const std::string *HttpRequest::header(std::string_view lowerName) const {
  for (const auto &[name, value] : headers)
    if (name == lowerName)
      return &value;
  return nullptr;
}

bool HttpRequestParser::fail(int status, std::string message) {
  state_ = State::Failed;
  errorStatus_ = status;
  errorMessage_ = std::move(message);
  return false;
}

HttpRequest HttpRequestParser::take() {
  HttpRequest out = std::move(request_);
  reset();
  return out;
}

void HttpRequestParser::reset() {
  state_ = State::Head;
  started_ = false;
  head_.clear();
  requestLineEnd_ = lineStart_ = 0;
  remaining_ = trailerBytes_ = 0;
  request_ = HttpRequest();
  errorStatus_ = 0;
  errorMessage_.clear();
}

size_t HttpRequestParser::feed(const char *data, size_t n) {
  size_t used = 0;
  while (used < n && state_ != State::Complete && state_ != State::Failed) {
    const char *p = data + used;
    size_t left = n - used;
    switch (state_) {
    case State::Head:
      used += feedHead(p, left);
      break;
    case State::Body:
    case State::ChunkData: {
      size_t take = left < remaining_ ? left : remaining_;
      request_.body.append(p, take);
      remaining_ -= take;
      used += take;
      if (remaining_ == 0)
        state_ = state_ == State::Body ? State::Complete : State::ChunkEnd;
      break;
    }
    case State::ChunkSize:
    case State::ChunkEnd:
    case State::Trailers:
      used += feedChunkLine(p, left);
      break;
    default:
      return used;
    }
  }
  return used;
}

size_t HttpRequestParser::feedHead(const char *data, size_t n) {
  size_t used = 0;
  if (!started_) { // blank lines before a request are ignored (RFC 9112 2.2), a few of them
    while (used < n && (data[used] == '\r' || data[used] == '\n') &&
           head_.size() < limits_.maxRequestLine) {
      head_.push_back(data[used]); // counted against the request line's limit
      ++used;
    }
    if (used == n)
      return used;
    if (data[used] == '\r' || data[used] == '\n')
      return used + size_t(fail(400, "too many blank lines before the request"));
    head_.clear();
    started_ = true;
  }
  while (used < n) {
    bool inRequestLine = requestLineEnd_ == 0;
    // head_ may grow to this size: the request line, or the fields, with CR LF.
    size_t cap = inRequestLine ? limits_.maxRequestLine + 2
                               : requestLineEnd_ + limits_.maxHeaderBytes + 2;
    size_t room = cap > head_.size() ? cap - head_.size() : 0;
    size_t look = n - used < room ? n - used : room;
    const void *nl = std::memchr(data + used, '\n', look);
    if (!nl) {
      if (n - used >= room)
        return used + size_t(inRequestLine
                                 ? fail(414, "the request line is longer than " +
                                                 std::to_string(limits_.maxRequestLine) + " bytes")
                                 : fail(431, "the header fields are longer than " +
                                                 std::to_string(limits_.maxHeaderBytes) +
                                                 " bytes"));
      head_.append(data + used, n - used);
      return n;
    }
    size_t len = size_t(static_cast<const char *>(nl) - (data + used)) + 1;
    head_.append(data + used, len);
    used += len;
    size_t lineStart = lineStart_;
    lineStart_ = head_.size();
    if (inRequestLine) {
      requestLineEnd_ = head_.size();
      continue;
    }
    if (chompLine(std::string_view(head_).substr(lineStart)).empty()) {
      parseHead();
      return used;
    }
  }
  return used;
}

bool HttpRequestParser::parseHead() {
  std::string_view head(head_);
  if (!parseRequestLine(chompLine(head.substr(0, requestLineEnd_))))
    return false;
  size_t fields = 0;
  size_t at = requestLineEnd_;
  while (at < head.size()) {
    size_t nl = head.find('\n', at);
    std::string_view line = chompLine(head.substr(at, nl + 1 - at));
    at = nl + 1;
    if (line.empty())
      break;
    if (++fields > limits_.maxHeaders)
      return fail(431, "more than " + std::to_string(limits_.maxHeaders) + " header fields");
    if (!parseField(line))
      return false;
  }
  head_.clear();
  head_.shrink_to_fit();
  return decideFraming();
}

bool HttpRequestParser::parseRequestLine(std::string_view line) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "the request line is not 'METHOD /path HTTP/1.1'");
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  if (!isToken(method))
    return fail(400, "the request method is not a token");
  if (target.empty() || target.front() != '/')
    return fail(400, "the request target is not a path");
  for (char c : target)
    if ((unsigned char)c <= 0x20 || (unsigned char)c == 0x7f)
      return fail(400, "the request target holds a control character or a space");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9')
    return fail(400, "the request line's version is not HTTP/1.x");
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
    return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.path = std::string(target.substr(0, target.find('?')));
  request_.minorVersion = version[7] - '0';
  return true;
}

bool HttpRequestParser::parseField(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t')
    return fail(400, "obsolete line folding in the header fields");
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || !isToken(line.substr(0, colon)))
    return fail(400, "a header field is not 'Name: value'");
  std::string_view value = trim(line.substr(colon + 1));
  for (char c : value)
    if (((unsigned char)c < 0x20 && c != '\t') || (unsigned char)c == 0x7f)
      return fail(400, "a header field's value holds a control character");
  request_.headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  return true;
}

bool HttpRequestParser::decideFraming() {
  HttpRequest &r = request_;
  const std::string *length = nullptr;
  bool transferEncoding = false;
  for (const auto &[name, value] : r.headers) {
    if (name == "content-length") {
      if (length)
        return fail(400, "more than one Content-Length");
      length = &value;
    } else if (name == "transfer-encoding") {
      if (transferEncoding || lower(value) != "chunked")
        return fail(501, "Transfer-Encoding other than 'chunked' is not supported");
      transferEncoding = true;
    }
  }
  if (transferEncoding && (length || r.minorVersion == 0))
    return fail(400, length ? "both Content-Length and Transfer-Encoding"
                            : "Transfer-Encoding in an HTTP/1.0 request");
  if (length) {
    if (length->empty() || length->size() > 18)
      return fail(length->empty() ? 400 : 413, "Content-Length '" + length->substr(0, 32) +
                                                   "' is not a size up to " +
                                                   std::to_string(limits_.maxBody));
    size_t value = 0;
    for (char c : *length) {
      if (c < '0' || c > '9')
        return fail(400, "Content-Length is not a number");
      value = value * 10 + size_t(c - '0');
    }
    if (value > limits_.maxBody)
      return fail(413, "the request body is larger than " + std::to_string(limits_.maxBody) +
                           " bytes");
    r.contentLength = value;
  }
  r.chunked = transferEncoding;
  if (const std::string *c = r.header("connection"))
    r.keepAlive = r.minorVersion == 1 ? !hasListToken(*c, "close") : hasListToken(*c, "keep-alive");
  else
    r.keepAlive = r.minorVersion == 1;
  if (const std::string *e = r.header("expect")) {
    if (lower(*e) != "100-continue")
      return fail(417, "only 'Expect: 100-continue' is understood");
    r.expectContinue = r.minorVersion == 1;
  }
  remaining_ = r.contentLength;
  state_ = r.chunked ? State::ChunkSize : r.contentLength ? State::Body : State::Complete;
  return true;
}

// The line-shaped parts of a chunked body: a chunk's size line, the CR LF after its data, the
// trailer fields (read and dropped) up to the blank line that ends the request.
size_t HttpRequestParser::feedChunkLine(const char *data, size_t n) {
  constexpr size_t kMaxChunkLine = 1024; // hex size and extensions
  size_t limit = state_ == State::Trailers ? limits_.maxHeaderBytes + 2 - trailerBytes_
                 : state_ == State::ChunkEnd ? 2
                                             : kMaxChunkLine;
  size_t room = limit - head_.size();
  size_t look = n < room ? n : room;
  const void *nl = std::memchr(data, '\n', look);
  if (!nl) {
    if (n >= room)
      return size_t(state_ == State::Trailers ? fail(431, "the trailer fields are too long")
                                              : fail(400, "a malformed chunk"));
    head_.append(data, n);
    return n;
  }
  size_t used = size_t(static_cast<const char *>(nl) - data) + 1;
  head_.append(data, used);
  std::string line(chompLine(head_));
  trailerBytes_ += state_ == State::Trailers ? head_.size() : 0;
  head_.clear();
  if (state_ == State::ChunkEnd) {
    if (!line.empty())
      return used + size_t(fail(400, "a chunk is longer than its size"));
    state_ = State::ChunkSize;
    return used;
  }
  if (state_ == State::Trailers) {
    if (line.empty())
      state_ = State::Complete;
    return used;
  }
  size_t digits = 0, size = 0;
  for (; digits < line.size(); ++digits) {
    char c = line[digits];
    int v = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
    if (v < 0)
      break;
    if (digits >= 15)
      return used + size_t(fail(413, "the request body is larger than " +
                                         std::to_string(limits_.maxBody) + " bytes"));
    size = size * 16 + size_t(v);
  }
  std::string_view rest = trim(std::string_view(line).substr(digits));
  if (digits == 0 || (!rest.empty() && rest.front() != ';'))
    return used + size_t(fail(400, "a chunk size is not hexadecimal"));
  if (size > limits_.maxBody - request_.body.size())
    return used + size_t(fail(413, "the request body is larger than " +
                                       std::to_string(limits_.maxBody) + " bytes"));
  remaining_ = size;
  state_ = size == 0 ? State::Trailers : State::ChunkData;
  return used;
}

} // namespace xfrt
