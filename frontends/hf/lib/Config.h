//===- Config.h - typed reads of config.json ----------------*- C++ -*-===//
//
// A family reads the keys it needs; the first problem (a missing key, a wrong
// type, a value it does not implement) is kept and every later read returns a
// harmless default, so a family reads straight through and checks `error()`
// once at the end.
//
//===----------------------------------------------------------------------===//

#ifndef XF_HF_CONFIG_H
#define XF_HF_CONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>

namespace xf::hf {

/// The JSON document in the file at `path`; an unreadable file or bad JSON is the error,
/// naming the path.
llvm::Expected<llvm::json::Value> readJsonFile(const std::string &path);

class Config {
public:
  /// Parses `path` (config.json); an unreadable file or bad JSON is the error.
  static llvm::Expected<Config> read(const std::string &path);

  const std::string &path() const { return path_; }
  std::string modelType() const;

  /// A required integer ≥ 1.
  int64_t size(llvm::StringRef key);
  /// An integer ≥ 1, or `fallback` when the key is absent or null.
  int64_t sizeOr(llvm::StringRef key, int64_t fallback);
  /// An integer ≥ 1, or nothing when the key is absent or null.
  std::optional<int64_t> optionalSize(llvm::StringRef key);
  double numberOr(llvm::StringRef key, double fallback);
  bool flagOr(llvm::StringRef key, bool fallback);
  std::string textOr(llvm::StringRef key, llvm::StringRef fallback);
  /// True when the key is absent or null.
  bool isAbsent(llvm::StringRef key) const;
  const llvm::json::Value *get(llvm::StringRef key) const;

  /// Records `message` as the error (unless one is already kept), as
  /// "config.json: <model_type>: <message>".
  void refuse(const llvm::Twine &message);
  /// The first error, or success.
  llvm::Error error();

private:
  Config(std::string path, llvm::json::Object object)
      : path_(std::move(path)), object_(std::move(object)) {}

  std::string path_;
  llvm::json::Object object_;
  std::optional<std::string> firstError_;
};

} // namespace xf::hf

#endif // XF_HF_CONFIG_H
