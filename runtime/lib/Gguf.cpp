//===- Gguf.cpp - Validating reader of GGUF files -------------------------===//
//
// One pass over the header with a bounds-checked cursor; every count is checked against the
// bytes left before anything is allocated for it, so a lying count fails with a message
// instead of an allocation. Tensors are later read through validated [offset, offset + bytes)
// ranges of the data section.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Gguf.h"

#include "xfrt/Safetensors.h" // formatShape

#include <algorithm>
#include <unordered_set>

namespace xfrt {
namespace {

// Reads little-endian fields from data[0, size); each read fails instead of running past it.
struct Cursor {
  const uint8_t *data;
  size_t size;
  size_t pos = 0;

  size_t left() const { return size - pos; }
  bool readU32(uint32_t &v) {
    if (left() < 4)
      return false;
    v = 0;
    for (int i = 3; i >= 0; --i)
      v = (v << 8) | data[pos + size_t(i)];
    pos += 4;
    return true;
  }
  bool readU64(uint64_t &v) {
    if (left() < 8)
      return false;
    v = 0;
    for (int i = 7; i >= 0; --i)
      v = (v << 8) | data[pos + size_t(i)];
    pos += 8;
    return true;
  }
};

class HeaderParser {
public:
  HeaderParser(const uint8_t *data, size_t size, const std::string &fileName)
      : in_{data, size}, file_(fileName) {}

  Expected<GgufHeader> parse();

private:
  Cursor in_;
  const std::string &file_;
  std::string where_; // "metadata 'key': " or "tensor 'name': ", for the error messages

