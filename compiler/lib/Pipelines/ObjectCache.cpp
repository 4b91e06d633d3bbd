//===- ObjectCache.cpp - compiled objects kept between xfc runs -----------===//
//
// Entries are whole files replaced by rename, so a reader sees an old entry,
// a new one, or none; the header's length and checksum catch what rename
// cannot (a disk or a person changing the file in place).
//
//===----------------------------------------------------------------------===//

#include "xf/Pipelines/ObjectCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <vector>

using namespace mlir::xf;
namespace fs = llvm::sys::fs;

namespace {

constexpr char kMagic[8] = {'X', 'F', 'O', 'B', 'J', '\0', '1', '\n'};
constexpr size_t kDigestBytes = std::tuple_size<ObjectDigest>::value;
constexpr size_t kHeaderBytes = sizeof(kMagic) + kDigestBytes + 8 + 8;
constexpr const char *kEntrySuffix = ".xfo";
constexpr const char *kTemporaryMarker = ".tmp-";
// A temporary is written and renamed within milliseconds; one this old was
// left by a run that was killed.
constexpr auto kStaleTemporaryAge = std::chrono::hours(1);

std::string header(const ObjectDigest &digest, llvm::StringRef payload) {
  std::string text(kMagic, sizeof(kMagic));
  text.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  char word[8];
  llvm::support::endian::write64le(word, payload.size());
  text.append(word, 8);
  llvm::support::endian::write64le(word, llvm::xxh3_64bits(payload));
  text.append(word, 8);
  return text;
}

/// The payload of a well-formed entry for `digest`, or why it is not one.
llvm::Expected<llvm::StringRef> payloadOf(llvm::StringRef entry, const ObjectDigest &digest) {
  auto bad = [](const llvm::Twine &why) { return llvm::createStringError(why); };
  if (entry.size() < kHeaderBytes)
    return bad("shorter than its header: " + llvm::Twine(entry.size()) + " bytes");
  if (entry.take_front(sizeof(kMagic)) != llvm::StringRef(kMagic, sizeof(kMagic)))
    return bad("not an xf object cache entry");
  llvm::StringRef stored = entry.substr(sizeof(kMagic), kDigestBytes);
  if (stored != llvm::StringRef(reinterpret_cast<const char *>(digest.data()), kDigestBytes))
    return bad("stored under another key");
  const char *words = entry.data() + sizeof(kMagic) + kDigestBytes;
  uint64_t length = llvm::support::endian::read64le(words);
  uint64_t checksum = llvm::support::endian::read64le(words + 8);
  llvm::StringRef payload = entry.drop_front(kHeaderBytes);
  if (payload.size() != length)
    return bad("holds " + llvm::Twine(payload.size()) + " bytes of an object of " +
               llvm::Twine(length));
  if (llvm::xxh3_64bits(payload) != checksum)
    return bad("checksum mismatch");
  return payload;
}

/// Writes `parts` to the file open as `fd` at `path`; on failure removes it.
llvm::Error writeFile(int fd, llvm::StringRef path, llvm::ArrayRef<llvm::StringRef> parts) {
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  for (llvm::StringRef part : parts)
    os << part;
  os.close();
  if (std::error_code ec = os.error()) {
    os.clear_error(); // a full disk or `ulimit -f` is reported, not fatal
    fs::remove(path);
    return llvm::createStringError("writing " + path + ": " + ec.message());
  }
  return llvm::Error::success();
}

} // namespace

std::string mlir::xf::hexOf(const ObjectDigest &digest) {
  return llvm::toHex(llvm::ArrayRef<uint8_t>(digest), /*LowerCase=*/true);
}

std::optional<uint64_t> mlir::xf::parseByteSize(llvm::StringRef text) {
  text = text.trim();
  // K, M, G, T: powers of 1024.
  uint64_t scale = 1;
  size_t unit = text.empty() ? llvm::StringRef::npos
                             : llvm::StringRef("KMGT").find(llvm::toUpper(text.back()));
  if (unit != llvm::StringRef::npos) {
    scale = uint64_t(1) << (10 * (unit + 1));
    text = text.drop_back();
  }
  uint64_t value;
  if (text.empty() || text.getAsInteger(10, value) || value > UINT64_MAX / scale)
    return std::nullopt;
  return value * scale;
}

