//===- HttpServer.cpp - --serve's HTTP/1.1 server: one poll loop, bounded workers ===//
//
// Every connection is owned by the loop thread except while a worker serves a request on it
// (Phase::Served); the worker hands it back through returned_ and the wake-up eventfd. Only
// the loop closes descriptors, so a worker never writes to a number reused by another client.
//
//===----------------------------------------------------------------------===//
#include "xfrt/HttpServer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace xfrt {

using Clock = std::chrono::steady_clock;

const char *httpReason(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 204: return "No Content";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 411: return "Length Required";
  case 413: return "Content Too Large";
  case 414: return "URI Too Long";
  case 415: return "Unsupported Media Type";
  case 417: return "Expectation Failed";
  case 421: return "Misdirected Request";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "Status";
  }
}

namespace {

// The layer's own refusals, in the server's JSON error shape (docs/serving.md, "Errors").
HttpResponse layerError(int status, const std::string &message, int retryAfter) {
  HttpResponse r;
  r.status = status;
  std::string quoted;
  for (char c : message)
    quoted += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  const char *type = status == 503 ? "server_busy" : status >= 500 ? "server_error"
                                                                   : "invalid_request_error";
  r.body = "{\"error\": {\"message\": \"" + quoted + "\", \"type\": \"" + type +
           "\", \"param\": null, \"code\": null}}\n";
  if (status == 503)
    r.headers.emplace_back("Retry-After", std::to_string(retryAfter));
  return r;
}

std::string responseHead(const HttpResponse &r, bool keepAlive, const char *framing) {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + httpReason(r.status) +
                     "\r\nContent-Type: " + r.contentType + "\r\n" + framing +
                     "Connection: " + (keepAlive ? "keep-alive" : "close") + "\r\n";
  for (const auto &[name, value] : r.headers)
    head += name + ": " + value + "\r\n";
  return head + "\r\n";
}

std::string wholeResponse(const HttpResponse &r, bool keepAlive, bool headOnly) {
  std::string framing = "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  return responseHead(r, keepAlive, framing.c_str()) + (headOnly ? "" : r.body);
}

// Writes all of `data` to a non-blocking socket by `deadline`; false when the client is gone
// or too slow.
bool writeAll(int fd, const char *data, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    ssize_t k = send(fd, data, n, MSG_NOSIGNAL);
    if (k > 0) {
      data += k;
      n -= size_t(k);
      continue;
    }
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, int(std::min<int64_t>(left.count(), 1000))) < 0 && errno != EINTR)
      return false;
    if (p.revents & (POLLERR | POLLHUP))
      return false;
  }
  return true;
}

std::string peerName(const sockaddr_storage &a) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in &>(a).sin_addr, text, sizeof(text));
  else if (a.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 &>(a).sin6_addr, text, sizeof(text));
  return text;
}

} // namespace

struct Connection {
  enum class Phase { Reading, Writing, Lingering, Served };
  Connection(int fd, std::string peer, const HttpLimits &limits)
      : fd(fd), peer(std::move(peer)), parser(limits) {}
  int fd;
  std::string peer;
  HttpRequestParser parser;
  Phase phase = Phase::Reading;
  Clock::time_point deadline;
  Clock::time_point requestStart;
  bool headChecked = false;
  std::string pending;   // bytes read past the request being served (pipelined)
  std::string out;       // Writing: the response, from outSent on
  size_t outSent = 0;
  bool closeAfterWrite = false;
  bool closeOnReturn = false; // set by a worker: close it, do not read on
  uint64_t bytesIn = 0;
  HttpAccessRecord record; // the response being written by the loop
};

class HttpServer::Impl {
public:
  Impl(HttpServerOptions o, HeadHandler onHead, RequestHandler onRequest)
      : o_(std::move(o)), onHead_(std::move(onHead)), onRequest_(std::move(onRequest)) {}

