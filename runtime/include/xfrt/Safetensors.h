//===- Safetensors.h - Validating reader of .safetensors headers -*- C++ -*-===//
//
// Layout: u64 little-endian N, N bytes of UTF-8 JSON
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}
// then the data section; offsets are relative to its start. parseSafetensors checks everything
// before any tensor byte is touched: the header length (<= 100 MB and inside the file), the JSON,
// every dtype, shape (non-negative integers, no overflow), offsets (begin <= end <= data size,
// end - begin == numel * dtype size) and that no two tensors overlap. Errors read
// "<file>: <what>" or "<file>: tensor '<name>': <what>".
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_SAFETENSORS_H
#define XFRT_SAFETENSORS_H

#include "xfrt/DType.h"
#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xfrt {

constexpr uint64_t kMaxSafetensorsHeader = uint64_t(100) << 20;

struct TensorEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  uint64_t begin = 0, end = 0; // relative to the data section
};

struct SafetensorsHeader {
  std::vector<TensorEntry> tensors; // in header order
  uint64_t dataStart = 0;           // absolute file offset of the data section
  uint64_t dataSize = 0;
  std::vector<std::pair<std::string, std::string>> metadata;

  const TensorEntry *find(std::string_view name) const;
};

// Validates the file contents `data[0, size)`; `fileName` only prefixes error messages.
Expected<SafetensorsHeader> parseSafetensors(const uint8_t *data, size_t size,
                                             const std::string &fileName);

// "[50257, 768]"
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace xfrt

#endif // XFRT_SAFETENSORS_H
