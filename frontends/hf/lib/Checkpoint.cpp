//===- Checkpoint.cpp - the tensor names of a model directory -------------===//

#include "Checkpoint.h"
#include "Config.h"

#include "xfrt/MappedFile.h"
#include "xfrt/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

using namespace xf::hf;

std::optional<std::string> Checkpoint::prefixOf(llvm::StringRef suffix) const {
  std::optional<std::string> best;
  for (const std::string &name : names) {
    llvm::StringRef n(name);
    if (!n.ends_with(suffix))
      continue;
    llvm::StringRef prefix = n.drop_back(suffix.size());
    if (!prefix.empty() && !prefix.ends_with("."))
      continue;
    if (!best || prefix.size() < best->size())
      best = prefix.str();
  }
  return best;
}

static llvm::Error namesFromIndex(const std::string &path, Checkpoint &out) {
  llvm::Expected<llvm::json::Value> value = readJsonFile(path);
  if (!value)
    return value.takeError();
  const llvm::json::Object *map =
      value->getAsObject() ? value->getAsObject()->getObject("weight_map")
                           : nullptr;
  if (!map)
    return llvm::createStringError(path + ": no \"weight_map\" object");
  for (const auto &entry : *map)
    out.names.insert(entry.first.str());
  out.file = path;
  return llvm::Error::success();
}

static llvm::Error namesFromSafetensors(const std::string &path,
                                        Checkpoint &out) {
  xfrt::Expected<std::unique_ptr<xfrt::MappedFile>> file =
      xfrt::MappedFile::open(path);
  if (!file)
    return llvm::createStringError(file.message());
  xfrt::Expected<xfrt::SafetensorsHeader> header =
      xfrt::parseSafetensors((*file)->data(), (*file)->size(), path);
  if (!header)
    return llvm::createStringError(header.message());
  for (const xfrt::TensorEntry &t : (*header).tensors)
    out.names.insert(t.name);
  out.file = path;
  return llvm::Error::success();
}

llvm::Expected<Checkpoint> xf::hf::readCheckpoint(const std::string &dir) {
  Checkpoint out;
  auto in = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  if (llvm::sys::fs::exists(in("model.safetensors.index.json"))) {
    if (llvm::Error e = namesFromIndex(in("model.safetensors.index.json"), out))
      return std::move(e);
    return out;
  }
  std::string single = in("model.safetensors");
  if (!llvm::sys::fs::exists(single)) {
    // Some directories name their one file otherwise; several files without an
    // index are ambiguous, and then no names are read.
    std::vector<std::string> found;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(".safetensors"))
        found.push_back(it->path());
    if (found.size() != 1)
      return out;
    single = found.front();
  }
  if (llvm::Error e = namesFromSafetensors(single, out))
    return std::move(e);
  return out;
}
