//===- HttpServer.h - --serve's HTTP/1.1 server: one poll loop, bounded workers -*- C++ -*-===//
//
// What faces the network (docs/serving.md, "The HTTP layer"):
//   - one thread runs a poll() loop that accepts connections and reads every request head and
//     body, non-blocking, through HttpRequestParser (limits enforced while reading). A request
//     must arrive whole within HttpServerOptions::requestTimeout of its first byte — a deadline,
//     not an idle timeout, so a byte a second does not keep it open — and an idle keep-alive
//     connection is closed after idleTimeout. A slow client costs a file descriptor and a few
//     KiB, never a thread;
//   - the loop calls onHead on each complete head: cheap answers (health, metrics, refusals:
//     authentication, Host/Origin, content type, unknown paths) are given there, on the loop
//     thread, before any body is read, so nothing queued can delay them;
//   - complete requests go to a queue of at most maxQueued, served by `workers` threads
//     (onRequest); past it, and past maxConnections open connections, the answer is 503 with
//     Retry-After;
//   - a worker writes its response (whole, or streamed in chunks) with a deadline of
//     writeTimeout for each write; HttpExchange::clientGone() tells a handler that its client
//     hung up, so it can cancel work nobody will read.
// stop() closes the listener and every connection (shutting down those a worker holds), joins
// every thread and returns: it does not wait for a slow client.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_HTTPSERVER_H
#define XFRT_HTTPSERVER_H

#include "xfrt/HttpParser.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xfrt {

struct HttpResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::vector<std::pair<std::string, std::string>> headers; // beyond the framing ones
  std::string body;
};

// One line of the access log (HttpServerOptions::accessLog), filled by the server.
struct HttpAccessRecord {
  std::string method, path, peer;
  int status = 0;
  uint64_t bytesIn = 0, bytesOut = 0;
  double seconds = 0; // from the request's first byte to its last byte written
};

struct HttpServerOptions {
  HttpLimits limits;
  std::chrono::milliseconds requestTimeout{30000}; // head + body, from the first byte
  std::chrono::milliseconds idleTimeout{15000};    // a keep-alive connection between requests
  std::chrono::milliseconds writeTimeout{30000};   // each write of a response
  size_t workers = 48;
  size_t maxConnections = 256;
  size_t maxQueued = 64;       // complete requests waiting for a worker
  int retryAfterSeconds = 1;   // with every 503 the layer gives itself
  std::function<void(const HttpAccessRecord &)> accessLog; // called on the thread that wrote
};

// A request being served by a worker, and its response.
class HttpExchange {
public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest &request() const = 0;
  // Whether the client hung up (closed its side of the connection or reset it): its response
  // will not be read. Non-blocking; cheap enough to ask every few milliseconds.
  virtual bool clientGone() = 0;
  // A whole response. Once per exchange, and not after startStream.
  virtual void respond(const HttpResponse &response) = 0;
  // A streamed response: the head, then chunks (false once the client is gone or a write
  // missed its deadline: stop producing), then end.
  virtual bool startStream(const HttpResponse &head) = 0;
  virtual bool writeChunk(const std::string &data) = 0;
  virtual void endStream() = 0;
  // Ends the exchange without a response (the client is gone): the connection is closed and
  // the access log says 499.
  virtual void abandon() = 0;
};

class HttpServer {
public:
  // Called on the loop thread once a head is complete, before the body is read: a response
  // ends the request there (the connection closes if a body was announced); nullopt sends it
  // on to onRequest. It must not block.
  using HeadHandler = std::function<std::optional<HttpResponse>(const HttpRequest &head)>;
  // Called on a worker with the whole request; it must respond (or stream) before returning,
  // else the client gets 500.
  using RequestHandler = std::function<void(HttpExchange &exchange)>;

  HttpServer(HttpServerOptions options, HeadHandler onHead, RequestHandler onRequest);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  // Binds host:port (port 0: any free one); returns the port, or an error message.
  std::optional<std::string> bind(const std::string &host, int port, int &boundPort);
  // Serves until stop(); true unless the loop failed.
  bool run();
  // From any thread: ends run() soon, whatever the clients do.
  void stop();
  // Requests complete and waiting for a worker; connections open.
  size_t queued() const;
  size_t connections() const;

  class Impl;

private:
  std::unique_ptr<Impl> impl_;
};

// "200 OK" style reason phrases for the statuses the server uses.
const char *httpReason(int status);

} // namespace xfrt

#endif // XFRT_HTTPSERVER_H
