//===- Files.cpp - how xfc reads and writes files -------------------------===//
#include "Files.h"

#include "xfrt/MappedFile.h"
#include "xfrt/OutputFile.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace xfc;

static llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> xfc::readSpec(llvm::StringRef path,
                                                                  size_t maxBytes) {
  if (path == "-") {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> in = llvm::MemoryBuffer::getSTDIN();
    if (!in)
      return fail("cannot read stdin: " + in.getError().message());
    if ((*in)->getBufferSize() > maxBytes)
      return fail("<stdin> is larger than a spec may be (" + std::to_string(maxBytes >> 20) +
                  " MiB)");
    return std::move(*in);
  }
  xfrt::Expected<std::string> text = xfrt::readTextFile(path.str(), maxBytes);
  if (!text)
    return fail(text.message());
  return llvm::MemoryBuffer::getMemBufferCopy(*text, path);
}

/// A character device or FIFO, also through a link (/dev/stdout): written in place, never
/// replaced, so following the link cannot overwrite a file.
static bool isStream(llvm::StringRef path) {
  struct stat st;
  return ::stat(path.str().c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

llvm::Error xfc::checkOutput(llvm::StringRef path, bool streamable) {
  if (path == "-" || (streamable && isStream(path)))
    return llvm::Error::success();
  if (xfrt::Status s = xfrt::checkOutputTarget(path.str()); !s)
    return fail(s.message());
  return llvm::Error::success();
}

llvm::Error xfc::writeText(llvm::StringRef path, llvm::StringRef text) {
  if (path == "-") {
    llvm::raw_fd_ostream &out = llvm::outs();
    out << text;
    out.flush();
    if (out.has_error()) {
      std::error_code ec = out.error();
      out.clear_error(); // else LLVM reports a fatal "IO failure on output stream" at exit
      return fail("writing to stdout: " + ec.message());
    }
    return llvm::Error::success();
  }
  if (isStream(path)) {
    int fd = ::open(path.str().c_str(), O_WRONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))) {
      ::close(fd); // replaced by a file since the check: not written in place
      return fail(path.str() + ": changed while xfc ran; not written");
    }
    if (fd < 0)
      return fail(path.str() + ": " + std::strerror(errno));
    const char *p = text.data();
    size_t left = text.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        int saved = n < 0 ? errno : EIO;
        ::close(fd);
        return fail(path.str() + ": write error: " + std::strerror(saved));
      }
      p += n, left -= size_t(n);
    }
    ::close(fd);
    return llvm::Error::success();
  }
  if (xfrt::Status s = xfrt::writeFileAtomically(path.str(), text.data(), text.size()); !s)
    return fail(s.message());
  return llvm::Error::success();
}

/// The output being produced, for the exit hook below.
static std::string pendingOutput, pendingTemporary;

/// Halide's own copy of LLVM ends the process with exit(1) on some failures (a full disk
/// while it writes an object: "LLVM ERROR: IO failure on output stream"); no destructor runs
/// then. This hook still removes the temporary and says what happened to the output.
static void onExitWhileProducing() {
  if (pendingTemporary.empty())
    return;
  ::unlink(pendingTemporary.c_str());
  llvm::errs() << "xfc: error: building " << pendingOutput
               << " failed (see above); any previous file there is unchanged\n";
}

llvm::Error xfc::writeThroughTemporary(llvm::StringRef path, bool executable,
                                       llvm::function_ref<llvm::Error(llvm::StringRef)> produce) {
  using Kind = xfrt::AtomicOutputFile::Kind;
  xfrt::Expected<xfrt::AtomicOutputFile> file =
      xfrt::AtomicOutputFile::create(path.str(), executable ? Kind::Executable : Kind::Data);
  if (!file)
    return fail(file.message());
  file->releaseDescriptor();
  // Removed by LLVM's signal handler too, should xfc be interrupted while producing it.
  llvm::sys::RemoveFileOnSignal(file->temporaryPath());
  static bool hooked = std::atexit(onExitWhileProducing) == 0;
  (void)hooked;
  pendingOutput = path.str();
  pendingTemporary = file->temporaryPath();
  llvm::Error produced = produce(file->temporaryPath());
  xfrt::Status committed = produced ? xfrt::Status::success() : file->commit();
  pendingTemporary.clear();
  llvm::sys::DontRemoveFileOnSignal(file->temporaryPath());
  if (produced)
    return produced; // the temporary is removed, the previous output kept
  if (!committed)
    return fail(committed.message());
  return llvm::Error::success();
}
