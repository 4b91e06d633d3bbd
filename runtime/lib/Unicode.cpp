//===- Unicode.cpp - UTF-8 and the Unicode classes tokenizers need --------===//
//
// Binary searches over the generated tables in UnicodeTables.inc.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Unicode.h"

#include <algorithm>
#include <iterator>

namespace xfrt::unicode {
namespace {

struct CodepointRange {
  uint32_t lo, hi;
};

#include "UnicodeTables.inc"

template <size_t N> bool inRanges(const CodepointRange (&ranges)[N], char32_t c) {
  const CodepointRange *it =
      std::upper_bound(ranges, ranges + N, uint32_t(c),
                       [](uint32_t value, const CodepointRange &r) { return value < r.lo; });
  return it != ranges && uint32_t(c) <= (it - 1)->hi;
}

template <size_t N> int findKey(const uint32_t (&keys)[N], char32_t c) {
  const uint32_t *it = std::lower_bound(keys, keys + N, uint32_t(c));
  return it != keys + N && *it == uint32_t(c) ? int(it - keys) : -1;
}

} // namespace

Utf8Char decodeUtf8(std::string_view text, size_t offset) {
  const Utf8Char invalid{0xFFFD, 1, false};
  auto byte = [&](size_t i) { return uint8_t(text[offset + i]); };
  uint8_t b0 = byte(0);
  if (b0 < 0x80)
    return {b0, 1, true};
  uint32_t length, cp, min;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return invalid;
  }
  if (text.size() - offset < length)
    return invalid;
  for (uint32_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80)
      return invalid;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return invalid;
  return {char32_t(cp), length, true};
}

void appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

bool isValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    Utf8Char ch = decodeUtf8(text, i);
    if (!ch.valid)
      return false;
    i += ch.length;
  }
  return true;
}

bool isLetter(char32_t c) { return inRanges(kLetterRanges, c); }
bool isNumber(char32_t c) { return inRanges(kNumberRanges, c); }
bool isPunctuation(char32_t c) { return inRanges(kPunctuationRanges, c); }
bool isOther(char32_t c) { return inRanges(kOtherRanges, c); }
bool isNonspacingMark(char32_t c) { return inRanges(kNonspacingMarkRanges, c); }

bool isWhitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool isCjkIdeograph(char32_t c) {
  // The ranges of Hugging Face tokenizers' BertNormalizer (is_chinese_char).
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void appendLowercase(std::vector<char32_t> &out, char32_t c) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  int i = findKey(kLowercaseKeys, c);
  if (i < 0) {
    out.push_back(c);
    return;
  }
  for (int k = 0; k < 3; ++k)
    if (uint32_t v = kLowercaseValues[3 * i + k])
      out.push_back(char32_t(v));
}

void appendWithoutAccents(std::vector<char32_t> &out, char32_t c) {
  if (c < 0xC0) {
    out.push_back(c);
    return;
  }
  // Hangul syllables: S = 0xAC00 + (L * 21 + V) * 28 + T (Unicode 3.12); jamo are not marks.
  if (c >= 0xAC00 && c <= 0xD7A3) {
    uint32_t s = c - 0xAC00;
    out.push_back(0x1100 + s / (21 * 28));
    out.push_back(0x1161 + (s % (21 * 28)) / 28);
    if (s % 28)
      out.push_back(0x11A7 + s % 28);
    return;
  }
  if (isNonspacingMark(c))
    return;
  int i = findKey(kStripKeys, c);
  if (i < 0) {
    out.push_back(c);
    return;
  }
  for (uint32_t k = kStripOffsets[i]; k < kStripOffsets[i + 1]; ++k)
    out.push_back(char32_t(kStripData[k]));
}

} // namespace xfrt::unicode
