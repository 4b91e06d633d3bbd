//===- ObjectCache.cpp - compiled objects kept between xfc runs -----------===//
//
// Entries are whole files replaced by rename, so a reader sees an old entry,
// a new one, or none; the header's length and keyed checksum catch what rename
// cannot (a disk or a person changing the file in place), and what a checksum
// its writer stored could not: an entry planted by someone without this
// cache's key. The directory itself must be the user's and writable by no one
// else, or it is not used at all.
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
#include "llvm/Support/RandomNumberGenerator.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm-c/blake3.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::xf;
namespace fs = llvm::sys::fs;

namespace {

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

constexpr char kMagic[8] = {'X', 'F', 'O', 'B', 'J', '\0', '2', '\n'};
constexpr size_t kDigestBytes = std::tuple_size<ObjectDigest>::value;
constexpr size_t kTagBytes = LLVM_BLAKE3_OUT_LEN;
constexpr size_t kHeaderBytes = sizeof(kMagic) + kDigestBytes + 8 + kTagBytes;
constexpr const char *kEntrySuffix = ".xfo";
constexpr const char *kTemporaryMarker = ".tmp-";
constexpr const char *kKeyName = "key";
// A temporary is written and renamed within milliseconds; one this old was
// left by a run that was killed.
constexpr auto kStaleTemporaryAge = std::chrono::hours(1);

/// The keyed BLAKE3 of an entry's digest, length and payload: only a holder
/// of the cache's key can write an entry that passes.
CacheTag tagOf(const CacheKey &key, const ObjectDigest &digest, llvm::StringRef payload) {
  llvm_blake3_hasher hasher;
  llvm_blake3_hasher_init_keyed(&hasher, key.data());
  llvm_blake3_hasher_update(&hasher, digest.data(), digest.size());
  char length[8];
  llvm::support::endian::write64le(length, payload.size());
  llvm_blake3_hasher_update(&hasher, length, sizeof(length));
  llvm_blake3_hasher_update(&hasher, payload.data(), payload.size());
  CacheTag tag;
  llvm_blake3_hasher_finalize(&hasher, tag.data(), tag.size());
  return tag;
}

std::string header(const CacheKey &key, const ObjectDigest &digest, llvm::StringRef payload) {
  std::string text(kMagic, sizeof(kMagic));
  text.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  char word[8];
  llvm::support::endian::write64le(word, payload.size());
  text.append(word, 8);
  CacheTag tag = tagOf(key, digest, payload);
  text.append(reinterpret_cast<const char *>(tag.data()), tag.size());
  return text;
}

/// Equal, in time that does not depend on where they differ.
bool sameTag(llvm::StringRef a, const CacheTag &b) {
  if (a.size() != b.size())
    return false;
  uint8_t differ = 0;
  for (size_t i = 0; i < b.size(); ++i)
    differ |= uint8_t(a[i]) ^ b[i];
  return differ == 0;
}

/// The payload of a well-formed entry for `digest`, or why it is not one.
llvm::Expected<llvm::StringRef> payloadOf(llvm::StringRef entry, const CacheKey &key,
                                          const ObjectDigest &digest) {
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
  llvm::StringRef tag(words + 8, kTagBytes);
  llvm::StringRef payload = entry.drop_front(kHeaderBytes);
  if (payload.size() != length)
    return bad("holds " + llvm::Twine(payload.size()) + " bytes of an object of " +
               llvm::Twine(length));
  if (!sameTag(tag, tagOf(key, digest, payload)))
    return bad("checksum mismatch: changed, or not written with this cache's key");
  return payload;
}

/// True for the names this cache writes: "<64 hex digits>.xfo", its
/// temporaries "<that>.tmp-<8 hex digits>" and the key's "key.tmp-<8 hex
/// digits>". `temporary` says which kind.
bool isOwnName(llvm::StringRef name, bool &temporary) {
  auto isHex = [](llvm::StringRef text, size_t length) {
    return text.size() == length && llvm::all_of(text, [](char c) {
             return llvm::isDigit(c) || (c >= 'a' && c <= 'f');
           });
  };
  temporary = false;
  auto [base, random] = name.rsplit(kTemporaryMarker);
  if (name.contains(kTemporaryMarker)) {
    if (!isHex(random, 8))
      return false;
    temporary = true;
    name = base;
    if (name == kKeyName)
      return true;
  }
  return name.consume_back(kEntrySuffix) && isHex(name, 2 * kDigestBytes);
}

/// Why `directory` may not hold objects that get linked, if it may not: it
/// must be this user's and writable by no one else, since anyone who can
/// write there could replace the key or plant entries.
std::optional<std::string> untrustedBecause(llvm::StringRef directory) {
  struct stat st;
  llvm::SmallString<256> path(directory);
  if (::stat(path.c_str(), &st) != 0)
    return "cannot stat it: " + std::string(std::strerror(errno));
  if (st.st_uid != ::geteuid())
    return "it is owned by user id " + std::to_string(st.st_uid) + ", not by you";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
    return std::string("it is writable by ") + ((st.st_mode & S_IWOTH) ? "others" : "its group") +
           " (mode " + mode + "); chmod go-w it, or set XF_CACHE_DIR to a directory of your own";
  }
  return std::nullopt;
}