llvm::Expected<std::optional<ObjectCacheSettings>> mlir::xf::objectCacheSettingsFromEnvironment() {
  ObjectCacheSettings settings;
  if (std::optional<std::string> max = llvm::sys::Process::GetEnv("XF_CACHE_MAX")) {
    std::optional<uint64_t> bytes = parseByteSize(*max);
    if (!bytes)
      return llvm::createStringError("XF_CACHE_MAX='" + *max +
                                     "': expected a size such as 500M or 2G");
    settings.maxBytes = *bytes;
  }
  std::optional<std::string> dir = llvm::sys::Process::GetEnv("XF_CACHE_DIR");
  if (dir && !dir->empty()) {
    settings.directory = *dir;
    return settings;
  }
  llvm::SmallString<128> path;
  if (!llvm::sys::path::cache_directory(path))
    return std::nullopt;
  llvm::sys::path::append(path, "xf", "objects");
  settings.directory = std::string(path);
  return settings;
}

llvm::Expected<ObjectCache> ObjectCache::open(const ObjectCacheSettings &settings,
                                              WarningHandler warn) {
  if (std::error_code ec = fs::create_directories(settings.directory))
    return llvm::createStringError("cannot create the object cache " + settings.directory + ": " +
                                   ec.message());
  if (!fs::is_directory(settings.directory))
    return llvm::createStringError("the object cache " + settings.directory +
                                   " is not a directory");
  return ObjectCache(settings, std::move(warn));
}

std::string ObjectCache::entryPath(const ObjectDigest &digest) const {
  llvm::SmallString<256> path(settings_.directory);
  llvm::sys::path::append(path, hexOf(digest) + kEntrySuffix);
  return std::string(path);
}

bool ObjectCache::fetch(const ObjectDigest &digest, llvm::StringRef path) {
  std::string entry = entryPath(digest);
  // Read, not mapped: another run may replace the entry meanwhile.
  auto buffer = llvm::MemoryBuffer::getFile(entry, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false, /*IsVolatile=*/true);
  if (!buffer)
    return false;
  llvm::Expected<llvm::StringRef> payload = payloadOf((*buffer)->getBuffer(), digest);
  if (!payload) {
    warn_("object cache entry " + entry + " is corrupt (" + llvm::toString(payload.takeError()) +
          "); compiling it again");
    fs::remove(entry);
    return false;
  }
  // On failure the compile that follows reports the real problem.
  int fd;
  if (fs::openFileForWrite(path, fd))
    return false;
  if (llvm::Error e = writeFile(fd, path, {*payload})) {
    llvm::consumeError(std::move(e));
    return false;
  }
  // Least recently *used*: a hit counts as a use.
  int entryFd;
  if (!fs::openFileForRead(entry, entryFd)) {
    (void)fs::setLastAccessAndModificationTime(entryFd, std::chrono::system_clock::now());
    llvm::sys::Process::SafelyCloseFileDescriptor(entryFd);
  }
  return true;
}

void ObjectCache::store(const ObjectDigest &digest, llvm::StringRef path) {
  auto object = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false, /*IsVolatile=*/true);
  if (!object) {
    warn_("cannot read " + path + " to cache it: " + object.getError().message());
    return;
  }
  llvm::StringRef payload = (*object)->getBuffer();
  std::string model = entryPath(digest) + kTemporaryMarker + "%%%%%%%%";
  int fd;
  llvm::SmallString<256> temporary;
  if (std::error_code ec = fs::createUniqueFile(model, fd, temporary)) {
    warn_("cannot write to the object cache " + settings_.directory + ": " + ec.message());
    return;
  }
  llvm::sys::RemoveFileOnSignal(temporary);
  std::string head = header(digest, payload);
  if (llvm::Error e = writeFile(fd, temporary, {head, payload})) {
    warn_("not cached: " + llvm::toString(std::move(e)));
  } else if (std::error_code ec = fs::rename(temporary, entryPath(digest))) {
    warn_("not cached: renaming " + temporary + ": " + ec.message());
    fs::remove(temporary);
  }
  llvm::sys::DontRemoveFileOnSignal(temporary);
}

void ObjectCache::evict() {
  struct Entry {
    std::string path;
    uint64_t bytes;
    llvm::sys::TimePoint<> used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(settings_.directory, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    llvm::ErrorOr<fs::basic_file_status> status = it->status();
    if (!status || status->type() != fs::file_type::regular_file)
      continue; // gone meanwhile, or not ours
    if (name.ends_with(kEntrySuffix)) {
      entries.push_back({it->path(), status->getSize(), status->getLastModificationTime()});
      total += status->getSize();
    } else if (name.contains(kTemporaryMarker) &&
               now - status->getLastModificationTime() > kStaleTemporaryAge) {
      fs::remove(it->path());
    }
  }
  if (total <= settings_.maxBytes)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &entry : entries) {
    if (total <= settings_.maxBytes)
      break;
    // Another run may be evicting too: a file already gone is as good as removed.
    std::error_code removed = fs::remove(entry.path, /*IgnoreNonExisting=*/true);
    if (!removed)
      total -= entry.bytes;
  }
}
