//===- OutputFile.h - Files written whole or not at all ----------*- C++ -*-===//
//
// Every file the executables and xfc write goes through AtomicOutputFile. The data goes to a
// fresh temporary in the target's directory (mkostemp: a new name, O_EXCL, so never an
// existing file and never through a planted symlink), is fsync'ed, and is renamed over the
// target only once complete. A failed or killed run leaves the previous file as it was, and
// two concurrent writers leave one complete file, never a mix. A target that exists but is
// not a regular file (a symlink, FIFO, device or directory) is refused, not replaced.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_OUTPUTFILE_H
#define XFRT_OUTPUTFILE_H

#include "xfrt/Status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace xfrt {

class AtomicOutputFile {
public:
  enum class Kind { Data, Executable }; // permissions 0666 or 0777, less the umask

  // Checks the target (checkOutputTarget) and creates the temporary. Errors read "<path>: …".
  static Expected<AtomicOutputFile> create(const std::string &path, Kind kind = Kind::Data);
  AtomicOutputFile(AtomicOutputFile &&other) noexcept;
  AtomicOutputFile &operator=(AtomicOutputFile &&) = delete;
  ~AtomicOutputFile(); // removes the temporary unless committed

  Status write(const void *data, size_t size);
  // For a file another program writes (the linker): closes this process's descriptor; the
  // program writes temporaryPath(), and commit() publishes whatever is there.
  void releaseDescriptor();
  // fsync, set the permissions (the replaced file's, else Kind's), rename over the target,
  // fsync the directory. After a failure the target is untouched and the temporary removed.
  Status commit();

  const std::string &path() const { return path_; }
  const std::string &temporaryPath() const { return temp_; }

private:
  AtomicOutputFile() = default;
  std::string path_, temp_;
  int fd_ = -1;
  Kind kind_ = Kind::Data;
  bool committed_ = false;
};

// A path that may be written: absent, or an existing regular file (checked without following
// a symlink), in a directory that exists. Lets a command line fail before any work is done.
Status checkOutputTarget(const std::string &path);

// Writes `data` to `path` atomically (create, write, commit).
Status writeFileAtomically(const std::string &path, const void *data, size_t size);

// One path named on a command line, with the option that named it ("--weights", "-o").
struct NamedPath {
  std::string option, path;
};
// The executable this process runs (/proc/self/exe, resolved), as an input no output replaces.
NamedPath runningExecutable();
// Refuses an output that is also an input (the same file by device and inode, or the same name
// not yet created) and two outputs to one path, e.g. "--logits-out x.st: the same file as
// --weights x.st; refusing to overwrite an input". An input that is a directory (a tokenizer
// directory) stands for every file in it.
Status checkDistinctPaths(const std::vector<NamedPath> &outputs,
                          const std::vector<NamedPath> &inputs);

} // namespace xfrt

#endif // XFRT_OUTPUTFILE_H