  Status fail(const std::string &what) const { return makeError(file_ + ": " + where_ + what); }
  Status truncated(const std::string &field) const {
    return fail(field + " at byte " + std::to_string(in_.pos) + " runs past the end of the " +
                std::to_string(in_.size) + "-byte file (truncated?)");
  }
  Status readU32(const std::string &field, uint32_t &v) {
    return in_.readU32(v) ? Status::success() : truncated(field);
  }
  Status readU64(const std::string &field, uint64_t &v) {
    return in_.readU64(v) ? Status::success() : truncated(field);
  }
  Status readString(const std::string &field, uint64_t maxBytes, std::string_view &out);
  Status readValueType(const std::string &field, GgufValueType &out);
  Status readValue(GgufValueType type, GgufValue &out);
  Status readKeyValue(uint64_t index, uint64_t count, GgufHeader &header,
                      std::unordered_set<std::string_view> &keys);
  Status readTensorInfo(uint64_t index, uint64_t count, GgufTensor &out);
  Status checkTensorData(GgufHeader &header);
};

Status HeaderParser::readString(const std::string &field, uint64_t maxBytes,
                                std::string_view &out) {
  uint64_t n;
  if (Status s = readU64(field + " length", n); !s)
    return s;
  if (n > maxBytes)
    return fail(field + " of " + std::to_string(n) + " bytes exceeds the limit of " +
                std::to_string(maxBytes));
  if (n > in_.left())
    return fail(field + " of " + std::to_string(n) + " bytes at byte " + std::to_string(in_.pos) +
                " runs past the end of the " + std::to_string(in_.size) +
                "-byte file (truncated?)");
  out = std::string_view(reinterpret_cast<const char *>(in_.data + in_.pos), size_t(n));
  in_.pos += size_t(n);
  return Status::success();
}

Status HeaderParser::readValueType(const std::string &field, GgufValueType &out) {
  uint32_t t;
  if (Status s = readU32(field, t); !s)
    return s;
  if (t > uint32_t(GgufValueType::F64))
    return fail("unknown " + field + " " + std::to_string(t));
  out = GgufValueType(t);
  return Status::success();
}

Status HeaderParser::readValue(GgufValueType type, GgufValue &out) {
  out.type = type;
  if (type == GgufValueType::String)
    return readString("string", UINT64_MAX, out.string);
  if (type != GgufValueType::Array) {
    size_t n = ggufScalarSize(type);
    if (in_.left() < n)
      return truncated(std::string(ggufValueTypeName(type)) + " value");
    for (size_t i = n; i-- > 0;)
      out.scalarBits = (out.scalarBits << 8) | in_.data[in_.pos + i];
    in_.pos += n;
    if (type == GgufValueType::Bool && out.scalarBits > 1)
      return fail("bool value " + std::to_string(out.scalarBits) + " is neither 0 nor 1");
    return Status::success();
  }
  if (Status s = readValueType("array element type", out.elementType); !s)
    return s;
  if (out.elementType == GgufValueType::Array)
    return fail("arrays of arrays are not supported");
  if (Status s = readU64("array length", out.count); !s)
    return s;
  // Every element takes at least this many bytes, so the count is bounded by what is left.
  size_t elementSize = out.elementType == GgufValueType::String ? 8 : ggufScalarSize(out.elementType);
  if (out.count > in_.left() / elementSize)
    return fail("array of " + std::to_string(out.count) + " " + ggufValueTypeName(out.elementType) +
                " at byte " + std::to_string(in_.pos) + " runs past the end of the " +
                std::to_string(in_.size) + "-byte file (truncated?)");
  if (out.elementType != GgufValueType::String) {
    out.elements = in_.data + in_.pos;
    in_.pos += size_t(out.count) * elementSize;
    if (out.elementType == GgufValueType::Bool)
      for (uint64_t i = 0; i < out.count; ++i)
        if (out.elements[i] > 1)
          return fail("bool element " + std::to_string(i) + " is " +
                      std::to_string(out.elements[i]) + ", neither 0 nor 1");
    return Status::success();
  }
  out.strings.reserve(size_t(out.count));
  for (uint64_t i = 0; i < out.count; ++i) {
    std::string_view s;
    if (Status st = readString("string " + std::to_string(i), UINT64_MAX, s); !st)
      return st;
    out.strings.push_back(s);
  }
  return Status::success();
}

Status HeaderParser::readKeyValue(uint64_t index, uint64_t count, GgufHeader &header,
                                  std::unordered_set<std::string_view> &keys) {
  where_ = "metadata key " + std::to_string(index) + " of " + std::to_string(count) + ": ";
  std::string_view key;
  if (Status s = readString("key", kGgufMaxKey, key); !s)
    return s;
  if (key.empty())
    return fail("key is empty");
  where_ = "metadata '" + std::string(key) + "': ";
  if (!keys.insert(key).second)
    return fail("duplicate key");
  GgufKeyValue kv;
  kv.key = std::string(key);
  GgufValueType type;
  if (Status s = readValueType("value type", type); !s)
    return s;
  if (Status s = readValue(type, kv.value); !s)
    return s;
  if (kv.key == "general.alignment") {
    if (type != GgufValueType::U32)
      return fail("is " + kv.value.describe() + ", not a u32");
    uint64_t a = kv.value.scalarBits;
    if (a == 0 || (a & (a - 1)) != 0)
      return fail("alignment " + std::to_string(a) + " is not a power of two");
    header.alignment = a;
  }
  header.metadata.push_back(std::move(kv));
  return Status::success();
}

Status HeaderParser::readTensorInfo(uint64_t index, uint64_t count, GgufTensor &out) {
  where_ = "tensor " + std::to_string(index) + " of " + std::to_string(count) + ": ";
  std::string_view name;
  if (Status s = readString("name", kGgufMaxTensorName, name); !s)
    return s;
  if (name.empty())
    return fail("name is empty");
  out.name = std::string(name);
  where_ = "tensor '" + out.name + "': ";
  uint32_t nDims;
  if (Status s = readU32("n_dims", nDims); !s)
    return s;
  if (nDims > kGgufMaxDims)
    return fail("n_dims " + std::to_string(nDims) + " exceeds ggml's limit of " +
                std::to_string(kGgufMaxDims));
  for (uint32_t d = 0; d < nDims; ++d) {
    uint64_t ne;
    if (Status s = readU64("ne[" + std::to_string(d) + "]", ne); !s)
      return s;
    if (ne > uint64_t(INT64_MAX))
      return fail("ne[" + std::to_string(d) + "] = " + std::to_string(ne) + " is negative");
    out.dims.push_back(int64_t(ne));
    if (!checkedMul(out.numel, int64_t(ne), out.numel))
      return fail("dims " + formatShape(out.dims) + " overflow");
  }
  uint32_t typeId;
  if (Status s = readU32("type", typeId); !s)
    return s;
  const GgmlTypeInfo *type = ggmlTypeInfo(typeId);
  if (!type)
    return fail("unknown tensor type " + std::to_string(typeId));
  out.type = type->type;
  int64_t rowLength = out.dims.empty() ? 1 : out.dims[0];
  if (rowLength % type->blockElements != 0)
    return fail("ne[0] = " + std::to_string(rowLength) + " is not a multiple of " + type->name +
                "'s block of " + std::to_string(type->blockElements));
  if (!checkedMul(uint64_t(out.numel) / type->blockElements, uint64_t(type->blockBytes), out.bytes))
    return fail("dims " + formatShape(out.dims) + " overflow");
  return readU64("offset", out.offset);
}

Status HeaderParser::checkTensorData(GgufHeader &header) {
  for (GgufTensor &t : header.tensors) {
    where_ = "tensor '" + t.name + "': ";
    std::string span = "offset " + std::to_string(t.offset) + " + " + std::to_string(t.bytes) +
                       " bytes of " + ggmlTypeName(t.type) + formatShape(t.dims);
    if (t.offset % header.alignment != 0)
      return fail("offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                  std::to_string(header.alignment));
    if (t.offset > header.dataSize || t.bytes > header.dataSize - t.offset)
      return fail(span + " runs past the end of the " + std::to_string(header.dataSize) +
                  "-byte data section (truncated?)");
    t.data = in_.data + header.dataStart + t.offset;
  }
  // No two tensors may share a byte (empty tensors occupy none).
  where_.clear();
  std::vector<const GgufTensor *> order;
  for (const GgufTensor &t : header.tensors)
    if (t.bytes > 0)
      order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const GgufTensor *a, const GgufTensor *b) {
    return a->offset != b->offset ? a->offset < b->offset : a->bytes < b->bytes;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensor &a = *order[i - 1], &b = *order[i];
    if (b.offset < a.offset + a.bytes)
      return fail("tensor '" + b.name + "': bytes [" + std::to_string(b.offset) + ", " +
                  std::to_string(b.offset + b.bytes) + ") overlap tensor '" + a.name + "' [" +
                  std::to_string(a.offset) + ", " + std::to_string(a.offset + a.bytes) + ")");
  }
  return Status::success();
}

Expected<GgufHeader> HeaderParser::parse() {
  GgufHeader header;
  header.fileName = file_;
  if (in_.size < 4 || std::string_view(reinterpret_cast<const char *>(in_.data), 4) != "GGUF")
    return fail("not a GGUF file (the first 4 bytes are not \"GGUF\")");
  in_.pos = 4;
  if (Status s = readU32("version", header.version); !s)
    return s;
  if (header.version >= 0x10000)
    return fail("version " + std::to_string(header.version) +
                " looks byte-swapped: big-endian GGUF files are not supported");
  if (header.version != 2 && header.version != 3)
    return fail("GGUF version " + std::to_string(header.version) +
                " is not supported (only 2 and 3)");
  uint64_t tensorCount, kvCount;
  if (Status s = readU64("tensor_count", tensorCount); !s)
    return s;
  if (Status s = readU64("kv_count", kvCount); !s)
    return s;
  // Lower bounds on an entry's size: a key-value takes >= 13 bytes, a tensor info >= 25.
  if (kvCount > in_.left() / 13)
    return fail("kv_count " + std::to_string(kvCount) + " cannot fit in the " +
                std::to_string(in_.size) + "-byte file");
  if (tensorCount > in_.left() / 25)
    return fail("tensor_count " + std::to_string(tensorCount) + " cannot fit in the " +
                std::to_string(in_.size) + "-byte file");

  std::unordered_set<std::string_view> keys;
  for (uint64_t i = 0; i < kvCount; ++i)
    if (Status s = readKeyValue(i, kvCount, header, keys); !s)
      return s;

  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < tensorCount; ++i) {
    GgufTensor tensor;
    if (Status s = readTensorInfo(i, tensorCount, tensor); !s)
      return s;
    if (!names.insert(tensor.name).second)
      return fail("duplicate tensor name");
    header.tensors.push_back(std::move(tensor));
  }
  where_.clear();