  std::optional<std::string> bind(const std::string &host, int port, int &boundPort);
  bool run();
  void stop();
  size_t queued() {
    std::lock_guard<std::mutex> lock(mutex_);
    return queue_.size();
  }
  std::atomic<size_t> connectionCount{0};

private:
  friend class Exchange;
  void loopOnce();
  void acceptAll();
  void readFrom(const std::shared_ptr<Connection> &c);
  void process(const std::shared_ptr<Connection> &c, const char *data, size_t n);
  void answer(const std::shared_ptr<Connection> &c, const HttpResponse &r, bool close);
  void writeTo(const std::shared_ptr<Connection> &c);
  void finishWrite(const std::shared_ptr<Connection> &c);
  void dispatch(const std::shared_ptr<Connection> &c);
  void expire();
  void takeReturned();
  void close(const std::shared_ptr<Connection> &c);
  void startReading(const std::shared_ptr<Connection> &c);
  void worker();
  void serve(const std::shared_ptr<Connection> &c, HttpRequest request);
  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t k = write(wakeFd_, &one, sizeof(one));
  }

  HttpServerOptions o_;
  HeadHandler onHead_;
  RequestHandler onRequest_;
  int listenFd_ = -1, wakeFd_ = -1;
  std::atomic<bool> stopping_{false};
  Clock::time_point acceptPausedUntil_{};
  std::unordered_map<int, std::shared_ptr<Connection>> connections_; // loop thread only

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::pair<std::shared_ptr<Connection>, HttpRequest>> queue_;
  std::vector<std::shared_ptr<Connection>> returned_;
  std::vector<std::shared_ptr<Connection>> served_; // held by workers, for stop()
  bool workersStop_ = false;
};

// A worker's view of its request: writes go straight to the socket, each with its deadline.
class Exchange final : public HttpExchange {
public:
  Exchange(const HttpServerOptions &o, Connection &c, HttpRequest r)
      : o_(o), c_(c), request_(std::move(r)) {}
  const HttpRequest &request() const override { return request_; }
  bool clientGone() override {
    if (gone_)
      return true;
    pollfd p{c_.fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
      gone_ = true;
    return gone_;
  }
  void respond(const HttpResponse &r) override {
    responded_ = true;
    status_ = r.status;
    std::string out = wholeResponse(r, request_.keepAlive, request_.method == "HEAD");
    ok_ = send(out);
  }
  bool startStream(const HttpResponse &head) override {
    responded_ = streaming_ = true;
    status_ = head.status;
    chunked_ = request_.minorVersion == 1;
    if (!chunked_)
      request_.keepAlive = false; // HTTP/1.0: the body ends with the connection
    ok_ = send(responseHead(head, request_.keepAlive,
                            chunked_ ? "Transfer-Encoding: chunked\r\n" : ""));
    return ok_;
  }
  bool writeChunk(const std::string &data) override {
    if (!ok_ || data.empty())
      return ok_;
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
    ok_ = chunked_ ? send(size + data + "\r\n") : send(data);
    return ok_;
  }
  void endStream() override {
    if (ok_ && chunked_)
      ok_ = send("0\r\n\r\n");
  }
  void abandon() override {
    responded_ = true;
    status_ = 499;
    ok_ = false;
  }
  bool responded() const { return responded_; }
  bool ok() const { return ok_ && !gone_; }
  int status() const { return status_; }
  uint64_t bytesOut() const { return bytesOut_; }

private:
  bool send(const std::string &s) {
    if (!ok_)
      return false;
    bytesOut_ += s.size();
    return writeAll(c_.fd, s.data(), s.size(), Clock::now() + o_.writeTimeout);
  }
  const HttpServerOptions &o_;
  Connection &c_;
  HttpRequest request_;
  bool gone_ = false, responded_ = false, streaming_ = false, chunked_ = false, ok_ = true;
  int status_ = 0;
  uint64_t bytesOut_ = 0;
};

std::optional<std::string> HttpServer::Impl::bind(const std::string &host, int port,
                                                  int &boundPort) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  if (int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found))
    return std::string(gai_strerror(e));
  std::string why = "no address";
  for (addrinfo *a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 512) == 0) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
      boundPort = ntohs(addr.ss_family == AF_INET6
                            ? reinterpret_cast<sockaddr_in6 &>(addr).sin6_port
                            : reinterpret_cast<sockaddr_in &>(addr).sin_port);
      listenFd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(found);
  if (listenFd_ < 0)
    return why;
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return std::nullopt;
}

