//===- HexText.h - Texts as hex on the command line of the test tools -*- C++ -*-===//
//
// xf-tokenize --hex and xf-chat-render pass texts as their bytes in hex, so a text may hold
// newlines, tabs and invalid UTF-8 and still be one item of a line.
//
//===----------------------------------------------------------------------===//
#ifndef XF_TEST_TOKENIZERS_HEXTEXT_H
#define XF_TEST_TOKENIZERS_HEXTEXT_H

#include <string>

inline bool fromHex(const std::string &hex, std::string &out) {
  auto nibble = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  if (hex.size() % 2)
    return false;
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out += char(hi * 16 + lo);
  }
  return true;
}

inline std::string toHex(const std::string &bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

#endif // XF_TEST_TOKENIZERS_HEXTEXT_H