  // The data section starts at the next multiple of the alignment.
  uint64_t end = in_.pos;
  header.dataStart = (end + header.alignment - 1) / header.alignment * header.alignment;
  if (header.dataStart < end) // the rounding overflowed (alignment near 2^32 on a 32-bit host)
    return fail("alignment " + std::to_string(header.alignment) + " overflows the data offset");
  header.dataSize = header.dataStart < in_.size ? in_.size - header.dataStart : 0;
  if (Status s = checkTensorData(header); !s)
    return s;
  return Expected<GgufHeader>(std::move(header));
}

} // namespace

Expected<GgufHeader> parseGguf(const uint8_t *data, size_t size, const std::string &fileName) {
  return HeaderParser(data, size, fileName).parse();
}

std::vector<int64_t> GgufTensor::shape() const { return {dims.rbegin(), dims.rend()}; }

Expected<std::unique_ptr<GgufFile>> GgufFile::open(const std::string &path) {
  Expected<std::unique_ptr<MappedFile>> file = MappedFile::open(path);
  if (!file)
    return file.status();
  Expected<GgufHeader> header = parseGguf((*file)->data(), (*file)->size(), path);
  if (!header)
    return header.status();
  auto out = std::unique_ptr<GgufFile>(new GgufFile());
  out->file_ = file.take();
  out->header_ = header.take();
  return Expected<std::unique_ptr<GgufFile>>(std::move(out));
}

