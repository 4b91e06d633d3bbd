//===- MessageText.cpp - Input quoted in messages, safe for a terminal ----===//
#include "xfrt/MessageText.h"

#include "xfrt/Unicode.h"

namespace xfrt {
namespace {

// Appends `text` escaped, stopping before `maxBytes` bytes of it; returns how many it took.
// A quote escapes backslashes too, so that what it shows is unambiguous; a whole message does
// not, as the quotes inside it are escaped already.
size_t appendEscaped(std::string_view text, size_t maxBytes, bool backslashes,
                     std::string &out) {
  static const char *const kHex = "0123456789abcdef";
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = (unsigned char)text[i];
    size_t length = 1;
    if (c >= 0x80) {
      unicode::Utf8Char ch = unicode::decodeUtf8(text, i);
      // C1 controls (U+0080-U+009F) act on terminals too.
      if (ch.valid && ch.codepoint >= 0xa0)
        length = ch.length;
    }
    if (i + length > maxBytes)
      break;
    if (length > 1) {
      out.append(text.substr(i, length));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\' && backslashes) {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
    i += length;
  }
  return i;
}

} // namespace

std::string quoteInput(std::string_view text, size_t maxBytes) {
  std::string out = "'";
  size_t taken = appendEscaped(text, maxBytes, /*backslashes=*/true, out);
  out += taken < text.size() ? "…'" : "'";
  return out;
}

std::string printableMessage(std::string_view message, size_t maxBytes) {
  std::string out;
  size_t taken = appendEscaped(message, maxBytes, /*backslashes=*/false, out);
  if (taken < message.size())
    out += "… (" + std::to_string(message.size() - taken) + " more bytes)";
  return out;
}

} // namespace xfrt