void HttpServer::Impl::stop() {
  stopping_ = true;
  wake();
}

bool HttpServer::Impl::run() {
  std::vector<std::thread> workers;
  for (size_t i = 0; i < o_.workers; ++i)
    workers.emplace_back([this] { worker(); });
  while (!stopping_)
    loopOnce();
  // Stop: no new work; wake every worker's client (a handler waiting on one sees it gone, a
  // write fails at once), join the workers, close everything.
  ::close(listenFd_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    workersStop_ = true;
    for (const auto &c : served_)
      shutdown(c->fd, SHUT_RDWR);
    queue_.clear();
  }
  work_.notify_all();
  for (std::thread &t : workers)
    t.join();
  for (auto &[fd, c] : connections_)
    ::close(fd);
  connections_.clear();
  ::close(wakeFd_);
  return true;
}

void HttpServer::Impl::loopOnce() {
  bool accepting = Clock::now() >= acceptPausedUntil_;
  std::vector<pollfd> fds{{wakeFd_, POLLIN, 0}, {accepting ? listenFd_ : -1, POLLIN, 0}};
  std::vector<std::shared_ptr<Connection>> polled;
  Clock::time_point next =
      Clock::now() + std::chrono::milliseconds(accepting ? 1000 : 100); // a pause ends then
  for (auto &[fd, c] : connections_) {
    if (c->phase == Connection::Phase::Served)
      continue;
    fds.push_back({fd, short(c->phase == Connection::Phase::Writing ? POLLOUT : POLLIN), 0});
    polled.push_back(c);
    next = std::min(next, c->deadline);
  }
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
  int ready = poll(fds.data(), fds.size(), int(std::max<int64_t>(wait.count() + 1, 0)));
  if (ready < 0 && errno != EINTR) {
    std::perror("xf --serve: poll");
    stopping_ = true;
    return;
  }
  if (fds[0].revents) {
    uint64_t n;
    [[maybe_unused]] ssize_t k = read(wakeFd_, &n, sizeof(n));
    takeReturned();
  }
  if (fds[1].revents & POLLIN)
    acceptAll();
  for (size_t i = 2; i < fds.size(); ++i) {
    const std::shared_ptr<Connection> &c = polled[i - 2];
    if (!fds[i].revents || !connections_.count(c->fd))
      continue;
    if (c->phase == Connection::Phase::Writing)
      writeTo(c);
    else
      readFrom(c);
  }
  expire();
}

void HttpServer::Impl::acceptAll() {
  for (int k = 0; k < 64; ++k) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int fd = accept4(listenFd_, reinterpret_cast<sockaddr *>(&addr), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the pending connection stays queued; stop polling the listener
      // for a moment rather than spin on it.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(100);
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connections_.size() >= o_.maxConnections) { // refused at once, without reading
      HttpResponse busy = layerError(503, "too many connections (" +
                                              std::to_string(o_.maxConnections) +
                                              "); try again later", o_.retryAfterSeconds);
      std::string out = wholeResponse(busy, false, false);
      [[maybe_unused]] ssize_t sent = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (o_.accessLog)
        o_.accessLog({"", "", peerName(addr), 503, 0, uint64_t(out.size()), 0});
      ::close(fd);
      continue;
    }
    auto c = std::make_shared<Connection>(fd, peerName(addr), o_.limits);
    connections_[fd] = c;
    connectionCount = connections_.size();
    startReading(c);
  }
}

