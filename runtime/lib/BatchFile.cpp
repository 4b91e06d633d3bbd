//===- BatchFile.cpp - JSON Lines results of --batch-file -----------------===//
#include "xfrt/BatchFile.h"

#include "xfrt/Json.h"
#include "xfrt/Unicode.h"

#include <charconv>
#include <cmath>

namespace xfrt {

std::string validUtf8(const std::string &text) {
  if (unicode::isValidUtf8(text))
    return text;
  std::string out;
  for (size_t i = 0; i < text.size();) {
    unicode::Utf8Char c = unicode::decodeUtf8(text, i);
    unicode::appendUtf8(out, c.valid ? c.codepoint : 0xFFFD);
    i += c.length > 0 ? c.length : 1;
  }
  return out;
}

void appendJsonFloat(std::string &out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void writeEmbeddingLine(std::FILE *out, size_t index, int64_t line, int64_t tokens,
                        const float *embedding, int64_t d) {
  std::string text = "{\"index\": " + std::to_string(index) + ", \"line\": " +
                     std::to_string(line) + ", \"tokens\": " + std::to_string(tokens) +
                     ", \"embedding\": [";
  text.reserve(text.size() + size_t(d) * 16 + 4);
  for (int64_t k = 0; k < d; ++k) {
    if (k)
      text += ", ";
    appendJsonFloat(text, embedding[k]);
  }
  text += "]}\n";
  std::fputs(text.c_str(), out);
}

void writeGenerationLine(std::FILE *out, size_t index, int64_t line, int64_t promptTokens,
                         const std::vector<int32_t> &ids, const std::optional<std::string> &text,
                         const std::string &stop) {
  std::string s = "{\"index\": " + std::to_string(index);
  if (line >= 0)
    s += ", \"line\": " + std::to_string(line);
  s += ", \"prompt_tokens\": " + std::to_string(promptTokens) + ", \"ids\": [";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ids[i]);
  s += "]";
  if (text)
    s += ", \"text\": " + quoteJson(validUtf8(*text));
  s += ", \"stop\": " + quoteJson(stop) + "}\n";
  std::fputs(s.c_str(), out);
  std::fflush(out);
}

} // namespace xfrt
