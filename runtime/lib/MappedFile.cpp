//===- MappedFile.cpp - Read-only views of whole files --------------------===//
#include "xfrt/MappedFile.h"

#include "MappingGuard.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xfrt {

namespace {
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
