//===- SafetensorsWriter.cpp - Write a WeightSet as F32 .safetensors ------===//
//
// Header: {"__metadata__":{"format":"pt"},"<name>":{"dtype":"F32","shape":[..],
// "data_offsets":[b,e]},...} in manifest order, padded with spaces to a multiple of 8 so the
// data section is 8-aligned. Written to "<path>.tmp" and renamed, so a failed write never
// leaves a half-written checkpoint under the real name.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Json.h"
#include "xfrt/Weights.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace xfrt {

Status saveWeights(const std::string &path, const Manifest &manifest, const WeightSet &weights) {
  if (weights.params.size() != manifest.parameters.size())
    return makeError(path + ": weights do not match the manifest");
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  auto isBf16 = [&](size_t i) { return i < weights.bf16.size() && weights.bf16[i]; };
  for (size_t i = 0; i < manifest.parameters.size(); ++i) {
    const ParameterSpec &spec = manifest.parameters[i];
    uint64_t bytes, end;
    if (!checkedMul(uint64_t(spec.numel), uint64_t(isBf16(i) ? 2 : 4), bytes) ||
        !checkedAdd(offset, bytes, end))
      return makeError(path + ": tensor '" + spec.name + "': too large");
    header += "," + quoteJson(spec.name) + ":{\"dtype\":\"" + (isBf16(i) ? "BF16" : "F32") +
              "\",\"shape\":[";
    for (size_t d = 0; d < spec.shape.size(); ++d)
      header += (d ? "," : "") + std::to_string(spec.shape[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string tmp = path + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return makeError(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));
  bool ok = std::fwrite(length, 1, 8, f) == 8 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size();
  for (size_t i = 0; ok && i < manifest.parameters.size(); ++i) {
    size_t count = size_t(manifest.parameters[i].numel);
    size_t element = isBf16(i) ? 2 : sizeof(float);
    ok = count == 0 || std::fwrite(weights.params[i], element, count, f) == count;
  }
  int savedErrno = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return makeError(path + ": write error: " + std::strerror(savedErrno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    savedErrno = errno;
    std::remove(tmp.c_str());
    return makeError(path + ": cannot rename " + tmp + ": " + std::strerror(savedErrno));
  }
  return Status::success();
}

} // namespace xfrt
