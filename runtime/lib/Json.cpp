//===- Json.cpp - A small, bounded JSON parser ----------------------------===//
//
// Recursive descent over a string_view. Every read is bounds-checked against the end of the
// input; recursion depth, value count and input size are bounded by JsonLimits.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Json.h"

#include <unordered_set>

#include <charconv>
#include <cstdio>
#include <cstring>

namespace xfrt {

const JsonValue *JsonValue::find(std::string_view key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key)
      return &items[i];
  return nullptr;
}

namespace {

class Parser {
public:
  Parser(std::string_view text, const JsonLimits &limits) : text_(text), limits_(limits) {}

  Status parseDocument(JsonValue &out) {
    if (text_.size() > limits_.maxBytes)
      return makeError("invalid JSON: document of " + std::to_string(text_.size()) +
                       " bytes exceeds the limit of " + std::to_string(limits_.maxBytes));
    skipSpace();
    if (Status s = parseValue(out, 0); !s)
      return s;
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected characters after the value");
    return Status::success();
  }

private:
  std::string_view text_;
  const JsonLimits &limits_;
  size_t pos_ = 0;
  size_t values_ = 0;

  Status fail(const std::string &what) const {
    return makeError("invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[pos_]; }
  void skipSpace() {
    while (!atEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                        text_[pos_] == '\r'))
      ++pos_;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  Status parseValue(JsonValue &out, int depth) {
    if (++values_ > limits_.maxValues)
      return fail("more than " + std::to_string(limits_.maxValues) + " values");
    if (atEnd())
      return fail("unexpected end of input");
    char c = peek();
    switch (c) {
    case '{':
      return parseObject(out, depth + 1);
    case '[':
      return parseArray(out, depth + 1);
    case '"':
      out.kind = JsonValue::Kind::String;
      return parseString(out.string);
    case 't':
    case 'f':
    case 'n':
      if (consumeWord("true") || consumeWord("false")) {
        out.kind = JsonValue::Kind::Bool;
        out.boolean = c == 't';
        return Status::success();
      }
      if (consumeWord("null")) {
        out.kind = JsonValue::Kind::Null;
        return Status::success();
      }
      return fail("unknown literal");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(out);
      return fail(std::string("unexpected character '") + printable(c) + "'");
    }
  }

  static std::string printable(char c) {
    if (c >= 0x20 && c < 0x7f)
      return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(static_cast<unsigned char>(c)));
    return buf;
  }

  Status parseObject(JsonValue &out, int depth) {
    if (depth > limits_.maxDepth)
      return fail("nesting deeper than " + std::to_string(limits_.maxDepth));
    out.kind = JsonValue::Kind::Object;
    ++pos_; // '{'
    std::unordered_set<std::string> seen;
    skipSpace();
    if (peek() == '}') {
      ++pos_;
      return Status::success();
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return fail("expected a string key");
      std::string key;
      if (Status s = parseString(key); !s)
        return s;
      // Small objects scan; large ones (a 50k-entry vocab.json) use a hash set.
      bool duplicate = false;
      if (out.keys.size() < 16) {
        for (const std::string &k : out.keys)
          duplicate |= k == key;
      } else {
        if (seen.empty())
          seen.insert(out.keys.begin(), out.keys.end());
        duplicate = !seen.insert(key).second;
      }
      if (duplicate)
        return fail("duplicate key " + quoteJson(key));
      skipSpace();
      if (peek() != ':')
        return fail("expected ':'");
      ++pos_;
      skipSpace();
      out.keys.push_back(std::move(key));
      out.items.emplace_back();
      if (Status s = parseValue(out.items.back(), depth); !s)
        return s;
      bool more = false;
      if (Status s = afterItem('}', more); !s || !more)
        return s;
    }
  }

  // After an item of an object or a list: ',' (`more`: another item follows) or `close`.
  Status afterItem(char close, bool &more) {
    skipSpace();
    more = peek() == ',';
    if (more || peek() == close) {
      ++pos_;
      return Status::success();
    }
    return fail(std::string("expected ',' or '") + close + "'");
  }

  Status parseArray(JsonValue &out, int depth) {
    if (depth > limits_.maxDepth)
      return fail("nesting deeper than " + std::to_string(limits_.maxDepth));
    out.kind = JsonValue::Kind::Array;
    ++pos_; // '['
    skipSpace();
    if (peek() == ']') {
      ++pos_;
      return Status::success();
    }
    while (true) {
      skipSpace();
      out.items.emplace_back();
      if (Status s = parseValue(out.items.back(), depth); !s)
        return s;
      bool more = false;
      if (Status s = afterItem(']', more); !s || !more)
        return s;
    }
  }

  Status parseNumber(JsonValue &out) {
    size_t start = pos_;
    bool integral = true;
    if (peek() == '-')
      ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    } else {
      return fail("expected a digit");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-')
        ++pos_;
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9')
        ++pos_;
    }
    const char *first = text_.data() + start, *last = text_.data() + pos_;
    out.kind = JsonValue::Kind::Number;
    if (integral) {
      auto [ptr, ec] = std::from_chars(first, last, out.integer);
      out.isInteger = ec == std::errc() && ptr == last;
    }
    auto [ptr, ec] = std::from_chars(first, last, out.number);
    if (ec == std::errc::result_out_of_range)
      return fail("number out of range");
    if (ec != std::errc() || ptr != last)
      return fail("malformed number");
    if (out.isInteger)
      out.number = static_cast<double>(out.integer);
    return Status::success();
  }