void HttpServer::Impl::startReading(const std::shared_ptr<Connection> &c) {
  c->phase = Connection::Phase::Reading;
  c->parser.reset();
  c->headChecked = false;
  c->bytesIn = 0;
  c->deadline = Clock::now() + o_.idleTimeout;
  if (!c->pending.empty()) {
    std::string rest = std::move(c->pending);
    c->pending.clear();
    process(c, rest.data(), rest.size());
  }
}

void HttpServer::Impl::readFrom(const std::shared_ptr<Connection> &c) {
  char buffer[65536];
  ssize_t n = recv(c->fd, buffer, sizeof(buffer), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0)
    return close(c);
  if (c->phase == Connection::Phase::Lingering)
    return; // discarded: the response is out, the client is still sending
  process(c, buffer, size_t(n));
}

// Feeds bytes to the connection's parser: answers errors and onHead's responses here, queues
// complete requests for the workers, keeps what follows a request for the next one.
void HttpServer::Impl::process(const std::shared_ptr<Connection> &c, const char *data,
                               size_t n) {
  bool wasStarted = c->parser.started();
  size_t used = c->parser.feed(data, n);
  c->bytesIn += used;
  if (!wasStarted && c->parser.started()) { // the whole request is due from its first byte
    c->requestStart = Clock::now();
    c->deadline = c->requestStart + o_.requestTimeout;
  }
  if (c->parser.failed()) {
    c->record = {"", "", c->peer, 0, c->bytesIn, 0, 0};
    return answer(c, layerError(c->parser.errorStatus(), c->parser.errorMessage(), 1), true);
  }
  const HttpRequest &head = c->parser.request();
  if (c->parser.headDone() && !c->headChecked) {
    c->headChecked = true;
    if (std::optional<HttpResponse> r = onHead_(head)) {
      c->record = {head.method, head.path, c->peer, 0, c->bytesIn, 0, 0};
      bool unread = !c->parser.complete(); // a body the server will not read
      if (!unread)
        c->pending.assign(data + used, n - used);
      return answer(c, *r, unread || !head.keepAlive);
    }
    if (head.expectContinue && !c->parser.complete()) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] ssize_t k = send(c->fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL);
    }
  }
  if (!c->parser.complete())
    return;
  c->pending.assign(data + used, n - used);
  dispatch(c);
}

// A response the loop writes itself (errors, onHead's answers), without blocking.
void HttpServer::Impl::answer(const std::shared_ptr<Connection> &c, const HttpResponse &r,
                              bool close) {
  c->out = wholeResponse(r, !close, c->record.method == "HEAD");
  c->outSent = 0;
  c->closeAfterWrite = close;
  c->phase = Connection::Phase::Writing;
  c->deadline = Clock::now() + o_.writeTimeout;
  c->record.status = r.status;
  c->record.bytesOut = c->out.size();
  writeTo(c);
}

void HttpServer::Impl::writeTo(const std::shared_ptr<Connection> &c) {
  while (c->outSent < c->out.size()) {
    ssize_t k = send(c->fd, c->out.data() + c->outSent, c->out.size() - c->outSent, MSG_NOSIGNAL);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      return; // the loop polls for POLLOUT
    if (k <= 0)
      return close(c);
    c->outSent += size_t(k);
  }
  finishWrite(c);
}

void HttpServer::Impl::finishWrite(const std::shared_ptr<Connection> &c) {
  if (o_.accessLog) {
    c->record.seconds =
        std::chrono::duration<double>(Clock::now() - c->requestStart).count();
    o_.accessLog(c->record);
  }
  c->out.clear();
  if (!c->closeAfterWrite)
    return startReading(c);
  // Half-close and read what the client still sends for a moment before closing, so that
  // its unread bytes do not turn the close into a reset that loses the response.
  shutdown(c->fd, SHUT_WR);
  c->phase = Connection::Phase::Lingering;
  c->deadline = Clock::now() + std::chrono::seconds(2);
}

