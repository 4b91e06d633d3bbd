//===- SafetensorsWriter.cpp - Write a WeightSet as F32 .safetensors ------===//
//
// Header: {"__metadata__":{"format":"pt"},"<name>":{"dtype":"F32","shape":[..],
// "data_offsets":[b,e]},...} in manifest order, padded with spaces to a multiple of 8 so the
// data section is 8-aligned. Written through AtomicOutputFile: a failed or concurrent save
// never leaves a half-written or mixed checkpoint under the real name.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Json.h"
#include "xfrt/OutputFile.h"
#include "xfrt/Weights.h"


namespace xfrt {

Status saveWeights(const std::string &path, const Manifest &manifest, const WeightSet &weights) {
  if (weights.params.size() != manifest.parameters.size())
    return makeError(path + ": weights do not match the manifest");
  for (size_t i = 0; i < manifest.parameters.size(); ++i)
    if (manifest.parameters[i].blocks)
      return makeError(path + ": parameter '" + manifest.parameters[i].name + "' is kept in " +
                       ggmlTypeName(manifest.parameters[i].blockType) +
                       " blocks, which safetensors does not hold");
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

  Expected<AtomicOutputFile> file = AtomicOutputFile::create(path);
  if (!file)
    return file.status();
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));
  if (Status s = file->write(length, 8); !s)
    return s;
  if (Status s = file->write(header.data(), header.size()); !s)
    return s;
  for (size_t i = 0; i < manifest.parameters.size(); ++i) {
    size_t bytes = size_t(manifest.parameters[i].numel) * (isBf16(i) ? 2 : sizeof(float));
    if (Status s = file->write(weights.params[i], bytes); !s)
      return s;
  }
  return file->commit();
}

} // namespace xfrt