  Status parseHex4(uint32_t &out) {
    if (text_.size() - pos_ < 4)
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= uint32_t(c - 'A' + 10);
      else
        return fail("bad hex digit in \\u escape");
    }
    return Status::success();
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18));
      s += char(0x80 | ((cp >> 12) & 0x3F));
      s += char(0x80 | ((cp >> 6) & 0x3F));
      s += char(0x80 | (cp & 0x3F));
    }
  }

  // Validates one UTF-8 sequence starting at pos_ and appends it to `s`.
  Status copyUtf8(std::string &s) {
    auto byte = [&](size_t i) { return static_cast<unsigned char>(text_[pos_ + i]); };
    unsigned char b0 = byte(0);
    size_t n;
    uint32_t cp, min;
    if (b0 >= 0xC2 && b0 <= 0xDF)
      n = 2, cp = b0 & 0x1F, min = 0x80;
    else if (b0 >= 0xE0 && b0 <= 0xEF)
      n = 3, cp = b0 & 0x0F, min = 0x800;
    else if (b0 >= 0xF0 && b0 <= 0xF4)
      n = 4, cp = b0 & 0x07, min = 0x10000;
    else
      return fail("invalid UTF-8");
    if (text_.size() - pos_ < n)
      return fail("truncated UTF-8 sequence");
    for (size_t i = 1; i < n; ++i) {
      if ((byte(i) & 0xC0) != 0x80)
        return fail("invalid UTF-8");
      cp = (cp << 6) | (byte(i) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return fail("invalid UTF-8");
    s.append(text_.data() + pos_, n);
    pos_ += n;
    return Status::success();
  }

  Status parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return Status::success();
      }
      if (c < 0x20)
        return fail("control character in string");
      if (c >= 0x80) {
        if (Status s = copyUtf8(out); !s)
          return s;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (atEnd())
        return fail("unterminated escape");
      char e = text_[pos_++];
      // Pairs of (escape letter, character it stands for).
      static constexpr char kSimple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
      bool simple = false;
      for (size_t i = 0; i + 1 < sizeof kSimple; i += 2)
        if (e == kSimple[i]) {
          out += kSimple[i + 1];
          simple = true;
          break;
        }
      if (simple)
        continue;
      switch (e) {
      case 'u': {
        uint32_t cp;
        if (Status s = parseHex4(cp); !s)
          return s;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return fail("unpaired low surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (!consumeWord("\\u"))
            return fail("unpaired high surrogate");
          uint32_t lo;
          if (Status s = parseHex4(lo); !s)
            return s;
          if (lo < 0xDC00 || lo > 0xDFFF)
            return fail("unpaired high surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail("unknown escape '\\" + printable(e) + "'");
      }
    }
  }
};

} // namespace

Expected<JsonValue> parseJson(std::string_view text, const JsonLimits &limits) {
  JsonValue value;
  Parser parser(text, limits);
  if (Status s = parser.parseDocument(value); !s)
    return s;
  return value;
}

std::string quoteJson(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

static std::string describe(const JsonValue &v, int depth) {
  switch (v.kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return v.boolean ? "true" : "false";
  case JsonValue::Kind::Number: {
    if (v.isInteger)
      return std::to_string(v.integer);
    // The shortest form that reads back as the same double (1e-05, not 1.0000000000000001e-05).
    char buf[32];
    for (int precision = 6; precision <= 17; ++precision) {
      std::snprintf(buf, sizeof buf, "%.*g", precision, v.number);
      double back = 0;
      std::from_chars(buf, buf + std::strlen(buf), back);
      if (back == v.number)
        break;
    }
    return buf;
  }
  case JsonValue::Kind::String:
    return v.string.size() <= 40 ? quoteJson(v.string) : quoteJson(v.string.substr(0, 40)) + "...";
  case JsonValue::Kind::Array: {
    if (v.items.size() > 8 || depth > 1)
      return "an array of " + std::to_string(v.items.size()) + " values";
    std::string out = "[";
    for (size_t i = 0; i < v.items.size(); ++i)
      out += (i ? ", " : "") + describe(v.items[i], depth + 1);
    return out + "]";
  }
  case JsonValue::Kind::Object:
    return "an object";
  }
  return "?";
}

std::string describeJson(const JsonValue &v) { return describe(v, 0); }

} // namespace xfrt