void HttpServer::Impl::dispatch(const std::shared_ptr<Connection> &c) {
  HttpRequest request = c->parser.take();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() < o_.maxQueued) {
      c->phase = Connection::Phase::Served;
      served_.push_back(c);
      queue_.emplace_back(c, std::move(request));
      work_.notify_one();
      return;
    }
  }
  c->record = {request.method, request.path, c->peer, 0, c->bytesIn, 0, 0};
  answer(c, layerError(503, std::to_string(o_.maxQueued) +
                                " requests are waiting already; try again later",
                       o_.retryAfterSeconds),
         !request.keepAlive);
}

void HttpServer::Impl::expire() {
  Clock::time_point now = Clock::now();
  std::vector<std::shared_ptr<Connection>> late;
  for (auto &[fd, c] : connections_)
    if (c->phase != Connection::Phase::Served && c->deadline <= now)
      late.push_back(c);
  for (const auto &c : late) {
    if (c->phase == Connection::Phase::Reading && c->parser.started()) {
      // Late with its request: 408, written if the socket takes it at once, then closed.
      c->record = {c->parser.request().method, c->parser.request().path, c->peer, 0,
                   c->bytesIn, 0, 0};
      std::string out = wholeResponse(
          layerError(408, "the request did not arrive within " +
                              std::to_string(o_.requestTimeout.count() / 1000) + " s", 1),
          false, false);
      [[maybe_unused]] ssize_t k = send(c->fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (o_.accessLog) {
        c->record.status = 408;
        c->record.bytesOut = out.size();
        c->record.seconds = std::chrono::duration<double>(now - c->requestStart).count();
        o_.accessLog(c->record);
      }
    }
    close(c);
  }
}

void HttpServer::Impl::takeReturned() {
  std::vector<std::shared_ptr<Connection>> back;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    back.swap(returned_);
  }
  for (const auto &c : back) {
    if (c->closeOnReturn || stopping_)
      close(c);
    else
      startReading(c);
  }
}

void HttpServer::Impl::close(const std::shared_ptr<Connection> &c) {
  if (connections_.erase(c->fd)) {
    ::close(c->fd);
    connectionCount = connections_.size();
  }
}

void HttpServer::Impl::worker() {
  for (;;) {
    std::shared_ptr<Connection> c;
    HttpRequest request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return workersStop_ || !queue_.empty(); });
      if (workersStop_)
        return;
      c = queue_.front().first;
      request = std::move(queue_.front().second);
      queue_.pop_front();
    }
    serve(c, std::move(request));
  }
}

void HttpServer::Impl::serve(const std::shared_ptr<Connection> &c, HttpRequest request) {
  HttpAccessRecord record{request.method, request.path, c->peer, 0, c->bytesIn, 0, 0};
  bool keepAlive = request.keepAlive;
  Exchange exchange(o_, *c, std::move(request));
  try {
    onRequest_(exchange);
  } catch (const std::exception &e) {
    if (!exchange.responded())
      exchange.respond(layerError(500, std::string("internal error: ") + e.what(), 1));
  }
  if (!exchange.responded())
    exchange.respond(layerError(500, "internal error: no response", 1));
  if (o_.accessLog) {
    record.status = exchange.status();
    record.bytesOut = exchange.bytesOut();
    record.seconds = std::chrono::duration<double>(Clock::now() - c->requestStart).count();
    o_.accessLog(record);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    c->closeOnReturn = !exchange.ok() || !keepAlive || !exchange.request().keepAlive;
    served_.erase(std::find(served_.begin(), served_.end(), c));
    returned_.push_back(c);
  }
  wake();
}

HttpServer::HttpServer(HttpServerOptions options, HeadHandler onHead, RequestHandler onRequest)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(onHead), std::move(onRequest))) {}
HttpServer::~HttpServer() = default;
std::optional<std::string> HttpServer::bind(const std::string &host, int port, int &boundPort) {
  return impl_->bind(host, port, boundPort);
}
bool HttpServer::run() { return impl_->run(); }
void HttpServer::stop() { impl_->stop(); }
size_t HttpServer::queued() const { return impl_->queued(); }
size_t HttpServer::connections() const { return impl_->connectionCount; }

} // namespace xfrt
