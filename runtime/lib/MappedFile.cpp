//===- MappedFile.cpp - Read-only views of whole files --------------------===//
//
// Reading a mapped page past the end of a file that was truncated or rewritten while mapped
// raises SIGBUS. Every mapping is registered in a fixed table; a SIGBUS inside one prints
// "error: <file>: the file shrank ..." and exits with status 1 (the runtime's code for bad
// weights); a SIGBUS anywhere else keeps its default action. The handler only uses
// async-signal-safe calls: it scans the table (entries published with a release store of
// `start`) and writes with write(2).
//
//===----------------------------------------------------------------------===//
#include "xfrt/MappedFile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xfrt {

// ---- SIGBUS guard --------------------------------------------------------
namespace {

struct Guarded {
  std::atomic<uintptr_t> start{0};
  size_t size = 0;
  char path[512] = {};
};
// More mappings than this (a checkpoint of hundreds of shards) are simply not guarded.
constexpr size_t kMaxGuarded = 256;
Guarded guarded[kMaxGuarded];
std::mutex registration; // registration only; the handler never locks

void writeAll(const char *text, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n <= 0)
      return;
    text += n;
    size -= size_t(n);
  }
}

void onBusError(int signal, siginfo_t *info, void *) {
  uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Guarded &g : guarded) {
    uintptr_t start = g.start.load(std::memory_order_acquire);
    if (start == 0 || at < start || at - start >= g.size)
      continue;
    static const char before[] = "error: ";
    static const char after[] =
        ": the file shrank or was rewritten while this run had it mapped; do not modify a "
        "checkpoint while an executable reads it (replace it with a rename instead)\n";
    writeAll(before, sizeof before - 1);
    writeAll(g.path, ::strnlen(g.path, sizeof g.path));
    writeAll(after, sizeof after - 1);
    ::_exit(1);
  }
  // Not one of ours: the default action (core dump) on return, when the access faults again.
  ::signal(signal, SIG_DFL);
}

void installHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = onBusError;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

// Registers [start, start + size) as the mapping of `path` (installs the handler once).
void guardMapping(const void *start, size_t size, const std::string &path) {
  static std::once_flag installed;
  std::call_once(installed, installHandler);
  std::lock_guard<std::mutex> lock(registration);
  for (Guarded &g : guarded) {
    if (g.start.load(std::memory_order_relaxed) != 0)
      continue;
    g.size = size;
    size_t n = std::min(path.size(), sizeof g.path - 1);
    std::memcpy(g.path, path.data(), n);
    g.path[n] = '\0';
    g.start.store(reinterpret_cast<uintptr_t>(start), std::memory_order_release);
    return;
  }
}

void unguardMapping(const void *start) {
  std::lock_guard<std::mutex> lock(registration);
  for (Guarded &g : guarded)
    if (g.start.load(std::memory_order_relaxed) == reinterpret_cast<uintptr_t>(start))
      g.start.store(0, std::memory_order_release);
}

// ---- Opening and mapping -------------------------------------------------

struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

// The one way the runtime opens an input. O_NONBLOCK makes the open itself return at once
// for a FIFO (which would otherwise wait for a writer forever); the type is checked on the
// open descriptor, so nothing can swap the file between the check and the read.
Status openRegular(const std::string &path, FileDescriptor &fd, uint64_t &size) {
  fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd.fd < 0)
    return makeError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd.fd, &st) != 0)
    return makeError(path + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return makeError(path + ": is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    return makeError(path + ": not a regular file" + (S_ISFIFO(st.st_mode) ? " (a FIFO)" : ""));
  int flags = ::fcntl(fd.fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    return makeError(path + ": cannot read: " + std::strerror(errno));
  size = static_cast<uint64_t>(st.st_size);
  return Status::success();
}
} // namespace

Expected<std::unique_ptr<MappedFile>> MappedFile::open(const std::string &path) {
  FileDescriptor fd{-1};
  uint64_t size = 0;
  if (Status s = openRegular(path, fd, size); !s)
    return s;
  if (size > uint64_t(SIZE_MAX / 2))
    return makeError(path + ": file too large to map");
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = size_t(size);
  if (size == 0)
    return file;
  void *p = ::mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED)
    return makeError(path + ": cannot map: " + std::strerror(errno));
  file->data_ = static_cast<uint8_t *>(p);
  guardMapping(file->data_, file->size_, path);
  return file;
}

MappedFile::~MappedFile() {
  if (data_) {
    unguardMapping(data_);
    ::munmap(data_, size_);
  }
}

void releaseMappedPages(const MappedFile &file) {
  if (file.data() && file.size())
    (void)::madvise(file.mutableData(), file.size(), MADV_DONTNEED);
}

bool releaseMappedPages(const MappedFile &file, const void *p, size_t size) {
  const uint8_t *begin = file.data(), *bytes = static_cast<const uint8_t *>(p);
  if (!begin || bytes < begin || size > file.size() || bytes - begin > ptrdiff_t(file.size() - size))
    return false;
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t from = reinterpret_cast<uintptr_t>(bytes) & ~(page - 1);
  uintptr_t to = (reinterpret_cast<uintptr_t>(bytes) + size + page - 1) & ~(page - 1);
  if (size)
    (void)::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
  return true;
}

Expected<std::string> readTextFile(const std::string &path, size_t maxBytes) {
  FileDescriptor fd{-1};
  uint64_t size = 0;
  if (Status s = openRegular(path, fd, size); !s)
    return s;
  if (size > maxBytes)
    return makeError(path + ": file of " + std::to_string(size) + " bytes exceeds the limit of " +
                     std::to_string(maxBytes));
  std::string text(size_t(size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return makeError(path + ": read error: " + std::strerror(errno));
    if (n == 0)
      break; // the file shrank while reading
    done += size_t(n);
  }
  text.resize(done);
  return text;
}

} // namespace xfrt
