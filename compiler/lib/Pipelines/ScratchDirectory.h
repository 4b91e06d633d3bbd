//===- ScratchDirectory.h - xfc's temporary files, removed even on a signal -*- C++ -*-===//
//
// The objects of one build live in a fresh /tmp/xfc-XXXXXX directory. It is removed when the
// build ends (unless kept, and then xfc says where), and also when xfc is interrupted
// (SIGINT, SIGTERM, SIGHUP), crashes, or is ended by exit() inside a library: a signal (or
// atexit) handler unlinks the files named through file() and removes the directory, then
// passes the signal on to the handler it replaced (LLVM's stack printer) or the default.
//
//===----------------------------------------------------------------------===//
#ifndef XF_PIPELINES_SCRATCHDIRECTORY_H
#define XF_PIPELINES_SCRATCHDIRECTORY_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::xf {

class ScratchDirectory {
public:
  /// A new directory named `prefix`-XXXXXX in the system's temporary directory.
  static llvm::Expected<ScratchDirectory> create(llvm::StringRef prefix, bool keep);
  ScratchDirectory(ScratchDirectory &&other) noexcept;
  ScratchDirectory &operator=(ScratchDirectory &&) = delete;
  ~ScratchDirectory();

  /// The path of `name` inside the directory, registered for removal on a signal.
  std::string file(llvm::StringRef name);
  llvm::StringRef path() const { return path_; }

private:
  ScratchDirectory() = default;
  llvm::SmallString<128> path_;
  bool keep_ = false;
  int slot_ = -1; // index in the signal handler's table, -1 when not registered
};

} // namespace mlir::xf

#endif // XF_PIPELINES_SCRATCHDIRECTORY_H
