//===- Config.cpp - typed reads of config.json ----------------------------===//

#include "Config.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace xf::hf;

llvm::Expected<llvm::json::Value>
xf::hf::readJsonFile(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(path + ": " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse((*buffer)->getBuffer());
  if (!value)
    return llvm::createStringError(
        path + ": not JSON: " + llvm::toString(value.takeError()));
  return value;
}

llvm::Expected<Config> Config::read(const std::string &path) {
  llvm::Expected<llvm::json::Value> value = readJsonFile(path);
  if (!value)
    return value.takeError();
  llvm::json::Object *object = value->getAsObject();
  if (!object)
    return llvm::createStringError(path + ": not a JSON object");
  return Config(path, std::move(*object));
}

std::string Config::modelType() const {
  const llvm::json::Value *v = get("model_type");
  std::optional<llvm::StringRef> s = v ? v->getAsString() : std::nullopt;
  return s ? s->str() : "";
}

const llvm::json::Value *Config::get(llvm::StringRef key) const {
  const llvm::json::Value *v = object_.get(key);
  return v && v->kind() != llvm::json::Value::Null ? v : nullptr;
}

bool Config::isAbsent(llvm::StringRef key) const { return get(key) == nullptr; }

void Config::refuse(const llvm::Twine &message) {
  if (!firstError_)
    firstError_ = path_ + ": " + modelType() + ": " + message.str();
}

llvm::Error Config::error() {
  if (!firstError_)
    return llvm::Error::success();
  return llvm::createStringError(*firstError_);
}

std::optional<int64_t> Config::optionalSize(llvm::StringRef key) {
  const llvm::json::Value *v = get(key);
  if (!v)
    return std::nullopt;
  std::optional<int64_t> i = v->getAsInteger();
  if (!i || *i < 1 || *i > (int64_t(1) << 31) - 1) {
    refuse("'" + key + "' must be an integer in 1 .. 2^31-1");
    return 1;
  }
  return i;
}

int64_t Config::size(llvm::StringRef key) {
  std::optional<int64_t> i = optionalSize(key);
  if (!i)
    refuse("'" + key + "' is missing");
  return i.value_or(1);
}

int64_t Config::sizeOr(llvm::StringRef key, int64_t fallback) {
  return optionalSize(key).value_or(fallback);
}

double Config::numberOr(llvm::StringRef key, double fallback) {
  const llvm::json::Value *v = get(key);
  if (!v)
    return fallback;
  std::optional<double> d = v->getAsNumber();
  if (!d || !(*d > 0)) {
    refuse("'" + key + "' must be a positive number");
    return fallback;
  }
  return *d;
}

bool Config::flagOr(llvm::StringRef key, bool fallback) {
  const llvm::json::Value *v = get(key);
  if (!v)
    return fallback;
  std::optional<bool> b = v->getAsBoolean();
  if (!b) {
    refuse("'" + key + "' must be true or false");
    return fallback;
  }
  return *b;
}

std::string Config::textOr(llvm::StringRef key, llvm::StringRef fallback) {
  const llvm::json::Value *v = get(key);
  if (!v)
    return fallback.str();
  std::optional<llvm::StringRef> s = v->getAsString();
  if (!s) {
    refuse("'" + key + "' must be a string");
    return fallback.str();
  }
  return s->str();
}
