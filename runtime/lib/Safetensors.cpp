//===- Safetensors.cpp - Validating reader of .safetensors headers --------===//
//
// Only the header is interpreted here; tensors are later read through the validated
// [dataStart + begin, dataStart + end) ranges, which are proven to lie inside the file.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Safetensors.h"

#include "xfrt/AlignedBuffer.h"
#include "xfrt/Json.h"

#include <algorithm>

namespace xfrt {

const TensorEntry *SafetensorsHeader::find(std::string_view name) const {
  for (const TensorEntry &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

namespace {

Status parseEntry(const std::string &file, const std::string &name, const JsonValue &info,
                  uint64_t dataSize, TensorEntry &out) {
  auto fail = [&](const std::string &what) {
    return makeError(file + ": tensor '" + name + "': " + what);
  };
  out.name = name;
  if (!info.isObject())
    return fail("entry is " + describeJson(info) + ", not an object");
  const JsonValue *dtype = info.find("dtype");
  const JsonValue *shape = info.find("shape");
  const JsonValue *offsets = info.find("data_offsets");
  if (!dtype || !shape || !offsets)
    return fail(std::string("entry lacks '") +
                (!dtype   ? "dtype"
                 : !shape ? "shape"
                          : "data_offsets") +
                "'");
  if (!dtype->isString())
    return fail("dtype " + describeJson(*dtype) + " is not a string");
  std::optional<DType> type = parseDType(dtype->string);
  if (!type)
    return fail("unknown dtype " + quoteJson(dtype->string));
  out.dtype = *type;

  if (!shape->isArray())
    return fail("shape " + describeJson(*shape) + " is not a list");
  if (shape->items.size() > 16)
    return fail("shape has " + std::to_string(shape->items.size()) + " dimensions (limit 16)");
  out.numel = 1;
  for (const JsonValue &d : shape->items) {
    if (!d.isNumber() || !d.isInteger || d.integer < 0)
      return fail("shape " + describeJson(*shape) + " is not a list of non-negative integers");
    out.shape.push_back(d.integer);
    if (!checkedMul(out.numel, d.integer, out.numel))
      return fail("shape " + formatShape(out.shape) + " overflows");
  }

  if (!offsets->isArray() || offsets->items.size() != 2)
    return fail("data_offsets " + describeJson(*offsets) + " is not [begin, end]");
  for (const JsonValue &o : offsets->items)
    if (!o.isNumber() || !o.isInteger || o.integer < 0)
      return fail("data_offsets " + describeJson(*offsets) +
                  " is not a pair of non-negative integers");
  out.begin = uint64_t(offsets->items[0].integer);
  out.end = uint64_t(offsets->items[1].integer);
  std::string span =
      "data_offsets [" + std::to_string(out.begin) + ", " + std::to_string(out.end) + "]";
  if (out.begin > out.end)
    return fail(span + " has begin > end");
  if (out.end > dataSize)
    return fail(span + " out of range of the " + std::to_string(dataSize) + "-byte data section");
  uint64_t need;
  if (!checkedMul(uint64_t(out.numel), uint64_t(dtypeSize(out.dtype)), need))
    return fail("shape " + formatShape(out.shape) + " overflows");
  if (out.end - out.begin != need)
    return fail(std::string(dtypeName(out.dtype)) + formatShape(out.shape) + " needs " +
                std::to_string(need) + " bytes but " + span + " span " +
                std::to_string(out.end - out.begin));
  return Status::success();
}

Status parseMetadata(const std::string &file, const JsonValue &meta, SafetensorsHeader &out) {
  if (!meta.isObject())
    return makeError(file + ": __metadata__ is " + describeJson(meta) + ", not an object");
  for (size_t i = 0; i < meta.keys.size(); ++i) {
    if (!meta.items[i].isString())
      return makeError(file + ": __metadata__ value of " + quoteJson(meta.keys[i]) +
                       " is not a string");
    out.metadata.emplace_back(meta.keys[i], meta.items[i].string);
  }
  return Status::success();
}

} // namespace

Expected<SafetensorsHeader> parseSafetensors(const uint8_t *data, size_t size,
                                             const std::string &fileName) {
  if (size < 8)
    return makeError(fileName + ": file is " + std::to_string(size) +
                     " bytes, shorter than the 8-byte header length (truncated?)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | data[i];
  if (n > kMaxSafetensorsHeader)
    return makeError(fileName + ": header length " + std::to_string(n) + " exceeds the limit of " +
                     std::to_string(kMaxSafetensorsHeader) + " bytes");
  if (n > size - 8)
    return makeError(fileName + ": header length " + std::to_string(n) +
                     " runs past the end of the " + std::to_string(size) +
                     "-byte file (truncated?)");
  SafetensorsHeader header;
  header.dataStart = 8 + n;
  header.dataSize = size - header.dataStart;

  JsonLimits limits;
  limits.maxBytes = size_t(kMaxSafetensorsHeader);
  limits.maxDepth = 8;
  Expected<JsonValue> json =
      parseJson(std::string_view(reinterpret_cast<const char *>(data + 8), size_t(n)), limits);
  if (!json)
    return makeError(fileName + ": header: " + json.message());
  if (!json->isObject())
    return makeError(fileName + ": header is " + describeJson(*json) + ", not a JSON object");

  for (size_t i = 0; i < json->keys.size(); ++i) {
    const std::string &name = json->keys[i];
    if (name == "__metadata__") {
      if (Status s = parseMetadata(fileName, json->items[i], header); !s)
        return s;
      continue;
    }
    TensorEntry entry;
    if (Status s = parseEntry(fileName, name, json->items[i], header.dataSize, entry); !s)
      return s;
    header.tensors.push_back(std::move(entry));
  }

  // No two tensors may share a byte (empty tensors occupy none).
  std::vector<const TensorEntry *> order;
  for (const TensorEntry &t : header.tensors)
    if (t.end > t.begin)
      order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorEntry *a, const TensorEntry *b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i]->begin < order[i - 1]->end)
      return makeError(fileName + ": tensor '" + order[i]->name + "': data_offsets [" +
                       std::to_string(order[i]->begin) + ", " + std::to_string(order[i]->end) +
                       "] overlap tensor '" + order[i - 1]->name + "' [" +
                       std::to_string(order[i - 1]->begin) + ", " +
                       std::to_string(order[i - 1]->end) + "]");
  return header;
}

} // namespace xfrt
