//===- WeightLoader.cpp - Bind checkpoint tensors to manifest parameters --===//
//
// In: a .safetensors file or a sharded index.json, and the manifest. Out: a WeightSet whose
// pointers are either views into the mapped files (F32, 4-byte aligned, little-endian host) or
// converted copies (the parts of a concatenation only xf_prepare reads go straight into it:
// placeConcatenationParts). Every file is validated before any tensor byte is read.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Weights.h"

#include "xfrt/Json.h"
#include "xfrt/Safetensors.h"

#include <algorithm>
#include <cstring>
#include <map>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libxfrt assumes a little-endian host (zero-copy F32 and the .npy/.safetensors writers)"
#endif

namespace xfrt {
namespace {

struct Shard {
  std::unique_ptr<MappedFile> file;
  SafetensorsHeader header;
};

Expected<Shard> openShard(const std::string &path) {
  Expected<std::unique_ptr<MappedFile>> file = MappedFile::open(path);
  if (!file)
    return file.status();
  Expected<SafetensorsHeader> header = parseSafetensors((*file)->data(), (*file)->size(), path);
  if (!header)
    return header.status();
  return Shard{file.take(), header.take()};
}

// Drops the file pages of a tensor that was just converted (or copied): nothing reads them
// again, and otherwise the file and the copy are both resident until the session drops the
// file's pages after xf_prepare (SmolLM2 as F16 into float32: 257 MiB of file pages).
void releaseConverted(const MappedFile &file, const uint8_t *bytes, const TensorEntry &entry) {
  releaseMappedPages(file, bytes, size_t(entry.end - entry.begin));
}

// A parameter the generated code reads as bfloat16: zero-copy for aligned BF16 tensors,
// otherwise converted (through float32, in chunks) into an owned buffer.
template <typename Fail>
Status bindBf16(const MappedFile &file, uint8_t *bytes, const TensorEntry &entry, size_t index,
                WeightSet &weights, Fail fail) {
  weights.bf16[index] = true;
  if (entry.dtype == DType::BF16 && reinterpret_cast<uintptr_t>(bytes) % 2 == 0 &&
      entry.numel > 0) {
    weights.params[index] = reinterpret_cast<float *>(bytes);
    ++weights.zeroCopy;
    return Status::success();
  }
  uint64_t size;
  if (!checkedMul(uint64_t(entry.numel), uint64_t(sizeof(uint16_t)), size))
    return fail("too large");
  Expected<AlignedBuffer> buffer = AlignedBuffer::allocate(size);
  if (!buffer)
    return fail(buffer.message());
  auto *out = reinterpret_cast<uint16_t *>(buffer->data());
  size_t elementBytes = dtypeSize(entry.dtype);
  float chunk[4096];
  for (size_t done = 0; done < size_t(entry.numel);) {
    size_t n = std::min(size_t(entry.numel) - done, sizeof chunk / sizeof chunk[0]);
    convertToF32(entry.dtype, bytes + done * elementBytes, n, chunk);
    narrowToBf16(chunk, n, out + done);
    done += n;
  }
  weights.params[index] = reinterpret_cast<float *>(out);
  weights.buffers.push_back(buffer.take());
  releaseConverted(file, bytes, entry);
  return Status::success();
}

// Points weights.params[index] at `entry` of `shard`, converting when needed (into `into`, its
// place in a concatenation, when not null).
Status bindTensor(Shard &shard, const TensorEntry *entry, const ParameterSpec &spec, size_t index,
                  WeightSet &weights, float *into = nullptr) {
  const std::string &file = shard.file->path();
  auto fail = [&](const std::string &what) {
    return makeError(file + ": tensor '" + spec.name + "': " + what);
  };
  if (!entry)
    return fail("missing (the model needs shape " + formatShape(spec.shape) + ")");
  if (entry->shape != spec.shape)
    return fail("shape " + formatShape(entry->shape) + " in the file, but the model expects " +
                formatShape(spec.shape));
  if (!isFloatDType(entry->dtype))
    return fail(std::string("dtype ") + dtypeName(entry->dtype) +
                " is not supported (F32, F16, BF16, F64)");
  uint8_t *bytes = shard.file->mutableData() + shard.header.dataStart + entry->begin;
  if (spec.bf16)
    return bindBf16(*shard.file, bytes, *entry, index, weights, fail);
  if (into) {
    convertToF32(entry->dtype, bytes, size_t(entry->numel), into);
    weights.params[index] = into;
    releaseConverted(*shard.file, bytes, *entry);
    return Status::success();
  }
  if (entry->dtype == DType::F32 && reinterpret_cast<uintptr_t>(bytes) % alignof(float) == 0 &&
      entry->numel > 0) {
    weights.params[index] = reinterpret_cast<float *>(bytes);
    ++weights.zeroCopy;
    return Status::success();
  }
  uint64_t size;
  if (!checkedMul(uint64_t(entry->numel), uint64_t(sizeof(float)), size))
    return fail("too large");
  Expected<AlignedBuffer> buffer = AlignedBuffer::allocate(size);
  if (!buffer)
    return fail(buffer.message());
  if (entry->numel > 0)
    convertToF32(entry->dtype, bytes, size_t(entry->numel), buffer->floats());
  weights.params[index] = buffer->floats();
  weights.buffers.push_back(buffer.take());
  releaseConverted(*shard.file, bytes, *entry);
  return Status::success();
}

// Binds every parameter to its tensor in shardOf(i). The parts of a concatenation only
// xf_prepare reads are converted (or, float32, copied) straight into it, their file pages
// dropped at once: xf_prepare would copy them there anyway, and otherwise the file pages it
// reads stay resident beside the concatenation until it is done.
template <typename ShardOf>
Status bindAll(const Manifest &manifest, ShardOf shardOf, WeightSet &weights) {
  auto entryOf = [&](size_t i) { return shardOf(i)->header.find(manifest.parameters[i].name); };
  Expected<std::vector<float *>> partOf = placeConcatenationParts(manifest, weights);
  if (!partOf)
    return partOf.status();
  for (size_t i = 0; i < manifest.parameters.size(); ++i)
    if (Status s =
            bindTensor(*shardOf(i), entryOf(i), manifest.parameters[i], i, weights, (*partOf)[i]);
        !s)
      return s;
  return Status::success();
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// A shard name from weight_map: a relative path without "..", NUL or empty components.
bool isSafeShardName(const std::string &name) {
  if (name.empty() || name[0] == '/' || name.find('\0') != std::string::npos)
    return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    std::string part = name.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "..")
      return false;
    if (slash == std::string::npos)
      break;
    start = slash + 1;
  }
  return true;
}

Expected<WeightSet> loadSharded(const std::string &indexPath, const Manifest &manifest) {
  Expected<std::string> text = readTextFile(indexPath, size_t(kMaxSafetensorsHeader));
  if (!text)
    return text.status();
  Expected<JsonValue> json = parseJson(*text);
  if (!json)
    return makeError(indexPath + ": " + json.message());
  const JsonValue *map = json->find("weight_map");
  if (!map || !map->isObject())
    return makeError(indexPath + ": no \"weight_map\" object (is this a sharded index?)");

  std::map<std::string, std::string> shardOf; // tensor -> shard file name
  for (size_t i = 0; i < map->keys.size(); ++i) {
    const JsonValue &v = map->items[i];
    if (!v.isString() || !isSafeShardName(v.string))
      return makeError(indexPath + ": tensor '" + map->keys[i] + "': shard " + describeJson(v) +
                       " is not a relative file name");
    shardOf[map->keys[i]] = v.string;
  }

  WeightSet weights;
  weights.params.assign(manifest.parameters.size(), nullptr);
  weights.bf16.assign(manifest.parameters.size(), false);
  std::map<std::string, Shard> shards;
  std::vector<Shard *> shardOfParameter;
  std::string dir = directoryOf(indexPath);
  for (const ParameterSpec &spec : manifest.parameters) {
    auto it = shardOf.find(spec.name);
    if (it == shardOf.end())
      return makeError(indexPath + ": tensor '" + spec.name +
                       "': missing from weight_map (the model needs shape " +
                       formatShape(spec.shape) + ")");
    auto shard = shards.find(it->second);
    if (shard == shards.end()) {
      Expected<Shard> opened = openShard(dir + it->second);
      if (!opened)
        return opened.status();
      shard = shards.emplace(it->second, opened.take()).first;
    }
    shardOfParameter.push_back(&shard->second);
  }
  if (Status s = bindAll(
          manifest, [&](size_t i) { return shardOfParameter[i]; }, weights);
      !s)
    return s;
  for (auto &[name, shard] : shards)
    weights.files.push_back(std::move(shard.file));
  return weights;
}

} // namespace

