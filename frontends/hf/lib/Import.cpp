//===- Import.cpp - config.json's model_type to a family, names checked ---===//

#include "Families.h"

#include "llvm/Support/Path.h"

#include <set>

using namespace xf::hf;

const char *xf::hf::knownModelTypes() {
  return "bert, gemma, gpt2, llama, mistral, qwen2";
}

void xf::hf::importedHeader(const Config &config, const Checkpoint &checkpoint,
                            SpecText &spec, llvm::StringRef description) {
  spec.header.push_back("Imported by `xfc import` from " + config.path() +
                        " (model_type \"" + config.modelType() + "\").");
  spec.header.push_back(description.str());
  spec.header.push_back(
      "Each hyperparameter's comment names the config.json key it came from; "
      "this file is yours to edit (docs/import.md).");
  if (checkpoint.present())
    spec.header.push_back("Tensor names checked against " + checkpoint.file +
                          ".");
}

std::string xf::hf::checkpointPrefix(const Checkpoint &checkpoint,
                                     llvm::StringRef anchor,
                                     llvm::StringRef fallback, Config &config,
                                     SpecText &spec) {
  if (!checkpoint.present()) {
    spec.header.push_back(
        "No .safetensors in the directory: tensor names assume the prefix \"" +
        fallback.str() + "\".");
    return fallback.str();
  }
  std::optional<std::string> prefix = checkpoint.prefixOf(anchor);
  if (!prefix) {
    config.refuse("no tensor named '" + anchor + "' (under any prefix) in " +
                  checkpoint.file);
    return fallback.str();
  }
  return *prefix;
}

std::string xf::hf::activation(Config &config, llvm::StringRef key,
                               llvm::StringRef fallback, llvm::StringRef x,
                               bool geluIsTanh) {
  std::string name = config.textOr(key, fallback);
  if (name == "gelu" && !geluIsTanh)
    return "gelu(" + x.str() + ")";
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu")
    return "gelu(" + x.str() + ", approx = tanh)";
  if (name == "relu")
    return "relu(" + x.str() + ")";
  if (name == "silu" || name == "swish")
    return "silu(" + x.str() + ")";
  config.refuse(
      key + " '" + name +
      "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu)");
  return x.str();
}

/// Every tensor the spec binds must be in the checkpoint; the ones it leaves
/// out are a warning (a pooler, rotary tables, position_ids are expected; a
/// bias the config says is absent is worth a look).
static llvm::Error checkNames(const SpecText &spec,
                              const Checkpoint &checkpoint,
                              const ImportOptions &options) {
  if (!checkpoint.present())
    return llvm::Error::success();
  std::set<std::string> used;
  for (const std::string &name : spec.tensorNames()) {
    if (!checkpoint.names.count(name))
      return llvm::createStringError(checkpoint.file + ": no tensor '" + name +
                                     "', which the " + spec.model +
                                     " spec binds");
    used.insert(name);
  }
  std::vector<std::string> unused;
  for (const std::string &name : checkpoint.names)
    if (!used.count(name))
      unused.push_back(name);
  if (!unused.empty() && options.warn)
    options.warn(std::to_string(unused.size()) + " tensor(s) of " +
                 checkpoint.file + " not used by the spec, e.g. '" +
                 unused.front() + "'");
  return llvm::Error::success();
}

llvm::Expected<std::string>
xf::hf::importDirectory(const std::string &dir, const ImportOptions &options) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "config.json");
  llvm::Expected<Config> config = Config::read(std::string(path));
  if (!config)
    return config.takeError();
  std::string type = config->modelType();
  using Family =
      SpecText (*)(Config &, const Checkpoint &, const ImportOptions &);
  Family family = type == "gpt2"   ? importGpt2
                  : type == "bert" ? importBert
                  : type == "llama" || type == "mistral" || type == "qwen2" ||
                          type == "gemma"
                      ? importDecoder
                      : nullptr;
  if (!family)
    return llvm::createStringError(
        config->path() + ": " +
        (type.empty() ? std::string("no \"model_type\"")
                      : "model_type '" + type + "' is not supported") +
        " (known: " + knownModelTypes() + ")");
  llvm::Expected<Checkpoint> checkpoint = readCheckpoint(dir);
  if (!checkpoint)
    return checkpoint.takeError();
  SpecText spec = family(*config, *checkpoint, options);
  // GPTQ, AWQ, bitsandbytes, ... store packed integer tensors the spec's
  // float parameters cannot bind.
  if (const llvm::json::Value *q = config->get("quantization_config")) {
    const llvm::json::Object *o = q->getAsObject();
    std::optional<llvm::StringRef> method =
        o ? o->getString("quant_method") : std::nullopt;
    config->refuse("quantization_config" +
                   (method ? " (" + *method + ")" : llvm::Twine()) +
                   " is not supported: xf loads float checkpoints (F32, F16, "
                   "BF16) or GGUF files");
  }
  if (llvm::Error e = config->error())
    return std::move(e);
  if (llvm::Error e = checkNames(spec, *checkpoint, options))
    return std::move(e);
  if (!checkpoint->present() && options.warn)
    options.warn("no .safetensors in " + dir +
                 ": tensor names are not checked");
  return spec.render();
}
