//===- MappedFile.h - Read-only views of whole files -------------*- C++ -*-===//
//
// A file mapped into memory (mmap, private copy-on-write, so a kernel that writes through a
// parameter pointer cannot modify the checkpoint), or a byte buffer read from it. Both open
// without blocking (a FIFO fails at once) and accept regular files only. A mapped file that
// shrinks under the run ends it with one error line instead of SIGBUS.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_MAPPEDFILE_H
#define XFRT_MAPPEDFILE_H

#include "xfrt/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace xfrt {

class MappedFile {
public:
  // Maps the regular file at `path`. Errors read "<path>: <reason>".
  static Expected<std::unique_ptr<MappedFile>> open(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return data_; }
  uint8_t *mutableData() const { return data_; } // copy-on-write pages
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  MappedFile() = default;
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Drops the mapping's resident pages (madvise MADV_DONTNEED): nothing was written through
// it, so a later read faults the file's bytes back in (from the page cache).
void releaseMappedPages(const MappedFile &file);
// The same for the pages [p, p + size) touches, rounded out to whole pages (the neighbours'
// bytes sharing them fault back in when read), when the range lies inside the mapping;
// returns whether it does.
bool releaseMappedPages(const MappedFile &file, const void *p, size_t size);

// Reads a whole (small) text file such as an index.json; at most `maxBytes`.
Expected<std::string> readTextFile(const std::string &path, size_t maxBytes);

} // namespace xfrt

#endif // XFRT_MAPPEDFILE_H
