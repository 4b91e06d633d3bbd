//===- ServeAccess.cpp - Who may drive --serve: key, Host, Origin, content type ===//
#include "xfrt/ServeAccess.h"

#include "xfrt/Cli.h"

namespace xfrt {
namespace {

std::string lowerAscii(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return out;
}

// Short, printable, for an error message that quotes a header.
std::string quoted(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80))
    out += (unsigned char)c < 0x20 || (unsigned char)c >= 0x7f ? '?' : c;
  return "'" + out + (s.size() > 80 ? "...'" : "'");
}

} // namespace

bool sameSecret(std::string_view a, std::string_view b) {
  unsigned char differ = a.size() != b.size();
  size_t n = a.size() > b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i)
    differ |= (unsigned char)((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  return differ == 0;
}

std::string_view hostOfAuthority(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    return close == std::string_view::npos ? authority : authority.substr(1, close - 1);
  }
  return authority.substr(0, authority.find(':'));
}

std::optional<AccessRefusal> ServeAccess::checkPeer(const HttpRequest &head) const {
  if (const std::string *host = head.header("host"); host && loopbackOnly_) {
    std::string name = lowerAscii(hostOfAuthority(*host));
    if (!isLoopbackHost(name))
      return AccessRefusal{403, "Host " + quoted(*host) + " is not a name of this machine: "
                                "the server listens on loopback only"};
  }
  if (const std::string *origin = head.header("origin"); origin && allowedOrigin(head).empty())
    return AccessRefusal{403, "Origin " + quoted(*origin) + " is not allowed (loopback origins "
                              "and --allowed-origin are)"};
  return std::nullopt;
}

std::string ServeAccess::allowedOrigin(const HttpRequest &head) const {
  const std::string *origin = head.header("origin");
  if (!origin)
    return "";
  for (const std::string &allowed : allowedOrigins_)
    if (lowerAscii(allowed) == lowerAscii(*origin))
      return *origin;
  std::string_view o(*origin);
  size_t scheme = o.find("://");
  if (scheme == std::string_view::npos)
    return "";
  std::string_view s = o.substr(0, scheme);
  if (s != "http" && s != "https")
    return "";
  std::string_view authority = o.substr(scheme + 3);
  if (authority.find('/') != std::string_view::npos)
    return "";
  return isLoopbackHost(lowerAscii(hostOfAuthority(authority))) ? *origin : "";
}

std::optional<AccessRefusal> ServeAccess::checkKey(const HttpRequest &head) const {
  if (apiKey_.empty())
    return std::nullopt;
  const std::string *auth = head.header("authorization");
  std::string_view given = auth ? std::string_view(*auth) : std::string_view();
  if (given.size() < 7 || lowerAscii(given.substr(0, 7)) != "bearer ")
    return AccessRefusal{401, "this server needs an API key: send 'Authorization: Bearer KEY'"};
  given.remove_prefix(7);
  while (!given.empty() && given.front() == ' ')
    given.remove_prefix(1);
  if (!sameSecret(given, apiKey_))
    return AccessRefusal{401, "the API key is not this server's"};
  return std::nullopt;
}

std::optional<AccessRefusal> ServeAccess::checkJson(const HttpRequest &head) {
  const std::string *type = head.header("content-type");
  std::string media = type ? lowerAscii(type->substr(0, type->find(';'))) : "";
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t'))
    media.pop_back();
  if (media == "application/json")
    return std::nullopt;
  return AccessRefusal{415, "the request body must be JSON sent as 'Content-Type: "
                            "application/json', not " +
                                (type ? quoted(*type) : std::string("without a Content-Type")) +
                                " (curl: -H 'Content-Type: application/json')"};
}

} // namespace xfrt
