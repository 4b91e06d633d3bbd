//===- GgufMetadata.cpp - Typed access to GGUF key-value metadata ---------===//
//
// Lookups by key and typed getters whose errors name the file, the key, what the file holds
// and what was expected, so a model loader can pass them on unchanged.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Gguf.h"

#include "xfrt/Json.h" // quoteJson

#include <cstdio>
#include <cstring>

namespace xfrt {
namespace {

uint64_t loadLE(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;)
    v = (v << 8) | p[i];
  return v;
}

bool isIntegerType(GgufValueType t) {
  switch (t) {
  case GgufValueType::U8:
  case GgufValueType::I8:
  case GgufValueType::U16:
  case GgufValueType::I16:
  case GgufValueType::U32:
  case GgufValueType::I32:
  case GgufValueType::U64:
  case GgufValueType::I64:
    return true;
  default:
    return false;
  }
}

// The integer `bits` of type `t` sign-extended as needed; nullopt for a u64 above INT64_MAX.
std::optional<int64_t> integerValue(GgufValueType t, uint64_t bits) {
  switch (t) {
  case GgufValueType::I8:
    return int64_t(int8_t(bits));
  case GgufValueType::I16:
    return int64_t(int16_t(bits));
  case GgufValueType::I32:
    return int64_t(int32_t(bits));
  case GgufValueType::I64:
    return int64_t(bits);
  case GgufValueType::U64:
    if (bits > uint64_t(INT64_MAX))
      return std::nullopt;
    return int64_t(bits);
  default:
    return int64_t(bits);
  }
}

double floatValue(GgufValueType t, uint64_t bits) {
  if (t == GgufValueType::F32) {
    uint32_t b = uint32_t(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

std::string formatFloat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

} // namespace

size_t ggufScalarSize(GgufValueType t) {
  switch (t) {
  case GgufValueType::U8:
  case GgufValueType::I8:
  case GgufValueType::Bool:
    return 1;
  case GgufValueType::U16:
  case GgufValueType::I16:
    return 2;
  case GgufValueType::U32:
  case GgufValueType::I32:
  case GgufValueType::F32:
    return 4;
  case GgufValueType::U64:
  case GgufValueType::I64:
  case GgufValueType::F64:
    return 8;
  default:
    return 0; // String, Array
  }
}

const char *ggufValueTypeName(GgufValueType t) {
  static const char *const kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) <= uint32_t(GgufValueType::F64) ? kNames[uint32_t(t)] : "?";
}

bool GgufValue::isInteger() const { return isIntegerType(type); }

std::optional<int64_t> GgufValue::asInt64() const {
  if (!isInteger())
    return std::nullopt;
  return integerValue(type, scalarBits);
}

std::string GgufValue::describe() const {
  std::string name = ggufValueTypeName(type);
  switch (type) {
  case GgufValueType::String:
    return name + " " + quoteJson(std::string(string.substr(0, 64))) +
           (string.size() > 64 ? "..." : "");
  case GgufValueType::Array:
    return "array of " + std::to_string(count) + " " + ggufValueTypeName(elementType);
  case GgufValueType::Bool:
    return scalarBits ? "bool true" : "bool false";
  case GgufValueType::F32:
  case GgufValueType::F64:
    return name + " " + formatFloat(floatValue(type, scalarBits));
  default:
    if (type == GgufValueType::U64)
      return name + " " + std::to_string(scalarBits);
    return name + " " + std::to_string(*asInt64());
  }
}

const GgufValue *GgufHeader::find(std::string_view key) const {
  for (const GgufKeyValue &kv : metadata)
    if (kv.key == key)
      return &kv.value;
  return nullptr;
}

const GgufTensor *GgufHeader::findTensor(std::string_view name) const {
  for (const GgufTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

namespace {

// The value at `key` if it exists and `accept` says so; otherwise the error.
template <typename Accept>
Expected<const GgufValue *> lookup(const GgufHeader &h, std::string_view key, const char *expected,
                                   Accept accept) {
  const GgufValue *v = h.find(key);
  std::string where = h.fileName + ": metadata '" + std::string(key) + "'";
  if (!v)
    return makeError(where + " is missing (expected " + expected + ")");
  if (!accept(*v))
    return makeError(where + " is " + v->describe() + ", not " + expected);
  return v;
}

bool isFloatType(GgufValueType t) { return t == GgufValueType::F32 || t == GgufValueType::F64; }

} // namespace

Expected<uint32_t> GgufHeader::getU32(std::string_view key) const {
  Expected<const GgufValue *> v =
      lookup(*this, key, "an unsigned 32-bit integer", [](const GgufValue &x) {
        std::optional<int64_t> i = x.asInt64();
        return i && *i >= 0 && *i <= int64_t(UINT32_MAX);
      });
  if (!v)
    return v.status();
  return uint32_t(*(*v)->asInt64());
}

Expected<int64_t> GgufHeader::getI64(std::string_view key) const {
  Expected<const GgufValue *> v = lookup(
      *this, key, "a 64-bit integer", [](const GgufValue &x) { return x.asInt64().has_value(); });
  if (!v)
    return v.status();
  return *(*v)->asInt64();
}

Expected<float> GgufHeader::getF32(std::string_view key) const {
  Expected<const GgufValue *> v =
      lookup(*this, key, "a float", [](const GgufValue &x) { return isFloatType(x.type); });
  if (!v)
    return v.status();
  return float(floatValue((*v)->type, (*v)->scalarBits));
}

Expected<bool> GgufHeader::getBool(std::string_view key) const {
  Expected<const GgufValue *> v = lookup(
      *this, key, "a bool", [](const GgufValue &x) { return x.type == GgufValueType::Bool; });
  if (!v)
    return v.status();
  return (*v)->scalarBits != 0;
}

Expected<std::string_view> GgufHeader::getString(std::string_view key) const {
  Expected<const GgufValue *> v = lookup(
      *this, key, "a string", [](const GgufValue &x) { return x.type == GgufValueType::String; });
  if (!v)
    return v.status();
  return (*v)->string;
}

Expected<std::vector<std::string_view>> GgufHeader::getStringArray(std::string_view key) const {
  Expected<const GgufValue *> v = lookup(*this, key, "an array of strings", [](const GgufValue &x) {
    return x.type == GgufValueType::Array && x.elementType == GgufValueType::String;
  });
  if (!v)
    return v.status();
  return (*v)->strings;
}

Expected<std::vector<int32_t>> GgufHeader::getI32Array(std::string_view key) const {
  Expected<const GgufValue *> v =
      lookup(*this, key, "an array of integers", [](const GgufValue &x) {
        return x.type == GgufValueType::Array && isIntegerType(x.elementType);
      });
  if (!v)
    return v.status();
  const GgufValue &a = **v;
  size_t size = ggufScalarSize(a.elementType);
  std::vector<int32_t> out;
  out.reserve(size_t(a.count));
  for (uint64_t i = 0; i < a.count; ++i) {
    std::optional<int64_t> x = integerValue(a.elementType, loadLE(a.elements + i * size, size));
    if (!x || *x < INT32_MIN || *x > INT32_MAX)
      return makeError(fileName + ": metadata '" + std::string(key) + "': element " +
                       std::to_string(i) + " does not fit in a 32-bit integer");
    out.push_back(int32_t(*x));
  }
  return Expected<std::vector<int32_t>>(std::move(out));
}

Expected<std::vector<float>> GgufHeader::getF32Array(std::string_view key) const {
  Expected<const GgufValue *> v = lookup(*this, key, "an array of floats", [](const GgufValue &x) {
    return x.type == GgufValueType::Array && isFloatType(x.elementType);
  });
  if (!v)
    return v.status();
  const GgufValue &a = **v;
  size_t size = a.elementType == GgufValueType::F32 ? 4 : 8;
  std::vector<float> out;
  out.reserve(size_t(a.count));
  for (uint64_t i = 0; i < a.count; ++i)
    out.push_back(float(floatValue(a.elementType, loadLE(a.elements + i * size, size))));
  return Expected<std::vector<float>>(std::move(out));
}

} // namespace xfrt