Expected<const GgufTensor *> GgufFile::tensor(std::string_view name) const {
  if (const GgufTensor *t = header_.findTensor(name))
    return t;
  return makeError(path() + ": no tensor '" + std::string(name) + "'");
}

Status dequantizeTensorInto(const GgufHeader &header, const GgufTensor &tensor, float *out) {
  auto fail = [&](const std::string &what) {
    return makeError(header.fileName + ": tensor '" + tensor.name + "': " + what);
  };
  if (!canDequantize(tensor.type))
    return fail(std::string("cannot dequantize tensor type ") + ggmlTypeName(tensor.type) +
                " (supported: " + dequantizableTypeNames() + ")");
  if (Status s = dequantizeToF32(tensor.type, tensor.data, size_t(tensor.numel), out); !s)
    return fail(s.message());
  return Status::success();
}

Expected<AlignedBuffer> dequantizeTensor(const GgufHeader &header, const GgufTensor &tensor) {
  if (!canDequantize(tensor.type)) // before allocating
    return dequantizeTensorInto(header, tensor, nullptr);
  Expected<AlignedBuffer> buffer = AlignedBuffer::allocate(uint64_t(tensor.numel) * 4);
  if (!buffer)
    return makeError(header.fileName + ": tensor '" + tensor.name + "': " + buffer.message());
  if (Status s = dequantizeTensorInto(header, tensor, buffer->floats()); !s)
    return s;
  return buffer;
}

} // namespace xfrt
