//===- Unicode.h - UTF-8 and the Unicode classes tokenizers need --*- C++ -*-===//
//
// Strict UTF-8 decoding/encoding and the character classes of the GPT-2 pre-tokenizer regex
// (\p{L}, \p{N}, \s) and of BERT's BasicTokenizer (controls, punctuation, CJK, lower-casing,
// accent stripping). The tables are generated from Python's unicodedata by
// runtime/tools/gen_unicode_tables.py (see runtime/lib/UnicodeTables.inc for the version).
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_UNICODE_H
#define XFRT_UNICODE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt::unicode {

// One decoded character: `length` bytes starting at the offset passed to decodeUtf8.
// An ill-formed byte (overlong form, surrogate, > U+10FFFF, truncated or stray continuation
// byte) decodes as valid = false, length = 1, codepoint = U+FFFD.
struct Utf8Char {
  char32_t codepoint;
  uint32_t length;
  bool valid;
};
Utf8Char decodeUtf8(std::string_view text, size_t offset);
void appendUtf8(std::string &out, char32_t codepoint);
bool isValidUtf8(std::string_view text);

bool isLetter(char32_t c);         // general category L*
bool isNumber(char32_t c);         // general category N*
bool isWhitespace(char32_t c);     // the White_Space property
bool isPunctuation(char32_t c);    // general category P* (as assigned in Unicode 8.0)
bool isOther(char32_t c);          // Cc Cf Co Cs (as assigned in Unicode 8.0)
bool isNonspacingMark(char32_t c); // general category Mn (as assigned in Unicode 8.0)
bool isCjkIdeograph(char32_t c);   // the CJK blocks BERT surrounds with spaces

// Appends the full lowercase mapping of `c` (one to three code points).
void appendLowercase(std::vector<char32_t> &out, char32_t c);
// Appends the canonical decomposition (NFD) of `c` without its nonspacing marks: what BERT's
// strip_accents keeps of `c`. Hangul syllables decompose algorithmically into jamo.
void appendWithoutAccents(std::vector<char32_t> &out, char32_t c);

} // namespace xfrt::unicode

#endif // XFRT_UNICODE_H