/// Reads the cache's key, creating it (32 random bytes, mode 0600) the first
/// time. A key file that is not this user's alone is refused.
llvm::Expected<CacheKey> loadOrCreateKey(llvm::StringRef directory) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, kKeyName);
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError("the object cache key " + path + ": " + why);
  };
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return fail(std::strerror(errno));
    // Written whole under a unique name, then linked into place: of two runs
    // creating it at once, one link wins and both read the winner.
    CacheKey fresh;
    if (std::error_code ec = llvm::getRandomBytes(fresh.data(), fresh.size()))
      return fail("no random bytes: " + ec.message());
    int fd;
    llvm::SmallString<256> temporary;
    if (std::error_code ec = fs::createUniqueFile(path + kTemporaryMarker + "%%%%%%%%", fd,
                                                  temporary, fs::OF_None, fs::owner_read |
                                                                             fs::owner_write))
      return fail(ec.message());
    llvm::StringRef bytes(reinterpret_cast<const char *>(fresh.data()), fresh.size());
    if (llvm::Error e = writeFile(fd, temporary, {bytes}))
      return std::move(e);
    int linked = ::link(temporary.c_str(), path.c_str());
    int linkError = errno;
    fs::remove(temporary);
    if (linked != 0 && linkError != EEXIST)
      return fail(std::strerror(linkError));
    if (::lstat(path.c_str(), &st) != 0)
      return fail(std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) ||
      st.st_size != off_t(sizeof(CacheKey)))
    return fail("not a 32-byte regular file of yours with mode 0600; remove it to make a new key");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer || (*buffer)->getBufferSize() != sizeof(CacheKey))
    return fail("cannot read it");
  CacheKey key;
  std::memcpy(key.data(), (*buffer)->getBufferStart(), key.size());
  return key;
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
  // Created for this user alone (an existing directory is checked below).
  if (std::error_code ec = fs::create_directories(settings.directory, /*IgnoreExisting=*/true,
                                                  fs::owner_all))
    return llvm::createStringError("cannot create the object cache " + settings.directory + ": " +
                                   ec.message());
  if (!fs::is_directory(settings.directory))
    return llvm::createStringError("the object cache " + settings.directory +
                                   " is not a directory");
  if (std::optional<std::string> why = untrustedBecause(settings.directory))
    return llvm::createStringError("the object cache " + settings.directory +
                                   " is not safe to link from: " + *why);
  llvm::Expected<CacheKey> key = loadOrCreateKey(settings.directory);
  if (!key)
    return key.takeError();
  return ObjectCache(settings, *key, std::move(warn));
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
  // An entry of an older format (its checksum not keyed) is replaced without a word.
  llvm::StringRef text = (*buffer)->getBuffer();
  if (text.size() >= sizeof(kMagic) && text.starts_with(llvm::StringRef(kMagic, 6)) &&
      text[6] != kMagic[6]) {
    fs::remove(entry);
    return false;
  }
  llvm::Expected<llvm::StringRef> payload = payloadOf(text, key_, digest);
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
  std::string head = header(key_, digest, payload);
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
    bool temporary;
    if (!isOwnName(name, temporary))
      continue; // not a name this cache writes: never touched
    llvm::ErrorOr<fs::basic_file_status> status = it->status();
    if (!status || status->type() != fs::file_type::regular_file)
      continue; // gone meanwhile, or not ours
    if (!temporary) {
      entries.push_back({it->path(), status->getSize(), status->getLastModificationTime()});
      total += status->getSize();
    } else if (now - status->getLastModificationTime() > kStaleTemporaryAge) {
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
