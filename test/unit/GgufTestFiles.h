//===- GgufTestFiles.h - Hand-built GGUF files for the unit tests -*- C++ -*-===//
//
// A byte writer that can state any field, right or wrong: key-values are serialized one by
// one (kvU32, kvString, ...), tensor infos take their dims, type and offset as given, and
// buildGguf lays out magic, version, counts, metadata, tensor infos, padding and data.
//
//===----------------------------------------------------------------------===//
#ifndef XF_TEST_UNIT_GGUFTESTFILES_H
#define XF_TEST_UNIT_GGUFTESTFILES_H

#include "xfrt/Unicode.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt::test {

using Bytes = std::vector<uint8_t>;

inline void putLE(Bytes &b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    b.push_back(uint8_t(v >> (8 * i)));
}
inline void putString(Bytes &b, std::string_view s) {
  putLE(b, s.size(), 8);
  b.insert(b.end(), s.begin(), s.end());
}

// GGUF value types (GgufValueType).
enum : uint32_t { kU8 = 0, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9, kU64 = 10 };

inline Bytes kvRaw(std::string_view key, uint32_t type, const Bytes &value) {
  Bytes b;
  putString(b, key);
  putLE(b, type, 4);
  b.insert(b.end(), value.begin(), value.end());
  return b;
}
inline Bytes kvU32(std::string_view key, uint32_t v) {
  Bytes value;
  putLE(value, v, 4);
  return kvRaw(key, 4, value);
}
inline Bytes kvF32(std::string_view key, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  Bytes value;
  putLE(value, bits, 4);
  return kvRaw(key, kF32, value);
}
inline Bytes kvBool(std::string_view key, bool v) { return kvRaw(key, kBool, Bytes{uint8_t(v)}); }
inline Bytes kvString(std::string_view key, std::string_view s) {
  Bytes value;
  putString(value, s);
  return kvRaw(key, kString, value);
}
inline Bytes kvStringArray(std::string_view key, const std::vector<std::string> &items) {
  Bytes value;
  putLE(value, kString, 4);
  putLE(value, items.size(), 8);
  for (const std::string &s : items)
    putString(value, s);
  return kvRaw(key, kArray, value);
}
inline Bytes kvI32Array(std::string_view key, const std::vector<int32_t> &items) {
  Bytes value;
  putLE(value, kI32, 4);
  putLE(value, items.size(), 8);
  for (int32_t v : items)
    putLE(value, uint32_t(v), 4);
  return kvRaw(key, kArray, value);
}

struct TensorInfo {
  std::string name;
  uint32_t type;
  std::vector<uint64_t> dims; // ggml order, ne[0] first
  uint64_t offset;
};
inline Bytes tensorInfoBytes(const TensorInfo &t) {
  Bytes b;
  putString(b, t.name);
  putLE(b, t.dims.size(), 4);
  for (uint64_t d : t.dims)
    putLE(b, d, 8);
  putLE(b, t.type, 4);
  putLE(b, t.offset, 8);
  return b;
}

struct GgufParts {
  uint32_t version = 3;
  std::vector<Bytes> kvs;
  std::vector<TensorInfo> tensors;
  Bytes data;
  uint64_t alignment = 32; // only pads; state general.alignment in kvs to change it
};

inline Bytes buildGguf(const GgufParts &p) {
  Bytes b = {'G', 'G', 'U', 'F'};
  putLE(b, p.version, 4);
  putLE(b, p.tensors.size(), 8);
  putLE(b, p.kvs.size(), 8);
  for (const Bytes &kv : p.kvs)
    b.insert(b.end(), kv.begin(), kv.end());
  for (const TensorInfo &t : p.tensors) {
    Bytes info = tensorInfoBytes(t);
    b.insert(b.end(), info.begin(), info.end());
  }
  while (b.size() % p.alignment)
    b.push_back(0);
  b.insert(b.end(), p.data.begin(), p.data.end());
  return b;
}

// GPT-2's byte-level character of byte `b`, as UTF-8.
inline std::string byteLevelChar(int b) {
  auto printable = [](int c) {
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  int n = 0;
  for (int c = 0; c < b; ++c)
    n += !printable(c);
  std::string s;
  unicode::appendUtf8(s, printable(b) ? char32_t(b) : char32_t(0x100 + n));
  return s;
}

} // namespace xfrt::test

#endif // XF_TEST_UNIT_GGUFTESTFILES_H
