//===- ServeAccess.h - Who may drive --serve: key, Host, Origin, content type -*- C++ -*-===//
//
// The checks every request's head goes through before the server does anything for it
// (docs/serving.md, "Access"):
//   - Host: when listening on loopback, the Host header must name loopback (localhost,
//     127.x.y.z, [::1]) — a page that rebinds its own DNS name to 127.0.0.1 sends its name;
//   - Origin: a browser's Origin must be a loopback one or one given by --allowed-origin;
//   - the API key (--api-key / XF_API_KEY): "Authorization: Bearer KEY", compared in constant
//     time; /health and /ready are open;
//   - a body must be declared JSON (Content-Type: application/json): a form or text/plain
//     body, which a web page may send without asking first, is 415.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SERVEACCESS_H
#define XFRT_SERVEACCESS_H

#include "xfrt/HttpParser.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

struct AccessRefusal {
  int status;
  std::string message;
};

class ServeAccess {
public:
  ServeAccess(std::string apiKey, bool loopbackOnly, std::vector<std::string> allowedOrigins)
      : apiKey_(std::move(apiKey)), loopbackOnly_(loopbackOnly),
        allowedOrigins_(std::move(allowedOrigins)) {}

  // Host and Origin (403).
  std::optional<AccessRefusal> checkPeer(const HttpRequest &head) const;
  // The API key, when there is one (401).
  std::optional<AccessRefusal> checkKey(const HttpRequest &head) const;
  // A JSON body (415).
  static std::optional<AccessRefusal> checkJson(const HttpRequest &head);
  // The request's Origin when it is allowed (for Access-Control-Allow-Origin), else "".
  std::string allowedOrigin(const HttpRequest &head) const;
  bool hasKey() const { return !apiKey_.empty(); }

private:
  std::string apiKey_;
  bool loopbackOnly_;
  std::vector<std::string> allowedOrigins_;
};

// Equal strings, in time that depends on their lengths only.
bool sameSecret(std::string_view a, std::string_view b);
// The host of a Host header value or an origin's authority: "[::1]:80" -> "::1".
std::string_view hostOfAuthority(std::string_view authority);

} // namespace xfrt

#endif // XFRT_SERVEACCESS_H
