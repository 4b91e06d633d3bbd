//===- Json.h - A small, bounded JSON parser ---------------------*- C++ -*-===//
//
// Parses RFC 8259 JSON (strict: no comments, no trailing commas, valid UTF-8) into a tree of
// JsonValue. Input size, nesting depth and the number of values are limited so that a hostile
// safetensors header or manifest cannot exhaust the stack or memory. Object keys keep their
// order; a duplicate key is an error.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_JSON_H
#define XFRT_JSON_H

#include "xfrt/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;             // every Number
  bool isInteger = false;        // written without fraction/exponent and fits in int64
  int64_t integer = 0;           // valid when isInteger
  std::string string;            // String
  std::vector<JsonValue> items;  // Array elements, or Object values
  std::vector<std::string> keys; // Object keys, parallel to items

  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }
  // Object member lookup; nullptr when absent or not an object.
  const JsonValue *find(std::string_view key) const;
};

struct JsonLimits {
  size_t maxBytes = size_t(100) << 20; // whole document
  int maxDepth = 64;                   // nested arrays/objects
  size_t maxValues = size_t(1) << 20;  // values of any kind in the document
};

// Parses exactly one JSON value surrounded by optional whitespace. Errors read
// "invalid JSON at byte N: <what>".
Expected<JsonValue> parseJson(std::string_view text, const JsonLimits &limits = {});

// `s` as a JSON string literal, quotes included.
std::string quoteJson(std::string_view s);

// Short human description of a value for error messages ("[1, 2]", "\"F32\"", "an object").
std::string describeJson(const JsonValue &v);

} // namespace xfrt

#endif // XFRT_JSON_H
