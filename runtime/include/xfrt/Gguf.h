//===- Gguf.h - Validating reader of GGUF files ------------------*- C++ -*-===//
//
// Layout (GGUF v3, also v2; little-endian):
//   "GGUF", u32 version, u64 tensor_count, u64 kv_count,
//   kv_count × (string key, u32 value_type, value),
//   tensor_count × (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset),
//   padding to general.alignment (u32, default 32), then the data section; tensor offsets are
//   relative to its start. A string is a u64 byte count and the bytes; an array is a u32
//   element type, a u64 count and the elements. ne[0] is the contiguous (row) dimension.
// parseGguf checks everything before any tensor byte is touched: magic, version, counts
// against the file size, every string and array length, value types, duplicate keys and
// tensor names, general.alignment (a power of two), n_dims <= 4, dimensions (non-negative,
// product without overflow, rows of whole blocks), known tensor types, offsets (aligned,
// inside the data section, no two tensors overlapping). Errors read "<file>: <what>",
// "<file>: metadata '<key>': <what>" or "<file>: tensor '<name>': <what>".
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_GGUF_H
#define XFRT_GGUF_H

#include "xfrt/AlignedBuffer.h"
#include "xfrt/GgmlType.h"
#include "xfrt/MappedFile.h"
#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char *ggufValueTypeName(GgufValueType t); // "u32", "string", ...
// Bytes of one value of a scalar type (numbers, bool); 0 for strings and arrays.
size_t ggufScalarSize(GgufValueType t);

// One metadata value. Strings and array elements are views of the parsed bytes.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  uint64_t scalarBits = 0; // a number's or bool's little-endian bytes, zero-extended
  std::string_view string; // type String
  // type Array: `count` elements of `elementType` (never Array), numbers packed at `elements`
  // (unaligned little-endian), strings in `strings`.
  GgufValueType elementType = GgufValueType::U8;
  uint64_t count = 0;
  const uint8_t *elements = nullptr;
  std::vector<std::string_view> strings;

  bool isInteger() const; // U8 .. I64, not Bool
  // The value of an integer scalar, or nullopt (u64 above INT64_MAX, or not an integer).
  std::optional<int64_t> asInt64() const;
  // "u32 30", "f32 1e-05", "string \"llama\"", "array of 49152 string"
  std::string describe() const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims; // ggml order: dims[0] is the contiguous row length (ne[0])
  int64_t numel = 1;
  uint64_t offset = 0; // relative to the data section
  uint64_t bytes = 0;
  // The tensor's bytes in the parsed buffer; in a GgufFile (page-aligned mapping) aligned to
  // the file's alignment, as offsets and the data section start are multiples of it.
  const uint8_t *data = nullptr;

  // Row-major order as PyTorch and safetensors write it (dims reversed): a matrix with rows of
  // ne[0] elements is [ne[1], ne[0]].
  std::vector<int64_t> shape() const;
};

struct GgufHeader {
  std::string fileName; // prefixes error messages
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t dataStart = 0; // absolute file offset of the data section
  uint64_t dataSize = 0;
  std::vector<GgufKeyValue> metadata; // in file order
  std::vector<GgufTensor> tensors;    // in file order

  const GgufValue *find(std::string_view key) const;
  const GgufTensor *findTensor(std::string_view name) const;

  // Typed metadata access. Integer getters take any integer type whose value fits, float
  // getters f32 or f64; a missing key or another type is an error naming the key and what the
  // file has ("<file>: metadata 'llama.block_count' is string \"x\", not an unsigned 32-bit
  // integer").
  Expected<uint32_t> getU32(std::string_view key) const;
  Expected<int64_t> getI64(std::string_view key) const;
  Expected<float> getF32(std::string_view key) const;
  Expected<bool> getBool(std::string_view key) const;
  Expected<std::string_view> getString(std::string_view key) const;
  Expected<std::vector<std::string_view>> getStringArray(std::string_view key) const;
  Expected<std::vector<int32_t>> getI32Array(std::string_view key) const; // any integer array
  Expected<std::vector<float>> getF32Array(std::string_view key) const;   // f32 or f64 array
};

constexpr size_t kGgufMaxDims = 4;        // GGML_MAX_DIMS
constexpr size_t kGgufMaxTensorName = 63; // GGML_MAX_NAME less the terminating NUL
constexpr size_t kGgufMaxKey = 65536;

// Validates the file contents `data[0, size)`; `fileName` only prefixes error messages. The
// result's views (strings, tensor data) point into `data`.
Expected<GgufHeader> parseGguf(const uint8_t *data, size_t size, const std::string &fileName);

// A mapped, validated GGUF file: the header and tensor data live as long as it does.
class GgufFile {
public:
  static Expected<std::unique_ptr<GgufFile>> open(const std::string &path);
  const GgufHeader &header() const { return header_; }
  const std::string &path() const { return file_->path(); }
  uint64_t fileSize() const { return file_->size(); }

  // Hands the mapping over (to a WeightSet whose parameters point into it); tensor data
  // pointers stay valid as long as it lives.
  std::unique_ptr<MappedFile> releaseFile() { return std::move(file_); }

  // Looks a tensor up by name; the error names the file and the tensor.
  Expected<const GgufTensor *> tensor(std::string_view name) const;

private:
  GgufFile() = default;
  std::unique_ptr<MappedFile> file_;
  GgufHeader header_;
};

// A whole tensor as float32 in a new 64-byte-aligned buffer of numel floats, row-major in
// shape() order. Errors name the file and tensor (e.g. a type that cannot be dequantized).
Expected<AlignedBuffer> dequantizeTensor(const GgufHeader &header, const GgufTensor &tensor);
// The same into `out` (tensor.numel floats).
Status dequantizeTensorInto(const GgufHeader &header, const GgufTensor &tensor, float *out);

} // namespace xfrt

#endif // XFRT_GGUF_H
