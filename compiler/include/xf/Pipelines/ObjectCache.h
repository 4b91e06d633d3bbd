//===- ObjectCache.h - compiled objects kept between xfc runs ---*- C++ -*-===//
//
// A directory of object files, each stored under the digest of everything
// that determined it (ObjectKeys.h), so an unchanged kernel is copied instead
// of compiled again. Entries are written to a unique temporary in the cache
// directory and renamed into place, so concurrent xfc runs never see half an
// entry; each entry carries its digest, length and a keyed checksum, and one
// that fails them is reported, removed and compiled again. The least recently
// used entries (by modification time, refreshed on every hit) are removed once
// the directory holds more than its size limit.
//
// What gets linked must be what this user's xfc stored: the directory must be
// owned by the user and writable by no one else (else open() refuses it and
// xfc builds without a cache, with one warning), and the checksum is a keyed
// BLAKE3 under a random key kept in the directory ("key", mode 0600, made on
// first use), which a planted entry cannot match.
//
// Entry layout (<digest hex>.xfo): "XFOBJ\x002\n" (8 bytes), the 32-byte key
// digest, the payload length (little-endian u64), the 32-byte keyed BLAKE3 of
// digest, length and payload, then the object file itself. Eviction touches
// only names of these exact shapes: entries, and "<entry>.tmp-<8 hex digits>"
// or "key.tmp-<8 hex digits>" temporaries over an hour old.
//
//===----------------------------------------------------------------------===//

#ifndef XF_PIPELINES_OBJECTCACHE_H
#define XF_PIPELINES_OBJECTCACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mlir::xf {

/// The SHA-256 of a key's text (ObjectKeys.h).
using ObjectDigest = std::array<uint8_t, 32>;
/// The cache's secret key, and an entry's keyed checksum.
using CacheKey = std::array<uint8_t, 32>;
using CacheTag = std::array<uint8_t, 32>;
std::string hexOf(const ObjectDigest &digest);

/// Where the cache lives and how large it may grow.
struct ObjectCacheSettings {
  std::string directory;
  uint64_t maxBytes = uint64_t(1) << 30;
};

/// $XF_CACHE_DIR (default: <user cache directory>/xf/objects, i.e.
/// ~/.cache/xf/objects) and $XF_CACHE_MAX (bytes, or with a K/M/G suffix;
/// default 1G). An error names a malformed XF_CACHE_MAX; no cache directory
/// at all (no $HOME) is std::nullopt.
llvm::Expected<std::optional<ObjectCacheSettings>> objectCacheSettingsFromEnvironment();

/// "1G", "512M", "300K", "4096" → bytes (powers of 1024); nullopt if malformed.
std::optional<uint64_t> parseByteSize(llvm::StringRef text);

class ObjectCache {
public:
  using WarningHandler = std::function<void(const llvm::Twine &)>;

  /// Opens (creating it if needed) the cache directory and its key. Refuses a
  /// directory not owned by the user or writable by group or others, and a
  /// key file that is not the user's alone. `warn` receives the problems that
  /// do not stop a build: corrupt entries, failed stores.
  static llvm::Expected<ObjectCache> open(const ObjectCacheSettings &settings, WarningHandler warn);

  /// Writes the object stored under `digest` to `path` and marks the entry as
  /// just used. False on a miss, and for a corrupt entry, which is reported
  /// and removed (the caller compiles and stores it again).
  bool fetch(const ObjectDigest &digest, llvm::StringRef path);

  /// Stores the object file at `path` under `digest`. A failure (full disk,
  /// read-only directory) is a warning: the build goes on without it.
  void store(const ObjectDigest &digest, llvm::StringRef path);

  /// Removes least recently used entries until at most maxBytes remain, and
  /// temporaries that interrupted runs left behind (older than an hour).
  void evict();

  /// The file that holds (or would hold) `digest`'s entry.
  std::string entryPath(const ObjectDigest &digest) const;
  llvm::StringRef directory() const { return settings_.directory; }

private:
  ObjectCache(ObjectCacheSettings settings, const CacheKey &key, WarningHandler warn)
      : settings_(std::move(settings)), key_(key), warn_(std::move(warn)) {}
  ObjectCacheSettings settings_;
  CacheKey key_;
  WarningHandler warn_;
};

} // namespace mlir::xf

#endif // XF_PIPELINES_OBJECTCACHE_H