Expected<std::vector<float *>> placeConcatenationParts(const Manifest &manifest,
                                                       WeightSet &weights) {
  std::vector<float *> at(manifest.parameters.size(), nullptr);
  weights.filledDerived.assign(manifest.derivedBytes.size(), nullptr);
  for (size_t j = 0; j < manifest.derivedParts.size(); ++j) {
    const std::vector<int64_t> &parts = manifest.derivedParts[j];
    bool place =
        !parts.empty() && j < manifest.derivedPrepareOnly.size() && manifest.derivedPrepareOnly[j];
    for (int64_t i : parts)
      place = place && manifest.parameters[size_t(i)].forwardReads == ForwardReads::None;
    if (!place)
      continue;
    Expected<AlignedBuffer> buffer = AlignedBuffer::allocate(uint64_t(manifest.derivedBytes[j]));
    if (!buffer)
      return makeError("derived buffer " + std::to_string(j) + ": " + buffer.message());
    float *next = buffer->floats();
    weights.filledDerived[j] = next;
    for (int64_t i : parts) {
      at[size_t(i)] = next;
      next += manifest.parameters[size_t(i)].numel;
    }
    weights.buffers.push_back(buffer.take());
  }
  return at;
}

void narrowToBf16(const float *src, size_t count, uint16_t *dst) {
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { // NaN: keep it a (quiet) NaN
      dst[i] = uint16_t((bits >> 16) | 0x40);
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest, ties to even
    dst[i] = uint16_t(bits >> 16);
  }
}

Expected<WeightSet> loadWeights(const std::string &path, const Manifest &manifest) {
  if (endsWith(path, ".json"))
    return loadSharded(path, manifest);
  if (endsWith(path, ".gguf"))
    return loadGgufWeights(path, manifest);
  for (const ParameterSpec &spec : manifest.parameters)
    if (spec.blocks)
      return makeError(path + ": tensor '" + spec.name + "': the executable reads it as " +
                       ggmlTypeName(spec.blockType) +
                       " blocks (built with xfc --quantized-like), which only a .gguf file holds");
  Expected<Shard> shard = openShard(path);
  if (!shard)
    return shard.status();
  WeightSet weights;
  weights.params.assign(manifest.parameters.size(), nullptr);
  weights.bf16.assign(manifest.parameters.size(), false);
  if (Status s = bindAll(
          manifest, [&](size_t) { return &*shard; }, weights);
      !s)
    return s;
  weights.files.push_back(std::move(shard->file));
  return weights;
}

} // namespace xfrt
